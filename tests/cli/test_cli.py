"""The ``quipu`` console script, run for real as a subprocess on store files in a temp dir.

Spellings of commands and flags are part of the contract (the issue's CLI list). stdout must
carry only the result; errors go to stderr with a non-zero exit code (2 for a bad request).

Each invocation costs a full interpreter start-up (about two seconds of SQLAlchemy, Alembic and
rdflib imports). So every scenario is written as up to three *phases* of invocations; the
module fixture ``runs`` executes phase 1 of all scenarios concurrently, then phase 2, then
phase 3, and the tests below assert on the recorded results by name. Stores that a scenario only
needs as a precondition are made in-process through the embedding API, and a few extra refusal
and rendering checks run the same typer app in-process through ``typer.testing.CliRunner``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rdflib import Graph, Literal, URIRef
from typer.testing import CliRunner

import quipu
from quipu.cli.main import app
from tests.backends import on_postgres, store_location
from tests.store import snapshot

QUIPU = Path(sys.executable).parent / "quipu"
EX = "http://ex.org/"
XSD = "http://www.w3.org/2001/XMLSchema#"
XSD_INTEGER = XSD + "integer"
SVC, CORES = EX + "svc", EX + "cores"
CORES_QUERY = f"SELECT ?c WHERE {{ <{SVC}> <{CORES}> ?c }}"
SVC_TTL = "@prefix : <http://ex.org/> .\n:svc :cores 4 .\n"
JOB_NT = (
    f'<{EX}job> <{EX}name> "build \\"nightly\\" ☃" .\n'
    f"<{EX}job> <{EX}runs> <{EX}ci> .\n"
    f"<{EX}job> <{EX}runs> <{EX}cd> .\n"
)


# -- running the console script -------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    args: Sequence[str]
    cwd: Path
    stdin: str | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    args: Sequence[str]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"quipu {' '.join(self.args)} -> exit {self.code}\nstdout:\n{self.out}\nstderr:\n{self.err}"

    def json(self) -> Any:
        assert self.code == 0, str(self)
        return json.loads(self.out)  # the whole of stdout is the JSON result

    @property
    def message(self) -> str:
        """stderr with whitespace collapsed (Rich wraps long lines at the terminal width)."""
        return " ".join(self.err.split())


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIPU_")}
    env.update(extra)
    return env


def run(call: Call) -> Run:
    proc = subprocess.run(
        [str(QUIPU), *call.args],
        cwd=call.cwd,
        input=(call.stdin or "").encode(),
        capture_output=True,
        env=_env(call.env),
        timeout=120,
        check=False,
    )
    # Bytes, not text mode: text mode would translate the CRLF line ends of SPARQL CSV.
    return Run(tuple(call.args), proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def run_many(calls: dict[str, Call]) -> dict[str, Run]:
    """Run independent invocations concurrently."""
    if not calls:
        return {}
    with ThreadPoolExecutor(max_workers=min(len(calls), 2 * (os.cpu_count() or 1))) as pool:
        futures = {name: pool.submit(run, call) for name, call in calls.items()}
        return {name: future.result() for name, future in futures.items()}


def ok(result: Run) -> Run:
    assert result.code == 0, str(result)
    return result


def refused(result: Run, *needles: str) -> None:
    """A clean refusal: exit 2, nothing on stdout, the message (and no traceback) on stderr."""
    assert result.code == 2, str(result)
    assert result.out == "", str(result)
    assert "Traceback" not in result.err, str(result)
    for needle in needles:
        assert needle in result.message, str(result)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def store_digest(directory: Path, name: str) -> str:
    """The SQLite file's bytes; on PostgreSQL, the content of every table of the store."""
    if not on_postgres():
        return file_digest(directory / name)
    with quipu.open(store_location(directory, name)) as kb:
        return hashlib.sha256(repr(snapshot(kb)).encode()).hexdigest()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- every scenario, in phases ------------------------------------------------------------------


@dataclass
class Runs:
    root: Path
    results: dict[str, Run] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Run:
        return self.results[name]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("cli")
    out = Runs(root)
    phases: list[dict[str, Call]] = [{}, {}, {}, {}, {}]

    # DM §6.3 with cores: 4 from April (knot), 8 from May (set), then the reads; then refused
    # commands (malformed Turtle, malformed --timestamp, unknown --format, unravel without a read
    # point) that must leave the file alone.
    svc = root / "svc"
    svc.mkdir()
    (svc / "svc.ttl").write_text(SVC_TTL, encoding="utf-8")
    (svc / "bad.ttl").write_text("@prefix : <http://ex.org/> .\n:svc :cores .\n", encoding="utf-8")
    db = store_location(svc, "svc.db")
    out.notes["svc_db"] = db
    phases[0]["svc_knot"] = Call(["knot", "svc.ttl", "--timestamp", "2026-04-01T00:00:00Z", "--db", db], svc)
    phases[1]["svc_set"] = Call(
        ["set", SVC, CORES, '{"int": 8}', "--timestamp", "2026-05-01T00:00:00Z", "--db", db], svc
    )

    def read(*flags: str) -> Call:
        return Call(["read", CORES_QUERY, *flags, "--db", db], svc)

    phases[2] |= {
        "svc_json_current": read("--format", "json"),
        "svc_json_tx1": read("--tx", "1", "--format", "json"),
        "svc_csv_valid_at": read("--valid-at", "2026-04-15T00:00:00Z", "--format", "csv"),
        "svc_export_nt": Call(["export", "--db", db], svc),
        "svc_export_turtle": Call(["export", "--format", "turtle", "--db", db], svc),
        "svc_unravel_tx1": Call(["unravel", "--tx", "1", "--db", db], svc),
    }
    phases[3] |= {
        "svc_bad_turtle": Call(["knot", "bad.ttl", "--db", db], svc),
        "svc_bad_timestamp": Call(["knot", "svc.ttl", "--timestamp", "2026-04-01", "--db", db], svc),
        "svc_bad_format": Call(["knot", "svc.ttl", "--format", "bogus", "--db", db], svc),
        "svc_unravel_no_point": Call(["unravel", "--db", db], svc),
    }
    phases[4] |= {
        "svc_export_after": Call(["export", "--db", db], svc),
        "svc_stats_after": Call(["stats", "--db", db], svc),
    }

    # knot - (stdin) with --format nt, then retract --predicate.
    job = root / "job"
    job.mkdir()
    jdb = store_location(job, "job.db")
    out.notes["job_db"] = jdb
    phases[0]["job_knot"] = Call(
        ["knot", "-", "--format", "nt", "--timestamp", "2026-01-01T00:00:00+01:00", "--db", jdb], job, JOB_NT
    )
    phases[1]["job_retract"] = Call(
        [
            "retract",
            EX + "job",
            "--predicate",
            EX + "runs",
            "--timestamp",
            "2026-02-01T00:00:00Z",
            "--db",
            jdb,
        ],
        job,
    )
    phases[2]["job_export"] = Call(["export", "--db", jdb], job)

    # Where the store comes from without --db: QUIPU_STORE__DB, then quipu.toml in the cwd.
    env_dir, toml_dir, both_dir = root / "env", root / "toml", root / "both"
    for d in (env_dir, toml_dir, both_dir):
        d.mkdir()
    out.notes["config_dirs"] = (env_dir, toml_dir, both_dir)
    with quipu.open(store_location(env_dir, "from-env.db")) as kb:  # one entity
        kb.knot(f'<{EX}e1> <{EX}p> "a" .\n', "nt")
    with quipu.open(store_location(toml_dir, "x.db")) as kb:  # two entities
        kb.knot(f'<{EX}t1> <{EX}p> "a" .\n<{EX}t2> <{EX}p> "b" .\n', "nt")
    # A relative path resolves in the working directory; PostgreSQL has the URL instead.
    in_toml = store_location(toml_dir, "x.db") if on_postgres() else "x.db"
    for d in (toml_dir, both_dir):
        (d / "quipu.toml").write_text(f'[quipu.store]\ndb = "{in_toml}"\n', encoding="utf-8")
    from_env = {"QUIPU_STORE__DB": store_location(env_dir, "from-env.db")}
    phases[1] |= {
        "cfg_env": Call(["stats"], env_dir, env=from_env),
        "cfg_toml": Call(["stats"], toml_dir),
        "cfg_env_over_toml": Call(["stats"], both_dir, env=from_env),
    }

    for i, phase in enumerate(phases):
        if i == 3:
            out.notes["svc_digest_before"] = store_digest(svc, "svc.db")
            out.notes["svc_listing_before"] = listing(svc)
        out.results |= run_many(phase)
        if i == 3:
            out.notes["svc_digest_after"] = store_digest(svc, "svc.db")
            out.notes["svc_listing_after"] = listing(svc)
    return out


def bindings(result: Run) -> list[dict[str, dict[str, str]]]:
    data = ok(result).json()
    assert data["head"] == {"vars": ["c"]}
    rows: list[dict[str, dict[str, str]]] = data["results"]["bindings"]
    return rows


def integer_binding(n: int) -> dict[str, str]:
    return {"type": "literal", "value": str(n), "datatype": XSD_INTEGER}


# -- the worked time-travel example (DM §6.3) ------------------------------------------------------


def test_knot_reports_the_transaction_and_valid_time(runs: Runs) -> None:
    knot = ok(runs["svc_knot"])
    out = knot.json()
    assert out["tx_id"] == 1
    assert out["count"] == 1
    assert out["valid_from"] == "2026-04-01T00:00:00Z"  # --timestamp is the VALID time
    assert knot.err == ""


def test_set_supersedes_the_value(runs: Runs) -> None:
    assert runs["svc_set"].json() == {
        "tx_id": 2,
        "retracted": 1,
        "asserted": 1,
        "entity": SVC,
        "predicate": CORES,
    }
    assert runs["svc_set"].err == ""


def test_read_current_is_8(runs: Runs) -> None:
    assert bindings(runs["svc_json_current"]) == [{"c": integer_binding(8)}]
    assert runs["svc_json_current"].err == ""


def test_read_as_of_tx1_is_4(runs: Runs) -> None:
    assert bindings(runs["svc_json_tx1"]) == [{"c": integer_binding(4)}]


def test_read_at_valid_time_is_4_as_csv(runs: Runs) -> None:
    at_april = ok(runs["svc_csv_valid_at"])
    assert at_april.out == "c\r\n4\r\n"  # W3C SPARQL CSV: header row, CRLF line ends
    assert list(csv.reader(io.StringIO(at_april.out, newline=""))) == [["c"], ["4"]]
    assert at_april.err == ""


def test_export_defaults_to_sorted_ntriples(runs: Runs) -> None:
    export = ok(runs["svc_export_nt"])
    assert export.out == f'<{SVC}> <{CORES}> "8"^^<{XSD_INTEGER}> .\n'
    assert export.err == ""


def test_export_turtle(runs: Runs) -> None:
    export = ok(runs["svc_export_turtle"])
    graph = Graph().parse(data=export.out, format="turtle")
    assert set(graph) == {(URIRef(SVC), URIRef(CORES), Literal("8", datatype=URIRef(XSD_INTEGER)))}
    assert export.err == ""


def test_unravel_tx1(runs: Runs) -> None:
    assert runs["svc_unravel_tx1"].json() == {
        "facts": [
            {
                "entity": SVC,
                "predicate": CORES,
                "value": 4,
                "valid_from": "2026-04-01T00:00:00Z",
                "valid_to": "2026-05-01T00:00:00Z",
                "tx": 1,
                "retracted_tx": 2,
            }
        ],
        "count": 1,
    }
    assert runs["svc_unravel_tx1"].err == ""


def test_stats(runs: Runs) -> None:
    assert runs["svc_stats_after"].json() == {"facts": 1, "entities": 1, "predicates": 1}
    assert runs["svc_stats_after"].err == ""


def test_what_the_cli_wrote_reads_back_through_the_api(runs: Runs) -> None:
    eight = [{"c": Literal("8", datatype=URIRef(XSD_INTEGER))}]
    with quipu.open(str(runs.notes["svc_db"])) as kb:
        assert kb.query(CORES_QUERY) == eight
        assert kb.query(CORES_QUERY, valid_at="2026-05-15T00:00:00Z") == eight
        assert kb.query(CORES_QUERY, valid_at="2026-03-01T00:00:00Z") == []
        # Both axes: at tx 1 the closure by tx 2 was unknown, so June still shows 4 (DM §6.2).
        assert kb.query(CORES_QUERY, valid_at="2026-06-01T00:00:00Z", as_of_tx=1) == [
            {"c": Literal("4", datatype=URIRef(XSD_INTEGER))}
        ]
        assert [t["source"] for t in kb.transactions()["transactions"]] == ["knot:anonymous", "set:anonymous"]


# -- knot from stdin, --format nt, retract --predicate --------------------------------------------


def test_knot_from_stdin_as_ntriples(runs: Runs) -> None:
    out = runs["job_knot"].json()
    assert (out["tx_id"], out["count"], out["claims"]) == (1, 3, 3)
    assert out["valid_from"] == "2025-12-31T23:00:00Z"  # offset applied (DM §6.1)


def test_retract_one_predicate(runs: Runs) -> None:
    assert runs["job_retract"].json() == {"tx_id": 2, "retracted": 2, "entity": EX + "job"}
    assert ok(runs["job_export"]).out == f'<{EX}job> <{EX}name> "build \\"nightly\\" ☃" .\n'
    with quipu.open(str(runs.notes["job_db"])) as kb:
        facts = kb.unravel(valid_at="2026-01-15T00:00:00Z")["facts"]
    assert sorted((f["predicate"], f["value"], f["retracted_tx"]) for f in facts) == [
        (EX + "name", 'build "nightly" ☃', None),
        (EX + "runs", EX + "cd", 2),
        (EX + "runs", EX + "ci", 2),
    ]
    assert all(f["valid_to"] == "2026-02-01T00:00:00Z" for f in facts if f["retracted_tx"])


# -- refusals ----------------------------------------------------------------------------------


def test_malformed_turtle_is_refused_and_changes_nothing(runs: Runs) -> None:
    refused(runs["svc_bad_turtle"], "RDF parse error")
    assert ok(runs["svc_export_after"]).out == ok(runs["svc_export_nt"]).out
    assert runs["svc_stats_after"].json() == {"facts": 1, "entities": 1, "predicates": 1}
    # DM §16.1: a refused write leaves the database byte-for-byte unchanged.
    assert runs.notes["svc_digest_after"] == runs.notes["svc_digest_before"]
    assert runs.notes["svc_listing_after"] == runs.notes["svc_listing_before"]
    with quipu.open(str(runs.notes["svc_db"])) as kb:
        assert kb.transactions()["count"] == 2


def test_malformed_timestamp_is_refused_naming_valid_from(runs: Runs) -> None:
    refused(runs["svc_bad_timestamp"], "valid_from", "2026-04-01")


def test_unknown_input_format_is_refused(runs: Runs) -> None:
    refused(runs["svc_bad_format"], "unknown input format", "bogus")


def test_unravel_needs_tx_or_valid_at(runs: Runs) -> None:
    refused(runs["svc_unravel_no_point"], "tx", "valid_at")


def test_error_message_is_one_line(runs: Runs) -> None:
    result = runs["svc_bad_timestamp"]
    assert result.code == 2
    assert len(result.message) > 80
    assert result.err.strip().count("\n") == 0, result.err


# A few more refusals and output details run the same typer app in-process (CliRunner keeps
# stdout and stderr apart), which costs milliseconds instead of an interpreter start-up.


def invoke(*args: str) -> Run:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return Run(args, 1, result.stdout, result.stderr + f"\nTraceback: {result.exception!r}")
    return Run(args, result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def small_db(tmp_path: Path) -> str:
    db = tmp_path / "small.db"
    with quipu.open(str(db)) as kb:
        kb.knot(SVC_TTL, valid_from="2026-04-01T00:00:00Z")
        kb.knot(f'<{EX}m> <{EX}t> "[bold]a[/]b" .', "nt")
    return str(db)


def test_unknown_read_format_is_refused(small_db: str) -> None:
    refused(
        invoke("read", CORES_QUERY, "--format", "yaml", "--db", small_db), "unknown output format", "yaml"
    )


def test_unknown_export_format_is_refused(small_db: str) -> None:
    refused(invoke("export", "--format", "rdfxml", "--db", small_db), "unknown export format", "rdfxml")


def test_read_table_keeps_the_row_count_off_stdout(small_db: str) -> None:
    table = ok(invoke("read", CORES_QUERY, "--db", small_db))
    assert f'"4"^^<{XSD_INTEGER}>' in table.out
    assert "row(s)" not in table.out
    assert "1 row(s)" in table.err


def test_error_messages_are_printed_verbatim(small_db: str) -> None:
    refused(invoke("retract", "[/]not-an-iri", "--db", small_db), "[/]not-an-iri")


def test_table_output_shows_literals_verbatim(small_db: str) -> None:
    table = ok(invoke("read", f"SELECT ?o WHERE {{ <{EX}m> <{EX}t> ?o }}", "--db", small_db))
    assert "[bold]a[/]b" in table.out


# -- where the store comes from: QUIPU_STORE__DB and quipu.toml ------------------------------------


def test_store_from_environment_variable(runs: Runs) -> None:
    env_dir, _, _ = runs.notes["config_dirs"]
    assert runs["cfg_env"].json() == {"facts": 1, "entities": 1, "predicates": 1}
    assert listing(env_dir) == ([] if on_postgres() else ["from-env.db"])  # no default quipu.db


def test_store_from_quipu_toml_in_the_working_directory(runs: Runs) -> None:
    _, toml_dir, _ = runs.notes["config_dirs"]
    assert runs["cfg_toml"].json() == {"facts": 2, "entities": 2, "predicates": 1}
    assert "quipu.db" not in listing(toml_dir)


def test_environment_beats_quipu_toml(runs: Runs) -> None:
    _, _, both_dir = runs.notes["config_dirs"]
    assert runs["cfg_env_over_toml"].json() == {"facts": 1, "entities": 1, "predicates": 1}
    assert listing(both_dir) == ["quipu.toml"]


def test_config_flag_names_the_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("QUIPU_STORE__DB", raising=False)
    (tmp_path / "other.toml").write_text('[quipu.store]\ndb = "from-flag.db"\n', encoding="utf-8")
    run = invoke("stats", "--config", "other.toml")
    assert run.code == 0, str(run)
    assert json.loads(run.out) == {"facts": 0, "entities": 0, "predicates": 0}
    assert (tmp_path / "from-flag.db").exists() and not (tmp_path / "quipu.db").exists()


def test_missing_config_file_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    refused(invoke("stats", "--config", "nope.toml"), "config file not found", "nope.toml")
    assert list(tmp_path.iterdir()) == []
