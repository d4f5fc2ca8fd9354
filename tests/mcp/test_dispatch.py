"""Tool calls dispatched into the REST app in process (issue 5 §2, tools-core §0.1).

Each test runs the real app over a real store file with its lifespan entered; an ASGI recorder
between the dispatcher and the app shows exactly which requests a call sent (method, query
string, headers, body). The SDK's in-memory client drives the server in both protocol eras. The
last tests give the dispatcher a running server's base URL instead of the app.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlencode

import httpx
import pytest
from fastapi import FastAPI
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from starlette.types import Message, Receive, Scope, Send

from quipu.api import KnowledgeBase
from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import Registry, build_registry
from quipu.mcp.server import build_server, tool_list
from quipu.rest.app import create_app
from quipu.rest.auth import hash_token
from quipu.version import version_info
from tests.backends import store_location
from tests.rest.live_server import live_server

pytestmark = pytest.mark.anyio

EX: Final = "http://ex.org/"
TOKEN: Final = "bot-token-0123456789abcdef"
OTHER_TOKEN: Final = "other-token-0123456789abcdef"
GUARDED: Final = {"credentials": [{"principal": "bot", "token_hash": hash_token(TOKEN)}]}
ERAS: Final = ["legacy", "auto"]  # 2025-11-25 (initialize handshake) and 2026-07-28
SEED: Final = f"<{EX}a> <{EX}p> 1 . <{EX}b> <{EX}p> 2 ."


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Seen:
    method: str
    path: str
    query: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""

    def header(self, name: str) -> list[str]:
        return [v.decode("latin-1") for k, v in self.headers if k.decode("latin-1").lower() == name.lower()]


@dataclass
class Recorder:
    """An ASGI app in front of the REST app that remembers every HTTP request it forwards."""

    app: Any
    requests: list[Seen] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        seen = Seen(scope["method"], scope["path"], scope["query_string"], list(scope["headers"]))
        self.requests.append(seen)

        async def tee() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                seen.body += message.get("body", b"")
            return message

        await self.app(scope, tee, send)


@dataclass
class Running:
    app: FastAPI
    registry: Registry
    dispatcher: Dispatcher
    recorder: Recorder
    rest: httpx.AsyncClient  # plain REST requests into the same app, to compare bodies with

    @property
    def kb(self) -> KnowledgeBase:
        kb: KnowledgeBase = self.app.state.kb
        return kb

    def tx_count(self) -> int:
        return int(self.kb.transactions(limit=None)["count"])


@asynccontextmanager
async def running(tmp_path: Path, **sections: Any) -> AsyncIterator[Running]:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "d.db")}, **sections))
    registry = build_registry(app.openapi())
    recorder = Recorder(app)
    dispatcher = Dispatcher(recorder, registry)
    rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://rest.test")
    try:
        async with app.router.lifespan_context(app):
            yield Running(app, registry, dispatcher, recorder, rest)
    finally:
        await dispatcher.aclose()
        await rest.aclose()


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def access_log() -> Iterator[Collect]:
    """The REST access log's records (one per request the app served)."""
    logger = logging.getLogger("quipu.access")
    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    content = result.content[0]
    assert isinstance(content, TextContent)
    return content.text


def body_of(result: CallToolResult) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(text_of(result))
    return parsed


async def knot(r: Running, turtle: str = SEED) -> None:
    result = await r.dispatcher.call("quipu_knot", {"turtle": turtle}, None)
    assert not result.is_error, text_of(result)


# -- types are checked before any request -------------------------------------------------------------

# (tool, arguments, the field named)
WRONG_TYPES: Final[list[tuple[str, dict[str, Any], str]]] = [
    ("quipu_knot", {"turtle": 5}, "turtle"),
    ("quipu_knot", {"turtle": "<a> <b> <c> .", "replace_snapshot": "yes"}, "replace_snapshot"),
    ("quipu_set", {"entity": ["x"], "predicate": "p", "value": 1}, "entity"),
    ("quipu_query", {"query": "ASK {}", "tx": "3"}, "tx"),  # under anyOf [integer, null]
    ("quipu_cord", {"limit": "ten"}, "limit"),
    ("quipu_transactions", {"since": "abc"}, "since"),
    ("quipu_transactions", {"limit": 1.5}, "limit"),
    ("quipu_entity", {"iri": 5}, "iri"),
    ("quipu_entity", {"iri": "http://ex.org/a", "expanded": "yes"}, "expanded"),
    ("quipu_fragments", {"page": True}, "page"),
    ("quipu_update", {"update": 1}, "update"),
    ("quipu_update", {"update": "INSERT DATA {}", "actor": {"name": "x"}}, "actor"),
    ("quipu_update", {"update": "INSERT DATA {}", "using-graph-uri": "http://ex.org/g"}, "using-graph-uri"),
    ("quipu_stats", {"anything": [1, 2]}, "anything"),  # a list cannot be a query value
    # Value forms of DM §2.1: the keys tell the forms apart, so keys that fit none are a wrong type.
    ("quipu_set", {"entity": EX + "a", "predicate": EX + "p", "value": 5}, "value"),
    ("quipu_set", {"entity": EX + "a", "predicate": EX + "p", "value": {"int": "5"}}, "value"),
    (
        "quipu_set",
        {"entity": EX + "a", "predicate": EX + "p", "value": {"iri": EX + "b", "lang": "en"}},
        "value",
    ),
    ("quipu_set", {"entity": EX + "a", "predicate": EX + "p", "value": {}}, "value"),
    ("quipu_retract", {"entity": EX + "a", "value": [EX + "b"]}, "value"),
    ("quipu_retract", {"entity": EX + "a", "value": {"bool": "true"}}, "value"),
    (
        "quipu_episode",
        {"name": "e", "edges": [{"source": "a", "target": "b", "relation": "r", "confidence": True}]},
        "edges.0.confidence",
    ),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    WRONG_TYPES,
    ids=[f"{t}-{f}-{i}" for i, (t, _, f) in enumerate(WRONG_TYPES)],
)
async def test_a_wrong_type_is_a_wrong_type_error_result_and_sends_no_request(
    tmp_path: Path, access_log: Collect, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with running(tmp_path) as r:
        await knot(r)
        before, requests = r.tx_count(), len(r.recorder.requests)
        access_log.records.clear()
        result = await r.dispatcher.call(tool, arguments, f"Bearer {TOKEN}")
        assert result.is_error is True and result.structured_content is None
        body = body_of(result)
        message = body.pop("error")
        assert body == {
            "type": "urn:quipu:problem:wrong_type",
            "title": "Bad Request",
            "status": 400,
            "reason": "wrong_type",
            "field": field,
        }
        assert message.startswith(f"'{field}' must be ")
        assert len(r.recorder.requests) == requests
        assert access_log.records == []
        assert r.tx_count() == before == 1


async def test_a_wrong_type_result_is_rests_own_wrong_type_body(tmp_path: Path) -> None:
    # The same error class through the same problem mapping: the shape REST answers a wrong type with.
    async with running(tmp_path) as r:
        result = await r.dispatcher.call("quipu_transactions", {"since": "abc"}, None)
        rest = await r.rest.get(
            "/transactions", params={"limit": "ten"}, headers={"Accept": "application/json"}
        )
        assert rest.status_code == 400 and rest.headers["content-type"] == "application/problem+json"
        mine, theirs = body_of(result), rest.json()
        assert set(mine) == set(theirs)
        assert {k: mine[k] for k in ("type", "title", "status", "reason")} == {
            k: theirs[k] for k in ("type", "title", "status", "reason")
        }


VALUE_FORMS: Final[list[Any]] = [
    "plain",
    {"iri": EX + "b"},
    {"str": "s"},
    {"int": 5},
    {"float": 1.5},
    {"float": 2},
    {"bool": False},
    {"value": "v", "lang": "en"},
    {"value": "2026-01-01", "datatype": "http://www.w3.org/2001/XMLSchema#date"},
]


@pytest.mark.parametrize("value", VALUE_FORMS, ids=[json.dumps(v) for v in VALUE_FORMS])
async def test_every_value_form_passes_the_type_check_and_reaches_rest(tmp_path: Path, value: Any) -> None:
    async with running(tmp_path) as r:
        await knot(r)
        r.recorder.requests.clear()
        written = await r.dispatcher.call(
            "quipu_set", {"entity": EX + "a", "predicate": EX + "q", "value": value}, None
        )
        assert not written.is_error, text_of(written)
        retracted = await r.dispatcher.call(
            "quipu_retract", {"entity": EX + "a", "predicate": EX + "q", "value": value}, None
        )
        assert body_of(retracted)["retracted"] == 1
        assert [seen.path for seen in r.recorder.requests] == ["/set", "/retract"]


async def test_a_value_of_the_right_form_is_still_the_stores_to_judge(tmp_path: Path) -> None:
    # {"int": 5.0} is a JSON integer to JSON Schema, but not to the store: REST refuses it.
    async with running(tmp_path) as r:
        await knot(r)
        r.recorder.requests.clear()
        result = await r.dispatcher.call(
            "quipu_set", {"entity": EX + "a", "predicate": EX + "q", "value": {"int": 5.0}}, None
        )
        assert result.is_error and body_of(result)["reason"] == "invalid_field"
        assert [seen.path for seen in r.recorder.requests] == ["/set"]


async def test_a_number_or_grade_confidence_passes_and_other_types_do_not(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        for confidence in ("EXTRACTED", 0.75, 1, None):
            edge: dict[str, Any] = {"source": "a", "target": "b", "relation": "r", "confidence": confidence}
            result = await r.dispatcher.call(
                "quipu_episode", {"name": f"e-{confidence}", "edges": [edge]}, None
            )
            assert not result.is_error, text_of(result)
        for wrong in (True, {"grade": "EXTRACTED"}, [0.5]):
            edge = {"source": "a", "target": "b", "relation": "r", "confidence": wrong}
            result = await r.dispatcher.call("quipu_episode", {"name": "x", "edges": [edge]}, None)
            assert body_of(result)["field"] == "edges.0.confidence"
        assert [seen.path for seen in r.recorder.requests] == ["/episode"] * 4


async def test_a_missing_required_field_is_the_routes_to_judge(tmp_path: Path) -> None:
    # Only JSON types are the adapter's: a missing field reaches REST, which answers 400.
    async with running(tmp_path) as r:
        result = await r.dispatcher.call("quipu_knot", {}, None)
        assert result.is_error
        assert body_of(result)["reason"] == "missing_field"
        assert len(r.recorder.requests) == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_a_wrong_type_through_the_sdk_client_is_an_error_result(tmp_path: Path, mode: str) -> None:
    async with running(tmp_path) as r:
        async with Client(build_server(r.registry, r.dispatcher, lambda _ctx: None), mode=mode) as client:
            result = await client.call_tool("quipu_transactions", {"since": "abc"})
        assert result.is_error is True
        assert (body_of(result)["reason"], body_of(result)["field"]) == ("wrong_type", "since")
        assert r.recorder.requests == []


async def test_an_unknown_tool_is_a_protocol_error(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        not_served = r.registry.missing[0].name  # in the manifest, but its route has not landed
        for name in ("quipu_nonexistent", not_served):
            with pytest.raises(MCPError) as raised:
                await r.dispatcher.call(name, {}, None)
            assert raised.value.code == INVALID_PARAMS
            assert name in raised.value.message
        assert r.recorder.requests == []


@pytest.mark.parametrize("mode", ERAS)
async def test_an_unknown_tool_through_the_sdk_client_is_a_protocol_error(tmp_path: Path, mode: str) -> None:
    async with running(tmp_path) as r:
        async with Client(build_server(r.registry, r.dispatcher, lambda _ctx: None), mode=mode) as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("quipu_nonexistent", {})
        assert raised.value.code == INVALID_PARAMS


# -- how arguments travel -----------------------------------------------------------------------------


async def test_get_tools_encode_integers_in_the_query_string(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        for i in range(4):
            await knot(r, f"<{EX}s{i}> <{EX}p> {i} .")
        r.recorder.requests.clear()
        result = await r.dispatcher.call("quipu_transactions", {"since": 1, "limit": 2}, None)
        (seen,) = r.recorder.requests
        assert (seen.method, seen.path, seen.query) == ("GET", "/transactions", b"since=1&limit=2")
        assert [t["id"] for t in body_of(result)["transactions"]] == [2, 3]


async def test_transactions_without_arguments_sends_the_manifest_bound(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        await r.dispatcher.call("quipu_transactions", {}, None)
        assert r.recorder.requests[-1].query == b"since=0&limit=1000"
        await r.dispatcher.call("quipu_transactions", {"limit": 5}, None)
        assert r.recorder.requests[-1].query == b"since=0&limit=5"


async def test_get_tools_encode_booleans_as_true_and_false(tmp_path: Path) -> None:
    iri = f"{EX}path/to#frag"
    async with running(tmp_path) as r:
        await knot(r, f'<{iri}> <{EX}p> <{EX}b> . <{EX}b> <http://www.w3.org/2000/01/rdf-schema#label> "B" .')
        r.recorder.requests.clear()
        expanded = await r.dispatcher.call("quipu_entity", {"iri": iri, "expanded": True}, None)
        compact = await r.dispatcher.call("quipu_entity", {"iri": iri, "expanded": False}, None)
        queries = [seen.query for seen in r.recorder.requests]
        encoded = quote(iri, safe="")
        assert queries == [f"iri={encoded}&expanded=true".encode(), f"iri={encoded}&expanded=false".encode()]
        assert parse_qsl(queries[0].decode()) == [("iri", iri), ("expanded", "true")]
        assert not expanded.is_error and not compact.is_error
        assert "@context" not in body_of(expanded) and "@context" in body_of(compact)


async def test_update_is_form_encoded_exactly(tmp_path: Path) -> None:
    text = "a&b=c+d%20e 100% ü 漢字 ☃ x=1&y"
    update = f'INSERT DATA {{ <{EX}s> <{EX}label> "{text}" }}'
    async with running(tmp_path) as r:
        result = await r.dispatcher.call("quipu_update", {"update": update, "actor": text}, None)
        assert not result.is_error, text_of(result)
        (seen,) = r.recorder.requests
        assert (seen.method, seen.path, seen.query) == ("POST", "/update", b"")
        assert seen.header("content-type") == ["application/x-www-form-urlencoded"]
        assert seen.body == urlencode({"update": update, "actor": text}).encode("ascii")
        assert parse_qsl(seen.body.decode("ascii"), encoding="utf-8") == [("update", update), ("actor", text)]
        query = f"SELECT ?o WHERE {{ <{EX}s> <{EX}label> ?o }}"
        rows = body_of(await r.dispatcher.call("quipu_query", {"query": query}, None))
        assert [row["o"] for row in rows["rows"]] == [text]
        assert r.kb.transactions()["transactions"][-1]["actor"] == text


async def test_update_repeats_a_list_field(tmp_path: Path) -> None:
    update = f"INSERT {{ <{EX}x> <{EX}p> ?o }} WHERE {{ ?s <{EX}p> ?o }}"
    graphs = ["urn:g:1", "urn:g:2"]
    async with running(tmp_path) as r:
        await r.dispatcher.call("quipu_update", {"update": update, "using-graph-uri": graphs}, None)
        (seen,) = r.recorder.requests
        assert parse_qsl(seen.body.decode("ascii")) == [
            ("update", update),
            ("using-graph-uri", graphs[0]),
            ("using-graph-uri", graphs[1]),
        ]


async def test_post_tools_send_the_arguments_as_the_json_body(tmp_path: Path) -> None:
    arguments = {"turtle": f'<{EX}a> <{EX}p> "ü & =" .', "actor": "bot", "replace_snapshot": False}
    async with running(tmp_path) as r:
        await r.dispatcher.call("quipu_knot", arguments, None)
        (seen,) = r.recorder.requests
        assert (seen.method, seen.path, seen.query) == ("POST", "/knot", b"")
        assert seen.header("content-type") == ["application/json"]
        assert seen.header("accept") == ["application/json"]
        assert json.loads(seen.body) == arguments


# -- results -----------------------------------------------------------------------------------------

ERRORS: Final = [
    ("quipu_query", {"query": "SELEKT * WHERE {"}, "POST", "/query", {"json": {"query": "SELEKT * WHERE {"}}),
    ("quipu_knot", {"turtle": "<a> <b"}, "POST", "/knot", {"json": {"turtle": "<a> <b"}}),
    ("quipu_knot", {}, "POST", "/knot", {"json": {}}),
    ("quipu_entity", {}, "GET", "/entity", {}),
    (
        "quipu_entity",
        {"iri": "http://ex.org/a", "x": "1"},
        "GET",
        "/entity",
        {"params": {"iri": EX + "a", "x": "1"}},
    ),
    (
        "quipu_entity_history",
        {"iri": "x", "bogus": 1},
        "POST",
        "/entity_history",
        {"json": {"iri": "x", "bogus": 1}},
    ),
    ("quipu_update", {"update": "INSERT NOPE"}, "POST", "/update", {"data": {"update": "INSERT NOPE"}}),
    ("quipu_unravel", {}, "POST", "/unravel", {"json": {}}),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "path", "request_kwargs"),
    ERRORS,
    ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)],
)
async def test_a_non_2xx_answer_is_an_error_result_with_the_rest_body_unchanged(
    tmp_path: Path,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
    request_kwargs: dict[str, Any],
) -> None:
    async with running(tmp_path) as r:
        result = await r.dispatcher.call(tool, arguments, None)
        rest = await r.rest.request(method, path, headers={"Accept": "application/json"}, **request_kwargs)
        assert rest.status_code >= 400
        assert result.is_error is True
        assert text_of(result) == rest.text  # byte for byte
        assert result.structured_content is None
        assert body_of(result)["reason"] == rest.json()["reason"]


async def test_a_write_refused_for_want_of_a_credential_carries_the_401_body(tmp_path: Path) -> None:
    async with running(tmp_path, server=GUARDED) as r:
        result = await r.dispatcher.call("quipu_knot", {"turtle": SEED}, None)
        rest = await r.rest.post("/knot", json={"turtle": SEED}, headers={"Accept": "application/json"})
        assert rest.status_code == 401
        assert result.is_error and text_of(result) == rest.text
        assert body_of(result)["reason"] == "missing_or_invalid_bearer_token"
        assert r.tx_count() == 0


SUCCESSES: Final = [
    ("quipu_cord", {}, "POST", "/cord", {"json": {}}),
    ("quipu_stats", {}, "GET", "/stats", {}),
    ("quipu_health", {}, "GET", "/health", {}),
    ("quipu_entity", {"iri": EX + "a"}, "GET", "/entity", {"params": {"iri": EX + "a"}}),
    ("quipu_fragments", {"predicate": EX + "p"}, "GET", "/fragments", {"params": {"predicate": EX + "p"}}),
    (
        "quipu_query",
        {"query": f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }} ORDER BY ?s"},
        "POST",
        "/query",
        {"json": {"query": f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }} ORDER BY ?s"}},
    ),
    ("quipu_unravel", {"tx": 1}, "POST", "/unravel", {"json": {"tx": 1}}),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "path", "request_kwargs"), SUCCESSES, ids=[s[0] for s in SUCCESSES]
)
async def test_a_2xx_answer_is_the_rest_body_with_structured_content(
    tmp_path: Path,
    tool: str,
    arguments: dict[str, Any],
    method: str,
    path: str,
    request_kwargs: dict[str, Any],
) -> None:
    async with running(tmp_path) as r:
        await knot(r)
        result = await r.dispatcher.call(tool, arguments, None)
        rest = await r.rest.request(method, path, headers={"Accept": "application/json"}, **request_kwargs)
        assert rest.status_code == 200
        assert result.is_error is False
        assert text_of(result) == rest.text
        assert result.structured_content == json.loads(text_of(result)) == rest.json()


async def test_version_is_answered_without_any_rest_request(tmp_path: Path, access_log: Collect) -> None:
    async with running(tmp_path) as r:
        result = await r.dispatcher.call("quipu_version", {}, None)
        none = await r.dispatcher.call("quipu_version", None, None)
        assert r.recorder.requests == []
        assert access_log.records == []
        assert not result.is_error
        assert result.structured_content == none.structured_content == version_info()
        rest = await r.rest.get("/version")
        assert result.structured_content == rest.json()  # the same function the route uses


async def test_version_refuses_an_argument_as_get_version_does(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        result = await r.dispatcher.call("quipu_version", {"verbose": True}, None)
        assert r.recorder.requests == []
        rest = await r.rest.get(
            "/version", params={"verbose": "true"}, headers={"Accept": "application/json"}
        )
        assert rest.status_code == 400
        assert result.is_error is True and text_of(result) == rest.text  # byte for byte
        assert (body_of(result)["reason"], body_of(result)["field"]) == ("unknown_field", "verbose")


# -- unknown keys: the route's regime -----------------------------------------------------------------


async def test_annotating_tools_pass_unknown_keys_through_to_rest(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        written = await r.dispatcher.call("quipu_knot", {"turtle": SEED, "colour": "blue", "zeta": 1}, None)
        assert not written.is_error
        assert json.loads(r.recorder.requests[-1].body)["colour"] == "blue"
        assert body_of(written)["ignored_fields"] == ["colour", "zeta"]
        assert written.structured_content is not None
        assert written.structured_content["ignored_fields"] == ["colour", "zeta"]
        for tool, arguments in (
            ("quipu_query", {"query": "ASK { ?s ?p ?o }", "mood": "calm"}),
            ("quipu_cord", {"mood": "calm"}),
            ("quipu_set", {"entity": EX + "a", "predicate": EX + "q", "value": {"int": 3}, "mood": "calm"}),
        ):
            result = await r.dispatcher.call(tool, arguments, None)
            assert not result.is_error, (tool, text_of(result))
            assert body_of(result)["ignored_fields"] == ["mood"], tool


async def test_every_strict_tool_leaves_an_unknown_key_to_rest_which_refuses_it(tmp_path: Path) -> None:
    async with running(tmp_path) as r:
        strict = [s for s in r.registry if s.input_schema.get("additionalProperties") is False]
        assert {s.name for s in strict} >= {"quipu_entity_history", "quipu_update", "quipu_transactions"}
        for spec in strict:
            properties = spec.input_schema.get("properties", {})
            arguments: dict[str, Any] = {
                name: _filler(properties.get(name, {})) for name in spec.input_schema.get("required", [])
            }
            arguments["zz_unknown"] = "1"
            result = await r.dispatcher.call(spec.name, arguments, None)
            assert result.is_error, spec.name
            assert (body_of(result)["reason"], body_of(result)["field"]) == ("unknown_field", "zz_unknown"), (
                spec.name
            )
        assert r.tx_count() == 0


def _filler(schema: dict[str, Any]) -> Any:
    """A value of the schema's JSON type, so only the unknown key can be what is refused."""
    kind = str(schema.get("type", "string"))
    fillers: dict[str, Any] = {"integer": 1, "number": 1, "boolean": False, "object": {}, "array": []}
    return fillers.get(kind, EX + "x")


# -- credentials ------------------------------------------------------------------------------------


async def test_the_credential_given_to_call_is_the_only_one_sent(tmp_path: Path) -> None:
    async with running(tmp_path, server=GUARDED) as r:
        arguments = {"turtle": SEED, "authorization": f"Bearer {OTHER_TOKEN}", "Authorization": "Bearer x"}
        result = await r.dispatcher.call("quipu_knot", arguments, f"Bearer {TOKEN}")
        assert not result.is_error, text_of(result)
        (seen,) = r.recorder.requests
        assert seen.header("authorization") == [f"Bearer {TOKEN}"]
        assert body_of(result)["ignored_fields"] == ["Authorization", "authorization"]
        last = r.kb.transactions()["transactions"][-1]
        assert last["authenticated"]["principal"] == "bot"


async def test_an_authorization_argument_never_becomes_a_header(tmp_path: Path) -> None:
    async with running(tmp_path, server=GUARDED) as r:
        result = await r.dispatcher.call(
            "quipu_knot", {"turtle": SEED, "authorization": f"Bearer {TOKEN}"}, None
        )
        assert result.is_error
        assert body_of(result)["reason"] == "missing_or_invalid_bearer_token"
        form = await r.dispatcher.call(
            "quipu_update",
            {"update": f"INSERT DATA {{ <{EX}a> <{EX}p> 1 }}", "authorization": f"Bearer {TOKEN}"},
            None,
        )
        assert form.is_error  # a form field is no credential either
        assert body_of(form)["reason"] == "missing_or_invalid_bearer_token"
        read = await r.dispatcher.call("quipu_stats", {"authorization": f"Bearer {TOKEN}"}, None)
        assert read.is_error and body_of(read)["reason"] == "unknown_field"
        assert all(seen.header("authorization") == [] for seen in r.recorder.requests)
        assert r.tx_count() == 0


async def test_a_wrong_credential_is_refused_by_rest(tmp_path: Path) -> None:
    async with running(tmp_path, server=GUARDED) as r:
        result = await r.dispatcher.call("quipu_knot", {"turtle": SEED}, f"Bearer {OTHER_TOKEN}")
        assert result.is_error and body_of(result)["reason"] == "missing_or_invalid_bearer_token"
        assert r.recorder.requests[-1].header("authorization") == [f"Bearer {OTHER_TOKEN}"]


# -- through the SDK client, both eras ------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_sdk_client_lists_the_registry_and_round_trips_a_write_and_a_read(
    tmp_path: Path, mode: str
) -> None:
    async with running(tmp_path, server=GUARDED) as r:
        server = build_server(r.registry, r.dispatcher, lambda _ctx: f"Bearer {TOKEN}")
        async with Client(server, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            listed = await client.list_tools()
            assert [t.model_dump(by_alias=True) for t in listed.tools] == [
                t.model_dump(by_alias=True) for t in tool_list(r.registry)
            ]
            written = await client.call_tool("quipu_knot", {"turtle": SEED, "extra": 1})
            assert not written.is_error
            assert written.structured_content is not None
            assert written.structured_content["ignored_fields"] == ["extra"]
            query = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
            read = await client.call_tool("quipu_query", {"query": query})
            assert read.structured_content is not None
            assert [row["o"] for row in read.structured_content["rows"]] == [1]
            failed = await client.call_tool("quipu_query", {"query": "SELEKT"})
            assert failed.is_error
            assert json.loads(text_of(failed))["reason"] == "sparql_parse_error"
        assert r.kb.transactions()["transactions"][-1]["authenticated"]["principal"] == "bot"


# -- the transport is the constructor's choice ---------------------------------------------------------


async def test_a_base_url_sends_the_same_requests_to_a_running_server(tmp_path: Path) -> None:
    settings = load_settings(store={"db": store_location(tmp_path, "served.db")}, server=GUARDED)
    registry = build_registry(create_app(settings).openapi())
    with live_server(settings) as url:
        remote = Dispatcher(url, registry)
        try:
            refused = await remote.call("quipu_knot", {"turtle": SEED}, None)
            written = await remote.call("quipu_knot", {"turtle": SEED, "colour": "blue"}, f"Bearer {TOKEN}")
            read = await remote.call("quipu_transactions", {}, None)
            wrong = await remote.call("quipu_query", {"query": 5}, None)
        finally:
            await remote.aclose()
        rest = httpx.post(url + "/knot", json={"turtle": SEED}, headers={"Accept": "application/json"})
    assert refused.is_error and text_of(refused) == rest.text  # the server's own 401, byte for byte
    assert not written.is_error and body_of(written)["ignored_fields"] == ["colour"]
    assert body_of(read)["transactions"][-1]["authenticated"]["principal"] == "bot"
    assert wrong.is_error and body_of(wrong)["reason"] == "wrong_type"  # checked here, as in process


async def test_an_unreachable_server_raises_the_transport_error(tmp_path: Path) -> None:
    registry = build_registry(create_app(load_settings(store={"db": ":memory:"})).openapi())
    remote = Dispatcher("http://127.0.0.1:9", registry)
    try:
        with pytest.raises(httpx.TransportError):
            await remote.call("quipu_health", {}, None)
    finally:
        await remote.aclose()


async def test_an_app_that_fails_unexpectedly_gives_the_internal_error_problem(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom: a detail the caller must not see")

    registry = build_registry(create_app(load_settings(store={"db": ":memory:"})).openapi())
    dispatcher = Dispatcher(broken, registry)
    try:
        with caplog.at_level(logging.ERROR, logger="quipu.mcp"):
            result = await dispatcher.call("quipu_stats", {}, None)
    finally:
        await dispatcher.aclose()
    assert result.is_error
    # The one internal-error body (quipu.errors.internal_error), rendered as REST renders it.
    assert body_of(result) == {
        "type": "urn:quipu:problem:internal_error",
        "title": "Internal Server Error",
        "status": 500,
        "error": "internal error: the tool call could not be completed",
        "reason": "internal_error",
    }
    assert "boom" not in text_of(result)
    assert any("boom" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)  # logged, with the cause
