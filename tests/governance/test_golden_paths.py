"""quipu_path_cone and quipu_path_backtest (tools-graphs-governance §6): one test per rule (CO-1..5,
BT-1..5), every listed error and the wire formats, over REST and a real store (SQLite, and
PostgreSQL when the suite runs there); then one call of each tool through the MCP SDK client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from quipu.config import load_settings
from quipu.mcp.dispatch import Dispatcher
from quipu.mcp.registry import build_registry
from quipu.mcp.server import build_server
from quipu.rest.app import create_app
from tests.backends import store_location
from tests.graphs.support import ok
from tests.rest.support import kb_of, serve, state

from .path_fixtures import EX, EXEMPLAR, HISTORY, MINIMAL, NS, OMIT, PATTERN, PREFIXES, TRAJ, VIA


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        kb_of(c).knot(EXEMPLAR)
        kb_of(c).knot(HISTORY)
        yield c


def refused(client: TestClient, route: str, reason: str, field: str, phrase: str, **body: Any) -> str:
    """The refusal's message, after checking status, reason, field and a key phrase, and that the
    store is unchanged."""
    before = state(client)
    response = client.post(route, json=body)
    assert response.status_code == 400, response.text
    out = response.json()
    assert (out["reason"], out.get("field")) == (reason, field), out
    assert phrase in out["error"], out
    assert state(client) == before
    message: str = out["error"]
    return message


def cone(client: TestClient, **body: Any) -> dict[str, Any]:
    return ok(client, "/path/cone", **{"trajectory": TRAJ, **body})


def verdicts(report: dict[str, Any]) -> dict[str, str]:
    return {step["iri"][len(EX) :]: step["verdict"] for step in report["steps"]}


def backtest(client: TestClient, **body: Any) -> dict[str, Any]:
    return ok(client, "/path/backtest", **{"exemplar": TRAJ, "omit": OMIT, **body})


def results(report: dict[str, Any]) -> dict[str, Any]:
    return {row["trajectory"][len(EX) :]: row["result"] for row in report["rows"]}


# -- quipu_path_cone ---------------------------------------------------------------------------------


def test_cone_report_wire_format(client: TestClient) -> None:
    report = cone(client, via=VIA)
    assert report == {
        "trajectory": TRAJ,
        "verifications": [EX + "verif"],
        "derivation_predicates": [*VIA, NS + "verifiedBy"],
        "hops": 8,
        "steps": [
            {
                "iri": EX + "s1-implement",
                "order": 1,
                "verdict": "InCone",
                "reason": f"reaches {EX}verif at depth 3",
            },
            {
                "iri": EX + "s2-detour",
                "order": 2,
                "verdict": "OutOfCone",
                "reason": "no verified result reachable within 8 hops over 2 derivation edge(s)",
            },
            {
                "iri": EX + "s3-test",
                "order": 3,
                "verdict": "InCone",
                "reason": f"reaches {EX}verif at depth 1",
            },
            {
                "iri": EX + "s4-verify",
                "order": 4,
                "verdict": "InCone",
                "reason": f"reaches {EX}verif at depth 2",
            },
            {
                "iri": EX + "s5-mail",
                "order": 5,
                "verdict": "CannotEvaluate",
                "reason": "no outgoing derivation edges recorded: cannot say what this step fed",
            },
        ],
    }


def test_co1_a_step_without_derivation_edges_cannot_be_evaluated(client: TestClient) -> None:
    # Without via only verifiedBy is walked: s1 and s4 record no such edge. A literal-valued
    # derivation statement is not an edge either.
    kb_of(client).knot(PREFIXES + 'ex:s5-mail ex:produces "a note" .')
    report = cone(client)
    assert verdicts(report) == {
        "s1-implement": "CannotEvaluate",
        "s2-detour": "OutOfCone",
        "s3-test": "InCone",
        "s4-verify": "CannotEvaluate",
        "s5-mail": "CannotEvaluate",
    }
    assert verdicts(cone(client, via=VIA))["s5-mail"] == "CannotEvaluate"


def test_co2_the_walk_is_bounded_by_hops(client: TestClient) -> None:
    report = cone(client, via=VIA, hops=2)
    assert report["hops"] == 2
    assert verdicts(report) == {
        "s1-implement": "OutOfCone",  # the verification is 3 hops away
        "s2-detour": "OutOfCone",
        "s3-test": "InCone",
        "s4-verify": "InCone",
        "s5-mail": "CannotEvaluate",
    }
    s1 = report["steps"][0]
    assert s1["reason"] == "no verified result reachable within 2 hops over 1 derivation edge(s)"
    assert verdicts(cone(client, via=VIA, hops=0))["s3-test"] == "OutOfCone"


def test_co3_reachability_is_forward_never_by_removal(client: TestClient) -> None:
    # s4's chain runs on through its output's own statement (report feeds verif): removing s4's
    # statements would leave that chain standing, yet s4 fed the result, so it is in the cone.
    before = state(client)
    assert verdicts(cone(client, via=VIA))["s4-verify"] == "InCone"
    assert state(client) == before  # and nothing, not even a rolled-back retraction, was recorded
    # Forward only: an edge INTO a step (art from s0) says nothing about what the step fed.
    kb_of(client).knot(
        PREFIXES + "ex:s0-scratch a:stepOf ex:traj ; a:stepOrder 0 . ex:art ex:from ex:s0-scratch ."
    )
    assert verdicts(cone(client, via=[*VIA, EX + "from"]))["s0-scratch"] == "CannotEvaluate"


def test_co4_an_unfalsifiable_verification_anchors_nothing(client: TestClient) -> None:
    report = cone(client, via=VIA)
    assert report["verifications"] == [EX + "verif"]  # eyeball has no falsifier
    assert verdicts(report)["s2-detour"] == "OutOfCone"  # though it reaches eyeball at depth 1
    kb_of(client).knot(PREFIXES + "ex:u1 a:stepOf ex:unverified ; a:verifiedBy ex:eyeball .")
    refused(
        client,
        "/path/cone",
        "invalid_field",
        "trajectory",
        "no falsifier-gated verification",
        trajectory=EX + "unverified",
    )


def test_co5_unknown_via_predicates_contribute_nothing(client: TestClient) -> None:
    report = cone(client, via=[EX + "never-written", EX + "produces"])
    assert report["derivation_predicates"] == [EX + "never-written", EX + "produces", NS + "verifiedBy"]
    assert verdicts(report)["s2-detour"] == "OutOfCone"
    assert report["steps"][1]["reason"].endswith("over 2 derivation edge(s)")


def test_cone_verified_by_is_walked_once_even_when_named(client: TestClient) -> None:
    report = cone(client, via=[NS + "verifiedBy", EX + "produces", EX + "produces"])
    assert report["derivation_predicates"] == [NS + "verifiedBy", EX + "produces"]


def test_steps_are_ordered_by_step_order_ties_by_iri_unordered_last(client: TestClient) -> None:
    kb_of(client).knot(
        PREFIXES
        + "ex:s3-again a:stepOf ex:traj ; a:stepOrder 3 . ex:z-free a:stepOf ex:traj . "
        + 'ex:a-free a:stepOf ex:traj ; a:stepOrder "third" .'
    )
    report = cone(client, via=VIA)
    assert [(s["iri"][len(EX) :], s["order"]) for s in report["steps"]] == [
        ("s1-implement", 1),
        ("s2-detour", 2),
        ("s3-again", 3),
        ("s3-test", 3),
        ("s4-verify", 4),  # the string "4" reads as an integer
        ("s5-mail", 5),
        ("a-free", None),  # "third" does not
        ("z-free", None),
    ]


def test_base_ns_selects_the_vocabulary(client: TestClient) -> None:
    other = "https://vocab.example/gp#"
    kb_of(client).knot(EXEMPLAR.replace(NS, other).replace(EX, EX + "o/"))
    report = ok(client, "/path/cone", trajectory=EX + "o/traj", base_ns=other, via=[EX + "o/produces"])
    assert report["derivation_predicates"] == [EX + "o/produces", other + "verifiedBy"]
    assert report["verifications"] == [EX + "o/verif"]
    # Under the store's base_ns the same trajectory has no steps at all.
    refused(client, "/path/cone", "invalid_field", "trajectory", "has no steps", trajectory=EX + "o/traj")


def test_only_current_root_facts_count(client: TestClient) -> None:
    kb = kb_of(client)
    kb.retract(EX + "verif", NS + "falsifier", "the deploy smoke test fails")
    refused(client, "/path/cone", "invalid_field", "trajectory", "no falsifier-gated", trajectory=TRAJ)
    kb.create_graph(EX + "g")
    kb.knot(PREFIXES + 'ex:verif a:falsifier "in a named graph" .', graph=EX + "g")
    refused(client, "/path/cone", "invalid_field", "trajectory", "no falsifier-gated", trajectory=TRAJ)


@pytest.mark.parametrize(
    "body, reason, field, phrase",
    [
        ({}, "missing_field", "trajectory", "trajectory"),
        ({"trajectory": EX + "nobody"}, "not_found", "trajectory", "entity not found"),
        ({"trajectory": EX + "wi"}, "invalid_field", "trajectory", "has no steps"),
        ({"trajectory": "not an iri"}, "invalid_field", "trajectory", "not an absolute IRI"),
        ({"trajectory": TRAJ, "via": ["no iri"]}, "invalid_field", "via", "not an absolute IRI"),
        ({"trajectory": TRAJ, "via": EX + "produces"}, "wrong_type", "via", ""),
        ({"trajectory": TRAJ, "hops": -1}, "invalid_field", "hops", "greater than or equal to 0"),
        ({"trajectory": TRAJ, "hops": "8"}, "wrong_type", "hops", ""),
        ({"trajectory": TRAJ, "base_ns": "vocab"}, "invalid_field", "base_ns", "not an absolute IRI"),
    ],
)
def test_cone_errors(client: TestClient, body: dict[str, Any], reason: str, field: str, phrase: str) -> None:
    refused(client, "/path/cone", reason, field, phrase, **body)


def test_cone_unknown_keys_are_reported_not_refused(client: TestClient) -> None:
    report = cone(client, colour="blue")
    assert report["ignored_fields"] == ["colour"]


# -- quipu_path_backtest -----------------------------------------------------------------------------


def test_backtest_report_wire_format(client: TestClient) -> None:
    report = backtest(client)
    assert report["grammar"] == "gp-grammar/1"
    assert report["exemplar"] == TRAJ
    assert report["pattern"] == PATTERN  # BT-5: snake_case fields
    assert report["topics"] == ["service-deploy"]
    assert report["rows"] == [
        {"trajectory": EX + "t-blind", "workitem": EX + "wi-t-blind", "outcome": "done",
         "result": "CannotEvaluate", "unevaluated_steps": 1},
        {"trajectory": EX + "t-empty", "workitem": EX + "wi-t-empty", "outcome": "done",
         "result": "CannotEvaluate", "unevaluated_steps": 0},
        {"trajectory": EX + "t-follow", "workitem": EX + "wi-t-follow", "outcome": "done",
         "result": "Conforms", "unevaluated_steps": 0},
        {"trajectory": EX + "t-gappy", "workitem": EX + "wi-t-gappy", "outcome": "Done",
         "result": "Conforms", "unevaluated_steps": 1},
        {"trajectory": EX + "t-multi", "workitem": EX + "wi-t-multi", "outcome": "done",
         "result": "Conforms", "unevaluated_steps": 0},
        {"trajectory": EX + "t-open", "workitem": EX + "wi-t-open", "outcome": None,
         "result": {"DeviatesAt": {"pattern_index": 2}}, "unevaluated_steps": 0},
        {"trajectory": EX + "t-stray", "workitem": EX + "wi-t-stray", "outcome": "failed",
         "result": {"DeviatesAt": {"pattern_index": 1}}, "unevaluated_steps": 0},
    ]  # fmt: skip
    counts = {k: v for k, v in report.items() if k.endswith(("_done", "_total")) or k == "cannot_evaluate"}
    assert counts == {
        "conformers_done": 2,
        "conformers_total": 3,
        "deviators_done": 0,
        "deviators_total": 2,
        "cannot_evaluate": 2,
    }


def test_bt1_the_population_shares_a_topic_sorted_by_trajectory(client: TestClient) -> None:
    rows = backtest(client)["rows"]
    names = [row["trajectory"][len(EX) :] for row in rows]
    assert names == sorted(names)
    assert "t-other" not in names and "traj" not in names  # off-topic, and the exemplar itself
    assert "t-multi" in names  # one shared topic of two is enough


def test_bt1_an_off_topic_trajectory_is_never_counted(client: TestClient) -> None:
    before = backtest(client)
    kb_of(client).knot(PREFIXES + 'ex:wi-t-other a:about "retry" .')
    assert backtest(client) == before


def test_bt2_all_unevaluable_or_no_steps_is_cannot_evaluate_only(client: TestClient) -> None:
    report = backtest(client)
    assert results(report)["t-blind"] == "CannotEvaluate" and results(report)["t-empty"] == "CannotEvaluate"
    assert report["cannot_evaluate"] == 2
    # Neither is counted as a conformer or a deviator, though both work items are done.
    assert report["conformers_total"] + report["deviators_total"] + report["cannot_evaluate"] == len(
        report["rows"]
    )


def test_bt3_done_means_exactly_done(client: TestClient) -> None:
    report = backtest(client)
    assert results(report)["t-gappy"] == "Conforms"
    assert report["conformers_total"] == 3 and report["conformers_done"] == 2  # "Done" is not done


def test_bt4_unevaluated_steps_are_skipped_and_counted(client: TestClient) -> None:
    rows = {row["trajectory"][len(EX) :]: row for row in backtest(client)["rows"]}
    assert rows["t-gappy"]["result"] == "Conforms" and rows["t-gappy"]["unevaluated_steps"] == 1


def test_bt5_pattern_fields_are_snake_case(client: TestClient) -> None:
    pattern = backtest(client)["pattern"]
    assert all(set(p) == {"action_kind", "target_class"} for p in pattern)
    assert "actionKind" not in json.dumps(pattern)


def test_target_classes_are_read_from_the_store(client: TestClient) -> None:
    kb_of(client).knot(
        PREFIXES
        + 'ex:tc a:trajectoryOf ex:tc-wi . ex:tc-wi a:about "tc" . '
        + 'ex:tc-1 a:stepOf ex:tc ; a:stepOrder 1 ; a:actionKind "open" ; a:actionTarget ex:bare . '
        + 'ex:tc-2 a:stepOf ex:tc ; a:stepOrder 2 ; a:actionKind "open" ; a:actionTarget ex:two . '
        + "ex:two a ex:Zeta , ex:Alpha . "
        + 'ex:tc-3 a:stepOf ex:tc ; a:stepOrder 3 ; a:actionKind "open" .'
    )
    assert ok(client, "/path/backtest", exemplar=EX + "tc")["pattern"] == [
        {"action_kind": "open", "target_class": "untyped"},
        {"action_kind": "open", "target_class": EX + "Alpha"},
        {"action_kind": "open", "target_class": "none"},
    ]


def test_zero_matches_is_not_cannot_evaluate(client: TestClient) -> None:
    # Omit only s2 and s5 but also demand a step nobody took: every evaluable row deviates.
    kb_of(client).knot(PREFIXES + 'ex:s6-ship a:stepOf ex:traj ; a:stepOrder 6 ; a:actionKind "ship" .')
    report = backtest(client)
    assert report["conformers_total"] == 0 and report["deviators_total"] == 5
    assert report["cannot_evaluate"] == 2


@pytest.mark.parametrize(
    "body, reason, field, phrase",
    [
        ({}, "missing_field", "exemplar", "exemplar"),
        ({"exemplar": EX + "nobody"}, "not_found", "exemplar", "entity not found"),
        ({"exemplar": EX + "wi"}, "invalid_field", "exemplar", "has no steps"),
        ({"exemplar": TRAJ, "omit": [EX + "s2-detour"]}, "invalid_field", "omit", f"{EX}s5-mail"),
        ({"exemplar": TRAJ, "omit": [EX + "s2-detour"]}, "invalid_field", "omit", "gp-grammar/1"),
        (
            {
                "exemplar": TRAJ,
                "omit": [EX + s for s in ("s1-implement", "s2-detour", "s3-test", "s4-verify", "s5-mail")],
            },
            "invalid_field",
            "omit",
            "empty",
        ),
        (
            {"exemplar": EX + "t-follow", "omit": []},
            "invalid_field",
            "exemplar",
            "cannot establish applicability",
        ),
        ({"exemplar": TRAJ, "omit": ["no iri"]}, "invalid_field", "omit", "not an absolute IRI"),
        ({"exemplar": TRAJ, "omit": EX + "s2-detour"}, "wrong_type", "omit", ""),
    ],
)
def test_backtest_errors(
    client: TestClient, body: dict[str, Any], reason: str, field: str, phrase: str
) -> None:
    if body.get("exemplar") == EX + "t-follow":  # a trajectory whose work item has no topic
        kb_of(client).retract(EX + "wi-t-follow", NS + "about", "service-deploy")
    refused(client, "/path/backtest", reason, field, phrase, **body)


def test_backtest_unknown_keys_are_reported_not_refused(client: TestClient) -> None:
    assert backtest(client, shade="grey")["ignored_fields"] == ["shade"]


# -- over MCP, through the SDK client -----------------------------------------------------------------


def test_both_tools_over_mcp(tmp_path: Path) -> None:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "m.db")}))
    registry = build_registry(app.openapi())
    assert registry.tools["quipu_path_cone"].read_only and registry.tools["quipu_path_backtest"].read_only

    async def run() -> None:
        dispatcher = Dispatcher(app, registry)
        try:
            async with app.router.lifespan_context(app):
                app.state.kb.knot(EXEMPLAR)
                app.state.kb.knot(HISTORY)
                app.state.kb.knot(MINIMAL)
                server = build_server(registry, dispatcher, lambda _ctx: None)
                async with Client(server, mode="auto") as client:
                    coned = await client.call_tool("quipu_path_cone", {"trajectory": TRAJ, "via": VIA})
                    assert not coned.is_error and coned.structured_content is not None
                    assert [s["verdict"] for s in coned.structured_content["steps"]] == [
                        "InCone", "OutOfCone", "InCone", "InCone", "CannotEvaluate",
                    ]  # fmt: skip
                    tested = await client.call_tool("quipu_path_backtest", {"exemplar": TRAJ, "omit": OMIT})
                    assert not tested.is_error and tested.structured_content is not None
                    assert tested.structured_content["grammar"] == "gp-grammar/1"
                    assert tested.structured_content["pattern"] == PATTERN
                    assert tested.structured_content["conformers_total"] == 3
                    alone = await client.call_tool("quipu_path_backtest", {"exemplar": EX + "mini"})
                    assert alone.structured_content is not None
                    assert alone.structured_content["rows"] == []  # no other trajectory shares "mini"
                    failed = await client.call_tool("quipu_path_cone", {"trajectory": EX + "nobody"})
                    assert failed.is_error
                    body = json.loads(failed.content[0].text)  # type: ignore[union-attr]
                    assert (body["reason"], body["field"]) == ("not_found", "trajectory")
        finally:
            await dispatcher.aclose()

    anyio.run(run)
