"""RDFS subclass inference as a query option: ``?s a <T>`` stays asserted-only unless asked."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import URIRef

import quipu
from quipu.errors import InvalidField
from tests.backends import store_location

EX = "http://example.org/"
SUB = "http://www.w3.org/2000/01/rdf-schema#subClassOf"
DATA = f"""
<{EX}Dog> <{SUB}> <{EX}Mammal> .
<{EX}Mammal> <{SUB}> <{EX}Animal> .
<{EX}rex> a <{EX}Dog> .
<{EX}tom> a <{EX}Animal> .
<{EX}rock> a <{EX}Mineral> .
"""
ANIMALS = f"SELECT ?x WHERE {{ ?x a <{EX}Animal> }}"


def names(rows: object) -> set[str]:
    assert isinstance(rows, list)
    return {str(row["x"]).removeprefix(EX) for row in rows}


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "fallback"])
def test_subclass_instances_only_when_asked(tmp_path: Path, compiled: bool) -> None:
    with quipu.open(store_location(tmp_path, "kb.db"), sparql_compiler=compiled) as kb:
        kb.knot(DATA, "turtle")
        assert names(kb.query(ANIMALS)) == {"tom"}  # DM 13.3: asserted types only by default
        assert names(kb.query(ANIMALS, inference="rdfs")) == {"tom", "rex"}
        mammals = f"SELECT ?x WHERE {{ ?x a <{EX}Mammal> }}"
        assert names(kb.query(mammals, inference="rdfs")) == {"rex"}
        ask = f"ASK {{ <{EX}rock> a <{EX}Animal> }}"
        assert kb.query(ask, inference="rdfs") is False


def test_inference_follows_the_read_point(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "kb.db")) as kb:
        before = kb.knot(DATA, "turtle").tx_id
        kb.retract(EX + "Mammal", predicate=SUB, value={"iri": EX + "Animal"})
        assert names(kb.query(ANIMALS, inference="rdfs")) == {"tom"}
        assert names(kb.query(ANIMALS, as_of_tx=before, inference="rdfs")) == {"tom", "rex"}


def test_unknown_inference_mode_is_refused(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "kb.db")) as kb:
        with pytest.raises(InvalidField, match="inference") as info:
            kb.query(ANIMALS, inference="owl")
        assert info.value.field == "inference"


def test_variable_predicates_are_not_rewritten(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "kb.db")) as kb:
        kb.knot(DATA, "turtle")
        rows = kb.query(f"SELECT ?p WHERE {{ <{EX}rex> ?p <{EX}Animal> }}", inference="rdfs")
        assert rows == []
        typed = kb.query(f"SELECT ?t WHERE {{ <{EX}rex> a ?t }}", inference="rdfs")
        assert isinstance(typed, list)
        assert {row["t"] for row in typed} == {URIRef(EX + t) for t in ("Dog", "Mammal", "Animal")}


def test_cli_read_takes_the_inference_option(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from quipu.cli.main import app

    db = store_location(tmp_path, "kb.db")
    with quipu.open(db) as kb:
        kb.knot(DATA, "turtle")
    runner = CliRunner()
    plain = runner.invoke(app, ["read", ANIMALS, "--format", "csv", "--db", db])
    inferred = runner.invoke(app, ["read", ANIMALS, "--format", "csv", "--inference", "rdfs", "--db", db])
    assert plain.exit_code == 0 and inferred.exit_code == 0, (plain.output, inferred.output)
    assert f"{EX}rex" not in plain.stdout
    assert f"{EX}rex" in inferred.stdout and f"{EX}tom" in inferred.stdout
    refused = runner.invoke(app, ["read", ANIMALS, "--inference", "owl", "--db", db])
    assert refused.exit_code == 2
    assert "inference" in refused.stderr
