"""``POST /reason`` and the ``quipu_reason`` tool (tools-core §3.11): a strict write route, and
its MCP tool dispatched into it in process."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import build_registry
from quipu.rest.app import create_app
from tests.backends import store_location
from tests.rest.support import kb_of, problem, serve

EX = "http://ex.org/"
RULES = (
    "@prefix rule: <http://quipu.local/rule#> .\n"
    f'<{EX}rules/base> a rule:Rule ; rule:id "base" ; rule:head "reach(?x, ?y)" ; rule:body "dep(?x, ?y)" .\n'
    f'<{EX}rules/step> a rule:Rule ; rule:id "step" ; rule:head "reach(?x, ?z)" ; '
    'rule:body "dep(?x, ?y), reach(?y, ?z)" .'
)
FACTS = f"<{EX}a> <{EX}dep> <{EX}b> .\n<{EX}b> <{EX}dep> <{EX}c> ."


def test_the_route_reasons_and_answers_its_report(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(FACTS, "nt")
        answer = client.post("/reason", json={"rules": RULES, "prefix": EX})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {
            "rules": 2,
            "strata_run": 1,
            "asserted": 3,
            "retracted": 0,
            "per_rule": [{"rule": "base", "asserted": 2}, {"rule": "step", "asserted": 1}],
            "inferred_graph": "urn:quipu:graph:root#inferred",
        }
        again = client.post("/reason", json={"rules": RULES, "prefix": EX}).json()
        assert (again["asserted"], again["retracted"]) == (0, 0)


def test_the_route_refuses_bad_requests_naming_the_reason(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        problem(client.post("/reason", json={"rules": RULES, "depth": 3}), "unknown_field")
        problem(client.post("/reason", json={"rules": 3}), "wrong_type")
        unbound = RULES.replace('rule:head "reach(?x, ?y)"', 'rule:head "reach(?x, ?q)"')
        body = client.post("/reason", json={"rules": unbound, "prefix": EX})
        assert body.status_code == 400
        assert (
            body.json()["error"]
            == 'rules failed to parse: rule "base" head variable ?q is not bound in the body'
        )
        unknown = client.post("/reason", json={"rules": RULES, "graph": f"{EX}nowhere"})
        assert unknown.status_code == 400 and "nowhere" in unknown.json()["error"]


def test_a_read_only_server_refuses_the_route(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as client:
        assert client.post("/reason", json={"rules": RULES}).status_code == 403


def test_the_tool_dispatches_into_the_route(tmp_path: Path) -> None:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "m.db")}))
    registry = build_registry(app.openapi())
    assert registry.tools["quipu_reason"].read_only is False

    async def run() -> None:
        dispatcher = Dispatcher(app, registry)
        try:
            async with app.router.lifespan_context(app):
                app.state.kb.knot(FACTS, "nt")
                done = await dispatcher.call("quipu_reason", {"rules": RULES, "prefix": EX}, None)
                assert done.is_error is False
                assert done.structured_content is not None
                assert done.structured_content["asserted"] == 3
                bad = await dispatcher.call("quipu_reason", {"rules": "not turtle at all ("}, None)
                assert bad.is_error is True
                error = json.loads(bad.content[0].text)["error"]  # type: ignore[union-attr]
                assert error.startswith("rules failed to parse: rule Turtle parse error")
        finally:
            await dispatcher.aclose()

    anyio.run(run)
