#!/usr/bin/env python3
"""Extract every request/response example of the zpm tool document into test data.

The tool document (``../shared/seeds/zpm-mcp-tools.txt`` beside the checkout) is the wire contract
of the logic tools (spec logic-memory.md). It is not copied into the repository; this script reads it
at run time and writes ``tests/logic/seed_examples.json``, which is derived from it:

* ``examples``: one entry per JSON-RPC response the document prints: the tool, the heading and the
  condition sentence above it, the id and arguments of the request it answers (the request of the
  same tool section with the same id), the exact ``text`` and whether it is an error. A ``text``
  that is JSON is marked ``json_text`` (the acceptance suite compares those as JSON);
* ``requests``: every ``tools/call`` request (and the bare call of the "Memory Parameter" section);
* ``cli``: every ``zpm ...`` command line of the document's bash examples, as argv.

The document describes ``get_kb_overview`` twice; the second description is the older shape that
spec §4.10 and §12 set aside, so its examples are kept but marked ``superseded``.

Usage: ``python scripts/extract_zpm_examples.py [--seed PATH] [--out PATH] [--check]``; ``--check``
writes nothing and exits 1 when the file on disk differs from what the document gives.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Final

REPO: Final = Path(__file__).resolve().parents[1]
SEED: Final = REPO.parent / "shared" / "seeds" / "zpm-mcp-tools.txt"
OUT: Final = REPO / "tests" / "logic" / "seed_examples.json"

_NAME_LINE: Final = re.compile(r"^Name: ([a-z_]+)$")
_RESPONSE_HEADING: Final = re.compile(r"^Response \(.*\)$")
_DECODER: Final = json.JSONDecoder()


def _blocks(lines: list[str]) -> list[tuple[int, str, Any, str | None, str | None]]:
    """Each ``json`` / ``bash`` block: (line index, kind, content, heading, condition sentence).

    The document prints a block as a line ``json`` (or ``bash``) followed by the block; above it
    stand a heading line and, optionally, a sentence ending in ``:`` that says when it applies."""
    found: list[tuple[int, str, Any, str | None, str | None]] = []
    for index, line in enumerate(lines):
        if line not in ("json", "bash"):
            continue
        above = [text for text in lines[max(0, index - 6) : index] if text.strip()]
        condition = above.pop() if above and above[-1].endswith(":") else None
        while above and above[-1].endswith("."):  # prose between a heading and its block
            above.pop()
        # Right after another block (its closing brace) there is no heading of its own.
        heading = above[-1] if above and above[-1] not in ("}", "]") else None
        rest = "\n".join(lines[index + 1 :])
        if line == "json":
            content, _ = _DECODER.raw_decode(rest.lstrip())
        else:
            content = _command_lines(lines[index + 1 :])
        found.append((index, line, content, heading, condition))
    return found


def _command_lines(lines: list[str]) -> list[list[str]]:
    """The ``zpm`` commands of a bash block (up to the first blank line), continuations joined."""
    commands: list[list[str]] = []
    pending = ""
    for line in lines:
        if not line.strip():
            break
        if line.lstrip().startswith("#"):
            continue
        pending += line.rstrip().removesuffix("\\") + " "
        if not line.rstrip().endswith("\\"):
            commands.append(shlex.split(pending))
            pending = ""
    return [argv for argv in commands if argv and argv[0] == "zpm"]


def _response_heading(lines: list[str], index: int, heading: str | None) -> str | None:
    """A sub-heading such as ``Ambiguous Arity (...)`` is named under its ``Response (...)`` parent;
    a second block under one heading (no heading of its own) takes that heading."""
    if heading is not None and heading.startswith("Response"):
        return heading
    for line in reversed(lines[:index]):
        if _RESPONSE_HEADING.match(line):
            return line if heading is None else f"{line}: {heading}"
    return heading


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def extract(seed_text: str) -> dict[str, Any]:
    lines = seed_text.splitlines()
    starts = [(i, match[1]) for i, line in enumerate(lines) if (match := _NAME_LINE.match(line))]
    # A section runs from its heading (the line above "Name:") to the next section's heading.
    bounds: list[tuple[int, int, str | None, int]] = [(0, starts[0][0] - 1, None, 0)]
    seen: dict[str, int] = {}
    for k, (start, name) in enumerate(starts):
        seen[name] = seen.get(name, 0) + 1
        end = starts[k + 1][0] - 1 if k + 1 < len(starts) else len(lines)
        bounds.append((start - 1, end, name, seen[name]))

    examples: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    cli: list[dict[str, Any]] = []
    for begin, end, tool, occurrence in bounds:
        section = lines[begin:end]
        superseded = occurrence > 1
        paired: dict[int, dict[str, Any]] = {}
        blocks = _blocks(section)
        for index, kind, content, heading, _ in blocks:
            if kind != "json" or not isinstance(content, dict):
                continue
            request: dict[str, Any] | None = None
            if content.get("method") == "tools/call":
                params = content["params"]
                request = {"method": "tools/call", "tool": params["name"], "request_id": content["id"]}
                request["arguments"] = params.get("arguments", {})
                paired.setdefault(content["id"], request)
            elif "method" in content:  # tools/list
                request = {"method": content["method"], "tool": None, "request_id": content["id"]}
                request["arguments"] = None
            elif set(content) == {"name", "arguments"}:  # the params of a call, without the envelope
                request = {"method": "tools/call", "tool": content["name"], "request_id": None}
                request["arguments"] = content["arguments"]
            if request is not None:
                request.update(case=heading, superseded=superseded, seed_line=begin + index + 2)
                requests.append(request)
        for index, kind, content, heading, condition in blocks:
            seed_line = begin + index + 2
            if kind == "bash":
                for argv in content:
                    cli.append({"tool": tool, "case": heading, "argv": argv, "seed_line": seed_line})
                continue
            if not isinstance(content, dict):
                continue
            if "result" in content:
                (item,) = content["result"]["content"]
                answered = paired.get(content["id"])
                text = item["text"]
                entry = {
                    "tool": tool,
                    "case": _response_heading(section, index, heading),
                    "condition": condition,
                    "request_id": content["id"],
                    "arguments": None if answered is None else answered["arguments"],
                    "text": text,
                    "is_error": bool(item.get("isError", content["result"].get("isError", False))),
                    "json_text": _is_json(text),
                    "envelope": True,
                    "superseded": superseded,
                    "seed_line": seed_line,
                }
                examples.append(entry)
            elif tool is not None and heading is not None and heading.endswith("Example"):
                # A bare response text printed as (pretty) JSON, e.g. rename's cross-memory impact.
                examples.append(
                    {
                        "tool": tool,
                        "case": heading,
                        "condition": condition,
                        "request_id": None,
                        "arguments": None,
                        "text": json.dumps(content, ensure_ascii=False, separators=(",", ":")),
                        "is_error": False,
                        "json_text": True,
                        "envelope": False,
                        "superseded": superseded,
                        "seed_line": seed_line,
                    }
                )
    ordinals: dict[str, int] = {}
    named: list[dict[str, Any]] = []
    for entry in examples:  # a stable name per example: the tool and its position in the tool's list
        ordinals[entry["tool"]] = ordinals.get(entry["tool"], 0) + 1
        named.append({"key": f"{entry['tool']}#{ordinals[entry['tool']]}", **entry})
    return {
        "$comment": (
            "Derived from ../shared/seeds/zpm-mcp-tools.txt by scripts/extract_zpm_examples.py; "
            "do not edit by hand, rerun the script."
        ),
        "examples": named,
        "requests": requests,
        "cli": cli,
    }


def render(document: dict[str, Any]) -> str:
    """One entry per line: small, and a change to the document shows as a one-line diff."""
    out = ["{", f'  "$comment": {json.dumps(document["$comment"])},']
    lists = ["examples", "requests", "cli"]
    for n, key in enumerate(lists):
        out.append(f'  "{key}": [')
        rows = [f"    {json.dumps(row, ensure_ascii=False)}" for row in document[key]]
        out.append(",\n".join(rows))
        out.append("  ]" + ("," if n < len(lists) - 1 else ""))
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=Path, default=SEED, help=f"the tool document (default {SEED})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the examples file (default {OUT})")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is not up to date")
    args = parser.parse_args(argv)
    if not args.seed.is_file():
        print(f"tool document not found: {args.seed}", file=sys.stderr)
        return 2
    text = render(extract(args.seed.read_text(encoding="utf-8")))
    if args.check:
        current = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
        if current != text:
            print(f"{args.out} is out of date: run scripts/extract_zpm_examples.py", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text, encoding="utf-8")
    document = json.loads(text)
    print(
        f"wrote {args.out}: {len(document['examples'])} responses, "
        f"{len(document['requests'])} requests, {len(document['cli'])} command lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
