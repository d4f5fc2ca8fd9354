"""Stored blank-node keys (``_:…``) work wherever a node is named: entity, retract, set values."""

from __future__ import annotations

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import InvalidField
from tests.store import EX


def _blank(kb: KnowledgeBase) -> str:
    keys = [e["iri"] for e in kb.cord()["entities"] if e["iri"].startswith("_:")]
    assert len(keys) == 1
    return str(keys[0])


def test_a_blank_node_can_be_read_retracted_and_referenced(kb: KnowledgeBase) -> None:
    kb.knot(f'_:n <{EX}size> "1" . <{EX}a> <{EX}has> _:n .')
    node = _blank(kb)
    assert kb.entity(node) == {"@id": node, f"{EX}size": "1"}
    assert kb.retract(node, f"{EX}size").retracted == 1
    assert kb.set(f"{EX}a", f"{EX}has", {"iri": node}).tx_id == 0  # already its sole value
    assert kb.export() == f"<{EX}a> <{EX}has> {node} .\n"


@pytest.mark.parametrize("bad", ["_:", "_: spaced", "_:<x>"])
def test_malformed_blank_keys_are_refused(kb: KnowledgeBase, bad: str) -> None:
    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", "nt")
    with pytest.raises(InvalidField):
        kb.retract(bad)


def test_a_blank_key_is_not_a_predicate(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}p> <{EX}b> .", "nt")
    with pytest.raises(InvalidField):
        kb.set(f"{EX}a", "_:p", "x")
