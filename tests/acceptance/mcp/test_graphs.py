"""Named graphs as an agent meets them, over both transports with the official SDK client:
create a graph, label it, write into it, try an idea in an overlay and compose it, freeze the
graph into an archive pack, query it where it now lives, and thaw it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve

EX: Final = "http://example.org/ops/"
G: Final = EX + "incidents/2026-11"
OV: Final = EX + "hypothesis"
ASK: Final = f"SELECT ?s ?o WHERE {{ ?s <{EX}cause> ?o }} ORDER BY ?s"

pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_agent_labels_layers_freezes_and_thaws_a_graph(tmp_path: Path, transport: Transport) -> None:
    with serve(transport, tmp_path) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:

                async def call(tool: str, **args: Any) -> dict[str, Any]:
                    return ok_body(await client.call_tool(tool, args))

                out: dict[str, Any] = {}
                out["create"] = await call("quipu_graph_create", graph=G, actor="agent/ops")
                await call(
                    "quipu_graph_label",
                    graph=G,
                    timestamp="2026-11-30T00:00:00Z",
                    freshness="fresh",
                    kind="operational",
                )
                await call("quipu_knot", turtle=f"<{EX}inc1> <{EX}cause> <{EX}dns> .", graph=G)
                out["list"] = await call("quipu_graph_list", kind="operational")
                await call("quipu_overlay_create", overlay=OV, parent_branch=G)
                for op, obj in (("tombstone", {"iri": EX + "dns"}), ("assert", {"iri": EX + "tls"})):
                    await call(
                        "quipu_overlay_write",
                        overlay=OV,
                        op=op,
                        subject=EX + "inc1",
                        predicate=EX + "cause",
                        object=obj,
                    )
                out["nearest"] = await call("quipu_overlay_compose", overlay=OV)
                out["governed"] = await call("quipu_overlay_compose", overlay=OV, precedence="governed")
                out["freeze"] = await call("quipu_graph_freeze", graph=G, timestamp="2026-12-01T00:00:00Z")
                out["frozen"] = await call("quipu_query", query=ASK, graph=G, verbose=True)
                out["by_dataset"] = await call(
                    "quipu_query", query=ASK, graph="urn:quipu:dataset:frozen", verbose=True
                )
                out["write"] = error_body(
                    await client.call_tool("quipu_knot", {"turtle": f"<{EX}x> <{EX}p> 1 .", "graph": G})
                )
                out["thaw"] = await call("quipu_graph_thaw", graph=G, timestamp="2026-12-02T00:00:00Z")
                out["thawed"] = await call("quipu_query", query=ASK, graph=G, verbose=True)
                return out

        out = run(main, timeout=120)
    assert out["create"]["created"] is True and out["create"]["creation"]["actor"] == "agent/ops"
    assert [g["iri"] for g in out["list"]["graphs"]] == [G]
    assert [t["object"] for t in out["nearest"]["triples"]] == [EX + "tls"]
    assert [t["object"] for t in out["governed"]["triples"]] == [EX + "dns"]
    assert out["freeze"]["facts"] == 1 and out["freeze"]["content_hash"].startswith("sha256:")
    expected = [{"s": "http://example.org/ops/inc1", "o": "http://example.org/ops/dns"}]
    for key in ("frozen", "by_dataset", "thawed"):
        assert out[key]["rows"] == expected, out[key]
    assert out["frozen"]["labels"]["kind"]["value"] == ["archive"]
    assert out["write"]["status"] == 400 and "quipu_graph_thaw" in out["write"]["error"]
    assert out["thaw"] == {"graph": G, "facts_restored": 1, "vectors_restored": 0}
