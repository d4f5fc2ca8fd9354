"""``quipu ontology load|list|remove|materialize`` and ``quipu explain`` (§8's CLI), in process:
JSON on stdout, the same work as the routes; without the extra, status 2 naming the feature."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from quipu.config import owl_installed
from tests.backends import store_location
from tests.owl.support import DATA, EX, ONTOLOGY, RDF_TYPE, requires_owl


@pytest.fixture
def db(tmp_path: Path) -> str:
    location = store_location(tmp_path, "o.db")
    with quipu.open(location) as kb:
        kb.knot(DATA)
    return location


def _run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.stderr
    body: dict[str, object] = json.loads(result.stdout)
    return body


@requires_owl
def test_the_ontology_commands_and_explain(db: str, tmp_path: Path) -> None:
    file = tmp_path / "zoo.ttl"
    file.write_text(ONTOLOGY, encoding="utf-8")
    loaded = _run("ontology", "load", "zoo", str(file), "--db", db)
    assert loaded["materialized"]["total"] == 10  # type: ignore[index]
    assert _run("ontology", "list", "--db", db)["count"] == 1
    why = _run("explain", "-s", f"{EX}rex", "-p", RDF_TYPE, "-o", f"{EX}Animal", "--depth", "1", "--db", db)
    assert why["source"] == "owl:materialize"
    assert _run("ontology", "materialize", "--db", db)["ontologies"] == 1
    assert _run("ontology", "remove", "zoo", "--db", db) == {
        "action": "remove",
        "name": "zoo",
        "removed": True,
    }


@pytest.mark.skipif(owl_installed(), reason="the owl extra is installed here")
def test_without_the_extra_the_commands_refuse_naming_it(db: str) -> None:
    result = CliRunner().invoke(app, ["ontology", "list", "--db", db])
    assert result.exit_code == 2 and "pip install 'quipu[owl]'" in result.stderr
