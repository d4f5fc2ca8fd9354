"""The two OWL tools through the official MCP client SDK, over streamable HTTP against a live
server: listed with their annotations exactly when the extra is installed, and dispatched into
``POST /ontology`` and ``POST /explain``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from quipu.config import owl_installed
from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve
from tests.owl.support import DATA, EX, ONTOLOGY, RDF_TYPE, requires_owl

OWL_TOOLS = {"quipu_load_ontology", "quipu_explain"}


@requires_owl
def test_an_agent_loads_an_ontology_and_asks_why(tmp_path: Path) -> None:
    with serve("http", tmp_path) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert set(tools) >= OWL_TOOLS
                load_hints = tools["quipu_load_ontology"].annotations
                explain_hints = tools["quipu_explain"].annotations
                assert load_hints is not None and load_hints.read_only_hint is False
                assert explain_hints is not None and explain_hints.read_only_hint is True
                ok_body(await client.call_tool("quipu_knot", {"turtle": DATA}))
                out = {
                    "load": ok_body(
                        await client.call_tool(
                            "quipu_load_ontology", {"action": "load", "name": "zoo", "turtle": ONTOLOGY}
                        )
                    ),
                    "list": ok_body(await client.call_tool("quipu_load_ontology", {})),
                    "why": ok_body(
                        await client.call_tool(
                            "quipu_explain", {"s": f"{EX}rex", "p": RDF_TYPE, "o": f"{EX}Animal"}
                        )
                    ),
                    "bad": error_body(await client.call_tool("quipu_load_ontology", {"action": "drop"})),
                }
                return out

        out = run(main)
    assert out["load"]["materialized"]["total"] == 10
    assert out["list"]["count"] == 1 and out["list"]["ontologies"][0]["name"] == "zoo"
    assert out["why"]["derivation"]["families"][0]["family"] == "subClassOf"
    assert out["bad"]["reason"] == "unknown_action" and out["bad"]["status"] == 400


@pytest.mark.sqlite_only  # a `quipu mcp` child process of its own
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_tools_are_listed_exactly_with_the_extra(tmp_path: Path, transport: Transport) -> None:
    # over stdio the cached handshake lists a default install's tools: with the extra the live
    # server answers tools/list instead
    with serve(transport, tmp_path) as target:

        async def main() -> set[str]:
            async with target.client(SHARED.token) as client:
                return {t.name for t in (await client.list_tools()).tools}

        names = run(main)
    assert "quipu_knot" in names
    assert OWL_TOOLS & names == (OWL_TOOLS if owl_installed() else set())
