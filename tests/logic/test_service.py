"""LogicService: the 29 tools composed over one runtime and one lock; LogicHost opens it lazily."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from quipu.logic import project
from quipu.logic.errors import EngineUnavailable
from quipu.logic.knowledge import INVALID_ARGUMENTS
from quipu.logic.project import ProjectNotFound
from quipu.logic.registry import load_tools, tool_names
from quipu.logic.runtime import LogicRuntime
from quipu.logic.service import LogicHost, LogicService
from tests.logic.runtime_support import require_swipl, root  # noqa: F401 - the root fixture


@pytest.fixture
def service(root: Path) -> Iterator[LogicService]:  # noqa: F811
    with LogicRuntime.open(root, warn=lambda _: None) as runtime:
        yield LogicService(runtime)


def test_tools_are_the_registry_in_list_order(service: LogicService) -> None:
    assert service.tools() == load_tools()
    assert [t.name for t in service.tools()] == list(tool_names())
    assert len(service.tools()) == 29


@pytest.mark.parametrize("tool", tool_names())
def test_every_tool_dispatches_to_a_service_that_answers_it(service: LogicService, tool: str) -> None:
    # Empty arguments reach the tool itself: one with a required argument refuses them as a tool
    # result (R-T8), one without answers on a fresh project. Neither raises KeyError.
    spec = next(t for t in service.tools() if t.name == tool)
    assert service.handles(tool)
    result = service.call(tool, {})
    if spec.required:
        assert (result.is_error, result.text) == (True, INVALID_ARGUMENTS)
    else:
        assert not result.is_error, result.text


def test_each_tool_goes_to_the_service_that_owns_it(service: LogicService) -> None:
    owners = {
        "remember_fact": service.knowledge,
        "assume_fact": service.tms,
        "rename_predicate": service.refactor,
        "save_snapshot": service.persistence,
        "create_memory": service.memory,
    }
    parts = (service.knowledge, service.tms, service.refactor, service.persistence, service.memory)
    for tool, owner in owners.items():
        assert [part for part in parts if part.handles(tool)] == [owner]
    for tool in tool_names():
        assert sum(part.handles(tool) for part in parts) == 1, tool


def test_an_unknown_tool_is_a_key_error(service: LogicService) -> None:
    assert not service.handles("no_such_tool")
    with pytest.raises(KeyError):
        service.call("no_such_tool", {})


def test_no_arguments_is_an_empty_object(service: LogicService) -> None:
    listed = json.loads(service.call("list_memories").text)
    assert [m["name"] for m in listed["memories"]] == ["default"]


def test_the_services_share_the_runtimes_lock(service: LogicService) -> None:
    lock = service.runtime.lock
    for part in (service.knowledge, service.tms, service.refactor, service.persistence, service.memory):
        assert part._lock is lock, type(part).__name__


def test_tools_of_different_services_see_one_memory(service: LogicService) -> None:
    assert not service.call("remember_fact", {"fact": "city(lima)"}).is_error
    assert not service.call("assume_fact", {"fact": "city(cusco)", "assumption": "trip"}).is_error
    assert json.loads(service.call("query_logic", {"goal": "city(X)"}).text) == [
        {"X": "lima"},
        {"X": "cusco"},
    ]
    overview = json.loads(service.call("get_kb_overview").text)
    assert overview["assumptions"] == {"count": 1, "names": ["trip"]}
    assert service.call("save_snapshot", {"name": "cities"}).text == "Snapshot 'cities' saved successfully."
    created = service.call("create_memory", {"name": "notes"})
    assert not created.is_error, created.text


# ---------------------------------------------------------------------------- LogicHost


def test_host_opens_nothing_until_asked(tmp_path: Path) -> None:
    host = LogicHost(tmp_path / "missing")
    assert not host.opened
    host.close()


def test_host_opens_once_and_closes(root: Path) -> None:  # noqa: F811
    host = LogicHost(root)
    try:
        first = host.service()
        assert host.service() is first
        assert not first.call("remember_fact", {"fact": "kept(yes)"}).is_error
    finally:
        host.close()
    assert first.runtime.closed
    with pytest.raises(EngineUnavailable, match="closed"):
        host.service()


def test_host_with_a_folder_without_zpm_names_it(tmp_path: Path) -> None:
    (tmp_path / ".zpm").mkdir()  # a parent's project is not the configured folder's
    child = tmp_path / "child"
    child.mkdir()
    with pytest.raises(ProjectNotFound, match=r"No \.zpm/ directory in .*child.*logic\.project"):
        LogicHost(child).service()


def test_host_discovers_from_the_working_directory(
    root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nested = root / "src" / "deep"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    host = LogicHost(None)
    try:
        assert host.service().runtime.project.root == root.absolute()
    finally:
        host.close()


def test_host_without_an_engine_raises_engine_unavailable_and_retries(
    root: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("QUIPU_SWIPL", str(root / "no-such-swipl"))
    host = LogicHost(root)
    try:
        with pytest.raises(EngineUnavailable, match="no-such-swipl"):
            host.service()
        assert not host.opened
        monkeypatch.delenv("QUIPU_SWIPL")
        require_swipl()
        assert not host.service().call("echo", {"message": "back"}).is_error  # a later call succeeds
    finally:
        host.close()


def test_host_project_created_later_is_found(tmp_path: Path) -> None:
    require_swipl()
    folder = tmp_path / "later"
    folder.mkdir()
    host = LogicHost(folder)
    try:
        with pytest.raises(ProjectNotFound):
            host.service()
        project.init(folder)
        assert host.service().call("echo", {"message": "hi"}).text == "hi"
    finally:
        host.close()
