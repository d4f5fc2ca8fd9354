"""All 29 logic tools behind one entry point, and the lazily opened runtime a server uses.

``LogicService(runtime)`` composes the tool services of quipu/logic (knowledge, TMS, refactor,
persistence, memories) over one ``LogicRuntime``. Every service gets the runtime's one lock, so
all calls on the engine are serialised whichever service runs them (R-T3). ``call(tool,
arguments)`` dispatches by tool name and returns the tool's ``ToolResult``; a name that is not one
of the 29 tools is a ``KeyError`` (a protocol error, R-T8, never a tool result).

``LogicHost(project, graph=...)`` is what the REST app holds (``graph``: the store its rdf/3 family
reads, quipu/logic/graph_bridge.py): nothing is started until the first logic call
(``service()``), so a server without SWI-Prolog or without a ``.zpm/`` project still serves the
quad store, and each logic call then raises the error naming what is missing
(``EngineUnavailable``, ``ProjectNotFound``). A failed open is not remembered: the next call
tries again, so installing swipl or running ``zpm init`` needs no server restart **[designed
here]**.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from quipu.errors import ConfigError
from quipu.logic.errors import EngineUnavailable
from quipu.logic.graph_bridge import GraphSource
from quipu.logic.knowledge import KnowledgeService, ToolResult
from quipu.logic.memory_tools import MemoryService, RuntimeOverview
from quipu.logic.persistence_tools import PersistenceService
from quipu.logic.project import SERVE_NOT_FOUND, ZPM_DIR, ProjectNotFound
from quipu.logic.refactor import RefactorService
from quipu.logic.registry import LogicTool, load_tools
from quipu.logic.runtime import LogicRuntime
from quipu.logic.tms import TmsService


class _ToolService(Protocol):
    def handles(self, name: str) -> bool: ...

    def call(self, name: str, arguments: Any = None) -> ToolResult: ...


class LogicService:
    """The 29 tools over one runtime. The runtime stays the caller's: ``close`` it yourself."""

    def __init__(self, runtime: LogicRuntime) -> None:
        self.runtime = runtime
        lock = runtime.lock
        engine, memories, journal = runtime.engine, runtime.memories, runtime.journal_sink
        self.memory = MemoryService(runtime, lock=lock)
        self.knowledge = KnowledgeService(engine, memories, journal, lock=lock)
        self.knowledge.curies = runtime.graph.curies
        self.tms = TmsService(engine, memories, journal, lock=lock)
        self.refactor = RefactorService(engine, memories, journal, RuntimeOverview(runtime), lock=lock)
        self.persistence = PersistenceService(runtime, lock=lock)
        services: tuple[_ToolService, ...] = (
            self.knowledge,
            self.tms,
            self.refactor,
            self.persistence,
            self.memory,
        )
        self._routes: dict[str, _ToolService] = {}
        for tool in load_tools():
            owners = [service for service in services if service.handles(tool.name)]
            if len(owners) != 1:
                raise ConfigError(f"logic tool {tool.name!r} is handled by {len(owners)} services, not one")
            self._routes[tool.name] = owners[0]

    def tools(self) -> tuple[LogicTool, ...]:
        """The tools in ``tools/list`` order (quipu/logic/tools.json)."""
        return load_tools()

    def handles(self, name: str) -> bool:
        return name in self._routes

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> ToolResult:
        """Run ``tool``; ``arguments`` None means none. KeyError for an unknown tool name."""
        service = self._routes[tool]
        return service.call(tool, arguments)


class LogicHost:
    """Opens the project's runtime on the first ``service()`` call, once, and closes it.

    ``project`` is the folder whose ``.zpm/`` is used (setting ``logic.project``); None discovers
    the project from the working directory upwards (R-B1). Thread-safe."""

    def __init__(self, project: str | Path | None = None, *, graph: GraphSource | None = None) -> None:
        self.project = None if project is None else Path(project)
        self.graph = graph  # what rdf/3 ... read (None: they say no store is wired in)
        self._lock = threading.Lock()
        self._runtime: LogicRuntime | None = None
        self._service: LogicService | None = None
        self._closed = False

    @property
    def opened(self) -> bool:
        return self._service is not None

    def service(self) -> LogicService:
        """The service, opening the runtime first if need be. Raises ``ProjectNotFound`` when
        there is no project, ``EngineUnavailable`` when no engine can be started."""
        with self._lock:
            if self._service is not None:
                return self._service
            if self._closed:
                raise EngineUnavailable("the logic memory is closed: the server is shutting down")
            runtime = LogicRuntime.open(self._start(), graph=self.graph)
            try:
                service = LogicService(runtime)
            except BaseException:
                runtime.close()
                raise
            self._runtime, self._service = runtime, service
            return service

    def _start(self) -> Path | None:
        if self.project is None:
            return None
        folder = self.project.absolute()
        if not (folder / ZPM_DIR).is_dir():
            # The configured folder itself, never a parent found by discovery.
            raise ProjectNotFound(f"No {ZPM_DIR}/ directory in {folder} (setting logic.project). {_HINT}")
        return folder

    def close(self) -> None:
        with self._lock:
            self._closed = True
            runtime, self._runtime, self._service = self._runtime, None, None
        if runtime is not None:
            runtime.close()


_HINT = SERVE_NOT_FOUND.split(". ", 1)[-1]  # "Run `zpm init` to initialize a project."

__all__ = ["LogicHost", "LogicService"]
