"""Sharing as agents meet it, over both transports with the official SDK client: one store
shares a graph, a second store imports the share and promotes it, and the second store's ROOT
then carries the same canonical graph (tools-graphs-governance §4.1–§4.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from quipu.sharing import canonical
from quipu.sharing import manifest as mf
from tests.acceptance.mcp.harness import (
    SHARED,
    TRANSPORTS,
    Transport,
    error_body,
    ok_body,
    run,
    serve,
)

EX: Final = "http://ex.org/"
GRAPH: Final = "http://ex.org/g/shared"
pytestmark = pytest.mark.sqlite_only


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_share_then_import_then_promote(tmp_path: Path, transport: Transport) -> None:
    with serve(transport, tmp_path / "a") as a, serve(transport, tmp_path / "b") as b:

        async def main() -> dict[str, Any]:
            # One session per store for the whole conversation (a stdio session is one process).
            async with a.client(SHARED.token) as on_a, b.client(SHARED.token) as on_b:

                async def call(client: Any, tool: str, **args: Any) -> dict[str, Any]:
                    return ok_body(await client.call_tool(tool, args))

                out: dict[str, Any] = {}
                await call(on_a, "quipu_graph_create", graph=GRAPH)
                await call(
                    on_a,
                    "quipu_knot",
                    graph=GRAPH,
                    turtle=f'<{EX}x> <{EX}p> [ <{EX}q> "hola"@es ] ; <{EX}name> "Equis" .',
                )
                shared = await call(
                    on_a, "quipu_share", scope={"kind": "graph", "value": GRAPH}, no_shapes=True
                )
                files = shared["files"]
                out["share"] = shared
                out["import"] = await call(
                    on_b,
                    "quipu_import",
                    manifest=shared["manifest"],
                    export_ntriples=files["export.nt"],
                    shapes_turtle=files["shapes.ttl"],
                    source="mcp://a",
                )
                out["strict"] = error_body(
                    await on_b.call_tool("quipu_import_promote", {"share_id": "sha256:" + "0" * 64, "x": 1})
                )
                out["promote"] = await call(
                    on_b, "quipu_import_promote", share_id=shared["manifest"]["share_id"]
                )
                out["root"] = await call(on_b, "quipu_export", format="ntriples")
                return out

        out = run(main, timeout=120)
    manifest = out["share"]["manifest"]
    assert out["share"]["files"]["manifest.json"] == mf.manifest_text(manifest)
    assert out["import"]["outcome"] == "staged" and out["import"]["promotion"]["eligible"] is True
    assert out["strict"]["reason"] == "unknown_field"
    assert out["promote"]["outcome"] == "promoted" and out["promote"]["triples"] == 3
    assert mf.sha256_id(canonical.canonical_nquads(out["root"]["rdf"])) == manifest["graph_hash"]
