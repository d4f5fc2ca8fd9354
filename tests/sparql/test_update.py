"""SPARQL 1.1 Update as bitemporal facts (tools-core §3.10), on a real SQLite file per test."""

from __future__ import annotations

from typing import Any

import pytest
import rdflib
from rdflib import Literal, URIRef
from sqlalchemy import select

from quipu.api import KnowledgeBase
from quipu.errors import BadLiteral, InvalidField, QueryError, WriteRefused
from quipu.rdfio.parse import skolem_prefix
from quipu.store.schema import ROOT_IRI, facts, graphs, metadata, transactions

EX = "http://example.org/"
PREFIX = f"PREFIX : <{EX}>\n"
XSD = "http://www.w3.org/2001/XMLSchema#"
G1, G2 = EX + "g1", EX + "g2"


def update(kb: KnowledgeBase, text: str, **kwargs: Any) -> dict[str, Any]:
    return kb.update(PREFIX + text, **kwargs)


def objects(kb: KnowledgeBase, s: str, p: str, **read: Any) -> set[str]:
    rows = kb.query(f"SELECT ?o WHERE {{ <{EX}{s}> <{EX}{p}> ?o }}", **read)
    assert isinstance(rows, list)
    return {str(row["o"]) for row in rows}


def in_graph(kb: KnowledgeBase, graph: str) -> set[tuple[str, str, str]]:
    rows = kb.query(f"SELECT ?s ?p ?o WHERE {{ GRAPH <{graph}> {{ ?s ?p ?o }} }}")
    assert isinstance(rows, list)
    return {(str(r["s"]), str(r["p"]), str(r["o"])) for r in rows}


def tx_rows(kb: KnowledgeBase) -> list[tuple[int, str | None, str | None, int, str]]:
    """(id, actor, source, graph, timestamp) of every transaction."""
    with kb.db.read() as conn:
        t = transactions.c
        rows = conn.execute(select(t.id, t.actor, t.source, t.graph, t.timestamp).order_by(t.id))
        return [(int(r[0]), r[1], r[2], int(r[3]), r[4]) for r in rows]


def fact_rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    with kb.db.read() as conn:
        c = facts.c
        query = select(c.g, c.tx, c.op, c.valid_from, c.valid_to, c.retracted_tx, c.v).order_by(c.id)
        return [dict(r._mapping) for r in conn.execute(query)]


def dump(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table: the whole store's content."""
    with kb.db.read() as conn:
        return {
            name: sorted(tuple(r) for r in conn.execute(select(table)))
            for name, table in sorted(metadata.tables.items())
        }


def graph_id(kb: KnowledgeBase, iri: str) -> int:
    with kb.db.read() as conn:
        return kb.db.terms.lookup(conn, (iri,))[iri]


# -- INSERT DATA / DELETE DATA ---------------------------------------------------------------


def test_insert_data_asserts_into_root_with_default_source_and_now(kb: KnowledgeBase) -> None:
    result = update(kb, "INSERT DATA { :a :p 1 . :a :q :b }")
    assert result["asserted"] == 2 and result["retracted"] == 0
    assert result["graphs"] == [{"graph": None, "tx": result["tx"], "asserted": 2, "retracted": 0}]
    [(tx, actor, source, graph, stamp)] = tx_rows(kb)
    assert (tx, actor, source, graph) == (result["tx"], None, "sparql-update", 0)
    # valid_from is the transaction time (no caller timestamp exists on /update).
    assert {f["valid_from"] for f in fact_rows(kb)} == {stamp}
    assert objects(kb, "a", "p") == {"1"}


def test_actor_and_source_are_recorded_declarations(kb: KnowledgeBase) -> None:
    update(kb, "INSERT DATA { :a :p 1 }", actor="alice", source="import:crm")
    assert tx_rows(kb)[0][1:3] == ("alice", "import:crm")


@pytest.mark.parametrize("bad", ["", "  ", "x" * 257, "a\nb"])
def test_malformed_actor_or_source_is_refused(kb: KnowledgeBase, bad: str) -> None:
    for field in ("actor", "source"):
        with pytest.raises(InvalidField):
            update(kb, "INSERT DATA { :a :p 1 }", **{field: bad})
    assert tx_rows(kb) == []


def test_insert_of_a_visible_statement_is_no_change(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> 1 .", source="producer")
    before = fact_rows(kb)
    result = update(kb, "INSERT DATA { :a :p 1 }")
    # Rule 4: no count, no transaction, and no ownership claim for sparql-update.
    assert result == {"tx": None, "asserted": 0, "retracted": 0, "graphs": []}
    assert fact_rows(kb) == before
    assert len(tx_rows(kb)) == 1


def test_references_and_literals_of_one_predicate_in_one_request(kb: KnowledgeBase) -> None:
    result = update(kb, 'INSERT DATA { :a :p :b , 1 , "x" , :c }')
    assert result["asserted"] == 4
    assert update(kb, 'DELETE DATA { :a :p :b , 1 , "x" , :c }')["retracted"] == 4


def test_repeating_insert_data_is_idempotent(kb: KnowledgeBase) -> None:
    first = update(kb, "INSERT DATA { :a :p 1 }")
    again = update(kb, "INSERT DATA { :a :p 1 }")
    assert first["asserted"] == 1
    assert again["tx"] is None and again["asserted"] == 0


def test_delete_retracts_every_owner_and_never_removes_rows(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", source="A", valid_from="2026-01-01T00:00:00Z")
    second = kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", source="B", valid_from="2026-01-01T00:00:00Z")
    rows_before = len(fact_rows(kb))
    result = update(kb, "DELETE DATA { :a :p :b }")
    assert result["retracted"] == 1 and result["asserted"] == 0  # one statement, two claims
    assert objects(kb, "a", "p") == set()
    # History stays: the statement is visible as of the transaction before the delete ...
    assert objects(kb, "a", "p", as_of_tx=second.tx_id) == {EX + "b"}
    # ... and at a valid instant before the closure stamp.
    assert objects(kb, "a", "p", valid_at="2026-06-01T00:00:00Z") == {EX + "b"}
    rows = fact_rows(kb)
    assert len(rows) == rows_before + 1  # the retraction record; nothing was deleted
    stamp = tx_rows(kb)[-1][4]
    claims = [r for r in rows if r["op"] == 1]
    assert all(r["valid_to"] == stamp and r["retracted_tx"] == result["tx"] for r in claims)


def test_delete_of_an_absent_statement_writes_nothing(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    assert update(kb, "DELETE DATA { :a :p 2 . :nobody :p 1 }")["tx"] is None
    assert len(tx_rows(kb)) == 1


def test_literals_match_by_stored_value(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}d> "1.50"^^<{XSD}decimal> .')
    # "01"^^xsd:integer is the stored integer 1; a decimal keeps its lexical form (DM §2).
    result = update(kb, f'DELETE DATA {{ :a :p "01"^^<{XSD}integer> . :a :d "1.50"^^<{XSD}decimal> }}')
    assert result["retracted"] == 2


def test_lexical_forms_are_stored_as_written(kb: KnowledgeBase) -> None:
    update(kb, f'INSERT DATA {{ :a :t "2001-01-01T00:00:00.000Z"^^<{XSD}dateTime> ; :n "01"^^<{XSD}int> }}')
    rows = kb.query(f"SELECT ?o WHERE {{ <{EX}a> ?p ?o }}")
    assert isinstance(rows, list)
    assert {str(r["o"]) for r in rows} == {"2001-01-01T00:00:00.000Z", "01"}
    assert rdflib.NORMALIZE_LITERALS is True  # the parse turns it off only for itself


def test_ill_typed_literals_are_refused_as_knot_refuses_them(kb: KnowledgeBase) -> None:
    # The store cannot encode "abc" as an integer; knot refuses it with BadLiteral, so does update.
    for text in (
        f'INSERT DATA {{ :a :p "abc"^^<{XSD}integer> }}',
        f'DELETE DATA {{ :a :p "x"^^<{XSD}double> }}',
    ):
        with pytest.raises(BadLiteral):
            update(kb, text)
    with pytest.raises(BadLiteral):
        kb.knot(f'<{EX}a> <{EX}p> "abc"^^<{XSD}integer> .')
    assert tx_rows(kb) == []


# -- DELETE/INSERT … WHERE -------------------------------------------------------------------


def test_delete_insert_where_across_graphs_is_one_transaction_per_graph_root_first(kb: KnowledgeBase) -> None:
    kb.create_graph(G2)
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}status> <{EX}old> .")
    kb.knot(f"<{EX}a> <{EX}seen> <{EX}x> .", graph=G1)
    result = update(
        kb,
        """DELETE { ?s :status :old . GRAPH :g1 { ?s :seen ?x } }
           INSERT { GRAPH :g2 { ?s :status :new } . ?s :status :new . GRAPH :g1 { ?s :moved ?x } }
           WHERE { ?s :status :old . GRAPH :g1 { ?s :seen ?x } }""",
    )
    g1, g2 = graph_id(kb, G1), graph_id(kb, G2)
    assert g2 < g1  # registered first, so it must be written first among named graphs
    assert [g["graph"] for g in result["graphs"]] == [None, G2, G1]
    assert [(g["asserted"], g["retracted"]) for g in result["graphs"]] == [(1, 1), (1, 0), (1, 1)]
    assert (result["asserted"], result["retracted"]) == (3, 2)
    ids = [g["tx"] for g in result["graphs"]]
    assert ids == sorted(ids) and result["tx"] == ids[-1]
    written = [row for row in tx_rows(kb) if row[0] in ids]
    assert [row[3] for row in written] == [0, g2, g1]
    assert objects(kb, "a", "status") == {EX + "new"}
    assert in_graph(kb, G1) == {(EX + "a", EX + "moved", EX + "x")}


def test_where_matching_nothing_writes_no_transaction(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    result = update(kb, "DELETE { ?s :p ?o } INSERT { ?s :q ?o } WHERE { ?s :nope ?o }")
    assert result == {"tx": None, "asserted": 0, "retracted": 0, "graphs": []}


def test_delete_where_shorthand(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}p> 2 . <{EX}b> <{EX}p> 3 .")
    assert update(kb, "DELETE WHERE { :a :p ?o }")["retracted"] == 2
    assert objects(kb, "b", "p") == {"3"}


def test_deletions_apply_before_insertions(kb: KnowledgeBase) -> None:
    """The Halloween problem: the WHERE is evaluated once, deletions go first, then insertions."""
    kb.knot(f"<{EX}a> <{EX}salary> 1000 . <{EX}b> <{EX}salary> 1450 .")
    update(
        kb,
        "DELETE { ?s :salary ?o } INSERT { ?s :salary ?v } WHERE { ?s :salary ?o FILTER(?o < 1500) BIND(?o + 100 AS ?v) }",
    )
    assert objects(kb, "a", "salary") == {"1100"}
    assert objects(kb, "b", "salary") == {"1550"}


def test_each_operation_sees_the_previous_ones(kb: KnowledgeBase) -> None:
    result = update(
        kb, "INSERT DATA { :a :p 1 } ; INSERT { ?s :q ?o } WHERE { ?s :p ?o } ; DELETE DATA { :a :p 1 }"
    )
    # The net difference is written: :p came and went inside the request.
    assert (result["asserted"], result["retracted"]) == (1, 0)
    assert objects(kb, "a", "q") == {"1"} and objects(kb, "a", "p") == set()


def test_with_scopes_where_and_templates_to_one_graph(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    kb.knot(f"<{EX}a> <{EX}p> 2 .", graph=G1)
    result = update(kb, "WITH :g1 DELETE { ?s :p ?o } INSERT { ?s :q ?o } WHERE { ?s :p ?o }")
    assert [g["graph"] for g in result["graphs"]] == [G1]
    assert in_graph(kb, G1) == {(EX + "a", EX + "q", "2")}
    assert objects(kb, "a", "p") == {"1"}


def test_using_replaces_the_default_graph_of_where_only(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.create_graph(G2)
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    kb.knot(f"<{EX}b> <{EX}p> 2 .", graph=G2)
    # USING <g1> USING <g2>: WHERE reads their union; the template's default graph stays ROOT.
    result = update(kb, "INSERT { ?s :copied ?o } USING :g1 USING :g2 WHERE { ?s :p ?o }")
    assert [g["graph"] for g in result["graphs"]] == [None]
    assert objects(kb, "a", "copied") == {"1"} and objects(kb, "b", "copied") == {"2"}


def test_using_without_using_named_leaves_no_named_graphs(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    assert update(kb, "INSERT { ?s :q ?o } USING :g2 WHERE { GRAPH :g1 { ?s :p ?o } }")["tx"] is None
    result = update(kb, "INSERT { ?s :q ?o } USING NAMED :g1 WHERE { GRAPH :g1 { ?s :p ?o } }")
    assert result["asserted"] == 1


def test_using_overrides_with_for_where_but_not_for_templates(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    update(kb, "WITH :g1 INSERT { ?s :q ?o } USING <urn:quipu:graph:root> WHERE { ?s :p ?o }")
    assert in_graph(kb, G1) == {(EX + "a", EX + "q", "1")}


def test_unscoped_default_graph_is_root_only(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    assert update(kb, "DELETE WHERE { ?s ?p ?o }")["tx"] is None
    assert in_graph(kb, G1) == {(EX + "a", EX + "p", "1")}


# -- named graphs --------------------------------------------------------------------------------


def test_insert_into_an_unregistered_graph_registers_it(kb: KnowledgeBase) -> None:
    result = update(kb, "INSERT DATA { GRAPH :g1 { :a :p 1 } }")
    assert result["graphs"][0]["graph"] == G1
    with kb.db.read() as conn:
        cls = conn.execute(select(graphs.c["class"]).where(graphs.c.g == graph_id(kb, G1))).scalar()
    assert cls == "committed"
    assert kb.create_graph(G1) is False  # already registered
    assert "<http://example.org/a>" in kb.export(graph=G1)


def test_root_iri_names_root(kb: KnowledgeBase) -> None:
    result = update(kb, "INSERT DATA { GRAPH <urn:quipu:graph:root> { :a :p 1 } }")
    assert result["graphs"][0]["graph"] is None
    assert objects(kb, "a", "p") == {"1"}


def test_writes_into_a_companion_graph_are_refused_before_interning(kb: KnowledgeBase) -> None:
    before = dump(kb)
    with pytest.raises(WriteRefused):
        update(kb, "INSERT DATA { GRAPH <http://example.org/g1#inferred> { :a :p 1 } }")
    assert dump(kb) == before


def test_clear_and_drop_retract_but_keep_rows_and_registration(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    first = kb.knot(f"<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}p> 2 .", graph=G1)
    kb.knot(f"<{EX}a> <{EX}p> 3 .")
    rows = len(fact_rows(kb))
    result = update(kb, "DROP GRAPH :g1")
    assert (result["retracted"], [g["graph"] for g in result["graphs"]]) == (2, [G1])
    assert in_graph(kb, G1) == set()
    assert len(fact_rows(kb)) == rows + 2  # two retraction records, no row removed
    rows_at = kb.query(f"SELECT ?o WHERE {{ GRAPH <{G1}> {{ ?s ?p ?o }} }}", as_of_tx=first.tx_id)
    assert isinstance(rows_at, list) and len(rows_at) == 2
    assert kb.create_graph(G1) is False  # DROP never removes the registration
    assert update(kb, "CLEAR DEFAULT")["retracted"] == 1


def test_clear_all_and_named(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    kb.knot(f"<{EX}a> <{EX}p> 2 .")
    assert [g["graph"] for g in update(kb, "CLEAR NAMED")["graphs"]] == [G1]
    assert objects(kb, "a", "p") == {"2"}
    kb.knot(f"<{EX}a> <{EX}p> 1 .", graph=G1)
    assert [g["graph"] for g in update(kb, "DROP ALL")["graphs"]] == [None, G1]


def test_missing_graphs_fail_unless_silent(kb: KnowledgeBase) -> None:
    for op in ("CLEAR GRAPH :nope", "DROP GRAPH :nope", "ADD :nope TO :g1", "COPY :nope TO DEFAULT"):
        with pytest.raises(QueryError, match=r"^SPARQL update error: graph <http://example\.org/nope>"):
            update(kb, op)
        silent = op.replace(" ", " SILENT ", 1)
        assert update(kb, silent)["tx"] is None


def test_create_registers_without_a_transaction(kb: KnowledgeBase) -> None:
    assert update(kb, "CREATE GRAPH :g1") == {"tx": None, "asserted": 0, "retracted": 0, "graphs": []}
    assert kb.create_graph(G1) is False
    with pytest.raises(QueryError, match="already exists"):
        update(kb, "CREATE GRAPH :g1")
    assert update(kb, "CREATE SILENT GRAPH :g1")["tx"] is None


def test_add_copy_move(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 .")
    kb.knot(f"<{EX}b> <{EX}p> 2 .", graph=G1)
    assert update(kb, "ADD DEFAULT TO :g1")["asserted"] == 1
    assert len(in_graph(kb, G1)) == 2
    result = update(kb, "COPY :g1 TO :g2")  # g2 is new: created and registered
    assert (result["asserted"], result["retracted"]) == (2, 0)
    result = update(kb, "MOVE :g2 TO DEFAULT")
    # Into ROOT: :b :p 2 is new and :a :p 1 already there; g2 loses both.
    assert [(g["graph"], g["asserted"], g["retracted"]) for g in result["graphs"]] == [
        (None, 1, 0),
        (G2, 0, 2),
    ]
    assert update(kb, "COPY :g1 TO :g1")["tx"] is None


def test_load_is_refused_and_load_silent_changes_nothing(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError, match="LOAD is not supported") as caught:
        kb.update("LOAD <http://example.org/data.ttl>")
    assert caught.value.reason == "unsupported"
    assert (
        kb.update("LOAD SILENT <http://example.org/data.ttl> INTO GRAPH <http://example.org/g>")["tx"] is None
    )
    assert tx_rows(kb) == []


# -- atomicity -----------------------------------------------------------------------------------


def test_a_failing_request_leaves_the_store_unchanged(kb: KnowledgeBase) -> None:
    kb.create_graph(G1)
    kb.knot(f"<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}q> 2 .")
    kb.knot(f"<{EX}a> <{EX}p> 3 .", graph=G1)
    before = (dump(kb), kb.export(), kb.export(graph=G1), kb.transactions(), kb.unravel(tx=2))
    with pytest.raises(BadLiteral):
        update(
            kb,
            """INSERT DATA { :new :p :fresh . GRAPH :g9 { :x :y :z } } ;
               DELETE DATA { :a :p 1 } ;
               DELETE { GRAPH :g1 { ?s ?p ?o } } WHERE { GRAPH :g1 { ?s ?p ?o } } ;
               CREATE GRAPH :g8 ;
               INSERT DATA { :a :p "not a number"^^<http://www.w3.org/2001/XMLSchema#integer> }""",
        )
    after = (dump(kb), kb.export(), kb.export(graph=G1), kb.transactions(), kb.unravel(tx=2))
    assert after == before  # no facts, transactions, terms or registrations


def test_the_store_stays_usable_after_a_failed_request(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError):
        update(kb, "INSERT DATA { GRAPH :g1 { :a :p 1 } } ; CREATE GRAPH :g1 ; CREATE GRAPH :g1")
    # The failed request's terms were rolled back and never cached: a new write interns them again.
    result = update(kb, "INSERT DATA { GRAPH :g1 { :a :p 1 } }")
    assert result["asserted"] == 1
    assert in_graph(kb, G1) == {(EX + "a", EX + "p", "1")}


# -- blank nodes ---------------------------------------------------------------------------------


def test_blank_node_skolemisation_is_deterministic(tmp_path: Any) -> None:
    text = PREFIX + "INSERT DATA { :a :p _:x . _:x :q [ :r 1 ] . GRAPH :g1 { :a :p _:x } }"
    exports = []
    for name in ("one.db", "two.db"):
        with KnowledgeBase(str(tmp_path / name)) as store:
            assert store.update(text)["asserted"] == 4
            exports.append((store.export(), store.export(graph=G1)))
            assert store.update(text)["tx"] is None  # the same text reuses the same nodes
    assert exports[0] == exports[1]
    root, named = exports[0]
    # DM §1.5's scheme, shared with knot: _:b + hash(text hash, graph) + _ + label (or anonN).
    prefix = skolem_prefix(text.encode("utf-8"), ROOT_IRI, None)
    assert f"{prefix}x " in root and f"{prefix}anon1 " in root
    assert skolem_prefix(text.encode("utf-8"), G1, None) + "x " in named
    # The destination graph is part of the scope: the "same" _:x differs between ROOT and g1.
    root_x = {part for part in root.split() if part.endswith("_x")}
    named_x = {part for part in named.split() if part.endswith("_x")}
    assert len(root_x) == 1 and len(named_x) == 1 and root_x != named_x


def test_a_different_text_makes_different_blank_nodes(kb: KnowledgeBase) -> None:
    update(kb, "INSERT DATA { :a :p [ :q 1 ] }")
    update(kb, "INSERT DATA { :a :p [ :q 1 ] }  # another text")
    assert len(objects(kb, "a", "p")) == 2


def test_template_blank_nodes_are_fresh_per_solution_and_stable_per_text(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> a <{EX}T> . <{EX}b> a <{EX}T> .")
    text = "INSERT { ?x :has [ :v 1 ] } WHERE { ?x a :T }"
    assert update(kb, text)["asserted"] == 4
    assert objects(kb, "a", "has") != objects(kb, "b", "has")
    assert update(kb, text)["tx"] is None


def test_blank_nodes_bound_from_data_keep_their_identity(kb: KnowledgeBase) -> None:
    update(kb, "INSERT DATA { :a :p [ :q 1 ] }")
    update(kb, "INSERT { GRAPH :g1 { ?b :q ?o } } WHERE { :a :p ?b . ?b :q ?o }")
    [(subject, _, _)] = in_graph(kb, G1)
    assert objects(kb, "a", "p") == {subject}


# -- errors --------------------------------------------------------------------------------------


def test_parse_errors(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError) as caught:
        kb.update("INSERT DATA { :a :p }")
    assert caught.value.message.startswith("SPARQL update error: ")
    assert caught.value.reason == "sparql_update_error"


@pytest.mark.parametrize(
    "text",
    [
        "DELETE DATA { _:b :p 1 }",
        "DELETE { ?s :p [] } WHERE { ?s :p ?o }",
        "DELETE WHERE { _:b :p ?o }",
    ],
)
def test_blank_nodes_in_deletions_are_refused(kb: KnowledgeBase, text: str) -> None:
    with pytest.raises(QueryError, match=r"^SPARQL update error: blank nodes"):
        update(kb, text)


def test_service_is_refused(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError, match="SERVICE"):
        update(kb, "INSERT { ?s :p ?o } WHERE { SERVICE <http://example.org/sparql> { ?s :p ?o } }")


def test_relative_iris_are_refused(kb: KnowledgeBase) -> None:
    for text in ("INSERT DATA { <a> <http://example.org/p> 1 }", "CREATE GRAPH <g>"):
        with pytest.raises(QueryError, match="not an absolute IRI"):
            kb.update(text)
    assert tx_rows(kb) == []


def test_empty_and_operationless_updates(kb: KnowledgeBase) -> None:
    with pytest.raises(QueryError, match="missing 'update'"):
        kb.update("  ")
    assert kb.update(PREFIX)["tx"] is None


def test_inserted_values_read_back_as_rdflib_terms(kb: KnowledgeBase) -> None:
    update(kb, 'INSERT DATA { :a :label "x"@en-GB ; :n 2.5e0 ; :ok true }')
    rows = kb.query(f"SELECT ?p ?o WHERE {{ <{EX}a> ?p ?o }}")
    assert isinstance(rows, list)
    got = {str(r["p"]): r["o"] for r in rows}
    assert got[EX + "label"] == Literal("x", lang="en-gb")
    assert got[EX + "ok"] == Literal(True)
    number = got[EX + "n"]
    assert isinstance(number, Literal) and number.datatype == URIRef(XSD + "double")
