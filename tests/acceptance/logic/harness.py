"""Drives the real ``zpm`` console script: a ``zpm serve`` conversation over stdio, a piped batch,
or one command-line process. Every wait is bounded; responses are found by id.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

ZPM: Final = Path(sys.executable).with_name("zpm")
NO_ENGINE: Final = {"PATH": str(ZPM.parent)}  # the venv's programs only: no swipl on the PATH
WAIT: Final = 60.0  # one response, including the server's start-up and a 5 s query limit
INITIALIZE: Final = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "quipu-acceptance", "version": "1"},
}


def zpm_env(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(overrides or {})
    env.pop("QUIPU_CONFIG", None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def request(request_id: int, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def tool_call(request_id: int, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = dict(arguments)
    return request(request_id, "tools/call", params)


def handshake() -> list[dict[str, Any]]:
    """``initialize`` as id 0 and the ``initialized`` notification."""
    return [request(0, "initialize", INITIALIZE), {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def text_of(response: Mapping[str, Any]) -> str:
    content = response["result"]["content"]
    assert len(content) == 1 and content[0]["type"] == "text", response
    text: str = content[0]["text"]
    return text


@dataclass
class Batch:
    """A piped conversation: all input at once, then end-of-file."""

    returncode: int
    lines: list[str]  # stdout, one entry per line
    stderr: str
    by_id: dict[Any, dict[str, Any]] = field(default_factory=dict)

    def __getitem__(self, request_id: int | None) -> dict[str, Any]:
        return self.by_id[request_id]


def run_batch(
    cwd: Path,
    messages: Sequence[Mapping[str, Any] | str],
    *,
    final_newline: bool = True,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> Batch:
    """Pipe ``messages`` (objects, or raw lines) into ``zpm serve`` and wait for it to exit.
    ``prefix`` runs the server through another program (e.g. ``runuser -u nobody --``)."""
    lines = [m if isinstance(m, str) else json.dumps(m) for m in messages]
    data = "\n".join(lines) + ("\n" if final_newline else "")
    done = subprocess.run(
        [*prefix, str(ZPM), "serve"],
        cwd=cwd,
        input=data.encode("utf-8"),
        capture_output=True,
        timeout=WAIT * 2,
        env=zpm_env(env),
        check=False,
    )
    out = done.stdout.decode("utf-8").splitlines()
    batch = Batch(done.returncode, out, done.stderr.decode("utf-8", "replace"))
    for line in out:
        message = json.loads(line)  # every stdout line is one JSON message (R-T2, R-T4)
        batch.by_id[message.get("id")] = message
    return batch


class Session:
    """A live ``zpm serve`` process: send a line, wait for the response with an id."""

    def __init__(self, cwd: Path, env: Mapping[str, str] | None = None, args: Sequence[str] = ()) -> None:
        self.process = subprocess.Popen(
            [str(ZPM), "serve", *args],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=zpm_env(env),
        )
        self.lines: list[str] = []  # every stdout line, in order
        self._responses: dict[Any, dict[str, Any]] = {}
        self._incoming: queue.Queue[str | None] = queue.Queue()
        self._ids = itertools.count(1)
        self.stderr_text: list[str] = []
        assert self.process.stdout is not None and self.process.stderr is not None
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for raw in stream:
            self._incoming.put(raw.decode("utf-8"))
        self._incoming.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        for raw in stream:
            self.stderr_text.append(raw.decode("utf-8", "replace"))

    def send(self, message: Mapping[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def response(self, request_id: Any) -> dict[str, Any]:
        """The response with ``request_id``; every line read meanwhile must be one JSON object."""
        while request_id not in self._responses:
            try:
                line = self._incoming.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no response with id {request_id!r} within {WAIT} s") from None
            if line is None:
                raise AssertionError(f"stdout closed before id {request_id!r}: {''.join(self.stderr_text)}")
            assert line.endswith("\n") and "\n" not in line[:-1]
            self.lines.append(line)
            message = json.loads(line)
            self._responses[message.get("id")] = message
        return self._responses[request_id]

    def ask(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        request_id = next(self._ids)
        self.send(request(request_id, method, params))
        return self.response(request_id)

    def initialize(self) -> dict[str, Any]:
        self.send(request(0, "initialize", INITIALIZE))
        answer = self.response(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """A ``tools/call`` result (the response must be a result, not a protocol error)."""
        request_id = next(self._ids)
        self.send(tool_call(request_id, name, arguments))
        answer = self.response(request_id)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def close(self) -> int:
        """End of file on stdin; the exit status."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        return self.process.wait(timeout=WAIT)

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no clean-up of any kind
        self.process.wait(timeout=WAIT)


@contextmanager
def session(
    cwd: Path, *, initialize: bool = True, env: Mapping[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[Session]:
    served = Session(cwd, env, args)
    try:
        if initialize:
            served.initialize()
        yield served
    finally:
        if served.process.poll() is None:
            served.close()
        if served.process.poll() is None:
            served.kill()


def result_text(result: Mapping[str, Any]) -> str:
    content = result["content"]
    assert isinstance(content, list) and len(content) == 1, result
    text: str = content[0]["text"]
    return text


def converse(
    cwd: Path,
    calls: Sequence[tuple[str, Mapping[str, Any] | None]],
    *,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One piped ``zpm serve`` session: the handshake, then ``calls`` as ``tools/call`` requests with
    ids 1, 2, ...; the ``result`` of each, in call order (a protocol error fails the test)."""
    batch = run_batch(
        cwd,
        [*handshake(), *(tool_call(i, name, args) for i, (name, args) in enumerate(calls, 1))],
        env=env,
        prefix=prefix,
    )
    assert batch.returncode == 0, batch.stderr
    results = []
    for i, (name, args) in enumerate(calls, 1):
        answer = batch[i]
        assert "result" in answer, (name, args, answer)
        assert answer["result"]["isError"] in (True, False), answer
        results.append(answer["result"])
    return results


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str


def zpm(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> Run:
    """One ``zpm`` command-line process."""
    done = subprocess.run(
        [str(ZPM), *args], cwd=cwd, capture_output=True, timeout=WAIT, env=zpm_env(env), check=False
    )
    return Run(done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8", "replace"))
