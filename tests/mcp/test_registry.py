"""The tool registry (issue 5 §1): served tools, names, annotations, input schemas and selection."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
from mcp.shared.tool_name_validation import validate_tool_name

from quipu.config import load_settings, owl_installed
from quipu.errors import ConfigError
from quipu.mcp.registry import (
    FORM,
    JSON,
    TOOLSETS,
    Registry,
    ToolSpec,
    _untitled,
    build_registry,
    load_manifest,
)
from quipu.mcp.server import tool_list
from quipu.rest import route_table
from quipu.rest.app import create_app

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

DEFAULT_COUNT: Final = 77
OWL_COUNT: Final = 2
OWL_TOOLS: Final = frozenset({"quipu_load_ontology", "quipu_explain"})
# Set to True in the change that lands the last default tool's route: the count test then pins the
# served set exactly (77 tools; 79 when the owl extra serves its two) instead of only the sum.
ALL_ROUTES_LANDED: Final = True

WRITES: Final = frozenset({"quipu_knot", "quipu_retract", "quipu_set", "quipu_update"})
# Request regimes of tools-core §0.4 for the tools served today: strict routes refuse an unknown
# key (400 unknown_field), annotating ones accept it and report it as ``ignored_fields``.
STRICT: Final = frozenset(
    {
        "quipu_entity",
        "quipu_entity_history",
        "quipu_fragments",
        "quipu_transactions",
        "quipu_update",
        "quipu_health",
        "quipu_stats",
        "quipu_version",
    }
)
ANNOTATING: Final = frozenset(
    {"quipu_cord", "quipu_export", "quipu_unravel", "quipu_knot", "quipu_query", "quipu_retract", "quipu_set"}
)
_FLAGS: Final = frozenset({"true", "false", "1", "0"})


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    db = Path(tmp_path_factory.mktemp("registry")) / "r.db"
    document: dict[str, Any] = create_app(load_settings(store={"db": str(db)})).openapi()
    return document


@pytest.fixture(scope="module")
def registry(openapi: dict[str, Any]) -> Registry:
    return build_registry(openapi)


# -- names and annotations --------------------------------------------------------------------------


def test_every_served_name_is_a_valid_mcp_tool_name(registry: Registry) -> None:
    invalid = [spec.name for spec in registry if not validate_tool_name(spec.name).is_valid]
    assert invalid == []
    assert len(registry) > 0


def test_served_names_are_unique_and_keyed_by_name(registry: Registry) -> None:
    names = [spec.name for spec in registry]
    assert len(names) == len(set(names))
    assert all(registry.tools[name].name == name for name in registry.tools)
    listed = [tool.name for tool in tool_list(registry)]
    assert listed == names


def test_annotations_follow_the_route_class_exactly(registry: Registry) -> None:
    for spec in registry:
        read = route_table.ROUTES[(spec.method, spec.path)] == route_table.READ
        expected = {"readOnlyHint": read, "destructiveHint": not read, "openWorldHint": True}
        assert spec.read_only is read, spec.name
        assert spec.annotations() == expected, spec.name


def test_listed_annotations_on_the_wire_are_the_registry_annotations(registry: Registry) -> None:
    for tool in tool_list(registry):
        assert tool.annotations is not None
        wire = tool.annotations.model_dump(by_alias=True, exclude_none=True)
        assert wire == registry.tools[tool.name].annotations(), tool.name
        assert "idempotentHint" not in wire  # nothing is claimed that the route class does not give


def test_the_writes_served_today_are_destructive(registry: Registry) -> None:
    served_writes = {spec.name for spec in registry if not spec.read_only}
    assert served_writes >= WRITES
    assert all(registry.tools[name].annotations()["destructiveHint"] for name in WRITES)


# -- which tools are served ----------------------------------------------------------------------------


def test_served_set_is_the_manifest_entries_whose_route_exists(registry: Registry) -> None:
    manifest = load_manifest()
    installed = {"": True, "owl": owl_installed()}
    routed = [e.name for e in manifest if (e.method, e.path) in route_table.ROUTES and installed[e.extra]]
    assert list(registry.tools) == routed  # manifest order
    assert [e.name for e in registry.missing] == [e.name for e in manifest if e.name not in routed]
    assert "quipu_version" in registry.tools
    for spec in registry:
        entry = next(e for e in manifest if e.name == spec.name)
        assert (spec.method, spec.path, spec.toolset, spec.description) == (
            entry.method,
            entry.path,
            entry.toolset,
            entry.description,
        )


def test_prints_the_manifest_tools_not_served_yet(registry: Registry) -> None:
    served = list(registry.tools)
    missing = [e.name for e in registry.missing]
    print(
        f"\n{len(served)} of {DEFAULT_COUNT} (+{OWL_COUNT} owl) tools served; {len(missing)} not served yet:"
    )
    for entry in registry.missing:
        extra = f" [{entry.extra}]" if entry.extra else ""
        print(f"  {entry.toolset:<11} {entry.name}{extra}  ({entry.method} {entry.path})")
    assert len(served) + len(missing) == DEFAULT_COUNT + OWL_COUNT
    assert not set(served) & set(missing)
    default_missing = [e.name for e in registry.missing if not e.extra]
    if not ALL_ROUTES_LANDED:
        assert default_missing, (
            "every default route has landed: set ALL_ROUTES_LANDED = True to pin the count"
        )
        return
    # The exact pin: 77 in a default install, 79 when the owl extra serves its two tools.
    owl_served = OWL_TOOLS & set(served)
    assert owl_served in (frozenset(), OWL_TOOLS), owl_served
    assert default_missing == []
    assert len(served) == (DEFAULT_COUNT + OWL_COUNT if owl_served else DEFAULT_COUNT)
    assert set(missing) == OWL_TOOLS - owl_served


def test_no_served_tool_comes_from_a_manifest_entry_without_a_route(registry: Registry) -> None:
    for spec in registry:
        assert (spec.method, spec.path) in route_table.ROUTES, spec.name
    for entry in registry.missing:
        assert (entry.method, entry.path) not in route_table.ROUTES or entry.extra, entry.name


def test_the_owl_tools_are_served_exactly_with_the_extra(registry: Registry) -> None:
    # Their routes exist in every install (a feature error without the extra, tools-graphs-governance
    # §8); the tools do not. The CI job with the extra sets QUIPU_REQUIRE_OWL (./dev test-owl).
    assert {("POST", "/ontology"), ("POST", "/explain")} <= set(route_table.ROUTES)
    served = OWL_TOOLS & set(registry.tools)
    if os.environ.get("QUIPU_REQUIRE_OWL"):
        assert owl_installed(), "QUIPU_REQUIRE_OWL is set but the owl extra is not installed"
    assert served == (OWL_TOOLS if owl_installed() else frozenset())
    owl_missing = {e.name for e in registry.missing if e.extra == "owl"}
    assert owl_missing == OWL_TOOLS - served


def test_a_route_missing_from_the_openapi_document_is_not_served(openapi: dict[str, Any]) -> None:
    paths = {p: ops for p, ops in openapi["paths"].items() if p != "/knot"}
    registry = build_registry({**openapi, "paths": paths})
    assert "quipu_knot" not in registry.tools
    assert "quipu_knot" in [e.name for e in registry.missing]


# -- input schemas ---------------------------------------------------------------------------------------


def _local_refs(node: Any) -> Any:
    return json.loads(json.dumps(node).replace('"#/components/schemas/', '"#/$defs/'))


def _flag(schema: dict[str, Any]) -> dict[str, Any]:
    """A ``true``/``false`` query flag is a boolean to a tool (tools-core §0.1)."""
    enum = schema.get("enum")
    if not isinstance(enum, list) or not {"true", "false"} <= set(enum) <= _FLAGS:
        return schema
    flag = {k: v for k, v in schema.items() if k not in ("enum", "type", "default")}
    flag["type"] = "boolean"
    if "default" in schema:
        flag["default"] = schema["default"] in ("true", "1")
    return flag


def expected_schema(openapi: dict[str, Any], spec: ToolSpec) -> dict[str, Any]:
    """What the route's OpenAPI says a tool call's arguments are, with the manifest's defaults."""
    operation = openapi["paths"][spec.path][spec.method.lower()]
    components = openapi.get("components", {}).get("schemas", {})
    content = operation.get("requestBody", {}).get("content", {})
    media = next((m for m in (JSON, FORM) if m in content), None)
    if media is not None:
        body = dict(content[media]["schema"])
        branches = [b for b in body.get("anyOf", [body]) if b != {"type": "null"}]  # an optional body
        assert len(branches) == 1, spec.name
        target = branches[0]
        if "$ref" in target:
            target = components[target["$ref"].removeprefix("#/components/schemas/")]
        schema: dict[str, Any] = _local_refs(_untitled(target))
        schema.setdefault("type", "object")
    else:
        properties: dict[str, Any] = {}
        for param in operation.get("parameters", []):
            if param["in"] == "query":
                prop = _flag(dict(param["schema"]))
                if "description" in param:
                    prop.setdefault("description", param["description"])
                properties[param["name"]] = _local_refs(_untitled(prop))
        # strict unless the route says it reports unknown parameters (x-quipu-annotating)
        annotating = bool(operation.get("x-quipu-annotating"))
        schema = {"type": "object", "properties": properties, "additionalProperties": annotating}
        required = [
            p["name"] for p in operation.get("parameters", []) if p["in"] == "query" and p.get("required")
        ]
        if required:
            schema["required"] = required
    for name, value in spec.defaults.items():
        schema["properties"][name]["default"] = value
    return schema


def test_every_input_schema_is_what_its_route_openapi_gives(
    registry: Registry, openapi: dict[str, Any]
) -> None:
    for spec in registry:
        got = {k: v for k, v in spec.input_schema.items() if k != "$defs"}
        assert got == expected_schema(openapi, spec), spec.name


def test_every_input_schema_is_an_object_with_properties_at_its_root(registry: Registry) -> None:
    for spec in registry:
        assert spec.input_schema["type"] == "object", spec.name
        assert isinstance(spec.input_schema.get("properties"), dict), spec.name
        assert "anyOf" not in spec.input_schema, spec.name  # an optional body is the object itself


def test_knot_requires_a_string_turtle(registry: Registry) -> None:
    schema = registry.tools["quipu_knot"].input_schema
    assert schema["properties"]["turtle"] == {"type": "string"}
    assert "turtle" in schema["required"]
    assert registry.tools["quipu_knot"].body == JSON


def test_entity_requires_an_iri_and_takes_a_boolean_expanded(registry: Registry) -> None:
    spec = registry.tools["quipu_entity"]
    assert spec.input_schema["required"] == ["iri"]
    assert spec.input_schema["properties"]["iri"]["type"] == "string"
    expanded = spec.input_schema["properties"]["expanded"]
    assert (expanded["type"], expanded["default"]) == ("boolean", False)
    assert spec.body is None


def test_update_takes_the_form_schema_of_its_route(registry: Registry, openapi: dict[str, Any]) -> None:
    spec = registry.tools["quipu_update"]
    form = openapi["paths"]["/update"]["post"]["requestBody"]["content"][FORM]["schema"]
    assert spec.body == FORM
    assert spec.input_schema == _untitled(form)
    assert spec.input_schema["required"] == ["update"]
    assert spec.input_schema["properties"]["update"] == {"type": "string"}


def test_transactions_shows_the_bound_the_adapter_sends(registry: Registry) -> None:
    props = registry.tools["quipu_transactions"].input_schema["properties"]
    assert (props["since"]["default"], props["limit"]["default"]) == (0, 1000)


def test_strict_tools_forbid_extra_keys_and_annotating_tools_do_not(registry: Registry) -> None:
    served = set(registry.tools)
    assert served >= STRICT | ANNOTATING
    for name in STRICT | ANNOTATING:
        extra = registry.tools[name].input_schema.get("additionalProperties", True)
        assert (extra is False) is (name in STRICT), name


# GET tools whose route reports unknown parameters as ignored_fields, as the graph group's tools
# do (tools-graphs-governance §0.5); every other GET tool refuses them.
ANNOTATING_GET_TOOLS = {"quipu_graph_list"}


def test_every_get_tool_is_strict_unless_its_route_annotates(registry: Registry) -> None:
    for spec in registry:
        if spec.method == "GET":
            expected = spec.name in ANNOTATING_GET_TOOLS
            assert spec.input_schema["additionalProperties"] is expected, spec.name


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_schemas_are_self_contained(registry: Registry) -> None:
    for spec in registry:
        text = json.dumps(spec.input_schema)
        assert "#/components" not in text, spec.name
        defs = spec.input_schema.get("$defs", {})
        for ref in _refs(spec.input_schema):
            assert ref.startswith("#/$defs/"), (spec.name, ref)
            assert ref.removeprefix("#/$defs/") in defs, (spec.name, ref)
        # every $defs entry is used (no dead weight in what the agent reads each turn)
        assert {r.removeprefix("#/$defs/") for r in _refs(spec.input_schema)} == set(defs), spec.name


def test_schemas_are_valid_json_schema_2020_12(registry: Registry) -> None:
    for spec in registry:
        jsonschema.Draft202012Validator.check_schema(spec.input_schema)
        validator = jsonschema.Draft202012Validator(spec.input_schema)
        list(validator.iter_errors({}))  # resolves every reference reached from the root


def test_schemas_carry_no_pydantic_titles(registry: Registry) -> None:
    def titles(node: Any, in_properties: bool = False) -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "title" and not in_properties:
                    yield str(value)
                yield from titles(value, key == "properties")
        elif isinstance(node, list):
            for value in node:
                yield from titles(value)

    for spec in registry:
        assert list(titles(spec.input_schema)) == [], spec.name


def test_a_default_for_a_parameter_the_route_lacks_is_a_config_error(openapi: dict[str, Any]) -> None:
    manifest = load_manifest()
    broken = [
        e
        if e.name != "quipu_stats"
        else type(e)(e.name, e.toolset, e.method, e.path, e.extra, e.description, {"x": 1})
        for e in manifest
    ]
    with pytest.raises(ConfigError, match="quipu_stats"):
        build_registry(openapi, broken)


# -- selection (--toolsets, --read-only-tools) ---------------------------------------------------------


def test_select_toolsets_keeps_only_those_toolsets(registry: Registry) -> None:
    service = registry.select(toolsets=["service"])
    assert list(service.tools) == [
        "quipu_health",
        "quipu_stats",
        "quipu_version",
        "quipu_workflow_capabilities",
    ]
    both = registry.select(toolsets=["service", "data"])
    assert set(both.tools) == {s.name for s in registry if s.toolset in ("service", "data")}
    assert list(both.tools) == [n for n in registry.tools if n in both.tools]  # manifest order kept
    governance = registry.select(toolsets=["governance"])
    assert {s.toolset for s in governance} == {"governance"}
    assert "quipu_propose_schema_change" in governance.tools and "quipu_knot" not in governance.tools
    assert len(registry.select(toolsets=[])) == 0


def test_select_read_only_keeps_only_reads(registry: Registry) -> None:
    reads = registry.select(read_only=True)
    assert set(reads.tools) == {s.name for s in registry if s.read_only}
    assert not set(reads.tools) & WRITES
    assert all(spec.annotations()["readOnlyHint"] for spec in reads)


def test_select_combines_toolsets_and_read_only(registry: Registry) -> None:
    data_reads = registry.select(toolsets=["data"], read_only=True)
    assert set(data_reads.tools) == {s.name for s in registry if s.toolset == "data" and s.read_only}
    assert "quipu_query" in data_reads.tools and "quipu_knot" not in data_reads.tools


def test_select_without_arguments_keeps_everything_and_the_missing_list(registry: Registry) -> None:
    everything = registry.select()
    assert list(everything.tools) == list(registry.tools)
    assert registry.select(toolsets=["service"]).missing == registry.missing


def test_select_an_unknown_toolset_is_a_config_error(registry: Registry) -> None:
    with pytest.raises(ConfigError, match="nonsense"):
        registry.select(toolsets=["data", "nonsense"])
    assert set(TOOLSETS) == {"data", "search", "graphs", "governance", "sharing", "events", "service"}
