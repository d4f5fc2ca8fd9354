"""Property tests (hypothesis) for the store's two central promises.

1. Ingest then export round-trips any graph: the N-Triples and Turtle exports of a store loaded
   from a generated document are isomorphic to the generated graph.
2. Retraction is logical: a statement asserted with ``valid_from`` T1 and retracted at T2 > T1
   is still visible to a read at any valid instant in [T1, T2), and not to a current read.

Literal lexical forms are generated in the store's canonical form where the store canonicalises
(xsd:integer → decimal digits without leading zeros or '+', xsd:double → Python ``repr`` with an
upper-case ``E``, xsd:boolean → ``true``/``false``); every other lexical form (plain strings,
language-tagged strings, custom datatypes) must survive byte for byte.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rdflib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.compare import isomorphic, to_isomorphic
from rdflib.term import Node

import quipu
from quipu.api import KnowledgeBase

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
I64_MIN, I64_MAX = -(2**63), 2**63 - 1

PROPERTY_SETTINGS = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- stores ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty store already migrated to head: copying it is far cheaper than migrating."""
    path = tmp_path_factory.mktemp("template") / "empty.db"
    quipu.open(str(path)).close()
    return path


@contextmanager
def fresh_store(template: Path) -> Iterator[KnowledgeBase]:
    """A new, empty store per hypothesis example (function fixtures do not reset per example)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kb.db"
        shutil.copyfile(template, path)
        kb = quipu.open(str(path), synchronous="OFF")
        try:
            yield kb
        finally:
            kb.close()


# -- generated graphs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Obj:
    """One object term: its N-Triples spelling, its rdflib term and its DM §2.1 JSON form."""

    nt: str
    term: Node
    json: Any


Triple = tuple[str, str, Obj]  # subject N-Triples term, predicate IRI, object

SUBJECT_NAMES = ["a", "b", "c", "d", "s/1", "s#x"]
PREDICATE_NAMES = ["p", "q", "r"]
BNODE_LABELS = ["x", "y", "z1", "n_2"]

# Characters that need care in N-Triples/Turtle strings, plus arbitrary Unicode (no surrogates,
# which cannot be UTF-8 encoded).
TRICKY = "\"\\\n\r\t\b\f'<>@^_:# \x00\x01\x7f\u00e9\u2603\U0001f600"
text = st.text(
    alphabet=st.one_of(st.sampled_from(TRICKY), st.characters(exclude_categories=["Cs"])),
    max_size=12,
)
_ECHAR = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r"}
_OPTIONAL_ECHAR = {"\t": "\\t", "\b": "\\b", "\f": "\\f", "'": "\\'"}


def nt_string(value: str, style: int) -> str:
    """``value`` as an N-Triples string literal; ``style`` picks how much is escaped.

    0: only what must be escaped; 1: also the optional ECHARs; 2: additionally every non-ASCII
    or control character as ``\\uXXXX`` / ``\\UXXXXXXXX``.
    """
    out = []
    for ch in value:
        if ch in _ECHAR:
            out.append(_ECHAR[ch])
        elif style >= 1 and ch in _OPTIONAL_ECHAR:
            out.append(_OPTIONAL_ECHAR[ch])
        elif style >= 2 and (ord(ch) < 0x20 or ord(ch) > 0x7E):
            out.append(f"\\u{ord(ch):04X}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def double_lexical(x: float) -> str:
    return repr(x).replace("e+", "E").replace("e", "E")


@st.composite
def literals(draw: st.DrawFn) -> Obj:
    style = draw(st.integers(0, 2))
    kind = draw(st.sampled_from(["str", "lang", "int", "double", "bool", "custom"]))
    if kind == "str":
        s = draw(text)
        return Obj(nt_string(s, style), Literal(s), {"str": s})
    if kind == "lang":
        s = draw(text)
        tag = draw(st.from_regex(r"[a-z]{2,3}(-([a-zA-Z]{2}|[0-9]{3}))?", fullmatch=True))
        # The store lower-cases language tags (RDF 1.1 tags are case-insensitive) on every path,
        # so the JSON form with the tag as spelled still matches what was ingested.
        return Obj(f"{nt_string(s, style)}@{tag}", Literal(s, lang=tag.lower()), {"value": s, "lang": tag})
    if kind == "int":
        n = draw(st.integers(I64_MIN, I64_MAX))
        lex, dt = str(n), XSD + "integer"
    elif kind == "double":
        lex, dt = double_lexical(draw(st.floats(allow_nan=False, allow_infinity=False))), XSD + "double"
    elif kind == "bool":
        lex, dt = draw(st.sampled_from(["true", "false"])), XSD + "boolean"
    else:
        lex, dt = draw(text), EX + "dt#" + draw(st.sampled_from(["a", "b-c", "D"]))
    return Obj(
        f"{nt_string(lex, style)}^^<{dt}>", Literal(lex, datatype=URIRef(dt)), {"value": lex, "datatype": dt}
    )


def iri_obj(name: str) -> Obj:
    return Obj(f"<{EX}{name}>", URIRef(EX + name), {"iri": EX + name})


def bnode_obj(label: str) -> Obj:
    return Obj(f"_:{label}", BNode(label), None)


iris = st.sampled_from(SUBJECT_NAMES).map(iri_obj)
bnodes = st.sampled_from(BNODE_LABELS).map(bnode_obj)
predicates = st.sampled_from(PREDICATE_NAMES).map(lambda n: EX + n)


def triples(*, blank_nodes: bool, min_size: int = 0) -> st.SearchStrategy[list[Triple]]:
    subjects = st.one_of(iris, bnodes) if blank_nodes else iris
    objects = st.one_of(iris, bnodes, literals()) if blank_nodes else st.one_of(iris, literals())
    triple = st.tuples(subjects.map(lambda o: o.nt), predicates, objects)
    return st.lists(triple, min_size=min_size, max_size=12)


def subject_term(nt: str) -> Node:
    return BNode(nt[2:]) if nt.startswith("_:") else URIRef(nt[1:-1])


def document(ts: list[Triple]) -> str:
    return "".join(f"{s} <{p}> {o.nt} .\n" for s, p, o in ts)


def expected_graph(ts: list[Triple]) -> Graph:
    g = Graph()
    for s, p, o in ts:
        g.add((subject_term(s), URIRef(p), o.term))
    return g


def parsed(data: str, fmt: str) -> Graph:
    g = Graph()
    g.parse(data=data, format=fmt)
    return g


def assert_isomorphic(actual: Graph, expected: Graph) -> None:
    if not isomorphic(actual, expected):
        a, e = to_isomorphic(actual), to_isomorphic(expected)
        only_a = sorted(" ".join(t.n3() for t in triple) for triple in a - e)
        only_e = sorted(" ".join(t.n3() for t in triple) for triple in e - a)
        pytest.fail(f"graphs differ\nonly in actual: {only_a}\nonly in expected: {only_e}")


# -- 1. round trip -------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(ts=triples(blank_nodes=False))
def test_ingest_export_round_trip(template: Path, ts: list[Triple]) -> None:
    expected = expected_graph(ts)
    doc = document(ts)
    with fresh_store(template) as kb:
        result = kb.knot(doc, "nt", valid_from="2026-01-01T00:00:00Z")
        assert result.count == len(expected)
        nt = kb.export("ntriples")
        turtle = kb.export("turtle")
        # Deterministic, one sorted unique line per statement.
        assert nt == "" or nt.endswith(" .\n")
        lines = nt.split(" .\n")[:-1] if nt else []  # raw control characters are not line breaks
        assert lines == sorted(set(lines))
        assert len(lines) == len(expected)
        assert kb.export("ntriples") == nt
        assert_isomorphic(parsed(nt, "nt"), expected)
        assert_isomorphic(parsed(turtle, "turtle"), expected)
        assert kb.stats()["facts"] == len(expected)
        # Feeding the export back under the same source is a no-op for the facts (DM §5.2).
        again = kb.knot(nt, "nt", valid_from="2026-02-01T00:00:00Z")
        assert again.claims == 0
        assert kb.export("ntriples") == nt


@PROPERTY_SETTINGS
@given(ts=triples(blank_nodes=True))
def test_round_trip_with_blank_nodes(template: Path, ts: list[Triple]) -> None:
    expected = expected_graph(ts)
    with fresh_store(template) as kb:
        kb.knot(document(ts), "nt")
        nt = kb.export("ntriples")
        assert_isomorphic(parsed(nt, "nt"), expected)
        assert_isomorphic(parsed(kb.export("turtle"), "turtle"), expected)


def test_integer_lexical_forms_are_canonicalised(template: Path) -> None:
    """The one deliberate lexical change: Int values come back canonical (DM §2)."""
    with fresh_store(template) as kb:
        kb.knot(
            f'<{EX}a> <{EX}p> "007"^^<{XSD}integer> .\n<{EX}a> <{EX}q> "+5"^^<{XSD}integer> .\n'
            f'<{EX}a> <{EX}r> "1.50"^^<{XSD}decimal> .\n',
            "nt",
        )
        assert kb.export() == (
            f'<{EX}a> <{EX}p> "7"^^<{XSD}integer> .\n'
            f'<{EX}a> <{EX}q> "5"^^<{XSD}integer> .\n'
            f'<{EX}a> <{EX}r> "1.50"^^<{XSD}decimal> .\n'
        )


# -- 2. retraction keeps history ------------------------------------------------------------------

instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2090, 1, 1)).map(
    lambda d: d.replace(microsecond=0, tzinfo=UTC)
)


def z(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


@st.composite
def spelled(draw: st.DrawFn, d: datetime) -> str:
    """The instant ``d`` in UTC, or as local time with an offset and maybe a fraction."""
    if draw(st.booleans()):
        return z(d)
    minutes = draw(st.integers(-14 * 60, 14 * 60))
    local = d + timedelta(minutes=minutes)
    sign = "+" if minutes >= 0 else "-"
    fraction = draw(st.sampled_from(["", ".5", ".999999"]))
    return (
        local.strftime("%Y-%m-%dT%H:%M:%S")
        + fraction
        + f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    )


# (triples, index of the statement to retract, retract by value?, T1, Tm, T2, T1 and T2 as sent)
RetractionCase = tuple[list[Triple], int, bool, datetime, datetime, datetime, str, str]


@st.composite
def retraction_cases(draw: st.DrawFn) -> RetractionCase:
    ts = draw(triples(blank_nodes=False, min_size=1))
    index = draw(st.integers(0, len(ts) - 1))
    by_value = draw(st.booleans())
    t1, t2 = sorted(draw(st.lists(instants, min_size=2, max_size=2, unique=True)))
    tm = draw(st.datetimes(min_value=t1.replace(tzinfo=None), max_value=t2.replace(tzinfo=None)))
    tm = tm.replace(microsecond=0, tzinfo=UTC)
    if tm == t2:
        tm = t1
    return ts, index, by_value, t1, tm, t2, draw(spelled(t1)), draw(spelled(t2))


def canon(node: Node) -> Node:
    """rdflib's normal form of a term: the store builds literals without rdflib's lexical
    normalisation ("1E16"^^xsd:double stays "1E16"), while ``Literal()`` here and rdflib's parsers
    normalise ("1e+16"), so store terms are re-built before being compared."""
    if isinstance(node, Literal):
        return Literal(str(node), lang=node.language, datatype=node.datatype)
    return node


def objects_of(kb: KnowledgeBase, s: str, p: str, **read_point: Any) -> set[Node]:
    rows = kb.query(f"SELECT ?o WHERE {{ {s} <{p}> ?o }}", **read_point)
    assert isinstance(rows, list)
    return {canon(row["o"]) for row in rows}


@PROPERTY_SETTINGS
@given(case=retraction_cases())
def test_retraction_keeps_earlier_valid_time(template: Path, case: RetractionCase) -> None:
    ts, index, by_value, t1, tm, t2, t1_text, t2_text = case
    s, p, o = ts[index]
    subject, predicate = subject_term(s), URIRef(p)
    with fresh_store(template) as kb:
        knot = kb.knot(document(ts), "nt", valid_from=t1_text)
        assert knot.valid_from == z(t1)
        before = objects_of(kb, s, p)
        assert o.term in before

        entity = s[1:-1]
        if by_value:
            result = kb.retract(entity, p, o.json, timestamp=t2_text)
            gone = {o.term}
        else:
            result = kb.retract(entity, p, timestamp=t2_text)
            gone = before
        assert result.retracted == len(gone)
        assert result.tx_id == knot.tx_id + 1

        # Current read: the retracted statements are gone, everything else stays.
        assert objects_of(kb, s, p) == before - gone
        expected = expected_graph(ts)
        for x in gone:
            expected.remove((subject, predicate, x))
        assert_isomorphic(parsed(kb.export(), "nt"), expected)
        # Valid-time reads inside [T1, T2) still show them; at T2 (the closure stamp) they are gone.
        assert objects_of(kb, s, p, valid_at=z(tm)) == before
        assert objects_of(kb, s, p, valid_at=z(t1)) == before
        assert objects_of(kb, s, p, valid_at=z(t2)) == before - gone
        assert objects_of(kb, s, p, valid_at=z(t1 - timedelta(seconds=1))) == set()
        # Transaction-time reads: visible as of the asserting tx, not after the retracting one.
        assert objects_of(kb, s, p, as_of_tx=knot.tx_id) == before
        assert objects_of(kb, s, p, as_of_tx=result.tx_id) == before - gone
        assert objects_of(kb, s, p, as_of_tx=knot.tx_id, valid_at=z(t2)) == before
        # The fact log shows the closed claims with their closure stamp and transaction.
        closed = [
            f
            for f in kb.unravel(tx=knot.tx_id)["facts"]
            if f["entity"] == entity and f["predicate"] == p and f["retracted_tx"] is not None
        ]
        assert len(closed) == len(gone)
        assert all(f["valid_to"] == z(t2) and f["retracted_tx"] == result.tx_id for f in closed)
        assert all(f["valid_from"] == z(t1) for f in closed)


def test_rdflib_literal_normalisation_is_on() -> None:
    """The store must not flip rdflib's global switch for its callers (DM §2 rule 3 is local)."""
    with quipu.open(":memory:") as kb:
        kb.knot(f'<{EX}a> <{EX}p> "1.50"^^<{XSD}decimal> .', "nt")
        kb.query("SELECT * WHERE { ?s ?p ?o }")
    assert rdflib.NORMALIZE_LITERALS is True


# -- language-tag case: ingestion and the JSON surface must agree (DM §2 rule 4) -------------------
# (Regression tests: the round-trip property first failed on this.)


def test_json_lang_value_retracts_an_ingested_mixed_case_tag(template: Path) -> None:
    with fresh_store(template) as kb:
        kb.knot(f'<{EX}a> <{EX}p> "x"@en-US .', "nt")
        result = kb.retract(EX + "a", EX + "p", {"value": "x", "lang": "en-US"})
        assert result.retracted == 1


def test_set_and_knot_of_the_same_lang_literal_are_one_statement(template: Path) -> None:
    with fresh_store(template) as kb:
        kb.knot(f'<{EX}a> <{EX}name> "first" .', "nt")
        kb.set(EX + "a", EX + "name", {"value": "y", "lang": "en-US"})
        kb.knot(f'<{EX}a> <{EX}name> "y"@en-US .', "nt")
        assert kb.stats()["facts"] == 1
