"""quipu_shapes and quipu_validate are served over MCP as soon as their routes exist."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import build_registry
from quipu.rest.app import create_app
from tests.backends import store_location

P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
SHAPES = P + "ex:S a sh:NodeShape ; sh:targetClass ex:T ; sh:property [ sh:path ex:name ; sh:minCount 1 ] ."


def test_shapes_and_validate_tools_dispatch_to_rest(tmp_path: Path) -> None:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "m.db")}))
    registry = build_registry(app.openapi())
    assert registry.tools["quipu_validate"].read_only is True
    assert registry.tools["quipu_shapes"].read_only is False

    async def run() -> None:
        dispatcher = Dispatcher(app, registry)
        try:
            async with app.router.lifespan_context(app):
                loaded = await dispatcher.call(
                    "quipu_shapes", {"action": "load", "name": "s", "turtle": SHAPES}, None
                )
                assert loaded.structured_content == {"action": "loaded", "name": "s"}
                report = await dispatcher.call("quipu_validate", {"data": P + "ex:a a ex:T ."}, None)
                assert report.structured_content is not None
                assert report.structured_content["conforms"] is False
                refused = await dispatcher.call("quipu_knot", {"turtle": P + "ex:a a ex:T ."}, None)
                assert refused.is_error is False and refused.structured_content is not None
                assert refused.structured_content["conforms"] is False
                bad = await dispatcher.call("quipu_shapes", {"action": "nope"}, None)
                assert bad.is_error is True
                assert json.loads(bad.content[0].text)["reason"] == "unknown_action"  # type: ignore[union-attr]
        finally:
            await dispatcher.aclose()

    anyio.run(run)
