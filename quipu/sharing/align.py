"""``quipu_align_propose``, ``quipu_align_decide`` and ``quipu_align_apply`` (tools-graphs-governance §3).

A propose → decide → apply pipeline carried by one SSSOM mapping set (``quipu.sharing.sssom``):

* **propose** (a read) scores label pairs across two graphs and returns candidate rows, undecided;
* **decide** (a read of nothing: a pure function) records the operator's accept / negate verdicts;
* **apply** (the only writer) derives ``owl:sameAs`` / ``quipu:distinctFrom`` from decided rows into
  an alignment graph derived from the two source IRIs, never into either source.

Each step hands back the set's ``expected_version``; apply compares the one it is given with the
version of the set it received, before anything else, and never computes it for the caller (rule
AA-1): a version derived at apply time would always match and silently discard a concurrent
operator's decision.

The link specification is fixed (§3.1): a shared ``rdf:type`` is required, labels are compared
case-insensitively, equal labels score 1.0 (``LexicalMatching``), two slash-qualified commit
identifiers are never a candidate, anything else is Jaro-Winkler (the same scorer as
``quipu_resolve_entity``) kept at 0.85 or more.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from quipu import times
from quipu.errors import InvalidField, MissingField
from quipu.graphs.registry import check_actor
from quipu.identity import Authenticated
from quipu.search.resolve import jaro_winkler
from quipu.sharing import sssom
from quipu.sharing.sssom import MappingRow, MappingSet
from quipu.store import align_store, values
from quipu.store.database import Database
from quipu.store.graph_facts import Triple

FLOOR: Final = 0.85  # resolution's own candidate threshold: alignment proposes what it would
DISTINCT_FROM: Final = "https://quipu.dev/ontology/distinctFrom"
ALIGN_NS: Final = "https://quipu.dev/ontology/align/"
ASSERTED_BY, ASSERTED_ON, JUSTIFICATION = (
    ALIGN_NS + n for n in ("assertedBy", "assertedOn", "justification")
)
VERDICTS: Final = ("accept", "negate")

# ``commit/<repo>/<sha>``: a repository path of non-empty segments, then a 7-64 digit hex object
# id (an abbreviated SHA-1 up to a full SHA-256).
_COMMIT_ID: Final = re.compile(r"commit/[^/]+(?:/[^/]+)*/[0-9a-fA-F]{7,64}")


@dataclass(frozen=True, slots=True)
class Concept:
    iri: str
    label: str
    types: frozenset[str]


# -- propose --------------------------------------------------------------------------------


def _text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MissingField(f"missing '{field}' parameter (a non-empty string)", field=field)
    return value


def is_commit_id(label: str) -> bool:
    """A slash-qualified commit identifier: different hashes under one ``commit/<repo>/`` prefix
    score high on Jaro-Winkler but never name the same commit."""
    return _COMMIT_ID.fullmatch(label) is not None


def score_labels(a: str, b: str) -> tuple[float, str] | None:
    """(score, semapv justification), or None when the pair is not a candidate at all."""
    a, b = a.lower(), b.lower()
    if a == b:
        return 1.0, "LexicalMatching"
    if is_commit_id(a) and is_commit_id(b):
        return None
    return jaro_winkler(a, b), "LexicalSimilarityThresholdMatching"


def concepts(rows: Iterable[align_store.LabelRow]) -> tuple[list[Concept], int]:
    """One graph's concepts, and how many entities were set aside for carrying two labels (AP-2:
    an entity without a label never appears in ``rows``, so it is no concept)."""
    labels: dict[str, set[str]] = {}
    types: dict[str, set[str]] = {}
    for iri, label, rdf_type in rows:
        labels.setdefault(iri, set()).add(label)
        if rdf_type:
            types.setdefault(iri, set()).add(rdf_type)
    found = [
        Concept(iri, next(iter(names)), frozenset(types.get(iri, ())))
        for iri, names in sorted(labels.items())
        if len(names) == 1
    ]
    return found, len(labels) - len(found)


def candidates(left: Sequence[Concept], right: Sequence[Concept]) -> list[MappingRow]:
    """Scored rows for every pair sharing a type whose labels score at least ``FLOOR`` (§3.1)."""
    by_type: dict[str, list[Concept]] = {}
    for concept in right:
        for rdf_type in concept.types:
            by_type.setdefault(rdf_type, []).append(concept)
    rows: list[MappingRow] = []
    for a in left:
        # require_shared_type: a Repository and a Host both called "bobbin" are not one thing
        for b in {c.iri: c for t in a.types for c in by_type.get(t, ())}.values():
            scored = score_labels(a.label, b.label) if a.iri != b.iri else None
            if scored is not None and scored[0] >= FLOOR:
                rows.append(
                    MappingRow(
                        subject_id=a.iri,
                        predicate_id=sssom.OWL_SAME_AS,
                        object_id=b.iri,
                        justification=scored[1],
                        subject_label=a.label,
                        object_label=b.label,
                        confidence=scored[0],
                    )
                )
    return rows


def propose(db: Database, *, graph_a: str, graph_b: str, mapping_set_id: str | None = None) -> dict[str, Any]:
    """Candidate alignments between two graphs as an undecided mapping set, with its version."""
    graph_a, graph_b = _text(graph_a, "graph_a"), _text(graph_b, "graph_b")
    set_id = (
        sssom.DEFAULT_SET_ID if mapping_set_id is None else values.check_iri(mapping_set_id, "mapping_set_id")
    )
    rows_a, rows_b = align_store.labelled_entities(db, (("graph_a", graph_a), ("graph_b", graph_b)))
    (left, aside_a), (right, aside_b) = concepts(rows_a), concepts(rows_b)
    mapping_set = MappingSet(set_id, tuple(candidates(left, right)))
    tsv = sssom.serialise(mapping_set)
    set_aside = aside_a + aside_b
    n = len(mapping_set.mappings)
    return {
        # AP-3: both counts in one sentence, so neither can be reported without the other
        "summary": f"{n} candidate(s); {set_aside} entity(ies) set aside as ambiguous",
        "candidates": n,
        "set_aside": set_aside,
        "expected_version": sssom.version_of(tsv),  # AP-4: of exactly the text returned
        "set_tsv": tsv,
    }


# -- decide ---------------------------------------------------------------------------------


def _decision(item: object, index: int) -> tuple[str, str, sssom.Verdict]:
    where = f"decisions[{index}]"
    if not isinstance(item, Mapping):
        raise InvalidField(
            f"'{where}' must be an object {{subject_id, object_id, decision}}", field="decisions"
        )
    subject, obj, verdict = (item.get(k) for k in ("subject_id", "object_id", "decision"))
    for name, value in (("subject_id", subject), ("object_id", obj)):
        if not isinstance(value, str) or not value.strip():
            raise InvalidField(f"'{where}.{name}' must be a non-empty string", field="decisions")
    if verdict not in VERDICTS:
        raise InvalidField(
            f"'{where}.decision' must be 'accept' or 'negate', got {verdict!r}", field="decisions"
        )
    return cast(str, subject).strip(), cast(str, obj).strip(), cast(sssom.Verdict, verdict)


def decide(*, set_tsv: str, reviewer: str, decisions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The set with the operator's verdicts recorded (touches no store), and its version."""
    mapping_set = sssom.parse(set_tsv)
    if not isinstance(reviewer, str):
        raise MissingField("missing 'reviewer' parameter", field="reviewer")
    if not isinstance(decisions, Sequence) or isinstance(decisions, str):
        raise InvalidField("'decisions' must be an array of verdicts", field="decisions")
    verdicts = [_decision(item, i) for i, item in enumerate(decisions)]
    decided = sssom.decide(mapping_set, verdicts, reviewer)
    tsv = sssom.serialise(decided.mapping_set)  # AD-4: re-sorted canonically, versioned as returned
    return {
        "set_tsv": tsv,
        "expected_version": sssom.version_of(tsv),
        "applied": decided.applied,
        "unmatched": [{"subject_id": s, "object_id": o} for s, o in decided.unmatched],
    }


# -- apply ----------------------------------------------------------------------------------


def derived_graph(graph_a: str, graph_b: str) -> str:
    """``urn:quipu:align:<12 hex>:<12 hex>`` of the ordered pair: swapping the graphs changes nothing."""
    first, second = sorted((graph_a, graph_b))
    a, b = (hashlib.sha256(iri.encode("utf-8")).hexdigest()[:12] for iri in (first, second))
    return f"urn:quipu:align:{a}:{b}"


def _writable_iri(iri: str, where: str) -> str:
    try:
        return values.check_iri(iri, where)
    except InvalidField:
        raise InvalidField(
            f"{where} {iri!r} cannot be written as an IRI (it contains '>', a space or another "
            "character an IRI may not hold, or it is not absolute)",
            field="set_tsv",
        ) from None


def _plan(rows: Sequence[MappingRow], now: str) -> tuple[list[Triple], list[tuple[str, str, str]]]:
    """The derived assertions and the provenance values of the deriving rows (AA-6: undecided
    rows derive nothing). Provenance is single-valued per subject: when two rows share a subject,
    the later one in pair order wins, so the subject still ends with one value of each."""
    asserted: list[Triple] = []
    provenance: dict[tuple[str, str], str] = {}
    deriving = [m for m in rows if m.derives_same_as or m.derives_distinct_from]
    for m in sorted(deriving, key=lambda m: (m.pair_key(), m.cells())):
        subject = _writable_iri(m.subject_id, "subject_id")
        obj = _writable_iri(m.object_id, "object_id")
        predicate = sssom.OWL_SAME_AS if m.derives_same_as else DISTINCT_FROM
        asserted.append((subject, predicate, obj))
        provenance[(subject, ASSERTED_BY)] = cast(str, m.author_id)
        provenance[(subject, ASSERTED_ON)] = now
        provenance[(subject, JUSTIFICATION)] = "semapv:" + m.justification
    return asserted, [(s, p, v) for (s, p), v in provenance.items()]


def apply(
    db: Database,
    *,
    set_tsv: str,
    graph_a: str,
    graph_b: str,
    expected_version: str | None = None,
    actor: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    """Write the decided rows' assertions into the derived alignment graph (§3.3)."""
    set_tsv = _text(set_tsv, "set_tsv")
    graph_a, graph_b = _text(graph_a, "graph_a"), _text(graph_b, "graph_b")
    if not isinstance(expected_version, str) or not expected_version.strip():
        raise MissingField(
            "missing 'expected_version': carry the expected_version that align decide (or propose) "
            "returned for exactly this set; apply never computes it, so a set changed by someone "
            "else since you read it is refused instead of silently applied",
            field="expected_version",
        )
    check_actor(actor)
    mapping_set = sssom.parse(set_tsv)
    version = sssom.set_version(mapping_set)
    # AA-1/AA-2: compared before anything is staged or registered; a mismatch writes nothing
    if version != expected_version.strip():
        raise InvalidField(
            f"the mapping set changed under this apply: expected {expected_version.strip()}, the set "
            f"is {version}. Nothing was written; re-read the set and decide again",
            field="expected_version",
            reason="stale_version",
        )
    now = times.now()
    asserted, provenance = _plan(mapping_set.mappings, now)
    graph = derived_graph(graph_a, graph_b)
    # AA-5: the derived graph is the only one registered or written
    written = align_store.write_alignment(
        db,
        graph=graph,
        sources=(("graph_a", graph_a), ("graph_b", graph_b)),
        asserted=asserted,
        single_valued=provenance,
        source=f"align:apply:{version}",
        timestamp=now,
        actor=actor,
        auth=auth,
    )
    negated = sum(1 for m in mapping_set.mappings if m.derives_distinct_from)
    # AA-3: written is measured (live statements after minus before), never counted from the set
    return {"graph": graph, "written": written, "distinct_from": negated}
