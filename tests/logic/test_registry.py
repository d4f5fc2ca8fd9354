"""The logic tool registry (``quipu/logic/tools.json``) against the zpm tool document and the spec.

The document (``../shared/seeds/zpm-mcp-tools.txt``) and the spec (``../shared/spec/logic-memory.md``)
are read beside the checkout, never copied: a test that needs them skips when they are absent, and
fails instead under ``CI=true``. Each tool section of the document reads::

    <Title> Tool / Name: <tool> / Description: <text> / Annotations: • Read-only: ✓ ...
    Request / json {...} / Input Schema / json {...} / Response (...) / json {...} ...
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest
from jsonschema import Draft202012Validator

from quipu.errors import ConfigError
from quipu.logic import registry
from quipu.logic.registry import LogicTool, find_command, find_tool, load_tools, parse_tools

REPO: Final = Path(__file__).resolve().parents[2]
SEED: Final = REPO.parent / "shared" / "seeds" / "zpm-mcp-tools.txt"
SPEC: Final = REPO.parent / "shared" / "spec" / "logic-memory.md"
EXAMPLES: Final = Path(__file__).with_name("seed_examples.json")
EXTRACTOR: Final = REPO / "scripts" / "extract_zpm_examples.py"

STANDARD_MEMORY: Final = "Target memory segment (optional, defaults to default memory)"
# Spec §12: the acceptance suite pins echo's description to the original's text.
ECHO_DESCRIPTION: Final = "Echo back the input message"
# Spec §4: the mutation tools whose `memory` text the document does not print.
UNPRINTED_MEMORY: Final = frozenset(
    {"remember_fact", "define_rule", "forget_fact", "update_fact", "upsert_fact", "assume_fact"}
)
_DECODER: Final = json.JSONDecoder()


def _shared(path: Path) -> str:
    if not path.is_file():
        message = f"{path.name} not found at {path} (read from ../shared beside the checkout)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; under CI=true a missing contract document is a failure")
        pytest.skip(message)
    return path.read_text(encoding="utf-8")


def seed_text() -> str:
    return _shared(SEED)


def spec_text() -> str:
    return _shared(SPEC)


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# ------------------------------------------------------------------ the tool document, re-read


@cache
def _seed_sections(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(tool name, the section's lines) per ``Name:`` line, in document order (a name may repeat)."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if re.fullmatch(r"Name: [a-z_]+", line)]
    sections = []
    for k, start in enumerate(starts):
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(lines)
        sections.append((lines[start].removeprefix("Name: "), tuple(lines[start:end])))
    return tuple(sections)


def seed_sections() -> tuple[tuple[str, tuple[str, ...]], ...]:
    return _seed_sections(seed_text())


def seed_section(name: str) -> tuple[str, ...]:
    """The first section of a tool (get_kb_overview has two; spec §4.10 takes the first)."""
    return next(lines for tool, lines in seed_sections() if tool == name)


def seed_description(lines: tuple[str, ...]) -> str:
    (description,) = [
        line.removeprefix("Description: ") for line in lines if line.startswith("Description: ")
    ]
    return description


def seed_schema(lines: tuple[str, ...]) -> Any:
    """The JSON block under the section's ``Input Schema`` heading, decoded with its key order."""
    at = lines.index("Input Schema")
    assert lines[at + 2] == "json", "the Input Schema heading is followed by a json block"
    schema, _ = _DECODER.raw_decode("\n".join(lines[at + 3 :]))
    return schema


def seed_annotations(lines: tuple[str, ...]) -> dict[str, bool]:
    """``• Read-only: ✓`` and friends; ``Non-destructive: ✗`` and ``Destructive: ✓`` say the same."""
    marks = {}
    for line in lines:
        match = re.fullmatch(r"\s*• (Read-only|Idempotent|Non-destructive|Destructive): ([✓✗])", line)
        if match:
            marks[match[1]] = match[2] == "✓"
    destructive = marks["Destructive"] if "Destructive" in marks else not marks["Non-destructive"]
    return {
        "readOnlyHint": marks["Read-only"],
        "destructiveHint": destructive,
        "idempotentHint": marks["Idempotent"],
    }


def seed_memory_tools() -> list[str]:
    match = re.search(r"The following tools support the memory parameter: ([a-z_, ]+)\.", seed_text())
    assert match, "the document's sentence listing the memory-aware tools"
    return match[1].split(", ")


def seed_standard_memory_tools() -> list[str]:
    match = re.search(r"The ([a-z_, ]+) schemas use the description (.+?)\. Other tools", seed_text())
    assert match and match[2] == STANDARD_MEMORY
    return match[1].replace(", and ", ", ").split(", ")


# ------------------------------------------------------------------ the spec, re-read


def spec_section(number: str) -> str:
    """The text of ``### <number> ...`` up to the next heading of that level or above."""
    text = spec_text()
    match = re.search(rf"^### {re.escape(number)} .*?$(.*?)(?=^##+ )", text, re.M | re.S)
    assert match, f"spec §{number}"
    return match[1]


def spec_tools() -> dict[str, tuple[bool, bool, bool]]:
    """Tool name -> (RO, ID, DE) from each ``### 4.N `name``` section's Annotations line."""
    found = {}
    for match in re.finditer(r"^### 4\.\d+ `([a-z_]+)`$(.*?)(?=^##+ )", spec_text(), re.M | re.S):
        marks = re.search(r"Annotations: RO ([✓✗]), ID ([✓✗]), DE ([✓✗])\.", match[2])
        assert marks, f"spec §4 annotations of {match[1]}"
        found[match[1]] = (marks[1] == "✓", marks[2] == "✓", marks[3] == "✓")
    return found


def spec_memory_tools() -> list[str]:
    intro = one_line(spec_text().partition("## 4. The 29 tools")[2].partition("### 4.1")[0])
    match = re.search(r"accepted by exactly these 22 tools: (.+?)\. For ", intro)
    assert match
    return re.findall(r"`([a-z_]+)`", match[1])


def spec_designed_memory_text() -> str:
    intro = one_line(spec_text().partition("## 4. The 29 tools")[2].partition("### 4.1")[0])
    match = re.search(r"\*\*\[designed here\]\*\*: `([^`]+)`", intro)
    assert match
    return match[1]


def examples() -> dict[str, Any]:
    document = json.loads(EXAMPLES.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def tools() -> tuple[LogicTool, ...]:
    return load_tools()


def tool_named(name: str) -> LogicTool:
    found = find_tool(name)
    assert found is not None, f"no tool {name}"
    return found


def tools_json() -> dict[str, Any]:
    document = json.loads((REPO / "quipu" / "logic" / "tools.json").read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


# ------------------------------------------------------------------ count, names, order


def test_registry_holds_exactly_29_tools_with_unique_names() -> None:
    names = [tool.name for tool in tools()]
    assert len(names) == 29
    assert len(set(names)) == 29
    assert registry.tool_names() == tuple(names)


def test_tools_list_order_is_the_documents_order_and_spec_section_4s() -> None:
    first_seen = list(dict.fromkeys(name for name, _ in seed_sections()))
    assert [tool.name for tool in tools()] == first_seen
    assert list(spec_tools()) == first_seen


def test_the_document_describes_get_kb_overview_twice_and_only_that_tool() -> None:
    names = [name for name, _ in seed_sections()]
    assert len(names) == 30
    assert [n for n in set(names) if names.count(n) > 1] == ["get_kb_overview"]


# ------------------------------------------------------------------ schemas


@pytest.mark.parametrize("name", [tool.name for tool in load_tools()])
def test_input_schema_is_a_valid_json_schema(name: str) -> None:
    schema = dict(tool_named(name).input_schema)
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    Draft202012Validator(schema).validate({key: _sample(p) for key, p in schema["properties"].items()})


def _sample(prop: dict[str, Any]) -> object:
    return {"string": "x", "integer": 1, "boolean": True}[prop["type"]]


@pytest.mark.parametrize("name", [tool.name for tool in load_tools()])
def test_input_schema_is_the_documents_byte_for_byte(name: str) -> None:
    """Same JSON and the same key order; the only additions are the designed `memory` texts."""
    ours = copy.deepcopy(dict(tool_named(name).input_schema))
    theirs = seed_schema(seed_section(name))
    if name in UNPRINTED_MEMORY:
        added = ours["properties"].pop("memory")
        assert added == {"type": "string", "description": spec_designed_memory_text()}
    assert json.dumps(ours) == json.dumps(theirs)


def test_the_six_tools_without_a_printed_memory_property_are_the_specs_remaining_mutation_tools() -> None:
    unprinted = {n for n in seed_memory_tools() if "memory" not in seed_schema(seed_section(n))["properties"]}
    assert unprinted == UNPRINTED_MEMORY
    assert all(not tool_named(n).read_only for n in unprinted)


def test_get_kb_overview_follows_the_shape_spec_4_10_keeps() -> None:
    tool = find_tool("get_kb_overview")
    assert tool is not None
    (sample,) = re.findall(r"`sample_size` \(integer, optional\) —\s+`([^`]+)`", spec_section("4.10"))
    assert tool.input_schema["properties"]["sample_size"]["description"] == sample
    assert not tool.memory_param
    later = [lines for name, lines in seed_sections() if name == "get_kb_overview"][1]
    assert seed_schema(later) != dict(tool.input_schema)  # the set-aside description differs


# ------------------------------------------------------------------ descriptions


@pytest.mark.parametrize("name", [tool.name for tool in load_tools() if tool.name != "echo"])
def test_description_is_the_documents_text(name: str) -> None:
    assert tool_named(name).description == seed_description(seed_section(name))


def test_echo_description_is_the_one_the_acceptance_suite_pins() -> None:
    echo = find_tool("echo")
    assert echo is not None and echo.description == ECHO_DESCRIPTION
    intro = one_line(spec_text().partition("## 4. The 29 tools")[2].partition("### 4.1")[0])
    assert f"echo's description to be exactly `{ECHO_DESCRIPTION}`" in intro
    assert f'| echo description | "Echoes back a message string. ..." | `{ECHO_DESCRIPTION}` |' in spec_text()
    assert seed_description(seed_section("echo")).startswith("Echoes back a message string.")


# ------------------------------------------------------------------ the memory parameter


def test_memory_param_is_exactly_the_documents_list_of_22_tools() -> None:
    ours = [tool.name for tool in tools() if tool.memory_param]
    assert len(ours) == 22
    assert set(ours) == set(seed_memory_tools())
    assert set(ours) == set(spec_memory_tools())
    for tool in tools():
        assert tool.memory_param == ("memory" in tool.input_schema["properties"])
        if tool.memory_param:
            assert tool.input_schema["properties"]["memory"]["type"] == "string"
            assert "memory" not in tool.required


def test_the_document_excludes_echo_persistence_status_and_overview_from_memory() -> None:
    excluded = re.search(r"Excluded tools: (.+?)\.", seed_text())
    assert excluded
    for name in re.findall(r"(\w+) \(", excluded[1]):
        assert not tool_named(name).memory_param


def test_the_standard_memory_description_is_used_where_the_document_says() -> None:
    standard = set(seed_standard_memory_tools()) | {"clear_context"}  # clear_context: per its schema (§4)
    assert len(standard) == 12
    for tool in tools():
        if tool.name in standard:
            assert tool.input_schema["properties"]["memory"]["description"] == STANDARD_MEMORY


def test_find_references_and_rename_keep_their_own_memory_texts() -> None:
    refs = find_tool("find_predicate_references")
    rename = find_tool("rename_predicate")
    assert refs is not None and rename is not None
    assert "__all__" in refs.input_schema["properties"]["memory"]["description"]
    assert "Must be writable" in rename.input_schema["properties"]["memory"]["description"]


# ------------------------------------------------------------------ annotations and read_only


@pytest.mark.parametrize("name", [tool.name for tool in load_tools()])
def test_annotations_match_the_document_and_the_spec(name: str) -> None:
    tool = find_tool(name)
    assert tool is not None
    ro, idempotent, destructive = spec_tools()[name]
    assert {k: v for k, v in tool.annotations.items() if k != "openWorldHint"} == seed_annotations(
        seed_section(name)
    )
    assert tool.annotations == {
        "readOnlyHint": ro,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": False,
    }
    assert tool.read_only == ro


def test_every_tool_refused_on_a_read_only_memory_is_a_writer() -> None:
    """R-M8 names the mutations; rename (own text) and the memory tools also change state."""
    r_m8 = re.search(r"R-M8\. .*? nothing is written: (.+?) \(rename has its own text", one_line(spec_text()))
    assert r_m8
    mutations = set(re.findall(r"`([a-z_]+)`", r_m8[1]))
    assert len(mutations) == 11
    writers = {tool.name for tool in tools() if not tool.read_only}
    assert writers == mutations | {"rename_predicate", "create_memory", "mount_memory", "unmount_memory"}


def test_query_logic_and_the_inventories_are_readers() -> None:
    """R-Q8 and R-W6: queries, explanations and inventories never write a journal."""
    for name in ("query_logic", "explain_why", "get_knowledge_schema", "get_kb_overview", "list_snapshots"):
        assert tool_named(name).read_only


# ------------------------------------------------------------------ CLI (§9.2, §9.3)


def test_every_tool_is_a_kebab_case_command() -> None:
    for tool in tools():
        assert tool.cli_command == tool.name.replace("_", "-")
        found = find_command(tool.cli_command)
        assert found is not None and found[0] is tool
    assert find_command("remember_fact") is None  # the snake spelling is the MCP name, not a command


def test_the_command_spellings_spec_9_2_names_resolve() -> None:
    section = spec_section("9.2")
    commands = re.findall(r"`([a-z]+(?:-[a-z]+)+)`", section)
    assert {"remember-fact", "query-logic", "rename-predicate", "get-kb-overview", "create-memory"} <= set(
        commands
    )
    for command in commands:
        assert find_command(command) is not None, command


def test_the_flags_spec_9_2_names_are_accepted_in_both_spellings() -> None:
    flags = re.findall(r"`(--[a-z_-]+)`", spec_section("9.2"))
    assert {"--start-node", "--old-fact", "--max-depth", "--sample-size", "--old_functor"} <= set(flags)
    for flag in flags:
        if flag == "--format":
            continue
        assert any(tool.option_for_flag(flag) for tool in tools()), flag
    for tool in tools():
        for option in tool.options:
            assert option.flags == tuple(
                dict.fromkeys((f"--{option.argument.replace('_', '-')}", f"--{option.argument}"))
            )


def test_define_rule_and_assume_fact_take_their_first_argument_as_a_positional() -> None:
    section = one_line(spec_section("9.2"))
    assert "`define-rule <head> --body <body>`" in section
    assert "`assume-fact <fact> --assumption <name>`" in section
    for command, positional, flag in (
        ("define-rule", "head", "--body"),
        ("assume-fact", "fact", "--assumption"),
    ):
        found = find_command(command)
        assert found is not None
        tool, spelling = found
        assert spelling.positional == positional
        assert tool.option_for_flag(f"--{positional}") is not None  # "--head and --fact are also accepted"
        assert tool.option_for_flag(flag) is not None
    others = [tool for tool in tools() if tool.name not in ("define_rule", "assume_fact")]
    assert all(tool.commands[0].positional is None for tool in others)


def test_memory_commands_of_spec_9_3_are_aliases_of_the_memory_tools() -> None:
    section = one_line(spec_section("9.3"))
    spelled = re.findall(r"`zpm (memory [a-z]+)([^`]*)`", section)
    assert [s for s, _ in spelled] == ["memory create", "memory mount", "memory unmount", "memory list"]
    for spelling, flags in spelled:
        found = find_command(spelling)
        assert found is not None
        tool, command = found
        verb = spelling.split()[1]
        assert tool.name == ("list_memories" if verb == "list" else f"{verb}_memory")
        for flag in re.findall(r"--[a-z]+", flags):
            assert tool.option_for_flag(flag) is not None
        assert command.positional == ("name" if "--name" in flags else None)  # "a positional <n> is accepted"
    assert find_command(("memory", "mount")) == find_command("memory mount")


def test_option_types_and_required_come_from_the_schema() -> None:
    explain = find_tool("explain_why")
    assert explain is not None
    depth = explain.option_for_flag("--max-depth")
    assert depth is not None and depth.type == "integer" and not depth.required
    rename = find_tool("rename_predicate")
    assert rename is not None
    dry = rename.option_for_flag("--dry_run")
    assert dry is not None and dry.argument == "dry_run" and dry.type == "boolean"
    assert [o.argument for o in rename.options if o.required] == ["old_functor", "new_functor"]
    assert explain.option_for_flag("--nope") is None


def test_the_documents_command_lines_name_real_tools_and_flags() -> None:
    lines = examples()["cli"]
    assert len(lines) == 8
    for line in lines:
        argv = line["argv"]
        assert argv[0] == "zpm"
        found = find_command(argv[1])
        assert found is not None and found[0].name == line["tool"]
        tool = found[0]
        rest = argv[2:]
        assert len(rest) % 2 == 0, argv  # every flag takes a value, booleans included (§9.2)
        for flag, value in zip(rest[::2], rest[1::2], strict=True):
            option = tool.option_for_flag(flag)
            assert option is not None, flag
            if option.type == "integer":
                int(value)
            elif option.type == "boolean":
                assert value in ("true", "false")


# ------------------------------------------------------------------ REST


def test_every_tool_is_post_logic_name_with_unique_routes() -> None:
    routes = [(tool.rest_method, tool.rest_path) for tool in tools()]
    assert routes == [("POST", f"/logic/{tool.name}") for tool in tools()]
    assert len(set(routes)) == 29


# ------------------------------------------------------------------ handshake constants (§2.2)


def test_server_info_protocol_and_capabilities_are_the_specs() -> None:
    match = re.search(r"`(\{\"protocolVersion\":[^`]+\})`", spec_section("2.2"))
    assert match
    result = json.loads(match[1])
    assert registry.SERVER_INFO == result["serverInfo"] == {"name": "zpm", "version": "0.4.0"}
    assert registry.PROTOCOL_VERSION == result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"] == registry.CAPABILITIES
    assert registry.SUPPORTED_PROTOCOL_VERSIONS[0] == registry.PROTOCOL_VERSION
    for version in registry.SUPPORTED_PROTOCOL_VERSIONS:
        assert f"`{version}`" in spec_section("2.2")
    seed = seed_text()
    assert "Protocol version: 2025-11-25" in seed
    assert "Server name: zpm" in seed and "Server version: 0.4.0" in seed


# ------------------------------------------------------------------ listing and lookups


def test_listing_is_the_tools_list_object_and_a_copy() -> None:
    tool = find_tool("query_logic")
    assert tool is not None
    listed = tool.listing()
    assert list(listed) == ["name", "description", "inputSchema", "annotations"]
    assert listed["inputSchema"]["required"] == ["goal"]
    listed["inputSchema"]["properties"].clear()
    listed["annotations"]["readOnlyHint"] = False
    assert "goal" in tool_named("query_logic").listing()["inputSchema"]["properties"]
    assert tool.annotations["readOnlyHint"] is True


def test_lookups_by_name_refuse_unknown_names() -> None:
    assert find_tool("nope") is None
    assert find_tool("remember-fact") is None
    assert find_command("nope") is None
    assert find_command("memory") is None
    tool = find_tool("remember_fact")
    assert tool is not None and tool.required == ("fact",)


def test_importing_the_registry_reads_nothing_and_loads_no_jsonschema() -> None:
    code = (
        "import sys, quipu.logic.registry as r;"
        "print(r.load_tools.cache_info().currsize, 'jsonschema' in sys.modules, len(r.load_tools()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "29"]


# ------------------------------------------------------------------ a malformed tools.json is refused


def _broken(change: Any) -> dict[str, Any]:
    document = tools_json()
    change(document["tools"])
    return document


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.pop(), "28 tools"),
        (lambda t: t.__setitem__(1, copy.deepcopy(t[0])), "appears twice"),
        (lambda t: t[1].update(memory_param=False), "memory_param"),
        (lambda t: t[1].update(read_only=True), "readOnlyHint"),
        (lambda t: t[1]["annotations"].update(openWorldHint=True), "openWorldHint"),
        (lambda t: t[1]["cli"].update(command="remember_fact"), "cli.command"),
        (lambda t: t[4]["cli"]["flags"].update(start_node=["--start_node"]), "cli.flags.start_node"),
        (lambda t: t[1]["cli"].update(positional="nope"), "positional"),
        (lambda t: t[1].update(rest={"method": "GET", "path": "/logic/remember_fact"}), "POST /logic"),
        (lambda t: t[1]["inputSchema"].update(required=["nope"]), "required"),
        (lambda t: t[1]["inputSchema"]["properties"]["fact"].update(type="array"), "type"),
        (lambda t: t[1].update(extra=1), "keys"),
    ],
)
def test_a_malformed_tools_json_is_refused(change: Any, message: str) -> None:
    parse_tools(tools_json())  # the real file passes
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_tools(_broken(change))


# ------------------------------------------------------------------ the extracted examples


def test_the_examples_file_is_what_the_extractor_makes_of_the_document() -> None:
    seed_text()  # skip (or fail under CI) without the document
    run = subprocess.run(
        [sys.executable, str(EXTRACTOR), "--seed", str(SEED), "--out", str(EXAMPLES), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_the_document_has_87_responses_in_33_requests_and_8_command_lines() -> None:
    document = examples()
    responses = document["examples"]
    assert len(responses) == 87
    assert len(document["requests"]) == 33
    assert len({e["key"] for e in responses}) == 87
    # every JSON-RPC response the document prints is in the file (one "result" per response block)
    assert seed_text().count('"result": {') == sum(e["envelope"] for e in responses) == 86
    assert {e["tool"] for e in responses} == set(registry.tool_names())


def test_every_documented_request_is_valid_against_its_tools_schema() -> None:
    for request in examples()["requests"]:
        if request["method"] != "tools/call":
            continue
        tool = find_tool(request["tool"])
        assert tool is not None, request["tool"]
        Draft202012Validator(dict(tool.input_schema)).validate(request["arguments"])


def test_response_texts_are_marked_json_exactly_when_they_parse() -> None:
    for example in examples()["examples"]:
        try:
            json.loads(example["text"])
            parses = True
        except ValueError:
            parses = False
        assert example["json_text"] == parses, example["key"]
        assert isinstance(example["is_error"], bool)


def test_only_the_set_aside_overview_examples_are_superseded() -> None:
    superseded = [e for e in examples()["examples"] if e["superseded"]]
    assert [e["key"] for e in superseded] == ["get_kb_overview#4", "get_kb_overview#5"]
    assert '"name":"task_status"' in superseded[0]["text"]  # the older shape (spec §4.10 note)
