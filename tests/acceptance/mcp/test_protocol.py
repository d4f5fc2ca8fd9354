"""The protocol over both transports: both eras, the tool list, a round trip, and the two kinds of failure."""

from __future__ import annotations

import json
from typing import Any

import httpx
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


def test_wrong_argument_types_and_unknown_tools_are_protocol_errors_sending_no_request(
    target: Target,
) -> None:
    label = "invalid-params"

    async def main() -> list[MCPError]:
        errors: list[MCPError] = []
        async with target.client(SHARED.token, label=label) as client:
            for name, arguments in (
                ("quipu_query", {"query": 5}),
                ("quipu_knot", {"turtle": ["not", "a", "string"]}),
                ("quipu_fragments", {"page": "two"}),
                ("quipu_no_such_tool", {}),
            ):
                with pytest.raises(MCPError) as caught:
                    await client.call_tool(name, arguments)
                errors.append(caught.value)
            ok_body(await client.call_tool("quipu_health", {}))  # the session is still usable
        return errors

    with recorded_paths() as seen:
        errors = run(main)
    paths = seen if target.transport == "http" else access_paths(target.stderr_of(label))
    assert [e.code for e in errors] == [INVALID_PARAMS] * 4
    assert (
        "'query'" in errors[0].message and "'turtle'" in errors[1].message and "'page'" in errors[2].message
    )
    assert "unknown tool" in errors[3].message
    assert paths == ["/health"]  # the refused calls never reached REST
