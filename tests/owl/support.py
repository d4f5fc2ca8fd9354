"""Shared pieces of the OWL tests: the extra's requirement, the ontology and the data they use.

Without the extra the feature tests skip, unless ``QUIPU_REQUIRE_OWL`` is set (the CI job that
installs the extra): then they run, and a missing extra fails them (every route answers 400
``owl_not_installed``) instead of skipping them.
"""

from __future__ import annotations

import os
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient

from quipu.config import owl_installed

EX: Final = "http://ex.org/"
RDF_TYPE: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SAME_AS: Final = "http://www.w3.org/2002/07/owl#sameAs"
COMPANION: Final = "urn:quipu:graph:root#inferred"
PREFIXES: Final = (
    f"@prefix ex: <{EX}> .\n@prefix owl: <http://www.w3.org/2002/07/owl#> .\n"
    "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
)
# One axiom (or two) of every family, and the two the write gate enforces.
ONTOLOGY: Final = (
    PREFIXES
    + """
ex:Dog rdfs:subClassOf ex:Mammal . ex:Mammal rdfs:subClassOf ex:Animal .
ex:Pet owl:equivalentClass ex:Companion .
ex:owns rdfs:domain ex:Owner ; rdfs:range ex:Possession .
ex:feeds rdfs:subPropertyOf ex:caresFor .
ex:likes owl:equivalentProperty ex:fancies .
ex:parentOf owl:inverseOf ex:childOf .
ex:knows a owl:SymmetricProperty .
ex:ancestorOf a owl:TransitiveProperty .
ex:Person owl:disjointWith ex:Robot .
ex:ssn a owl:FunctionalProperty .
"""
)
SUMMARY: Final = {
    "subclass_of": 2,
    "subproperty_of": 1,
    "disjoint_with": 1,
    "inverse_of": 1,
    "functional_properties": 1,
    "symmetric_properties": 1,
    "transitive_properties": 1,
    "equivalent_classes": 1,
    "equivalent_properties": 1,
    "domains": 1,
    "ranges": 1,
    "total_triples": 12,
}
# Data for every family: each line is a premise of one family's inference.
DATA: Final = (
    PREFIXES
    + """
ex:rex a ex:Dog .
ex:tom a ex:Pet .
ex:ann ex:owns ex:car .
ex:ann ex:feeds ex:rex .
ex:ann ex:likes ex:tea .
ex:ann ex:parentOf ex:bob .
ex:ann ex:knows ex:cat .
ex:a1 ex:ancestorOf ex:a2 . ex:a2 ex:ancestorOf ex:a3 .
"""
)

requires_owl = pytest.mark.skipif(
    not owl_installed() and not os.environ.get("QUIPU_REQUIRE_OWL"),
    reason="the owl extra is not installed (pip install 'quipu[owl]'; the owl CI job runs these)",
)


def load(client: TestClient, name: str = "zoo", turtle: str = ONTOLOGY, **extra: Any) -> dict[str, Any]:
    response = client.post("/ontology", json={"action": "load", "name": name, "turtle": turtle, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def explain(client: TestClient, s: str, p: str, o: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/explain", json={"s": s, "p": p, "o": o, **extra})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body
