"""Every result writer, read back by an independent parser (rdflib's), on nasty terms.

Results are built two ways: ``QueryResult`` objects made directly from cells (every awkward
literal, IRI and blank node at once), and real queries against a store. The expected terms come
from ``cells.to_node``, never from the writers. rdflib normalises literal lexical forms while
parsing ("+5" becomes "5"), so the parsers run with ``rdflib.NORMALIZE_LITERALS`` off and
compare lexical forms exactly; only rdflib's Turtle parser rewrites numbers on its own, so the
Turtle round trip compares numeric objects by value and a golden text pins the exact form.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
import rdflib
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.compare import isomorphic
from rdflib.query import Result
from rdflib.term import Node, Variable

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import BadRequest, UnknownFormat
from quipu.sparql import results
from quipu.sparql.cells import BNODE, LITERAL, URI, Cell, to_node
from quipu.sparql.engine import QueryResult
from tests.backends import store_location

XSD = "http://www.w3.org/2001/XMLSchema#"
INT, DEC, DBL, BOOL = XSD + "integer", XSD + "decimal", XSD + "double", XSD + "boolean"
EX = "http://ex.org/"


def uri(value: str) -> Cell:
    return Cell(URI, value)


def lit(value: str, datatype: str | None = None, lang: str | None = None) -> Cell:
    return Cell(LITERAL, value, datatype, lang)


def bnode(label: str) -> Cell:
    return Cell(BNODE, label)


IRIS = [
    uri(EX + "plain"),
    uri(EX + "a?b=c&d=e;f#frag"),
    uri(EX + "%20pct"),
    uri(EX + "ünï/😀"),
    uri("urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66"),
    uri(EX + "it's(1)*~!$"),
]
BNODES = [bnode("b0"), bnode("N1a2b3c"), bnode("b149a32513d88e53c_x")]
LITERALS = [
    lit('say "hi"'),
    lit("back\\slash \\n not a newline \\u0041"),
    lit("line\nbreak"),
    lit("cr\r\nlf\rcr"),
    lit("tab\there"),
    lit("emoji 😀 𝄞 beyond the BMP"),
    lit(""),
    lit("  padded  "),
    lit("<tag> & ]]> \"' &amp;"),
    lit('comma, separated; "quoted"'),
    lit("ß ünïcödé \u2028 line separator \u0085 nel"),
    lit("chat", lang="fr"),
    lit("colour", lang="en-GB"),
    lit("", lang="en"),
    lit('"quoted"\n', lang="en-x-twain"),
    lit("2024-01-02", XSD + "date"),
    lit("x", EX + "dt#a?b&c"),
    lit("42", INT),
    lit("-7", INT),
    lit("+5", INT),
    lit("007", INT),
    lit("1.50", DEC),
    lit(".5", DEC),
    lit("-0.0", DEC),
    lit("3", DEC),
    lit("1.0E3", DBL),
    lit("-1.5e-7", DBL),
    lit("INF", DBL),
    lit("NaN", DBL),
    lit("1000.0", DBL),
    lit("true", BOOL),
    lit("false", BOOL),
    lit("1", BOOL),
    lit("42", XSD + "long"),
    lit("c3VyZQ==", XSD + "base64Binary"),
]
CONTROL = [lit("bell\x07 nul\x00 esc\x1b del\x7f bs\x08 ff\x0c vt\x0b")]  # not in XML 1.0
OBJECTS = IRIS + BNODES + LITERALS


def table_result(objects: Sequence[Cell]) -> QueryResult:
    """SELECT ?s ?p ?o ?x: every object once, unbound cells in every column, a fully unbound row."""
    subjects = IRIS + BNODES
    rows: list[tuple[Cell | None, ...]] = []
    for i, o in enumerate(objects):
        s = subjects[i % len(subjects)]
        x = None if i % 3 else objects[(i * 7) % len(objects)]
        rows.append((None if i % 11 == 5 else s, IRIS[i % 2], o, x))
    rows.append((None, None, None, None))
    rows.append((BNODES[0], IRIS[0], BNODES[0], BNODES[1]))  # one blank node twice in a row
    return QueryResult(form="SELECT", variables=["s", "p", "o", "x"], table=rows)


def graph_result(objects: Sequence[Cell], form: str = "CONSTRUCT") -> QueryResult:
    subjects = IRIS + BNODES
    predicates = [*IRIS, uri(results.RDF_TYPE)]
    triples = [
        (subjects[i % len(subjects)], predicates[i % len(predicates)], o) for i, o in enumerate(objects)
    ]
    triples.append(triples[0])  # a duplicate is written once
    return QueryResult(form=form, triples=triples)


def ask_result(value: bool) -> QueryResult:
    return QueryResult(form="ASK", boolean=value)


# -- comparing -------------------------------------------------------------------------------------


@contextmanager
def exact_literals() -> Iterator[None]:
    """rdflib parsers keep lexical forms as written (by default Literal("+5", int) is "5")."""
    saved = rdflib.NORMALIZE_LITERALS
    rdflib.NORMALIZE_LITERALS = False
    try:
        yield
    finally:
        rdflib.NORMALIZE_LITERALS = saved


def parse_result(text: str, fmt: str) -> Result:
    with exact_literals():
        return Result.parse(io.StringIO(text), format=fmt)


def parse_graph(text: str, fmt: str) -> Graph:
    with exact_literals():
        return Graph().parse(data=text, format=fmt)


Solutions = list[dict[str, Node | str]]


def canonical(rows: Sequence[Mapping[Variable, Node]] | Sequence[Mapping[str, Node]]) -> Solutions:
    """Solutions with blank nodes relabelled by first appearance (labels are local to a
    document; which cells share a blank node is what must survive)."""
    labels: dict[str, str] = {}
    out: Solutions = []
    for row in rows:
        canon: dict[str, Node | str] = {}
        for var, term in row.items():
            if isinstance(term, BNode):
                canon[str(var)] = labels.setdefault(str(term), f"bnode#{len(labels)}")
            else:
                canon[str(var)] = term
        out.append(canon)
    return out


def expected(result: QueryResult) -> Solutions:
    return canonical(
        [
            {
                name: to_node(cell)
                for name, cell in zip(result.variables, row, strict=True)
                if cell is not None
            }
            for row in result.table
        ]
    )


def expected_graph(result: QueryResult) -> Graph:
    g = Graph()
    for s, p, o in result.triples:
        g.add((to_node(s), to_node(p), to_node(o)))
    return g


NUMERIC = {URIRef(INT), URIRef(DEC), URIRef(DBL), URIRef(BOOL)}


def by_value(g: Graph) -> Graph:
    """Numeric and boolean objects by value (rdflib's Turtle parser rewrites their lexical form)."""
    out = Graph()
    for s, p, o in g:
        if isinstance(o, Literal) and o.datatype in NUMERIC:
            o = Literal(str(o), datatype=o.datatype, normalize=True)
        out.add((s, p, o))
    return out


def csv_text(cell: Cell | None) -> str:
    if cell is None:
        return ""
    return f"_:{cell.value}" if cell.kind == BNODE else cell.value


# -- SPARQL JSON -----------------------------------------------------------------------------------


@pytest.mark.parametrize("objects", [OBJECTS, OBJECTS + CONTROL], ids=["nasty", "with-controls"])
def test_json_round_trips_through_rdflib(objects: list[Cell]) -> None:
    result = table_result(objects)
    text = results.write_json(result)
    parsed = parse_result(text, "json")
    assert [str(v) for v in parsed.vars or []] == result.variables
    assert canonical(parsed.bindings) == expected(result)


def test_json_text_equals_the_dict_form_and_is_ascii() -> None:
    result = table_result([*OBJECTS, *CONTROL, lit("lone \ud800 surrogate")])
    text = results.write_json(result)
    assert text.isascii()
    assert json.loads(text) == results.sparql_json(result)
    assert "\\ud83d\\ude00" in text  # beyond the BMP as a surrogate pair


def test_json_bindings_leave_unbound_variables_out() -> None:
    result = QueryResult(form="SELECT", variables=["a", "b"], table=[(None, lit("x")), (None, None)])
    assert json.loads(results.write_json(result)) == {
        "head": {"vars": ["a", "b"]},
        "results": {"bindings": [{"b": {"type": "literal", "value": "x"}}, {}]},
    }


def test_json_term_shapes() -> None:
    result = QueryResult(
        form="SELECT",
        variables=["v"],
        table=[(uri(EX + "a"),), (bnode("b1"),), (lit("s"),), (lit("l", lang="en"),), (lit("1", INT),)],
    )
    assert [row["v"] for row in json.loads(results.write_json(result))["results"]["bindings"]] == [
        {"type": "uri", "value": EX + "a"},
        {"type": "bnode", "value": "b1"},
        {"type": "literal", "value": "s"},
        {"type": "literal", "value": "l", "xml:lang": "en"},
        {"type": "literal", "value": "1", "datatype": INT},
    ]


def test_empty_select_and_no_variables() -> None:
    empty = QueryResult(form="SELECT", variables=["a"], table=[])
    assert json.loads(results.write_json(empty)) == {"head": {"vars": ["a"]}, "results": {"bindings": []}}
    unit = QueryResult(form="SELECT", variables=[], table=[()])
    assert json.loads(results.write_json(unit)) == {"head": {"vars": []}, "results": {"bindings": [{}]}}
    assert parse_result(results.write_xml(empty), "xml").bindings == []
    assert parse_result(results.write_tsv(empty), "tsv").bindings == []
    assert results.write_csv(empty) == "a\r\n"


# -- SPARQL XML ------------------------------------------------------------------------------------


def test_xml_round_trips_through_rdflib() -> None:
    result = table_result(OBJECTS)
    text = results.write_xml(result)
    parsed = parse_result(text, "xml")
    assert [str(v) for v in parsed.vars or []] == result.variables
    assert canonical(parsed.bindings) == expected(result)


def test_xml_is_well_formed_w3c_markup() -> None:
    text = results.write_xml(table_result(OBJECTS))
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2005/sparql-results#}"
    assert root.tag == ns + "sparql"
    assert [v.get("name") for v in root.iter(ns + "variable")] == ["s", "p", "o", "x"]
    assert "&#13;" in text  # carriage returns survive XML line-end normalisation
    lang = root.find(f".//{ns}literal[@{{http://www.w3.org/XML/1998/namespace}}lang='en-GB']")
    assert lang is not None and lang.text == "colour"


def test_xml_refuses_characters_xml_cannot_carry() -> None:
    for bad in ("nul\x00", "bell\x07", "vt\x0b", "\ufffe", "lone \udc00"):
        result = table_result([lit(bad)])
        with pytest.raises(BadRequest) as info:
            results.write_xml(result)
        assert info.value.reason == "not_representable_in_xml"
        assert f"U+{ord(bad[-1]):04X}" in info.value.message


# -- SPARQL CSV and TSV ----------------------------------------------------------------------------


@pytest.mark.parametrize("objects", [OBJECTS, OBJECTS + CONTROL], ids=["nasty", "with-controls"])
def test_csv_is_w3c_csv(objects: list[Cell]) -> None:
    result = table_result(objects)
    text = results.write_csv(result)
    assert text.startswith("s,p,o,x\r\n") and text.endswith("\r\n")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0] == result.variables
    assert rows[1:] == [[csv_text(cell) for cell in row] for row in result.table]
    # rdflib's reader: IRIs, _:labels and lexical forms, the empty field as unbound
    parsed = parse_result(text, "csv")
    assert [{str(k): str(v) for k, v in b.items()} for b in parsed.bindings] == [
        {n: csv_text(c) for n, c in zip(result.variables, row, strict=True) if csv_text(c)}
        for row in result.table
    ]


def test_sparql_csv_is_write_csv() -> None:
    assert results.sparql_csv is results.write_csv


@pytest.mark.parametrize("objects", [OBJECTS, OBJECTS + CONTROL], ids=["nasty", "with-controls"])
def test_tsv_round_trips_through_rdflib(objects: list[Cell]) -> None:
    result = table_result(objects)
    text = results.write_tsv(result)
    assert text.startswith("?s\t?p\t?o\t?x\n") and text.endswith("\n") and "\r" not in text
    assert all(line.count("\t") == 3 for line in text.split("\n")[:-1])  # not splitlines(): U+2028
    parsed = parse_result(text, "tsv")
    assert [str(v) for v in parsed.vars or []] == result.variables
    assert canonical(parsed.bindings) == expected(result)


def test_tsv_term_syntax() -> None:
    cells = [
        uri(EX + "a b<c>"),
        bnode("b0"),
        lit('a\tb\nc\rd"e\\f'),
        lit("hi", lang="en-GB"),
        lit("2024-01-02", XSD + "date"),
        lit("+5", INT),
        lit("-7", INT),
        lit("007", INT),
        lit("1.50", DEC),
        lit("-1.5", DEC),
        lit("3", DEC),
        lit("1.0E3", DBL),
        lit("1000.0", DBL),
        lit("INF", DBL),
        lit("true", BOOL),
        lit("1", BOOL),
        None,
    ]
    result = QueryResult(form="SELECT", variables=["v"], table=[(c,) for c in cells])
    assert results.write_tsv(result).split("\n") == [
        "?v",
        f"<{EX}a\\u0020b\\u003Cc\\u003E>",
        "_:b0",
        '"a\\tb\\nc\\rd\\"e\\\\f"',
        '"hi"@en-GB',
        f'"2024-01-02"^^<{XSD}date>',
        f'"+5"^^<{INT}>',
        f'"-7"^^<{INT}>',
        "007",
        "1.50",
        f'"-1.5"^^<{DEC}>',
        f'"3"^^<{DEC}>',
        "1.0E3",
        f'"1000.0"^^<{DBL}>',
        f'"INF"^^<{DBL}>',
        "true",
        f'"1"^^<{BOOL}>',
        "",  # unbound
        "",
    ]


@pytest.mark.parametrize(
    ("writer", "fmt", "true_text"),
    [
        (results.write_json, "json", '{"head":{},"boolean":true}'),
        (results.write_xml, "xml", None),
        (results.write_csv, None, "boolean\r\ntrue\r\n"),
        (results.write_tsv, None, "?boolean\ntrue\n"),
    ],
)
def test_ask(writer: results.Writer, fmt: str | None, true_text: str | None) -> None:
    for value in (True, False):
        text = writer(ask_result(value))
        if true_text is not None:
            assert text == true_text.replace("true", "true" if value else "false")
        if fmt is not None:
            assert parse_result(text, fmt).askAnswer is value


# -- N-Triples and Turtle --------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["CONSTRUCT", "DESCRIBE"])
@pytest.mark.parametrize("objects", [OBJECTS, OBJECTS + CONTROL], ids=["nasty", "with-controls"])
def test_ntriples_round_trips_through_rdflib(objects: list[Cell], form: str) -> None:
    result = graph_result(objects, form)
    text = results.write_ntriples(result)
    lines = text.split("\n")[:-1]  # not splitlines(): U+2028 is no line end in N-Triples
    assert lines == sorted(lines) and len(lines) == len(set(lines)) == len(set(result.triples))
    assert all(line.endswith(" .") for line in lines)
    assert isomorphic(parse_graph(text, "nt"), expected_graph(result))
    assert results.write_ntriples(result) == text  # deterministic


@pytest.mark.parametrize("objects", [OBJECTS, OBJECTS + CONTROL], ids=["nasty", "with-controls"])
def test_turtle_round_trips_through_rdflib(objects: list[Cell]) -> None:
    result = graph_result(objects)
    text = results.write_turtle(result)
    assert isomorphic(by_value(parse_graph(text, "turtle")), by_value(expected_graph(result)))
    assert results.write_turtle(result) == text


def test_ntriples_escapes() -> None:
    s, p = uri(EX + "s"), uri(EX + "p")
    cases = {
        lit('q"b\\s\nn\rr\tt\bb\ff'): '"q\\"b\\\\s\\nn\\rr\\tt\\bb\\ff"',
        lit("\x00\x01\x1f\x7f"): '"\\u0000\\u0001\\u001F\\u007F"',
        lit("é😀\u2028"): '"é😀\u2028"',  # everything else as is (UTF-8)
        lit("x", lang="en-GB"): '"x"@en-GB',
        lit("", EX + "dt"): f'""^^<{EX}dt>',
        uri(EX + 'a b<c>"{d}|e^f`g\\h'): f"<{EX}a\\u0020b\\u003Cc\\u003E\\u0022\\u007Bd\\u007D"
        "\\u007Ce\\u005Ef\\u0060g\\u005Ch>",
        uri(EX + "é?x=1&y#z"): f"<{EX}é?x=1&y#z>",
    }
    for cell, term in cases.items():
        text = results.write_ntriples(QueryResult(form="CONSTRUCT", triples=[(s, p, cell)]))
        assert text == f"<{EX}s> <{EX}p> {term} .\n"
        assert set(parse_graph(text, "nt")) == {(to_node(s), to_node(p), to_node(cell))}


def test_blank_node_labels_that_ntriples_cannot_spell_are_replaced_consistently() -> None:
    odd = [bnode("has space"), bnode("ünï"), bnode("trailing."), bnode("-lead"), bnode("")]
    p = uri(EX + "p")
    triples = [(a, p, b) for a in odd for b in odd] + [(bnode("ok.1"), p, odd[0])]
    result = QueryResult(form="CONSTRUCT", triples=triples)
    for text, fmt in ((results.write_ntriples(result), "nt"), (results.write_turtle(result), "turtle")):
        labels = set(re.findall(r"_:(\S+)", text))
        assert len(labels) == len(odd) + 1
        assert "ok.1" in labels
        assert isomorphic(parse_graph(text, fmt), expected_graph(result))


def test_turtle_layout() -> None:
    a, b = uri(EX + "a"), uri(EX + "b")
    triples = [
        (a, uri(EX + "p"), lit("1.0E3", DBL)),
        (a, uri(EX + "p"), lit("x y", XSD + "date")),
        (a, uri(results.RDF_TYPE), uri("http://www.w3.org/2002/07/owl#Class")),
        (a, uri(EX + "q"), lit("5", INT)),
        (a, uri(EX + "q"), lit("-5", INT)),
        (a, uri(EX + "q"), lit("007", XSD + "odd#name")),
        (bnode("b0"), uri("http://www.w3.org/2000/01/rdf-schema#label"), lit('a"\n', lang="en")),
        (b, uri(EX + "p"), bnode("b0")),
    ]
    assert results.write_turtle(QueryResult(form="CONSTRUCT", triples=triples)) == (
        "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
        "\n"
        f"<{EX}a>\n"
        "    a owl:Class ;\n"
        f"    <{EX}p> 1.0E3 ,\n"
        '        "x y"^^xsd:date ;\n'
        f'    <{EX}q> "-5"^^xsd:integer ,\n'
        '        "007"^^<http://www.w3.org/2001/XMLSchema#odd#name> ,\n'
        "        5 .\n"
        "\n"
        f"<{EX}b>\n"
        f"    <{EX}p> _:b0 .\n"
        "\n"
        "_:b0\n"
        '    rdfs:label "a\\"\\n"@en .\n'
    )


def test_triples_rdf_cannot_hold_are_left_out() -> None:
    s, p, o = uri(EX + "s"), uri(EX + "p"), lit("o")
    result = QueryResult(form="CONSTRUCT", triples=[(s, p, o), (o, p, s), (s, bnode("b"), o), (s, o, s)])
    assert results.write_ntriples(result) == f'<{EX}s> <{EX}p> "o" .\n'
    assert len(parse_graph(results.write_turtle(result), "turtle")) == 1


def test_empty_graph() -> None:
    empty = QueryResult(form="CONSTRUCT", triples=[])
    assert results.write_ntriples(empty) == ""
    assert results.write_turtle(empty) == ""


# -- forms, media types and errors -----------------------------------------------------------------

TABLE_WRITERS = [results.write_json, results.write_xml, results.write_csv, results.write_tsv]
GRAPH_WRITERS = [results.write_ntriples, results.write_turtle]


def test_writers_refuse_the_wrong_form() -> None:
    graph = graph_result(IRIS)
    for writer in TABLE_WRITERS:
        with pytest.raises(UnknownFormat) as info:
            writer(graph)
        assert info.value.field == "format" and "CONSTRUCT" in info.value.message
        assert "text/turtle" in info.value.message
    with pytest.raises(UnknownFormat):
        results.sparql_json(graph)
    for writer in GRAPH_WRITERS:
        for table in (table_result(IRIS), ask_result(True)):
            with pytest.raises(UnknownFormat) as info:
                writer(table)
            assert table.form in info.value.message


def test_media_types() -> None:
    assert list(results.media_types("SELECT")) == [
        "application/sparql-results+json",
        "application/sparql-results+xml",
        "text/csv",
        "text/tab-separated-values",
    ]
    assert results.media_types("ASK") == results.media_types("SELECT")
    assert list(results.media_types("DESCRIBE")) == ["text/turtle", "application/n-triples"]
    assert len(results.media_types()) == 6


def test_serialise() -> None:
    table, graph = table_result(OBJECTS), graph_result(OBJECTS)
    assert results.serialise(table, "application/sparql-results+json") == (
        results.write_json(table),
        "application/sparql-results+json; charset=utf-8",
    )
    assert results.serialise(table, "Text/CSV; charset=utf-8")[1] == "text/csv; charset=utf-8"
    assert results.serialise(table, "application/json")[1].startswith("application/sparql-results+json")
    assert results.serialise(table, "text/tab-separated-values")[0] == results.write_tsv(table)
    assert results.serialise(ask_result(False), "application/sparql-results+xml")[0] == results.write_xml(
        ask_result(False)
    )
    assert results.serialise(graph, "application/n-triples") == (
        results.write_ntriples(graph),
        "application/n-triples; charset=utf-8",
    )
    assert results.serialise(graph, "text/turtle")[0] == results.write_turtle(graph)

    with pytest.raises(UnknownFormat) as info:
        results.serialise(table, "image/png")
    assert info.value.reason == "unknown_format" and info.value.field == "accept"
    assert "image/png" in info.value.message
    with pytest.raises(UnknownFormat) as info:
        results.serialise(table, "text/turtle", field="format")
    assert info.value.reason == "format_mismatch" and info.value.field == "format"
    assert "application/sparql-results+json" in info.value.message  # what would fit
    with pytest.raises(UnknownFormat) as info:
        results.serialise(graph, "text/csv")
    assert info.value.reason == "format_mismatch" and "text/turtle" in info.value.message


@pytest.mark.parametrize(
    ("accept", "form", "chosen"),
    [
        (None, "SELECT", "application/sparql-results+json"),
        ("", "CONSTRUCT", "text/turtle"),
        ("*/*", "ASK", "application/sparql-results+json"),
        ("*/*", "DESCRIBE", "text/turtle"),
        ("text/html, application/xml;q=0.9, */*;q=0.8", "SELECT", "application/sparql-results+xml"),
        ("text/csv;q=0.5, text/tab-separated-values", "SELECT", "text/tab-separated-values"),
        ("text/*", "SELECT", "text/csv"),
        ("text/*, text/tab-separated-values", "SELECT", "text/tab-separated-values"),
        ("application/n-triples, text/turtle", "CONSTRUCT", "application/n-triples"),
        ("application/sparql-results+json;q=0, */*;q=0.1", "SELECT", "application/sparql-results+json"),
        ("text/turtle", "SELECT", None),
        ("application/sparql-results+json", "CONSTRUCT", None),
        ("image/png;q=bogus", "SELECT", None),
    ],
)
def test_negotiate(accept: str | None, form: str, chosen: str | None) -> None:
    assert results.negotiate(accept, form) == chosen


def test_term_text_from_cells_and_nodes() -> None:
    assert results.term_text(None) == ""
    assert results.term_text(uri(EX + "a")) == f"<{EX}a>"
    assert results.term_text(bnode("b0")) == "_:b0"
    assert results.term_text(lit("4", INT)) == f'"4"^^<{INT}>'
    assert results.term_text(lit("two\nlines", lang="en")) == '"two\\nlines"@en'
    assert results.term_text(Literal("4", datatype=URIRef(INT))) == f'"4"^^<{INT}>'
    assert results.term_text(URIRef(EX + "a")) == f"<{EX}a>"


# -- real queries against a store ------------------------------------------------------------------

TTL = r"""@prefix ex: <http://ex.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:a ex:name "say \"hi\"\\ \n\t end 😀 \r cr"@en-GB , "" , "<b> & ]]>" ;
    ex:n 42, -7 ; ex:d 1.50 ; ex:f 1.0E3 ; ex:b true ;
    ex:date "2024-01-02"^^xsd:date ; ex:knows _:x ; ex:odd "x"^^<http://ex.org/dt#a?b> .
_:x ex:name "bee" ; ex:knows _:x .
<http://ex.org/ünï/😀?q=1&r=2#f> ex:name "iri" ; a ex:Thing .
"""
SELECT = f"SELECT ?s ?p ?o ?z WHERE {{ ?s ?p ?o OPTIONAL {{ ?o <{EX}name> ?z }} }}"


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    store = quipu.open(store_location(tmp_path, "t.db"))
    store.knot(TTL, format="turtle")
    try:
        yield store
    finally:
        store.close()


def test_store_select_through_every_table_format(kb: KnowledgeBase) -> None:
    result = kb.query_result(SELECT)
    assert len(result.table) == 15
    want = canonical(result.rows)
    assert expected(result) == want
    for fmt, writer in (("json", results.write_json), ("xml", results.write_xml), ("tsv", results.write_tsv)):
        assert canonical(parse_result(writer(result), fmt).bindings) == want, fmt
    rows = list(csv.reader(io.StringIO(results.write_csv(result), newline="")))
    assert rows[1:] == [
        [
            "" if term is None else f"_:{term}" if isinstance(term, BNode) else str(term)
            for term in (row.get(v) for v in result.variables)
        ]
        for row in result.rows
    ]


def test_store_ask(kb: KnowledgeBase) -> None:
    yes, no = kb.query_result("ASK { ?s ?p 42 }"), kb.query_result("ASK { ?s ?p 43 }")
    for fmt, writer in (("json", results.write_json), ("xml", results.write_xml)):
        assert parse_result(writer(yes), fmt).askAnswer is True
        assert parse_result(writer(no), fmt).askAnswer is False


@pytest.mark.parametrize(
    "query",
    [
        "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
        f"CONSTRUCT {{ ?o <{EX}of> ?s . _:new <{EX}saw> ?o }} WHERE {{ ?s ?p ?o }}",
        f"DESCRIBE <{EX}a>",
    ],
)
def test_store_graphs_through_ntriples_and_turtle(kb: KnowledgeBase, query: str) -> None:
    result = kb.query_result(query)
    graph = result.graph
    assert graph is not None and len(graph) > 0
    assert isomorphic(parse_graph(results.write_ntriples(result), "nt"), graph)
    assert isomorphic(by_value(parse_graph(results.write_turtle(result), "turtle")), by_value(graph))
