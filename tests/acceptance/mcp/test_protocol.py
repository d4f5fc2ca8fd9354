"""The protocol over both transports: both eras, the tool list, a round trip, and the two kinds of failure."""

from __future__ import annotations

import json
from typing import Any, Final

import httpx
import jsonschema
import mcp.types as types
import pytest
from fastapi.testclient import TestClient
from mcp import MCPError
from mcp.types import INVALID_PARAMS

import quipu
from quipu.config import load_settings
from quipu.rest import route_table
from quipu.rest.app import create_app
from tests.acceptance.mcp.harness import (
    LEGACY_ERA,
    MODERN_ERA,
    SHARED,
    Target,
    access_paths,
    error_body,
    ok_body,
    recorded_paths,
    registry,
    run,
    text_of,
    turtle,
)

BAD_QUERY = "SELEC ?s WHERE { ?s ?p ?o }"


@pytest.mark.parametrize(("mode", "era"), [("legacy", LEGACY_ERA), ("auto", MODERN_ERA)])
def test_both_eras_list_exactly_the_registry_tools(target: Target, mode: str, era: str) -> None:
    expected = registry(target.config)

    async def main() -> tuple[str, Any, list[dict[str, Any]], bool | None]:
        async with target.client(mode=mode) as client:
            listed = await client.list_tools()
            tools = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
            capability = client.server_capabilities.tools
            list_changed = capability.list_changed if capability is not None else None
            return client.protocol_version, client.server_info, tools, list_changed

    version, info, tools, list_changed = run(main)
    assert version == era
    assert info is not None  # optional in the 2026 era, but quipu stamps it in both
    assert (info.name, info.version) == ("quipu", quipu.__version__)
    assert not list_changed  # a fixed registry: no list-changed notifications
    assert [t["name"] for t in tools] == list(expected.tools)
    assert len(tools) >= 15  # today's served set; it only grows
    for tool in tools:
        spec = expected.tools[tool["name"]]
        assert tool == {
            "name": spec.name,
            "description": spec.description,
            "inputSchema": spec.input_schema,
            "annotations": spec.annotations(),
        }
        # The hints follow the route's class in the one route table, nothing else.
        read = route_table.ROUTES[(spec.method, spec.path)] == route_table.READ
        assert tool["annotations"] == {
            "readOnlyHint": read,
            "destructiveHint": not read,
            "openWorldHint": True,
        }
    by_name = {t["name"]: t for t in tools}
    assert by_name["quipu_query"]["annotations"]["readOnlyHint"] is True  # POST /query is a read
    assert by_name["quipu_knot"]["annotations"]["destructiveHint"] is True
    assert by_name["quipu_knot"]["inputSchema"]["required"] == ["turtle"]


def test_a_knot_is_read_back_by_query_and_fragments_over_post_and_get_tools(target: Target) -> None:
    subject = f"http://example.org/acceptance/roundtrip-{target.transport}"

    async def main() -> tuple[dict[str, Any], ...]:
        async with target.client(SHARED.token) as client:
            knot = ok_body(await client.call_tool("quipu_knot", {"turtle": turtle(subject, "woven")}))
            query = ok_body(
                await client.call_tool("quipu_query", {"query": f"SELECT ?o WHERE {{ <{subject}> ?p ?o }}"})
            )
            fragments = ok_body(await client.call_tool("quipu_fragments", {"subject": subject}))
            version = ok_body(await client.call_tool("quipu_version", {}))
            return knot, query, fragments, version

    knot, query, fragments, version = run(main)
    assert version["version"] == quipu.__version__
    assert knot["conforms"] is True and knot["count"] == 1 and isinstance(knot["tx_id"], int)
    assert query["variables"] == ["o"]
    assert query["rows"] == [{"o": "woven"}]
    assert fragments["totalCount"] == 1
    assert fragments["triples"] == [
        {"subject": subject, "predicate": "http://example.org/acceptance/label", "object": "woven"}
    ]


def _rest_problem(target: Target) -> tuple[int, str]:
    """The same bad query sent straight to REST (status, body): over the live server, or in
    process on the same store for stdio."""
    body, headers = {"query": BAD_QUERY}, {"Accept": "application/json"}
    if target.url is not None:
        response = httpx.post(target.url + "/query", json=body, headers=headers, timeout=10.0)
        return response.status_code, response.text
    with TestClient(create_app(load_settings(str(target.config)))) as rest:
        answer = rest.post("/query", json=body, headers=headers)
        return answer.status_code, answer.text


def test_a_bad_sparql_query_is_an_error_result_carrying_the_rest_body(target: Target) -> None:
    async def main() -> Any:
        async with target.client() as client:
            return await client.call_tool("quipu_query", {"query": BAD_QUERY})

    result = run(main)
    body = error_body(result)
    assert (body["status"], body["reason"]) == (400, "sparql_parse_error")
    status, rest_body = _rest_problem(target)
    assert status == 400
    assert text_of(result) == rest_body  # unchanged, byte for byte
    assert body == json.loads(rest_body)


def test_wrong_argument_types_are_error_results_and_unknown_tools_protocol_errors_sending_no_request(
    target: Target,
) -> None:
    # Since 2025-11-25 an input-validation failure is a tool result the model can read and act on;
    # only a tool that does not exist stays a protocol error.
    label = "invalid-params"

    async def main() -> tuple[list[types.CallToolResult], MCPError]:
        async with target.client(SHARED.token, label=label) as client:
            results = [
                await client.call_tool(name, arguments)
                for name, arguments in (
                    ("quipu_query", {"query": 42}),
                    ("quipu_knot", {"turtle": ["not", "a", "string"]}),
                    ("quipu_fragments", {"page": "two"}),
                    (
                        "quipu_set",
                        {
                            "entity": "http://example.org/e",
                            "predicate": "http://example.org/p",
                            "value": {"int": "5"},
                        },
                    ),
                )
            ]
            with pytest.raises(MCPError) as caught:
                await client.call_tool("quipu_no_such_tool", {})
            ok_body(await client.call_tool("quipu_health", {}))  # the session is still usable
        return results, caught.value

    with recorded_paths() as seen:
        results, unknown = run(main)
    paths = seen if target.transport == "http" else access_paths(target.stderr_of(label))
    for result, field in zip(results, ["query", "turtle", "page", "value"], strict=True):
        body = error_body(result)
        assert (body["status"], body["reason"], body["field"]) == (400, "wrong_type", field)
        assert body["type"] == "urn:quipu:problem:wrong_type" and body["title"] == "Bad Request"
        assert f"'{field}'" in body["error"]
    assert unknown.code == INVALID_PARAMS and "unknown tool" in unknown.message
    assert paths == ["/health"]  # the refused calls never reached REST


def test_a_tools_list_cursor_is_invalid_params(target: Target) -> None:
    # Every tool comes in one page, so any cursor is one quipu never issued.
    async def main() -> tuple[list[MCPError], int]:
        errors: list[MCPError] = []
        async with target.client() as client:
            for cursor in ("bogus", ""):
                with pytest.raises(MCPError) as caught:
                    await client.list_tools(cursor=cursor)
                errors.append(caught.value)
            listed = await client.list_tools()
            return errors, len(listed.tools)

    errors, count = run(main)
    assert [e.code for e in errors] == [INVALID_PARAMS] * 2
    assert all("cursor" in e.message for e in errors)
    assert "'bogus'" in errors[0].message
    assert count == len(registry(target.config))


VALUE_FORMS: Final = [
    {"type": "string"},
    *(
        {
            "type": "object",
            "properties": {key: {"type": kind} for key, kind in form.items()},
            "required": list(form),
            "additionalProperties": False,
        }
        for form in (
            {"iri": "string"},
            {"str": "string"},
            {"int": "integer"},
            {"float": "number"},
            {"bool": "boolean"},
            {"value": "string", "lang": "string"},
            {"value": "string", "datatype": "string"},
        )
    ),
]


def test_value_and_confidence_schemas_list_the_forms_accepted(target: Target) -> None:
    async def main() -> tuple[dict[str, dict[str, Any]], types.CallToolResult, types.CallToolResult]:
        async with target.client(SHARED.token) as client:
            tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            wrong_form = await client.call_tool(
                "quipu_retract", {"entity": "http://example.org/e", "value": {"iri": 5}}
            )
            edge = {"source": "a", "target": "b", "relation": "r", "confidence": True}
            wrong_grade = await client.call_tool("quipu_episode", {"name": "e", "edges": [edge]})
            return tools, wrong_form, wrong_grade

    tools, wrong_form, wrong_grade = run(main)
    for name in ("quipu_set", "quipu_retract", "quipu_episode"):
        jsonschema.Draft202012Validator.check_schema(tools[name])
    set_value = tools["quipu_set"]["properties"]["value"]
    retract_value = tools["quipu_retract"]["properties"]["value"]
    assert set_value["anyOf"] == VALUE_FORMS
    assert retract_value["anyOf"] == [*VALUE_FORMS, {"type": "null"}]  # null or absent: any value
    assert tools["quipu_set"]["required"] == ["entity", "predicate", "value"]
    confidence = tools["quipu_episode"]["$defs"]["EpisodeEdge"]["properties"]["confidence"]
    assert [branch["type"] for branch in confidence["anyOf"]] == ["string", "number", "null"]
    assert (confidence["anyOf"][1]["minimum"], confidence["anyOf"][1]["maximum"]) == (0, 1)
    for result, field in ((wrong_form, "value"), (wrong_grade, "edges.0.confidence")):
        body = error_body(result)
        assert (body["reason"], body["field"]) == ("wrong_type", field)
        assert body["error"].startswith(f"'{field}' must be ")
