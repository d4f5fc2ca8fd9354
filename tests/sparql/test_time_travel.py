"""One query at three read points gives three answers, compiled and on rdflib's path alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from rdflib import Literal, URIRef
from rdflib.term import Node

import quipu
from quipu.api import KnowledgeBase
from tests.backends import store_location

EX = "http://example.org/"
AGE = EX + "age"
SELECT = f"SELECT ?who ?age WHERE {{ ?who <{AGE}> ?age }} ORDER BY ?who"
CONSTRUCT = f"CONSTRUCT {{ ?who <{EX}aged> ?age }} WHERE {{ ?who <{AGE}> ?age }}"


def history(kb: KnowledgeBase) -> tuple[int, int, int]:
    """ann 30 (2020), then bob 40 (2021), then ann becomes 31 (2022) and bob is retracted."""
    t1 = kb.knot(
        f"<{EX}ann> <{AGE}> 30 .", timestamp="2020-01-01T00:00:00Z", valid_from="2020-01-01T00:00:00Z"
    )
    t2 = kb.knot(
        f"<{EX}bob> <{AGE}> 40 .", timestamp="2021-01-01T00:00:00Z", valid_from="2021-01-01T00:00:00Z"
    )
    kb.set(EX + "ann", AGE, {"int": 31}, timestamp="2022-01-01T00:00:00Z")
    t3 = kb.retract(EX + "bob", timestamp="2022-06-01T00:00:00Z")
    return t1.tx_id, t2.tx_id, t3.tx_id


def ages(rows: Sequence[Mapping[str, Node]]) -> list[tuple[str, int]]:
    out = []
    for row in rows:
        who, age = row["who"], row["age"]
        assert isinstance(who, URIRef) and isinstance(age, Literal)
        out.append((str(who).removeprefix(EX), int(age)))
    return out


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "fallback"])
def test_select_and_construct_at_three_read_points(tmp_path: Path, compiled: bool) -> None:
    with quipu.open(store_location(tmp_path, "kb.db"), sparql_compiler=compiled) as kb:
        t1, t2, _ = history(kb)
        expected = {
            "tx1": [("ann", 30)],
            "tx2": [("ann", 30), ("bob", 40)],
            "now": [("ann", 31)],
        }
        points = {"tx1": {"as_of_tx": t1}, "tx2": {"as_of_tx": t2}, "now": {}}
        for name, point in points.items():
            result = kb.query_result(SELECT, **point)  # type: ignore[arg-type]
            assert ages(result.rows) == expected[name], name
            assert result.plan == ("sql" if compiled else "rdflib")
            graph = kb.query_result(CONSTRUCT, **point)  # type: ignore[arg-type]
            triples = sorted((str(s).removeprefix(EX), int(str(o))) for s, _p, o in graph.graph or ())
            assert triples == expected[name], name
        # valid time: mid-2021 both are valid; the set in 2022 closed ann's 30 at 2022-01-01
        mid = kb.query_result(SELECT, valid_at="2021-06-01T00:00:00Z")
        assert ages(mid.rows) == [("ann", 30), ("bob", 40)]
        late = kb.query_result(SELECT, valid_at="2022-03-01T00:00:00Z")
        assert ages(late.rows) == [("ann", 31), ("bob", 40)]
        # both axes: what tx2 believed about mid-2021
        both = kb.query_result(SELECT, valid_at="2021-06-01T00:00:00Z", as_of_tx=t2)
        assert ages(both.rows) == [("ann", 30), ("bob", 40)]
        before = kb.query_result(SELECT, valid_at="2020-06-01T00:00:00Z", as_of_tx=t2)
        assert ages(before.rows) == [("ann", 30)]
