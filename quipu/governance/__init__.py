"""Governance of the store's schema and decisions (tools-graphs-governance).

``proposals``: schema-evolution proposals (§7), a queue of requested schema changes. A proposal
moves ``pending -> accepted | rejected`` and never touches facts. Accepting a ``shape`` proposal
is the only decision that changes the schema: it installs the proposed Turtle as a shape set, in
the same transaction that records the decision.

``golden_paths`` (§6): the provenance cone and the backtest of recorded trajectories, over
``trajectories`` (the reads) and ``gp_grammar`` (``gp-grammar/1``, the step-matching contract).
"""
