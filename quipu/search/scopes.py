"""Entity scopes shared by the search tools: provenance groups and types (tools-search §0.8).

Both are allow-lists of entity term ids read from ROOT at one instant (current, or live at
``valid_at``), never truncated: a scope cut short would silently drop members.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import Connection

from quipu.store import search_reads
from quipu.store.database import Database
from quipu.store.views import TemporalView

PROV_WAS_GENERATED_BY: Final = "http://www.w3.org/ns/prov#wasGeneratedBy"
# The group id of an episode activity has two spellings: the legacy domain vocabulary and Quechua's.
GROUP_ID_PREDICATES: Final = (
    "http://aegis.gastown.local/ontology/groupId",
    "https://scbrown.github.io/quechua/ns#groupId",
)
RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
RDFS_SUBCLASS_OF: Final = "http://www.w3.org/2000/01/rdf-schema#subClassOf"


def group_ids_of(group_ids: list[object] | None) -> list[str] | None:
    """The string group ids asked for; None (no scope) when there are none: an absent or empty
    list, or one whose entries are all ignored for not being strings."""
    wanted = [g for g in group_ids or () if isinstance(g, str)]
    return wanted or None


def group_members(
    db: Database, conn: Connection, group_ids: list[object] | None, valid_at: str | None
) -> set[int] | None:
    """Entities some episode of a listed group generated, or None for no group scope.

    An entity qualifies when it has ``prov:wasGeneratedBy ?ep`` and ``?ep`` carries one of the
    listed strings under either group-id predicate, with both facts live at ``valid_at``. So
    entities written through ``/knot`` (no episode), predicates that merely end in ``groupId``
    and entities with no episode all stay outside.
    """
    wanted = group_ids_of(group_ids)
    if wanted is None:
        return None
    known = db.terms.lookup(conn, (PROV_WAS_GENERATED_BY, *GROUP_ID_PREDICATES))
    generated_by = known.get(PROV_WAS_GENERATED_BY)
    predicates = [known[p] for p in GROUP_ID_PREDICATES if p in known]
    if generated_by is None or not predicates:
        return set()
    return search_reads.generated_in_groups(
        conn,
        TemporalView.at(valid_at=valid_at),
        generated_by=generated_by,
        group_predicates=predicates,
        groups=wanted,
    )


def typed_members(
    db: Database, conn: Connection, entity_type: str, valid_at: str | None, *, infer: bool
) -> set[int]:
    """Entities with ``rdf:type entity_type`` live at ``valid_at``; with ``infer`` also the
    instances of its transitive ``rdfs:subClassOf`` subclasses (read from ROOT at the same instant)."""
    known = db.terms.lookup(conn, (RDF_TYPE, RDFS_SUBCLASS_OF, entity_type))
    rdf_type, cls = known.get(RDF_TYPE), known.get(entity_type)
    if rdf_type is None or cls is None:
        return set()
    view = TemporalView.at(valid_at=valid_at)
    classes = {cls}
    sub_class_of = known.get(RDFS_SUBCLASS_OF)
    if infer and sub_class_of is not None:
        classes = search_reads.subclasses(conn, view, sub_class_of=sub_class_of, root=cls)
    return search_reads.instances(conn, view, rdf_type=rdf_type, classes=classes)


def intersect(*scopes: set[int] | None) -> set[int] | None:
    """The entities every given scope admits; None when no scope applies."""
    out: set[int] | None = None
    for scope in scopes:
        if scope is not None:
            out = set(scope) if out is None else out & scope
    return out
