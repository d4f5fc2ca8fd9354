"""Small writes bind their statements in the claim INSERT; larger ones go through the staging
table. Both must write the same claims (DM §5.2): new statements once, a statement this source
already holds not again, and one live under another source as a second, ``dup`` claim."""

from __future__ import annotations

import pytest

from quipu.api import KnowledgeBase
from quipu.store import writes

from . import EX, count, sql


def doc(n: int, start: int = 0) -> str:
    return "".join(f'<{EX}s{i}> <{EX}p> "v{i}" .\n' for i in range(start, start + n))


def dup_flags(kb: KnowledgeBase, tx: int) -> list[int]:
    return [int(d) for (d,) in sql(kb, "SELECT dup FROM facts WHERE tx = ? ORDER BY e, a, vh", tx)]


@pytest.mark.parametrize("n", [1, 2, writes._LISTED_ROWS, writes._LISTED_ROWS + 1, 3 * writes._LISTED_ROWS])
def test_claims_are_the_same_below_and_above_the_listed_batch_size(kb: KnowledgeBase, n: int) -> None:
    half = n // 2
    a = kb.knot(doc(half), format="ntriples", source="A")
    assert a.claims == half
    # Source A again with every statement: only the new half is claimed.
    again = kb.knot(doc(n), format="ntriples", source="A")
    assert again.claims == n - half
    assert dup_flags(kb, again.tx_id) == [0] * (n - half)
    # Source B with the same statements: a second claim each, marked dup (live already).
    b = kb.knot(doc(n), format="ntriples", source="B")
    assert b.claims == n
    assert dup_flags(kb, b.tx_id) == [1] * n
    assert count(kb, "facts", "op = 1 AND valid_to IS NULL") == 2 * n
    assert kb.stats()["facts"] == n


def test_a_listed_batch_keeps_literal_and_reference_values(kb: KnowledgeBase) -> None:
    text = (
        f'<{EX}a> <{EX}n> "5"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
        f"<{EX}a> <{EX}r> <{EX}b> .\n"
        f'<{EX}a> <{EX}l> "x"@en .\n'
    )
    result = kb.knot(text, format="ntriples", source="A")
    assert result.claims == 3
    rows = sql(kb, "SELECT v_ref IS NOT NULL, v_num FROM facts WHERE tx = ? ORDER BY a", result.tx_id)
    assert sorted(rows, key=repr) == sorted([(0, 5.0), (1, None), (0, None)], key=repr)
    assert kb.knot(text, format="ntriples", source="A").claims == 0
