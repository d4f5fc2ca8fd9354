"""pyshacl validates straight over the rdflib Store view, at any read point."""

from __future__ import annotations

from pathlib import Path

import pyshacl
from rdflib import Graph, URIRef
from rdflib.namespace import SH

import quipu
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.views import TemporalView
from tests.backends import store_location

DATA = """@prefix ex: <http://ex.org/> .
ex:alice a ex:Person ; ex:age 30 ; ex:knows ex:bob .
ex:bob a ex:Person ; ex:age "old" .
"""
SHAPES = """@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix ex: <http://ex.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;
  sh:property [ sh:path ex:age ; sh:datatype xsd:integer ; sh:maxCount 1 ] ;
  sh:property [ sh:path ex:knows ; sh:class ex:Person ] .
"""


def _focus_nodes(kb: quipu.api.KnowledgeBase, view: TemporalView) -> set[str]:
    shapes = Graph().parse(data=SHAPES, format="turtle")
    with kb.db.read() as conn:
        ds = dataset(QuipuView(kb.db, conn, view))
        _conforms, report, _text = pyshacl.validate(ds, shacl_graph=shapes, inference="none")
    return {str(o) for o in report.objects(None, SH.focusNode) if isinstance(o, URIRef)}


def test_pyshacl_reports_violations_from_the_store(tmp_path: Path) -> None:
    with quipu.open(store_location(tmp_path, "kb.db")) as kb:
        first = kb.knot(DATA, timestamp="2026-01-01T00:00:00Z")
        assert _focus_nodes(kb, TemporalView()) == {"http://ex.org/bob"}
        # Fix bob's age; the current state conforms, the state as of the first write does not.
        kb.set("http://ex.org/bob", "http://ex.org/age", {"int": 41}, timestamp="2026-02-01T00:00:00Z")
        assert _focus_nodes(kb, TemporalView()) == set()
        assert _focus_nodes(kb, TemporalView.at(as_of_tx=first.tx_id)) == {"http://ex.org/bob"}
