"""Numbers survive the round trip (issue 15): written over REST, read back unchanged.

Each test failed before the fix: ``NaN``/``INF``/``-INF`` came back as ``null`` in the JSON shape,
``"1e999"^^xsd:double`` was stored as ``"INF"`` (and ``"1e3"`` as ``"1000.0"``), an ``xsd:integer``
past 64 bits was refused, and equal double shadows (``2**53`` and ``2**53 + 1``) made different
numbers equal in FILTER and ORDER BY.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.types import TextContent

from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import build_registry
from quipu.rest.app import create_app
from tests.backends import migrated_location
from tests.rest.support import EX, PREFIXES, XSD, serve

DOUBLE, INTEGER = XSD + "double", XSD + "integer"
NS = "http://aegis.gastown.local/ontology/"
SPARQL_JSON = {"Accept": "application/sparql-results+json"}
HUGE = 18446744073709551617  # 2**64 + 1


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def knot(client: TestClient, body: str) -> None:
    ok(client.post("/knot", json={"turtle": PREFIXES + body}))


def rows(client: TestClient, query: str) -> list[dict[str, Any]]:
    """The rows of Quipu's JSON result shape."""
    out: list[dict[str, Any]] = ok(client.post("/query", json={"query": query}))["rows"]
    return out


def bindings(client: TestClient, query: str) -> list[dict[str, Any]]:
    """The bindings of a SPARQL 1.1 Query Results JSON answer."""
    out: list[dict[str, Any]] = ok(client.post("/query", json={"query": query}, headers=SPARQL_JSON))[
        "results"
    ]["bindings"]
    return out


def literal(lexical: str, datatype: str) -> dict[str, str]:
    return {"type": "literal", "value": lexical, "datatype": datatype}


def typed(lexical: str, datatype: str) -> dict[str, str]:
    return {"value": lexical, "datatype": datatype}


def by_predicate(client: TestClient, subject: str) -> dict[str, Any]:
    """Every way a read returns the objects of ``subject``, by predicate local name."""
    query = f"SELECT ?p ?o WHERE {{ <{subject}> ?p ?o }}"
    history = ok(client.post("/entity_history", json={"iri": subject}))["history"]
    unravel = ok(client.post("/unravel", json={"tx": 2**40}))["facts"]
    entity = ok(client.get("/entity", params={"iri": subject}))
    return {
        "json": {r["p"].removeprefix(EX): r["o"] for r in rows(client, query)},
        "sparql": {b["p"]["value"].removeprefix(EX): b["o"] for b in bindings(client, query)},
        "history": {h["predicate"].removeprefix(EX): h["value"] for h in history},
        "unravel": {f["predicate"].removeprefix(EX): f["value"] for f in unravel if f["entity"] == subject},
        "entity": {k.removeprefix(EX): v for k, v in entity.items() if k.startswith(EX)},
        "export": client.post("/export", json={"format": "nt"}).text,
    }


# -- xsd:double ----------------------------------------------------------------------------------


def test_nan_and_infinities_keep_their_value_in_every_read(client: TestClient) -> None:
    knot(client, 'ex:a ex:nan "NaN"^^xsd:double ; ex:inf "INF"^^xsd:double ; ex:ninf "-INF"^^xsd:double .')
    got = by_predicate(client, EX + "a")
    for name, lexical in (("nan", "NaN"), ("inf", "INF"), ("ninf", "-INF")):
        # DM §2.1 wrote null here: the value was gone
        assert got["json"][name] == typed(lexical, DOUBLE)
        assert got["history"][name] == got["unravel"][name] == typed(lexical, DOUBLE)
        assert got["sparql"][name] == literal(lexical, DOUBLE)
        assert got["entity"][name] == {"@value": lexical, "@type": DOUBLE}
        assert f'<{EX}a> <{EX}{name}> "{lexical}"^^<{DOUBLE}> .' in got["export"]


def test_a_double_keeps_the_lexical_form_it_was_written_with(client: TestClient) -> None:
    knot(
        client,
        'ex:a ex:big "1e999"^^xsd:double ; ex:e3 "1e3"^^xsd:double ; ex:lead "01.5"^^xsd:double ; '
        'ex:bare 1.5E0 ; ex:canon "1.5"^^xsd:double ; ex:tiny "1e-999"^^xsd:double .',
    )
    got = by_predicate(client, EX + "a")
    written = {"big": "1e999", "e3": "1e3", "lead": "01.5", "bare": "1.5E0", "tiny": "1e-999"}
    for name, lexical in written.items():
        assert got["sparql"][name] == literal(lexical, DOUBLE)
        assert got["json"][name] == got["history"][name] == typed(lexical, DOUBLE)
        assert got["entity"][name] == {"@value": lexical, "@type": DOUBLE}
        assert f'<{EX}a> <{EX}{name}> "{lexical}"^^<{DOUBLE}> .' in got["export"]
    # the canonical form is still a JSON number
    assert got["json"]["canon"] == got["history"]["canon"] == 1.5
    assert got["sparql"]["canon"] == literal("1.5", DOUBLE)


def test_a_double_written_as_1e3_is_retracted_by_that_form(client: TestClient) -> None:
    knot(client, 'ex:a ex:p "1e3"^^xsd:double ; ex:q "1e3"^^xsd:double .')
    query = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert bindings(client, query) == [{"o": literal("1e3", DOUBLE)}]
    # the form a read gives back retracts it, over JSON as over SPARQL Update
    value = rows(client, query)[0]["o"]
    out = ok(client.post("/retract", json={"entity": EX + "a", "predicate": EX + "p", "value": value}))
    assert out["retracted"] == 1
    assert bindings(client, query) == []
    update = f'DELETE DATA {{ <{EX}a> <{EX}q> "1e3"^^<{DOUBLE}> }}'
    ok(client.post("/update", content=update, headers={"Content-Type": "application/sparql-update"}))
    assert bindings(client, f"SELECT ?o WHERE {{ <{EX}a> <{EX}q> ?o }}") == []


def test_a_json_float_stays_a_float(client: TestClient) -> None:
    knot(client, "ex:a a ex:Thing .")
    ok(client.post("/set", json={"entity": EX + "a", "predicate": EX + "p", "value": {"float": 1000.0}}))
    ok(client.post("/set", json={"entity": EX + "a", "predicate": EX + "big", "value": {"float": 1e300}}))
    knot(client, 'ex:a ex:p "1e3"^^xsd:double .')  # another term with the same value
    assert by_predicate(client, EX + "a")["history"]["big"] == 1e300
    objects = rows(client, f"SELECT ?o {{ <{EX}a> <{EX}p> ?o }} ORDER BY STR(?o)")
    assert objects == [{"o": 1000.0}, {"o": typed("1e3", DOUBLE)}]
    # one value, two terms: = compares values, sameTerm and DISTINCT compare terms
    same = f"SELECT (COUNT(*) AS ?n) WHERE {{ <{EX}a> <{EX}p> ?x , ?y FILTER(?x = ?y) }}"
    assert rows(client, same) == [{"n": 4}]
    terms = f"SELECT (COUNT(*) AS ?n) WHERE {{ <{EX}a> <{EX}p> ?x , ?y FILTER(sameTerm(?x, ?y)) }}"
    assert rows(client, terms) == [{"n": 2}]


# -- xsd:integer past 64 bits --------------------------------------------------------------------


def test_an_integer_past_64_bits_is_stored_exactly(client: TestClient) -> None:
    knot(
        client,
        f'ex:a ex:big "{HUGE}"^^xsd:integer ; ex:neg "-{HUGE}"^^xsd:integer ; ex:pad "+000{HUGE}"^^xsd:integer .',
    )
    got = by_predicate(client, EX + "a")
    for name, lexical in (("big", str(HUGE)), ("neg", f"-{HUGE}"), ("pad", str(HUGE))):
        assert got["sparql"][name] == literal(lexical, INTEGER)
        assert got["json"][name] == got["history"][name] == typed(lexical, INTEGER)
        assert got["entity"][name] == {"@value": lexical, "@type": INTEGER}
        assert f'<{EX}a> <{EX}{name}> "{lexical}"^^<{INTEGER}> .' in got["export"]


def test_a_json_integer_of_any_size_is_stored_exactly(client: TestClient) -> None:
    knot(client, "ex:a a ex:Thing .")
    ok(client.post("/set", json={"entity": EX + "a", "predicate": EX + "p", "value": {"int": 10**30}}))
    ok(client.post("/set", json={"entity": EX + "a", "predicate": EX + "m", "value": {"int": -(2**63) - 1}}))
    ok(
        client.post(
            "/episode",
            json={
                "name": "e1",
                "nodes": [{"name": "svc", "type": "Service", "properties": {"cores": 10**30}}],
            },
        )
    )
    got = by_predicate(client, EX + "a")
    assert got["sparql"]["p"] == literal(str(10**30), INTEGER)
    assert got["history"]["m"] == typed(str(-(2**63) - 1), INTEGER)
    cores = bindings(client, f"SELECT ?o WHERE {{ ?s <{NS}cores> ?o }}")
    assert cores == [{"o": literal(str(10**30), INTEGER)}]


def test_equal_integers_are_one_value_whatever_their_size_or_form(client: TestClient) -> None:
    knot(client, f'ex:a ex:p "+00{HUGE}"^^xsd:integer .')
    # the JSON input, the Turtle form and the canonical form are one value: the set writes nothing
    again = ok(client.post("/set", json={"entity": EX + "a", "predicate": EX + "p", "value": {"int": HUGE}}))
    assert (again["retracted"], again["asserted"]) == (0, 0)
    value = {"value": str(HUGE), "datatype": INTEGER}
    out = ok(client.post("/retract", json={"entity": EX + "a", "predicate": EX + "p", "value": value}))
    assert out["retracted"] == 1
    assert rows(client, f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}") == []


# -- SPARQL over them ----------------------------------------------------------------------------


def test_sparql_computes_exactly_with_an_integer_past_64_bits(client: TestClient) -> None:
    knot(client, f'ex:a ex:n "{HUGE}"^^xsd:integer . ex:b ex:n 5 .')
    query = (
        "SELECT ?s (?x + 1 AS ?y) (?x * ?x AS ?sq) (DATATYPE(?x) AS ?t) (isNumeric(?x) AS ?num) "
        f"WHERE {{ ?s <{EX}n> ?x }} ORDER BY ?s"
    )
    got = bindings(client, query)
    assert [b["y"] for b in got] == [literal(str(HUGE + 1), INTEGER), literal("6", INTEGER)]
    assert got[0]["sq"] == literal(str(HUGE * HUGE), INTEGER)
    assert got[0]["t"] == {"type": "uri", "value": INTEGER}
    assert got[0]["num"] == literal("true", XSD + "boolean")
    total = rows(client, f"SELECT (SUM(?x) AS ?t) (MAX(?x) AS ?m) WHERE {{ ?s <{EX}n> ?x }}")
    assert total == [{"t": typed(str(HUGE + 5), INTEGER), "m": typed(str(HUGE), INTEGER)}]


def test_filter_and_order_by_tell_apart_numbers_that_share_a_double(client: TestClient) -> None:
    # Each group shares one double: 2**53 and 2**53 + 1; 2**64 - 1 .. 2**64 + 1; and their negatives.
    numbers = [2**53, 2**53 + 1, 2**64 - 1, 2**64, HUGE, -(2**64), -HUGE, 10**400, 10**400 + 1]
    body = " ".join(f'ex:n{i} ex:v "{n}"^^xsd:integer .' for i, n in enumerate(numbers))
    knot(client, body + ' ex:d ex:v "9007199254740992.5"^^xsd:decimal .')
    values: list[int | str] = [*numbers, "9007199254740992.5"]

    def selected(condition: str) -> list[str]:
        query = f"SELECT ?x WHERE {{ ?s <{EX}v> ?x FILTER({condition}) }} ORDER BY ?x"
        return [b["x"]["value"] for b in bindings(client, query)]

    ordered = sorted(values, key=lambda v: Decimal(v))
    assert selected("true") == [str(v) for v in ordered]
    desc = f"SELECT ?x WHERE {{ ?s <{EX}v> ?x }} ORDER BY DESC(?x)"
    assert [b["x"]["value"] for b in bindings(client, desc)] == [str(v) for v in reversed(ordered)]
    assert selected(f"?x > {2**64}") == [str(HUGE), str(10**400), str(10**400 + 1)]
    assert selected(f"?x >= {HUGE}") == [str(HUGE), str(10**400), str(10**400 + 1)]
    assert selected(f"?x < {-(2**64)}") == [str(-HUGE)]
    assert selected(f"?x = {2**53}") == [str(2**53)]
    below = [str(-HUGE), str(-(2**64)), "9007199254740992.5", str(2**53 + 1)]
    assert selected(f"?x != {2**53} && ?x < {2**53 + 2}") == below
    assert selected(f"?x > {10**400}") == [str(10**400 + 1)]
    # two variables compared: every pair of different numbers is told apart
    pairs = f"SELECT (COUNT(*) AS ?n) WHERE {{ ?a <{EX}v> ?x . ?b <{EX}v> ?y FILTER(?x = ?y) }}"
    assert rows(client, pairs) == [{"n": len(values)}]
    less = f"SELECT (COUNT(*) AS ?n) WHERE {{ ?a <{EX}v> ?x . ?b <{EX}v> ?y FILTER(?x < ?y) }}"
    assert rows(client, less) == [{"n": len(values) * (len(values) - 1) // 2}]


# -- the MCP tools carry the REST bodies -------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_mcp_tools_return_the_same_values(tmp_path: Path) -> None:
    app = create_app(load_settings(store={"db": migrated_location(tmp_path, "m.db")}))
    dispatcher = Dispatcher(app, build_registry(app.openapi()))

    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        result = await dispatcher.call(tool, arguments, None)
        content = result.content[0]
        assert isinstance(content, TextContent) and not result.is_error, result
        return json.loads(content.text)

    try:
        async with app.router.lifespan_context(app):
            turtle = (
                PREFIXES
                + f'ex:a ex:nan "NaN"^^xsd:double ; ex:big "{HUGE}"^^xsd:integer ; ex:e3 "1e3"^^xsd:double .'
            )
            await call("quipu_knot", {"turtle": turtle})
            await call("quipu_set", {"entity": EX + "a", "predicate": EX + "j", "value": {"int": 10**30}})
            rows = (await call("quipu_query", {"query": f"SELECT ?p ?o {{ <{EX}a> ?p ?o }}"}))["rows"]
            history = (await call("quipu_entity_history", {"iri": EX + "a"}))["history"]
    finally:
        await dispatcher.aclose()
    expected = {
        "nan": typed("NaN", DOUBLE),
        "big": typed(str(HUGE), INTEGER),
        "e3": typed("1e3", DOUBLE),
        "j": typed(str(10**30), INTEGER),
    }
    assert {r["p"].removeprefix(EX): r["o"] for r in rows} == expected
    assert {h["predicate"].removeprefix(EX): h["value"] for h in history} == expected


def test_decimals_past_the_database_numeric_range_are_answered(client: TestClient) -> None:
    """PostgreSQL's numeric holds 131072 integer and 16383 fraction digits; Python's Decimal
    has no such limit. A decimal past it, or a sum, product or quotient past it, is still
    answered: on PostgreSQL the value outside the range is unbound, never a 500."""
    big = "1" + "0" * 70_000  # its square has 140,001 digits
    long_fraction = "0." + "1" * 20_000
    tiny = "0." + "0" * 16_000 + "1"
    knot(
        client,
        f'ex:big ex:v "{big}"^^xsd:decimal . ex:frac ex:v "{long_fraction}"^^xsd:decimal . '
        f'ex:tiny ex:v "{tiny}"^^xsd:decimal .',
    )
    got = rows(
        client,
        f"SELECT ?sq ?q ?f WHERE {{ <{EX}big> <{EX}v> ?b . <{EX}tiny> <{EX}v> ?t . "
        f"<{EX}frac> <{EX}v> ?fr BIND(?b * ?b AS ?sq) BIND(?t / ?b AS ?q) BIND(?fr * 9 AS ?f) }}",
    )
    assert len(got) == 1
    # the long fraction times nine is 0.999..., rounded to the 28-digit decimal context: 1.0
    assert Decimal(got[0]["f"]["value"]) == 1
    if got[0].get("sq") is not None:  # SQLite computes in Python: the square, rounded
        assert Decimal(got[0]["sq"]["value"]) == Decimal("1e140000")
    total = rows(client, f"SELECT (SUM(?v) AS ?s) WHERE {{ ?x <{EX}v> ?v }}")
    assert len(total) == 1
