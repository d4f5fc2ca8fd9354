"""Truth maintenance over stdio (spec logic-memory.md §5, §11.1): single support, multi-support,
survival of facts that were never assumed, the `N fact(s) removed` counts, belief `in`/`out`, and
the replay of all of it by a second server process."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.acceptance.logic.steps import Step, fails, ok, ok_json, play


def belief(status: str, justifications: list[str], source: str) -> dict[str, Any]:
    return {"status": status, "justifications": justifications, "source": source}


def journal_size() -> Step:
    return Step("get_persistence_status", {}, prefix="status: active\n")


def test_single_support_multi_support_and_the_removed_counts(project: Path) -> None:
    play(
        project,
        [
            # Single support: the fact goes with its only assumption.
            ok("assume_fact", {"fact": "opened(door)", "assumption": "guess"}),
            ok_json("get_belief_status", {"fact": "opened(door)"}, belief("in", ["guess"], "interactive")),
            ok(
                "retract_assumption",
                {"assumption": "guess"},
                "Retracted assumption 'guess': 1 fact(s) removed",
            ),
            ok_json("query_logic", {"goal": "opened(door)"}, []),
            ok_json(
                "get_belief_status", {"fact": "opened(door)"}, belief("out", [], "unknown")
            ),  # R-TM9: gone
            ok_json("list_assumptions", {}, {"assumptions": []}),
            # Two facts under one assumption.
            ok("assume_fact", {"fact": "up(web)", "assumption": "infra"}),
            ok("assume_fact", {"fact": "up(db)", "assumption": "infra"}),
            ok_json("get_justification", {"assumption": "infra"}, {"facts": ["up(web)", "up(db)"]}),
            ok(
                "retract_assumption",
                {"assumption": "infra"},
                "Retracted assumption 'infra': 2 fact(s) removed",
            ),
            ok_json("query_logic", {"goal": "up(X)"}, []),
            # Multi-support (R-TM5): survives the first retraction, goes with the second.
            ok("assume_fact", {"fact": "wet(street)", "assumption": "rain"}),
            ok("assume_fact", {"fact": "wet(street)", "assumption": "hose"}),
            ok_json(
                "get_belief_status", {"fact": "wet(street)"}, belief("in", ["rain", "hose"], "interactive")
            ),
            ok(
                "retract_assumption", {"assumption": "rain"}, "Retracted assumption 'rain': 0 fact(s) removed"
            ),
            ok_json("query_logic", {"goal": "wet(W)"}, [{"W": "street"}]),
            ok_json("get_belief_status", {"fact": "wet(street)"}, belief("in", ["hose"], "interactive")),
            ok(
                "retract_assumption", {"assumption": "hose"}, "Retracted assumption 'hose': 1 fact(s) removed"
            ),
            ok_json("query_logic", {"goal": "wet(W)"}, []),
            ok_json("get_belief_status", {"fact": "wet(street)"}, belief("out", [], "unknown")),
            # Idempotent assume (R-TM1): no second copy, no second justification.
            ok("assume_fact", {"fact": "ready(x)", "assumption": "plan"}),
            ok("assume_fact", {"fact": "ready(x)", "assumption": "plan"}),
            ok_json("query_logic", {"goal": "ready(R)"}, [{"R": "x"}]),
            ok_json("get_justification", {"assumption": "plan"}, {"facts": ["ready(x)"]}),
            ok_json(
                "get_belief_status", {"fact": "ready( R )"}, belief("in", ["plan"], "interactive")
            ),  # R-TM8
        ],
    )


def test_facts_that_were_never_assumed_survive_and_belief_is_about_justification(project: Path) -> None:
    texts = play(
        project,
        [
            ok("remember_fact", {"fact": "server(a)"}),
            ok("upsert_fact", {"fact": "server(b)"}),
            ok("remember_fact", {"fact": "server(c)"}),
            ok("update_fact", {"old_fact": "server(c)", "new_fact": "server(d)"}),
            ok("assume_fact", {"fact": "server(e)", "assumption": "maybe"}),
            ok("remember_fact", {"fact": "server(e)"}),  # a second copy, by remember_fact
            ok("define_rule", {"head": "reachable(X)", "body": "server(X)"}),
            ok_json("get_belief_status", {"fact": "server(a)"}, belief("out", [], "interactive")),
            ok_json(
                "get_belief_status", {"fact": "reachable(a)"}, belief("out", [], "unknown")
            ),  # derivable only
            ok(
                "retract_assumption",
                {"assumption": "maybe"},
                "Retracted assumption 'maybe': 1 fact(s) removed",
            ),
            # R-TM4: never-assumed facts stay; R-TM3: every copy of the orphan goes; R-TM7: rules just
            # stop deriving it.
            ok_json("query_logic", {"goal": "server(X)"}, [{"X": "a"}, {"X": "b"}, {"X": "d"}]),
            ok_json("query_logic", {"goal": "reachable(X)"}, [{"X": "a"}, {"X": "b"}, {"X": "d"}]),
            # A forgotten assumed fact keeps its justification (R-FF2).
            ok("assume_fact", {"fact": "lit(lamp)", "assumption": "power"}),
            ok("forget_fact", {"fact": "lit(lamp)"}),
            # (Its source is not asserted: R-FF2 keeps the record, R-TM9 calls a missing fact unknown.)
            Step(
                "get_belief_status",
                {"fact": "lit(lamp)"},
                prefix='{"status":"in","justifications":["power"],',
            ),
            # Unknown assumption: an error, nothing removed, nothing journaled.
            journal_size(),
            fails("retract_assumption", {"assumption": "never_made"}, "Unknown assumption 'never_made'"),
            journal_size(),
            ok_json("list_assumptions", {}, {"assumptions": ["power"]}),
        ],
    )
    before, after = (re.findall(r"journal_size: (\d+) bytes", t) for t in (texts[-4], texts[-2]))
    assert before == after and int(before[0]) > 0
    assert "fact(s) removed" not in texts[-3]


def test_a_second_server_replays_the_tms_state(project: Path) -> None:
    play(
        project,
        [
            ok("assume_fact", {"fact": "wet(street)", "assumption": "rain"}),
            ok("assume_fact", {"fact": "wet(street)", "assumption": "hose"}),
            ok("assume_fact", {"fact": "wet(grass)", "assumption": "rain"}),
            ok("assume_fact", {"fact": "guess_a(1)", "assumption": "guess_a"}),
            ok("assume_fact", {"fact": "guess_b(1)", "assumption": "guess_b"}),
            ok(
                "retract_assumption", {"assumption": "rain"}, "Retracted assumption 'rain': 1 fact(s) removed"
            ),
            ok(
                "retract_assumptions",
                {"pattern": "guess_?"},
                "Retracted pattern 'guess_?': 2 assumption(s) removed",
            ),
        ],
    )
    play(
        project,
        [
            ok_json("list_assumptions", {}, {"assumptions": ["hose"]}),  # R-TM6
            ok_json("query_logic", {"goal": "wet(W)"}, [{"W": "street"}]),
            ok_json("query_logic", {"goal": "guess_a(_) ; guess_b(_)"}, []),
            # R-TM9: the fact came back through the journal.
            ok_json("get_belief_status", {"fact": "wet(street)"}, belief("in", ["hose"], "journal")),
            ok(
                "retract_assumption", {"assumption": "hose"}, "Retracted assumption 'hose': 1 fact(s) removed"
            ),
            ok_json("query_logic", {"goal": "wet(W)"}, []),
        ],
    )
