"""The compiled-in question catalog of ``quipu_ask`` (tools-search §5.17), as data.

Ten queries, in the spec's order, each over the current default graph and ending in
``LIMIT {limit}``. The four provenance questions (``brief_ground``, ``brief_related``,
``entity_work``, ``cochanged_with``) read each edge under both vocabulary spellings, chosen
independently per edge (one VALUES variable per edge), and project DISTINCT rows or
COUNT(DISTINCT …) so a fact written under both spellings never adds a row or a count.
``entity_summary`` is designed here: an entity's label, types and comment, never its facts.
"""

from __future__ import annotations

from typing import Final

from quipu.graphs.aliases import values_clause
from quipu.graphs.query_params import Kind, NamedQuery, ParamSpec

_RDFS: Final = "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"


def _param(name: str, kind: Kind, description: str, default: str | None = None) -> ParamSpec:
    return ParamSpec(name, kind, default is None, default, description)


def _limit(default: int) -> ParamSpec:
    return _param("limit", "int", "maximum rows", str(default))


def _values(*pairs: tuple[str, str]) -> str:
    return "".join(f"  {values_clause(variable, local)}\n" for variable, local in pairs)


_ITEM = _param("item", "text", "the work item's identifier (its identifier literal, exactly)")
_ENTITY = _param("entity", "iri", "the entity IRI")


def _query(name: str, description: str, params: tuple[ParamSpec, ...], template: str) -> NamedQuery:
    return NamedQuery(name, description, template, params, "builtin")


BUILTINS: Final[tuple[NamedQuery, ...]] = (
    _query(
        "brief_ground",
        "File paths touched by prior work on a work item: item <-implements- commit -modifies-> "
        "entity -filePath-> path, by path.",
        (_ITEM, _limit(50)),
        "SELECT DISTINCT ?path WHERE {\n"
        + _values(
            ("identifier", "identifier"),
            ("implements", "implements"),
            ("modifies", "modifies"),
            ("filePath", "filePath"),
        )
        + "  ?item ?identifier '{item}' .\n"
        "  ?commit ?implements ?item .\n"
        "  ?commit ?modifies ?entity .\n"
        "  ?entity ?filePath ?path .\n"
        "}\nORDER BY ?path\nLIMIT {limit}",
    ),
    _query(
        "brief_related",
        "Identifiers of other work items whose commits modified the same entities as the item's "
        "commits, with the number of distinct shared entities, most shared first.",
        (_ITEM, _limit(10)),
        "SELECT ?other (COUNT(DISTINCT ?entity) AS ?shared_entities) WHERE {\n"
        + _values(
            ("identifier", "identifier"),
            ("implements", "implements"),
            ("modifies", "modifies"),
            ("otherModifies", "modifies"),
            ("otherImplements", "implements"),
            ("otherIdentifier", "identifier"),
        )
        + "  ?item ?identifier '{item}' .\n"
        "  ?commit ?implements ?item .\n"
        "  ?commit ?modifies ?entity .\n"
        "  ?otherCommit ?otherModifies ?entity .\n"
        "  ?otherCommit ?otherImplements ?otherItem .\n"
        "  ?otherItem ?otherIdentifier ?other .\n"
        "  FILTER(?otherItem != ?item && STR(?other) != '{item}')\n"
        "}\nGROUP BY ?other\nORDER BY DESC(?shared_entities) ?other\nLIMIT {limit}",
    ),
    _query(
        "entity_summary",
        "An entity's rdfs:label, rdf:type and rdfs:comment, each optional: one row per "
        "combination (e.g. one per type), no fact list. No row for an entity without facts.",
        (_ENTITY, _limit(10)),
        _RDFS + "SELECT DISTINCT ?label ?type ?comment WHERE {\n"
        "  FILTER EXISTS { <{entity}> ?anyPredicate ?anyObject }\n"
        "  OPTIONAL { <{entity}> rdfs:label ?label }\n"
        "  OPTIONAL { <{entity}> a ?type }\n"
        "  OPTIONAL { <{entity}> rdfs:comment ?comment }\n"
        "}\nORDER BY ?type ?label ?comment\nLIMIT {limit}",
    ),
    _query(
        "entity_facts",
        "Every predicate/object pair with the entity as subject.",
        (_ENTITY, _limit(100)),
        "SELECT ?p ?o WHERE {\n  <{entity}> ?p ?o .\n}\nORDER BY ?p ?o\nLIMIT {limit}",
    ),
    _query(
        "service_deps",
        "The entity's outgoing dependencies: distinct predicate/object pairs whose object is an IRI.",
        (_ENTITY, _limit(50)),
        "SELECT DISTINCT ?p ?o WHERE {\n  <{entity}> ?p ?o .\n  FILTER(isIRI(?o))\n}\n"
        "ORDER BY ?p ?o\nLIMIT {limit}",
    ),
    _query(
        "references_to",
        "Incoming links: distinct subject/predicate pairs pointing at the entity.",
        (_ENTITY, _limit(50)),
        "SELECT DISTINCT ?s ?p WHERE {\n  ?s ?p <{entity}> .\n}\nORDER BY ?s ?p\nLIMIT {limit}",
    ),
    _query(
        "entities_of_type",
        "Distinct instances of a class (asserted rdf:type, no subclass inference).",
        (_param("type", "iri", "the class IRI"), _limit(100)),
        "SELECT DISTINCT ?s WHERE {\n  ?s a <{type}> .\n}\nORDER BY ?s\nLIMIT {limit}",
    ),
    _query(
        "labeled_like",
        "Distinct entities with an rdfs:label containing the text, case-insensitive.",
        (_param("text", "text", "text to find inside labels"), _limit(50)),
        _RDFS + "SELECT DISTINCT ?s ?label WHERE {\n  ?s rdfs:label ?label .\n"
        "  FILTER(CONTAINS(LCASE(STR(?label)), LCASE('{text}')))\n}\nORDER BY ?s ?label\nLIMIT {limit}",
    ),
    _query(
        "entity_work",
        "Distinct (commit, bead) pairs where the commit modifies the entity and implements the bead.",
        (_ENTITY, _limit(100)),
        "SELECT DISTINCT ?commit ?bead WHERE {\n"
        + _values(("modifies", "modifies"), ("implements", "implements"))
        + "  ?commit ?modifies <{entity}> .\n  ?commit ?implements ?bead .\n"
        "}\nORDER BY ?commit ?bead\nLIMIT {limit}",
    ),
    _query(
        "cochanged_with",
        "Other entities modified by commits implementing the same work items as the commits that "
        "modified the entity, with the number of distinct shared work items, most shared first.",
        (_ENTITY, _limit(50)),
        "SELECT ?other (COUNT(DISTINCT ?workItem) AS ?shared_workitems) WHERE {\n"
        + _values(
            ("modifies", "modifies"),
            ("implements", "implements"),
            ("otherImplements", "implements"),
            ("otherModifies", "modifies"),
        )
        + "  ?commit ?modifies <{entity}> .\n"
        "  ?commit ?implements ?workItem .\n"
        "  ?otherCommit ?otherImplements ?workItem .\n"
        "  ?otherCommit ?otherModifies ?other .\n"
        "  FILTER(?other != <{entity}>)\n"
        "}\nGROUP BY ?other\nORDER BY DESC(?shared_workitems) ?other\nLIMIT {limit}",
    ),
)

BY_NAME: Final[dict[str, NamedQuery]] = {q.name: q for q in BUILTINS}
