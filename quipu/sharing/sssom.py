"""The SSSOM mapping set and its TSV form (tools-graphs-governance §3.0).

The alignment pipeline (propose → decide → apply) carries one artefact: an SSSOM mapping set in
its mandatory TSV serialisation. Three properties of that text matter and are kept here:

* **Byte-exact serialisation.** ``set_version`` hashes the serialised set, so the bytes must be a
  function of the set's content alone: a fixed column order, curie-map lines sorted by prefix,
  rows sorted by (``subject_id``, ``object_id``, ``predicate_id``), every line ending in ``\\n``.
* **Re-serialisation is a fixpoint.** Parsing trims cells and reads columns by name, so
  whitespace-only or column-order edits of a submitted set leave its version unchanged; serialising
  trims the same way, so ``serialise(parse(serialise(s))) == serialise(s)``.
* **Refusal over alteration.** A tab or newline in a cell cannot be represented, an unknown
  justification or modifier cannot be read, and both are refused (400) rather than rewritten: a
  silently altered IRI, or a rejection read as "no modifier", would change the judgement.

``decide`` (the operator's verdicts) is pure and lives here beside the model it edits. The SSSOM
LinkML schema (``sssom-schema``) is consulted only by ``validate_with_schema``, imported there:
loading it costs about a second.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import typing
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from quipu.errors import BadRequest, InvalidField

OWL_NS: Final = "http://www.w3.org/2002/07/owl#"
SEMAPV_NS: Final = "https://w3id.org/semapv/vocab/"
SKOS_NS: Final = "http://www.w3.org/2004/02/skos/core#"
OWL_SAME_AS: Final = OWL_NS + "sameAs"
DEFAULT_SET_ID: Final = "urn:quipu:align:mcp"
# The prefixes every set declares, whatever else its header adds.
BASE_CURIE_MAP: Final[Mapping[str, str]] = {"owl": OWL_NS, "semapv": SEMAPV_NS, "skos": SKOS_NS}

COLUMNS: Final = (
    "subject_id",
    "subject_label",
    "predicate_id",
    "object_id",
    "object_label",
    "mapping_justification",
    "predicate_modifier",
    "confidence",
    "author_id",
)
REQUIRED_COLUMNS: Final = ("subject_id", "object_id", "predicate_id", "mapping_justification")
JUSTIFICATIONS: Final = frozenset(
    {
        "LexicalMatching",
        "LexicalSimilarityThresholdMatching",
        "EmbeddingBasedMatching",
        "CompositeMatching",
        "ManualMappingCuration",
    }
)
NEGATION: Final = "Not"
# What sssom-py assumes for a set whose header names no licence (the schema requires one).
UNSPECIFIED_LICENSE: Final = "https://w3id.org/sssom/license/unspecified"
_FIELD: Final = "set_tsv"

Verdict = Literal["accept", "negate"]
PairKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class MappingRow:
    """One row. ``author_id`` None means undecided: that is the whole row state machine."""

    subject_id: str
    predicate_id: str
    object_id: str
    justification: str  # a semapv local name, one of JUSTIFICATIONS
    subject_label: str | None = None
    object_label: str | None = None
    negated: bool = False
    confidence: float | None = None
    author_id: str | None = None

    @property
    def decided(self) -> bool:
        return self.author_id is not None

    @property
    def derives_same_as(self) -> bool:
        """Decided, not negated, and owl:sameAs itself: a skos:closeMatch is near, not identical."""
        return self.decided and not self.negated and self.predicate_id in (OWL_SAME_AS, "owl:sameAs")

    @property
    def derives_distinct_from(self) -> bool:
        return self.decided and self.negated

    def pair_key(self) -> PairKey:
        return pair_key(self.subject_id, self.object_id)

    def cells(self) -> tuple[str, ...]:
        """The row's TSV cells in ``COLUMNS`` order, trimmed as a parse would trim them."""
        confidence = "" if self.confidence is None else f"{self.confidence + 0.0:.3f}"  # no "-0.000"
        raw = (
            self.subject_id,
            self.subject_label or "",
            self.predicate_id,
            self.object_id,
            self.object_label or "",
            "semapv:" + self.justification,
            NEGATION if self.negated else "",
            confidence,
            self.author_id or "",
        )
        return tuple(cell.strip() for cell in raw)


@dataclass(frozen=True, slots=True)
class MappingSet:
    mapping_set_id: str
    mappings: tuple[MappingRow, ...] = ()
    curie_map: Mapping[str, str] = field(default_factory=lambda: dict(BASE_CURIE_MAP))

    def with_mappings(self, mappings: Iterable[MappingRow]) -> MappingSet:
        return replace(self, mappings=tuple(mappings))


def pair_key(a: str, b: str) -> PairKey:
    """The unordered identity of a pair: (A, B) and (B, A) are one judgement (§3.0)."""
    return (a, b) if a <= b else (b, a)


# -- serialise ------------------------------------------------------------------------------


def _row_order(m: MappingRow) -> tuple[str, ...]:
    # The spec's key first; the remaining cells only break ties, so equal keys cannot make the
    # bytes depend on the order rows arrived in.
    cells = m.cells()
    return (cells[0], cells[3], cells[2], *cells)


def _refuse_unrepresentable(where: str, value: str) -> None:
    if "\t" in value or "\n" in value or "\r" in value:
        raise BadRequest(
            f"SSSOM/TSV cannot represent a tab or newline in {where}: {value!r}; refused rather than "
            "altering the value",
            reason="unrepresentable_cell",
        )


def serialise(mapping_set: MappingSet) -> str:
    """The byte-exact SSSOM/TSV of ``mapping_set`` (§3.0)."""
    lines = ["#curie_map:"]
    curie_map = {**BASE_CURIE_MAP, **mapping_set.curie_map}
    for prefix in sorted(curie_map):
        _refuse_unrepresentable(f"curie_map prefix {prefix!r}", prefix + curie_map[prefix])
        lines.append(f'#  {prefix}: "{curie_map[prefix]}"')
    _refuse_unrepresentable("mapping_set_id", mapping_set.mapping_set_id)
    lines.append(f'#mapping_set_id: "{mapping_set.mapping_set_id.strip()}"')
    lines.append("\t".join(COLUMNS))
    for m in sorted(mapping_set.mappings, key=_row_order):
        cells = m.cells()
        for column, cell in zip(COLUMNS, cells, strict=True):
            _refuse_unrepresentable(column, cell)
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def set_version(mapping_set: MappingSet) -> str:
    """``sha256:<hex>`` of the re-serialised set: the token apply compares (rule AA-1)."""
    return version_of(serialise(mapping_set))


def version_of(serialised: str) -> str:
    """The version of text ``serialise`` produced (computed once by callers holding the text)."""
    return "sha256:" + hashlib.sha256(serialised.encode("utf-8")).hexdigest()


# -- parse ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Header:
    metadata: dict[str, str]  # top-level ``#key: value`` entries (mapping_set_id, license, …)
    curie_map: dict[str, str]
    columns: tuple[str, ...]
    rows: list[tuple[int, list[str]]]  # (line number, cells) of each non-blank data line


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _split(text: str) -> _Header:
    """The header metadata, curie map, column names and data lines of a TSV (no cell is judged)."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidField("'set_tsv' must be a non-empty SSSOM/TSV mapping set", field=_FIELD)
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    metadata: dict[str, str] = {}
    curie_map: dict[str, str] = {}
    in_curie_map = False
    at = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), None)
    if at is None:
        raise InvalidField("SSSOM/TSV has no header row (the column names)", field=_FIELD)
    for line in lines[:at]:
        if not line.strip():
            continue
        body = line[1:]
        key, colon, value = body.partition(":")
        if not colon or not key.strip():
            continue  # a comment line
        if body[:1].isspace():  # YAML: an indented entry belongs to the block above it
            if in_curie_map:
                curie_map[key.strip()] = _unquote(value)
            continue
        in_curie_map = key.strip() == "curie_map" and not value.strip()
        if not in_curie_map:
            metadata[key.strip()] = _unquote(value)
    columns = tuple(name.strip() for name in lines[at].split("\t"))
    seen: set[str] = set()
    for name in columns:
        if name and name in seen:
            raise InvalidField(f"SSSOM/TSV names the column {name} twice", field=_FIELD)
        seen.add(name)
    rows = [
        (number, line.split("\t"))
        for number, line in enumerate(lines[at + 1 :], start=at + 2)
        if line.strip()
    ]
    return _Header(metadata, curie_map, columns, rows)


def parse_justification(value: str, where: str = "mapping_justification") -> str:
    """A semapv term as CURIE or full IRI → its local name; anything else is refused."""
    for prefix in ("semapv:", SEMAPV_NS):
        if value.startswith(prefix) and value[len(prefix) :] in JUSTIFICATIONS:
            return value[len(prefix) :]
    known = ", ".join(sorted(JUSTIFICATIONS))
    raise InvalidField(
        f"{where}: unknown mapping_justification {value!r}; expected a semapv term "
        f"(semapv:<term> or {SEMAPV_NS}<term>) among {known}",
        field=_FIELD,
    )


def _confidence(raw: str, where: str) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidField(f"{where}: confidence {raw!r} is not a number from 0 to 1", field=_FIELD)
    return value


def _row(columns: Mapping[str, int], number: int, cells: Sequence[str]) -> MappingRow:
    where = f"SSSOM/TSV line {number}"

    def cell(name: str) -> str:
        index = columns.get(name)
        return cells[index].strip() if index is not None and index < len(cells) else ""

    for name in ("subject_id", "predicate_id", "object_id"):
        if not cell(name):
            raise InvalidField(f"{where}: {name} is empty (it is required)", field=_FIELD)
    modifier = cell("predicate_modifier")
    if modifier not in ("", NEGATION):
        # Only "Not" negates: reading an unknown modifier as none would turn a rejection into a proposal.
        raise InvalidField(
            f"{where}: predicate_modifier {modifier!r} is not supported; only {NEGATION!r} is",
            field=_FIELD,
        )
    return MappingRow(
        subject_id=cell("subject_id"),
        predicate_id=cell("predicate_id"),
        object_id=cell("object_id"),
        justification=parse_justification(cell("mapping_justification"), where),
        subject_label=cell("subject_label") or None,
        object_label=cell("object_label") or None,
        negated=modifier == NEGATION,
        confidence=_confidence(cell("confidence"), where),
        author_id=cell("author_id") or None,
    )


def parse(text: str) -> MappingSet:
    """A mapping set from SSSOM/TSV: columns by name, unknown columns ignored (§3.0)."""
    header = _split(text)
    set_id = header.metadata.get("mapping_set_id", "").strip()
    if not set_id:
        raise InvalidField("SSSOM/TSV header has no mapping_set_id", field=_FIELD)
    columns = {name: index for index, name in enumerate(header.columns) if name}
    for name in REQUIRED_COLUMNS:
        if name not in columns:
            raise InvalidField(f"SSSOM/TSV is missing the required column {name}", field=_FIELD)
    rows = tuple(_row(columns, number, cells) for number, cells in header.rows)
    return MappingSet(set_id, rows, {**BASE_CURIE_MAP, **header.curie_map})


# -- decide ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decided:
    mapping_set: MappingSet
    applied: int  # rows a decision landed on
    unmatched: list[PairKey]  # pairs (as first given) that no row names, each once


def decide(mapping_set: MappingSet, decisions: Sequence[tuple[str, str, Verdict]], reviewer: str) -> Decided:
    """Record verdicts on a set (§3.2): pure; a contradiction is refused before anything is recorded.

    AD-1: accept sets ``author_id``; negate also sets ``predicate_modifier: Not``. AD-2: identical
    duplicates are harmless. AD-3: a pair no row names changes nothing (it is reported).
    """
    author = reviewer.strip()
    if not author:
        raise InvalidField("'reviewer' must be non-blank: it becomes the rows' author_id", field="reviewer")
    wanted: dict[PairKey, Verdict] = {}
    given: dict[PairKey, PairKey] = {}  # each pair as the operator first wrote it
    for subject, obj, verdict in decisions:
        key = pair_key(subject, obj)
        prior = wanted.setdefault(key, verdict)
        given.setdefault(key, (subject, obj))
        if prior != verdict:
            raise InvalidField(
                f"conflicting decisions for {key[0]} / {key[1]}: {prior!r} and {verdict!r}; nothing "
                "was recorded (choosing one would record a judgement nobody made)",
                field="decisions",
            )
    landed: set[PairKey] = set()
    out: list[MappingRow] = []
    for m in mapping_set.mappings:
        ruling = wanted.get(m.pair_key())
        if ruling is None:
            out.append(m)
            continue
        if m.decided:
            raise InvalidField(
                f"{m.subject_id} / {m.object_id} already carries a judgement by {m.author_id}; "
                "changing it is a retraction, not a decision",
                field="decisions",
            )
        landed.add(m.pair_key())
        out.append(replace(m, author_id=author, negated=ruling == "negate"))
    applied = sum(1 for m in mapping_set.mappings if m.pair_key() in landed)
    unmatched = [given[key] for key in given if key not in landed]
    return Decided(mapping_set.with_mappings(out), applied, unmatched)


# -- the SSSOM schema -----------------------------------------------------------------------


def validate_with_schema(tsv: str) -> None:
    """Check ``tsv`` against the SSSOM LinkML schema; refuse (400) naming the line and column.

    Stricter than ``parse`` on purpose: every column must be an SSSOM slot, and identifiers must
    be URIs or CURIEs (a reviewer name with a space, or a non-ASCII IRI, is not). A header
    without a licence is read with sssom-py's "unspecified" licence, as sssom-py reads it.
    """
    with warnings.catch_warnings():  # its LinkML runtime announces a deprecation on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from sssom_schema.datamodel import sssom_schema as schema  # type: ignore[import-untyped]

    header = _split(tsv)
    row_slots = _slots(schema.Mapping)
    for name in header.columns:
        if name not in row_slots:
            raise InvalidField(f"SSSOM schema: {name!r} is not a mapping slot", field=_FIELD)
    for number, cells in header.rows:
        values = {
            name: cell.strip().split("|") if row_slots[name] else cell.strip()
            for name, cell in zip(header.columns, cells, strict=False)
            if cell.strip()
        }
        _build(schema.Mapping, values, f"line {number}", ("predicate_id", "mapping_justification"))
    metadata = {"license": UNSPECIFIED_LICENSE, **{k: v for k, v in header.metadata.items() if v}}
    unknown = sorted(set(metadata) - set(_slots(schema.MappingSet)))
    if unknown:
        raise InvalidField(f"SSSOM schema: {unknown[0]!r} is not a mapping set slot", field=_FIELD)
    set_values = {**metadata, "curie_map": header.curie_map}
    _build(schema.MappingSet, set_values, "the header", ("mapping_set_id", "license"))


def _slots(cls: type) -> dict[str, bool]:
    """A LinkML class's slot names, each with whether it takes a list (SSSOM/TSV joins with |)."""
    return {f.name: _takes_list(f.type) for f in dataclasses.fields(cls)}


def _takes_list(annotation: object) -> bool:
    return typing.get_origin(annotation) is list or any(_takes_list(a) for a in typing.get_args(annotation))


def _build(cls: type, values: Mapping[str, object], where: str, required: tuple[str, ...]) -> None:
    try:
        cls(**values)
    except (TypeError, ValueError) as exc:
        # Name the slot at fault: retry each value alone beside the required ones.
        base = {k: v for k, v in values.items() if k in required}
        culprit = next((k for k in values if not _builds(cls, {**base, k: values[k]})), None)
        named = f", column {culprit}" if culprit else ""
        raise InvalidField(f"SSSOM schema rejects {where}{named}: {exc}", field=_FIELD) from None


def _builds(cls: type, values: Mapping[str, object]) -> bool:
    try:
        cls(**values)
    except (TypeError, ValueError):
        return False
    return True
