"""The SQL compiler answers exactly what rdflib's evaluator answers over the same store."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import URIRef
from rdflib.term import Node

import quipu
from quipu.api import KnowledgeBase
from tests.backends import store_location

EX = "http://ex.org/"
SUBJECTS = [f"<{EX}s{i}>" for i in range(4)]
PREDICATES = [f"<{EX}p{i}>" for i in range(3)]
LITERALS = ['"a"', '"b"@en', "7", "1.5e0", "true", '"x"^^<http://ex.org/dt>', '"7"']
OBJECTS = SUBJECTS + LITERALS


def _solutions(
    kb: KnowledgeBase, query: str, **kwargs: object
) -> tuple[str, Counter[tuple[tuple[str, Node], ...]]]:
    res = kb.query_result(query, **kwargs)  # type: ignore[arg-type]
    if res.form == "ASK":
        return res.plan, Counter({(("ask", str(res.boolean)),): 1})  # type: ignore[dict-item]
    return res.plan, Counter(tuple(sorted(row.items())) for row in res.rows)


statements = st.lists(
    st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(PREDICATES), st.sampled_from(OBJECTS)),
    min_size=1,
    max_size=14,
)
position = st.one_of(st.sampled_from(["?a", "?b", "?c", "[]"]), st.sampled_from(SUBJECTS))
pred_position = st.one_of(st.sampled_from(["?p", "?a"]), st.sampled_from(PREDICATES))
obj_position = st.one_of(
    st.sampled_from(["?a", "?b", "?c", "?o"]), st.sampled_from([*OBJECTS, f"<{EX}nowhere>"])
)
patterns = st.lists(st.tuples(position, pred_position, obj_position), min_size=1, max_size=3)


def _query(form: str, pats: list[tuple[str, str, str]], distinct: bool, groups: bool) -> str:
    body = " . ".join(" ".join(p) for p in pats)
    if groups and len(pats) > 1:  # { p1 } { p2 . p3 }: a join of two BGPs
        body = "{ " + " ".join(pats[0]) + " } { " + " . ".join(" ".join(p) for p in pats[1:]) + " }"
    if form == "ASK":
        return f"ASK {{ {body} }}"
    modifier = "DISTINCT " if distinct else ""
    return f"SELECT {modifier}* WHERE {{ {body} }}"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=statements,
    second=statements,
    pats=patterns,
    form=st.sampled_from(["SELECT", "ASK"]),
    distinct=st.booleans(),
    groups=st.booleans(),
)
@pytest.mark.backend_independent
def test_compiled_bgps_match_rdflib_at_every_read_point(
    first: list[tuple[str, str, str]],
    second: list[tuple[str, str, str]],
    pats: list[tuple[str, str, str]],
    form: str,
    distinct: bool,
    groups: bool,
) -> None:
    compiled = quipu.open(":memory:")
    fallback = quipu.open(":memory:", sparql_compiler=False)
    try:
        for kb in (compiled, fallback):
            doc1 = "".join(f"{s} {p} {o} .\n" for s, p, o in first)
            doc2 = "".join(f"{s} {p} {o} .\n" for s, p, o in second)
            kb.knot(doc1, valid_from="2026-01-01T00:00:00Z", source="one")
            kb.knot(doc2, valid_from="2026-02-01T00:00:00Z", source="two")  # some statements twice owned
            kb.retract(first[0][0][1:-1], timestamp="2026-03-01T00:00:00Z")
        query = _query(form, pats, distinct, groups)
        for point in ({}, {"as_of_tx": 1}, {"valid_at": "2026-02-15T00:00:00Z"}):
            plan, got = _solutions(compiled, query, **point)
            _, want = _solutions(fallback, query, **point)
            assert plan == "sql", query
            assert got == want, (query, point)
    finally:
        compiled.close()
        fallback.close()


@pytest.mark.sparql_functions
def test_plan_says_which_path_ran(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", "nt")
    assert kb.query_result(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}").plan == "sql"
    assert kb.query_result(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p>+ ?o }}").plan == "sql"
    kb.create_graph(EX + "g")
    in_graphs = f"SELECT ?g ?o WHERE {{ GRAPH ?g {{ <{EX}a> <{EX}p>+ ?o }} }}"
    assert kb.query_result(in_graphs).plan == "mixed"  # rdflib per graph, each path in SQL
    assert kb.query_result(f"DESCRIBE <{EX}a>").plan == "rdflib"
    assert kb.query_result("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").plan == "sql"
    cast = "SELECT ?o WHERE { ?s ?p ?o FILTER(<http://www.w3.org/2001/XMLSchema#integer>(?o) > 1) }"
    assert kb.query_result(cast).plan == "mixed"  # the cast runs through rdflib, per row, inside SQL


def test_limit_offset_and_truncation_on_the_compiled_path(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "kb.db"), max_sparql_rows=3) as kb:
        kb.knot("".join(f"<{EX}s{i}> <{EX}p> {i} .\n" for i in range(10)), "turtle")
        capped = kb.query_result(f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }}")
        assert capped.plan == "sql" and len(capped.rows) == 3 and capped.truncated
        within = kb.query_result(f"SELECT ?s WHERE {{ ?s <{EX}p> ?o }} LIMIT 2 OFFSET 1")
        assert len(within.rows) == 2 and not within.truncated


@pytest.mark.parametrize(
    "query",
    [
        f"SELECT ?s WHERE {{ ?s <{EX}unknown> ?o }}",
        f'SELECT ?s WHERE {{ ?s <{EX}p> "abc"^^<http://www.w3.org/2001/XMLSchema#integer> }}',
    ],
)
def test_constants_that_cannot_match_give_no_rows_and_intern_nothing(kb: KnowledgeBase, query: str) -> None:
    kb.knot(f"<{EX}a> <{EX}p> 1 .", "turtle")
    with kb.db.read() as conn:
        before = conn.exec_driver_sql("SELECT COUNT(*) FROM terms").scalar()
    res = kb.query_result(query)
    assert res.plan == "sql" and res.rows == []
    with kb.db.read() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM terms").scalar() == before


STRINGS = (
    f'<{EX}a> <{EX}n> "hello Student12 x" .\n<{EX}b> <{EX}n> "Student12"@en .\n'
    f'<{EX}c> <{EX}n> "nope" .\n<{EX}d> <{EX}n> "ünïcode Stü" .\n<{EX}e> <{EX}n> 12 .\n<{EX}f> <{EX}n> <{EX}c> .'
)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ('CONTAINS(?n, "Student12")', "ab"),
        ('STRSTARTS(?n, "hello")', "a"),
        ('STRENDS(?n, "Stü")', "d"),
        ('STRSTARTS(?n, "ünï")', "d"),
        ('CONTAINS(?n, "")', "abcd"),
        ('!CONTAINS(?n, "x")', "bcd"),  # 12 and an IRI are type errors, not false
        ('CONTAINS(?n, "Student12"@en)', "b"),  # a tagged needle takes the general path
    ],
)
def test_string_filters_on_the_compiled_path(tmp_path: Path, condition: str, expected: str) -> None:
    query = f"SELECT ?s WHERE {{ ?s <{EX}n> ?n FILTER({condition}) }} ORDER BY ?s"
    for compiled in (True, False):
        with quipu.open(store_location(tmp_path, "kb.db"), sparql_compiler=compiled) as kb:
            if compiled:
                kb.knot(STRINGS, "turtle")
            result = kb.query_result(query)
            assert "".join(str(row["s"])[-1] for row in result.rows) == expected, (compiled, condition)
            assert result.plan == ("sql" if compiled else "rdflib")


@pytest.mark.sparql_functions
def test_parts_that_compile_run_as_sql_inside_rdflib_evaluation(tmp_path: Path) -> None:
    data = f'<{EX}a> <{EX}p> <{EX}b> .\n<{EX}b> <{EX}p> <{EX}c> .\n<{EX}a> <{EX}name> "A" .'
    queries = [
        # IRI() has no SQL form, so the BIND runs in rdflib; its BGP is one SQL statement
        f'SELECT ?s ?x WHERE {{ ?s <{EX}name> ?n . ?s <{EX}p> ?o BIND(IRI(CONCAT(STR(?o), "#x")) AS ?x) }}',
        # a path under GRAPH ?g is evaluated per graph by rdflib, each graph's path in SQL
        f"SELECT ?g ?o WHERE {{ GRAPH ?g {{ <{EX}a> <{EX}p>+ ?o }} }}",
    ]
    answers: dict[bool, list[list[dict[str, Node]]]] = {}
    for compiled in (True, False):
        with quipu.open(store_location(tmp_path, "kb.db"), sparql_compiler=compiled) as kb:
            if compiled:
                kb.create_graph(EX + "g")
                kb.knot(data, "nt")
                kb.knot(data, "nt", graph=EX + "g")
            results = [kb.query_result(q) for q in queries]
            assert [r.plan for r in results] == (["mixed", "mixed"] if compiled else ["rdflib", "rdflib"])
            answers[compiled] = [sorted(r.rows, key=str) for r in results]
    assert answers[True] == answers[False]
    assert answers[True][0] == [{"s": URIRef(EX + "a"), "x": URIRef(EX + "b#x")}]
    assert [row["o"] for row in answers[True][1]] == [URIRef(EX + "b"), URIRef(EX + "c")]


def test_the_sub_plan_hook_leaves_other_rdflib_queries_alone(kb: KnowledgeBase) -> None:
    from rdflib import Graph

    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", "nt")
    kb.query_result(
        f'SELECT ?x WHERE {{ ?s <{EX}p> ?o BIND(IRI(CONCAT(STR(?o), "x")) AS ?x) }}'
    )  # installs it
    plain = Graph()
    plain.add((URIRef(EX + "a"), URIRef(EX + "p"), URIRef(EX + "b")))
    rows = list(plain.query(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"))
    assert [row[0] for row in rows] == [URIRef(EX + "b")]  # type: ignore[index]


def test_comparisons_with_a_never_bound_variable_are_errors(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}s> <{EX}p> <{EX}s> .", "nt")
    for condition, rows in (
        ("?a = ?a", 0),
        ("!(?a = ?a)", 0),
        ("sameTerm(?a, ?b)", 0),
        ("?a = ?a || true", 1),
    ):
        result = kb.query_result(f"SELECT ?b WHERE {{ ?b <{EX}p> ?b FILTER({condition}) }}")
        assert result.plan == "sql"
        assert len(result.rows) == rows, condition
