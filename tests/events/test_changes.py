"""The change feed (tools-core §1.10 quipu_changes; DM §5, §11.3) over REST and in process, on a
real store of either backend: one test per numbered rule, then capture modes, values, retraction
bookkeeping, graph filters, refusals and the record cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.errors import InvalidField
from quipu.events.changes import changes_page
from quipu.store import changes as store_changes
from quipu.store import graph_facts
from quipu.store.values import TAG_BYTES
from quipu.store.writes import open_transaction
from tests.rest.support import kb_of, problem, raw, serve

EX = "http://ex.org/"
G = EX + "g"
ROOT_IRI = "urn:quipu:graph:root"
META_IRI = "urn:quipu:graph:meta"
XSD = "http://www.w3.org/2001/XMLSchema#"
T0 = "2026-01-01T00:00:00Z"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def post(client: TestClient, route: str, **body: Any) -> dict[str, Any]:
    response = client.post(route, json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def knot(client: TestClient, turtle: str, **fields: Any) -> int:
    """Assert a Turtle document; the id of the transaction it wrote."""
    return int(post(client, "/knot", turtle=turtle, **fields)["tx_id"])


def page(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/changes", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def txs(body: dict[str, Any]) -> list[int]:
    """The distinct transactions of a page, in order."""
    return list(dict.fromkeys(r["tx"] for r in body["records"]))


def brief(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(tx, sequence, op, entity, attribute) of every record, entity and attribute shortened."""
    return [
        (r["tx"], r["sequence"], r["op"], r["entity"].removeprefix(EX), r["attribute"].removeprefix(EX))
        for r in body["records"]
    ]


def create_graph(client: TestClient, iri: str) -> None:
    post(client, "/graph/create", graph=iri)


# -- rule 1: whole transactions; limit counts transactions ----------------------------------------


def test_rule1_a_page_holds_whole_transactions_and_limit_counts_transactions(client: TestClient) -> None:
    t1 = knot(client, f"<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}q> 2 . <{EX}b> <{EX}p> 3 .")
    t2 = knot(client, f"<{EX}c> <{EX}p> 4 .")
    t3 = knot(client, f"<{EX}d> <{EX}p> 5 . <{EX}d> <{EX}q> 6 .")
    first = page(client, limit=1)
    assert txs(first) == [t1] and len(first["records"]) == 3  # three rows, one transaction
    assert [r["sequence"] for r in first["records"]] == [0, 1, 2]
    second = page(client, since=first["next_tx"], limit=2)
    assert txs(second) == [t2, t3] and len(second["records"]) == 3
    assert second["next_tx"] == t3


def test_rule1_paging_through_the_log_reads_every_row_once(client: TestClient) -> None:
    for i in range(7):
        knot(client, "".join(f"<{EX}s{i}> <{EX}p{j}> {j} . " for j in range(i % 3 + 1)))
    seen: list[tuple[Any, ...]] = []
    cursor = 0
    while True:
        body = page(client, since=cursor, limit=2)
        if not body["records"]:
            break
        seen += brief(body)
        cursor = body["next_tx"]
    every = page(client, limit=100)
    assert seen == brief(every) and len(seen) == sum(i % 3 + 1 for i in range(7))


# -- rule 2: next_tx -----------------------------------------------------------------------------------


def test_rule2_an_empty_page_keeps_the_cursor_and_it_never_moves_backwards(client: TestClient) -> None:
    t1 = knot(client, f"<{EX}a> <{EX}p> 1 .")
    assert page(client)["next_tx"] == t1
    for since in (t1, t1 + 5, 2**63 - 1):
        body = page(client, since=since)
        assert body["records"] == [] and body["next_tx"] == since
        assert page(client, since=body["next_tx"])["next_tx"] == since  # polling is a fixpoint


def test_rule2_an_empty_store_has_no_watermark(client: TestClient) -> None:
    assert page(client) == {
        "records": [],
        "next_tx": 0,
        "watermark_tx": 0,
        "watermark_timestamp": None,
        "capture": "new_values",
    }


# -- rule 3: the watermark ignores the graph filter --------------------------------------------------


def test_rule3_the_watermark_is_the_whole_stores_newest_transaction(client: TestClient) -> None:
    create_graph(client, G)
    tg = knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G)
    troot = knot(client, f"<{EX}b> <{EX}p> 2 .", timestamp="2027-03-04T05:06:07Z")
    scoped = page(client, graph=G)
    assert txs(scoped) == [tg]
    assert (scoped["watermark_tx"], scoped["watermark_timestamp"]) == (troot, "2027-03-04T05:06:07Z")
    # Nothing in scope changed, yet the watermark moved: an idle scope, not a stuck writer.
    idle = page(client, graph=G, since=tg)
    assert idle["records"] == [] and idle["next_tx"] == tg and idle["watermark_tx"] == troot


# -- rule 4: records are physical rows ----------------------------------------------------------------


def test_rule4_a_second_owner_appears_as_an_assert_though_no_event_is_emitted(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", source="alpha")
    events_before = kb_of(client).events()
    t2 = knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", source="beta")  # already visible
    assert kb_of(client).events() == events_before  # ownership only: no semantic event
    body = page(client, since=t2 - 1)
    assert [(r["tx"], r["op"], r["source"], r["value"]) for r in body["records"]] == [
        (t2, "assert", "beta", {"ref": EX + "b"})
    ]


def test_rule4_a_transaction_that_wrote_no_rows_does_not_appear(client: TestClient) -> None:
    t1 = knot(client, f"<{EX}a> <{EX}p> 1 .", source="alpha")
    empty = knot(client, f"<{EX}a> <{EX}p> 1 .", source="alpha")  # idempotent: a row-less transaction
    assert empty > t1 and raw(client, "SELECT COUNT(*) FROM facts WHERE tx = ?", empty) == [(0,)]
    body = page(client)
    assert txs(body) == [t1] and body["next_tx"] == t1 and body["watermark_tx"] == empty
    assert page(client, since=t1)["records"] == []


# -- rule 5: per-entity commit order -------------------------------------------------------------------


def test_rule5_records_arrive_in_transaction_then_write_order(client: TestClient) -> None:
    knot(client, f'<{EX}a> <{EX}status> "new" . <{EX}b> <{EX}status> "new" .')
    post(client, "/set", entity=EX + "a", predicate=EX + "status", value="open")
    post(client, "/set", entity=EX + "b", predicate=EX + "status", value="open")
    post(client, "/retract", entity=EX + "a", predicate=EX + "status")
    post(client, "/set", entity=EX + "a", predicate=EX + "status", value="closed")
    physical = raw(
        client,
        "SELECT f.tx, e.iri, f.op FROM facts f JOIN terms e ON e.id = f.e ORDER BY f.tx, f.id",
    )
    ops = {0: "retract", 1: "assert"}
    body = page(client)
    assert [(r["tx"], r["entity"], r["op"]) for r in body["records"]] == [
        (tx, e, ops[op]) for tx, e, op in physical
    ]
    a = [(r["op"], r.get("value")) for r in body["records"] if r["entity"] == EX + "a"]
    assert a == [
        ("assert", "new"),
        ("retract", None),
        ("assert", "open"),
        ("retract", None),
        ("assert", "closed"),
    ]


# -- rule 6: an exact graph filter ---------------------------------------------------------------------


def _companion_write(client: TestClient, graph: str, subject: str) -> int:
    """What the reasoner does: a transaction of its own into ``graph``'s companion."""
    db = kb_of(client).db
    with db.write() as ctx:
        gid = db.terms.intern(ctx, (graph + "#inferred",))[graph + "#inferred"]
        tx = open_transaction(ctx, timestamp=T0, actor="reasoner", source="reasoner:r1", graph=gid)
        graph_facts.assert_triples(db, ctx, tx, [(subject, EX + "derived", EX + "x")], T0)
    return tx.id


def test_rule6_the_graph_filter_is_exact_and_excludes_the_inferred_companion(client: TestClient) -> None:
    create_graph(client, G)
    tg = knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G)
    tc = _companion_write(client, G, EX + "a")
    troot = knot(client, f"<{EX}r> <{EX}p> 1 .")
    assert txs(page(client, graph=G)) == [tg]
    companion = page(client, graph=G + "#inferred")  # a graph with rows, though not registered
    assert txs(companion) == [tc] and companion["records"][0]["graph"] == G + "#inferred"
    assert txs(page(client, graph=ROOT_IRI)) == [troot]
    everything = page(client)
    assert [(r["tx"], r["graph"]) for r in everything["records"] if r["tx"] in (tg, tc, troot)] == [
        (tg, G),
        (tc, G + "#inferred"),
        (troot, "ROOT"),
    ]


def test_the_root_alias_reads_root_alone(client: TestClient) -> None:
    create_graph(client, G)
    knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G)
    troot = knot(client, f"<{EX}b> <{EX}p> 2 .")
    body = page(client, graph=ROOT_IRI)
    assert txs(body) == [troot] and {r["graph"] for r in body["records"]} == {"ROOT"}


# -- capture modes ----------------------------------------------------------------------------------


@pytest.fixture
def history(client: TestClient) -> tuple[int, int, int]:
    """tx1 asserts :a :p 1 and :a :q "x"; tx2 sets :a :p 2 (a retraction and an assert); tx3 adds :a :r."""
    t1 = knot(client, f'<{EX}a> <{EX}p> 1 . <{EX}a> <{EX}q> "x" .')
    t2 = int(post(client, "/set", entity=EX + "a", predicate=EX + "p", value={"int": 2})["tx_id"])
    t3 = knot(client, f"<{EX}a> <{EX}r> <{EX}b> .")
    return t1, t2, t3


def retract_record(body: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [r for r in body["records"] if r["op"] == "retract"]
    assert len(found) == 1, found
    return found[0]


def test_new_values_withholds_the_retracted_value(client: TestClient, history: tuple[int, int, int]) -> None:
    body = page(client)
    record = retract_record(body)
    assert record["tx"] == history[1] and record["attribute"] == EX + "p"
    assert "old_value" not in record and "value" not in record and "row" not in record
    assert (record["closed_claims"], record["still_visible"]) == (1, False)
    assert all("value" in r and "old_value" not in r for r in body["records"] if r["op"] == "assert")


def test_old_and_new_values_carries_the_ended_value(
    client: TestClient, history: tuple[int, int, int]
) -> None:
    body = page(client, capture="old_and_new_values")
    assert body["capture"] == "old_and_new_values"
    record = retract_record(body)
    assert record["old_value"] == 1 and "value" not in record and "row" not in record


def test_new_row_is_the_entitys_state_as_of_each_transaction(
    client: TestClient, history: tuple[int, int, int]
) -> None:
    t1, t2, t3 = history
    rows = {r["tx"]: r["row"] for r in page(client, capture="new_row")["records"]}
    assert rows[t1] == {EX + "p": 1, EX + "q": "x"}
    assert rows[t2] == {EX + "p": 2, EX + "q": "x"}
    assert rows[t3] == {EX + "p": 2, EX + "q": "x", EX + "r": {"ref": EX + "b"}}
    assert retract_record(page(client, capture="new_row"))["old_value"] == 1
    # A later write never changes what an earlier record says: the row is as of its transaction.
    post(client, "/retract", entity=EX + "a")
    assert {r["tx"]: r["row"] for r in page(client, capture="new_row", limit=3)["records"]} == rows


def test_new_row_lists_every_value_of_a_many_valued_attribute_once(client: TestClient) -> None:
    knot(client, f'<{EX}a> <{EX}tag> "x" , "y" .', source="alpha")
    knot(client, f'<{EX}a> <{EX}tag> "x" .', source="beta")  # a second claim, one statement
    records = page(client, capture="new_row")["records"]
    assert records[-1]["row"] == {EX + "tag": ["x", "y"]}


def test_an_unknown_capture_is_refused_naming_the_field(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> 1 .")
    for capture in ("NEW_VALUES", "", "full", "new_values "):
        body = problem(client.get("/changes", params={"capture": capture}), "invalid_field")
        assert body["error"] == "capture must be new_values, old_and_new_values, or new_row"
        assert body["field"] == "capture"


# -- values ----------------------------------------------------------------------------------------------


def test_values_wrap_references_and_keep_the_literal_forms(client: TestClient) -> None:
    knot(
        client,
        f'@prefix xsd: <{XSD}> . <{EX}a> <{EX}ref> <{EX}b> ; <{EX}str> "http://ex.org/b" ; '
        f'<{EX}int> 7 ; <{EX}dbl> "2.5"^^xsd:double ; <{EX}bool> true ; <{EX}lang> "hola"@es ; '
        f'<{EX}date> "2026-01-01"^^xsd:date ; <{EX}blank> [ <{EX}p> 1 ] .',
    )
    got = {
        r["attribute"].removeprefix(EX): r["value"]
        for r in page(client)["records"]
        if r["entity"] == EX + "a"
    }
    blank = got.pop("blank")
    assert got == {
        "ref": {"ref": EX + "b"},
        "str": "http://ex.org/b",  # a string that looks like an IRI stays a string
        "int": 7,
        "dbl": 2.5,
        "bool": True,
        "lang": {"value": "hola", "lang": "es"},
        "date": {"value": "2026-01-01", "datatype": XSD + "date"},
    }
    assert isinstance(blank, dict) and blank["ref"].startswith("_:")


def test_raw_bytes_are_reported_by_length(client: TestClient) -> None:
    db = kb_of(client).db
    with db.write() as ctx:
        tx = open_transaction(ctx, timestamp=T0, actor=None, source="test", graph=0)
        graph_facts.assert_triples(
            db, ctx, tx, [(EX + "a", EX + "blob", bytes([TAG_BYTES]) + b"\x00\x01\x02")], T0
        )
    (record,) = page(client)["records"]
    assert record["value"] == {"bytes_len": 3}
    assert page(client, capture="new_row")["records"][0]["row"] == {EX + "blob": {"bytes_len": 3}}


# -- retraction bookkeeping ------------------------------------------------------------------------


def test_a_retraction_by_one_of_two_owners_leaves_the_statement_visible(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", replace_snapshot=True, snapshot="one")
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", source="two")
    t3 = knot(client, f"<{EX}c> <{EX}p> <{EX}d> .", replace_snapshot=True, snapshot="one")  # drops :a :p :b
    record = retract_record(page(client, since=t3 - 1, capture="old_and_new_values"))
    assert record["tx"] == t3 and record["source"] == "snapshot:one"
    assert (record["closed_claims"], record["still_visible"], record["old_value"]) == (
        1,
        True,
        {"ref": EX + "b"},
    )


def test_an_unscoped_retraction_closes_every_owners_claim(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", source="one")
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .", source="two")
    t3 = int(post(client, "/retract", entity=EX + "a", predicate=EX + "p")["tx_id"])
    record = retract_record(page(client, since=t3 - 1))
    assert (record["tx"], record["closed_claims"], record["still_visible"]) == (t3, 2, False)


def test_an_overlay_tombstone_is_a_tombstone_record_with_its_value(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> <{EX}b> .")
    post(client, "/overlay/create", overlay=EX + "ov")
    tx = int(
        post(client, "/overlay/write", overlay=EX + "ov", op="tombstone", subject=EX + "a",
             predicate=EX + "p", object={"iri": EX + "b"})["tx_id"]
    )  # fmt: skip
    body = page(client, graph=EX + "ov")
    assert [(r["tx"], r["op"], r["graph"], r["value"]) for r in body["records"]] == [
        (tx, "tombstone", EX + "ov", {"ref": EX + "b"})
    ]


# -- record fields and refusals ------------------------------------------------------------------


def test_a_record_carries_its_transactions_metadata(client: TestClient) -> None:
    tx = knot(
        client, f"<{EX}a> <{EX}p> 1 .", actor="ingest", source="feed:test", timestamp="2026-04-03T00:00:00Z"
    )
    assert page(client)["records"] == [
        {
            "tx": tx,
            "sequence": 0,
            "timestamp": "2026-04-03T00:00:00Z",
            "actor": "ingest",
            "source": "feed:test",
            "op": "assert",
            "graph": "ROOT",
            "entity": EX + "a",
            "attribute": EX + "p",
            "value": 1,
        }
    ]


def test_an_unknown_graph_is_refused(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> 1 .")
    for graph in (EX + "nowhere", EX + "a"):  # never interned; interned but not a graph
        body = problem(client.get("/changes", params={"graph": graph}), "unknown_graph")
        assert body["error"] == f"unknown graph IRI: {graph}" and body["field"] == "graph"
    assert problem(client.get("/changes", params={"graph": ""}), "invalid_field")["field"] == "graph"


@pytest.mark.parametrize(
    "params, field",
    [
        ({"cursor": "1"}, "cursor"),
        ({"since": "-1"}, "since"),
        ({"since": "abc"}, "since"),
        ({"since": str(2**63)}, "since"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1.5"}, "limit"),
    ],
)
def test_strict_parameters(client: TestClient, params: dict[str, str], field: str) -> None:
    response = client.get("/changes", params=params)
    assert response.status_code == 400 and response.json()["field"] == field, response.text


def test_a_large_limit_is_capped_not_refused(client: TestClient) -> None:
    knot(client, f"<{EX}a> <{EX}p> 1 .")
    assert len(page(client, limit=10**6)["records"]) == 1


def test_a_registered_graph_without_rows_reads_as_an_empty_page(client: TestClient) -> None:
    create_graph(client, G)
    t1 = knot(client, f"<{EX}a> <{EX}p> 1 .")
    body = page(client, graph=G)
    assert body["records"] == [] and body["next_tx"] == 0 and body["watermark_tx"] == t1


# -- the domain function and the record cap -----------------------------------------------------------


def test_the_domain_function_checks_and_clamps(client: TestClient) -> None:
    db = kb_of(client).db
    for i in range(3):
        knot(client, f"<{EX}s{i}> <{EX}p> {i} .")
    assert len(txs(changes_page(db, limit=0))) == 1  # clamped up to 1
    assert len(txs(changes_page(db, limit=10**9))) == 3
    for kwargs, field in (
        ({"since": -1}, "since"),
        ({"since": True}, "since"),
        ({"limit": "5"}, "limit"),
        ({"capture": None}, "capture"),
        ({"graph": 5}, "graph"),
    ):
        with pytest.raises(InvalidField) as caught:
            changes_page(db, **kwargs)
        assert caught.value.field == field


def test_a_page_stops_at_the_record_budget_but_keeps_its_first_transaction_whole(client: TestClient) -> None:
    db = kb_of(client).db
    big = knot(client, "".join(f"<{EX}big> <{EX}p{j}> {j} . " for j in range(5)))
    small = [knot(client, f"<{EX}s{i}> <{EX}p> 1 . <{EX}s{i}> <{EX}q> 2 .") for i in range(3)]

    def read(since: int) -> list[int]:
        body = store_changes.read_page(
            db, since=since, limit=100, capture="new_values", graph=None, max_records=4
        )
        return txs(body)

    assert read(0) == [big]  # five records, over the budget of four, yet whole
    assert read(big) == small[:2]  # two transactions of two: a third would make six
    assert read(small[1]) == small[2:]


# -- label floors and frozen graphs -------------------------------------------------------------------

FLOOR = {"min_freshness": "recomputing"}


def test_the_label_floor_applies_to_each_graph_a_page_reads(tmp_path: Path) -> None:
    with serve(tmp_path, labels=FLOOR) as client:
        troot = knot(client, f"<{EX}a> <{EX}p> 1 .")
        tlabel = int(post(client, "/graph/label", graph=ROOT_IRI, timestamp=T0, freshness="fresh")["tx_id"])
        create_graph(client, G)  # declares no freshness: below the floor
        tg = knot(client, f"<{EX}b> <{EX}p> 2 .", graph=G)
        assert txs(page(client, graph=ROOT_IRI)) == [troot]
        assert txs(page(client, limit=1)) == [troot]  # the page reads ROOT alone: it passes
        # The label itself is a meta-graph row, and the meta-graph (which cannot be labelled)
        # falls below every floor: an unfiltered page that reaches it is refused, naming it.
        body = problem(client.get("/changes", params={"since": troot, "limit": 1}), "label_floor")
        assert f"<{META_IRI}>" in body["error"], body
        for params in ({"graph": G}, {"since": tlabel}):
            body = problem(client.get("/changes", params=params), "label_floor")
            assert f"<{G}>" in body["error"] and "declares no freshness" in body["error"], body
        assert page(client, since=tg)["records"] == []  # past it, nothing is read: nothing refused


@pytest.mark.sqlite_only
def test_a_frozen_graph_keeps_its_history_in_the_feed_and_new_row_is_refused(client: TestClient) -> None:
    create_graph(client, G)
    knot(client, f"<{EX}a> <{EX}p> 1 .", graph=G)
    knot(client, f"<{EX}b> <{EX}p> 2 .")
    before = {"all": page(client), "graph": page(client, graph=G)}
    assert before["graph"]["records"]
    post(client, "/graph/freeze", graph=G, timestamp=T0)
    after = {"all": page(client), "graph": page(client, graph=G)}
    # The freeze wrote its own transactions (lifecycle facts in the meta-graph): compare the rest.
    assert [r for r in after["all"]["records"] if r["tx"] <= before["all"]["next_tx"]] == before["all"][
        "records"
    ]
    assert after["graph"]["records"] == before["graph"]["records"]
    body = problem(client.get("/changes", params={"capture": "new_row"}), "archives_mounted")
    assert body["field"] == "capture"
