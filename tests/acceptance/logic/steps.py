"""Scripted conversations: each step is one ``tools/call`` and what its result must be. A script runs
in one ``zpm serve`` process (a server start is the expensive part), and every mismatch is reported
together, naming the request, the expected and the received text."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from tests.acceptance.logic.harness import Session, converse, result_text

SEED_FILE: Final = Path(__file__).resolve().parents[2] / "logic" / "seed_examples.json"
_SEED: dict[str, dict[str, Any]] = {}


def seed(key: str) -> dict[str, Any]:
    """One request/response example of the seed document (tests/logic/seed_examples.json)."""
    if not _SEED:
        examples = json.loads(SEED_FILE.read_text(encoding="utf-8"))["examples"]
        _SEED.update({example["key"]: example for example in examples})
    return _SEED[key]


@dataclass(frozen=True)
class Step:
    tool: str
    arguments: Mapping[str, Any] | None
    text: str | None = None  # the exact text; None: any text
    error: bool = False
    as_json: bool = False  # compare the texts as JSON values
    prefix: str | None = None  # the text must start with this

    def problem(self, result: Mapping[str, Any]) -> str | None:
        got = result_text(result)
        wrong = result["isError"] is not self.error
        if self.text is not None:
            wrong = wrong or not _same(got, self.text, self.as_json)
        if self.prefix is not None:
            wrong = wrong or not got.startswith(self.prefix)
        if not wrong:
            return None
        want = self.text if self.text is not None else f"{self.prefix or ''}..."
        return (
            f"{self.tool} {json.dumps(self.arguments)}: expected {'error' if self.error else 'success'} "
            f"{want!r}, got {'error' if result['isError'] else 'success'} {got!r}"
        )


def _same(got: str, want: str, as_json: bool) -> bool:
    if not as_json:
        return got == want
    try:
        return bool(json.loads(got) == json.loads(want))
    except ValueError:
        return False


def ok(tool: str, arguments: Mapping[str, Any] | None = None, text: str | None = None) -> Step:
    return Step(tool, arguments, text)


def ok_json(tool: str, arguments: Mapping[str, Any] | None, value: Any) -> Step:
    return Step(tool, arguments, json.dumps(value), as_json=True)


def fails(tool: str, arguments: Mapping[str, Any] | None, text: str) -> Step:
    return Step(tool, arguments, text, error=True)


def seeded(key: str, arguments: Mapping[str, Any] | None = None) -> Step:
    """The seed example ``key``: its request (or ``arguments`` where the seed shows only the success
    request for an error case) and its exact response text and ``isError``."""
    example = seed(key)
    chosen = example["arguments"] if arguments is None else arguments
    return Step(example["tool"], chosen, example["text"], example["is_error"], example["json_text"])


def play(
    cwd: Path,
    steps: Sequence[Step],
    *,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> list[str]:
    """Run ``steps`` in one ``zpm serve`` session; the texts, in order."""
    results = converse(cwd, [(step.tool, step.arguments) for step in steps], env=env, prefix=prefix)
    problems = [p for step, result in zip(steps, results, strict=True) if (p := step.problem(result))]
    assert not problems, "\n".join(problems)
    return [result_text(result) for result in results]


def play_live(served: Session, steps: Sequence[Step]) -> list[str]:
    """Run ``steps`` in a live ``zpm serve`` session, one call awaited after the other."""
    results = [served.call(step.tool, step.arguments) for step in steps]
    problems = [p for step, result in zip(steps, results, strict=True) if (p := step.problem(result))]
    assert not problems, "\n".join(problems)
    return [result_text(result) for result in results]
