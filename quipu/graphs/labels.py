"""``quipu_graph_label``: a versioned declaration across five axes (tools-graphs-governance §1.3).

The facts go into the meta-graph and the registry cache is replaced in the same transaction, so
the two never disagree. Each declaration replaces the whole cached label (rule LB-3: an axis
left out becomes undeclared); earlier declarations stay in the meta-graph as history (LB-4).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from quipu import times
from quipu.errors import InvalidField, UnknownGraph
from quipu.identity import Authenticated
from quipu.store import graph_facts, graph_registry, values
from quipu.store.context import WriteContext
from quipu.store.database import Database
from quipu.store.graph_labels import DURABILITY, FRESHNESS, Labels
from quipu.store.graph_registry import META
from quipu.store.graph_scope import check_kind
from quipu.store.schema import META_IRI, ROOT_IRI
from quipu.store.writes import open_transaction

Q: Final = "https://quipu.dev/ontology/"
CANONICAL_UTC: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")


def parse(
    *,
    timestamp: object,
    freshness: object = None,
    durability: object = None,
    trust: object = None,
    policy: object = None,
    kind: object = None,
    valid_to: object = None,
) -> tuple[str, Labels]:
    """(valid-from, labels) of a declaration, each axis parsed strictly (rule LB-1)."""
    if timestamp is None:
        raise InvalidField("missing 'timestamp' (the declaration's valid-from)", field="timestamp")
    if not isinstance(timestamp, str):
        raise InvalidField("'timestamp' must be an RFC 3339 string", field="timestamp")
    start = times.normalise_timestamp(timestamp)
    if freshness is not None and freshness not in FRESHNESS:
        raise InvalidField(
            f"'freshness' must be one of {', '.join(FRESHNESS)}, got {freshness!r}", field="freshness"
        )
    if durability is not None and durability not in DURABILITY:
        raise InvalidField(
            f"'durability' must be one of {', '.join(DURABILITY)}, got {durability!r}", field="durability"
        )
    t_iri, t_rank, t_chain = _trust(trust)
    tokens = _policy(policy)
    if kind is not None:
        check_kind(kind, "kind")
    if valid_to is not None:
        if not isinstance(valid_to, str) or not CANONICAL_UTC.match(valid_to):
            raise InvalidField(
                "'valid_to' must be canonical UTC YYYY-MM-DDTHH:MM:SSZ (it is not normalised)",
                field="valid_to",
            )
        if valid_to <= start:
            raise InvalidField("'valid_to' must be strictly later than 'timestamp'", field="valid_to")
    if freshness is None and durability is None and t_iri is None and not tokens and kind is None:
        raise InvalidField(
            "the label declares no axis: give freshness, durability, trust, policy or kind", field="graph"
        )
    labels = Labels(
        freshness=freshness,
        durability=durability,
        trust_iri=t_iri,
        trust_rank=t_rank,
        trust_chain=t_chain,
        policy=tokens or None,
        kind=kind,  # type: ignore[arg-type]
        valid_to=valid_to,
    )
    return start, labels


def _trust(trust: object) -> tuple[str | None, int | None, str | None]:
    if trust is None:
        return None, None, None
    if not isinstance(trust, Mapping):
        raise InvalidField("'trust' must be an object {iri, chain, rank}", field="trust")
    if not isinstance(trust.get("iri"), str):
        raise InvalidField("'trust.iri' is missing: the trust value's IRI", field="trust.iri")
    if not isinstance(trust.get("chain"), str):
        raise InvalidField(
            "'trust.chain' is missing: a rank without the chain that ranks it is not comparable",
            field="trust.chain",
        )
    rank = trust.get("rank")
    if isinstance(rank, bool) or not isinstance(rank, int):
        raise InvalidField("'trust.rank' must be an integer", field="trust.rank")
    return values.check_iri(trust["iri"], "trust.iri"), rank, values.check_iri(trust["chain"], "trust.chain")


def _policy(policy: object) -> tuple[str, ...]:
    if policy is None:
        return ()
    if not isinstance(policy, list):
        raise InvalidField("'policy' must be an array of token strings", field="policy")
    for token in policy:
        if not isinstance(token, str):
            raise InvalidField(f"'policy' tokens must be strings, got {token!r}", field="policy")
        if not token or any(ch.isspace() for ch in token):
            raise InvalidField(f"policy token {token!r} is empty or contains whitespace", field="policy")
    return tuple(sorted(set(policy)))  # a set (rule LB-6)


def triples(graph: str, labels: Labels) -> list[graph_facts.Triple]:
    """The meta-graph facts of one declaration."""
    out: list[graph_facts.Triple] = []
    if labels.freshness:
        out.append((graph, Q + "freshness", values.string(labels.freshness)))
    if labels.durability:
        out.append((graph, Q + "durability", values.string(labels.durability)))
    if labels.trust_iri and labels.trust_chain and labels.trust_rank is not None:
        out += [
            (graph, Q + "trust", labels.trust_iri),
            (labels.trust_iri, Q + "inChain", labels.trust_chain),
            (labels.trust_iri, Q + "trustRank", values.integer(labels.trust_rank)),
        ]
    out += [(graph, Q + "policyClass", values.string(t)) for t in labels.policy or ()]
    if labels.kind:
        out.append((graph, Q + "dataKind", values.string(labels.kind)))
    return out


def declare(
    db: Database,
    ctx: WriteContext,
    gid: int,
    graph: str,
    start: str,
    labels: Labels,
    *,
    actor: str | None,
    source: str,
) -> int:
    """Write one declaration inside an open write: meta facts plus the cache; the tx id."""
    tx = open_transaction(ctx, timestamp=start, actor=actor, source=source, graph=META)
    graph_facts.assert_triples(db, ctx, tx, triples(graph, labels), start, labels.valid_to)
    graph_registry.write_labels(ctx, gid, replace(labels, tx=tx.id))
    return tx.id


def label_graph(
    db: Database, graph: object, *, actor: str | None = None, auth: Authenticated | None = None, **axes: Any
) -> dict[str, Any]:
    """Declare a label on a registered graph (ROOT included); nothing is written on refusal."""
    if graph is None:
        raise InvalidField("missing 'graph'", field="graph")
    iri = values.check_iri(graph, "graph")
    if iri == META_IRI:
        raise InvalidField("the meta-graph holds labels; it is not labelled itself", field="graph")
    start, labels = parse(**axes)
    with db.write(auth) as ctx:
        gid = 0 if iri == ROOT_IRI else db.terms.lookup_in(ctx, (iri,)).get(iri)
        if gid is None or graph_registry.record(ctx.conn, gid) is None:
            raise UnknownGraph(
                f"graph <{iri}> is not registered. Create it first (quipu_graph_create)", field="graph"
            )
        tx_id = declare(db, ctx, gid, iri, start, labels, actor=actor, source="graph-label")
    return {"tx_id": tx_id}
