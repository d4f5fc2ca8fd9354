"""``quipu_queries``: load, list, get and remove stored named queries (tools-search §5.18).

A definition is validated completely before anything is written, so a refused load leaves the
registry as it was. Versions follow the shape-set pattern: a load at instant T closes the
current version (its ``valid_to`` becomes T) and opens a new one; a load at the instant of an
existing version replaces it; a load before the current version opened is refused
**[recommended]**, as it would otherwise leave two current versions. ``remove`` closes the
current version and keeps every row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from quipu import times
from quipu.errors import InvalidField, MissingField, NotFound, QueryError
from quipu.graphs import query_shape
from quipu.graphs.query_params import KINDS, MAX_PARAMS, Kind, NamedQuery, ParamSpec, placeholders, render
from quipu.identity import Authenticated
from quipu.store import stored_queries as rows
from quipu.store import values
from quipu.store.database import Database

ACTIONS: Final = ("load", "list", "get", "remove")


def run(
    db: Database,
    *,
    action: str | None = None,
    name: str | None = None,
    description: str | None = None,
    template: str | None = None,
    dataset: str | None = None,
    params: list[Any] | None = None,
    timestamp: str | None = None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    action = "list" if action is None else action
    if action not in ACTIONS:  # never falls through to list
        raise InvalidField(f"unknown queries action '{action}' (load|list|get|remove)", field="action")
    if action == "list":
        with db.read() as conn:
            return {"queries": [_named(row).entry() for row in rows.current(conn)]}
    if name is None or not name.strip():
        raise MissingField("missing 'name'", field="name")
    if action == "get":
        found = current(db, name)
        if found is None:
            raise NotFound(f"no such stored query: {name}", field="name")
        return {"query": found.entry(), "template": found.template}
    if action == "remove":
        return {"removed": remove(db, name, timestamp, auth)}
    return load(db, name, template, description, dataset, params, timestamp, auth)


def current(db: Database, name: str) -> NamedQuery | None:
    """The current version of a stored query, as ``quipu_ask`` runs it."""
    with db.read() as conn:
        found = rows.current(conn, name)
    return _named(found[0]) if found else None


def catalog(db: Database) -> list[NamedQuery]:
    with db.read() as conn:
        return [_named(row) for row in rows.current(conn)]


def load(
    db: Database,
    name: str,
    template: str | None,
    description: str | None,
    dataset: str | None,
    params: list[Any] | None,
    timestamp: str | None,
    auth: Authenticated | None = None,
) -> dict[str, Any]:
    if template is None or not template.strip():
        raise MissingField("missing 'template'", field="template")
    specs = _specs(params)
    check_template(template, specs)
    if dataset is not None:
        dataset = values.check_iri(dataset, "dataset")
    at = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        _refuse_going_back(rows.current_start(ctx.conn, name), name, at)
        row = rows.QueryRow(
            name,
            description or "",
            template,
            dataset,
            at,
            None,
            db.head_tx(ctx.conn),
            tuple(rows.ParamRow(s.name, s.kind, s.required, s.default, s.description) for s in specs),
        )
        rows.open_version(ctx, row)
    return {"loaded": name, "params": len(specs)}


def remove(db: Database, name: str, timestamp: str | None, auth: Authenticated | None = None) -> bool:
    at = times.normalise_timestamp(timestamp)
    with db.write(auth) as ctx:
        _refuse_going_back(rows.current_start(ctx.conn, name), name, at)
        return rows.close(ctx, name, at)


def _refuse_going_back(start: str | None, name: str, at: str) -> None:
    """A version cannot end before it began: the current one must not postdate ``at``."""
    if start is not None and at < start:
        raise InvalidField(
            f"'timestamp' {at} is before the current version of stored query '{name}' ({start}); "
            "versions only move forward",
            field="timestamp",
        )


def _specs(params: list[Any] | None) -> list[ParamSpec]:
    """The ordered parameter specs of a load, or 400 naming what is wrong with one."""
    if params is not None and len(params) > MAX_PARAMS:
        raise InvalidField(f"a query declares at most {MAX_PARAMS} params", field="params")
    specs: list[ParamSpec] = []
    seen: set[str] = set()
    for raw in params or ():
        if not isinstance(raw, Mapping):
            raise InvalidField("each param must be an object", field="params")
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidField("param needs 'name'", field="params")
        if name in seen:
            raise InvalidField(f"param '{name}' is declared twice", field="params")
        seen.add(name)
        spec = ParamSpec(
            name,
            _kind(name, raw),
            _required(name, raw.get("required", False)),
            raw["default"] if isinstance(raw.get("default"), str) else None,  # non-string: absent
            raw["description"] if isinstance(raw.get("description"), str) else "",
        )
        if not spec.required and spec.default is None:
            raise InvalidField(
                f"param '{name}' is optional but has no default (a string, e.g. \"5\"), so its "
                "placeholder could reach the query unreplaced",
                field="params",
            )
        if spec.default is not None:
            render(spec, spec.default)  # a default is checked by its kind now, not at every ask
        specs.append(spec)
    return specs


def _kind(name: str, raw: Mapping[str, Any]) -> Kind:
    given = [raw[key] for key in ("type", "kind") if key in raw]
    if len(given) == 2 and given[0] != given[1]:
        raise InvalidField(f"param '{name}': 'type' and 'kind' disagree", field="params")
    kind = given[0] if given else "text"
    for known in KINDS:
        if kind == known:
            return known
    raise InvalidField(f"param '{name}': unknown type {kind!r} (iri, text or int)", field="params")


def _required(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidField(f"param '{name}': 'required' must be true or false", field="params")
    return value


def check_template(template: str, specs: list[ParamSpec]) -> None:
    """400 unless the placeholders and the specs match one to one and the template, with probe
    values in its placeholders, parses as a SELECT query in which every parameter lands where
    its kind may (quipu.graphs.query_shape)."""
    used = {name for _, _, name in placeholders(template)}
    declared = [spec.name for spec in specs]
    undeclared = sorted(used - set(declared))
    if undeclared:
        raise InvalidField(f"template placeholder {{{undeclared[0]}}} has no param spec", field="template")
    for name in declared:
        if name not in used:
            raise InvalidField(f"param '{name}' never appears in the template as {{{name}}}", field="params")
    if query_shape.reserved(template):
        raise InvalidField("the template holds text reserved for parameter probes", field="template")
    try:
        query = query_shape.probe_query(template, specs)
    except QueryError as exc:
        raise InvalidField(
            f"the template does not parse as a SPARQL query (placeholders filled with probe "
            f"values): {exc.message}",
            field="template",
        ) from None
    if query.algebra.name != "SelectQuery":
        raise InvalidField(
            "the template must be a SELECT query: quipu_ask answers with columns and rows",
            field="template",
        )
    query_shape.check_placements(query.algebra, specs)


def _named(row: rows.QueryRow) -> NamedQuery:
    specs = tuple(
        ParamSpec(p.name, _stored_kind(p.kind), p.required, p.default, p.description) for p in row.params
    )
    return NamedQuery(row.name, row.description, row.template, specs, "stored", row.dataset)


def _stored_kind(kind: str) -> Kind:
    for known in KINDS:
        if kind == known:
            return known
    raise ValueError(f"stored param kind {kind!r}")  # the table's CHECK constraint forbids it
