"""The two time axes (DM §6): the worked example of §6.3, tx reads, valid-time reads and both."""

from __future__ import annotations

from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import InvalidField

from . import EX, column, select

SVC, OWNER, ALICE, BOB = EX + "svc", EX + "owner", EX + "alice", EX + "bob"
OWNER_QUERY = f"SELECT ?o WHERE {{ <{SVC}> <{OWNER}> ?o }}"


@pytest.fixture
def worked(kb: KnowledgeBase) -> KnowledgeBase:
    """DM §6.3: tx 1 asserts :svc :owner :alice (valid from April), tx 2 sets :bob."""
    first = kb.knot(
        f"<{SVC}> <{OWNER}> <{ALICE}> .",
        timestamp="2026-05-01T10:00:00Z",
        valid_from="2026-04-01T00:00:00Z",
    )
    assert first.tx_id == 1
    second = kb.set(SVC, OWNER, {"iri": BOB}, timestamp="2026-05-20T09:00:00Z")
    assert (second.tx_id, second.retracted, second.asserted) == (2, 1, 1)
    return kb


# Each read of the worked example's table, as (read point, expected owners).
WORKED_READS: list[tuple[dict[str, Any], list[str]]] = [
    ({}, [BOB]),
    ({"as_of_tx": 1}, [ALICE]),
    ({"valid_at": "2026-04-15T00:00:00Z"}, [ALICE]),
    ({"valid_at": "2026-05-21T00:00:00Z"}, [BOB]),
    ({"as_of_tx": 1, "valid_at": "2026-06-01T00:00:00Z"}, [ALICE]),
    ({"valid_at": "2026-03-01T00:00:00Z"}, []),
]
READ_IDS = ["current", "tx1", "valid_at_april", "valid_at_may21", "tx1_valid_at_june", "valid_at_march"]


@pytest.mark.parametrize(("point", "expected"), WORKED_READS, ids=READ_IDS)
def test_worked_example_query(worked: KnowledgeBase, point: dict[str, Any], expected: list[str]) -> None:
    assert column(select(worked, OWNER_QUERY, **point), "o") == expected


@pytest.mark.parametrize(("point", "expected"), WORKED_READS[1:], ids=READ_IDS[1:])
def test_worked_example_unravel(worked: KnowledgeBase, point: dict[str, Any], expected: list[str]) -> None:
    out = worked.unravel(tx=point.get("as_of_tx"), valid_at=point.get("valid_at"))
    owners = sorted(f["value"] for f in out["facts"] if f["entity"] == SVC and f["predicate"] == OWNER)
    assert owners == expected
    assert out["count"] == len(out["facts"]) == len(expected)


def test_worked_example_unravel_rows_show_stored_closure(worked: KnowledgeBase) -> None:
    """At tx 1 the claim closed later is visible with its later valid_to and retracted_tx (§1.5 r4)."""
    out = worked.unravel(tx=1)
    assert out["facts"] == [
        {
            "entity": SVC,
            "predicate": OWNER,
            "value": ALICE,
            "valid_from": "2026-04-01T00:00:00Z",
            "valid_to": "2026-05-20T09:00:00Z",
            "tx": 1,
            "retracted_tx": 2,
        }
    ]
    now = worked.unravel(valid_at="2026-05-21T00:00:00Z")
    assert now["facts"] == [
        {
            "entity": SVC,
            "predicate": OWNER,
            "value": BOB,
            "valid_from": "2026-05-20T09:00:00Z",
            "valid_to": None,
            "tx": 2,
            "retracted_tx": None,
        }
    ]


def test_worked_example_current_state_is_not_an_unravel(worked: KnowledgeBase) -> None:
    with pytest.raises(InvalidField, match="tx"):
        worked.unravel()


def test_tx_read_sees_claims_retracted_later(kb: KnowledgeBase) -> None:
    """DM §16.4: at tx = N a claim retracted by a later transaction is visible."""
    kb.knot(f'<{EX}a> <{EX}p> <{EX}b> .\n<{EX}a> <{EX}q> "keep" .', timestamp="2026-01-01T00:00:00Z")
    kb.knot(f"<{EX}c> <{EX}p> <{EX}d> .", timestamp="2026-01-02T00:00:00Z")
    gone = kb.retract(EX + "a", EX + "p", timestamp="2026-01-03T00:00:00Z")
    assert (gone.tx_id, gone.retracted) == (3, 1)
    q = f"SELECT ?s ?o WHERE {{ ?s <{EX}p> ?o }}"
    assert column(select(kb, q), "s") == [EX + "c"]
    assert column(select(kb, q, as_of_tx=1), "s") == [EX + "a"]
    assert column(select(kb, q, as_of_tx=2), "s") == [EX + "a", EX + "c"]
    assert column(select(kb, q, as_of_tx=3), "s") == [EX + "c"]
    assert select(kb, q, as_of_tx=0) == []
    # The fact-log view agrees.
    assert [
        (f["entity"], f["retracted_tx"]) for f in kb.unravel(tx=2)["facts"] if f["predicate"] == EX + "p"
    ] == [
        (EX + "a", 3),
        (EX + "c", None),
    ]


def test_both_axes_ignore_a_closure_after_the_tx(kb: KnowledgeBase) -> None:
    """[changed] §6.2: closure stamp <= T but closure tx > N → still visible at (N, T)."""
    kb.knot(f'<{EX}a> <{EX}p> "v" .', timestamp="2026-01-01T00:00:00Z")
    kb.retract(EX + "a", EX + "p", timestamp="2026-02-01T00:00:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    # After tx 1, about 1 March: the closure (tx 2) was not yet known.
    assert column(select(kb, q, as_of_tx=1, valid_at="2026-03-01T00:00:00Z"), "o") == ["v"]
    assert [f["value"] for f in kb.unravel(tx=1, valid_at="2026-03-01T00:00:00Z")["facts"]] == ["v"]
    # After tx 2 the closure is known and its stamp is <= T.
    assert select(kb, q, as_of_tx=2, valid_at="2026-03-01T00:00:00Z") == []
    assert kb.unravel(tx=2, valid_at="2026-03-01T00:00:00Z")["facts"] == []
    # valid_at alone is "what we believe now about T": closed.
    assert select(kb, q, valid_at="2026-03-01T00:00:00Z") == []
    # Before the closure stamp it was valid, whichever tx we read at.
    assert column(select(kb, q, as_of_tx=2, valid_at="2026-01-15T00:00:00Z"), "o") == ["v"]


def test_both_axes_respect_tx_upper_bound(kb: KnowledgeBase) -> None:
    """A back-dated claim written at tx 2 is invisible at tx 1 even for a valid_at it covers."""
    kb.knot(f'<{EX}x> <{EX}p> "first" .', timestamp="2026-05-01T00:00:00Z")
    kb.knot(f'<{EX}a> <{EX}p> "late" .', timestamp="2026-05-02T00:00:00Z", valid_from="2026-01-01T00:00:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert select(kb, q, as_of_tx=1, valid_at="2026-03-01T00:00:00Z") == []
    assert column(select(kb, q, as_of_tx=2, valid_at="2026-03-01T00:00:00Z"), "o") == ["late"]
    # valid time alone sees the back-dated fact.
    assert column(select(kb, q, valid_at="2026-03-01T00:00:00Z"), "o") == ["late"]


def test_future_valid_from_is_current(kb: KnowledgeBase) -> None:
    """Current state ignores valid_from: a fact valid from next year is already current."""
    kb.knot(f'<{EX}a> <{EX}p> "soon" .', valid_from="2999-01-01T00:00:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert column(select(kb, q), "o") == ["soon"]
    assert select(kb, q, valid_at="2998-12-31T23:59:59Z") == []
    assert column(select(kb, q, valid_at="2999-01-01T00:00:00Z"), "o") == ["soon"]


def test_valid_to_is_exclusive(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "v" .', timestamp="2026-01-01T00:00:00Z")
    kb.retract(EX + "a", timestamp="2026-02-01T00:00:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert column(select(kb, q, valid_at="2026-01-31T23:59:59Z"), "o") == ["v"]
    assert select(kb, q, valid_at="2026-02-01T00:00:00Z") == []
    assert column(select(kb, q, valid_at="2026-01-01T00:00:00Z"), "o") == ["v"]


def test_bare_date_valid_at_is_compared_verbatim(kb: KnowledgeBase) -> None:
    """§6.1: a bare date is not normalised; "2026-04-02T00:00:00Z" is NOT <= "2026-04-02"."""
    kb.knot(f'<{EX}a> <{EX}p> "v" .', valid_from="2026-04-02T00:00:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    assert select(kb, q, valid_at="2026-04-02") == []
    assert kb.unravel(valid_at="2026-04-02")["facts"] == []
    # As text, "2026-04-02T…" sorts before "2026-04-03".
    assert column(select(kb, q, valid_at="2026-04-03"), "o") == ["v"]
    assert [f["value"] for f in kb.unravel(valid_at="2026-04-03")["facts"]] == ["v"]
    # The same instant spelled in full is visible.
    assert column(select(kb, q, valid_at="2026-04-02T00:00:00Z"), "o") == ["v"]


def test_valid_at_with_offset_is_normalised(kb: KnowledgeBase) -> None:
    """ "2026-04-02T01:30:00+02:00" is 2026-04-01T23:30:00Z, before a valid_from of 23:45Z."""
    kb.knot(f'<{EX}a> <{EX}p> "v" .', valid_from="2026-04-01T23:45:00Z")
    q = f"SELECT ?o WHERE {{ <{EX}a> <{EX}p> ?o }}"
    # Verbatim text comparison would wrongly show the fact ("2026-04-02…" > "2026-04-01…").
    assert select(kb, q, valid_at="2026-04-02T01:30:00+02:00") == []
    assert kb.unravel(valid_at="2026-04-02T01:30:00+02:00")["facts"] == []
    # 2026-04-02T01:50:00+02:00 is 23:50Z: visible.
    assert column(select(kb, q, valid_at="2026-04-02T01:50:00+02:00"), "o") == ["v"]
    # A negative offset moves forward, and a fraction is truncated before comparing.
    assert column(select(kb, q, valid_at="2026-04-01T18:45:00.999-05:00"), "o") == ["v"]
    assert select(kb, q, valid_at="2026-04-01T23:44:59.999Z") == []


def test_temporal_parameters_apply_inside_graph_and_filters(kb: KnowledgeBase) -> None:
    """§13.3: tx applies to every pattern, including those in named graphs and EXISTS."""
    g = EX + "g"
    kb.create_graph(g)
    kb.knot(f'<{EX}a> <{EX}p> "one" .', graph=g)  # tx 1
    kb.knot(f'<{EX}a> <{EX}p> "two" .', graph=g)  # tx 2
    q = f"SELECT ?o WHERE {{ GRAPH <{g}> {{ <{EX}a> <{EX}p> ?o }} }}"
    assert column(select(kb, q), "o") == ["one", "two"]
    assert column(select(kb, q, as_of_tx=1), "o") == ["one"]
    ask = f'ASK {{ FILTER EXISTS {{ GRAPH <{g}> {{ <{EX}a> <{EX}p> "two" }} }} }}'
    assert kb.query(ask) is True
    assert kb.query(ask, as_of_tx=1) is False


def test_tx_must_be_a_non_negative_integer(kb: KnowledgeBase) -> None:
    kb.knot(f'<{EX}a> <{EX}p> "v" .')
    with pytest.raises(InvalidField, match="tx"):
        kb.unravel(tx=-1)
    with pytest.raises(InvalidField, match="tx"):
        kb.query("SELECT * WHERE { ?s ?p ?o }", as_of_tx=-1)
