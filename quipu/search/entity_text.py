"""The text an entity is embedded from (tools-search §3.2, §3.3).

Built from the entity's current claims in one plane — ROOT, or for a named-only entity the
union of its named graphs — in predicate term-id order:

1. its ``rdfs:label``: the plain string with the highest transaction (the later row on a tie);
2. its ``rdfs:comment``, by the same rule;
3. ``type: A, B`` — each ``rdf:type`` class IRI cut to what follows its last ``/`` (else its last
   ``#``), so ``http://www.w3.org/ns/prov#Activity`` gives ``prov#Activity``;
4. every other predicate's literal lexical forms (plain, language-tagged and typed text,
   integers, floats without a trailing ``.0`` when whole, booleans); IRIs and binary values are
   left out.

The parts are joined with ``". "``; an entity with none has the empty text and gets no vector.
A language-tagged or typed label or comment contributes nothing at all. The ``type: A, B`` form
is what the vectors were computed from: changing it would make every stored vector stale.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection

from quipu.store import values, vector_work
from quipu.store.database import Database
from quipu.store.reads import entity_fact_rows, named_graph_ids
from quipu.store.views import TemporalView

RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
LABEL: Final = RDFS + "label"
COMMENT: Final = RDFS + "comment"
TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SEPARATOR: Final = ". "


def class_name(iri: str) -> str:
    """What follows the last ``/`` of a class IRI, else its last ``#``, else the whole IRI."""
    if "/" in iri:
        return iri.rsplit("/", 1)[1]
    if "#" in iri:
        return iri.rsplit("#", 1)[1]
    return iri


def lexical(value: bytes) -> str | None:
    """A literal's text as the entity text shows it; None for an IRI or binary value."""
    decoded = values.decode(value)
    if decoded.kind in ("ref", "bytes"):
        return None
    if decoded.kind == "float":
        x = float(decoded.value)
        if math.isfinite(x) and x.is_integer() and abs(x) < 2**53:
            return str(int(x))  # the original prints 1 for 1.0
        return repr(x) if math.isfinite(x) else decoded.lexical
    return str(decoded.lexical)


@dataclass(frozen=True, slots=True)
class EntityText:
    text: str
    version: int  # the latest transaction among the claims it was built from (0: none)


def entity_texts(
    db: Database, conn: Connection, entities: Iterable[int], view: TemporalView
) -> dict[int, EntityText]:
    """The text of each entity over the claims ``view`` shows (its graphs are the plane)."""
    ids = list(entities)
    rows = entity_fact_rows(conn, view, ids)
    known = db.terms.lookup(conn, (LABEL, COMMENT, TYPE))
    label, comment, rdf_type = known.get(LABEL), known.get(COMMENT), known.get(TYPE)
    class_iris = db.terms.iris(conn, {ref for _e, a, v, _tx in rows if a == rdf_type
                                      if (ref := values.ref_id(v)) is not None})  # fmt: skip
    by_entity: dict[int, list[tuple[int, bytes, int]]] = {entity: [] for entity in ids}
    for e, a, v, tx in rows:
        by_entity[e].append((a, v, tx))
    return {
        entity: EntityText(
            _text(claims, label, comment, rdf_type, class_iris), max((c[2] for c in claims), default=0)
        )
        for entity, claims in by_entity.items()
    }


def named_only_texts(db: Database, conn: Connection, entities: Iterable[int]) -> dict[int, EntityText]:
    """The named-only text (§3.3) of each of ``entities`` with no current ROOT claim: the same
    rules over the union of its current claims in every registered named graph. Entities with a
    ROOT claim are left out (their text is their ROOT text)."""
    ids = list(entities)
    rooted = vector_work.in_root(conn, ids)
    rest = [entity for entity in ids if entity not in rooted]
    if not rest:
        return {}
    return entity_texts(db, conn, rest, TemporalView(graphs=frozenset(named_graph_ids(conn, db))))


def _text(
    claims: list[tuple[int, bytes, int]],
    label: int | None,
    comment: int | None,
    rdf_type: int | None,
    class_iris: dict[int, str],
) -> str:
    best: dict[int, tuple[int, str]] = {}  # label/comment -> (tx, text); rows come in tx order
    types: list[str] = []
    others: list[str] = []
    seen: set[tuple[int, bytes]] = set()  # a statement with two owners is one statement
    for a, v, tx in claims:
        if a in (label, comment):
            decoded = values.decode(v)
            if decoded.kind == "str" and tx >= best.get(a, (-1, ""))[0]:
                best[a] = (tx, str(decoded.value))
            continue
        if (a, v) in seen:
            continue
        seen.add((a, v))
        if a == rdf_type:
            ref = values.ref_id(v)
            if ref is not None and ref in class_iris:
                types.append(class_name(class_iris[ref]))
            continue
        text = lexical(v)
        if text is not None:
            others.append(text)
    parts = [best[key][1] for key in (label, comment) if key is not None and key in best]
    if types:
        parts.append("type: " + ", ".join(types))
    return SEPARATOR.join(parts + others)
