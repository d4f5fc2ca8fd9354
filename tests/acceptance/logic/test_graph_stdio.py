"""``zpm serve --db``: the stdio server's logic memory reads a quipu store through rdf/3 and
friends (docs/logic.md), with the zpm wire format unchanged: a rule over graph facts and a logic
fact, its proof with graph leaves, a past valid time, and the store named by the config instead."""

from __future__ import annotations

import json
from pathlib import Path

import quipu
from tests.acceptance.logic.harness import result_text, session

EX = "http://ex.org/"
WORLD = f"""@prefix ex: <{EX}> .
ex:checkout ex:testRun ex:run1 . ex:run1 ex:status "failed" .
ex:search ex:testRun ex:run2 . ex:run2 ex:status "passed" .
"""
RISKY = f"customer_facing(S), \\+ ( rdf(S, '{EX}testRun', R), rdf(R, '{EX}status', literal(passed)) )"


def store(tmp_path: Path) -> str:
    location = str(tmp_path / "graph.db")
    with quipu.open(location) as kb:
        kb.knot(WORLD, timestamp="2026-11-01T00:00:00Z")
        kb.knot(f"<{EX}checkout> <{EX}owner> <{EX}payments> .", "nt", timestamp="2026-11-01T00:00:00Z")
        kb.set(EX + "checkout", EX + "owner", {"iri": EX + "growth"}, timestamp="2026-11-10T00:00:00Z")
    return location


def test_zpm_serve_with_a_store_answers_rules_over_the_graph(project: Path, tmp_path: Path) -> None:
    with session(project, args=("--db", store(tmp_path))) as zpm:
        for name in ("checkout", "search"):
            assert "Asserted" in result_text(
                zpm.call("remember_fact", {"fact": f"customer_facing('{EX}{name}')"})
            )
        assert "Asserted rule" in result_text(zpm.call("define_rule", {"head": "risky(S)", "body": RISKY}))
        assert json.loads(result_text(zpm.call("query_logic", {"goal": "risky(S)"}))) == [
            {"S": EX + "checkout"}
        ]
        past = f"rdf_at('{EX}checkout', '{EX}owner', T, '2026-11-05T00:00:00Z')"
        assert json.loads(result_text(zpm.call("query_logic", {"goal": past}))) == [{"T": EX + "payments"}]
        why = json.loads(result_text(zpm.call("explain_why", {"fact": f"risky('{EX}checkout')"})))
        assert why["proven"] is True
        assert why["proof_tree"]["children"][0]["rule_applied"] == "fact"


def test_zpm_serve_reads_the_store_the_config_names_else_says_what_to_set(
    project: Path, tmp_path: Path
) -> None:
    goal = {"goal": f"rdf(S, '{EX}owner', O)"}
    with session(project, env={"QUIPU_LOGIC__STORE": store(tmp_path)}) as zpm:
        assert json.loads(result_text(zpm.call("query_logic", goal))) == [
            {"S": EX + "checkout", "O": EX + "growth"}
        ]
    with session(project, env={"QUIPU_LOGIC__STORE": ""}) as zpm:
        answer = zpm.call("query_logic", goal)
        assert answer["isError"] is True
        assert "[quipu.logic] store" in result_text(answer) and "zpm serve --db" in result_text(answer)
