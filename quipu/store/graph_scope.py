"""The graphs a read sees, and the label rules that apply to them (tools-graphs-governance §1).

Every reader that takes a graph or a dataset IRI resolves it here, so SPARQL (compiled and
fallback), export, entity and search agree on three things:

* **Resolution**: ROOT, a registered graph, or a dataset's registered members; anything else
  is the empty scope. ``include_kinds`` widens a default graph by declared data kind.
* **Label floors** (``[quipu.labels]``): a read whose graphs' labels fall below the configured
  floor is refused, naming the graph that dragged it down. An undeclared axis fails a minimum
  (fail-safe at enforcement); ``deny_data_kinds`` is a blocklist, so an undeclared kind passes.
  With no floor configured nothing here runs. A floor refuses a read; it is not access control.
* **Composed labels**: the label of the read's graph set, folded once per read (meet for
  freshness, durability and trust; union for policy and kind) with its coverage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlalchemy import Connection, bindparam, select

from quipu import times
from quipu.errors import BadRequest, ConfigError, InvalidField
from quipu.store.database import Database
from quipu.store.graph_labels import DURABILITY, FRESHNESS, LabelFloor, Labels
from quipu.store.graph_registry import LABEL_COLUMNS, META, records
from quipu.store.schema import META_IRI, ROOT, ROOT_IRI, dataset_members, graphs

KIND_TOKEN: Final = re.compile(r"[a-z][a-z0-9-]*\Z")
FROZEN_DATASET: Final = "urn:quipu:dataset:frozen"


class LabelFloorRefused(BadRequest):
    """A read's graphs fall below the configured label floor (400, nothing read)."""

    reason = "label_floor"


def check_floor_settings(floor: LabelFloor) -> None:
    """Refuse a floor that cannot be evaluated (at start-up, naming the key)."""
    if floor.min_freshness is not None and floor.min_freshness not in FRESHNESS:
        raise ConfigError(f"[quipu.labels] min_freshness must be one of {', '.join(FRESHNESS)}")
    if (floor.min_trust_rank is None) != (floor.min_trust_chain is None):
        raise ConfigError(
            "[quipu.labels] min_trust_rank and min_trust_chain go together: "
            "a rank without the chain that ranks it is not comparable"
        )
    for kind in floor.deny_data_kinds:
        if not KIND_TOKEN.match(kind):
            raise ConfigError(f"[quipu.labels] deny_data_kinds: {kind!r} is not a [a-z][a-z0-9-]* token")


def check_kind(token: object, field: str) -> str:
    if not isinstance(token, str) or not KIND_TOKEN.match(token):
        raise InvalidField(
            f"'{field}' must be a data-kind token matching [a-z][a-z0-9-]*, got {token!r}", field=field
        )
    return token


# Run straight on the driver: every query resolves its graph scope, and SQLAlchemy's execution
# layer costs more than these lookups (a dataset took 0.4 ms through it, measured).
_REGISTERED: Final = select(graphs.c.g).where(graphs.c.g == bindparam("g"))
_MEMBERS: Final = select(dataset_members.c.graph).where(dataset_members.c.dataset == bindparam("d"))


def resolve(db: Database, conn: Connection, iri: str | None) -> frozenset[int]:
    """The graphs an IRI names for reading: ROOT for none, a registered graph, or a dataset's
    registered members; the empty set for anything else (an unknown graph reads as empty).

    The meta-graph counts only when named itself, never as a dataset member."""
    if iri is None or iri == "" or iri == ROOT_IRI:
        return frozenset({ROOT})
    registered = db.dialect.prepared(_REGISTERED)
    gid = db.terms.lookup(conn, (iri,)).get(iri)
    if gid is not None and registered.run(conn, {"g": gid}).fetchone() is not None:
        return frozenset({gid})
    members = [str(r[0]) for r in db.dialect.prepared(_MEMBERS).run(conn, {"d": iri}).fetchall()]
    out = {ROOT} if ROOT_IRI in members else set()
    interned = db.terms.lookup(conn, [m for m in members if m not in (ROOT_IRI, META_IRI)])
    out |= {g for g in interned.values() if registered.run(conn, {"g": g}).fetchone() is not None}
    return frozenset(out)


def of_kinds(conn: Connection, kinds: Sequence[str]) -> frozenset[int]:
    """Registered graphs whose declared data kind (in effect now) is one of ``kinds``."""
    if not kinds:
        return frozenset()
    query = select(graphs.c.g).where(graphs.c.data_kind.in_(sorted(set(kinds))), graphs.c.g != META)
    candidates = [int(r[0]) for r in conn.execute(query)]
    now = times.now()
    return frozenset(r.g for r in records(conn, candidates) if not r.labels.expired(now))


# One graph's cached label, run straight on the driver: every query folds its graphs' labels,
# and SQLAlchemy's execution layer would cost more than the lookup.
_ONE_LABEL: Final = select(graphs.c.g, *LABEL_COLUMNS).where(graphs.c.g == bindparam("g"))
_FEW: Final = 16  # more graphs than this: one IN query instead of a probe each


def labels_of(db: Database, conn: Connection, gids: Iterable[int]) -> dict[int, Labels]:
    """The cached label of each registered graph of ``gids`` (undeclared ones included)."""
    ids = sorted(set(gids))
    if len(ids) <= _FEW:
        probe = db.dialect.prepared(_ONE_LABEL)
        rows = [row for g in ids if (row := probe.run(conn, {"g": g}).fetchone()) is not None]
    else:
        rows = list(conn.execute(select(graphs.c.g, *LABEL_COLUMNS).where(graphs.c.g.in_(ids))))
    return {int(row[0]): Labels.from_cache(row[1:]) for row in rows}


def enforce(db: Database, conn: Connection, gids: Iterable[int]) -> None:
    """Admit a read of ``gids``: refuse it when a graph falls below the store's label floor,
    and make the rows of any frozen graph among them readable (quipu.store.archive_mounts)."""
    ids = set(gids)
    if db.archives.mounted and not db.archives.frozen_graphs().isdisjoint(ids):
        db.archives.install_view(conn)
    floor = db.label_floor
    if floor is None or not floor.active or not ids:
        return
    now = times.now()
    for g, labels in sorted(labels_of(db, conn, ids).items()):
        why = floor.refusal(labels.in_effect(now))
        if why is not None:
            iri = ROOT_IRI if g == ROOT else db.terms.iris(conn, (g,))[g]
            raise LabelFloorRefused(f"label floor refused the read: graph <{iri}> {why}")


def enforce_root(db: Database) -> None:
    """The label floor for a reader of ROOT that opens its snapshots itself (the search tools);
    nothing is read when no floor is configured."""
    floor = db.label_floor
    if floor is None or not floor.active:
        return
    with db.read() as conn:
        enforce(db, conn, (ROOT,))


def refuse_tx_travel(db: Database, as_of_tx: int | None, field: str = "tx") -> None:
    """Rule FZ-3: transaction-time reads are refused while any archive pack is mounted (the
    packs hold other transactions' rows); valid-time reads keep working. ``field`` is what the
    caller's request calls the transaction read point."""
    if as_of_tx is not None and db.archives.mounted:
        raise InvalidField(
            f"'{field}' (transaction-time travel) is refused while an archive pack is mounted: thaw the "
            "frozen graphs first (quipu_graph_list lifecycle=frozen lists them); valid_at still works",
            field=field,
            reason="archives_mounted",
        )


def composed(db: Database, conn: Connection, gids: Iterable[int]) -> dict[str, Any] | None:
    """The composed label of a graph set (None when no graph in it declares anything), or
    ``{"error": …}`` when trust ranks from different chains would have to be compared."""
    found = labels_of(db, conn, gids)
    if not any(lab.declared for lab in found.values()):
        return None
    now = times.now()
    labels = [lab.in_effect(now) for lab in found.values()]
    if not any(lab.declared for lab in labels):
        return None
    n = len(labels)

    def coverage(count: int) -> str:
        return "full" if count == n else "partial" if count else "none"

    out: dict[str, Any] = {}
    for axis, order in (("freshness", FRESHNESS), ("durability", DURABILITY)):
        declared = [getattr(lab, axis) for lab in labels if getattr(lab, axis) is not None]
        value = min(declared, key=order.index) if declared else None
        out[axis] = {"value": value, "coverage": coverage(len(declared))}
    trusted = [lab for lab in labels if lab.trust_rank is not None]
    chains = {lab.trust_chain for lab in trusted}
    if len(chains) > 1:
        return {
            "error": f"trust ranks from different chains cannot be composed: {', '.join(sorted(map(str, chains)))}"
        }
    weakest = min(trusted, key=lambda lab: lab.trust_rank or 0) if trusted else None
    out["trust"] = {
        "value": weakest.trust_iri if weakest else None,
        "chain": weakest.trust_chain if weakest else None,
        "coverage": coverage(len(trusted)),
    }
    policies = [lab.policy for lab in labels if lab.policy is not None]
    out["policy"] = {
        "value": sorted({t for p in policies for t in p}) if policies else None,
        "coverage": coverage(len(policies)),
    }
    kinds = [lab.kind for lab in labels if lab.kind is not None]
    out["kind"] = {"value": sorted(set(kinds)) if kinds else None, "coverage": coverage(len(kinds))}
    return out
