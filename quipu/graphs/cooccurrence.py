"""``quipu_cooccurrence``: work items that touched the same code entities (tools-search §5.16).

For a work item W the answer lists every other work item W' such that some commit implementing W
modifies an entity e that a commit implementing W' also modifies, with the number of distinct
such entities. Each of the four edges may use the legacy or the Quechua predicate, independently.

It runs as one SPARQL query through the engine, the path ``POST /query`` takes, rather than as
hand-written SQL: the engine already brings the bitemporal read point (``valid_at`` for every
fact in the chain, ``tx`` as the transaction-time bound, refused while an archive pack is
mounted), the label floor, and the query budgets (408 past the deadline, 422 past the join
bound). The query compiles to one SQL statement on both backends (VALUES, not property paths).
The final order, shared entities descending then IRI ascending **[tie-break designed here]**, is
applied here on the (few) grouped rows, so it compares IRIs as text on every backend.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any, Final

from quipu.errors import InvalidField, MissingField
from quipu.graphs.aliases import values_clause
from quipu.sparql.cells import URI
from quipu.sparql.engine import QueryResult

_FORBIDDEN: Final = frozenset('<>"{}|\\^`')


def _sparql(work_item: str) -> str:
    """The chain as one grouped SELECT; each edge's predicate variable takes both spellings."""
    return (
        "SELECT ?other (COUNT(DISTINCT ?entity) AS ?shared) WHERE {\n"
        f"  {values_clause('implements', 'implements')}\n"
        f"  {values_clause('modifies', 'modifies')}\n"
        f"  {values_clause('otherModifies', 'modifies')}\n"
        f"  {values_clause('otherImplements', 'implements')}\n"
        f"  ?commit ?implements <{work_item}> .\n"
        "  ?commit ?modifies ?entity .\n"
        "  ?otherCommit ?otherModifies ?entity .\n"
        "  ?otherCommit ?otherImplements ?other .\n"
        f"  FILTER(?other != <{work_item}>)\n"
        "}\nGROUP BY ?other"
    )


def check_work_item(work_item: object) -> str:
    """The work item IRI, or 400: it is written into the query between angle brackets, so it
    may hold no whitespace, control character or character that would end the IRI."""
    if work_item is None:
        raise MissingField("missing 'work_item' parameter", field="work_item")
    if not isinstance(work_item, str) or not work_item:
        raise InvalidField("'work_item' must be a bare IRI (a non-empty string)", field="work_item")
    for ch in work_item:
        if ch in _FORBIDDEN or ch.isspace() or unicodedata.category(ch) in ("Cc", "Cs"):
            raise InvalidField(
                f"'work_item' must be a bare IRI without whitespace, control characters or any of "
                f'< > " {{ }} | \\ ^ ` (found U+{ord(ch):04X})',
                field="work_item",
            )
    return work_item


def cooccurrence(
    run: Callable[..., QueryResult],
    work_item: object,
    *,
    valid_at: str | None = None,
    tx: int | None = None,
) -> dict[str, Any]:
    """``{work_item, count, cooccurring: [{work_item, shared_entities}]}``. An empty list means
    the chain was not ingested for this item, not that it touched nothing."""
    iri = check_work_item(work_item)
    result = run(_sparql(iri), valid_at=valid_at, as_of_tx=tx)
    found: list[dict[str, Any]] = []
    for other, shared in result.table:
        if other is None or shared is None or other.kind != URI:  # work items are IRIs
            continue
        found.append({"work_item": other.value, "shared_entities": int(shared.value)})
    found.sort(key=lambda row: (-row["shared_entities"], row["work_item"]))
    return {"work_item": iri, "count": len(found), "cooccurring": found}
