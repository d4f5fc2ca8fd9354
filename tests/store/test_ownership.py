"""Source ownership of facts (DM §5.2, §7) and the derived source keys (DM §4.1, §4.2)."""

from __future__ import annotations

from rdflib import URIRef

from quipu.api import KnowledgeBase

from . import EX, column, count, scalar, select, sql

STATEMENT = f"<{EX}a> <{EX}p> <{EX}b> ."
QUERY = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
COUNT_ALL = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def claims(kb: KnowledgeBase, *, live: bool = False) -> list[tuple[int, str]]:
    """(tx, source) of every claim row (op = 1), optionally only the live ones."""
    where = "f.op = 1" + (" AND f.valid_to IS NULL" if live else "")
    rows = sql(
        kb,
        f"SELECT f.tx, t.source FROM facts f JOIN transactions t ON t.id = f.tx WHERE {where} ORDER BY f.id",
    )
    return [(int(tx), str(src)) for tx, src in rows]


def sources(kb: KnowledgeBase) -> list[str | None]:
    return [t["source"] for t in kb.transactions()["transactions"]]


def test_two_sources_make_two_claims_and_one_statement(kb: KnowledgeBase) -> None:
    a = kb.knot(STATEMENT, source="A")
    b = kb.knot(STATEMENT, source="B")
    assert (a.claims, b.claims) == (1, 1)
    assert claims(kb) == [(a.tx_id, "A"), (b.tx_id, "B")]
    assert count(kb, "facts") == 2
    # One solution, one statement counted.
    assert select(kb, QUERY) == [{"o": URIRef(EX + "b")}]
    assert [int(str(r["n"])) for r in select(kb, COUNT_ALL)] == [1]
    assert kb.stats() == {"facts": 1, "entities": 1, "predicates": 1}
    # The fact-log view shows one row per claim.
    assert [f["tx"] for f in kb.unravel(tx=b.tx_id)["facts"]] == [a.tx_id, b.tx_id]


def test_a_second_owner_changes_no_read_result(kb: KnowledgeBase) -> None:
    """DM §16.5: an identical statement under a second source adds a claim and nothing else."""
    kb.knot(STATEMENT + f'\n<{EX}a> <{EX}name> "A" .\n<{EX}c> <{EX}p> <{EX}a> .', source="A")

    def reads() -> list[object]:
        return [
            kb.export("ntriples"),
            kb.export("turtle"),
            kb.cord(),
            kb.entity(EX + "a", expanded=True),
            kb.stats(),
            select(kb, "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o"),
            select(kb, COUNT_ALL),
        ]

    before = reads()
    out = kb.knot(STATEMENT, source="B")
    assert out.claims == 1
    assert reads() == before


def test_repeating_under_the_same_source_is_idempotent_but_records_a_transaction(kb: KnowledgeBase) -> None:
    first = kb.knot(STATEMENT, source="A")
    again = kb.knot(STATEMENT, source="A")
    assert again.claims == 0
    assert again.count == 1  # statements parsed, not claims written
    assert again.tx_id > first.tx_id > 0  # §4.2: /knot always records its transaction
    assert count(kb, "facts") == 1
    assert count(kb, "transactions") == 2
    assert sources(kb) == ["A", "A"]


def test_second_source_after_first_is_closed_is_a_new_logical_assertion(kb: KnowledgeBase) -> None:
    kb.knot(STATEMENT, source="A")
    kb.retract(EX + "a")
    assert select(kb, QUERY) == []
    again = kb.knot(STATEMENT, source="A")
    assert again.claims == 1  # the closed claim does not count as owned
    assert column(select(kb, QUERY), "o") == [EX + "b"]


def test_three_owners_collapse_everywhere(kb: KnowledgeBase) -> None:
    for src in ("A", "B", "C"):
        kb.knot(STATEMENT + f'\n<{EX}a> <{EX}name> "x" .', source=src)
    assert count(kb, "facts", "op = 1") == 6
    assert len(select(kb, f"SELECT ?p ?o WHERE {{ <{EX}a> ?p ?o }}")) == 2
    assert kb.export().count("\n") == 2
    cord = kb.cord()
    assert [len(e["facts"]) for e in cord["entities"]] == [2]
    assert kb.entity(EX + "a")[EX + "p"] == {"@id": EX + "b"}


def test_unscoped_retract_closes_every_owners_claims(kb: KnowledgeBase) -> None:
    kb.knot(STATEMENT, source="A")
    kb.knot(STATEMENT, source="B")
    out = kb.retract(EX + "a", EX + "p", {"iri": EX + "b"})
    assert out.retracted == 1  # distinct statements, not claims
    assert claims(kb, live=True) == []
    closed = sql(kb, "SELECT valid_to, retracted_tx FROM facts WHERE op = 1 ORDER BY id")
    ts = scalar(kb, "SELECT timestamp FROM transactions WHERE id = ?", out.tx_id)
    assert closed == [(ts, out.tx_id), (ts, out.tx_id)]
    # One retraction record for the statement, though two claims backed it.
    assert count(kb, "facts", "op = 0") == 1
    assert select(kb, QUERY) == []


def test_unscoped_set_closes_every_owners_claims(kb: KnowledgeBase) -> None:
    kb.knot(STATEMENT, source="A")
    kb.knot(STATEMENT, source="B")
    out = kb.set(EX + "a", EX + "p", {"iri": EX + "c"})
    assert (out.retracted, out.asserted) == (1, 1)
    assert [src for _tx, src in claims(kb, live=True)] == ["set:anonymous"]
    assert column(select(kb, QUERY), "o") == [EX + "c"]


def test_ownership_is_per_graph(kb: KnowledgeBase) -> None:
    """A claim in a named graph does not make the ROOT assertion idempotent, nor vice versa."""
    g = EX + "g"
    kb.create_graph(g)
    root = kb.knot(STATEMENT, source="A")
    named = kb.knot(STATEMENT, source="A", graph=g)
    assert (root.claims, named.claims) == (1, 1)
    assert sql(kb, "SELECT g FROM facts ORDER BY id") == [
        (0,),
        (scalar(kb, "SELECT id FROM terms WHERE iri = ?", g),),
    ]
    kb.retract(EX + "a")  # ROOT only
    assert select(kb, QUERY) == []
    assert column(select(kb, QUERY, graph=g), "o") == [EX + "b"]


def test_knot_source_keys(kb: KnowledgeBase) -> None:
    kb.knot(STATEMENT)
    kb.knot(STATEMENT, actor="ann")
    kb.knot(STATEMENT, actor="ann", source="explicit")
    kb.knot(STATEMENT, actor="ann", source="   ")  # blank source → derived
    kb.knot(STATEMENT, actor="  ")  # blank actor → anonymous
    assert sources(kb) == ["knot:anonymous", "knot:ann", "explicit", "knot:ann", "knot:anonymous"]
    assert [t["actor"] for t in kb.transactions()["transactions"]][:3] == [None, "ann", "ann"]
    # knot:anonymous, knot:ann and explicit each own the statement.
    assert len(claims(kb, live=True)) == 3


def test_set_and_retract_source_keys(kb: KnowledgeBase) -> None:
    kb.knot(STATEMENT)
    kb.set(EX + "a", EX + "q", "one")
    kb.set(EX + "a", EX + "q", "two", actor="bob")
    kb.set(EX + "a", EX + "q", "three", actor="bob", source="fixer")
    kb.retract(EX + "a", EX + "q", actor="bob")
    kb.knot(STATEMENT + f'\n<{EX}a> <{EX}r> "x" .')
    kb.retract(EX + "a", EX + "r")
    kb.knot(f'<{EX}a> <{EX}s> "x" .')
    kb.retract(EX + "a", EX + "s", actor="bob", source="cleanup")
    assert sources(kb) == [
        "knot:anonymous",
        "set:anonymous",
        "set:bob",
        "fixer",
        "retract:bob",
        "knot:anonymous",
        "retract:anonymous",
        "knot:anonymous",
        "cleanup",
    ]


def test_knot_into_named_graph_records_the_graph_on_the_transaction(kb: KnowledgeBase) -> None:
    g = EX + "g"
    kb.create_graph(g)
    out = kb.knot(STATEMENT, graph=g, source="A")
    gid = scalar(kb, "SELECT id FROM terms WHERE iri = ?", g)
    assert sql(kb, "SELECT source, graph FROM transactions WHERE id = ?", out.tx_id) == [("A", gid)]
