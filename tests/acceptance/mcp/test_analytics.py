"""Graph analytics as an agent meets them, over both transports with the official SDK client:
look at the graph, project it (Louvain persisted, then re-run with nothing written), read the
report, and ask what breaks if a service goes away, with the store unchanged afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve

EX: Final = "http://example.org/ops/"
FIXTURE: Final = f"@prefix ex: <{EX}> .\n" + (
    "ex:api ex:dependsOn ex:auth, ex:db . ex:auth ex:dependsOn ex:db . ex:db ex:dependsOn ex:api . "
    "ex:web ex:dependsOn ex:cdn, ex:edge . ex:cdn ex:dependsOn ex:edge . ex:edge ex:dependsOn ex:web . "
    "ex:web ex:calls ex:api ."
)

pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_agent_projects_reports_and_weighs_an_impact(tmp_path: Path, transport: Transport) -> None:
    with serve(transport, tmp_path) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:

                async def call(tool: str, **args: Any) -> dict[str, Any]:
                    return ok_body(await client.call_tool(tool, args))

                out: dict[str, Any] = {}
                await call("quipu_knot", turtle=FIXTURE)
                out["graph"] = await call("quipu_graph", limit=3)
                out["louvain"] = await call("quipu_project", algorithm="louvain", persist=True)
                out["log"] = await call("quipu_transactions")
                out["again"] = await call("quipu_project", algorithm="louvain", persist=True)
                out["log_again"] = await call("quipu_transactions")
                out["pagerank"] = await call("quipu_project", algorithm="pagerank", limit=3)
                out["report"] = await call("quipu_report", hubs=2, surprises=1, questions=4)
                out["impact"] = await call("quipu_impact", entity=EX + "web", hops=3)
                out["removed"] = await call("quipu_impact", entity=EX + "web", remove=True)
                out["log_after"] = await call("quipu_transactions")
                out["bad"] = error_body(
                    await client.call_tool("quipu_impact", {"entity": EX + "web", "hops": -1})
                )
                out["unknown"] = error_body(await client.call_tool("quipu_project", {"algorithm": "magic"}))
                return out

        out = run(main, timeout=120)
    assert (out["graph"]["truncated"]["shown"], out["graph"]["truncated"]["of"]) == (3, 6)
    assert sorted(sorted(c["entities"]) for c in out["louvain"]["communities"]) == [
        [EX + "api", EX + "auth", EX + "db"],
        [EX + "cdn", EX + "edge", EX + "web"],
    ]
    assert out["louvain"]["persisted"] == 6
    assert out["again"] == out["louvain"]
    assert out["log_again"] == out["log"]  # the unchanged re-run wrote nothing
    assert out["pagerank"]["count"] == 3 and out["pagerank"]["personalized"] is False
    (bridge,) = out["report"]["surprising_connections"]
    assert (bridge["from"], bridge["to"], bridge["bridge_rarity"]) == (EX + "web", EX + "api", 1)
    assert len(out["report"]["suggested_questions"]) == 4
    reached = [r["iri"] for r in out["impact"]["reached"]]
    assert reached[:3] == [EX + "web", EX + "cdn", EX + "edge"] and EX + "db" in reached
    assert out["removed"]["reached_count"] == 0 and out["removed"]["counterfactual"] is True
    assert out["log_after"] == out["log"]  # the counterfactual left no transaction behind
    assert out["bad"]["status"] == 400 and "hops" in str(out["bad"])
    assert out["unknown"]["status"] == 400 and "unknown algorithm: magic" in out["unknown"]["error"]
