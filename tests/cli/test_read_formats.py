"""``quipu read --format``: every result format, read back by rdflib, in-process via CliRunner.

stdout is taken as bytes: click's text view turns the CRLF line ends of SPARQL CSV into LF.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from rdflib import BNode, Graph, Literal, URIRef
from rdflib.compare import isomorphic
from rdflib.query import Result
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import store_location

EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
TTL = r"""@prefix ex: <http://ex.org/> .
ex:a ex:name "tab\there, \"quoted\", new\nline 😀"@en ; ex:n 4 ; ex:knows _:x .
_:x ex:name "bee" .
"""
SELECT = f"SELECT ?s ?name WHERE {{ ?s <{EX}name> ?name }} ORDER BY ?name"
CONSTRUCT = f"CONSTRUCT {{ ?s <{EX}called> ?name }} WHERE {{ ?s <{EX}name> ?name }}"
ASK = f"ASK {{ <{EX}a> <{EX}n> 4 }}"
NAME = 'tab\there, "quoted", new\nline 😀'


@dataclass(frozen=True)
class Run:
    args: Sequence[str]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"quipu {' '.join(self.args)} -> exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"


def invoke(*args: str) -> Run:
    result = CliRunner().invoke(app, list(args))
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += f"\nTraceback: {result.exception!r}"
    return Run(args, result.exit_code, result.stdout_bytes.decode(), err)


def ok(run: Run) -> str:
    assert run.code == 0, str(run)
    return run.out


def refused(run: Run, *needles: str) -> None:
    assert run.code == 2, str(run)
    assert run.out == "", str(run)
    assert "Traceback" not in run.err, str(run)
    message = " ".join(run.err.split())
    for needle in needles:
        assert needle in message, str(run)


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "read.db"
    with quipu.open(str(path)) as kb:
        kb.knot(TTL, format="turtle")
    return str(path)


def read(db: str, query: str, *flags: str) -> Run:
    return invoke("read", query, *flags, "--db", db)


def names(bindings: list[dict[str, object]]) -> list[object]:
    return [row.get("name") for row in bindings]


def test_json(db: str) -> None:
    data = json.loads(ok(read(db, SELECT, "--format", "json")))
    assert data["head"] == {"vars": ["s", "name"]}
    rows = data["results"]["bindings"]
    assert [r["name"] for r in rows] == [
        {"type": "literal", "value": "bee"},
        {"type": "literal", "value": NAME, "xml:lang": "en"},
    ]
    assert rows[0]["s"]["type"] == "bnode" and rows[1]["s"] == {"type": "uri", "value": EX + "a"}


@pytest.mark.parametrize("fmt", ["json", "xml", "tsv"])
def test_select_formats_read_back(db: str, fmt: str) -> None:
    parsed = Result.parse(io.StringIO(ok(read(db, SELECT, "--format", fmt))), format=fmt)
    assert [str(v) for v in parsed.vars or []] == ["s", "name"]
    rows = [{str(k): v for k, v in b.items()} for b in parsed.bindings]
    assert [r["name"] for r in rows] == [Literal("bee"), Literal(NAME, lang="en")]
    assert isinstance(rows[0]["s"], BNode) and rows[1]["s"] == URIRef(EX + "a")


def test_csv(db: str) -> None:
    out = ok(read(db, SELECT, "-f", "csv"))
    assert out.startswith("s,name\r\n")
    rows = list(csv.reader(io.StringIO(out, newline="")))
    assert rows[1][0].startswith("_:") and rows[1][1] == "bee"
    assert rows[2] == [EX + "a", NAME]


def test_table_renders_cells(db: str) -> None:
    run = read(db, SELECT)
    out = ok(run)
    assert '"bee"' in out and "_:" in out and f"<{EX}a>" in out
    assert '"tab\\there, \\"quoted\\", new\\nline 😀"@en' in out  # one line per row
    assert "2 row(s)" in run.err and "row(s)" not in out


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("table", "true\n"),
        ("json", None),
        ("csv", "boolean\r\ntrue\r\n"),
        ("tsv", "?boolean\ntrue\n"),
        ("xml", None),
    ],
)
def test_ask(db: str, fmt: str, text: str | None) -> None:
    out = ok(read(db, ASK, "--format", fmt))
    if text is not None:
        assert out == text
    else:
        assert Result.parse(io.StringIO(out), format=fmt).askAnswer is True


def expected_graph() -> Graph:
    g = Graph()
    g.add((URIRef(EX + "a"), URIRef(EX + "called"), Literal(NAME, lang="en")))
    g.add((BNode(), URIRef(EX + "called"), Literal("bee")))
    return g


@pytest.mark.parametrize("flags", [(), ("--format", "table"), ("--format", "ntriples")])
def test_construct_prints_sorted_ntriples(db: str, flags: tuple[str, ...]) -> None:
    out = ok(read(db, CONSTRUCT, *flags))
    lines = out.split("\n")[:-1]
    assert lines == sorted(lines) and len(lines) == 2
    assert isomorphic(Graph().parse(data=out, format="nt"), expected_graph())


def test_construct_as_turtle(db: str) -> None:
    out = ok(read(db, CONSTRUCT, "--format", "turtle"))
    assert isomorphic(Graph().parse(data=out, format="turtle"), expected_graph())


def test_describe(db: str) -> None:
    out = ok(read(db, f"DESCRIBE <{EX}a>", "-f", "turtle"))
    g = Graph().parse(data=out, format="turtle")
    assert (URIRef(EX + "a"), URIRef(EX + "n"), Literal("4", datatype=URIRef(XSD + "integer"))) in g


def test_unknown_format_is_refused(db: str) -> None:
    refused(read(db, SELECT, "--format", "yaml"), "unknown output format", "'yaml'", "tsv", "turtle")


@pytest.mark.parametrize("fmt", ["turtle", "ntriples"])
def test_graph_format_for_a_table_is_refused(db: str, fmt: str) -> None:
    refused(read(db, SELECT, "--format", fmt), "format", fmt, "SELECT")
    refused(read(db, ASK, "--format", fmt), "format", fmt, "ASK")


@pytest.mark.parametrize("fmt", ["json", "csv", "tsv", "xml"])
def test_table_format_for_a_graph_is_refused(db: str, fmt: str) -> None:
    refused(read(db, CONSTRUCT, "--format", fmt), "format", fmt, "CONSTRUCT", "turtle")


def test_xml_refuses_what_xml_cannot_carry(tmp_path: Path) -> None:
    path = store_location(tmp_path, "bell.db")
    with quipu.open(path) as kb:
        kb.knot(f'<{EX}a> <{EX}p> "bell\\u0007" .\n', "nt")
    query = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    refused(read(path, query, "--format", "xml"), "U+0007", "XML 1.0", "json")
    assert (
        json.loads(ok(read(path, query, "--format", "json")))["results"]["bindings"][0]["o"]["value"]
        == "bell\a"
    )
