"""``match_page``: triple patterns pushed into one SQL statement per page, in keyset pages."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, ResultTooLarge
from quipu.store import budget as budgets
from quipu.store.graph_scope import LabelFloorRefused
from quipu.store.pattern_reads import ANY_GRAPH, Match, Term, match_count, match_page, match_stream
from quipu.store.schema import META_IRI, ROOT_IRI
from quipu.store.views import TemporalView
from tests.backends import migrated_location

from . import EX, XSD, count, sql

A, C, B, D = EX + "a", EX + "c", EX + "b", EX + "d"
P, N, L, S, F, DBL = EX + "p", EX + "n", EX + "l", EX + "s", EX + "f", EX + "dbl"
G, G2 = EX + "g", EX + "g2"
T1, T2, T3, T4 = (
    "2026-01-01T00:00:00Z",
    "2026-02-01T00:00:00Z",
    "2026-03-01T00:00:00Z",
    "2026-04-01T00:00:00Z",
)
FUTURE = "2100-01-01T00:00:00Z"

IRI_B: Term = ("iri", B)
IRI_D: Term = ("iri", D)
INT_42: Term = ("literal", "42", XSD + "integer", None)
HI_EN: Term = ("literal", "hi", None, "en")
PLAIN: Term = ("literal", "plain", None, None)
TRUE: Term = ("literal", "true", XSD + "boolean", None)
DOUBLE: Term = ("literal", "1.5", XSD + "double", None)

ROOT_DOC = f"""
<{A}> <{P}> <{B}> .
<{A}> <{N}> "42"^^<{XSD}integer> .
<{A}> <{L}> "hi"@en .
<{A}> <{S}> "plain" .
<{A}> <{F}> "true"^^<{XSD}boolean> .
<{A}> <{DBL}> "1.5"^^<{XSD}double> .
<{C}> <{P}> <{B}> .
<{C}> <{N}> "+042"^^<{XSD}integer> .
<{C}> <{S}> "plain" .
"""
G_DOC = f"""
<{A}> <{P}> <{D}> .
<{A}> <{S}> "plain" .
"""

Row = tuple[str, str, Term, str, int]  # (s, p, o, g, tx): a Match without its cursor


def rows(matches: list[Match]) -> list[Row]:
    return [(m.s, m.p, m.o, m.g, m.tx) for m in matches]


def everything(kb: KnowledgeBase, *, limit: int = 3, **kw: Any) -> list[Match]:
    """Every page of a pattern (small pages by default, so paging is exercised too)."""
    out: list[Match] = []
    after = 0
    while True:
        page, nxt = match_page(kb.db, after=after, limit=limit, **{"s": None, "p": None, "o": None, **kw})
        out += page
        if nxt is None:
            return out
        assert page and nxt == page[-1].cursor
        after = nxt


def check_cursors(kb: KnowledgeBase, matches: list[Match]) -> None:
    """Cursors ascend, and each is the id of a fact row of its statement's subject, predicate,
    graph and transaction."""
    cursors = [m.cursor for m in matches]
    assert cursors == sorted(set(cursors))
    for m in matches:
        (row,) = sql(
            kb,
            "SELECT s.iri, p.iri, f.tx, f.g FROM facts f JOIN terms s ON s.id = f.e "
            "JOIN terms p ON p.id = f.a WHERE f.id = ?",
            m.cursor,
        )
        assert row[:3] == (m.s, m.p, m.tx)
        assert (
            ROOT_IRI if row[3] == 0 else sql(kb, "SELECT iri FROM terms WHERE id = ?", row[3])[0][0]
        ) == m.g


@pytest.fixture
def loaded(kb: KnowledgeBase) -> tuple[KnowledgeBase, int, int]:
    """ROOT_DOC in ROOT (tx r), G_DOC in the named graph G (tx g)."""
    r = kb.knot(ROOT_DOC, "nt", timestamp=T1, source="one").tx_id
    kb.create_graph(G)
    g = kb.knot(G_DOC, "nt", timestamp=T1, graph=G).tx_id
    return kb, r, g


def root_rows(r: int) -> set[Row]:
    return {
        (A, P, IRI_B, ROOT_IRI, r),
        (A, N, INT_42, ROOT_IRI, r),
        (A, L, HI_EN, ROOT_IRI, r),
        (A, S, PLAIN, ROOT_IRI, r),
        (A, F, TRUE, ROOT_IRI, r),
        (A, DBL, DOUBLE, ROOT_IRI, r),
        (C, P, IRI_B, ROOT_IRI, r),
        (C, N, INT_42, ROOT_IRI, r),  # "+042" is the integer 42: one canonical value
        (C, S, PLAIN, ROOT_IRI, r),
    }


def g_rows(g: int) -> set[Row]:
    return {(A, P, IRI_D, G, g), (A, S, PLAIN, G, g)}


VIEWS = {
    "current": TemporalView(),
    "as_of_head": TemporalView(as_of_tx=10),
    "valid_at": TemporalView(valid_at=FUTURE),
    "both": TemporalView(as_of_tx=10, valid_at=FUTURE),
}


@pytest.mark.parametrize("view", list(VIEWS.values()), ids=list(VIEWS))
def test_unbound_pattern_reads_each_graph_scope_exactly(
    loaded: tuple[KnowledgeBase, int, int], view: TemporalView
) -> None:
    kb, r, g = loaded
    root = everything(kb, view=view)
    assert sorted(rows(root), key=repr) == sorted(root_rows(r), key=repr)
    named = everything(kb, graph=G, view=view)
    assert sorted(rows(named), key=repr) == sorted(g_rows(g), key=repr)
    both = everything(kb, graph=ANY_GRAPH, view=view)
    assert sorted(rows(both), key=repr) == sorted(root_rows(r) | g_rows(g), key=repr)
    assert both == sorted(root + named, key=lambda m: m.cursor)
    check_cursors(kb, both)
    assert everything(kb, graph=ROOT_IRI, view=view) == root
    assert everything(kb, graph="", view=view) == root


SUBJECTS = [None, A, C]
PREDICATES = [None, P, N, L, S, F, DBL]
OBJECTS: list[Term | None] = [None, IRI_B, IRI_D, INT_42, HI_EN, PLAIN, TRUE, DOUBLE]


@pytest.mark.parametrize("graph", [None, G, ANY_GRAPH], ids=["root", "named", "any"])
@pytest.mark.parametrize("view", [VIEWS["current"], VIEWS["both"]], ids=["current", "past"])
def test_every_combination_of_bound_terms(
    loaded: tuple[KnowledgeBase, int, int], graph: object, view: TemporalView
) -> None:
    kb, _r, _g = loaded
    full, nxt = match_page(kb.db, s=None, p=None, o=None, graph=graph, view=view)
    assert nxt is None and full
    seen = 0
    for s, p, o in itertools.product(SUBJECTS, PREDICATES, OBJECTS):
        expected = [m for m in full if s in (None, m.s) and p in (None, m.p) and o in (None, m.o)]
        assert match_page(kb.db, s=s, p=p, o=o, graph=graph, view=view) == (expected, None), (s, p, o)
        seen += bool(expected)
    # combinations that match something, counted by hand: distinct projections of the statements
    assert seen == (52 if graph is ANY_GRAPH else 14 if graph == G else 48)


def test_literal_forms_match_as_ingestion_encodes_them(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded

    def subjects(o: Term) -> list[str]:
        page, nxt = match_page(kb.db, s=None, p=None, o=o)
        assert nxt is None
        return [m.s for m in page]

    assert subjects(("literal", "+0042", XSD + "integer", None)) == [A, C]  # canonical integer
    assert subjects(("literal", "hi", None, "EN")) == [A]  # tags compare case-insensitively
    assert subjects(("literal", "hi", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString", "en")) == [A]
    assert subjects(("literal", "plain", XSD + "string", None)) == [A, C]  # xsd:string is plain
    assert subjects(("literal", "1", XSD + "boolean", None)) == [A]  # "1" is true
    assert subjects(("literal", "1.5", XSD + "double", None)) == [A]
    assert subjects(("literal", "hi", None, None)) == []  # a plain string is not a language string
    assert subjects(("literal", "42", None, None)) == []  # nor an integer
    assert subjects(("literal", "abc", XSD + "integer", None)) == []  # ill-formed: nothing equals it
    assert subjects(("iri", "http://example.org/never-seen")) == []


def test_other_literal_kinds_come_back_in_canonical_term_form(kb: KnowledgeBase) -> None:
    big = "123456789012345678901234567890"
    tx = kb.knot(
        f'<{A}> <{P}> "{big}"^^<{XSD}integer> .\n'
        f'<{A}> <{P}> "1e3"^^<{XSD}double> .\n'
        f'<{A}> <{P}> "false"^^<{XSD}boolean> .\n'
        f'<{A}> <{P}> "x y"^^<{EX}dt> .\n'
        f'<{A}> <{P}> "-7"^^<{XSD}int> .\n',
        "nt",
    ).tx_id
    page, _ = match_page(kb.db, s=A, p=P, o=None)
    assert sorted(m.o for m in page) == sorted(
        [
            ("literal", big, XSD + "integer", None),
            ("literal", "1e3", XSD + "double", None),  # a non-canonical double keeps its form
            ("literal", "false", XSD + "boolean", None),
            ("literal", "x y", EX + "dt", None),
            ("literal", "-7", XSD + "int", None),
        ]
    )
    assert {m.tx for m in page} == {tx}
    for m in page:  # every object read back matches its own statement again
        assert match_page(kb.db, s=A, p=P, o=m.o) == ([m], None)


def test_blank_nodes_come_back_as_their_stored_keys(kb: KnowledgeBase) -> None:
    kb.knot(f'_:n <{P}> "1" .\n<{A}> <{P}> _:n .', "turtle")
    (obj,), _ = match_page(kb.db, s=A, p=P, o=None)
    assert obj.o[0] == "iri" and isinstance(obj.o[1], str) and obj.o[1].startswith("_:")
    key = obj.o[1]
    (subj,), _ = match_page(kb.db, s=key, p=None, o=None)
    assert (subj.s, subj.p, subj.o) == (key, P, ("literal", "1", None, None))
    assert match_page(kb.db, s=None, p=None, o=("iri", key)) == ([obj], None)


def test_paging_1050_statements_in_pages_of_500(kb: KnowledgeBase) -> None:
    items = EX + "item"
    doc = "".join(f'<{EX}s{i}> <{items}> "{i}" .\n<{EX}s{i}> <{P}> <{B}> .\n' for i in range(1050))
    tx = kb.knot(doc, "nt").tx_id
    pages: list[list[Match]] = []
    cursors: list[int | None] = []
    after = 0
    with statements(kb) as log:
        while True:
            before = len(log)
            page, nxt = match_page(kb.db, s=None, p=items, o=None, after=after, limit=500)
            assert len([q for q in log[before:] if touches_facts(q)]) == 1  # one statement a page
            pages.append(page)
            cursors.append(nxt)
            if nxt is None:
                break
            after = nxt
    assert [len(p) for p in pages] == [500, 500, 50]
    assert cursors == [pages[0][-1].cursor, pages[1][-1].cursor, None]
    got = [m for p in pages for m in p]
    assert [m.cursor for m in got] == sorted({m.cursor for m in got})  # no duplicate, ascending
    assert sorted(int(str(m.o[1])) for m in got) == list(range(1050))  # no gap
    assert {(m.p, m.g, m.tx) for m in got} == {(items, ROOT_IRI, tx)}
    check_cursors(kb, got[:3] + got[-3:])
    # the same walk at a past read point, and the whole store walked unbound (2,100 statements)
    past = TemporalView(as_of_tx=tx)
    walked = everything(kb, p=items, view=past, limit=500)
    assert walked == got
    assert len(everything(kb, limit=500)) == len(everything(kb, graph=ANY_GRAPH, limit=700)) == 2100
    # a last page of exactly ``limit`` rows says it is the last
    first, nxt = match_page(kb.db, s=None, p=items, o=None, limit=525)
    assert nxt == first[-1].cursor
    second, nxt = match_page(kb.db, s=None, p=items, o=None, after=nxt, limit=525)
    assert (len(second), nxt) == (525, None)


def test_a_statement_claimed_twice_comes_once_now_and_in_the_past(kb: KnowledgeBase) -> None:
    one = kb.knot(f"<{A}> <{P}> <{B}> .", "nt", timestamp=T1, source="one").tx_id
    two = kb.knot(f"<{A}> <{P}> <{B}> .", "nt", timestamp=T2, source="two").tx_id
    assert count(kb, "facts") == 2  # two claims of one statement
    claims = [int(x[0]) for x in sql(kb, "SELECT id FROM facts ORDER BY id")]
    first = Match(claims[0], A, P, IRI_B, ROOT_IRI, one)
    for view in (
        TemporalView(),
        TemporalView(as_of_tx=one),
        TemporalView(as_of_tx=two),
        TemporalView(valid_at=T3),
        TemporalView(as_of_tx=two, valid_at=T3),
    ):
        for s, o in ((A, None), (None, IRI_B), (None, None)):
            assert match_page(kb.db, s=s, p=P, o=o, view=view) == ([first], None), view
            assert match_page(kb.db, s=s, p=None, o=o, view=view, graph=ANY_GRAPH) == ([first], None)
    # The first owner lets go: the second claim stands for the statement from then on.
    gone = kb.retract_source("one", "T-1", apply=True, expect=1, timestamp=T3)["tx_id"]
    second = Match(claims[1], A, P, IRI_B, ROOT_IRI, two)
    assert match_page(kb.db, s=A, p=P, o=IRI_B) == ([second], None)
    assert match_page(kb.db, s=A, p=P, o=IRI_B, view=TemporalView(as_of_tx=gone)) == ([second], None)
    assert match_page(kb.db, s=A, p=P, o=IRI_B, view=TemporalView(as_of_tx=two)) == ([first], None)
    assert match_page(kb.db, s=A, p=P, o=IRI_B, view=TemporalView(valid_at=T2)) == ([first], None)
    assert match_page(kb.db, s=A, p=P, o=IRI_B, view=TemporalView(valid_at=T4)) == ([second], None)


def test_valid_time_and_transaction_time_reads(kb: KnowledgeBase) -> None:
    asserted = kb.knot(f'<{A}> <{S}> "x" .', "nt", timestamp=T1).tx_id
    later = kb.knot(f'<{C}> <{S}> "y" .', "nt", timestamp=T2).tx_id
    retracted = kb.retract(A, S, "x", timestamp=T3).tx_id
    x = ("literal", "x", None, None)

    def seen(view: TemporalView) -> list[Row]:
        return rows(match_page(kb.db, s=A, p=S, o=x, view=view)[0])

    hit = [(A, S, x, ROOT_IRI, asserted)]
    assert seen(TemporalView(valid_at=T2)) == hit  # before the retraction
    assert seen(TemporalView(valid_at=T4)) == []  # after it
    assert seen(TemporalView()) == []
    assert seen(TemporalView(as_of_tx=later)) == hit
    assert seen(TemporalView(as_of_tx=retracted)) == []
    assert seen(TemporalView(as_of_tx=retracted, valid_at=T2)) == hit
    # as of a transaction before an assertion, the statement is not there yet
    y = ("literal", "y", None, None)
    assert match_page(kb.db, s=C, p=S, o=y, view=TemporalView(as_of_tx=asserted)) == ([], None)
    assert match_page(kb.db, s=None, p=None, o=None, view=TemporalView(as_of_tx=0)) == ([], None)
    assert rows(match_page(kb.db, s=C, p=None, o=None, view=TemporalView(as_of_tx=later))[0]) == [
        (C, S, y, ROOT_IRI, later)
    ]


def test_unknown_terms_and_graphs_match_nothing_without_a_fact_query(
    loaded: tuple[KnowledgeBase, int, int],
) -> None:
    kb, _r, _g = loaded
    unknown = EX + "never-seen"
    terms_before = count(kb, "terms")
    with statements(kb) as log:
        assert match_page(kb.db, s=unknown, p=None, o=None) == ([], None)
        assert match_page(kb.db, s=None, p=unknown, o=None) == ([], None)
        assert match_page(kb.db, s=A, p=P, o=("iri", unknown)) == ([], None)
        assert match_page(kb.db, s=A, p=None, o=None, graph=unknown) == ([], None)
        assert match_page(kb.db, s=A, p=None, o=None, graph=A) == ([], None)  # a term, not a graph
        assert match_page(kb.db, s=None, p=None, o=("literal", "x", XSD + "integer", None)) == ([], None)
    assert not [q for q in log if touches_facts(q)]
    assert count(kb, "terms") == terms_before  # reads never intern


ODD = [
    EX + "q'uote",
    EX + "paren(x)",
    EX + "a:-b",
    EX + "x),halt(",
    EX + "%27%22%5C",
    "urn:x:'),halt(true",
]


def test_iris_and_literals_with_prolog_and_sql_syntax_are_data(kb: KnowledgeBase) -> None:
    tricky = "a\"b\\c'd :- ),halt( ; DROP TABLE facts; --"
    escaped = tricky.replace("\\", "\\\\").replace('"', '\\"')
    doc = "".join(f'<{iri}> <{iri}> <{iri}> .\n<{iri}> <{P}> "{escaped}" .\n' for iri in ODD)
    tx = kb.knot(doc, "nt").tx_id
    for iri in ODD:
        page, _ = match_page(kb.db, s=iri, p=iri, o=("iri", iri))
        assert rows(page) == [(iri, iri, ("iri", iri), ROOT_IRI, tx)]
        page, _ = match_page(kb.db, s=iri, p=None, o=("literal", tricky, None, None))
        assert rows(page) == [(iri, P, ("literal", tricky, None, None), ROOT_IRI, tx)]
    # IRIs the store cannot hold ('"', '\', spaces) are simply never seen
    for bad in (EX + 'q"x', EX + "b\\x", EX + "a b", "'); DROP TABLE facts; --"):
        assert match_page(kb.db, s=bad, p=None, o=None) == ([], None)
        assert match_page(kb.db, s=None, p=None, o=("iri", bad)) == ([], None)
    assert count(kb, "facts") == 2 * len(ODD)


BAD_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"s": 3}, "s"),
    ({"s": ""}, "s"),
    ({"s": ("iri", A)}, "s"),
    ({"s": "\ud800"}, "s"),
    ({"p": b"x"}, "p"),
    ({"p": ""}, "p"),
    ({"o": A}, "o"),
    ({"o": ["iri", A]}, "o"),
    ({"o": ("iri",)}, "o"),
    ({"o": ("iri", "")}, "o"),
    ({"o": ("iri", A, None)}, "o"),
    ({"o": ("blank", "x")}, "o"),
    ({"o": ("literal", "x")}, "o"),
    ({"o": ("literal", "x", None)}, "o"),
    ({"o": ("literal", None, None, None)}, "o"),
    ({"o": ("literal", "x", None, "")}, "o"),
    ({"o": ("literal", "x", "", None)}, "o"),
    ({"o": ("literal", "x", XSD + "integer", "en")}, "o"),
    ({"o": ("literal", "x", "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString", None)}, "o"),
    ({"o": ("literal", 42, XSD + "integer", None)}, "o"),
    ({"graph": 0}, "graph"),
    ({"graph": object()}, "graph"),
    ({"after": -1}, "after"),
    ({"after": True}, "after"),
    ({"after": "5"}, "after"),
    ({"after": None}, "after"),
    ({"limit": "10"}, "limit"),
    ({"limit": False}, "limit"),
    ({"limit": 2.5}, "limit"),
]


@pytest.mark.parametrize(("args", "field"), BAD_ARGS, ids=[f"{f}-{i}" for i, (_a, f) in enumerate(BAD_ARGS)])
def test_malformed_arguments_are_refused_naming_the_field(
    loaded: tuple[KnowledgeBase, int, int], args: dict[str, Any], field: str
) -> None:
    kb, _r, _g = loaded
    with pytest.raises(InvalidField) as refused:
        match_page(kb.db, **{"s": None, "p": None, "o": None, **args})
    assert refused.value.field == field


def test_limit_is_clamped_and_after_bounded(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded
    one, nxt = match_page(kb.db, s=None, p=None, o=None, limit=0)
    assert len(one) == 1 and nxt == one[0].cursor
    assert len(match_page(kb.db, s=None, p=None, o=None, limit=-5)[0]) == 1
    assert len(match_page(kb.db, s=None, p=None, o=None, limit=10**9)[0]) == 9
    assert match_page(kb.db, s=None, p=None, o=None, after=2**80) == ([], None)


def test_any_graph_leaves_out_the_meta_graph(loaded: tuple[KnowledgeBase, int, int]) -> None:
    from quipu.graphs.labels import label_graph

    kb, r, g = loaded
    label_graph(kb.db, G, timestamp=T1, freshness="fresh")
    assert count(kb, "facts", "g = 1") > 0  # a label is meta-graph facts about the graph
    meta, _ = match_page(kb.db, s=G, p=None, o=None, graph=META_IRI)  # read when named
    assert meta and {(m.s, m.g) for m in meta} == {(G, META_IRI)}
    assert match_page(kb.db, s=G, p=None, o=None, graph=ANY_GRAPH) == ([], None)
    assert sorted(rows(everything(kb, graph=ANY_GRAPH)), key=repr) == sorted(
        root_rows(r) | g_rows(g), key=repr
    )


def test_the_label_floor_applies_to_the_graphs_read(tmp_path: Path) -> None:
    from quipu.config import LabelsSettings
    from quipu.graphs.labels import label_graph

    kb = KnowledgeBase(migrated_location(tmp_path), labels=LabelsSettings(min_freshness="recomputing"))
    try:
        for g in (G, G2):
            kb.create_graph(g)
        r = kb.knot(f"<{A}> <{P}> <{B}> .", "nt").tx_id
        g1 = kb.knot(f"<{A}> <{P}> <{D}> .", "nt", graph=G).tx_id
        kb.knot(f"<{C}> <{P}> <{D}> .", "nt", graph=G2)
        for graph in (ROOT_IRI, G):  # G2 declares no freshness: below the floor
            label_graph(kb.db, graph, timestamp=T1, freshness="fresh")
        got = match_page(kb.db, s=A, p=None, o=None, graph=ANY_GRAPH)
        assert rows(got[0]) == [(A, P, IRI_B, ROOT_IRI, r), (A, P, IRI_D, G, g1)]
        assert match_page(kb.db, s=A, p=P, o=IRI_D, graph=G)[0] == got[0][1:]
        with pytest.raises(LabelFloorRefused, match=re.escape(f"<{G2}>")):
            match_page(kb.db, s=None, p=None, o=None, graph=ANY_GRAPH)
        with pytest.raises(LabelFloorRefused, match=re.escape(f"<{G2}>")):
            match_page(kb.db, s=EX + "nothing-there", p=None, o=None, graph=G2)
        assert match_page(kb.db, s=C, p=None, o=None)[0] == []  # ROOT passes
    finally:
        kb.close()


def test_a_query_budget_counts_the_rows_a_page_returns(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded
    with kb.db.read() as conn, budgets.enforce(kb.db, conn, timeout_ms=None, max_join_rows=100) as budget:
        page, _ = match_page(kb.db, s=A, p=None, o=None)
        assert budget.rows == len(page) == 6
    with (
        kb.db.read() as conn,
        budgets.enforce(kb.db, conn, timeout_ms=None, max_join_rows=3),
        pytest.raises(ResultTooLarge),
    ):
        match_page(kb.db, s=None, p=None, o=None)


def test_one_statement_per_page_joins_the_iris(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded
    for graph, view in itertools.product((None, G, ANY_GRAPH), VIEWS.values()):
        after: int | None = 0
        while after is not None:
            with statements(kb) as log, offsets_of(kb) as offsets:
                page, after = match_page(
                    kb.db, s=A, p=None, o=None, graph=graph, view=view, after=after, limit=2
                )
            (query,) = [q for q in log if touches_facts(q)]
            assert re.search(r"\bterms\b", query)  # the IRIs come in the same statement
            assert "id > " in query and "ORDER BY facts.id" in query  # keyset, not OFFSET
            # SQLAlchemy's SQLite dialect writes "LIMIT ? OFFSET ?" for every LIMIT, bound to 0
            assert "OFFSET" not in query or offsets[-1] == 0
            assert all(m.s == A for m in page)


@pytest.mark.parametrize("graph", [None, G, ANY_GRAPH], ids=["root", "named", "any"])
@pytest.mark.parametrize("view", list(VIEWS.values()), ids=list(VIEWS))
def test_a_stream_is_every_page_from_one_statement(
    loaded: tuple[KnowledgeBase, int, int], graph: object, view: TemporalView
) -> None:
    """match_stream (the logic memory's whole-pattern load) returns exactly what paging
    returns, in the same order, in chunks of the size asked for, from one statement."""
    kb, _r, _g = loaded
    for s, p, o in [
        (None, None, None),
        (A, None, None),
        (None, P, None),
        (None, S, PLAIN),
        (None, N, INT_42),
    ]:
        paged = everything(kb, s=s, p=p, o=o, graph=graph, view=view)
        with statements(kb) as log:
            chunks = list(match_stream(kb.db, s=s, p=p, o=o, graph=graph, view=view, chunk=2))
        assert [m for chunk in chunks for m in chunk] == paged, (s, p, o)
        assert all(len(chunk) == 2 for chunk in chunks[:-1]) and all(chunks)
        fact_queries = [q for q in log if touches_facts(q)]
        assert len(fact_queries) == 1 if paged else len(fact_queries) <= 1
        assert all("LIMIT" not in q for q in fact_queries)


def test_a_stream_ends_its_read_when_closed_early(kb: KnowledgeBase) -> None:
    kb.knot("\n".join(f"<{EX}s{i}> <{P}> <{B}> ." for i in range(50)), "nt")
    stream = match_stream(kb.db, s=None, p=P, o=None, chunk=10)
    first = next(stream)
    assert len(first) == 10
    stream.close()  # the read snapshot is let go: a write can commit and be read at once
    kb.knot(f"<{EX}late> <{P}> <{B}> .", "nt")
    assert len(everything(kb, p=P, limit=500)) == 51


def test_a_stream_of_an_unknown_term_or_refused_literal_runs_no_fact_query(
    loaded: tuple[KnowledgeBase, int, int],
) -> None:
    kb, _r, _g = loaded
    with statements(kb) as log:
        assert list(match_stream(kb.db, s=EX + "nobody", p=None, o=None)) == []
        assert list(match_stream(kb.db, s=None, p=N, o=("literal", "x", XSD + "integer", None))) == []
        assert list(match_stream(kb.db, s=None, p=None, o=None, graph=EX + "no-graph")) == []
    assert not [q for q in log if touches_facts(q)]
    with pytest.raises(InvalidField, match="'s'"):
        list(match_stream(kb.db, s="", p=None, o=None))


def test_a_stream_counts_against_the_query_budget(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded
    with kb.db.read() as conn, budgets.enforce(kb.db, conn, timeout_ms=None, max_join_rows=100) as budget:
        assert sum(len(c) for c in match_stream(kb.db, s=A, p=None, o=None, chunk=4)) == budget.rows == 6
    with (
        kb.db.read() as conn,
        budgets.enforce(kb.db, conn, timeout_ms=None, max_join_rows=3),
        pytest.raises(ResultTooLarge),
    ):
        list(match_stream(kb.db, s=None, p=None, o=None))


# -- statement log -------------------------------------------------------------------------------


def touches_facts(statement: str) -> bool:
    return re.search(r"\bfacts\b", statement) is not None


@contextmanager
def _listening(kb: KnowledgeBase, record: Callable[..., None]) -> Iterator[None]:
    """``record`` sees every statement run through SQLAlchemy on the store's engines."""
    engines = {id(e): e for e in (kb.db.reader, kb.db.writer)}.values()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


@contextmanager
def statements(kb: KnowledgeBase) -> Iterator[list[str]]:
    """The SQL statements run through SQLAlchemy on the store's engines while the block runs."""
    log: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        log.append(statement)

    with _listening(kb, record):
        yield log


@contextmanager
def offsets_of(kb: KnowledgeBase) -> Iterator[list[Any]]:
    """The last positional parameter of each statement with an OFFSET (SQLite's is positional)."""
    log: list[Any] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        if "OFFSET" in statement and isinstance(parameters, tuple | list):
            log.append(parameters[-1])

    with _listening(kb, record):
        yield log


def test_a_reopened_store_reads_the_same_pages(tmp_path: Path) -> None:
    location = migrated_location(tmp_path)
    kb = quipu.open(location)
    try:
        kb.knot(ROOT_DOC, "nt")
        before = everything(kb)
    finally:
        kb.close()
    again = quipu.open(location)  # a fresh term cache: the IRIs come from the statement itself
    try:
        assert everything(again) == before
    finally:
        again.close()


def test_a_count_stops_one_past_its_cap_in_one_statement(loaded: tuple[KnowledgeBase, int, int]) -> None:
    kb, _r, _g = loaded
    for graph, view in itertools.product((None, G, ANY_GRAPH), VIEWS.values()):
        total = len(everything(kb, graph=graph, view=view))
        with statements(kb) as log:
            assert match_count(kb.db, s=None, p=None, o=None, graph=graph, view=view, cap=100) == total
            assert match_count(kb.db, s=None, p=None, o=None, graph=graph, view=view, cap=1) == min(total, 2)
        assert len([q for q in log if touches_facts(q)]) == 2
    assert match_count(kb.db, s=None, p=S, o=PLAIN, cap=100) == 2
    assert match_count(kb.db, s=EX + "nobody", p=None, o=None, cap=100) == 0
    with pytest.raises(InvalidField, match="'cap'"):
        match_count(kb.db, s=None, p=None, o=None, cap=-1)
