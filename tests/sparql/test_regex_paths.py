"""REGEX and REPLACE compile on both backends. On PostgreSQL only patterns in the subset where its
regexes provably agree with Python's (quipu/store/pg_regex.py) run in SQL; the rest still get
their answer, from rdflib. Either way the rows are the same as SQLite's."""

from __future__ import annotations

import pytest

from quipu.api import KnowledgeBase
from tests.backends import on_postgres

DATA = '<http://ex.org/a> <http://ex.org/n> "Student12 here" .\n<http://ex.org/b> <http://ex.org/n> "other\\nline" .\n'
SUBSET = [
    ('SELECT ?s WHERE { ?s ?p ?n FILTER(REGEX(?n, "^Stu.*12")) }', {"http://ex.org/a"}),
    ('SELECT ?s WHERE { ?s ?p ?n FILTER(REGEX(?n, "line$")) }', {"http://ex.org/b"}),
    ('SELECT ?s WHERE { ?s ?p ?n FILTER(REGEX(?n, "r.l", "s")) }', {"http://ex.org/b"}),
    ('SELECT ?s WHERE { ?s ?p ?n FILTER(!REGEX(?n, "r.l")) }', {"http://ex.org/a", "http://ex.org/b"}),
]


@pytest.fixture
def loaded(kb: KnowledgeBase) -> KnowledgeBase:
    kb.knot(DATA, "nt")
    return kb


@pytest.mark.parametrize(("query", "subjects"), SUBSET)
def test_a_pattern_of_the_shared_subset_runs_as_sql(
    loaded: KnowledgeBase, query: str, subjects: set[str]
) -> None:
    result = loaded.query_result(query)
    assert result.plan == "sql"
    assert {str(row["s"]) for row in result.rows} == subjects


def test_replace_of_the_shared_subset_runs_as_sql(loaded: KnowledgeBase) -> None:
    result = loaded.query_result('SELECT ?r WHERE { ?s ?p ?n BIND(REPLACE(?n, "e(r)", "[$1]") AS ?r) }')
    assert result.plan == "sql"
    assert sorted(str(row["r"]) for row in result.rows) == ["Student12 h[r]e", "oth[r]\nline"]


def test_a_pattern_outside_it_is_answered_by_rdflib_on_postgresql_only(loaded: KnowledgeBase) -> None:
    result = loaded.query_result('SELECT ?s WHERE { ?s ?p ?n FILTER(REGEX(?n, "\\\\bline\\\\b")) }')
    assert result.plan == ("mixed" if on_postgres() else "sql")
    assert {str(row["s"]) for row in result.rows} == {"http://ex.org/b"}
