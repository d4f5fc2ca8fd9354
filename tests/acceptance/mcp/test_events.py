"""The event feeds as an agent meets them, over both transports with the official SDK client:
read a page without committing, commit, read on from the cursor, page the change feed, and
manage a subscription, with the strict refusals the seed promises."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve

EX: Final = "http://example.org/ops/"

pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_agent_reads_commits_and_reads_on(tmp_path: Path, transport: Transport) -> None:
    with serve(transport, tmp_path) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:

                async def call(tool: str, **args: Any) -> dict[str, Any]:
                    return ok_body(await client.call_tool(tool, args))

                out: dict[str, Any] = {}
                await call("quipu_knot", turtle=f"<{EX}api> <{EX}dependsOn> <{EX}db> .")
                await call("quipu_knot", turtle=f"<{EX}web> <{EX}dependsOn> <{EX}api> .")
                out["first"] = await call("quipu_events", consumer="agent", limit=2)
                out["again"] = await call("quipu_events", consumer="agent", limit=2)
                out["commit"] = await call(
                    "quipu_events_commit", consumer_id="agent", offset=out["first"]["next_offset"]
                )
                out["next"] = await call("quipu_events", consumer="agent", types="edge.added")
                out["changes"] = await call("quipu_changes", limit=1)
                out["subs"] = await call("quipu_subscriptions", action="list")
                out["array_types"] = error_body(
                    await client.call_tool("quipu_events", {"types": ["edge.added"]})
                )
                out["private"] = error_body(
                    await client.call_tool(
                        "quipu_subscriptions",
                        {"action": "create", "consumer_id": "x", "webhook_url": "http://127.0.0.1/h"},
                    )
                )
                out["no_offset"] = error_body(
                    await client.call_tool("quipu_events_commit", {"consumer_id": "agent"})
                )
                return out

        out = run(main, timeout=120)
    assert out["first"] == out["again"]  # reading never commits
    assert out["first"]["committed_offset"] == 0 and len(out["first"]["events"]) == 2
    assert out["commit"] == {"consumer_id": "agent", "committed_offset": 2}
    assert [e["type"] for e in out["next"]["events"]] == ["edge.added", "edge.added"]
    assert out["next"]["committed_offset"] == 2
    assert out["changes"]["next_tx"] == 1 and len(out["changes"]["records"]) == 1
    assert out["subs"] == {"count": 0, "subscriptions": []}
    assert out["private"]["status"] == 400 and "webhook_allow_private" in out["private"]["error"]
    assert out["no_offset"]["status"] == 400 and out["no_offset"]["error"] == "offset (integer) is required"
    assert "types" in str(out["array_types"])  # a JSON array where the seed says a string
