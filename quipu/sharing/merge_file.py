"""The ``merge-decisions/v1`` document as ``quipu_merge_apply`` receives it (tools-graphs-governance
§4.5): its schema, the fields v1 defines, and each row's decision.

A field v1 does not define is refused at either level rather than dropped: the document's hash
goes into the merge transaction's source, so a field apply ignored would be recorded as if it
had been honoured. Everything here is a check of the document alone; whether it still matches
ROOT and the shares is decided by ``quipu.sharing.merge``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from quipu.errors import BadRequest, InvalidField, MissingField
from quipu.sharing.merge_model import Conflict

SCHEMA: Final = "https://github.com/scbrown/quipu/merge-decisions/v1"
FILE_FIELDS: Final = frozenset(
    {"schema", "incoming_share", "base_share", "local_graph_hash", "incoming_graph_hash", "labels", "rows"}
)
ROW_FIELDS: Final = frozenset(
    {
        "id",
        "subject",
        "predicate",
        "max_count",
        "base",
        "ours",
        "theirs",
        "provenance",
        "proposal",
        "decision",
        "kind",
        "rule",
        "decided_by",
        "decided_at",
    }
)
SIDES: Final = ("ours", "theirs", "base")


@dataclass(frozen=True, slots=True)
class Decision:
    """``{"choose": side}`` or ``{"values": [terms]}``: exactly one of the two is set."""

    choose: str | None = None
    values: tuple[object, ...] | None = None  # checked term by term against the row later


@dataclass(frozen=True, slots=True)
class Row:
    index: int
    id: str
    conflict: Conflict  # the slot as the file states it, value lists sorted (their order is free)
    decision: Decision | None
    echoed: dict[str, str]  # decided_by / decided_at, as given (never trusted)

    @property
    def field(self) -> str:
        return f"decisions.rows[{self.index}]"


@dataclass(frozen=True, slots=True)
class DecisionsFile:
    incoming_share: str
    base_share: str
    local_graph_hash: str
    incoming_graph_hash: str
    rows: list[Row]


def read(document: object) -> DecisionsFile:
    """The decisions document, refused on a wrong schema, an undefined field or a wrong type."""
    if not isinstance(document, Mapping):
        raise InvalidField("'decisions' must be a merge-decisions/v1 object", field="decisions")
    if document.get("schema") != SCHEMA:
        raise BadRequest(
            f"not a merge decisions file: schema {document.get('schema')!r} (expected {SCHEMA})",
            reason="unsupported_schema",
            field="decisions.schema",
        )
    _refuse_undefined(document, FILE_FIELDS, "decisions", "in the file")
    rows = _member(document, "rows", list, "decisions")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise InvalidField(f"decisions row {index} is not an object", field=f"decisions.rows[{index}]")
        _refuse_undefined(row, ROW_FIELDS, f"decisions.rows[{index}]", f"in row {row.get('id', index)}")
    labels = document.get("labels")
    if labels is not None and not isinstance(labels, Mapping):
        raise InvalidField("'decisions.labels' must be an object", field="decisions.labels")
    parsed = [_row(index, row) for index, row in enumerate(rows)]
    seen: set[str] = set()
    for row in parsed:
        if row.id in seen:
            raise InvalidField(f"decisions row id {row.id!r} appears twice", field=f"{row.field}.id")
        seen.add(row.id)
    return DecisionsFile(
        _member(document, "incoming_share", str, "decisions"),
        _member(document, "base_share", str, "decisions"),
        _member(document, "local_graph_hash", str, "decisions"),
        _member(document, "incoming_graph_hash", str, "decisions"),
        parsed,
    )


def _refuse_undefined(obj: Mapping[str, Any], allowed: frozenset[str], where: str, said: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InvalidField(
            f"unknown field '{unknown[0]}' {said}: merge-decisions/v1 does not define it, and apply "
            "would drop it while its hash still covered it. Nothing was written",
            reason="undefined_decisions_field",
            field=f"{where}.{unknown[0]}",
        )


def _member(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise MissingField(f"'{where}.{key}' is required", field=f"{where}.{key}")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidField(f"'{where}.{key}' must be a {kind.__name__}", field=f"{where}.{key}")
    return value


def _terms(obj: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values: list[Any] = _member(obj, key, list, where)
    if not all(isinstance(v, str) for v in values):
        raise InvalidField(f"'{where}.{key}' must list N-Triples terms (strings)", field=f"{where}.{key}")
    return tuple(sorted(values))


def _row(index: int, row: Mapping[str, Any]) -> Row:
    where = f"decisions.rows[{index}]"
    max_count: int = _member(row, "max_count", int, where)
    echoed: dict[str, str] = {}
    for key in ("decided_by", "decided_at"):
        if row.get(key) is not None:
            echoed[key] = _member(row, key, str, where)
    conflict = Conflict(
        _member(row, "subject", str, where),
        _member(row, "predicate", str, where),
        max_count,
        _terms(row, "base", where),
        _terms(row, "ours", where),
        _terms(row, "theirs", where),
        _member(row, "kind", str, where),
    )
    return Row(
        index,
        _member(row, "id", str, where),
        conflict,
        _decision(row.get("decision"), f"{where}.decision"),
        echoed,
    )


def _decision(value: object, field: str) -> Decision | None:
    if value is None:
        return None  # undecided: refused once the file is known to be current
    if isinstance(value, Mapping) and set(value) == {"choose"}:
        if value["choose"] not in SIDES:
            raise InvalidField(
                f"'{field}.choose' must be one of {', '.join(SIDES)}, got {value['choose']!r}",
                field=f"{field}.choose",
            )
        return Decision(choose=str(value["choose"]))
    if isinstance(value, Mapping) and set(value) == {"values"} and isinstance(value["values"], Sequence):
        if isinstance(value["values"], str):
            raise InvalidField(f"'{field}.values' must be a list of N-Triples terms", field=f"{field}.values")
        return Decision(values=tuple(value["values"]))
    raise InvalidField(
        f'\'{field}\' must be {{"choose": "ours"|"theirs"|"base"}} or {{"values": [<N-Triples term>, ...]}}',
        field=field,
    )
