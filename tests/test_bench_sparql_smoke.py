"""The SPARQL benchmark runs end to end on a tiny data set (so it cannot rot unnoticed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from bench import postgres, sparql
from tests import backends


@pytest.mark.backend_independent
def test_sparql_benchmark_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "3000", "--repeat", "1", "--data-dir", str(tmp_path)]
    status = sparql.main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # row-count mismatches are listed as FAILED lines
    lines = captured.out.splitlines()
    for name in sparql.ALL_NAMES:
        assert any(line.startswith(f"| {name} ") for line in lines), f"no table row for {name}"
    assert "Row counts: quipu and rdflib agree with pyoxigraph" in captured.out


@pytest.mark.backend_independent
def test_sparql_benchmark_only_and_skip_rdflib(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--triples", "3000", "--repeat", "1", "--data-dir", str(tmp_path), "--only", "Q6,T3"]
    assert sparql.main([*argv, "--skip-rdflib"]) == 0
    main, _, graphs = capsys.readouterr().out.partition("## Q1-Q6 over a dataset of 3 named graphs")
    rows = [line for line in main.splitlines() if line.startswith("| ")]
    assert [row.split()[1] for row in rows[1:]] == ["Q6", "T3"]  # rows[0] is the header
    # Q6 again over the three-graph dataset, plain and with a label floor (same rows as ROOT)
    rows = [line for line in graphs.splitlines() if line.startswith("| ")]
    assert [row.split()[1] for row in rows[1:]] == ["Q6"]


@pytest.mark.backend_independent
def test_sparql_benchmark_explain_needs_db(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        sparql.main(["--triples", "3000", "--data-dir", str(tmp_path), "--explain"])
    assert exit_info.value.code == 2


@pytest.mark.backend_independent
def test_sparql_benchmark_db_refuses_a_non_postgres_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--triples", "3000", "--data-dir", str(tmp_path), "--db", f"sqlite:///{tmp_path / 'kb.db'}"]
    assert sparql.main(argv) == 2
    assert "--db wants a postgresql:// URL" in capsys.readouterr().err


needs_postgres = pytest.mark.skipif(
    not backends.on_postgres(), reason="PostgreSQL half: set QUIPU_TEST_DB=postgresql://..."
)


def _databases(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {str(name) for (name,) in conn.exec_driver_sql("SELECT datname FROM pg_database")}
    finally:
        engine.dispose()


@needs_postgres
def test_sparql_benchmark_on_postgres_prints_pg_columns_and_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = backends.server_url()
    assert url is not None
    only = "Q1,Q4,Q5,Q6,T1"
    argv = ["--triples", "3000", "--repeat", "1", "--data-dir", str(tmp_path), "--skip-rdflib"]
    status = sparql.main([*argv, "--only", only, "--db", url, "--explain"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]  # a PG row count unlike pyoxigraph's is a FAILED line
    # the main table (the named-graph table after it runs on SQLite only)
    lines = captured.out.partition("## Q1-Q6 over a dataset of 3 named graphs")[0].splitlines()
    header = next(line for line in lines if line.startswith("| query "))
    for column in ("SQLite ms", "PG ms", "PG plan", "pyoxigraph ms", "PG/SQLite", "PG target"):
        assert column in header
    rows = [line for line in lines if line.startswith("| Q") or line.startswith("| T")]
    assert [row.split()[1] for row in rows] == only.split(",")
    pg_plan = header.split("|").index(" PG plan ")
    assert all(row.split("|")[pg_plan].strip() == "sql" for row in rows[:4])  # Q1-Q6 compile
    assert "Row counts: quipu (SQLite and PostgreSQL) and rdflib agree with pyoxigraph" in captured.out
    for name in ("Q1", "Q4", "Q5", "Q6"):
        assert f"## EXPLAIN (ANALYZE, BUFFERS) {name} on PostgreSQL" in captured.out
    assert captured.out.count("Execution Time:") == 4
    scratch = postgres.ScratchDatabase(url).name
    assert scratch not in _databases(url)  # dropped at the end


@needs_postgres
def test_sparql_benchmark_names_the_server_when_create_database_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = backends.server_url()
    assert url is not None
    role = f"quipu_bench_nocreate_{os.getpid()}"
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {role}")
            conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN NOCREATEDB")
        weak = make_url(url).set(username=role).render_as_string(hide_password=False)
        argv = ["--triples", "3000", "--data-dir", str(tmp_path), "--skip-rdflib", "--db", weak]
        assert sparql.main(argv) == 2
        err = capsys.readouterr().err
        assert f"PostgreSQL server {role}@" in err
        assert "refused CREATE DATABASE quipu_bench_" in err
        assert "permission denied" in err
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql(f"DROP ROLE IF EXISTS {role}")
        engine.dispose()


@needs_postgres
def test_scratch_database_is_dropped_when_the_run_fails() -> None:
    url = backends.server_url()
    assert url is not None
    import quipu

    scratch = postgres.ScratchDatabase(url, name=f"quipu_bench_fail_{os.getpid()}")
    with pytest.raises(RuntimeError, match="benchmark failed"), scratch:
        kb = quipu.open(scratch.url)  # left open: the drop must not wait for it
        kb.knot('<http://ex.org/a> <http://ex.org/b> "c" .', format="ntriples")
        assert scratch.name in _databases(url)
        raise RuntimeError("benchmark failed")
    assert scratch.name not in _databases(url)
    assert make_url(url).database in _databases(url)  # the URL's own database stays
