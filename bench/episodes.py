"""Small "episode-sized" RDF documents: the agent-write workload (17 triples each).

An episode is what an agent writes after one piece of work: three nodes (each with ``rdf:type``,
``rdfs:label`` and ``rdfs:comment``), two properties, two edges between the nodes, and a
``prov:wasGeneratedBy`` link from every node to the episode's activity node. Node names are
drawn so that some recur across episodes (a hot set of services, teams and incidents that an
agent keeps writing about); a recurring node restates its type and label, which a store should
recognise as already known, and adds a new comment.

Every episode is a pure function of ``(seed, index)``, so episode 1,234 is the same document
whatever range it is generated in.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Final

EX: Final = "http://quipu.bench/episode#"
DATA: Final = "http://quipu.bench/id/"
TRIPLES_PER_EPISODE: Final = 17

# (node kind, how many names its recurring hot set holds)
_KINDS: Final = (
    ("Service", 40),
    ("Database", 15),
    ("Team", 10),
    ("Incident", 60),
    ("Deployment", 80),
    ("Runbook", 25),
)
_EDGES: Final = ("dependsOn", "ownedBy", "affects", "mentions", "relatedTo", "deployedTo")
_STATUS: Final = ("healthy", "degraded", "down", "unknown", "investigating", "resolved")
_WORDS: Final = (
    "latency", "timeout", "retry", "cache", "schema", "rollout", "quota", "replica", "alert",
    "config", "token", "queue", "index", "backfill", "migration", "canary", "budget", "leak",
)  # fmt: skip
HOT_SHARE: Final = 0.4  # chance that a node is drawn from its kind's recurring hot set

_PREFIXES: Final = (
    f"@prefix ex: <{EX}> .\n"
    f"@prefix id: <{DATA}> .\n"
    "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
)
_RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_RDFS: Final = "http://www.w3.org/2000/01/rdf-schema#"
_PROV: Final = "http://www.w3.org/ns/prov#"
_XSD: Final = "http://www.w3.org/2001/XMLSchema#"


def _rng(seed: int, index: int) -> random.Random:
    return random.Random(seed * 10_000_019 + index)


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(_WORDS[rng.randrange(len(_WORDS))] for _ in range(n))


def _plan(index: int, seed: int) -> list[tuple[str, str, str, str]]:
    """(subject local name, predicate IRI, object kind, object) for the episode's 17 triples.

    Object kinds: ``iri`` (a local name under DATA, or a full IRI for classes), ``str``,
    ``int`` and ``dateTime``.
    """
    rng = _rng(seed, index)
    nodes: list[tuple[str, str]] = []  # (kind, local name)
    used: set[str] = set()
    while len(nodes) < 3:
        kind, hot = _KINDS[rng.randrange(len(_KINDS))]
        if rng.random() < HOT_SHARE:
            local = f"{kind.lower()}-{rng.randrange(hot)}"
        else:
            local = f"{kind.lower()}-e{index}-{len(nodes)}"
        if local not in used:
            used.add(local)
            nodes.append((kind, local))
    activity = f"episode-{index}"
    plan: list[tuple[str, str, str, str]] = []
    for kind, local in nodes:
        plan.append((local, _RDF_TYPE, "iri", EX + kind))
        plan.append((local, _RDFS + "label", "str", f"{kind} {local}"))
        plan.append((local, _RDFS + "comment", "str", f"episode {index}: {_sentence(rng, 6)}"))
        plan.append((local, _PROV + "wasGeneratedBy", "ref", activity))
    plan.append((nodes[0][1], EX + "status", "str", _STATUS[rng.randrange(len(_STATUS))]))
    plan.append((nodes[1][1], EX + "revision", "int", str(rng.randrange(1, 500))))
    plan.append((nodes[0][1], EX + _EDGES[rng.randrange(len(_EDGES))], "ref", nodes[1][1]))
    plan.append((nodes[1][1], EX + _EDGES[rng.randrange(len(_EDGES))], "ref", nodes[2][1]))
    minute = index % (24 * 60)
    stamp = f"2026-{1 + index // 40_000 % 12:02d}-{1 + index // 1_440 % 28:02d}T{minute // 60:02d}:{minute % 60:02d}:00Z"
    plan.append((activity, _PROV + "startedAtTime", "dateTime", stamp))
    assert len(plan) == TRIPLES_PER_EPISODE
    return plan


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def episode_ntriples(index: int, seed: int = 42) -> str:
    """Episode ``index`` as an N-Triples document."""
    lines = []
    for s, p, kind, o in _plan(index, seed):
        if kind == "iri":
            obj = f"<{o}>"
        elif kind == "ref":
            obj = f"<{DATA}{o}>"
        elif kind == "int":
            obj = f'"{o}"^^<{_XSD}integer>'
        elif kind == "dateTime":
            obj = f'"{o}"^^<{_XSD}dateTime>'
        else:
            obj = f'"{_escape(o)}"'
        lines.append(f"<{DATA}{s}> <{p}> {obj} .\n")
    return "".join(lines)


def _curie(iri: str) -> str:
    for prefix, ns in (("ex:", EX), ("rdfs:", _RDFS), ("prov:", _PROV)):
        if iri.startswith(ns):
            return prefix + iri[len(ns) :]
    return "a" if iri == _RDF_TYPE else f"<{iri}>"


def episode_turtle(index: int, seed: int = 42) -> str:
    """Episode ``index`` as a Turtle document, grouped by subject the way an agent would write it."""
    by_subject: dict[str, list[str]] = {}
    for s, p, kind, o in _plan(index, seed):
        if kind == "iri":
            obj = _curie(o)
        elif kind == "ref":
            obj = f"id:{o}"
        elif kind == "int":
            obj = o
        elif kind == "dateTime":
            obj = f'"{o}"^^xsd:dateTime'
        else:
            obj = f'"{_escape(o)}"'
        by_subject.setdefault(s, []).append(f"{_curie(p)} {obj}")
    blocks = [f"id:{s} " + " ;\n    ".join(pos) + " ." for s, pos in by_subject.items()]
    return _PREFIXES + "\n" + "\n\n".join(blocks) + "\n"


def episode(index: int, seed: int = 42, format: str = "turtle") -> str:
    """Episode ``index`` in ``format`` (``turtle`` or ``nt``)."""
    if format in ("turtle", "ttl"):
        return episode_turtle(index, seed)
    if format in ("nt", "ntriples"):
        return episode_ntriples(index, seed)
    raise ValueError(f"unknown episode format {format!r} (turtle or nt)")


def episodes(count: int, seed: int = 42, format: str = "turtle", start: int = 0) -> Iterator[str]:
    """Episodes ``start`` .. ``start + count - 1``."""
    for index in range(start, start + count):
        yield episode(index, seed, format)
