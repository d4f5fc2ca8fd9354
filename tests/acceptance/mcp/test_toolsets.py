"""Tool-surface control: ``--toolsets`` and ``--read-only-tools`` (HTTP: the ``[quipu.mcp]`` settings)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from mcp import MCPError
from mcp.types import INVALID_PARAMS

from quipu.config import load_settings
from quipu.errors import ConfigError
from quipu.mcp.http import create_server_app
from tests.acceptance.mcp.harness import (
    PROCESS_TIMEOUT,
    QUIPU,
    QUIPU_SERVER,
    SHARED,
    TRANSPORTS,
    Transport,
    child_env,
    ok_body,
    registry,
    run,
    serve,
    write_config,
)

# surface name -> (toolsets, read_only_tools, a served tool, a tool that must not be served)
SURFACES: Final[dict[str, tuple[list[str] | None, bool, str, str]]] = {
    "service": (["service"], False, "quipu_health", "quipu_query"),
    "data_and_service": (["data", "service"], False, "quipu_knot", "quipu_no_such_tool"),
    "read_only_tools": (None, True, "quipu_query", "quipu_knot"),
    "data_reads_only": (["data"], True, "quipu_query", "quipu_set"),
}


def _flags(toolsets: list[str] | None, read_only_tools: bool) -> tuple[str, ...]:
    flags = ("--toolsets", ",".join(toolsets)) if toolsets is not None else ()
    return (*flags, "--read-only-tools") if read_only_tools else flags


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_the_served_tools_are_the_registry_selection(
    tmp_path: Path, transport: Transport, surface: str
) -> None:
    toolsets, read_only_tools, served, absent = SURFACES[surface]
    overrides = {"mcp": {"toolsets": toolsets, "read_only_tools": read_only_tools or None}}
    with serve(transport, tmp_path, overrides=overrides, args=_flags(toolsets, read_only_tools)) as target:
        expected = registry(target.config, toolsets=toolsets, read_only=read_only_tools)

        async def main() -> tuple[list[Any], Any, MCPError]:
            async with target.client(SHARED.token) as client:
                tools = (await client.list_tools()).tools
                call = await client.call_tool(served, _arguments(served))
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(absent, _arguments(absent))
                return tools, call, refused.value

        tools, call, refused = run(main)
    everything = registry(target.config)
    assert [tool.name for tool in tools] == list(expected.tools)
    if toolsets is not None:  # every named family is served, and nothing else
        assert {everything.tools[tool.name].toolset for tool in tools} == set(toolsets)
    else:
        assert 0 < len(tools) < len(everything)
    for tool in tools:
        spec = everything.tools[tool.name]
        assert toolsets is None or spec.toolset in toolsets
        assert tool.annotations is not None
        if read_only_tools:
            assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
    ok_body(call)
    assert refused.code == INVALID_PARAMS and "unknown tool" in refused.message


def _arguments(tool: str) -> dict[str, Any]:
    return {
        "quipu_query": {"query": "SELECT * WHERE { ?s ?p ?o } LIMIT 1"},
        "quipu_knot": {"turtle": '<http://example.org/t> <http://example.org/p> "v" .'},
        "quipu_set": {"entity": "http://example.org/t", "predicate": "http://example.org/p", "value": "w"},
    }.get(tool, {})


def test_an_unknown_toolset_refuses_to_start_on_both_transports(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    commands = {
        "stdio": [str(QUIPU), "mcp", "--config", str(config), "--toolsets", "data,nope"],
        "http": [
            str(QUIPU_SERVER),
            "--config",
            str(config),
            "--bind",
            "127.0.0.1:0",
            "--toolsets",
            "data,nope",
        ],
    }
    procs = {
        name: subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env={**os.environ, **child_env()},
        )
        for name, command in commands.items()
    }
    results: dict[str, tuple[int, str, str]] = {}
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
        finally:
            proc.kill()
        results[name] = (proc.returncode, out, err)
    for name, (returncode, out, err) in results.items():
        assert returncode == 2, (name, err)
        assert out == ""
        assert err.splitlines() == [
            "error: unknown toolset(s): nope (known: data, search, graphs, governance, sharing, events, "
            "service, logic, default, all)"
        ], name
    # The settings section refuses the same way in process.
    with pytest.raises(ConfigError, match=r"unknown toolset\(s\): nope"):
        create_server_app(load_settings(str(config), mcp={"toolsets": ["nope"]}))
