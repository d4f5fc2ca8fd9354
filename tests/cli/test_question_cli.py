"""``quipu ask``, ``quipu cooccurrence`` and ``quipu queries load|list|get|remove``
(tools-search §5.16-§5.18), in process: JSON on stdout, refusals on stderr with status 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from quipu.cli.questions import ask_params, param_spec
from quipu.errors import InvalidField
from tests.backends import store_location

EX = "http://ex.org/"
A = "http://aegis.gastown.local/ontology/"
Q = "https://scbrown.github.io/quechua/ns#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
TEMPLATE = "SELECT ?s WHERE { ?s a <{type}> } ORDER BY ?s LIMIT {limit}"


def run(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, (result.stdout, result.stderr)
    return json.loads(result.stdout) if code == 0 else result


@pytest.fixture
def db(tmp_path: Path) -> str:
    location = store_location(tmp_path, "q.db")
    with quipu.open(location) as kb:
        kb.knot(
            f"<{EX}a> <{RDF_TYPE}> <{EX}T> .\n<{EX}b> <{RDF_TYPE}> <{EX}T> .\n"
            f"<{EX}c1> <{A}implements> <{EX}w1> .\n<{EX}c1> <{A}modifies> <{EX}e1> .\n"
            f"<{EX}c2> <{Q}implements> <{EX}w2> .\n<{EX}c2> <{Q}modifies> <{EX}e1> .",
            "nt",
        )
    return location


def test_ask_without_a_name_prints_the_catalog(db: str) -> None:
    out = run("ask", "--db", db)
    assert out["queries"][0]["name"] == "brief_ground" and "usage" in out


def test_ask_runs_a_built_in_with_params(db: str) -> None:
    out = run("ask", "entities_of_type", "--param", f"type={EX}T", "--param", "limit=1", "--db", db)
    assert out["rows"] == [{"s": EX + "a"}] and out["sparql"].endswith("LIMIT 1")


def test_ask_refuses_a_bad_param_on_stderr(db: str) -> None:
    result = run("ask", "entity_facts", "--param", "entity=x> ?p ?o", "--db", db, code=2)
    assert "param 'entity': invalid character in IRI" in result.stderr and result.stdout == ""
    result = run("ask", "entity_facts", "--param", "entity", "--db", db, code=2)
    assert "expected NAME=VALUE" in result.stderr


def test_ask_with_graph_scopes_the_default_graph(db: str) -> None:
    with quipu.open(db) as kb:
        kb.graphs.create(EX + "g")
        kb.knot(f"<{EX}inside> <{RDF_TYPE}> <{EX}T> .", "nt", graph=EX + "g")
    out = run("ask", "entities_of_type", "--param", f"type={EX}T", "--graph", EX + "g", "--db", db)
    assert out["rows"] == [{"s": EX + "inside"}]


def test_cooccurrence_prints_the_overlap(db: str) -> None:
    out = run("cooccurrence", EX + "w1", "--db", db)
    assert out == {
        "work_item": EX + "w1",
        "count": 1,
        "cooccurring": [{"work_item": EX + "w2", "shared_entities": 1}],
    }
    assert run("cooccurrence", EX + "w1", "--valid-at", "2000-01-01T00:00:00Z", "--db", db)["count"] == 0
    assert run("cooccurrence", EX + "w1", "--tx", "0", "--db", db)["count"] == 0
    assert "'work_item' must be a bare IRI" in run("cooccurrence", "a b", "--db", db, code=2).stderr


def test_queries_load_from_a_file_then_list_get_ask_and_remove(db: str, tmp_path: Path) -> None:
    path = tmp_path / "typed.rq"
    path.write_text(TEMPLATE, encoding="utf-8")
    loaded = run(
        "queries", "load", "typed", "--file", str(path), "--param", "type:iri",
        "--param", '{"name": "limit", "type": "int", "default": "5", "description": "rows"}',
        "--description", "instances", "--timestamp", "2026-01-01T00:00:00Z", "--db", db,
    )  # fmt: skip
    assert loaded == {"loaded": "typed", "params": 2}
    listed = run("queries", "list", "--db", db)["queries"]
    assert [(q["name"], q["description"]) for q in listed] == [("typed", "instances")]
    got = run("queries", "get", "typed", "--db", db)
    assert got["template"] == TEMPLATE
    assert got["query"]["params"][1] == {
        "name": "limit", "type": "int", "required": False, "default": "5", "description": "rows",
    }  # fmt: skip
    assert run("ask", "typed", "--param", f"type={EX}T", "--db", db)["count"] == 2
    assert run("queries", "remove", "typed", "--db", db) == {"removed": True}
    assert "no such stored query: typed" in run("queries", "get", "typed", "--db", db, code=2).stderr


def test_queries_load_takes_the_template_inline_and_refuses_both_or_neither(db: str, tmp_path: Path) -> None:
    out = run("queries", "load", "inline", "--template", TEMPLATE, "--param", "type:iri", "--param", "limit:int=3",
              "--db", db)  # fmt: skip
    assert out == {"loaded": "inline", "params": 2}
    assert "exactly one of --file and --template" in run("queries", "load", "x", "--db", db, code=2).stderr
    path = tmp_path / "t.rq"
    path.write_text(TEMPLATE)
    both = run("queries", "load", "x", "--file", str(path), "--template", TEMPLATE, "--db", db, code=2)
    assert "exactly one" in both.stderr


def test_a_refused_load_writes_nothing_and_says_why(db: str) -> None:
    result = run("queries", "load", "bad", "--template", TEMPLATE, "--param", "type:iri", "--db", db, code=2)
    assert "template placeholder {limit} has no param spec" in result.stderr
    assert run("queries", "list", "--db", db) == {"queries": []}


def test_param_syntax() -> None:
    assert param_spec("limit:int=10") == {"name": "limit", "type": "int", "required": False, "default": "10"}
    assert param_spec("entity:iri") == {"name": "entity", "type": "iri", "required": True}
    assert param_spec("text") == {"name": "text", "type": "text", "required": True}
    assert param_spec("q=a=b") == {"name": "q", "type": "text", "required": False, "default": "a=b"}
    assert param_spec('{"name": "n", "kind": "int", "required": true}') == {
        "name": "n",
        "kind": "int",
        "required": True,
    }
    with pytest.raises(InvalidField, match="not a JSON object"):
        param_spec("{nope")
    assert ask_params(["a=1", "b=x=y", "c="]) == {"a": "1", "b": "x=y", "c": ""}
