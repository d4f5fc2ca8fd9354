"""Structured validation results (severity, focus node, component, path, value, allowed)."""

from __future__ import annotations

import pytest
from rdflib import Graph

from quipu.errors import InvalidField
from quipu.shacl.rdf import parse_graph
from quipu.shacl.validate import path_text, validate

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

EX = "http://ex.org/"
P = "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .\n"
P += "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
SHAPES = P + (
    "ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;\n"
    "  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ] ;\n"
    "  sh:property [ sh:path ex:knows ; sh:class ex:Person ] ;\n"
    '  sh:property [ sh:path ex:status ; sh:in ("active" "retired") ] ;\n'
    '  sh:property [ sh:path ex:nick ; sh:maxCount 1 ; sh:severity sh:Warning ; sh:message "one nick" ] ;\n'
    "  sh:property [ sh:path ( ex:knows ex:name ) ; sh:minCount 1 ; sh:severity sh:Info ] .\n"
)


def _graph(text: str) -> Graph:
    return parse_graph(text.encode("utf-8"))  # lexical forms as written, as the registry parses


def _issues(data: str) -> list[dict[str, object]]:
    return [i.as_json() for i in validate(_graph(P + data), _graph(SHAPES)).issues]


def test_conforming_data_has_no_issues() -> None:
    report = validate(
        _graph(P + "ex:a a ex:Person ; ex:age 3 ."), _graph(SHAPES.replace("sh:minCount 1 ;", ""))
    )
    assert report.conforms and report.as_json()["violations"] == 0


def test_each_issue_names_focus_component_path_value_and_alternatives() -> None:
    issues = _issues('ex:a a ex:Person ; ex:age "x" ; ex:status "gone" ; ex:knows ex:b . ex:b ex:name "B" .')
    by_component = {i["component"]: i for i in issues}
    age = by_component["sh:DatatypeConstraintComponent"]
    assert (age["focus_node"], age["path"], age["value"]) == (EX + "a", EX + "age", "x")
    assert age["allowed"] == ["http://www.w3.org/2001/XMLSchema#integer"]
    assert by_component["sh:InConstraintComponent"]["allowed"] == ["active", "retired"]
    assert by_component["sh:ClassConstraintComponent"]["allowed"] == [EX + "Person"]
    assert by_component["sh:ClassConstraintComponent"]["value"] == EX + "b"
    assert all(i["severity"] == "Violation" for i in issues)


def test_severities_are_counted_apart_and_any_result_fails_conformance() -> None:
    report = validate(_graph(P + 'ex:a a ex:Person ; ex:nick "x", "y" .'), _graph(SHAPES))
    counts = report.as_json()
    assert (counts["violations"], counts["warnings"], counts["infos"]) == (0, 1, 1)
    assert report.conforms is False
    warning = next(i for i in report.issues if i.severity == "Warning")
    assert warning.message == "one nick"


def test_a_sequence_path_is_rendered_as_property_path_text() -> None:
    shapes = _graph(SHAPES)
    report = validate(_graph(P + "ex:a a ex:Person ."), shapes)
    info = next(i for i in report.issues if i.severity == "Info")
    assert info.path == f"<{EX}knows>/<{EX}name>"
    assert path_text(shapes, None) is None


def test_nested_detail_results_are_not_extra_issues() -> None:
    shapes = _graph(P + "ex:S a sh:NodeShape ; sh:targetNode ex:a ; sh:node [ sh:class ex:Other ] .")
    report = validate(_graph(P + "ex:a ex:p 1 ."), shapes)
    assert [i.component for i in report.issues] == ["sh:NodeConstraintComponent"]


def test_only_true_activates_unique_lang() -> None:
    shapes = _graph(
        P + 'ex:S a sh:PropertyShape ; sh:targetNode ex:a ; sh:path ex:m ; sh:uniqueLang "1"^^xsd:boolean .'
    )
    assert validate(_graph(P + 'ex:a ex:m "a"@en, "b"@en .'), shapes).conforms


def test_shapes_that_cannot_be_evaluated_are_a_400() -> None:
    shapes = _graph(
        P
        + 'ex:S a sh:NodeShape ; sh:targetNode ex:a ; sh:sparql [ sh:select "SELECT $this WHERE { $this ex:p ?x . MINUS { $this ex:q ?x } }" ] .'
    )
    with pytest.raises(InvalidField) as caught:
        validate(_graph(P + "ex:a ex:p 1 ."), shapes)
    assert caught.value.reason == "invalid_shapes"
