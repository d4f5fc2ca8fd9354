"""``POST /explain`` (tools-graphs-governance §8.2, errata: ROOT plus its companion): base facts,
OWL families with their premises (EX-4: all of them), support re-matched now (EX-1), the depth
cap (EX-3), the Datalog rule branch, and bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.owl.support import DATA, EX, PREFIXES, RDF_TYPE, explain, load, requires_owl
from tests.rest.support import kb_of, problem, serve

pytestmark = requires_owl

RULES = (
    "@prefix rule: <http://quipu.local/rule#> .\n"
    f'<{EX}rules/base> a rule:Rule ; rule:id "base" ; rule:head "reach(?x, ?y)" ; rule:body "dep(?x, ?y)" ; '
    f'rule:prefix "{EX}" .\n'
    f'<{EX}rules/step> a rule:Rule ; rule:id "step" ; rule:head "reach(?x, ?z)" ; '
    f'rule:body "dep(?x, ?y), reach(?y, ?z)" ; rule:prefix "{EX}" .'
)


def _fact(s: str, p: str, o: str) -> dict[str, str]:
    return {"s": s, "p": p, "o": o}


def _depths(node: dict[str, Any]) -> int:
    """How many levels of derivation a node shows."""
    derivation = node.get("derivation", {})
    children = [p for f in derivation.get("families", []) for p in f["premises"]]
    if isinstance(derivation.get("premises"), list):
        children += derivation["premises"]
    return 1 + max((_depths(c) for c in children), default=0)


def test_a_base_fact_reports_its_transaction_and_source_only(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        tx = (
            kb_of(client)
            .knot(PREFIXES + 'ex:rex a ex:Dog ; ex:name "Rex" .', timestamp="2026-12-01T00:00:00Z")
            .tx_id
        )
        body = explain(client, f"{EX}rex", f"{EX}name", "Rex")
        assert body == {
            "fact": _fact(f"{EX}rex", f"{EX}name", "Rex"),
            "found": True,
            "tx": tx,
            "source": "knot:anonymous",
            "valid_from": "2026-12-01T00:00:00Z",
        }
        absent = explain(client, f"{EX}rex", RDF_TYPE, f"{EX}Cat")
        assert absent == {"fact": _fact(f"{EX}rex", RDF_TYPE, f"{EX}Cat"), "found": False}


def test_an_owl_fact_reports_its_family_and_recurses_into_premises(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client, timestamp="2026-12-01T00:00:00Z")
        body = explain(client, f"{EX}rex", RDF_TYPE, f"{EX}Animal")
        assert body["found"] is True and body["source"] == "owl:materialize"
        (family,) = body["derivation"]["families"]
        assert body["derivation"]["kind"] == "owl"
        assert family["family"] == "subClassOf"
        assert family["axiom"] == f"<{EX}Mammal> rdfs:subClassOf <{EX}Animal>"
        (mammal,) = family["premises"]
        assert mammal["fact"] == _fact(f"{EX}rex", RDF_TYPE, f"{EX}Mammal")
        (dog,) = mammal["derivation"]["families"][0]["premises"]
        assert dog["fact"] == _fact(f"{EX}rex", RDF_TYPE, f"{EX}Dog") and "derivation" not in dog


@pytest.mark.parametrize(
    ("fact", "family", "premises"),
    [
        ((f"{EX}tom", RDF_TYPE, f"{EX}Companion"), "equivalentClass", [(f"{EX}tom", RDF_TYPE, f"{EX}Pet")]),
        ((f"{EX}ann", RDF_TYPE, f"{EX}Owner"), "domain", [(f"{EX}ann", f"{EX}owns", f"{EX}car")]),
        ((f"{EX}car", RDF_TYPE, f"{EX}Possession"), "range", [(f"{EX}ann", f"{EX}owns", f"{EX}car")]),
        (
            (f"{EX}ann", f"{EX}caresFor", f"{EX}rex"),
            "subPropertyOf",
            [(f"{EX}ann", f"{EX}feeds", f"{EX}rex")],
        ),
        (
            (f"{EX}ann", f"{EX}fancies", f"{EX}tea"),
            "equivalentProperty",
            [(f"{EX}ann", f"{EX}likes", f"{EX}tea")],
        ),
        ((f"{EX}bob", f"{EX}childOf", f"{EX}ann"), "inverseOf", [(f"{EX}ann", f"{EX}parentOf", f"{EX}bob")]),
        ((f"{EX}cat", f"{EX}knows", f"{EX}ann"), "symmetric", [(f"{EX}ann", f"{EX}knows", f"{EX}cat")]),
        (
            (f"{EX}a1", f"{EX}ancestorOf", f"{EX}a3"),
            "transitive",
            [(f"{EX}a1", f"{EX}ancestorOf", f"{EX}a2"), (f"{EX}a2", f"{EX}ancestorOf", f"{EX}a3")],
        ),
    ],
)
def test_each_family_is_explained(
    tmp_path: Path, fact: tuple[str, str, str], family: str, premises: list[tuple[str, str, str]]
) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client)
        body = explain(client, *fact)
        assert [f["family"] for f in body["derivation"]["families"]] == [family]
        shown = [tuple(p["fact"].values()) for p in body["derivation"]["families"][0]["premises"]]
        assert shown == premises


def test_ex4_every_applicable_family_is_reported(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:rex a ex:Dog ; ex:hasPup ex:pup .")
        load(client, turtle=PREFIXES + "ex:Dog rdfs:subClassOf ex:Mammal . ex:hasPup rdfs:domain ex:Mammal .")
        body = explain(client, f"{EX}rex", RDF_TYPE, f"{EX}Mammal")
        assert [f["family"] for f in body["derivation"]["families"]] == ["subClassOf", "domain"]


def test_ex1_support_is_re_matched_against_the_current_graph(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client)
        kb_of(client).retract(f"{EX}a2", f"{EX}ancestorOf")
        body = explain(client, f"{EX}a1", f"{EX}ancestorOf", f"{EX}a3")
        assert body["found"] is True  # the materialised fact stays (OL-4 and no reactive mode)
        assert body["derivation"]["kind"] == "owl" and "families" not in body["derivation"]
        assert "no stored axiom derives" in body["derivation"]["note"]


def test_no_stored_ontology_is_a_note(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client)
        client.post("/ontology", json={"action": "remove", "name": "zoo"})
        body = explain(client, f"{EX}rex", RDF_TYPE, f"{EX}Animal")
        assert body["derivation"] == {
            "kind": "owl",
            "note": "no ontologies are stored: nothing derives this fact any more",
        }


def test_ex3_depth_falls_per_level_and_mutual_support_terminates(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        # (a s b) and (b s a) are both derived, each from the other: symmetric both ways
        kb_of(client).knot(PREFIXES + "ex:a ex:q ex:b .")
        load(client, turtle=PREFIXES + "ex:s a owl:SymmetricProperty . ex:q rdfs:subPropertyOf ex:s .")
        body = explain(client, f"{EX}b", f"{EX}s", f"{EX}a")  # default depth 5
        assert _depths(body) == 6  # five derived levels, then a depth-capped one
        capped = explain(client, f"{EX}b", f"{EX}s", f"{EX}a", depth=0)
        assert capped["derivation"] == {"kind": "depth-capped"}
        one = explain(client, f"{EX}b", f"{EX}s", f"{EX}a", depth=1)
        (family,) = one["derivation"]["families"]
        assert family["premises"][0]["derivation"] == {"kind": "depth-capped"}


def test_a_rule_derivation_re_matches_the_stored_rule(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:a ex:dep ex:b . ex:b ex:dep ex:c .")
        assert (
            client.post("/shapes", json={"action": "load", "name": "rules", "turtle": RULES}).status_code
            == 200
        )
        assert client.post("/reason", json={}).status_code == 200
        body = explain(client, f"{EX}a", f"{EX}reach", f"{EX}c")
        assert body["source"] == "reasoner:step"
        derivation = body["derivation"]
        assert (derivation["kind"], derivation["rule"], derivation["head"]) == ("rule", "step", f"{EX}reach")
        first, second = derivation["premises"]
        assert first["fact"] == _fact(f"{EX}a", f"{EX}dep", f"{EX}b") and "derivation" not in first
        assert second["fact"] == _fact(f"{EX}b", f"{EX}reach", f"{EX}c")
        assert second["derivation"]["rule"] == "base"
        kb_of(client).retract(f"{EX}a", f"{EX}dep")
        gone = explain(client, f"{EX}a", f"{EX}reach", f"{EX}c")["derivation"]
        assert gone["premises"] == {"note": "no current premises re-match the rule"}
        client.post("/shapes", json={"action": "remove", "name": "rules"})
        assert explain(client, f"{EX}a", f"{EX}reach", f"{EX}c")["derivation"] == {
            "kind": "rule",
            "rule": "step",
            "note": "the rule is no longer stored",
        }


@pytest.mark.parametrize(
    ("request_body", "reason", "field"),
    [
        ({"p": f"{EX}p", "o": "x"}, "missing_field", "s"),
        ({"s": f"{EX}s", "o": "x"}, "missing_field", "p"),
        ({"s": f"{EX}s", "p": f"{EX}p"}, "missing_field", "o"),
        ({"s": f"{EX}nobody", "p": f"{EX}name", "o": "x"}, "not_found", "s"),
        ({"s": f"{EX}rex", "p": f"{EX}nothing", "o": "x"}, "not_found", "p"),
        ({"s": f"{EX}rex", "p": f"{EX}name", "o": "x", "depth": 11}, "invalid_field", "depth"),
        ({"s": f"{EX}rex", "p": f"{EX}name", "o": "x", "depth": -1}, "invalid_field", "depth"),
    ],
)
def test_bad_requests_name_the_field(
    tmp_path: Path, request_body: dict[str, Any], reason: str, field: str
) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + 'ex:rex ex:name "Rex" .')
        body = problem(client.post("/explain", json=request_body), reason)
        assert body["field"] == field


def test_the_object_is_an_iri_only_when_it_names_a_known_term(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + f'ex:rex ex:home ex:kennel ; ex:note "{EX}kennel2" .')
        assert explain(client, f"{EX}rex", f"{EX}home", f"{EX}kennel")["found"] is True
        assert explain(client, f"{EX}rex", f"{EX}note", f"{EX}kennel2")["found"] is True  # a literal
        assert explain(client, f"{EX}rex", f"{EX}note", f"{EX}kennel", extra=1)["found"] is False
