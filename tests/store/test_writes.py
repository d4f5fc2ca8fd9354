"""Write semantics: normalised valid time, closure stamps, set, retract, blank nodes, formats."""

from __future__ import annotations

import re

import pytest
from rdflib import Literal
from rdflib.term import Node

from quipu.api import KnowledgeBase
from quipu.errors import InvalidField, UnknownGraph, WriteRefused

from . import EX, PREFIXES, RDF_TYPE, XSD, column, count, scalar, select, snapshot, sql, term_id

TABLE_COUNTS = ("terms", "transactions", "facts", "graphs")


def row_counts(kb: KnowledgeBase) -> dict[str, int]:
    return {t: count(kb, t) for t in TABLE_COUNTS}


def live_values(kb: KnowledgeBase, s: str, p: str) -> list[str]:
    return column(select(kb, f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}"), "o")


def literal_datatype(term: Node) -> str | None:
    assert isinstance(term, Literal), term
    return None if term.datatype is None else str(term.datatype)


def literal_datatypes(kb: KnowledgeBase, s: str, p: str) -> list[str | None]:
    rows = select(kb, f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}")
    return sorted((literal_datatype(r["o"]) for r in rows), key=lambda d: d or "")


# -- valid_from normalisation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-03-04T09:15:00+01:00", "2026-03-04T08:15:00Z"),
        ("2026-03-04T09:15:00.987Z", "2026-03-04T09:15:00Z"),
        ("2026-12-31T23:59:60Z", "2027-01-01T00:00:00Z"),
        ("2026-03-04t09:15:00z", "2026-03-04T09:15:00Z"),
        ("2026-01-01T01:00:00+02:00", "2025-12-31T23:00:00Z"),
    ],
)
def test_valid_from_is_normalised_stored_and_echoed(kb: KnowledgeBase, given: str, stored: str) -> None:
    out = kb.knot(f'<{EX}a> <{EX}p> "v" .', valid_from=given, timestamp="2030-01-01T00:00:00Z")
    assert out.valid_from == stored
    assert sql(kb, "SELECT valid_from FROM facts") == [(stored,)]
    # The declared transaction time is a separate axis.
    assert scalar(kb, "SELECT timestamp FROM transactions WHERE id = ?", out.tx_id) == "2030-01-01T00:00:00Z"


def test_valid_from_defaults_to_the_normalised_timestamp(kb: KnowledgeBase) -> None:
    out = kb.knot(f'<{EX}a> <{EX}p> "v" .', timestamp="2026-03-04T09:15:00.5+01:00")
    assert out.valid_from == "2026-03-04T08:15:00Z"
    assert sql(kb, "SELECT timestamp FROM transactions") == [("2026-03-04T08:15:00Z",)]
    assert sql(kb, "SELECT valid_from FROM facts") == [("2026-03-04T08:15:00Z",)]


def test_a_bare_date_timestamp_is_stored_verbatim_and_free_text_is_refused(kb: KnowledgeBase) -> None:
    out = kb.knot(f'<{EX}a> <{EX}p> "v" .', timestamp="2026-03-04")
    assert out.valid_from == "2026-03-04"
    assert sql(kb, "SELECT timestamp FROM transactions") == [("2026-03-04",)]
    with pytest.raises(InvalidField) as refused:
        kb.knot(f'<{EX}a> <{EX}p> "w" .', timestamp="last tuesday")
    assert refused.value.field == "timestamp"
    assert sql(kb, "SELECT timestamp FROM transactions") == [("2026-03-04",)]


def test_default_timestamp_is_now_in_whole_seconds(kb: KnowledgeBase) -> None:
    out = kb.knot(f'<{EX}a> <{EX}p> "v" .')
    ts = scalar(kb, "SELECT timestamp FROM transactions")
    assert out.valid_from == ts
    assert len(ts) == 20 and ts.endswith("Z") and ts[10] == "T"


# -- closure stamps and retraction records ---------------------------------------------------


def test_closed_claims_carry_the_closing_transaction_stamp(kb: KnowledgeBase) -> None:
    """DM §16.3 and §5.3: valid_to = closing tx timestamp, never a valid_from; iff retracted_tx."""
    kb.knot(
        f'<{EX}a> <{EX}p> "1" .\n<{EX}a> <{EX}p> "2" .\n<{EX}a> <{EX}q> "3" .',
        timestamp="2026-01-01T00:00:00Z",
        valid_from="2025-06-01T00:00:00Z",
    )
    r = kb.retract(EX + "a", EX + "p", timestamp="2026-02-01T00:00:00+01:00")
    s = kb.set(EX + "a", EX + "q", "4", timestamp="2026-03-01T00:00:00Z")
    rows = sql(kb, "SELECT op, valid_from, valid_to, retracted_tx, tx FROM facts ORDER BY id")
    assert rows == [
        (1, "2025-06-01T00:00:00Z", "2026-01-31T23:00:00Z", r.tx_id, 1),
        (1, "2025-06-01T00:00:00Z", "2026-01-31T23:00:00Z", r.tx_id, 1),
        (1, "2025-06-01T00:00:00Z", "2026-03-01T00:00:00Z", s.tx_id, 1),
        (0, "2025-06-01T00:00:00Z", "2026-01-31T23:00:00Z", r.tx_id, r.tx_id),
        (0, "2025-06-01T00:00:00Z", "2026-01-31T23:00:00Z", r.tx_id, r.tx_id),
        (0, "2025-06-01T00:00:00Z", "2026-03-01T00:00:00Z", s.tx_id, s.tx_id),
        (1, "2026-03-01T00:00:00Z", None, None, s.tx_id),
    ]
    # valid_to is set if and only if retracted_tx is.
    assert count(kb, "facts", "(valid_to IS NULL) != (retracted_tx IS NULL)") == 0


def test_retraction_writes_one_record_per_statement(kb: KnowledgeBase) -> None:
    doc = f'<{EX}a> <{EX}p> "1" .\n<{EX}a> <{EX}p> "2" .'
    kb.knot(doc, source="A", valid_from="2026-01-01T00:00:00Z")
    kb.knot(doc, source="B", valid_from="2026-02-01T00:00:00Z")
    out = kb.retract(EX + "a")
    assert out.retracted == 2
    assert count(kb, "facts", "op = 1") == 4
    # One op=0 row per statement, carrying the earliest closed claim's valid_from.
    assert sql(kb, "SELECT tx, valid_from, retracted_tx FROM facts WHERE op = 0 ORDER BY id") == [
        (out.tx_id, "2026-01-01T00:00:00Z", out.tx_id),
        (out.tx_id, "2026-01-01T00:00:00Z", out.tx_id),
    ]
    # Retraction records are history only: reads never match them.
    assert kb.unravel(tx=out.tx_id)["facts"] == []
    assert [h["op"] for h in kb.entity_history(EX + "a")["history"]] == [
        "assert",
        "assert",
        "assert",
        "assert",
        "retract",
        "retract",
    ]


def test_nothing_is_ever_deleted(kb: KnowledgeBase) -> None:
    seen = [row_counts(kb)]
    facts_seen: list[list[tuple[object, ...]]] = []

    def step() -> None:
        now = row_counts(kb)
        for table in TABLE_COUNTS:
            assert now[table] >= seen[-1][table], (table, seen[-1], now)
        # Every earlier claim row still exists with its identity and assertion columns intact.
        rows = sql(kb, "SELECT id, e, a, v, g, tx, valid_from, op FROM facts ORDER BY id")
        if facts_seen:
            assert rows[: len(facts_seen[-1])] == facts_seen[-1]
        facts_seen.append(rows)
        seen.append(now)

    kb.knot(f'<{EX}a> <{EX}p> "1" .\n<{EX}a> <{EX}q> <{EX}b> .\n<{EX}a> <{RDF_TYPE}> <{EX}T> .')
    step()
    kb.retract(EX + "a", EX + "p")
    step()
    kb.set(EX + "a", EX + "q", {"iri": EX + "c"})
    step()
    kb.set(EX + "a", EX + "p", "2")
    step()
    kb.retract(EX + "a")
    step()
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    step()
    assert seen[-1]["facts"] > seen[1]["facts"]


# -- set ---------------------------------------------------------------------------------------


def test_set_replaces_every_current_value(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1", "2", "3" .\n<{EX}a> <{EX}other> "x" .')
    out = kb.set(EX + "a", EX + "p", "4", timestamp="2026-05-05T00:00:00Z")
    assert (out.retracted, out.asserted, out.entity, out.predicate) == (3, 1, EX + "a", EX + "p")
    assert live_values(kb, EX + "a", EX + "p") == ["4"]
    assert live_values(kb, EX + "a", EX + "other") == ["x"]
    # The new claim is valid from the set's timestamp, which is also the closure stamp.
    assert sql(
        kb, "SELECT valid_from FROM facts WHERE op = 1 AND valid_to IS NULL AND tx = ?", out.tx_id
    ) == [("2026-05-05T00:00:00Z",)]
    assert count(kb, "facts", "valid_to = '2026-05-05T00:00:00Z' AND op = 1") == 3


def test_set_of_the_sole_value_writes_nothing(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    before = snapshot(kb)
    out = kb.set(EX + "a", EX + "p", "1")
    assert (out.tx_id, out.retracted, out.asserted) == (0, 0, 0)
    assert snapshot(kb) == before
    # Also for references and typed values.
    kb.knot(f"<{EX}a> <{EX}r> <{EX}b> .\n<{EX}a> <{EX}n> 5 .")
    before = snapshot(kb)
    assert kb.set(EX + "a", EX + "r", {"iri": EX + "b"}).tx_id == 0
    assert kb.set(EX + "a", EX + "n", {"int": 5}).tx_id == 0
    assert kb.set(EX + "a", EX + "n", {"value": "5", "datatype": XSD + "integer"}).tx_id == 0
    assert snapshot(kb) == before


def test_set_of_a_value_present_among_others(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1", "2", "3" .')
    out = kb.set(EX + "a", EX + "p", "2")
    assert out.tx_id > 0
    assert (out.retracted, out.asserted) == (2, 0)
    assert live_values(kb, EX + "a", EX + "p") == ["2"]
    # The kept value's claim is untouched (still its original tx 1).
    assert sql(kb, "SELECT tx FROM facts WHERE op = 1 AND valid_to IS NULL") == [(1,)]


def test_set_on_a_new_predicate(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    out = kb.set(EX + "a", EX + "brand-new", {"iri": EX + "new-node"})
    assert (out.retracted, out.asserted) == (0, 1)
    assert live_values(kb, EX + "a", EX + "brand-new") == [EX + "new-node"]
    assert term_id(kb, EX + "brand-new") is not None
    assert term_id(kb, EX + "new-node") is not None


def test_set_str_form_disables_the_iri_looking_guard(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .')
    before = snapshot(kb)
    with pytest.raises(WriteRefused, match="looks like an IRI"):
        kb.set(EX + "a", EX + "homepage", "http://x")
    assert snapshot(kb) == before
    out = kb.set(EX + "a", EX + "homepage", {"str": "http://x"})
    assert out.asserted == 1
    assert literal_datatypes(kb, EX + "a", EX + "homepage") == [None]
    # Once the predicate holds strings, a bare URL-looking string is accepted.
    assert kb.set(EX + "a", EX + "homepage", "http://y").asserted == 1
    assert live_values(kb, EX + "a", EX + "homepage") == ["http://y"]


def test_set_bare_string_on_a_reference_predicate_is_refused(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}knows> <{EX}b> .")
    before = snapshot(kb)
    with pytest.raises(WriteRefused, match="takes an IRI reference"):
        kb.set(EX + "a", EX + "knows", "plain words")
    assert snapshot(kb) == before
    assert kb.set(EX + "a", EX + "knows", {"str": "plain words"}).asserted == 1


def test_set_leaves_named_graphs_alone(kb: KnowledgeBase) -> None:
    g = EX + "g"
    kb.create_graph(g)
    kb.knot(f'<{EX}a> <{EX}p> "root" .')
    kb.knot(f'<{EX}a> <{EX}p> "named" .', graph=g)
    kb.set(EX + "a", EX + "p", "new")
    assert live_values(kb, EX + "a", EX + "p") == ["new"]
    assert column(select(kb, f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}", graph=g), "o") == ["named"]


# -- retract -----------------------------------------------------------------------------------


def test_retract_matching_nothing_writes_nothing(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .\n<{EX}a> <{EX}q> <{EX}b> .')
    before = snapshot(kb)
    for kwargs in (
        {"predicate": EX + "p", "value": "2"},
        {"predicate": EX + "p", "value": {"int": 1}},
        {"predicate": EX + "q", "value": {"iri": EX + "a"}},
        {"value": {"str": "nope"}},
    ):
        out = kb.retract(EX + "a", **kwargs)
        assert (out.tx_id, out.retracted) == (0, 0), kwargs
    assert snapshot(kb) == before
    # Already retracted: idempotent.
    kb.retract(EX + "a", EX + "p")
    before = snapshot(kb)
    assert kb.retract(EX + "a", EX + "p").tx_id == 0
    assert snapshot(kb) == before


def test_retract_unknown_iri_value_matches_nothing_and_is_not_interned(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}q> <{EX}b> .")
    before = snapshot(kb)
    out = kb.retract(EX + "a", EX + "q", {"iri": EX + "never-seen"})
    assert (out.tx_id, out.retracted) == (0, 0)
    assert term_id(kb, EX + "never-seen") is None
    assert snapshot(kb) == before


def test_retract_is_predicate_scoped(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1", "2" .\n<{EX}a> <{EX}q> "3" .\n<{EX}b> <{EX}p> "1" .')
    out = kb.retract(EX + "a", EX + "p")
    assert out.retracted == 2
    assert live_values(kb, EX + "a", EX + "p") == []
    assert live_values(kb, EX + "a", EX + "q") == ["3"]
    assert live_values(kb, EX + "b", EX + "p") == ["1"]


def test_retract_is_value_scoped(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1", "2", 1 .\n<{EX}a> <{EX}q> "1" .')
    out = kb.retract(EX + "a", EX + "p", "1")
    assert out.retracted == 1
    # The integer 1 and the same string under another predicate survive.
    assert live_values(kb, EX + "a", EX + "p") == ["1", "2"]
    assert literal_datatypes(kb, EX + "a", EX + "p") == [None, XSD + "integer"]
    assert live_values(kb, EX + "a", EX + "q") == ["1"]
    # A value without a predicate matches it under every predicate.
    assert kb.retract(EX + "a", value={"str": "1"}).retracted == 1
    assert live_values(kb, EX + "a", EX + "q") == []


def test_retract_only_touches_the_entity_as_subject(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .\n<{EX}b> <{EX}p> <{EX}a> .")
    kb.retract(EX + "a")
    assert live_values(kb, EX + "b", EX + "p") == [EX + "a"]


def test_retract_closure_stamp_and_history(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "1" .', timestamp="2026-01-01T00:00:00Z")
    out = kb.retract(EX + "a", timestamp="2026-06-01T12:00:00Z")
    assert sql(kb, "SELECT valid_to, retracted_tx FROM facts WHERE op = 1") == [
        ("2026-06-01T12:00:00Z", out.tx_id)
    ]
    assert column(select(kb, f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}", as_of_tx=out.tx_id - 1), "o") == [
        "1"
    ]


def test_half_ghost_guard_refuses_removing_the_last_type(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{RDF_TYPE}> <{EX}T> .\n<{EX}a> <{EX}name> "A" .')
    before = snapshot(kb)
    with pytest.raises(WriteRefused, match=r"last rdf:type while 1 other fact\(s\) survive") as info:
        kb.retract(EX + "a", RDF_TYPE)
    assert info.value.reason == "would_orphan"
    with pytest.raises(WriteRefused, match="last rdf:type"):
        kb.retract(EX + "a", RDF_TYPE, {"iri": EX + "T"})
    with pytest.raises(WriteRefused, match="last rdf:type"):
        kb.retract(EX + "a", value={"iri": EX + "T"})
    assert snapshot(kb) == before
    out = kb.retract(EX + "a", RDF_TYPE, allow_orphan=True)
    assert out.retracted == 1
    assert live_values(kb, EX + "a", RDF_TYPE) == []
    assert live_values(kb, EX + "a", EX + "name") == ["A"]


def test_half_ghost_guard_allows_removing_one_of_several_types(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{RDF_TYPE}> <{EX}T>, <{EX}U> .\n<{EX}a> <{EX}name> "A" .')
    assert kb.retract(EX + "a", RDF_TYPE, {"iri": EX + "T"}).retracted == 1
    assert live_values(kb, EX + "a", RDF_TYPE) == [EX + "U"]


def test_half_ghost_guard_allows_removing_a_type_when_nothing_survives(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{RDF_TYPE}> <{EX}T> .\n<{EX}b> <{RDF_TYPE}> <{EX}T> .\n<{EX}b> <{EX}n> "x" .')
    assert kb.retract(EX + "a", RDF_TYPE).retracted == 1


def test_retracting_every_statement_of_an_entity_is_allowed(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{RDF_TYPE}> <{EX}T> .\n<{EX}a> <{EX}name> "A" .\n<{EX}a> <{EX}k> <{EX}b> .')
    out = kb.retract(EX + "a")
    assert out.retracted == 3
    assert select(kb, f"SELECT ?p ?o WHERE {{ <{EX}a> ?p ?o }}") == []


# -- blank nodes -------------------------------------------------------------------------------

BNODE_DOC = PREFIXES + 'ex:a ex:addr _:x .\n_:x ex:city "Lima" .\nex:a ex:home _:y .\n_:y ex:n "1" .\n'
SKOLEM = re.compile(r"_:b[0-9a-f]{16}_(.+)")


def bnode_terms(kb: KnowledgeBase) -> list[str]:
    return [
        str(r[0]) for r in sql(kb, "SELECT iri FROM terms WHERE iri LIKE '\\_:%' ESCAPE '\\' ORDER BY iri")
    ]


def test_reposting_the_same_document_writes_no_new_claim(kb: KnowledgeBase) -> None:
    """DM §16.6: blank nodes included."""
    first = kb.knot(BNODE_DOC)
    assert first.claims == 4
    terms_before = sql(kb, "SELECT * FROM terms ORDER BY id")
    second = kb.knot(BNODE_DOC)
    assert second.claims == 0
    assert second.tx_id > first.tx_id
    assert count(kb, "facts") == 4
    assert sql(kb, "SELECT * FROM terms ORDER BY id") == terms_before
    keys = bnode_terms(kb)
    # Stored key: _:b + 16 hex digits + _ + document label (DM §1.5).
    labels = sorted(m.group(1) for k in keys if (m := SKOLEM.fullmatch(k)))
    assert labels == ["x", "y"]
    assert len({k[:20] for k in keys}) == 1  # one scope prefix for the whole document


# Many ``[ ]`` nodes, so that a parser-invented id of an unexpected shape is all but certain to
# appear (about 6% of pyoxigraph's anonymous ids have fewer than 32 hex digits).
ANON_DOC = PREFIXES + "".join(f'ex:a ex:anon [ ex:n "{i}" ] .\n' for i in range(300))


def test_anonymous_blank_nodes_are_numbered_in_document_order(kb: KnowledgeBase) -> None:
    """DM §1.5: a ``[ ]`` node's label is its document-order ordinal, so keys are deterministic."""
    first = kb.knot(ANON_DOC)
    assert first.claims == 600
    second = kb.knot(ANON_DOC)
    assert second.claims == 0
    labels = {m.group(1) for k in bnode_terms(kb) if (m := SKOLEM.fullmatch(k))}
    assert labels == {f"anon{i}" for i in range(1, 301)}


def test_same_document_in_another_graph_gets_other_blank_nodes(kb: KnowledgeBase) -> None:
    g = EX + "g"
    kb.create_graph(g)
    kb.knot(BNODE_DOC)
    out = kb.knot(BNODE_DOC, graph=g)
    assert out.claims == 4
    assert len(bnode_terms(kb)) == 4
    root_city = select(kb, f"SELECT ?b WHERE {{ ?b <{EX}city> ?c }}")
    named_city = select(kb, f"SELECT ?b WHERE {{ ?b <{EX}city> ?c }}", graph=g)
    assert root_city[0]["b"] != named_city[0]["b"]


def test_blank_node_scope_shares_blank_nodes_across_graphs(kb: KnowledgeBase) -> None:
    g = EX + "g"
    kb.create_graph(g)
    kb.knot(BNODE_DOC, blank_node_scope="shared")
    kb.knot(BNODE_DOC, graph=g, blank_node_scope="shared")
    assert len(bnode_terms(kb)) == 2
    root_city = select(kb, f"SELECT ?b WHERE {{ ?b <{EX}city> ?c }}")
    named_city = select(kb, f"SELECT ?b WHERE {{ ?b <{EX}city> ?c }}", graph=g)
    assert root_city == named_city
    # A different scope keeps identical input apart.
    kb.knot(BNODE_DOC, blank_node_scope="other")
    assert len(bnode_terms(kb)) == 4
    # Different bytes under the same scope do not share either.
    kb.knot(BNODE_DOC + "\n", blank_node_scope="shared")
    assert len(bnode_terms(kb)) == 6


# -- input formats -----------------------------------------------------------------------------

SMALL_GRAPH = {
    "turtle": PREFIXES
    + 'ex:a ex:name "Alice"@en ; ex:age 42 ; ex:knows ex:b ; ex:score "1.50"^^xsd:decimal .\n'
    + 'ex:b ex:label "Bob" .\n',
    "nt": (
        f'<{EX}a> <{EX}name> "Alice"@en .\n'
        f'<{EX}a> <{EX}age> "42"^^<{XSD}integer> .\n'
        f"<{EX}a> <{EX}knows> <{EX}b> .\n"
        f'<{EX}a> <{EX}score> "1.50"^^<{XSD}decimal> .\n'
        f'<{EX}b> <{EX}label> "Bob" .\n'
    ),
    "trig": PREFIXES
    + '{ ex:a ex:name "Alice"@en ; ex:age 42 ; ex:knows ex:b ; ex:score "1.50"^^xsd:decimal .\n'
    + '  ex:b ex:label "Bob" . }\n',
    "jsonld": (
        "["
        f'{{"@id": "{EX}a", "{EX}name": [{{"@value": "Alice", "@language": "en"}}],'
        f' "{EX}age": [{{"@value": "42", "@type": "{XSD}integer"}}],'
        f' "{EX}knows": [{{"@id": "{EX}b"}}],'
        f' "{EX}score": [{{"@value": "1.50", "@type": "{XSD}decimal"}}]}},'
        f' {{"@id": "{EX}b", "{EX}label": "Bob"}}'
        "]"
    ),
    "rdfxml": (
        '<?xml version="1.0"?>\n'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        f'xmlns:ex="{EX}">\n'
        f'  <rdf:Description rdf:about="{EX}a">\n'
        '    <ex:name xml:lang="en">Alice</ex:name>\n'
        f'    <ex:age rdf:datatype="{XSD}integer">42</ex:age>\n'
        f'    <ex:knows rdf:resource="{EX}b"/>\n'
        f'    <ex:score rdf:datatype="{XSD}decimal">1.50</ex:score>\n'
        "  </rdf:Description>\n"
        f'  <rdf:Description rdf:about="{EX}b"><ex:label>Bob</ex:label></rdf:Description>\n'
        "</rdf:RDF>\n"
    ),
}
SMALL_GRAPH["nq"] = SMALL_GRAPH["nt"]
EXPECTED_EXPORT = "".join(
    sorted(
        [
            f'<{EX}a> <{EX}name> "Alice"@en .\n',
            f'<{EX}a> <{EX}age> "42"^^<{XSD}integer> .\n',
            f"<{EX}a> <{EX}knows> <{EX}b> .\n",
            f'<{EX}a> <{EX}score> "1.50"^^<{XSD}decimal> .\n',
            f'<{EX}b> <{EX}label> "Bob" .\n',
        ]
    )
)


@pytest.mark.parametrize("fmt", ["turtle", "nt", "nq", "trig", "jsonld", "rdfxml"])
def test_every_input_format_ingests_the_same_graph(kb: KnowledgeBase, fmt: str) -> None:
    out = kb.knot(SMALL_GRAPH[fmt], fmt)
    assert out.count == 5
    assert out.claims == 5
    assert kb.export("ntriples") == EXPECTED_EXPORT


@pytest.mark.parametrize("fmt", ["ttl", "ntriples", "N-Triples", "nquads", "json-ld", "xml"])
def test_format_aliases(kb: KnowledgeBase, fmt: str) -> None:
    base = {"ttl": "turtle", "ntriples": "nt", "N-Triples": "nt", "nquads": "nq", "json-ld": "jsonld"}
    kb.knot(SMALL_GRAPH[base.get(fmt, "rdfxml")], fmt)
    assert kb.export("ntriples") == EXPECTED_EXPORT


NQ_TWO_GRAPHS = (
    f'<{EX}a> <{EX}p> "root" .\n<{EX}a> <{EX}p> "one" <{EX}g1> .\n<{EX}a> <{EX}p> "two" <{EX}g2> .\n'
)
TRIG_TWO_GRAPHS = PREFIXES + 'ex:a ex:p "root" .\nex:g1 { ex:a ex:p "one" . }\nex:g2 { ex:a ex:p "two" . }\n'


@pytest.mark.parametrize(("doc", "fmt"), [(NQ_TWO_GRAPHS, "nq"), (TRIG_TWO_GRAPHS, "trig")])
def test_named_graphs_in_quads_must_be_registered(kb: KnowledgeBase, doc: str, fmt: str) -> None:
    kb.create_graph(EX + "g1")
    before = snapshot(kb)
    with pytest.raises(UnknownGraph, match=f"unknown graph: {EX}g2"):
        kb.knot(doc, fmt)
    assert snapshot(kb) == before
    assert term_id(kb, EX + "g2") is None
    kb.create_graph(EX + "g2")
    out = kb.knot(doc, fmt)
    assert out.count == 3
    assert len(out.tx_ids) == 3  # one transaction per graph, ROOT first
    assert out.tx_id == out.tx_ids[0]
    graphs = sql(kb, "SELECT graph FROM transactions ORDER BY id")
    assert graphs == [(0,), (term_id(kb, EX + "g1"),), (term_id(kb, EX + "g2"),)]
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert column(select(kb, q), "o") == ["root"]
    assert column(select(kb, q, graph=EX + "g1"), "o") == ["one"]
    assert column(select(kb, q, graph=EX + "g2"), "o") == ["two"]


def test_quads_default_graph_goes_to_the_graph_parameter(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g1")
    kb.create_graph(EX + "target")
    kb.knot(f'<{EX}a> <{EX}p> "default" .\n<{EX}a> <{EX}p> "one" <{EX}g1> .\n', "nq", graph=EX + "target")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert select(kb, q) == []
    assert column(select(kb, q, graph=EX + "target"), "o") == ["default"]
    assert column(select(kb, q, graph=EX + "g1"), "o") == ["one"]


# -- literals ----------------------------------------------------------------------------------


def test_typed_literals_keep_their_lexical_form(kb: KnowledgeBase) -> None:
    kb.knot(
        PREFIXES
        + 'ex:a ex:dec "1.50"^^xsd:decimal ; ex:dbl "1.5"^^xsd:double ; ex:odd "007"^^xsd:int ;'
        + ' ex:date "2026-01-01"^^xsd:date .'
    )
    out = kb.export("ntriples")
    assert f'<{EX}a> <{EX}dec> "1.50"^^<{XSD}decimal> .' in out
    assert f'<{EX}a> <{EX}odd> "007"^^<{XSD}int> .' in out
    assert f'<{EX}a> <{EX}date> "2026-01-01"^^<{XSD}date> .' in out
    assert kb.stats()["facts"] == 4


def test_decimal_and_double_are_different_statements(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + 'ex:a ex:v "1.50"^^xsd:decimal, "1.5"^^xsd:double, "1.5"^^xsd:decimal .')
    assert count(kb, "facts") == 3
    rows = select(kb, f"SELECT ?o WHERE {{ <{EX}a> <{EX}v> ?o }}")
    assert len(rows) == 3
    kb.retract(EX + "a", EX + "v", {"value": "1.50", "datatype": XSD + "decimal"})
    rows = select(kb, f"SELECT ?o WHERE {{ <{EX}a> <{EX}v> ?o }}")
    assert sorted((str(r["o"]), literal_datatype(r["o"])) for r in rows) == [
        ("1.5", XSD + "decimal"),
        ("1.5", XSD + "double"),
    ]


def test_json_integer_value_matches_a_turtle_integer(kb: KnowledgeBase) -> None:
    """DM §2 rule 4 [changed]: {"value":"5","datatype":xsd:integer} is Int(5)."""
    kb.knot(PREFIXES + 'ex:a ex:n "5"^^xsd:integer ; ex:m 6 ; ex:k 7 .')
    out = kb.retract(EX + "a", EX + "n", {"value": "5", "datatype": XSD + "integer"})
    assert out.retracted == 1
    assert kb.retract(EX + "a", EX + "m", {"int": 6}).retracted == 1
    assert kb.retract(EX + "a", EX + "k", {"value": "+07", "datatype": XSD + "integer"}).retracted == 1
    assert select(kb, f"SELECT ?p WHERE {{ <{EX}a> ?p ?o }}") == []


def test_boolean_lexical_forms(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + 'ex:a ex:t "1"^^xsd:boolean ; ex:f "yes"^^xsd:boolean ; ex:u true .')
    out = kb.export("ntriples")
    assert f'<{EX}a> <{EX}t> "true"^^<{XSD}boolean> .' in out
    assert f'<{EX}a> <{EX}f> "yes"^^<{XSD}boolean> .' in out  # ill-formed: kept verbatim, not false
    assert kb.retract(EX + "a", value={"bool": True}).retracted == 2


def test_language_tag_is_kept_apart_from_the_lexical_form(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + 'ex:a ex:l "user@example.com"@en, "user@example.com" .')
    assert count(kb, "facts") == 2
    assert kb.retract(EX + "a", EX + "l", {"value": "user@example.com", "lang": "en"}).retracted == 1
    assert live_values(kb, EX + "a", EX + "l") == ["user@example.com"]
    assert kb.export("ntriples") == f'<{EX}a> <{EX}l> "user@example.com" .\n'


def test_empty_document_still_records_a_transaction(kb: KnowledgeBase) -> None:
    """DM §4.2: /knot records its transaction even when it changes nothing."""
    out = kb.knot("", actor="ann")
    assert out.tx_id > 0
    assert (out.count, out.claims) == (0, 0)
    assert [t["source"] for t in kb.transactions()["transactions"]] == ["knot:ann"]
    assert count(kb, "facts") == 0


def test_root_iri_as_a_graph_name_means_root(kb: KnowledgeBase) -> None:
    root = "urn:quipu:graph:root"
    kb.knot(f'<{EX}a> <{EX}p> "param" .', graph=root)
    kb.knot(f'<{EX}a> <{EX}p> "quad" <{root}> .', "nq")
    kb.knot(PREFIXES + f'<{root}> {{ ex:a ex:p "trig" . }}', "trig")
    assert live_values(kb, EX + "a", EX + "p") == ["param", "quad", "trig"]
    assert sql(kb, "SELECT DISTINCT g FROM facts") == [(0,)]
    assert sql(kb, "SELECT DISTINCT graph FROM transactions") == [(0,)]
    assert term_id(kb, root) is None


def test_json_language_tag_matches_ingested_tag_case_insensitively(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}l> "chat"@FR-ca .')
    # /set of the value that is already the sole one must be a no-op, not a replacement.
    assert kb.set(EX + "a", EX + "l", {"value": "chat", "lang": "FR-ca"}).tx_id == 0
    assert kb.retract(EX + "a", EX + "l", {"value": "chat", "lang": "FR-ca"}).retracted == 1
