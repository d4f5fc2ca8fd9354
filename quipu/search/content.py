"""``ranking: "content"`` (tools-search §5.1.3): demote content-less artifacts.

A ``Section``, ``Chunk`` or ``CodeSymbol`` (under the configured base namespace) whose only text
is its own name ranks on half its cosine (``s - 0.5·|s|``: a negative similarity moves further
down, never up), unless the query is that name. ``similarity`` keeps the raw cosine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection

from quipu.search.entity_text import lexical
from quipu.store import reads, values
from quipu.store.views import TemporalView

if TYPE_CHECKING:
    from quipu.search.state import SearchState

_RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
ARTIFACTS: Final = ("Section", "Chunk", "CodeSymbol")
NAMES: Final = ("heading", "name", "symbolName")  # under the base namespace, beside rdfs:label
DESCRIPTIONS: Final = ("content", "body", "text", "description", "summary", "docstring", "documentation")


def _collapsed(text: str) -> str:
    return " ".join(text.split()).lower()


def demote(
    service: SearchState, conn: Connection, rows: list[dict[str, Any]], query: object, valid_at: str | None
) -> None:
    """Lower the score of each content-less artifact among ``rows`` in place."""
    if not rows:
        return
    base = service.base_ns
    artifact_types = {base + name for name in ARTIFACTS}
    name_predicates = {_RDFS + "label", *(base + n for n in NAMES)}
    description_predicates = {_RDFS + "comment", *(base + d for d in DESCRIPTIONS)}
    asked = _collapsed(query) if isinstance(query, str) else None
    facts = reads.entity_fact_rows(conn, TemporalView.at(valid_at=valid_at), [r["entity_id"] for r in rows])
    term_ids: set[int] = {a for _e, a, _v, _tx in facts}
    term_ids.update(ref for _e, _a, v, _tx in facts if (ref := values.ref_id(v)) is not None)
    iri = service.db.terms.iris(conn, term_ids)
    by_entity: dict[int, list[tuple[str, bytes]]] = {}
    for e, a, v, _tx in facts:
        by_entity.setdefault(e, []).append((iri[a], v))
    for row in rows:
        if _contentless(
            by_entity.get(row["entity_id"], ()),
            iri,
            artifact_types,
            name_predicates,
            description_predicates,
            asked,
        ):
            s = row["similarity"]
            row["score"] = s - 0.5 * abs(s)
            row["ranking_reason"] = "contentless_artifact"


def _contentless(
    facts: Iterable[tuple[str, bytes]],
    iri: dict[int, str],
    artifact_types: set[str],
    name_predicates: set[str],
    description_predicates: set[str],
    asked: str | None,
) -> bool:
    is_artifact = False
    names: set[str] = set()
    descriptions: list[str] = []
    for predicate, v in facts:
        if predicate == values.RDF + "type":
            ref = values.ref_id(v)
            is_artifact |= ref is not None and iri.get(ref) in artifact_types
            continue
        text = lexical(v)
        if text is None:
            continue
        if predicate in name_predicates:
            names.add(_collapsed(text))
        elif predicate in description_predicates and text.strip():
            descriptions.append(_collapsed(text))
    if not is_artifact or (asked is not None and asked in names):
        return False
    return all(d in names for d in descriptions)
