"""An episode as data, its content hash, and the statements it generates (DM §9.2-§9.4).

Everything here is pure: parsing refuses a malformed episode (400) before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rdflib import Graph, Literal, URIRef

from quipu.episodes.iris import (
    PROV,
    QUIPU,
    RDF,
    RDFS,
    activity_iri,
    entity_iri,
    fnv1a64,
    relation_iri,
    sanitize,
    type_iri,
)
from quipu.errors import InvalidField
from quipu.store import values
from quipu.store.statements import Obj, Statement, StatementBatch

SOURCE_PREFIX = "episode:"
RDF_TYPE = RDF + "type"
RDFS_LABEL = RDFS + "label"
RDFS_COMMENT = RDFS + "comment"


@dataclass(frozen=True)
class Node:
    name: str
    type: str | None
    description: str | None = None
    properties: Mapping[str, Any] = field(default_factory=dict)
    distinct_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    relation: str
    confidence: Any = None


@dataclass(frozen=True)
class Episode:
    name: str
    episode_body: str | None = None
    source: str | None = None
    group_id: str | None = None
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()
    replace_snapshot: bool = False

    @property
    def tx_source(self) -> str:
        return SOURCE_PREFIX + self.name


def _bad(message: str, where: str) -> InvalidField:
    return InvalidField(f"invalid episode JSON: {message}", field=where)


def _text(data: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = data.get(key)
    if value is None:
        if required:
            raise _bad(f"missing '{key}'", where)
        return None
    if not isinstance(value, str):
        raise _bad(f"'{key}' must be a string", where)
    return value


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise _bad(f"'{where}' must be an array", where)
    return list(value)


def parse_node(data: object) -> Node:
    if not isinstance(data, Mapping):
        raise _bad("each node must be an object", "nodes")
    name = _text(data, "name", "nodes", required=True)
    assert name is not None
    if not name.strip():
        raise _bad("a node has an empty 'name'", "nodes")
    props = data.get("properties")
    if props is not None and not isinstance(props, Mapping):
        raise _bad(f"node '{name}': 'properties' must be an object", "nodes")
    distinct = data.get("distinct_from", data.get("distinctFrom"))
    iris = tuple(values.check_iri(i, "distinct_from") for i in _list(distinct, "nodes"))
    return Node(
        name=name,
        type=_text(data, "type", "nodes"),
        description=_text(data, "description", "nodes"),
        properties=dict(props or {}),
        distinct_from=iris,
    )


def parse_edge(data: object) -> Edge:
    if not isinstance(data, Mapping):
        raise _bad("each edge must be an object", "edges")
    ends = [_text(data, key, "edges", required=True) for key in ("source", "target", "relation")]
    source, target, relation = (str(x) for x in ends)
    for key, value in (("source", source), ("target", target)):
        if not value.strip():
            raise _bad(f"an edge has an empty '{key}'", "edges")
    return Edge(source, target, relation, data.get("confidence"))


def parse_episode(
    name: object,
    *,
    episode_body: object = None,
    source: object = None,
    group_id: object = None,
    nodes: Sequence[object] | None = None,
    edges: Sequence[object] | None = None,
    replace_snapshot: object = False,
) -> Episode:
    """An ``Episode`` from JSON-shaped input, or 400 ``invalid episode JSON: …``."""
    top = {"name": name, "episode_body": episode_body, "source": source, "group_id": group_id}
    text = {key: _text(top, key, key, required=key == "name") for key in top}
    assert text["name"] is not None
    if not text["name"].strip():
        raise _bad("'name' must not be empty", "name")
    if not isinstance(replace_snapshot, bool):
        raise _bad("'replace_snapshot' must be a boolean", "replace_snapshot")
    return Episode(
        name=text["name"],
        episode_body=text["episode_body"],
        source=text["source"],
        group_id=text["group_id"],
        nodes=tuple(parse_node(n) for n in _list(nodes, "nodes")),
        edges=tuple(parse_edge(e) for e in _list(edges, "edges")),
        replace_snapshot=replace_snapshot,
    )


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def content_hash(episode: Episode) -> str:
    """The 64-bit FNV-1a content hash of DM §9.4; node and edge order do not matter."""
    lines = [
        f"name={episode.name}",
        f"replace_snapshot={'true' if episode.replace_snapshot else 'false'}",
        f"body={episode.episode_body or ''}",
        f"source={episode.source or ''}",
        f"group={episode.group_id or ''}",
    ]
    nodes = []
    for n in episode.nodes:
        props = ",".join(f"{k}={_compact(v)}" for k, v in sorted(n.properties.items()))
        nodes.append(f"node:{n.name}|{n.type or ''}|{n.description or ''}|{props}")
    edges = []
    for e in episode.edges:
        conf = "" if e.confidence is None else _compact(e.confidence)
        edges.append(f"edge:{e.source}|{e.relation}|{e.target}|{conf}")
    return fnv1a64("\n".join(lines + sorted(nodes) + sorted(edges)))


def _scalar(value: Any) -> bytes | None:
    """A property value as a literal (DM §9.2); None for what is ignored."""
    if isinstance(value, bool):
        return values.boolean(value)
    if isinstance(value, int):
        return values.integer(value)
    if isinstance(value, float):
        return values.double(value)
    if isinstance(value, str):
        return values.string(value)
    return None


def _confidence(value: Any) -> bytes | None:
    if isinstance(value, str):
        return values.string(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return values.literal(format(Decimal(repr(value)), "f"), values.XSD + "decimal")
    return None


def _literal(value: bytes) -> Literal:
    d = values.decode(value)
    if d.kind == "lang":
        return Literal(d.lexical, lang=d.lang)
    # xsd:string spelled out, as the shapes' own literals are parsed (shacl.rdf.term): rdflib
    # tells a plain literal from an xsd:string one, so sh:in / sh:hasValue would never match.
    return Literal(d.lexical, datatype=URIRef(d.datatype or values.XSD_STRING), normalize=False)


@dataclass(frozen=True)
class Built:
    """An episode's statements, ready for ``writes.grouped_rows``."""

    activity: str
    content_hash: str
    batch: StatementBatch

    def graph(self) -> Graph:
        """The statements as an rdflib graph: the payload a SHACL or vocabulary gate validates."""
        out = Graph(bind_namespaces="none")
        for _g, s, p, o in self.batch.statements:
            out.add((URIRef(s), URIRef(p), URIRef(o) if isinstance(o, str) else _literal(o)))
        return out


def build(episode: Episode, base_ns: str) -> Built:
    """The statements an episode generates (DM §9.2), refusing bad types or relations first."""
    activity = activity_iri(base_ns, episode.name)
    digest = content_hash(episode)
    out: list[Statement] = []

    def emit(s: str, p: str, o: Obj) -> None:
        out.append((None, s, p, o))

    emit(activity, RDF_TYPE, PROV + "Activity")
    emit(activity, RDFS_LABEL, values.string(episode.name))
    if episode.episode_body is not None:
        emit(activity, RDFS_COMMENT, values.string(episode.episode_body))
    if episode.source is not None:
        emit(activity, PROV + "wasAssociatedWith", values.string(episode.source))
    if episode.group_id is not None:
        emit(activity, base_ns + "groupId", values.string(episode.group_id))
    emit(activity, base_ns + "contentHash", values.string(digest))
    for node in episode.nodes:
        iri = entity_iri(base_ns, node.name)
        emit(iri, RDF_TYPE, type_iri(base_ns, node.name, node.type))
        emit(iri, RDFS_LABEL, values.string(node.name))
        if node.description is not None:
            emit(iri, RDFS_COMMENT, values.string(node.description))
        emit(iri, PROV + "wasGeneratedBy", activity)
        for other in node.distinct_from:
            emit(iri, QUIPU + "distinctFrom", other)
        for key, value in node.properties.items():
            items = value if isinstance(value, list) else [value]
            for item in items:
                literal = _scalar(item)
                if literal is not None:
                    emit(iri, base_ns + sanitize(key), literal)
    for edge in episode.edges:
        predicate, written = relation_iri(base_ns, edge.relation)
        src, tgt = sanitize(edge.source), sanitize(edge.target)
        s, o = base_ns + src, base_ns + tgt
        emit(s, predicate, o)
        confidence = _confidence(edge.confidence)
        if confidence is not None:
            stmt = f"{base_ns}stmt_{fnv1a64(f'{src}|{written}|{tgt}')}"
            emit(stmt, RDF_TYPE, RDF + "Statement")
            emit(stmt, RDF + "subject", s)
            emit(stmt, RDF + "predicate", predicate)
            emit(stmt, RDF + "object", o)
            emit(stmt, QUIPU + "confidence", confidence)
    iris = {s for _g, s, _p, _o in out} | {p for _g, _s, p, _o in out}
    iris |= {o for _g, _s, _p, o in out if isinstance(o, str)}
    return Built(activity, digest, StatementBatch(out, frozenset(), iris))
