"""The reasoning family's service: ``quipu_reason``, maintenance, and reactive mode.

tools-core §3.11. One call is one database transaction: rules are evaluated in SQL over the
premise graph, and each rule's derivations are kept in the graph's companion (``runs``,
``companion``). ``maintain`` propagates only what changed since the companion's notes, and with
``[quipu.reasoning] reactive`` the store calls ``committed`` after every write. Every refusal
comes before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache, partial

from quipu import times
from quipu.errors import InvalidField
from quipu.identity import Authenticated
from quipu.reasoning.companion import PLANE_SOURCE, digest, notes
from quipu.reasoning.rule_query import rule_query
from quipu.reasoning.ruleset import RuleError, RuleSet, check_evaluable, parse_rules
from quipu.reasoning.runs import ReasonReport, full_run, maintained_run
from quipu.reasoning.strata import Stratum, stratify
from quipu.shacl import registry as shape_registry
from quipu.store import graph_registry, graph_scope, writes
from quipu.store.context import TxInfo
from quipu.store.database import Database
from quipu.store.schema import ROOT, ROOT_IRI

RULE_CLASS = "quipu.local/rule#"

log = logging.getLogger("quipu.reasoning")


def checked_rules(turtle: str | list[str], fallback_prefix: str) -> tuple[RuleSet, list[Stratum]]:
    """Parse, check and stratify, with the tool's 400 messages (§3.11 errors)."""
    try:
        ruleset = parse_rules(turtle, fallback_prefix)
        if not ruleset.rules:
            raise InvalidField("no 'a rule:Rule' subjects found in the rules", field="rules")
        strata = stratify(ruleset.rules)
    except RuleError as exc:
        raise InvalidField(f"rules failed to parse: {exc}", field="rules") from None
    for rule in ruleset.rules:
        try:
            check_evaluable(rule)
        except RuleError as exc:
            raise InvalidField(str(exc), field="rules") from None
    return ruleset, strata


@lru_cache(maxsize=8)
def _parsed(turtle: str | tuple[str, ...], fallback_prefix: str) -> tuple[RuleSet, list[Stratum]]:
    """``checked_rules``, once per distinct rule text: reactive mode reads the same stored rules
    after every write, and parsing their Turtle is most of a small maintenance's fixed cost."""
    return checked_rules(turtle if isinstance(turtle, str) else list(turtle), fallback_prefix)


def _derived(source: str | None) -> bool:
    """A write of derivations (rules, their notes, OWL): it changes no premise."""
    return source is not None and source.startswith(("reasoner:", PLANE_SOURCE, "owl:"))


def _has_rules(turtle: list[str]) -> bool:
    return any(RULE_CLASS in text for text in turtle)  # a cheap pre-check; parsing decides


class Reasoner:
    """The reasoning family's service: rules from the request or from the stored shapes."""

    def __init__(
        self, db: Database, base_ns: str, *, reactive: bool = False, timeout_ms: int | None = None
    ) -> None:
        self.db = db
        if reactive:  # [quipu.reasoning] reactive: maintain derivations right after each write
            db.committed_listeners.append(self.committed)
        self.base_ns = base_ns  # bare names resolve here last [designed here; docs/reasoning.md]
        # quipu_rule_query: a read under the query deadline, no state of its own
        self.rule_query = partial(rule_query, db, timeout_ms=timeout_ms)

    def stored_rules(self) -> list[str]:
        """The Turtle of the stored shape sets, where rules live beside shapes (``POST /shapes``)."""
        return [found.turtle for found in shape_registry.current(self.db)]

    def maintain(
        self,
        *,
        rules: str | None = None,
        prefix: str | None = None,
        graph: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> ReasonReport:
        """``reason``, incrementally where it can be: when the companion's notes say it holds
        these rules' output as of an earlier premise transaction, only the premise changes
        since are propagated (``mode: "incremental"``); otherwise a full run."""
        return self._reason(rules, prefix, graph, timestamp, auth, incremental=True)

    def committed(self, txs: Sequence[TxInfo], advisories: Sequence[str] = ()) -> None:
        """The reactive hook (``[quipu.reasoning] reactive``), run right after a write commits, in
        its own write transaction: each premise graph the write changed is maintained with the
        stored rules. ROOT always; a named graph once ``reason`` has given it a companion. A
        change of the stored shapes (where rules live) maintains every such graph at once, so
        new rules take effect without a restart (shapes rule 6). The write has committed, so a
        failure here is logged, never raised."""
        graphs = {tx.graph for tx in txs if not _derived(tx.source)}
        if any(kind.startswith("shapes.") for kind in advisories):
            graphs |= self._reasoned_graphs()
        for g in sorted(graphs):
            try:
                self._react(g)
            except Exception:
                log.exception("reactive reasoning failed after a write to graph %s", g)

    def _reasoned_graphs(self) -> set[int]:
        """ROOT, and every committed graph whose companion exists."""
        with self.db.read() as conn:
            found = graph_registry.records(conn)
        iris = {r.iri for r in found}
        return {ROOT} | {r.g for r in found if r.cls == "committed" and writes.companion_iri(r.iri) in iris}

    def _react(self, g: int) -> None:
        rules = self.stored_rules()
        if not _has_rules(rules):
            return
        with self.db.read() as conn:
            found = graph_registry.record(conn, g)
        if found is None or found.cls != "committed":
            return
        iri = None if found.iri == ROOT_IRI else found.iri
        if iri is not None:
            with self.db.read() as conn:
                gid, _rec = graph_registry.lookup(self.db, conn, writes.companion_iri(found.iri))
            if gid is None:
                return
        report = self.maintain(graph=iri)
        log.info(
            "reactive reasoning (%s) over %s: asserted %d, retracted %d",
            report.mode, found.iri, report.asserted, report.retracted,
        )  # fmt: skip

    def reason(
        self,
        *,
        rules: str | None = None,
        prefix: str | None = None,
        graph: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> ReasonReport:
        return self._reason(rules, prefix, graph, timestamp, auth, incremental=False)

    def _reason(
        self,
        rules: str | None,
        prefix: str | None,
        graph: str | None,
        timestamp: str | None,
        auth: Authenticated | None,
        *,
        incremental: bool,
    ) -> ReasonReport:
        text: str | list[str] = rules if rules is not None and rules.strip() else self.stored_rules()
        if not text:
            raise InvalidField(
                "no rules: pass 'rules' (Turtle) or load rules via POST /shapes first", field="rules"
            )
        ts = times.normalise_timestamp(timestamp)
        ruleset, strata = _parsed(text if isinstance(text, str) else tuple(text), prefix or self.base_ns)
        premise_iri = graph if graph else ROOT_IRI
        with self.db.write(auth) as ctx:
            premise = writes.resolve_target_graph(self.db, ctx, graph)
            graph_scope.enforce(self.db, ctx.conn, (premise,))  # the premises are a read of it
            companion = writes.companion_iri(premise_iri)
            gid, found = graph_registry.lookup(self.db, ctx.conn, companion)
            if incremental and gid is not None and found is not None:
                since, kept = notes(self.db, ctx, companion, gid)
                if since is not None and kept == digest(ruleset):
                    head = graph_registry.head_of(ctx.conn, premise)
                    if head == since:  # nothing to propagate
                        return ReasonReport(len(ruleset.rules), 0, 0, 0, [], companion, "incremental")
                    return maintained_run(
                        self.db, ctx, ruleset, strata, premise, companion, gid, since, head, ts
                    )
            return full_run(self.db, ctx, ruleset, strata, premise, companion, ts)
