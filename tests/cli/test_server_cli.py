"""The ``quipu-server`` console script run for real, and ``quipu token``.

Servers are started as subprocesses on free loopback ports with temp stores, and polled on
``/health`` with a bounded wait. stderr goes to a file, read back as JSON lines. Interpreter
start-up costs about two seconds, so servers and one-shot invocations start concurrently.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app as quipu_cli
from quipu.cli.server import base_url, is_loopback, parse_bind, warn_if_writes_open
from quipu.cli.server import cli as server_cli
from quipu.config import NamedCredential, ServerSettings, load_settings, owl_installed
from quipu.errors import ConfigError
from quipu.rest.auth import Credentials
from quipu.version import version_info
from tests.backends import on_postgres, store_location

BIN = Path(sys.executable).parent
QUIPU_SERVER = BIN / "quipu-server"
QUIPU = BIN / "quipu"
STARTUP_S = 60.0  # a bound: a loaded CI machine (both halves at once, a cold clone) took over 18 s
TURTLE = "@prefix : <http://ex.org/> .\n:svc :cores 4 .\n"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path
    db: str  # a SQLite file, or a PostgreSQL URL in the suite's PostgreSQL half

    def lines(self) -> list[dict[str, Any]]:
        """Every stderr line, each of which must be one JSON object."""
        text = self.log.read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def wait_for_line(self, timeout: float = 5.0, **fields: Any) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines():
                if all(line.get(k) == v for k, v in fields.items()):
                    return line
            if time.monotonic() > deadline:
                raise AssertionError(f"no log line with {fields}:\n{self.log.read_text()}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


def start(directory: Path, *args: str, env: dict[str, str] | None = None) -> Server:
    """Launch ``quipu-server`` (without waiting for it) on a free port and a store in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    port, log, db = free_port(), directory / "stderr.log", store_location(directory, "s.db")
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(QUIPU_SERVER), "--db", db, "--bind", f"127.0.0.1:{port}", *args],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**_env(), **(env or {})},
        )
    return Server(proc, f"http://127.0.0.1:{port}", log, db)


def wait_healthy(server: Server) -> Server:
    deadline = time.monotonic() + STARTUP_S
    while True:
        if server.proc.poll() is not None:
            raise AssertionError(f"quipu-server exited {server.proc.returncode}:\n{server.log.read_text()}")
        try:
            if httpx.get(server.url + "/health", timeout=1.0).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"quipu-server not healthy within {STARTUP_S} s:\n{server.log.read_text()}")
        time.sleep(0.1)


def run(args: Sequence[str | Path], cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=120,
        check=False,
    )


def make_token(principal: str) -> tuple[str, str]:
    """(token, TOML entry) from ``quipu token``, run in process."""
    result = CliRunner().invoke(quipu_cli, ["token", "--principal", principal])
    assert result.exit_code == 0, result.output
    return result.stdout.strip(), result.stderr


# -- fixtures: two servers and the one-shot runs, all started together ------------------------


@dataclass
class Scene:
    writable: Server
    read_only: Server
    token: str
    runs: dict[str, subprocess.CompletedProcess[str]]
    root: Path


def _one_shots(root: Path, token: str) -> dict[str, tuple[list[str | Path], str]]:
    (root / "bad.toml").write_text("[quipu.server\nport = 1\n")
    (root / "no-token-file.toml").write_text(
        f'[[quipu.server.credentials]]\nprincipal = "a"\ntoken_file = "{root / "missing.token"}"\n'
    )
    server: list[str | Path] = [QUIPU_SERVER, "--db", root / "never.db"]
    return {
        "bad_bind": ([*server, "--bind", "127.0.0.1:http"], ""),
        "bad_toml": ([*server, "--config", root / "bad.toml"], ""),
        "bad_token_file": ([*server, "--config", root / "no-token-file.toml"], ""),
        "token": ([QUIPU, "token", "--principal", "ci-bot", "--id", "ci-bot-1"], ""),
        "token_hash": ([QUIPU, "token", "--hash"], f"  {token}\n"),
        "token_hash_short": ([QUIPU, "token", "--hash"], "short\n"),
    }


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    root = tmp_path_factory.mktemp("server-cli")
    token, entry = make_token("ci-bot")
    (root / "writable").mkdir()
    (root / "writable" / "quipu.toml").write_text(entry)  # the snippet, pasted as is
    writable = start(root / "writable")
    read_only = start(root / "read-only", "--read-only", env={"QUIPU_SERVER__AUTH_TOKEN": token})
    calls = _one_shots(root, token)
    try:
        with ThreadPoolExecutor(max_workers=len(calls)) as pool:
            futures = {name: pool.submit(run, args, root, stdin) for name, (args, stdin) in calls.items()}
            runs = {name: f.result() for name, f in futures.items()}
        yield Scene(wait_healthy(writable), wait_healthy(read_only), token, runs, root)
    finally:
        writable.stop()
        read_only.stop()


def refused(result: subprocess.CompletedProcess[str], phrase: str) -> None:
    """Exit 2, nothing on stdout, exactly one plain ``error:`` line on stderr."""
    assert result.returncode == 2, result
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert phrase in lines[0]


# -- the running server -----------------------------------------------------------------------


def test_health_and_version_over_real_http(scene: Scene) -> None:
    assert httpx.get(scene.writable.url + "/health").json() == {"status": "ok"}
    body = httpx.get(scene.writable.url + "/version").json()
    assert body == version_info()  # the same installation: the stamp made at build time
    assert body["version"] == quipu.__version__
    assert body["git_sha"] == "unknown" or len(body["git_sha"]) == 40
    # the packaged model, in the dev environment; the owl extra only in its own job's virtualenv
    assert body["features"] == {"embedding": True, "owl": owl_installed()}


def test_a_write_with_the_token_from_quipu_token_is_attributed(scene: Scene) -> None:
    url = scene.writable.url
    assert httpx.post(url + "/knot", json={"turtle": TURTLE}).status_code == 401
    response = httpx.post(
        url + "/knot", json={"turtle": TURTLE}, headers={"Authorization": f"Bearer {scene.token}"}
    )
    assert response.status_code == 200, response.text
    tx = response.json()["tx_id"]
    log = httpx.get(url + "/transactions").json()
    (entry,) = [t for t in log["transactions"] if t["id"] == tx]
    assert entry["authenticated"]["principal"] == "ci-bot"


def test_read_only_flag_refuses_writes_even_with_a_valid_token(scene: Scene) -> None:
    response = httpx.post(
        scene.read_only.url + "/knot",
        json={"turtle": TURTLE},
        headers={"Authorization": f"Bearer {scene.token}"},
    )
    assert response.status_code == 403
    assert response.json()["reason"] == "server_is_read_only"
    assert httpx.get(scene.read_only.url + "/stats").json()["facts"] == 0  # reads stay open, nothing written


def test_stderr_carries_a_json_access_line_with_the_callers_request_id(scene: Scene) -> None:
    response = httpx.get(scene.writable.url + "/stats", headers={"X-Request-Id": "cli-test-42"})
    assert response.headers["x-request-id"] == "cli-test-42"
    line = scene.writable.wait_for_line(logger="quipu.access", request_id="cli-test-42")
    assert (line["method"], line["route"], line["status"]) == ("GET", "/stats", 200)
    assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
    assert line["level"] == "info" and line["ts"].endswith("Z")


def test_every_stderr_line_is_json_and_uvicorns_access_log_is_off(scene: Scene) -> None:
    httpx.get(scene.writable.url + "/health", headers={"X-Request-Id": "json-only"})
    scene.writable.wait_for_line(request_id="json-only")
    lines = scene.writable.lines()  # json.loads of each line, or the test fails
    loggers = {line["logger"] for line in lines}
    assert "uvicorn.access" not in loggers
    assert {"quipu.server", "quipu.access", "uvicorn.error"} <= loggers
    (started,) = [line for line in lines if line["msg"] == "starting"]
    assert started["url"] == scene.writable.url and started["read_only"] is False
    assert not [line for line in lines if line["level"] == "warning"]  # loopback: no open-writes warning


def test_read_only_server_says_so_at_start(scene: Scene) -> None:
    assert scene.read_only.wait_for_line(msg="starting")["read_only"] is True


# -- refusals before binding ------------------------------------------------------------------


def test_bad_bind_exits_2_with_one_error_line(scene: Scene) -> None:
    refused(scene.runs["bad_bind"], "--bind '127.0.0.1:http'")
    assert not (scene.root / "never.db").exists()


@pytest.mark.parametrize(
    ("name", "phrase"),
    [("bad_toml", "invalid TOML in"), ("bad_token_file", "cannot read token file")],
)
def test_bad_config_exits_2_with_one_error_line(scene: Scene, name: str, phrase: str) -> None:
    refused(scene.runs[name], phrase)
    assert not (scene.root / "never.db").exists()


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["--bind", "[::1:3030"], "--bind '[::1:3030'"),
        (["--bind", ":99999"], "port must be a number"),
        (["--config", "{dir}/bad-value.toml"], "server.port"),
        (["--config", "{dir}/absent.toml"], "config file not found"),
        (["--db", "{dir}/no/such/dir/x.db"], "its directory does not exist"),
    ],
)
def test_more_refusals_in_process(tmp_path: Path, args: list[str], phrase: str) -> None:
    (tmp_path / "bad-value.toml").write_text('[quipu.server]\nport = "high"\n')
    argv = ["--db", store_location(tmp_path, "never.db"), *(a.format(dir=tmp_path) for a in args)]
    result = CliRunner().invoke(server_cli, argv)
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ") and phrase in line
    assert not (tmp_path / "never.db").exists()


# -- stopping ---------------------------------------------------------------------------------


def test_sigterm_and_sigint_stop_the_server_cleanly_within_seconds(tmp_path: Path) -> None:
    signals = {"term": signal.SIGTERM, "int": signal.SIGINT}
    servers = {name: start(tmp_path / name) for name in signals}  # both start at once
    try:
        for server in servers.values():
            wait_healthy(server)
            assert on_postgres() or Path(f"{server.db}-wal").exists()  # the store is open
        for name, server in servers.items():
            began = time.monotonic()
            server.proc.send_signal(signals[name])
            code = server.proc.wait(10)
            assert time.monotonic() - began < 5, name
            assert code == 0, name
            assert "Traceback" not in server.log.read_text(), name
            server.wait_for_line(msg="Application shutdown complete.", timeout=0)
            assert on_postgres() or not Path(f"{server.db}-wal").exists(), name  # the lifespan closed it
    finally:
        for server in servers.values():
            server.stop()


# -- bind parsing and the open-writes warning (in process) -------------------------------------


@pytest.mark.parametrize(
    ("bind", "expected"),
    [
        ("127.0.0.1:3030", ("127.0.0.1", 3030)),
        ("0.0.0.0:8080", ("0.0.0.0", 8080)),
        ("[::1]:3030", ("::1", 3030)),
        ("[::]:0", ("::", 0)),
        ("[::1]", ("::1", None)),
        ("::1", ("::1", None)),
        (":3031", (None, 3031)),
        ("localhost", ("localhost", None)),
        ("db-host.internal:9000", ("db-host.internal", 9000)),
    ],
)
def test_bind_forms(bind: str, expected: tuple[str | None, int | None]) -> None:
    assert parse_bind(bind) == expected


@pytest.mark.parametrize(
    "bind",
    ["", "127.0.0.1:", "host:http", ":65536", "[::1", "[::1]3030", "[nope]:80", "a b", "300.1.1.1", "::g"],
)
def test_bad_bind_forms_are_config_errors(bind: str) -> None:
    with pytest.raises(ConfigError, match="--bind"):
        parse_bind(bind)


def test_bind_leaves_unset_parts_to_the_config() -> None:
    host, port = parse_bind(":4040")
    settings = load_settings(server={"host": host, "port": port})
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 4040)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.0.1", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.5", False),
        ("example.org", False),
    ],
)
def test_loopback_addresses(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_base_url_brackets_ipv6() -> None:
    assert base_url("::1", 3030) == "http://[::1]:3030"
    assert base_url("127.0.0.1", 3030) == "http://127.0.0.1:3030"


def test_non_loopback_bind_without_credentials_warns(caplog: pytest.LogCaptureFixture) -> None:
    open_settings = load_settings(server={"host": "0.0.0.0"})
    with caplog.at_level(logging.WARNING, logger="quipu.server"):
        assert warn_if_writes_open(open_settings, credentials_configured=False) is True
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and "writes are open" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="quipu.server"):
        assert warn_if_writes_open(open_settings, credentials_configured=True) is False
        assert (
            warn_if_writes_open(load_settings(server={"host": "0.0.0.0", "read_only": True}), False) is False
        )
        assert warn_if_writes_open(load_settings(server={"host": "::1"}), False) is False
    assert caplog.records == []


# -- quipu token ------------------------------------------------------------------------------


def test_quipu_token_prints_a_token_and_its_credentials_entry(scene: Scene) -> None:
    result = scene.runs["token"]
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert result.stdout == token + "\n" and len(token) >= 32
    entry = tomllib.loads(result.stderr)["quipu"]["server"]["credentials"]
    (cred,) = [NamedCredential(**e) for e in entry]
    assert (cred.principal, cred.id, cred.token_file) == ("ci-bot", "ci-bot-1", None)
    identity = Credentials.from_settings(ServerSettings(credentials=[cred])).verify(f"Bearer {token}")
    assert identity is not None and (identity.principal, identity.credential_id) == ("ci-bot", "ci-bot-1")


def test_quipu_token_defaults_and_new_tokens_differ(scene: Scene) -> None:
    result = CliRunner().invoke(quipu_cli, ["token"])
    assert result.exit_code == 0, result.output
    (entry,) = tomllib.loads(result.stderr)["quipu"]["server"]["credentials"]
    assert entry["principal"] == "agent" and entry["id"].startswith("agent-")
    assert result.stdout.strip() != scene.runs["token"].stdout.strip()


def test_quipu_token_refuses_an_empty_principal() -> None:
    result = CliRunner().invoke(quipu_cli, ["token", "--principal", ""])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--principal" in result.stderr


def test_quipu_token_hash_reads_stdin_and_prints_only_the_hash(scene: Scene) -> None:
    result = scene.runs["token_hash"]
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    (digest,) = result.stdout.splitlines()
    assert digest.startswith("sha256:")
    cred = NamedCredential(principal="p", token_hash=digest)
    creds = Credentials.from_settings(ServerSettings(credentials=[cred]))
    assert creds.verify(f"Bearer {scene.token}") is not None  # stdin was trimmed
    assert creds.verify("Bearer not-the-token-at-all-0000") is None


def test_quipu_token_hash_refuses_a_short_token(scene: Scene) -> None:
    refused(scene.runs["token_hash_short"], "shorter than 16 characters")
