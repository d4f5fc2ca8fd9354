"""Deep freeze and thaw (tools-graphs-governance §1.4-§1.5): rules FZ-1..FZ-7 and TH-1..TH-4, the
round trip over a graph with retractions and several transactions, and the refusals. Packs are
SQLite files, so these run on SQLite; PostgreSQL refuses both tools (the last test)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

import quipu
from quipu.errors import StorageError
from quipu.store import archive_packs, vectors
from quipu.store.archive_packs import content_hash, driver, history_text
from quipu.store.database import Database
from tests.rest.support import kb_of, raw, serve

from .support import (
    EX,
    G1,
    G2,
    META_IRI,
    ROOT_IRI,
    T0,
    T1,
    T2,
    graph_rows,
    knot,
    ok,
    refused,
    rows,
    store_snapshot,
)

Q = "https://quipu.dev/ontology/"
G = EX + "runs/2026-08"
FROZEN_DS = "urn:quipu:dataset:frozen"
ALL = "SELECT ?s ?p ?o WHERE { ?s ?p ?o } ORDER BY ?s ?p ?o"
pytestmark = pytest.mark.sqlite_only


def update(client: TestClient, text: str) -> None:
    response = client.post("/update", content=text, headers={"Content-Type": "application/sparql-update"})
    assert response.status_code == 200, response.text


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """A graph with several transactions, a retraction, an edge and a literal, beside ROOT."""
    with serve(tmp_path) as c:
        ok(c, "/graph/create", graph=G, actor="ops")
        knot(c, f'<{EX}run1> <{EX}status> "ok" ; <{EX}of> <{EX}svc> .', graph=G)
        knot(c, f'<{EX}run2> <{EX}status> "failed" .', graph=G)
        update(c, f'DELETE DATA {{ GRAPH <{G}> {{ <{EX}run2> <{EX}status> "failed" }} }}')
        update(c, f'INSERT DATA {{ GRAPH <{G}> {{ <{EX}run2> <{EX}status> "retried" }} }}')
        knot(c, f'<{EX}svc> <{EX}name> "billing" .')
        ok(
            c,
            "/graph/label",
            graph=G,
            timestamp=T0,
            freshness="fresh",
            policy=["internal"],
            kind="operational",
        )
        yield c


def freeze(client: TestClient, graph: str = G, **fields: Any) -> dict[str, Any]:
    return ok(client, "/graph/freeze", graph=graph, timestamp=T1, **fields)


def thaw(client: TestClient, graph: str = G) -> dict[str, Any]:
    return ok(client, "/graph/thaw", graph=graph, timestamp=T2)


def live_hash(client: TestClient, graph: str = G) -> str:
    kb = kb_of(client)
    with kb.db.read() as conn:
        gid = kb.db.terms.lookup(conn, (graph,))[graph]
        return content_hash(history_text(driver(conn).cursor(), gid)[0])


def observe(client: TestClient) -> dict[str, Any]:
    """Everything the round trip must keep identical."""
    return {
        "rows": rows(client, ALL, graph=G, verbose=True),
        "valid_at": rows(client, ALL, graph=G, valid_at="2030-01-01T00:00:00Z", verbose=True),
        "export": client.post("/export", json={"graph": G, "format": "ntriples"}).text,
        "history": [ok(client, "/entity_history", iri=EX + s) for s in ("run2", "svc")],
    }


def test_round_trip_keeps_everything_identical(client: TestClient) -> None:
    before, digest = observe(client), live_hash(client)
    assert len(before["rows"]) == 3  # run1 status + of, run2 retried
    out = freeze(client)
    assert out["content_hash"] == digest and out["graph"] == G
    assert out["facts"] == 5  # run1 x2, run2 "failed" and its retraction record, run2 "retried"
    assert raw(client, "SELECT COUNT(*) FROM facts WHERE g = (SELECT id FROM terms WHERE iri = ?)", G) == [
        (0,)
    ]
    assert observe(client) == before  # frozen: read from the pack at the same IRI
    refused(client, "/knot", "quipu_graph_thaw", turtle=f"<{EX}x> <{EX}p> 1 .", graph=G)  # FZ-2
    back = thaw(client)
    assert back["facts_restored"] == out["facts"]
    assert observe(client) == before
    assert live_hash(client) == digest  # TH-3: byte for byte
    knot(client, f"<{EX}x> <{EX}p> 1 .", graph=G)  # writable again


def test_fz1_readable_by_name_dataset_and_kind(client: TestClient) -> None:
    before = rows(client, ALL, graph=G, verbose=True)
    freeze(client)
    assert (
        rows(client, f"SELECT ?s ?p ?o FROM <{G}> WHERE {{ ?s ?p ?o }} ORDER BY ?s ?p ?o", verbose=True)
        == before
    )
    assert rows(client, ALL, graph=FROZEN_DS, verbose=True) == before
    text = f"SELECT ?s ?p ?o FROM <{FROZEN_DS}> WHERE {{ ?s ?p ?o }} ORDER BY ?s ?p ?o"
    assert rows(client, text, verbose=True) == before
    # include_kinds widens the default graph (ROOT here) with every archive graph
    widened = rows(client, ALL, include_kinds=["archive"], verbose=True)
    assert [r for r in widened if r["s"] != EX + "svc" or r["p"] != EX + "name"] == before
    # silence never widens: a plain query and GRAPH ?g do not see it
    assert rows(client, ALL, verbose=True) == [{"s": EX + "svc", "p": EX + "name", "o": "billing"}]
    assert rows(client, "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }") == []
    # and the compiled path answers it
    assert kb_of(client).query_result(ALL, graph=G).plan == "sql"


def test_gl4_a_frozen_graph_is_listed_as_an_archive(client: TestClient) -> None:
    freeze(client)
    (row,) = graph_rows(client, lifecycle="frozen")["graphs"]
    assert row["iri"] == G and row["lifecycle"] == "frozen"
    # freshness and policy carried, kind archive, durability backed
    assert row["labels"] == {
        "freshness": "fresh", "durability": "backed", "trust_rank": None, "trust_chain": None,
        "policy": "internal", "kind": "archive",
    }  # fmt: skip
    assert [g["iri"] for g in graph_rows(client, kind="archive")["graphs"]] == [G]


def test_freeze_writes_lifecycle_facts_and_the_pack_record(client: TestClient) -> None:
    out = freeze(client)
    meta = rows(client, f"SELECT ?p ?o WHERE {{ <{G}> ?p ?o }}", graph=META_IRI, verbose=True)
    facts = {(r["p"], r["o"]) for r in meta}
    assert {
        (Q + "lifecycleState", "frozen"),
        (Q + "frozenInto", out["content_hash"]),
        (Q + "frozenAt", T1),
    } <= facts
    assert raw(
        client, "SELECT graph_iri, alias, path, content_hash, frozen_at, thawed_at FROM frozen_packs"
    ) == [(G, out["alias"], out["pack"], out["content_hash"], T1, None)]
    assert ok(client, "/datasets", action="show", name=FROZEN_DS)["members"] == [{"graph": G, "ord": None}]
    sources = raw(client, "SELECT DISTINCT source FROM transactions WHERE source LIKE 'graph-freeze'")
    assert sources == [("graph-freeze",)]


def test_the_pack_is_a_standalone_store_verified_by_hash(client: TestClient, tmp_path: Path) -> None:
    out = freeze(client)
    pack = Path(out["pack"])
    assert pack.parent == tmp_path and pack.name == "fz_g2026_08.qpack.db" and out["alias"] == "fz_g2026_08"
    assert not Path(f"{pack}.building").exists() and not Path(f"{pack}-wal").exists()
    assert content_hash(archive_packs.pack_history(str(pack), G)[0]) == out["content_hash"]
    manifest = archive_packs.manifest(str(pack))
    assert manifest["pack_format"] == "2" and manifest["content_hash"] == out["content_hash"]
    assert manifest["source_graph"] == G and manifest["producer"]["tool"] == "quipu graph freeze"
    assert manifest["counts"]["facts"] == out["facts"] and manifest["counts"]["history"] is True
    # It opens as a quipu store of its own, its registry row labelled archive.
    with quipu.open(str(pack)) as archive:
        assert archive.query(f'ASK FROM <{G}> {{ <{EX}run2> <{EX}status> "retried" }}') is True
        (row,) = [g for g in archive.graphs.list()["graphs"] if g["iri"] == G]
        assert row["labels"]["kind"] == "archive" and row["labels"]["durability"] == "backed"
        assert row["labels"]["trust_rank"] is None


def test_fz3_transaction_time_travel_is_refused_while_mounted(client: TestClient) -> None:
    assert client.post("/query", json={"query": "ASK {}", "tx": 1}).status_code == 200
    freeze(client)
    for response in (
        client.post("/query", json={"query": "ASK {}", "tx": 1}),
        client.post("/unravel", json={"tx": 1}),
    ):
        assert response.status_code == 400 and response.json()["reason"] == "archives_mounted", response.text
    assert client.post("/query", json={"query": "ASK {}", "valid_at": T0}).status_code == 200
    # /graph's time travel [designed here] follows the rule, naming its own field
    response = client.post("/graph", json={"as_of_tx": 1})
    assert response.status_code == 400 and response.json()["reason"] == "archives_mounted", response.text
    assert response.json()["field"] == "as_of_tx" and "'as_of_tx'" in response.json()["error"]
    assert client.post("/graph", json={"valid_at": T0}).status_code == 200
    thaw(client)
    assert client.post("/query", json={"query": "ASK {}", "tx": 1}).status_code == 200
    assert client.post("/graph", json={"as_of_tx": 1}).status_code == 200


def test_fz4_a_missing_pack_stops_the_store_from_opening(client: TestClient, tmp_path: Path) -> None:
    out = freeze(client)
    location = str(kb_of(client).db.location)
    client.__exit__(None, None, None)
    os.rename(out["pack"], out["pack"] + ".moved")
    with pytest.raises(StorageError, match=out["pack"].replace(".", r"\.")):
        Database(location)
    os.rename(out["pack"] + ".moved", out["pack"])
    Database(location).close()


def test_fz5_a_reader_opened_before_the_freeze_sees_the_frozen_rows(
    client: TestClient, tmp_path: Path
) -> None:
    before = rows(client, ALL, graph=G, verbose=True)
    location = str(kb_of(client).db.location)
    with quipu.open(location) as other:  # another store handle: its own pooled readers
        assert len(other.query_result(ALL, graph=G).table) == 3
        freeze(client)
        assert len(other.query_result(ALL, graph=G).table) == len(before)
        assert rows(client, ALL, graph=G, verbose=True) == before
        thaw(client)
        assert len(other.query_result(ALL, graph=G).table) == len(before)


def test_fz6_freeze_keeps_embeddings_and_th4_restore_is_idempotent(client: TestClient) -> None:
    kb = kb_of(client)
    with kb.db.write() as ctx:
        run1 = kb.db.terms.lookup_in(ctx, (EX + "run1",))[EX + "run1"]
        vectors.write(ctx.conn, [(run1, "run1 ok", b"\x00" * 16)], T0)
    before = raw(client, "SELECT * FROM vectors")
    out = freeze(client)
    assert out["vectors"] == 1 and out["vectors_omitted"] is None
    assert raw(client, "SELECT * FROM vectors") == before
    assert thaw(client)["vectors_restored"] == 0  # insert-or-ignore: they never left
    assert raw(client, "SELECT * FROM vectors") == before


def test_fz7_a_pack_that_fails_verification_deletes_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = store_snapshot(client)
    monkeypatch.setattr(archive_packs, "pack_history", lambda path, iri: ("tampered\n", 1))
    out = refused(client, "/graph/freeze", "verification failed", graph=G, timestamp=T1)
    assert ".qpack.db" in out["error"]  # names the leftover pack
    assert store_snapshot(client) == before


def test_th1_thaw_restores_writability_and_records_it(client: TestClient) -> None:
    out = freeze(client)
    thaw(client)
    (row,) = [g for g in graph_rows(client)["graphs"] if g["iri"] == G]
    assert row["lifecycle"] is None
    assert row["labels"]["kind"] == "operational" and row["labels"]["durability"] == "backed"
    assert row["labels"]["freshness"] == "fresh" and row["labels"]["policy"] == "internal"
    live = rows(client, f"SELECT ?o WHERE {{ <{G}> <{Q}lifecycleState> ?o }}", graph=META_IRI)
    assert live == []  # the lifecycle fact is retracted (its history stays)
    ((thawed_at, path),) = raw(client, "SELECT thawed_at, path FROM frozen_packs")
    assert thawed_at == T2 and Path(path).exists()  # the pack stays on disk
    assert ok(client, "/datasets") == {"datasets": []}  # the frozen dataset went with its last member
    assert out["pack"] == path


def test_th2_a_failed_thaw_leaves_the_graph_frozen_and_readable(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = rows(client, ALL, graph=G, verbose=True)
    freeze(client)
    snapshot = store_snapshot(client)
    from quipu.store import graph_lifecycle

    def broken(*args: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(graph_lifecycle, "stamp_thawed", broken)
    with pytest.raises(RuntimeError):
        kb_of(client).graphs.thaw(graph=G, timestamp=T2)
    assert store_snapshot(client) == snapshot
    assert rows(client, ALL, graph=G, verbose=True) == before


def test_a_graph_frozen_again_gets_a_new_alias(client: TestClient) -> None:
    first = freeze(client)
    thaw(client)
    knot(client, f'<{EX}run3> <{EX}status> "ok" .', graph=G)
    second = ok(client, "/graph/freeze", graph=G, timestamp=T2)
    assert second["alias"] == first["alias"] + "_2" and second["pack"] != first["pack"]
    assert len(rows(client, ALL, graph=G)) == 4


@pytest.mark.parametrize(
    "graph, phrase",
    [
        (EX + "never", "unknown graph"),
        (EX + "svc", "interned but not registered"),
        (ROOT_IRI, "the default graph is the store, not a window"),
        (META_IRI, "meta-graph"),
        (EX + "scratch", "overlay"),
    ],
)
def test_freeze_refusals_write_nothing(client: TestClient, tmp_path: Path, graph: str, phrase: str) -> None:
    ok(client, "/overlay/create", overlay=EX + "scratch")
    before, files = store_snapshot(client), sorted(os.listdir(tmp_path))
    refused(client, "/graph/freeze", phrase, graph=graph, timestamp=T1)
    assert store_snapshot(client) == before and sorted(os.listdir(tmp_path)) == files


def test_a_second_freeze_and_a_thaw_of_an_unfrozen_graph_are_refused(client: TestClient) -> None:
    refused(client, "/graph/thaw", "is not frozen", graph=G, timestamp=T2)
    freeze(client)
    refused(client, "/graph/freeze", "already frozen", graph=G, timestamp=T2)


def test_an_existing_pack_path_is_never_overwritten(client: TestClient, tmp_path: Path) -> None:
    (tmp_path / "fz_g2026_08.qpack.db").write_bytes(b"someone else's file")
    before = store_snapshot(client)
    refused(client, "/graph/freeze", "already exists", graph=G, timestamp=T1)
    assert (tmp_path / "fz_g2026_08.qpack.db").read_bytes() == b"someone else's file"
    assert store_snapshot(client) == before


def test_out_dir_is_confined_to_the_archive_directory(client: TestClient, tmp_path: Path) -> None:
    (tmp_path / "packs").mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "escape").symlink_to(outside)
    before = store_snapshot(client)
    for out_dir in ("..", "packs/../..", str(outside), "escape", "/etc"):
        body = refused(
            client, "/graph/freeze", "outside the archive directory", graph=G, timestamp=T1, out_dir=out_dir
        )
        assert body["field"] == "out_dir"
    refused(client, "/graph/freeze", "not an existing directory", graph=G, timestamp=T1, out_dir="missing")
    assert store_snapshot(client) == before and os.listdir(outside) == []
    out = freeze(client, out_dir="packs")
    assert Path(out["pack"]).parent == tmp_path / "packs"


def test_archive_dir_setting_moves_the_root(tmp_path: Path) -> None:
    archive = tmp_path / "cold"
    archive.mkdir()
    with serve(tmp_path, graphs={"archive_dir": str(archive)}) as c:
        ok(c, "/graph/create", graph=G1)
        ok(c, "/graph/create", graph=G2)
        out = ok(c, "/graph/freeze", graph=G1, timestamp=T1)
        assert Path(out["pack"]).parent == archive.resolve()
        refused(
            c, "/graph/freeze", "outside the archive directory", graph=G2, timestamp=T1, out_dir=str(tmp_path)
        )


@pytest.mark.backend_independent
def test_an_in_memory_store_refuses_freeze_and_thaw() -> None:
    with quipu.open(":memory:") as kb:
        kb.graphs.create(G1)
        for tool in (kb.graphs.freeze, kb.graphs.thaw):
            with pytest.raises(Exception, match="needs a SQLite store on disk") as caught:
                tool(graph=G1, timestamp=T1)
            assert getattr(caught.value, "status", None) == 400
