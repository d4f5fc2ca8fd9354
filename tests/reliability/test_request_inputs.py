"""Issue 15: hostile request input on REST and MCP answers 4xx, never 500.

Each section reproduces one finding of a probe against a running server:

1. a literal over 16 MiB (pyoxigraph's token buffer) in ``/knot`` or ``quipu_knot`` was a 500;
   it is accepted now, up to the 64 MiB body limit, and any other token that long is a 413;
2. a lone surrogate (``"\\ud800"`` in the raw JSON) was a 500 on most write routes; it is a 400
   naming the field, on every route (one check of the request body);
3. a limit or page size below 1 returned data; it is a 400 naming the field, and the MCP tool
   schemas say so;
4. ``Host: 127.0.0.1:PORT@evil`` passed the ``/mcp`` Host check; a Host that is not exactly a
   host and an optional port is refused as a host that is not allowed is (421).

Time values are in test_time_values.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient
from rdflib import Literal

from quipu.config import load_settings
from quipu.mcp.http import create_server_app
from quipu.rdfio.parse import parse_document
from quipu.shacl.rdf import parse_graph
from tests.backends import migrated_location
from tests.reliability.mcp_support import registry, tools
from tests.rest.support import EX, kb_of, refused_write, serve, state

pytestmark = pytest.mark.anyio

BIG: Final = 17 * 1024 * 1024  # characters: past pyoxigraph's 16 MiB buffer, within the 64 MiB body


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def _stored_text(client: TestClient, s: str, p: str) -> str:
    rows = kb_of(client).query(f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}")
    assert isinstance(rows, list) and len(rows) == 1
    return str(rows[0]["o"])


# -- 1. a literal longer than the parser's buffer ---------------------------------------------------


def test_knot_accepts_a_literal_over_16_mib(client: TestClient) -> None:
    text = "é" * (BIG // 2) + '\n\t"end"'  # two UTF-8 bytes a character: 17 MiB of bytes
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    response = client.post("/knot", json={"turtle": f'<{EX}s> <{EX}p> "{escaped}"@fr .'})
    assert response.status_code == 200, response.text[:500]
    assert response.json()["count"] == 1
    rows = kb_of(client).query(f"SELECT ?o WHERE {{ <{EX}s> <{EX}p> ?o }}")
    assert isinstance(rows, list) and len(rows) == 1
    literal = rows[0]["o"]
    assert isinstance(literal, Literal)
    assert str(literal) == text and literal.language == "fr"


def test_validate_accepts_a_literal_over_16_mib(client: TestClient) -> None:
    shapes = (
        "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
        "ex:S a sh:NodeShape ; sh:targetNode ex:s ; sh:property [ sh:path ex:p ; sh:minCount 1 ] ."
    )
    data = f'<{EX}s> <{EX}p> """{"x" * BIG}""" .'
    response = client.post("/validate", json={"data": data, "shapes": shapes})
    assert response.status_code == 200, response.text[:500]
    assert response.json()["conforms"] is True


def test_a_term_over_16_mib_that_is_no_literal_is_413_naming_the_limit(client: TestClient) -> None:
    body = refused_write(client, "/knot", json={"turtle": f'<{EX}{"s" * BIG}> <{EX}p> "x" .'}, status=413)
    assert body["reason"] == "payload_too_large"
    assert "16 MiB" in body["error"], body


async def test_quipu_knot_accepts_a_literal_over_16_mib(tmp_path: Path) -> None:
    async with tools(tmp_path) as call:
        done = await call("quipu_knot", {"turtle": f'<{EX}s> <{EX}p> "{"y" * BIG}" .'})
        assert not done["error"] and done["body"]["count"] == 1, str(done)[:500]
        refused = await call("quipu_knot", {"turtle": f"<{EX}s> <{EX}p> <{EX}{'o' * BIG}> ."})
        assert refused["error"] and refused["status"] == 413, str(refused)[:500]
        assert "16 MiB" in refused["body"]["error"]


# Small documents read once as they are and once with their string literals and comments lifted out
# (LIFT_OVER lowered to 0, or for JSON-LD to 60: shorter strings there are IRIs and keywords): the
# same statements either way, in every format that can lift.
LIFTABLE: Final = {
    "turtle": (
        '@prefix ex: <http://ex.org/> . # a comment with "quotes" and <not an IRI>\n'
        'ex:s ex:p "plain", \'single\', """long\n"quoted" ""text""", \'\'\'long \'single\' text\'\'\', '
        '"tab\\tnew\\nline \\u00e9\\U0001F600 \\"q\\" \\\\"@en-GB, "5"^^<http://www.w3.org/2001/XMLSchema#integer> ;'
        ' ex:q [ ex:r "in a blank node" ], ( "listed" ex:o ) ; ex:esc\\#aped "local name escape" .'
    ),
    "trig": '<http://ex.org/g> { <http://ex.org/s> <http://ex.org/p> "in a graph", "two" . } # end',
    "nt": '<http://ex.org/s> <http://ex.org/p> "a \\"b\\" \\u00e9" . # c\n_:b1 <http://ex.org/p> "x"@de .\n',
    "nq": '<http://ex.org/s> <http://ex.org/p> "q" <http://ex.org/g> .\n',
    "jsonld": json.dumps(
        {
            "@context": {"ex": "http://ex.org/"},
            "@id": "ex:s",
            "ex:p": [
                'a plain string, "quoted", \u00e9, of more than 60 characters, lifted out',
                {
                    "@value": "a tagged string of more than 60 characters, lifted out as well",
                    "@language": "en",
                },
            ],
            "ex:n": {"@value": "7", "@type": "http://www.w3.org/2001/XMLSchema#integer"},
        }
    ),
}


@pytest.mark.backend_independent
@pytest.mark.parametrize("fmt", sorted(LIFTABLE))
def test_lifting_literals_out_changes_no_statement(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from quipu.rdfio import long_literals

    data = LIFTABLE[fmt].encode()
    direct = parse_document(data, fmt, graph_iri="urn:g")
    monkeypatch.setattr(long_literals, "LIFT_OVER", 60 if fmt == "jsonld" else 0)
    lifted = long_literals.lift(data, fmt)
    assert lifted.document != data and len(lifted.texts) >= 1

    # Force the second path: the first parse "overflows".
    import pyoxigraph as ox

    real = ox.parse
    calls: list[bytes] = []

    def overflowing(source: bytes, **kwargs: Any) -> Any:
        calls.append(source)
        if len(calls) > 1:
            return real(source, **kwargs)

        def overflow() -> Iterator[Any]:  # as pyoxigraph: while reading, not when called
            yield from ()
            raise MemoryError("Reached the buffer maximal size of 16777216")

        return overflow()

    monkeypatch.setattr(ox, "parse", overflowing)
    again = parse_document(data, fmt, graph_iri="urn:g")
    assert calls[1] != data  # the lifted document was read
    assert sorted(again.statements, key=repr) == sorted(direct.statements, key=repr)
    assert (again.graphs, again.iris) == (direct.graphs, direct.iris)
    calls.clear()
    assert len(parse_graph(data, fmt)) == len(direct.statements)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    ("escape", "reason"),
    [("\\q", "unexpected escape"), ("\\uD800", "not a Unicode character"), ("\\U00110000", "not a Unicode")],
)
def test_a_lifted_literal_is_checked_as_the_parser_would(escape: str, reason: str) -> None:
    from quipu.errors import RdfParseError

    data = f'<{EX}s> <{EX}p> "{"z" * BIG}{escape}" .'.encode()
    with pytest.raises(RdfParseError, match=reason):
        parse_document(data, "turtle", graph_iri="urn:g")


# -- 2. lone surrogates -------------------------------------------------------------------------------

# (route, raw JSON body holding a lone surrogate, the field a 400 names). Raw bytes: a JSON encoder
# would not write a lone surrogate escape, but a hostile client does.
SURROGATES: Final[list[tuple[str, bytes, str]]] = [
    ("/knot", b'{"turtle": "<http://ex.org/s> <http://ex.org/p> \\"\\ud800\\" ."}', "turtle"),
    ("/knot", b'{"turtle": "<http://ex.org/s> <http://ex.org/p> 1 .", "actor": "a\\udfffb"}', "actor"),
    ("/episode", b'{"name": "e\\ud800"}', "name"),
    (
        "/episode",
        b'{"name": "e", "nodes": [{"name": "n", "type": "T", "description": "\\udc00"}]}',
        "nodes.0.description",
    ),
    ("/set", b'{"entity": "http://ex.org/s", "predicate": "http://ex.org/p", "value": "\\ud800"}', "value"),
    (
        "/set",
        b'{"entity": "http://ex.org/s", "predicate": "http://ex.org/p", "value": {"str": "\\ud800"}}',
        "value.str",
    ),
    (
        "/retract",
        b'{"entity": "http://ex.org/s", "predicate": "http://ex.org/p", "value": "\\ud800"}',
        "value",
    ),
    ("/validate", b'{"data": "<http://ex.org/s> <http://ex.org/p> \\"\\ud800\\" ."}', "data"),
    ("/query", b'{"query": "SELECT * WHERE { ?s ?p \\"\\ud800\\" }"}', "query"),
    ("/cord", b'{"type": "http://ex.org/\\ud800"}', "type"),
    # The same code point as UTF-8 bytes (CESU), which Python's JSON decoder also lets through.
    (
        "/set",
        b'{"entity": "http://ex.org/s", "predicate": "http://ex.org/p", "value": "\xed\xa0\x80"}',
        "value",
    ),
    # A key, named with the surrogate escaped.
    ("/knot", b'{"turtle": "<http://ex.org/s> <http://ex.org/p> 1 .", "x\\ud800": 1}', "x\\ud800"),
]


@pytest.mark.parametrize(("route", "body", "field"), SURROGATES, ids=[f"{r}-{f}" for r, _, f in SURROGATES])
def test_a_lone_surrogate_is_a_400_naming_the_field(
    client: TestClient, route: str, body: bytes, field: str
) -> None:
    kb_of(client).knot(f"<{EX}s> <{EX}p> 1 .", "turtle")
    out = refused_write(
        client, route, content=body, headers={"Content-Type": "application/json"}, field=field
    )
    assert out["reason"] == "invalid_field"
    assert "lone surrogate" in out["error"]


def test_a_lone_surrogate_without_a_content_type_is_refused_while_a_pair_is_written(
    client: TestClient,
) -> None:
    kb_of(client).knot(f"<{EX}s> <{EX}p> 1 .", "turtle")
    before = state(client)
    response = client.post("/episode", content=b'{"name": "\\ud800"}')  # FastAPI reads it as JSON too
    assert response.status_code == 400 and response.json()["field"] == "name", response.text
    assert state(client) == before
    # A surrogate pair is one character beyond the BMP: text, written as such.
    body = b'{"entity": "http://ex.org/s", "predicate": "http://ex.org/p", "value": "\\ud83d\\ude00"}'
    response = client.post("/set", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text
    assert _stored_text(client, EX + "s", EX + "p") == "\U0001f600"


# -- 3. limits and page sizes ------------------------------------------------------------------------

# (method, route, parameters, the field a 400 names)
LIMITS: Final[list[tuple[str, str, dict[str, Any], str]]] = [
    ("GET", "/transactions", {"limit": -5}, "limit"),
    ("GET", "/transactions", {"limit": 0}, "limit"),
    ("GET", "/transactions", {"since": 0, "limit": -1}, "limit"),
    ("POST", "/cord", {"limit": -1}, "limit"),
    ("POST", "/cord", {"limit": 0}, "limit"),
    ("GET", "/fragments", {"pageSize": 0}, "pageSize"),
    ("GET", "/fragments", {"pageSize": -3}, "pageSize"),
]


@pytest.mark.parametrize(
    ("method", "route", "params", "field"), LIMITS, ids=[f"{m} {r} {p}" for m, r, p, _ in LIMITS]
)
def test_a_limit_below_1_is_a_400_naming_the_field(
    client: TestClient, method: str, route: str, params: dict[str, Any], field: str
) -> None:
    kb_of(client).knot(f"<{EX}s> <{EX}p> 1 .", "turtle")
    kb_of(client).knot(f"<{EX}t> <{EX}p> 2 .", "turtle")

    def send(value: int) -> Any:
        arguments = {**params, field: value}
        return client.get(route, params=arguments) if method == "GET" else client.post(route, json=arguments)

    response = send(params[field])
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["field"] == field and body["reason"] == "invalid_field", body
    assert "greater than or equal to 1" in body["error"]
    # 1 is the least that answers, and a huge one is capped, not refused.
    answer = send(1).json()
    assert len(answer.get("transactions", answer.get("entities", answer.get("triples")))) == 1, answer
    assert send(10**30).status_code == 200


# Every limit and page-size argument of a served tool, and its minimum.
TOOL_LIMITS: Final = {
    ("quipu_transactions", "limit"): 1,
    ("quipu_changes", "limit"): 1,  # limit counts transactions (tools-core §1.10)
    ("quipu_events", "limit"): 1,
    ("quipu_cord", "limit"): 1,
    ("quipu_fragments", "pageSize"): 1,
    # The search tools publish 1 too, and clamp a smaller value up to it (tools-search §0.6).
    ("quipu_search", "limit"): 1,
    ("quipu_hybrid_search", "limit"): 1,
    ("quipu_unified_search", "limit"): 1,
    ("quipu_project", "limit"): 1,
    # The node-link view's node budget: 0 draws no nodes, by the spec (tools-search §5.13).
    ("quipu_graph", "limit"): 0,
}


@pytest.mark.backend_independent
def test_mcp_tool_schemas_publish_the_minimum_of_every_limit() -> None:
    found = {}
    for spec in registry():
        for name, prop in spec.input_schema.get("properties", {}).items():
            if name in ("limit", "pageSize", "page_size"):
                branches = prop.get("anyOf", [prop])
                integer = next(b for b in branches if b.get("type") == "integer")
                found[(spec.name, name)] = integer.get("minimum")
    assert found == TOOL_LIMITS


async def test_an_mcp_limit_below_1_is_a_tool_error_naming_the_field(tmp_path: Path) -> None:
    async with tools(tmp_path) as call:
        for name, arguments, field in [
            ("quipu_cord", {"limit": -1}, "limit"),
            ("quipu_transactions", {"limit": 0}, "limit"),
            ("quipu_fragments", {"pageSize": 0}, "pageSize"),
        ]:
            out = await call(name, arguments)
            assert out["error"] and out["status"] == 400, out
            assert out["body"]["field"] == field, out


# -- 4. the Host header of /mcp ------------------------------------------------------------------------

INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
JSON_RPC: Final = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
MALFORMED_HOSTS: Final = [
    "127.0.0.1:3030@evil",  # the finding: the SDK's "127.0.0.1:*" matched it by prefix
    "127.0.0.1:3030@evil.example:80",
    "user@127.0.0.1:3030",  # userinfo
    "user:pass@localhost",
    "127.0.0.1 :3030",  # spaces
    " localhost:3030",
    "localhost:3030 ",
    "local host",
    "localhost:",  # an empty port
    "127.0.0.1:",
    "localhost:http",  # a non-digit port
    "localhost:30a0",
    "localhost:+80",
    "localhost:-1",
    "localhost:65536",  # out of range
    "localhost:0",
    "localhost:3030:3030",
    "localhost/evil",
    "localhost#x",
    "localhost\t",
    "::1",  # IPv6 without brackets
    "::1:3030",
    "[::1",
    "::1]",
    "[::1]x",
    "[::1]:",
    "[::1]:http",
    "[fe80::1%eth0]:3030",  # a zone id
    "[127.0.0.1]",
    "[]",
    "",
    "-localhost",
    "localhost..",
]
WELL_FORMED_HOSTS: Final = [
    "localhost",
    "localhost:3030",
    "127.0.0.1:9",
    "[::1]",
    "[::1]:3030",
    "localhost:65535",
]


@pytest.mark.backend_independent
@pytest.mark.parametrize("host", MALFORMED_HOSTS)
def test_a_malformed_host_is_not_well_formed(host: str) -> None:
    from quipu.mcp.http import well_formed_host

    assert not well_formed_host(host)


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    "host",
    [
        *WELL_FORMED_HOSTS,
        "LocalHost",
        "evil.example",
        "a-b.example:8443",
        "[2001:db8::1]:80",
        "[::ffff:127.0.0.1]",
    ],
)
def test_a_host_and_an_optional_port_is_well_formed(host: str) -> None:
    from quipu.mcp.http import well_formed_host

    assert well_formed_host(host)


@pytest.fixture(scope="module")
def mcp_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = load_settings(store={"db": migrated_location(tmp_path_factory.mktemp("mcp-host"), "h.db")})
    with TestClient(create_server_app(settings)) as c:
        yield c


@pytest.mark.parametrize("host", MALFORMED_HOSTS)
def test_mcp_refuses_a_malformed_host_as_one_not_allowed(mcp_client: TestClient, host: str) -> None:
    response = mcp_client.post("/mcp", json=INITIALIZE, headers={**JSON_RPC, "Host": host})
    assert response.status_code == 421, response.text
    assert response.text == "Invalid Host header"
    outside = mcp_client.post("/mcp", json=INITIALIZE, headers={**JSON_RPC, "Host": "evil.example"})
    assert (outside.status_code, outside.text) == (response.status_code, response.text)
    for served in WELL_FORMED_HOSTS:  # and what is a loopback host is still served
        response = mcp_client.post("/mcp", json=INITIALIZE, headers={**JSON_RPC, "Host": served})
        assert response.status_code == 200, (served, response.text)
        assert response.json()["result"]["serverInfo"]["name"] == "quipu"
