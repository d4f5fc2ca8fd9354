"""``quipu tool list`` and ``quipu tool call``: the MCP tools as commands, against a real store (in
process, ``--db``) or a live server (``--server``).

A few invocations run the real console script (tests/cli/test_cli.py's runner); the rest run the
same typer app in this process (``tests.cli.test_cli.invoke``, stdout and stderr kept apart),
because each interpreter start-up of the REST and MCP stack costs seconds of CPU and proves
nothing more.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx
import pytest

from quipu.config import load_settings
from quipu.mcp.http import served_registry
from quipu.rest.app import create_app
from tests.backends import on_postgres, store_location
from tests.cli.test_cli import Call, Run, invoke, run
from tests.rest.live_server import live_server

EX: Final = "http://ex.org/"
TOKEN: Final = "tool-cli-token-0123456789"
ASK_ANY: Final = {"query": "ASK { ?s ?p ?o }"}
KNOT: Final = {"turtle": f'<{EX}svc> <{EX}name> "svc" .'}


def quipu(*args: str, cwd: Path) -> Run:
    return run(Call(args, cwd))


def body_of(result: Run) -> Any:
    return json.loads(result.out)  # the whole of stdout is one JSON document


def call(name: str, arguments: Any, *rest: str) -> list[str]:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ["tool", "call", name, "--args", text, *rest]


def succeeded(result: Run) -> Any:
    assert result.code == 0, str(result)
    assert result.err == "", str(result)  # stdout is the result; nothing else is said
    return body_of(result)


def tool_error(result: Run) -> dict[str, Any]:
    """An isError result: exit 2, the error body on stdout, its message as one line on stderr."""
    assert result.code == 2, str(result)
    body: dict[str, Any] = body_of(result)
    assert result.err == f"error: {' '.join(body['error'].split())}\n", str(result)  # on one line
    return body


def usage_error(result: Run, message: str) -> None:
    assert result.code == 2, str(result)
    assert result.out == "", str(result)
    assert result.err.startswith("error: ") and message in result.err and "Traceback" not in result.err, str(
        result
    )
    assert len(result.err.splitlines()) == 1, str(result)


def token_file(path: Path, text: str, mode: int = 0o600) -> str:
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(mode)
    return str(path)


@dataclass(frozen=True)
class Scenario:
    root: Path
    runs: dict[str, Run]

    def __getitem__(self, name: str) -> Run:
        return self.runs[name]


# -- in process: --db ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """One store, and every independent invocation against it at once (the knot first)."""
    root = tmp_path_factory.mktemp("tool-call")
    db = store_location(root, "kb.db")
    empty = store_location(root, "empty.db")
    args_file = root / "args.json"
    args_file.write_text(json.dumps({"query": f"SELECT ?o WHERE {{ <{EX}svc> <{EX}name> ?o }}"}))
    (root / "list.json").write_text("[1, 2]")
    # The installed console script, end to end: a write, then the read that sees it.
    written = {"knot": quipu(*call("quipu_knot", KNOT, "--db", db), cwd=root)}
    written["ask"] = quipu(*call("quipu_query", ASK_ANY, "--db", db), cwd=root)
    calls = {
        "ask_empty": call("quipu_query", ASK_ANY, "--db", empty),
        "select_from_file": call("quipu_query", f"@{args_file}", "--db", db),
        "wrong_type": call("quipu_query", {"query": 42}, "--db", db),
        "wrong_form": call(
            "quipu_set",
            {"entity": EX + "svc", "predicate": EX + "name", "value": {"int": "5"}},
            "--db",
            db,
        ),
        "bad_sparql": call("quipu_query", {"query": "SELEKT"}, "--db", db),
        "version": ["tool", "call", "quipu_version", "--db", db],
        "unknown": call("quipu_nope", {}, "--db", str(root / "never.db")),
        "not_json": call("quipu_query", "{query", "--db", db),
        "not_object": call("quipu_query", f"@{root / 'list.json'}", "--db", db),
        "unreadable": call("quipu_query", f"@{root / 'missing.json'}", "--db", db),
        "both_targets": call("quipu_health", {}, "--db", db, "--server", "http://127.0.0.1:9"),
    }
    return Scenario(root, {**written, **{name: invoke(*args) for name, args in calls.items()}})


def test_a_query_prints_the_result_json_and_exits_0(in_process: Scenario) -> None:
    assert succeeded(in_process["ask_empty"]) == {"result": False, "labels": None}
    assert succeeded(in_process["knot"])["count"] == 1
    assert succeeded(in_process["ask"]) == {"result": True, "labels": None}
    rows = succeeded(in_process["select_from_file"])  # --args @FILE
    assert rows["rows"] == [{"o": "svc"}]


def test_a_wrong_type_exits_2_with_the_wrong_type_body_naming_the_field(in_process: Scenario) -> None:
    body = tool_error(in_process["wrong_type"])
    assert (body["status"], body["reason"], body["field"]) == (400, "wrong_type", "query")
    assert "'query'" in body["error"]
    form = tool_error(in_process["wrong_form"])  # the DM §2.1 value forms, as the MCP adapter checks them
    assert (form["reason"], form["field"]) == ("wrong_type", "value")


def test_a_rest_refusal_exits_2_with_the_rest_body(in_process: Scenario) -> None:
    body = tool_error(in_process["bad_sparql"])
    assert (body["status"], body["reason"]) == (400, "sparql_parse_error")


def test_version_is_answered_like_the_mcp_tool(in_process: Scenario) -> None:
    import quipu

    assert succeeded(in_process["version"])["version"] == quipu.__version__


def test_usage_errors_exit_2_with_one_line_on_stderr(in_process: Scenario) -> None:
    usage_error(in_process["unknown"], "unknown tool: quipu_nope")
    usage_error(in_process["not_json"], "--args is not JSON")
    usage_error(in_process["not_object"], "must be a JSON object")
    usage_error(in_process["unreadable"], "cannot read")
    usage_error(in_process["both_targets"], "--db and --server")
    if not on_postgres():  # an unknown name is refused before any store is opened (or created)
        assert not (in_process.root / "never.db").exists()


def test_config_narrowing_and_credentials_are_the_mcp_servers(tmp_path: Path) -> None:
    db = store_location(tmp_path, "kb.db")
    config = tmp_path / "quipu.toml"
    config.write_text(
        f'[quipu.server]\nauth_token = {json.dumps(TOKEN)}\n\n[quipu.mcp]\ntoolsets = ["data"]\n',
        encoding="utf-8",
    )
    settings = ["--db", db, "--config", str(config)]
    token = token_file(tmp_path / "token", TOKEN)
    unsafe = token_file(tmp_path / "shared", TOKEN, 0o644)
    runs = {
        "anonymous": invoke(*call("quipu_knot", KNOT, *settings)),
        "narrowed_out": invoke(*call("quipu_health", {}, *settings)),
        "unsafe_token": invoke(*call("quipu_knot", KNOT, *settings, "--token-file", unsafe)),
    }
    refused = tool_error(runs["anonymous"])  # the store's credential applies in process too
    assert (refused["status"], refused["reason"]) == (401, "missing_or_invalid_bearer_token")
    usage_error(runs["narrowed_out"], "unknown tool: quipu_health")  # [quipu.mcp] toolsets = ["data"]
    usage_error(runs["unsafe_token"], "must be private")
    written = invoke(*call("quipu_knot", KNOT, *settings, "--token-file", token))
    assert succeeded(written)["count"] == 1


# -- over HTTP: --server ---------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    settings = load_settings(
        store={"db": store_location(tmp_path, "served.db")}, server={"auth_token": TOKEN}
    )
    with live_server(settings) as url:
        yield url


def test_over_http_the_server_authenticates_and_validates(server: str, tmp_path: Path) -> None:
    token = token_file(tmp_path / "token", TOKEN)
    wrong = token_file(tmp_path / "wrong", "not-the-token-0123456789")
    calls = {
        "anonymous": call("quipu_knot", KNOT, "--server", server),
        "wrong_token": call("quipu_knot", KNOT, "--server", server, "--token-file", wrong),
        "wrong_type": call("quipu_query", {"query": 42}, "--server", server),
        "bad_sparql": call("quipu_query", {"query": "SELEKT"}, "--server", server),
        "unreachable": call("quipu_health", {}, "--server", "http://127.0.0.1:9"),
    }
    runs = {name: invoke(*args) for name, args in calls.items()}
    for name in ("anonymous", "wrong_token"):
        refused = tool_error(runs[name])
        assert (refused["status"], refused["reason"]) == (401, "missing_or_invalid_bearer_token"), name
    rest = httpx.post(server + "/knot", json=KNOT, headers={"Accept": "application/json"}, timeout=10.0)
    assert body_of(runs["anonymous"]) == rest.json()  # the server's own 401 body
    assert (tool_error(runs["wrong_type"])["field"]) == "query"
    assert tool_error(runs["bad_sparql"])["reason"] == "sparql_parse_error"
    assert runs["unreachable"].code == 1 and runs["unreachable"].out == ""
    assert runs["unreachable"].err.startswith("error: cannot reach quipu-server at http://127.0.0.1:9")

    written = quipu(*call("quipu_knot", KNOT, "--server", server, "--token-file", token), cwd=tmp_path)
    assert succeeded(written)["count"] == 1
    read = invoke(*call("quipu_query", ASK_ANY, "--server", server + "/"))
    assert succeeded(read) == {"result": True, "labels": None}  # reads need no credential
    last = httpx.get(server + "/transactions", timeout=10.0).json()["transactions"][-1]
    assert last["authenticated"]["principal"] == "legacy-shared-bearer"


# -- tool list -------------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_tool_list_prints_the_served_tools_without_opening_a_store(tmp_path: Path) -> None:
    never = tmp_path / "never" / "kb.db"  # in a folder that does not exist: opening it would fail
    config = tmp_path / "quipu.toml"
    config.write_text(f"[quipu.store]\ndb = {json.dumps(str(never))}\n", encoding="utf-8")
    runs = {
        "table": quipu("tool", "list", "--config", str(config), cwd=tmp_path),  # the installed script
        "json": invoke("tool", "list", "--format", "json", "--config", str(config)),
        "narrowed": invoke("tool", "list", "-f", "json", "--toolsets", "data,service", "--read-only-tools"),
        "unknown_toolset": invoke("tool", "list", "--toolsets", "data,nope"),
    }
    settings = load_settings(store={"db": ":memory:"})
    everything = served_registry(create_app(settings), settings)
    listed = succeeded(runs["json"])
    assert [row["name"] for row in listed] == list(everything.tools)
    by_name = {row["name"]: row for row in listed}
    assert by_name["quipu_query"] == {
        "name": "quipu_query",
        "toolset": "data",
        "access": "read",
        "route": "POST /query",
        "description": everything.tools["quipu_query"].description,
    }
    assert by_name["quipu_knot"]["access"] == "write"
    assert runs["table"].code == 0 and runs["table"].err == "", str(runs["table"])
    lines = runs["table"].out.splitlines()
    assert lines[0].split() == ["TOOL", "TOOLSET", "ACCESS", "DESCRIPTION"]
    assert [line.split()[0] for line in lines[1:]] == list(everything.tools)
    assert lines[1 + list(everything.tools).index("quipu_knot")].split()[1:3] == ["data", "write"]
    narrowed = succeeded(runs["narrowed"])
    expected = everything.select(toolsets=["data", "service"], read_only=True)
    assert [row["name"] for row in narrowed] == list(expected.tools)
    assert {row["access"] for row in narrowed} == {"read"}
    usage_error(runs["unknown_toolset"], "unknown toolset(s): nope")
    assert not never.parent.exists()
