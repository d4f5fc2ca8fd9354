"""The opt-in ``logic`` toolset over MCP (issue 26): zpm's 29 tools on ``/mcp`` and ``quipu mcp``.

A real ``quipu-server`` (``/mcp``, streamable HTTP) with ``toolsets = ["logic"]`` and a real zpm
project, a real SWI-Prolog engine and a store holding a few triples: a logic fact and a rule that
reads the graph through ``rdf/3`` are written over MCP, then asked and explained; the answers
follow the server's own store. A default server lists no logic tool, and ``quipu mcp --toolsets
logic`` (stdio) lists them and answers a call.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import mcp.types as types
import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS

from quipu.logic import project
from quipu.logic.registry import load_tools, tool_names
from tests.acceptance.mcp.harness import SHARED, Target, error_body, run, serve, text_of

EX: Final = "http://ex.org/"
RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
WORLD: Final = f"""@prefix ex: <{EX}> .
ex:checkout a ex:Service ; ex:testRun ex:run1 .
ex:search a ex:Service ; ex:testRun ex:run2 .
ex:billing a ex:Service .
ex:run1 ex:status "failed" .
ex:run2 ex:status "passed" .
"""
PASSING: Final = f'<{EX}checkout> <{EX}testRun> <{EX}run3> . <{EX}run3> <{EX}status> "passed" .'


def iri(name: str) -> str:
    return f"'{EX}{name}'"


# A deploy is risky when the graph says the service is a Service with no passing test run and the
# logic memory says it is customer-facing (docs/logic.md, "The knowledge graph as predicates").
RISKY_BODY: Final = (
    f"rdf(S, '{RDF_TYPE}', {iri('Service')}), customer_facing(S), "
    f"\\+ ( rdf(S, {iri('testRun')}, R), rdf(R, {iri('status')}, literal(passed)) )"
)
FAILING_BODY: Final = (
    f"customer_facing(S), rdf(S, {iri('testRun')}, R), rdf(R, {iri('status')}, literal(failed))"
)


def _require_swipl() -> None:
    if shutil.which("swipl") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("swipl is not installed; under CI=true the logic toolset must be tested")
        pytest.skip("swipl is not installed (run scripts/ensure-swipl.sh)")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_swipl()
    path = tmp_path_factory.mktemp("logic-project")
    assert project.init(path)
    return path


@pytest.fixture(scope="module")
def logic_http(tmp_path_factory: pytest.TempPathFactory, folder: Path) -> Iterator[Target]:
    overrides = {"mcp": {"toolsets": ["logic"]}, "logic": {"project": str(folder)}}
    with serve("http", tmp_path_factory.mktemp("logic-http"), overrides=overrides) as served:
        yield served


def _knot(target: Target, turtle: str) -> int:
    """Write to the server's store over REST (the logic toolset has no Quipu tool); the tx id."""
    assert target.url is not None
    response = httpx.post(
        target.url + "/knot",
        json={"turtle": turtle},
        headers={"Authorization": f"Bearer {SHARED.token}", "Accept": "application/json"},
        timeout=30.0,
    )
    assert response.status_code == 200, response.text
    tx: int = response.json()["tx_id"]
    return tx


def _ok(result: types.CallToolResult) -> str:
    """The text of a successful logic tool result: zpm's shape, passed on unchanged."""
    assert result.is_error is False, text_of(result)
    assert result.structured_content is None  # zpm's results carry none; no JSON is re-wrapped
    return text_of(result)


def _wire(tool: types.Tool) -> dict[str, Any]:
    listed: dict[str, Any] = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    return listed


def test_the_logic_toolset_lists_zpms_tools_and_nothing_else(logic_http: Target) -> None:
    async def main() -> list[types.Tool]:
        async with logic_http.client(SHARED.token) as client:
            return (await client.list_tools()).tools

    tools = run(main)
    assert [tool.name for tool in tools] == list(tool_names())
    # zpm's wire form exactly: name, description, inputSchema and annotations as tools.json has them.
    assert [_wire(tool) for tool in tools] == [tool.listing() for tool in load_tools()]
    assert not any(tool.name.startswith("quipu_") for tool in tools)


def test_a_rule_over_the_graph_is_written_asked_and_explained_over_mcp(logic_http: Target) -> None:
    tx = _knot(logic_http, WORLD)

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with logic_http.client(SHARED.token) as client:
            for name in ("checkout", "search"):
                fact = f"customer_facing({iri(name)})"
                out[f"remember {name}"] = _ok(await client.call_tool("remember_fact", {"fact": fact}))
            for head, body in (("risky(S)", RISKY_BODY), ("failing(S)", FAILING_BODY)):
                out[head] = _ok(await client.call_tool("define_rule", {"head": head, "body": body}))
            out["risky"] = json.loads(_ok(await client.call_tool("query_logic", {"goal": "risky(S)"})))
            why = await client.call_tool("explain_why", {"fact": f"failing({iri('checkout')})"})
            out["why"] = json.loads(_ok(why))
            # A tool's own refusal is zpm's result, not a type check of the adapter's (R-T8).
            out["invalid"] = await client.call_tool("remember_fact", {"fact": 7})
            # The answer follows the graph: a passing run written to the store clears the risk.
            _knot(logic_http, PASSING)
            out["after"] = json.loads(_ok(await client.call_tool("query_logic", {"goal": "risky(S)"})))
        return out

    out = run(main)
    assert out["remember checkout"] == f"Asserted: customer_facing({iri('checkout')})"
    assert out["risky"] == [{"S": EX + "checkout"}]
    proof = out["why"]
    assert proof["proven"] is True
    leaves = proof["proof_tree"]["children"]
    assert [leaf["rule_applied"] for leaf in leaves] == ["fact", "graph", "graph"]
    assert [leaf.get("tx") for leaf in leaves] == [None, tx, tx]  # the knot that wrote the triples
    assert leaves[1]["goal"] == f"rdf({iri('checkout')}, {iri('testRun')}, {iri('run1')})"
    invalid = out["invalid"]
    assert invalid.is_error is True and text_of(invalid) == "InvalidArguments"
    assert out["after"] == []


def test_writes_need_the_token_reads_do_not_and_quipu_tools_are_unknown(logic_http: Target) -> None:
    async def main() -> tuple[types.CallToolResult, types.CallToolResult, MCPError]:
        async with logic_http.client() as client:
            refused = await client.call_tool("remember_fact", {"fact": "p(1)"})
            echoed = await client.call_tool("echo", {"message": "hello"})
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("quipu_query", {"query": "ASK { ?s ?p ?o }"})
            return refused, echoed, unknown.value

    refused, echoed, unknown = run(main)
    assert error_body(refused)["status"] == 401  # REST's bearer check, as for every write route
    assert _ok(echoed) == "hello"
    assert unknown.code == INVALID_PARAMS and "unknown tool" in unknown.message


def test_read_only_tools_keep_only_zpms_reads(tmp_path: Path, folder: Path) -> None:
    overrides = {
        "mcp": {"toolsets": ["logic"], "read_only_tools": True},
        "logic": {"project": str(folder)},
    }
    with serve("http", tmp_path, overrides=overrides) as target:

        async def main() -> list[types.Tool]:
            async with target.client(SHARED.token) as client:
                return (await client.list_tools()).tools

        tools = run(main)
    assert [tool.name for tool in tools] == [tool.name for tool in load_tools() if tool.read_only]
    assert all(tool.annotations is not None and tool.annotations.read_only_hint for tool in tools)


def test_a_default_server_lists_no_logic_tool(tmp_path: Path) -> None:
    with serve("http", tmp_path) as target:

        async def main() -> tuple[list[types.Tool], MCPError]:
            async with target.client(SHARED.token) as client:
                tools = (await client.list_tools()).tools
                with pytest.raises(MCPError) as unknown:
                    await client.call_tool("query_logic", {"goal": "true"})
                return tools, unknown.value

        tools, unknown = run(main)
    names = {tool.name for tool in tools}
    assert len(names) == 77 and all(name.startswith("quipu_") for name in names)
    assert not names & set(tool_names())
    assert unknown.code == INVALID_PARAMS


@pytest.mark.parametrize("toolsets", ["logic", "default,logic"])
def test_quipu_mcp_over_stdio_serves_the_logic_toolset(tmp_path: Path, folder: Path, toolsets: str) -> None:
    extra = f"\n[quipu.logic]\nproject = {json.dumps(str(folder))}\n"
    with serve("stdio", tmp_path, args=("--toolsets", toolsets), extra_config=extra) as target:

        async def main() -> tuple[list[types.Tool], types.CallToolResult]:
            async with target.client(SHARED.token) as client:
                tools = (await client.list_tools()).tools  # the front's answer, from handshake.json
                echoed = await client.call_tool("echo", {"message": "over stdio"})
                return tools, echoed

        tools, echoed = run(main)
    names = [tool.name for tool in tools]
    quipu = 77 if toolsets == "default,logic" else 0
    assert len(names) == quipu + 29
    assert names[quipu:] == list(tool_names())  # after the default surface, in zpm's order
    assert [_wire(tool) for tool in tools[quipu:]] == [tool.listing() for tool in load_tools()]
    assert _ok(echoed) == "over stdio"
