"""``zpm serve`` over stdio, end to end (spec logic-memory.md §2, §8.1, §11): the real console
script in temporary project folders, JSON-RPC lines in, every response checked by id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from quipu.logic import project as zpm_project
from quipu.logic.registry import load_tools
from tests.acceptance.logic.harness import (
    NO_ENGINE,
    ZPM,
    handshake,
    request,
    result_text,
    run_batch,
    session,
    text_of,
    tool_call,
)

QUERY_FAILED = "Query execution failed"


@pytest.fixture(autouse=True)
def _zpm_installed() -> None:
    assert ZPM.is_file(), f"{ZPM} is missing: run `uv sync` to install the zpm console script"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    assert zpm_project.init(root)
    return root


# ---------------------------------------------------------------------------- handshake (§2.2)


def test_initialize_announces_zpm_protocol_and_tools_capability(project: Path) -> None:
    batch = run_batch(project, handshake())
    assert batch.returncode == 0
    assert batch[0] == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "zpm", "version": "0.4.0"},
        },
    }
    # R-T2: compact, one line each; the notification got no response (R-T1).
    assert len(batch.lines) == 1
    assert '"name":"zpm"' in batch.lines[0] and '"protocolVersion":"2025-11-25"' in batch.lines[0]
    assert ": " not in batch.lines[0] and ", " not in batch.lines[0]


def test_initialize_echoes_a_supported_protocol_version_else_the_latest(project: Path) -> None:
    batch = run_batch(
        project,
        [
            request(1, "initialize", {"protocolVersion": "2024-11-05", "capabilities": {}}),
            request(2, "initialize", {"protocolVersion": "2099-01-01", "capabilities": {}}),
        ],
    )
    assert batch[1]["result"]["protocolVersion"] == "2024-11-05"  # R-T6
    assert batch[2]["result"]["protocolVersion"] == "2025-11-25"


def test_ping_answers_an_empty_result_even_before_initialize(project: Path) -> None:
    batch = run_batch(project, [request(7, "ping")])
    assert batch[7] == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_a_request_before_initialize_is_refused_as_not_initialized(project: Path) -> None:
    batch = run_batch(project, [request(3, "tools/list"), *handshake(), request(4, "tools/list")])
    assert batch[3]["error"] == {"code": -32002, "message": "Server not initialized"}  # R-T8
    assert len(batch[4]["result"]["tools"]) == 29


def test_tools_list_has_the_29_tools_in_registry_order_with_exact_schemas(project: Path) -> None:
    batch = run_batch(project, [*handshake(), request(1, "tools/list")])
    tools = batch[1]["result"]["tools"]
    assert [t["name"] for t in tools] == [tool.name for tool in load_tools()]
    assert len(tools) == 29
    assert tools == [tool.listing() for tool in load_tools()]
    assert tools[0]["name"] == "echo" and tools[0]["description"] == "Echo back the input message"
    for tool in tools:
        assert set(tool) == {"name", "description", "inputSchema", "annotations"}
        assert tool["inputSchema"]["type"] == "object"
        assert tool["annotations"]["openWorldHint"] is False
    names = {t["name"] for t in tools}
    assert {"create_memory", "mount_memory", "unmount_memory", "list_memories"} <= names
    assert {"find_predicate_references", "rename_predicate", "get_kb_overview"} <= names


# ---------------------------------------------------------------------------- protocol errors (R-T8)


def test_unknown_tool_is_a_jsonrpc_error_tool_not_found(project: Path) -> None:
    batch = run_batch(project, [*handshake(), tool_call(5, "no_such_tool", {})])
    assert batch[5] == {"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "Tool not found"}}


def test_unknown_method_is_method_not_found(project: Path) -> None:
    batch = run_batch(project, [*handshake(), request(6, "resources/list")])
    assert batch[6]["error"] == {"code": -32601, "message": "Method not found"}


def test_an_unparsable_line_answers_parse_error_with_null_id_and_the_server_goes_on(project: Path) -> None:
    batch = run_batch(project, [*handshake(), "{not json", tool_call(8, "echo", {"message": "still here"})])
    assert batch[None]["error"]["code"] == -32700
    assert text_of(batch[8]) == "still here"


def test_blank_lines_are_ignored_and_notifications_get_no_response(project: Path) -> None:
    batch = run_batch(
        project,
        [
            *handshake(),
            "",
            "   ",
            {"jsonrpc": "2.0", "method": "notifications/cancelled"},
            request(2, "ping"),
        ],
    )
    assert batch.returncode == 0
    assert [json.loads(line).get("id") for line in batch.lines] == [0, 2]


# ---------------------------------------------------------------------------- tool results (R-T7)


def test_remember_fact_then_query_logic_round_trip(project: Path) -> None:
    batch = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "remember_fact", {"fact": "parent(tom, bob)"}),
            tool_call(2, "remember_fact", {"fact": "parent(bob, ann)."}),
            tool_call(3, "query_logic", {"goal": "parent(X, Y)"}),
        ],
    )
    assert batch[1]["result"] == {
        "content": [{"type": "text", "text": "Asserted: parent(tom, bob)"}],
        "isError": False,
    }
    assert text_of(batch[2]) == "Asserted: parent(bob, ann)."  # R-A5: quoted as received
    assert json.loads(text_of(batch[3])) == [{"X": "tom", "Y": "bob"}, {"X": "bob", "Y": "ann"}]
    assert '"isError":false' in next(line for line in batch.lines if '"id":3' in line)


def test_a_tool_failure_is_a_result_with_is_error_true(project: Path) -> None:
    batch = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "forget_fact", {"fact": "nothing(here)"}),
            tool_call(2, "remember_fact", {"fact": ""}),
            tool_call(3, "echo"),  # arguments absent: no arguments (§2.2)
            tool_call(4, "remember_fact", {"fact": 42}),  # a wrong JSON type reaches the tool (R-A1)
        ],
    )
    assert batch[1]["result"]["isError"] is True
    assert text_of(batch[1]) == "No matching clause found for: nothing(here)"
    assert batch[2]["result"] == {"content": [{"type": "text", "text": "InvalidArguments"}], "isError": True}
    assert text_of(batch[3]) == "InvalidArguments" and batch[3]["result"]["isError"] is True
    assert batch[4]["result"] == {"content": [{"type": "text", "text": "InvalidArguments"}], "isError": True}


def test_without_an_engine_tools_fail_with_execution_failed_and_stderr_says_why(project: Path) -> None:
    batch = run_batch(
        project,
        [*handshake(), tool_call(1, "remember_fact", {"fact": "a(b)"}), request(2, "tools/list")],
        env=NO_ENGINE,
    )
    assert batch.returncode == 0
    assert batch[1]["result"] == {"content": [{"type": "text", "text": "ExecutionFailed"}], "isError": True}
    assert len(batch[2]["result"]["tools"]) == 29  # the protocol side keeps working
    assert "swipl" in batch.stderr  # R-T9: the reason, on stderr only


def test_non_ascii_text_is_written_as_utf8(project: Path) -> None:
    batch = run_batch(project, [*handshake(), tool_call(1, "echo", {"message": "Grüße, 世界"})])
    assert text_of(batch[1]) == "Grüße, 世界"
    assert "Grüße, 世界" in batch.lines[1]  # R-T2: not \u escapes


# ---------------------------------------------------------------------------- untrusted goals (R-Q1, R-Q4, R-T4)


def test_a_runaway_query_is_stopped_by_the_time_limit_and_the_next_call_works(project: Path) -> None:
    with session(project) as served:
        assert result_text(served.call("define_rule", {"head": "loop", "body": "loop"})).startswith(
            "Asserted rule: loop"
        )
        stopped = served.call("query_logic", {"goal": "loop"})
        assert stopped == {"content": [{"type": "text", "text": QUERY_FAILED}], "isError": True}
        after = served.call("query_logic", {"goal": "true"})
        assert after == {"content": [{"type": "text", "text": "[{}]"}], "isError": False}


def test_halt_is_refused_and_the_server_keeps_answering(project: Path) -> None:
    with session(project) as served:
        for goal in ("halt", "halt(0)", "true, halt"):
            refused = served.call("query_logic", {"goal": goal})
            assert refused == {"content": [{"type": "text", "text": QUERY_FAILED}], "isError": True}
        assert served.ask("ping")["result"] == {}
        assert served.process.poll() is None
        assert served.close() == 0


def test_a_goal_that_prints_leaves_stdout_valid(project: Path) -> None:
    goals = [
        "write(hello), nl",
        'format("~w~n", [printed]), print(x), nl',
        "between(1, 50, N), write(N), nl, N >= 50",
    ]
    batch = run_batch(
        project,
        [*handshake(), *(tool_call(i, "query_logic", {"goal": g}) for i, g in enumerate(goals, 1))],
    )
    # run_batch parsed every stdout line as one JSON message: nothing else reached stdout.
    assert sorted(k for k in batch.by_id if k is not None) == [0, 1, 2, 3]
    assert json.loads(text_of(batch[1])) == [{}]
    assert json.loads(text_of(batch[2])) == [{}]
    assert json.loads(text_of(batch[3])) == [{"N": 50}]
    assert not any("hello" in line or "printed" in line for line in batch.lines)


# ---------------------------------------------------------------------------- lifecycle (R-T1, R-T5, §8)


def test_end_of_file_exits_0_and_a_last_line_without_newline_is_answered(project: Path) -> None:
    batch = run_batch(project, [*handshake(), tool_call(9, "echo", {"message": "last"})], final_newline=False)
    assert batch.returncode == 0
    assert text_of(batch[9]) == "last"


def test_every_message_before_end_of_file_is_answered_in_order(project: Path) -> None:
    calls = [tool_call(i, "remember_fact", {"fact": f"n({i})"}) for i in range(1, 21)]
    batch = run_batch(project, [*handshake(), *calls, tool_call(99, "query_logic", {"goal": "n(X)"})])
    assert batch.returncode == 0
    assert [json.loads(line)["id"] for line in batch.lines] == [0, *range(1, 21), 99]  # R-T3
    assert [s["X"] for s in json.loads(text_of(batch[99]))] == list(range(1, 21))


def test_facts_persist_across_a_restart_of_the_server(project: Path) -> None:
    first = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "remember_fact", {"fact": "city(paris)"}),
            tool_call(2, "remember_fact", {"fact": "city(rome)"}),
            tool_call(3, "define_rule", {"head": "big(X)", "body": "city(X)"}),
            tool_call(4, "forget_fact", {"fact": "city(rome)"}),
        ],
    )
    assert first.returncode == 0 and all(first[i]["result"]["isError"] is False for i in (1, 2, 3, 4))
    assert (project / ".zpm" / "data" / "journal.wal").is_file()  # §6.1
    second = run_batch(project, [*handshake(), tool_call(1, "query_logic", {"goal": "big(X)"})])
    assert json.loads(text_of(second[1])) == [{"X": "paris"}]


def test_the_project_is_found_from_a_nested_subdirectory(project: Path) -> None:
    nested = project / "src" / "deep" / "er"
    nested.mkdir(parents=True)
    run_batch(project, [*handshake(), tool_call(1, "remember_fact", {"fact": "found(root)"})])
    batch = run_batch(nested, [*handshake(), tool_call(1, "query_logic", {"goal": "found(X)"})])
    assert batch.returncode == 0
    assert json.loads(text_of(batch[1])) == [{"X": "root"}]  # R-B1
    assert not (nested / ".zpm").exists()


def test_serve_without_a_project_exits_1_and_mentions_zpm_init(tmp_path: Path) -> None:
    batch = run_batch(tmp_path, handshake())
    assert batch.returncode == 1
    assert batch.lines == []
    assert batch.stderr.strip() == "No .zpm/ directory found. Run `zpm init` to initialize a project."  # R-B2


def test_acknowledged_writes_survive_kill_9_of_the_server(project: Path) -> None:
    count = 40
    with session(project) as served:
        for i in range(count):
            # Each call is awaited: the write is acknowledged before the next one is sent.
            assert served.call("remember_fact", {"fact": f"acked({i}, 'v{i}')"})["isError"] is False
        served.call("assume_fact", {"fact": "held(yes)", "assumption": "a1"})
        served.kill()
        assert served.process.returncode == -9
    journal = project / ".zpm" / "data" / "journal.wal"
    for line in journal.read_text(encoding="utf-8").splitlines():
        assert json.loads(line)["op"] in ("assert", "retract", "retractall")  # nothing half-written
    batch = run_batch(
        project,
        [
            *handshake(),
            tool_call(1, "query_logic", {"goal": "findall(I, acked(I, _), L), length(L, N)"}),
            tool_call(2, "query_logic", {"goal": "acked(39, V)"}),
            tool_call(3, "get_belief_status", {"fact": "held(yes)"}),
        ],
    )
    solutions = json.loads(text_of(batch[1]))
    assert solutions[0]["N"] == count and solutions[0]["L"] == list(range(count))
    assert json.loads(text_of(batch[2])) == [{"V": "v39"}]
    assert batch[3]["result"]["isError"] is False and "a1" in text_of(batch[3])


def test_requests_that_are_not_objects_or_carry_bad_params_are_protocol_errors(project: Path) -> None:
    batch = run_batch(
        project,
        [
            *handshake(),
            json.dumps([request(1, "ping")]),  # a batch: not part of MCP since 2025-06-18
            request(2, "tools/call", {"name": "echo", "arguments": ["x"]}),
            request(3, "tools/call", {"arguments": {}}),
            {"jsonrpc": "2.0", "id": 4, "result": {}},  # a response from the client: dropped
            request(5, "ping"),
        ],
    )
    assert batch[None]["error"]["code"] == -32600
    assert batch[2]["error"]["code"] == -32602 and batch[3]["error"]["code"] == -32602
    assert 4 not in batch.by_id and batch[5]["result"] == {}


def test_the_official_mcp_client_drives_zpm_serve(project: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    async def converse() -> None:
        params = StdioServerParameters(command=str(ZPM), args=["serve"], cwd=str(project))
        async with Client(params, mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "zpm"
            assert client.protocol_version == "2025-11-25"
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == [tool.name for tool in load_tools()]
            told = await client.call_tool("remember_fact", {"fact": "sdk(ok)"})
            assert told.is_error is False
            asked = await client.call_tool("query_logic", {"goal": "sdk(X)"})
            assert [c.text for c in asked.content if c.type == "text"] == ['[{"X":"ok"}]']

    anyio.run(converse)


def test_quipu_server_settings_do_not_gate_zpm_writes(project: Path) -> None:
    (project / "quipu.toml").write_text("[quipu.server]\nread_only = true\n", encoding="utf-8")
    env = {"QUIPU_SERVER__AUTH_TOKEN": "a-long-enough-token-for-quipu-server"}
    batch = run_batch(project, [*handshake(), tool_call(1, "remember_fact", {"fact": "local(yes)"})], env=env)
    assert batch[1]["result"] == {
        "content": [{"type": "text", "text": "Asserted: local(yes)"}],
        "isError": False,
    }
    assert sorted(p.name for p in project.iterdir()) == [".zpm", "quipu.toml"]  # no store file


def test_the_initialized_notification_alone_does_not_initialize(project: Path) -> None:
    batch = run_batch(
        project, [{"jsonrpc": "2.0", "method": "notifications/initialized"}, request(1, "tools/list")]
    )
    assert batch[1]["error"] == {"code": -32002, "message": "Server not initialized"}
