"""SPARQL through ``kb.query`` over the rdflib view: dataset semantics (DM §13.2), literals, forms."""

from __future__ import annotations

from pathlib import Path

import pytest
from rdflib import BNode, Graph, Literal, URIRef

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import Forbidden, QueryError
from quipu.store.rdflib_store import QuipuView, dataset
from quipu.store.views import TemporalView
from tests.backends import store_location

from . import EX, PREFIXES, XSD, column, number, select

G1, G2 = EX + "g1", EX + "g2"
META = "urn:quipu:graph:meta"
ROOT_IRI = "urn:quipu:graph:root"
SPO = "SELECT ?s ?o WHERE { ?s <http://example.org/p> ?o }"


@pytest.fixture
def graphs(kb: KnowledgeBase) -> KnowledgeBase:
    """ROOT, two named graphs and one statement shared by ROOT and both graphs."""
    kb.create_graph(G1)
    kb.create_graph(G2)
    kb.knot(f'<{EX}r> <{EX}p> "root" .\n<{EX}shared> <{EX}p> "same" .')
    kb.knot(f'<{EX}x> <{EX}p> "one" .\n<{EX}shared> <{EX}p> "same" .', graph=G1)
    kb.knot(f'<{EX}y> <{EX}p> "two" .\n<{EX}shared> <{EX}p> "same" .', graph=G2)
    return kb


# -- dataset semantics --------------------------------------------------------------------------


def test_default_graph_is_root_only(graphs: KnowledgeBase) -> None:
    assert column(select(graphs, SPO), "o") == ["root", "same"]
    assert graphs.query(f'ASK {{ <{EX}x> <{EX}p> "one" }}') is False


def test_graph_parameter_selects_one_named_graph(graphs: KnowledgeBase) -> None:
    assert column(select(graphs, SPO, graph=G1), "o") == ["one", "same"]
    assert column(select(graphs, SPO, graph=G2), "o") == ["same", "two"]
    assert column(select(graphs, SPO, graph=ROOT_IRI), "o") == ["root", "same"]


def test_unknown_graph_parameter_gives_zero_rows_not_root(graphs: KnowledgeBase) -> None:
    result = graphs.query_result(SPO, graph=EX + "nope")
    assert result.rows == []
    assert result.variables == ["s", "o"]
    # A term that exists but is not a registered graph is unknown too.
    assert select(graphs, SPO, graph=EX + "r") == []


def test_from_union_deduplicates(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?s ?o FROM <{G1}> FROM <{G2}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q), "o") == ["one", "same", "two"]
    q_all = f"SELECT ?s ?o FROM <{ROOT_IRI}> FROM <{G1}> FROM <{G2}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q_all), "o") == ["one", "root", "same", "two"]
    count = f"SELECT (COUNT(*) AS ?n) FROM <{G1}> FROM <{G2}> WHERE {{ ?s ?p ?o }}"
    assert [number(r["n"]) for r in select(graphs, count)] == [3]


def test_from_overrides_the_graph_parameter(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?s ?o FROM <{G2}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q, graph=G1), "o") == ["same", "two"]


def test_from_root_is_root(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?s ?o FROM <{ROOT_IRI}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q), "o") == ["root", "same"]


def test_from_unknown_graphs_contribute_nothing(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?o FROM <{EX}nope> WHERE {{ ?s <{EX}p> ?o }}"
    assert select(graphs, q) == []
    q2 = f"SELECT ?o FROM <{EX}nope> FROM <{G1}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q2), "o") == ["one", "same"]


def test_from_without_from_named_makes_graph_match_nothing(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?o FROM <{G1}> WHERE {{ GRAPH <{G1}> {{ ?s <{EX}p> ?o }} }}"
    assert select(graphs, q) == []
    q_var = f"SELECT ?g FROM <{G1}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"
    assert select(graphs, q_var) == []


def test_from_named_restricts_graph_variable(graphs: KnowledgeBase) -> None:
    q = f"SELECT DISTINCT ?g FROM NAMED <{G2}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}"
    assert column(select(graphs, q), "g") == [G2]


def test_from_named_activates_a_fixed_graph(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?o FROM NAMED <{G2}> WHERE {{ GRAPH <{G2}> {{ ?s <{EX}p> ?o }} }}"
    assert column(select(graphs, q), "o") == ["same", "two"]


def test_from_named_hides_other_named_graphs(graphs: KnowledgeBase) -> None:
    q_fixed = f"SELECT ?o FROM NAMED <{G2}> WHERE {{ GRAPH <{G1}> {{ ?s <{EX}p> ?o }} }}"
    assert select(graphs, q_fixed) == []


def test_from_named_alone_keeps_root_as_the_default_graph(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?o FROM NAMED <{G2}> WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(graphs, q), "o") == ["root", "same"]


def test_graph_variable_ranges_over_named_graphs_only(graphs: KnowledgeBase) -> None:
    # The meta-graph is registered at store creation; a label gives it content, so its exclusion
    # is observable (nothing else writes it: knot refuses it).
    graphs.graphs.label(G1, timestamp="2026-01-01T00:00:00Z", freshness="fresh")
    fresh = "https://quipu.dev/ontology/freshness"
    q = "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"
    assert column(select(graphs, q), "g") == [G1, G2]
    q_shared = f'SELECT ?g WHERE {{ GRAPH ?g {{ <{EX}shared> <{EX}p> "same" }} }}'
    assert column(select(graphs, q_shared), "g") == [G1, G2]
    assert select(graphs, f'SELECT ?g WHERE {{ GRAPH ?g {{ <{EX}r> <{EX}p> "root" }} }}') == []
    assert select(graphs, f'SELECT ?g WHERE {{ GRAPH ?g {{ <{G1}> <{fresh}> "fresh" }} }}') == []
    # The meta-graph is reachable when a read names it as its default graph.
    assert column(select(graphs, f"SELECT ?o WHERE {{ ?s <{fresh}> ?o }}", graph=META), "o") == ["fresh"]
    assert column(select(graphs, f"SELECT ?o FROM <{META}> WHERE {{ ?s <{fresh}> ?o }}"), "o") == ["fresh"]
    # ...and it is never part of ROOT.
    assert select(graphs, f"SELECT ?o WHERE {{ ?s <{fresh}> ?o }}") == []


def test_graph_with_a_fixed_iri(graphs: KnowledgeBase) -> None:
    q = f"SELECT ?o WHERE {{ GRAPH <{G1}> {{ ?s <{EX}p> ?o }} }}"
    assert column(select(graphs, q), "o") == ["one", "same"]
    assert select(graphs, f"SELECT ?o WHERE {{ GRAPH <{EX}nope> {{ ?s ?p ?o }} }}") == []
    # Combining the default graph (ROOT) with a named graph in one query.
    q_join = f"SELECT ?o1 ?o2 WHERE {{ <{EX}r> <{EX}p> ?o1 . GRAPH <{G2}> {{ <{EX}y> <{EX}p> ?o2 }} }}"
    assert select(graphs, q_join) == [{"o1": Literal("root"), "o2": Literal("two")}]


def test_property_path_inside_graph_variable_stays_in_each_graph(kb: KnowledgeBase) -> None:
    # [changed from DM 13.2 rule 7, which refuses these]: the path is evaluated once per graph,
    # so it never joins a hop in one graph to a hop in another.
    g2 = EX + "g2"
    kb.create_graph(G1)
    kb.create_graph(g2)
    kb.knot(f"<{EX}a> <{EX}k> <{EX}b> .", graph=G1)
    kb.knot(f"<{EX}b> <{EX}k> <{EX}c> .", graph=g2)
    kb.knot(f"<{EX}a> <{EX}k> <{EX}b> .\n<{EX}b> <{EX}k> <{EX}c> .")  # ROOT is not in GRAPH ?g
    rows = kb.query(f"SELECT ?g ?o WHERE {{ GRAPH ?g {{ <{EX}a> <{EX}k>+ ?o }} }}")
    assert rows == [{"g": URIRef(G1), "o": URIRef(EX + "b")}]
    two_hops = kb.query(f"SELECT ?g WHERE {{ GRAPH ?g {{ <{EX}a> <{EX}k>/<{EX}k> ?o }} }}")
    assert two_hops == []
    inverse = kb.query(f"SELECT ?g ?x WHERE {{ GRAPH ?g {{ ?x ^<{EX}k> <{EX}b> }} }}")
    assert inverse == [{"g": URIRef(g2), "x": URIRef(EX + "c")}]


def test_property_path_inside_a_fixed_graph_stays_in_it(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}k> <{EX}b> .\n<{EX}b> <{EX}k> <{EX}c> .")
    kb.knot(f"<{EX}c> <{EX}k> <{EX}d> .", graph=G1)
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}k>+ ?o }}"
    assert column(select(kb, q), "o") == [EX + "b", EX + "c"]
    q_g = f"SELECT ?o WHERE {{ GRAPH <{G1}> {{ <{EX}c> <{EX}k>* ?o }} }}"
    assert column(select(kb, q_g), "o") == [EX + "c", EX + "d"]


def test_service_is_refused(graphs: KnowledgeBase) -> None:
    with pytest.raises(QueryError, match="SERVICE"):
        graphs.query("SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }")


@pytest.mark.parametrize("text", ["SELECT ?o WHERE { ?s ?p ", "SELEKT * WHERE {}", "", "ASK { ?s ?p }"])
def test_parse_errors(graphs: KnowledgeBase, text: str) -> None:
    with pytest.raises(QueryError):
        graphs.query(text)


# -- result forms -------------------------------------------------------------------------------


def test_ask_returns_a_bool(graphs: KnowledgeBase) -> None:
    yes = graphs.query(f'ASK {{ <{EX}r> <{EX}p> "root" }}')
    no = graphs.query(f'ASK {{ <{EX}r> <{EX}p> "other" }}')
    assert yes is True
    assert no is False


def test_construct_returns_a_graph(graphs: KnowledgeBase) -> None:
    out = graphs.query(f"CONSTRUCT {{ ?s <{EX}copy> ?o }} WHERE {{ ?s <{EX}p> ?o }}")
    assert isinstance(out, Graph)
    assert set(out) == {
        (URIRef(EX + "r"), URIRef(EX + "copy"), Literal("root")),
        (URIRef(EX + "shared"), URIRef(EX + "copy"), Literal("same")),
    }
    result = graphs.query_result(f"DESCRIBE <{EX}r>")
    assert result.form == "DESCRIBE"
    assert result.graph is not None
    assert (URIRef(EX + "r"), URIRef(EX + "p"), Literal("root")) in result.graph


def test_select_variables_and_unbound(graphs: KnowledgeBase) -> None:
    q = f'SELECT ?s ?missing WHERE {{ ?s <{EX}p> "root" OPTIONAL {{ ?s <{EX}nothing> ?missing }} }}'
    result = graphs.query_result(q)
    assert result.form == "SELECT"
    assert result.variables == ["s", "missing"]
    assert result.rows == [{"s": URIRef(EX + "r")}]  # an unbound variable is absent from its row
    assert result.truncated is False


def test_max_sparql_rows_truncates(tmp_path: Path) -> None:
    kb = quipu.open(store_location(tmp_path, "capped.db"), max_sparql_rows=2)
    try:
        kb.knot(f'<{EX}a> <{EX}p> "1", "2", "3" .')
        result = kb.query_result(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}")
        assert len(result.rows) == 2
        assert result.truncated is True
        exact = kb.query_result(f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }} LIMIT 2")
        assert exact.truncated is False
    finally:
        kb.close()


# -- values -------------------------------------------------------------------------------------


def test_literal_round_trip(kb: KnowledgeBase) -> None:
    kb.knot(
        PREFIXES
        + 'ex:a ex:int 42 ; ex:neg "-7"^^xsd:integer ; ex:dbl 2.5e0 ; ex:bool true ; ex:lang "chat"@fr ;'
        + ' ex:dec "01.50"^^xsd:decimal ; ex:str "plain" ; ex:xstr "typed"^^xsd:string .'
    )
    rows = select(kb, f"SELECT ?p ?o WHERE {{ <{EX}a> ?p ?o }}")
    got = {str(r["p"])[len(EX) :]: r["o"] for r in rows}
    assert got["int"] == Literal("42", datatype=URIRef(XSD + "integer"))
    assert got["neg"] == Literal("-7", datatype=URIRef(XSD + "integer"))
    assert got["dbl"] == Literal("2.5e0", datatype=URIRef(XSD + "double"), normalize=False)
    assert str(got["dbl"]) == "2.5e0"  # a double keeps the lexical form it was written with
    assert got["bool"] == Literal("true", datatype=URIRef(XSD + "boolean"))
    assert got["lang"] == Literal("chat", lang="fr")
    dec = got["dec"]
    assert isinstance(dec, Literal)
    assert str(dec) == "01.50"  # lexical form preserved, not normalised
    assert dec.datatype == URIRef(XSD + "decimal")
    assert got["str"] == Literal("plain")
    assert got["xstr"] == Literal("typed")  # xsd:string is stored as a plain string
    for name in ("int", "neg", "dbl", "bool", "lang", "dec", "str"):
        term = got[name]
        assert isinstance(term, Literal)
        # Each value can be matched again as a constant pattern object.
        back = select(kb, f"SELECT ?s WHERE {{ ?s <{EX}{name}> {term.n3()} }}")
        assert back == [{"s": URIRef(EX + "a")}], name


def test_typed_literal_patterns_match_by_value_encoding(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + 'ex:a ex:n 5 ; ex:d "1.50"^^xsd:decimal ; ex:s "x" .')
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}n> "5"^^<{XSD}integer> }}') == [{"s": URIRef(EX + "a")}]
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}n> "05"^^<{XSD}integer> }}') == [{"s": URIRef(EX + "a")}]
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}d> "1.50"^^<{XSD}decimal> }}') == [{"s": URIRef(EX + "a")}]
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}d> "1.5"^^<{XSD}double> }}') == []
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}s> "x"^^<{XSD}string> }}') == [{"s": URIRef(EX + "a")}]
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}s> "x"@en }}') == []
    # A pattern literal that cannot be encoded matches nothing rather than failing.
    assert select(kb, f'SELECT ?s WHERE {{ ?s <{EX}n> "abc"^^<{XSD}integer> }}') == []


def test_filters_compare_values(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + "ex:a ex:n 5 .\nex:b ex:n 12 .\nex:c ex:n 1.5e1 .\n")
    q = f"SELECT ?s WHERE {{ ?s <{EX}n> ?n FILTER(?n > 10) }}"
    assert column(select(kb, q), "s") == [EX + "b", EX + "c"]
    q_sum = f"SELECT (SUM(?n) AS ?total) WHERE {{ ?s <{EX}n> ?n }}"
    (row,) = select(kb, q_sum)
    assert number(row["total"]) == 32.0


def test_blank_nodes_are_blank_not_iris(kb: KnowledgeBase) -> None:
    """DM §1.5 [changed]: isBlank() is true for a stored blank node and isIRI() is false."""
    kb.knot(PREFIXES + 'ex:a ex:addr _:h .\n_:h ex:city "Lima" .\n')
    q = (
        f"SELECT ?o (isBlank(?o) AS ?blank) (isIRI(?o) AS ?iri) (isLiteral(?o) AS ?lit)"
        f" WHERE {{ <{EX}a> <{EX}addr> ?o }}"
    )
    (row,) = select(kb, q)
    assert isinstance(row["o"], BNode)
    assert row["blank"] == Literal(True)
    assert row["iri"] == Literal(False)
    assert row["lit"] == Literal(False)
    assert column(select(kb, f"SELECT ?a WHERE {{ ?a <{EX}addr> ?b . FILTER(isIRI(?a)) }}"), "a") == [
        EX + "a"
    ]
    # Joining through the blank node works, and the IRI test is false for it.
    q_join = f"SELECT ?c WHERE {{ <{EX}a> <{EX}addr> ?b . ?b <{EX}city> ?c . FILTER(!isIRI(?b)) }}"
    assert column(select(kb, q_join), "c") == ["Lima"]


def test_claims_never_duplicate_solutions(kb: KnowledgeBase) -> None:
    for src in ("A", "B", "C"):
        kb.knot(f'<{EX}a> <{EX}p> "v" .', source=src)
    assert select(kb, f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}") == [{"o": Literal("v")}]
    (row,) = select(kb, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    assert number(row["n"]) == 1


# -- the view itself ----------------------------------------------------------------------------


def test_the_view_is_read_only(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "v" .')
    with kb.db.read() as conn:
        store = QuipuView(kb.db, conn, TemporalView())
        ds = dataset(store)
        triple = (URIRef(EX + "a"), URIRef(EX + "p"), Literal("w"))
        assert (URIRef(EX + "a"), URIRef(EX + "p"), Literal("v")) in ds
        assert len(store) == 1
        with pytest.raises(Forbidden, match="read-only"):
            ds.add(triple)
        with pytest.raises(Forbidden, match="read-only"):
            ds.addN([(*triple, ds.default_context)])
        with pytest.raises(Forbidden, match="read-only"):
            ds.remove((URIRef(EX + "a"), URIRef(EX + "p"), Literal("v")))
        with pytest.raises(Forbidden, match="read-only"):
            ds.graph(URIRef(EX + "new-graph"))
    assert kb.export() == f'<{EX}a> <{EX}p> "v" .\n'


def test_the_view_answers_patterns_at_its_read_point(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    kb.set(EX + "a", EX + "p", "2")
    with kb.db.read() as conn:
        now = QuipuView(kb.db, conn, TemporalView())
        then = QuipuView(kb.db, conn, TemporalView.at(as_of_tx=1))
        pattern = (URIRef(EX + "a"), URIRef(EX + "p"), None)
        assert [t[2] for t, _ in now.triples(pattern)] == [Literal("2")]
        assert [t[2] for t, _ in then.triples(pattern)] == [Literal("1")]
        # Unknown terms match nothing (and are not interned).
        assert list(now.triples((URIRef(EX + "unknown"), None, None))) == []
        assert list(now.contexts()) == []


# -- more semantics -----------------------------------------------------------------------------


def test_type_patterns_are_asserted_only(kb: KnowledgeBase) -> None:
    """DM §13.3: ?s a <T> does not expand over rdfs:subClassOf; the explicit path does."""
    kb.knot(PREFIXES + "ex:Student rdfs:subClassOf ex:Person .\nex:s a ex:Student .\nex:p a ex:Person .\n")
    assert column(select(kb, f"SELECT ?s WHERE {{ ?s a <{EX}Person> }}"), "s") == [EX + "p"]
    q = f"SELECT ?s WHERE {{ ?s a/<http://www.w3.org/2000/01/rdf-schema#subClassOf>* <{EX}Person> }}"
    assert column(select(kb, q), "s") == [EX + "p", EX + "s"]


def test_temporal_parameters_apply_inside_property_paths(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}k> <{EX}b> .", timestamp="2026-01-01T00:00:00Z")  # tx 1
    kb.knot(f"<{EX}b> <{EX}k> <{EX}c> .", timestamp="2026-02-01T00:00:00Z")  # tx 2
    kb.retract(EX + "a", timestamp="2026-03-01T00:00:00Z")  # tx 3
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}k>+ ?o }}"
    assert column(select(kb, q, as_of_tx=1), "o") == [EX + "b"]
    assert column(select(kb, q, as_of_tx=2), "o") == [EX + "b", EX + "c"]
    assert select(kb, q) == []
    assert column(select(kb, q, valid_at="2026-01-15T00:00:00Z"), "o") == [EX + "b"]
    assert column(select(kb, q, valid_at="2026-02-15T00:00:00Z"), "o") == [EX + "b", EX + "c"]


def test_max_sparql_rows_cuts_graph_results(tmp_path: Path) -> None:
    kb = quipu.open(store_location(tmp_path, "capped.db"), max_sparql_rows=2)
    try:
        kb.knot(f'<{EX}a> <{EX}p> "1", "2", "3" .')
        result = kb.query_result("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }")
        assert result.truncated is True
        assert result.graph is not None
        assert len(result.graph) == 2
    finally:
        kb.close()


def test_language_tag_patterns_are_case_insensitive(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}l> "chat"@FR-ca .')
    filtered = f'SELECT ?s WHERE {{ ?s <{EX}l> ?o FILTER(?o = "chat"@FR-CA) }}'
    assert column(select(kb, filtered), "s") == [EX + "a"]
    constant = f'SELECT ?s WHERE {{ ?s <{EX}l> "chat"@FR-CA }}'
    assert column(select(kb, constant), "s") == [EX + "a"]
