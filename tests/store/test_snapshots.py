"""Snapshot replacement: ``knot(replace_snapshot=True, snapshot=KEY)`` (DM §7, §8; tools-core §3.1 rule 9)."""

from __future__ import annotations

from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import MissingField, UnknownGraph, WriteRefused

from . import EX, PREFIXES, RDF_TYPE, RDFS_LABEL, count, snapshot, sql, term_id

T1, T2 = "2026-05-01T10:00:00Z", "2026-05-02T10:00:00Z"
V1, V2 = "2026-04-01T00:00:00Z", "2026-04-15T00:00:00Z"

# X is the inventory's entity: labelled, typed, with one plain fact.
INVENTORY = PREFIXES + 'ex:x rdfs:label "X" ; a ex:Thing ; ex:size 3 .\n'
EXTERNAL_REF = PREFIXES + "ex:y ex:uses ex:x .\n"


def replace(kb: KnowledgeBase, doc: str, key: str = "inv", **kwargs: Any) -> Any:
    kwargs.setdefault("timestamp", T2)
    return kb.knot(doc, replace_snapshot=True, snapshot=key, **kwargs)


def claims(kb: KnowledgeBase, s: str, p: str) -> list[tuple[Any, ...]]:
    """(tx, valid_from, valid_to, retracted_tx, source) of every claim row of (s, p, *) in any graph."""
    return sql(
        kb,
        "SELECT f.tx, f.valid_from, f.valid_to, f.retracted_tx, t.source FROM facts f "
        "JOIN transactions t ON t.id = f.tx WHERE f.op = 1 AND f.e = ? AND f.a = ? ORDER BY f.id",
        term_id(kb, s),
        term_id(kb, p),
    )


def live(kb: KnowledgeBase, graph: str | None = None) -> set[str]:
    return {line for line in kb.export("ntriples", graph=graph).splitlines() if line}


def test_facts_in_both_versions_keep_their_claim_tx_and_valid_from(kb: KnowledgeBase) -> None:
    first = replace(kb, PREFIXES + "ex:a ex:p 1 ; ex:q 2 .", timestamp=T1, valid_from=V1)
    second = replace(kb, PREFIXES + "ex:a ex:p 1 ; ex:r 3 .", valid_from=V2)
    assert (second.count, second.retracted) == (2, 1)
    assert claims(kb, EX + "a", EX + "p") == [(first.tx_id, V1, None, None, "snapshot:inv")]
    assert claims(kb, EX + "a", EX + "q") == [(first.tx_id, V1, T2, second.tx_id, "snapshot:inv")]
    assert claims(kb, EX + "a", EX + "r") == [(second.tx_id, V2, None, None, "snapshot:inv")]


def test_closure_stamp_is_the_timestamp_never_the_new_valid_from(kb: KnowledgeBase) -> None:
    replace(kb, PREFIXES + "ex:a ex:q 2 .", timestamp=T1, valid_from=V1)
    out = replace(kb, PREFIXES + "ex:a ex:r 3 .", valid_from=V2)
    [(_tx, _vf, valid_to, retracted_tx, _src)] = claims(kb, EX + "a", EX + "q")
    assert (valid_to, retracted_tx) == (T2, out.tx_id)
    assert sql(kb, "SELECT valid_to FROM facts WHERE op = 0") == [(T2,)]


def test_closure_and_assertion_are_one_transaction(kb: KnowledgeBase) -> None:
    replace(kb, PREFIXES + "ex:a ex:q 2 .", timestamp=T1)
    before = count(kb, "transactions")
    out = replace(kb, PREFIXES + "ex:a ex:r 3 .")
    assert count(kb, "transactions") == before + 1
    assert out.tx_ids == (out.tx_id,)
    assert sql(kb, "SELECT DISTINCT tx FROM facts WHERE tx > ? ORDER BY tx", before) == [(out.tx_id,)]


def test_empty_snapshot_retracts_everything_the_key_owns(kb: KnowledgeBase) -> None:
    replace(kb, PREFIXES + "ex:a ex:p 1 .\nex:b ex:p 2 .", timestamp=T1)
    out = replace(kb, "")
    assert (out.count, out.retracted) == (0, 2)
    assert out.tx_id > 0  # an emptying replacement still records its transaction
    assert live(kb) == set()


def test_identical_replacement_changes_nothing_but_records_a_transaction(kb: KnowledgeBase) -> None:
    doc = PREFIXES + "ex:a ex:p 1 ."
    first = replace(kb, doc, timestamp=T1)
    facts = sql(kb, "SELECT * FROM facts ORDER BY id")
    again = replace(kb, doc)
    assert again.tx_id > first.tx_id
    assert (again.claims, again.retracted) == (0, 0)
    assert sql(kb, "SELECT * FROM facts ORDER BY id") == facts


def test_label_is_kept_for_an_entity_another_producer_references(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, timestamp=T1)
    kb.knot(EXTERNAL_REF, source="other")
    out = replace(kb, "")
    assert out.retracted == 2  # the type and the size; the label is spared
    assert [c[2:] for c in claims(kb, EX + "x", RDFS_LABEL)] == [(None, None, "snapshot:inv")]
    assert f'<{EX}x> <{RDFS_LABEL}> "X" .' in live(kb)


def test_type_is_not_kept_for_a_referenced_entity(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, timestamp=T1)
    kb.knot(EXTERNAL_REF, source="other")
    out = replace(kb, "")
    [(_tx, _vf, valid_to, retracted_tx, _src)] = claims(kb, EX + "x", RDF_TYPE)
    assert (valid_to, retracted_tx) == (T2, out.tx_id)
    assert not any(RDF_TYPE in line for line in live(kb))


def test_an_unreferenced_entity_leaves_whole(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, timestamp=T1)
    out = replace(kb, "")
    assert out.retracted == 3
    assert live(kb) == set()


def test_a_kept_label_is_kept_again_by_the_next_replacement(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, timestamp=T1)
    kb.knot(EXTERNAL_REF, source="other")
    replace(kb, "")
    again = replace(kb, "", timestamp="2026-05-03T10:00:00Z")
    assert again.retracted == 0
    assert f'<{EX}x> <{RDFS_LABEL}> "X" .' in live(kb)


def test_another_owner_keeps_a_retracted_statement_visible(kb: KnowledgeBase) -> None:
    doc = PREFIXES + "ex:a ex:p ex:b ."
    replace(kb, doc, timestamp=T1)
    kb.knot(doc, source="other")
    out = replace(kb, "")
    assert out.retracted == 1  # the key's own statement was processed
    assert live(kb) == {f"<{EX}a> <{EX}p> <{EX}b> ."}
    assert [(c[2], c[4]) for c in claims(kb, EX + "a", EX + "p")] == [(T2, "snapshot:inv"), (None, "other")]


def test_other_keys_and_append_writes_are_not_planned(kb: KnowledgeBase) -> None:
    kb.knot(PREFIXES + "ex:a ex:p 1 .", source="inv")  # the bare key as an append source is not the key
    replace(kb, PREFIXES + "ex:b ex:p 2 .", key="other-key", timestamp=T1)
    replace(kb, "")
    assert live(kb) == {
        f'<{EX}a> <{EX}p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .',
        f'<{EX}b> <{EX}p> "2"^^<http://www.w3.org/2001/XMLSchema#integer> .',
    }


def test_code_family_sibling_reference_does_not_preserve_the_label(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, key="code:repo1:core", timestamp=T1)
    replace(kb, EXTERNAL_REF, key="code:repo1:tests", timestamp=T1)
    replace(kb, "", key="code:repo1:core")
    assert claims(kb, EX + "x", RDFS_LABEL)[0][2] == T2  # closed: the sibling's edge does not count
    assert not any(RDFS_LABEL in line for line in live(kb))


def test_another_repository_reference_preserves_the_label(kb: KnowledgeBase) -> None:
    replace(kb, INVENTORY, key="code:repo1:core", timestamp=T1)
    replace(kb, EXTERNAL_REF, key="code:repo2", timestamp=T1)
    replace(kb, "", key="code:repo1:core")
    assert claims(kb, EX + "x", RDFS_LABEL)[0][2] is None


def test_the_transaction_source_is_the_key_and_the_callers_source_is_ignored(kb: KnowledgeBase) -> None:
    out = replace(kb, PREFIXES + "ex:a ex:p 1 .", source="mine", actor="ann")
    row = sql(kb, "SELECT source, actor, timestamp FROM transactions WHERE id = ?", out.tx_id)
    assert row == [("snapshot:inv", "ann", T2)]


def test_the_key_is_trimmed(kb: KnowledgeBase) -> None:
    out = replace(kb, PREFIXES + "ex:a ex:p 1 .", key="  inv  ")
    assert sql(kb, "SELECT source FROM transactions WHERE id = ?", out.tx_id) == [("snapshot:inv",)]


def test_valid_from_defaults_to_the_timestamp(kb: KnowledgeBase) -> None:
    out = replace(kb, PREFIXES + "ex:a ex:p 1 .")
    assert out.valid_from == T2
    assert claims(kb, EX + "a", EX + "p")[0][1] == T2


def test_replacement_in_a_named_graph_touches_no_other_graph(kb: KnowledgeBase) -> None:
    g = EX + "g"
    kb.create_graph(g)
    doc = PREFIXES + "ex:a ex:p 1 ."
    replace(kb, doc, timestamp=T1)
    replace(kb, doc, timestamp=T1, graph=g)
    out = replace(kb, "", graph=g)
    assert out.retracted == 1
    assert live(kb, g) == set()
    assert len(live(kb)) == 1  # ROOT's claim under the same key is untouched
    gid = term_id(kb, g)
    assert sql(kb, "SELECT graph FROM transactions WHERE id = ?", out.tx_id) == [(gid,)]


@pytest.mark.parametrize("key", [None, "", "   "])
def test_replacement_without_a_key_is_refused_and_writes_nothing(kb: KnowledgeBase, key: str | None) -> None:
    before = snapshot(kb)
    with pytest.raises(MissingField, match="non-empty stable 'snapshot'") as info:
        kb.knot(PREFIXES + "ex:a ex:p 1 .", replace_snapshot=True, snapshot=key)
    assert info.value.field == "snapshot"
    assert snapshot(kb) == before


def test_replacement_into_an_unknown_graph_is_refused_and_not_interned(kb: KnowledgeBase) -> None:
    before = snapshot(kb)
    with pytest.raises(UnknownGraph):
        replace(kb, PREFIXES + "ex:a ex:p 1 .", graph=EX + "typo")
    assert snapshot(kb) == before
    assert term_id(kb, EX + "typo") is None


def test_a_multi_graph_document_is_refused(kb: KnowledgeBase) -> None:
    kb.create_graph(EX + "g")
    before = snapshot(kb)
    with pytest.raises(WriteRefused, match="single-graph document"):
        kb.knot(PREFIXES + "ex:g { ex:a ex:p 1 . }", "trig", replace_snapshot=True, snapshot="inv")
    assert snapshot(kb) == before


def test_blank_nodes_of_the_same_document_overlap(kb: KnowledgeBase) -> None:
    doc = PREFIXES + 'ex:a ex:has [ ex:name "n" ] .'
    replace(kb, doc, timestamp=T1)
    out = replace(kb, doc)
    assert (out.claims, out.retracted) == (0, 0)
