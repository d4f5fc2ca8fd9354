"""Query templates (quipu.sparql.templates): queries that differ only in their IRIs share one
parse and one plan, with the IRIs' ids bound in, and answer exactly as a fresh compilation would.

Each shape is run with several sets of IRIs in a row, so that all but the first go through the
template, and each answer is compared with rdflib's evaluator over the same store.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.sparql import engine, templates
from quipu.sparql.engine import QueryResult, run_query
from quipu.store.views import TemporalView
from tests.backends import store_location

EX = "http://ex.org/"
P, Q, G = EX + "p", EX + "q", EX + "g"
NEVER = EX + "never-stored"


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    store = quipu.open(store_location(tmp_path_factory.mktemp("templates")))
    store.knot(
        "\n".join(
            f'<{EX}s{i}> <{P}> <{EX}s{(i + 1) % 4}> ; <{Q}> {i} ; <{EX}name> "s{i}" .' for i in range(4)
        )
        + f"\n<{EX}s0> <{P}> <{EX}s2> ."
    )
    store.create_graph(G)
    store.knot(f"<{EX}s3> <{Q}> <{EX}s1> .", graph=G)
    yield store
    store.close()


def _answer(result: QueryResult) -> Any:
    if result.form == "ASK":
        return result.boolean
    if result.form == "CONSTRUCT":
        return sorted(map(repr, result.triples))
    return result.variables, sorted(map(repr, result.table))


SHAPES = [
    "SELECT ?p ?o WHERE {{ <{a}> ?p ?o }}",
    "SELECT ?s WHERE {{ ?s <{p}> <{a}> }}",
    "ASK {{ <{a}> <{p}> <{b}> }}",
    "SELECT ?o WHERE {{ <{a}> <{p}> ?o . ?o <{p}> ?z FILTER(?z != <{b}>) }}",
    "SELECT ?s ?x WHERE {{ ?s <{p}> ?o BIND(<{a}> AS ?x) FILTER(?o = <{b}>) }}",
    "SELECT ?o WHERE {{ <{a}> <{p}>+ ?o }}",
    "SELECT ?s ?o WHERE {{ VALUES ?s {{ <{a}> <{b}> }} ?s <{q}> ?o }}",
    "SELECT ?s WHERE {{ ?s ?p ?o FILTER(STR(?s) = STR(<{a}>)) }}",
    "SELECT ?s ?o WHERE {{ GRAPH <{g}> {{ ?s ?p ?o }} }}",
    "CONSTRUCT {{ <{a}> <{p}> ?o }} WHERE {{ <{a}> <{p}> ?o }}",
    "SELECT ?s WHERE {{ ?s <{p}> ?o }} ORDER BY DESC(?s) LIMIT 2",
    "SELECT (COUNT(*) AS ?n) WHERE {{ <{a}> ?p ?o }}",
    'SELECT ?n WHERE {{ <{a}> <{EX}name> ?n FILTER(?n != "s1") }}',
]
CHOICES = [(0, 1), (1, 2), (2, 0), (3, 3), (0, 0), (None, 1), (1, None)]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_iri_choice_answers_as_rdflib_does(kb: KnowledgeBase, shape: str) -> None:
    for a, b in CHOICES:
        iris = {
            "a": NEVER if a is None else f"{EX}s{a}",
            "b": NEVER if b is None else f"{EX}s{b}",
            "p": P,
            "q": Q,
            "g": G,
            "EX": EX,
        }
        text = shape.format(**iris)
        fast = run_query(kb.db, text)
        assert _answer(fast) == _answer(run_query(kb.db, text, compiled=False)), text


def test_a_new_iri_reuses_the_parse_and_the_plan(kb: KnowledgeBase) -> None:
    shape = "SELECT ?p ?o WHERE {{ <{}> ?p ?o . ?o ?p2 <{}> }}"
    first = run_query(kb.db, shape.format(EX + "s0", EX + "s2"))
    parsed = engine.prepare.cache_info().misses
    later = run_query(kb.db, shape.format(EX + "s1", EX + "s3"))
    assert engine.prepare.cache_info().misses == parsed  # nothing parsed for the new text
    assert _answer(later) == _answer(run_query(kb.db, shape.format(EX + "s1", EX + "s3"), compiled=False))
    assert [str(row["o"]) for row in later.rows] == [EX + "s2"]
    assert [str(row["o"]) for row in first.rows] == [EX + "s1"]


def test_split_leaves_prologue_from_datatypes_strings_and_comments_alone() -> None:
    text = (
        "PREFIX ex: <http://ex/> SELECT * FROM <http://ex/g> FROM NAMED <http://ex/h> WHERE {\n"
        ' ?s <http://ex/p> "x"^^<http://ex/dt> . <http://ex/p> ?q "<http://in/string>" # <http://c/>\n'
        ' FILTER(?o != """a " <http://long/>""") <http://ex/p> ?r <http://ex/a#b> }'
    )
    split = templates.split(text)
    assert split is not None
    assert split.iris == ("http://ex/p", "http://ex/a#b")
    assert split.text == text.replace("<http://ex/p>", f"<{templates.PLACEHOLDER}0>").replace(
        "<http://ex/a#b>", f"<{templates.PLACEHOLDER}1>"
    ).replace(f'"x"^^<{templates.PLACEHOLDER}0>', '"x"^^<http://ex/dt>')
    assert templates.split("SELECT * WHERE { ?s ?p ?o }") is None
    assert templates.split(f"SELECT * WHERE {{ <{templates.PLACEHOLDER}0> ?p ?o }}") is None


def test_a_template_whose_answers_hold_the_iri_text_is_refused(kb: KnowledgeBase) -> None:
    # A CONSTRUCT template keeps its constant IRIs as text: the check must refuse to reuse that
    # plan for another IRI, and the query is answered the ordinary way.
    text = f"CONSTRUCT {{ <{EX}s1> <{Q}> ?o }} WHERE {{ <{EX}s1> <{P}> ?o }}"
    split = templates.split(text)
    assert split is not None
    view = TemporalView.at(as_of_tx=None, valid_at=None).with_graphs(frozenset({0}))
    with kb.db.read() as conn:
        main = engine.prepare(split.text).algebra
        assert engine._check_template(kb.db, conn, split, (None, view, None, None), main) is None
        lookup = templates.split(f"SELECT ?o WHERE {{ <{EX}s1> <{P}> ?o }}")
        assert lookup is not None
        main = engine.prepare(lookup.text).algebra
        checked = engine._check_template(kb.db, conn, lookup, (None, view, None, None), main)
    assert checked is not None and {k for k, _ in checked.slots.values()} == {0, 1}
    assert _answer(run_query(kb.db, text)) == _answer(run_query(kb.db, text, compiled=False))
