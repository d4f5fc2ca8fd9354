"""``quipu_acquire`` and ``quipu_acquire_composed`` (tools-graphs-governance §4.6, §4.7): the lineage
check, which graphs may be acquired, request order (AQ-2), the hash of the exact bytes (AQ-1), the
transaction pin, all-or-nothing size bounds (AQ-3), strict fields, and for the composed tool the
census, its generation, providers (AC-1, AC-2) and the fence (AC-3). Freezing needs a SQLite file
store, so the tests that mount an archive are marked ``sqlite_only``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient

from quipu.api import KnowledgeBase
from quipu.errors import BadRequest
from quipu.sharing import acquire as acquiring
from quipu.store import share_state
from tests.backends import migrated_location
from tests.rest.support import kb_of, problem, serve

EX: Final = "http://ex.org/"
G1, G2, G3 = EX + "g1", EX + "g2", EX + "g3"
ROOT_IRI: Final = "urn:quipu:graph:root"
T1: Final = "2026-02-01T00:00:00Z"
CAP: Final = 8 * 1024 * 1024


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    """ROOT and two named graphs with a few statements each (a literal, an edge, a blank node)."""
    store = KnowledgeBase(migrated_location(tmp_path))
    store.knot(f'<{EX}s> <{EX}name> "root thing" .')
    for graph in (G1, G2):
        store.graphs.create(graph)
        store.knot(f'<{graph}/a> <{EX}p> <{graph}/b> ; <{EX}q> "v"@en ; <{EX}r> [ <{EX}k> 1 ] .', graph=graph)
    yield store
    store.close()


def lineage(kb: KnowledgeBase) -> str:
    with kb.db.read() as conn:
        return share_state.store_id(conn)


def head(kb: KnowledgeBase) -> int:
    with kb.db.read() as conn:
        return share_state.anchor(conn)[0]


def acquire(kb: KnowledgeBase, graphs: list[str], **fields: Any) -> dict[str, Any]:
    return kb.sharing.acquire(source_store_id=lineage(kb), graphs=graphs, **fields)


def composed(kb: KnowledgeBase, graphs: list[str], **fields: Any) -> dict[str, Any]:
    return kb.sharing.acquire_composed(source_store_id=lineage(kb), graphs=graphs, **fields)


def refusal(call: Any, reason: str, phrase: str) -> BadRequest:
    with pytest.raises(BadRequest) as caught:
        call()
    assert caught.value.reason == reason, caught.value.message
    assert phrase in caught.value.message, caught.value.message
    return caught.value


def freeze(kb: KnowledgeBase, graph: str) -> dict[str, Any]:
    if kb.db.file_path is None:
        pytest.skip("freeze needs a SQLite store on disk")
    return kb.graphs.freeze(graph=graph, timestamp=T1)


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def generation_of(census: list[dict[str, Any]]) -> str:
    """The generation, computed here from the spec's words rather than with the module's helper."""
    return sha256(json.dumps(census, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


# -- lineage --------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["acquire", "acquire_composed"])
def test_a_different_lineage_is_refused_before_anything_is_read(kb: KnowledgeBase, tool: str) -> None:
    call = getattr(kb.sharing, tool)
    error = refusal(
        lambda: call(source_store_id="urn:quipu:store:someone-else", graphs=[G1]),
        "lineage_mismatch",
        "lineage mismatch",
    )
    assert error.field == "source_store_id" and lineage(kb) in error.message


def test_the_lineage_is_checked_before_the_graphs(kb: KnowledgeBase) -> None:
    refusal(
        lambda: kb.sharing.acquire(source_store_id="urn:quipu:store:x", graphs=[EX + "nowhere"]),
        "lineage_mismatch",
        "lineage mismatch",
    )


# -- which graphs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [acquire, composed])
def test_an_unknown_graph_is_refused(kb: KnowledgeBase, tool: Any) -> None:
    refusal(lambda: tool(kb, [G1, EX + "nowhere"]), "unknown_graph", "unknown graph")


@pytest.mark.parametrize("tool", [acquire, composed])
def test_a_merely_interned_iri_is_refused_as_unregistered(kb: KnowledgeBase, tool: Any) -> None:
    kb.knot(f"<{EX}mentioned> <{EX}p> <{EX}o> .")  # interned as a subject, never registered
    refusal(lambda: tool(kb, [EX + "mentioned"]), "unknown_graph", "unregistered")


@pytest.mark.parametrize("tool", [acquire, composed])
def test_an_overlay_is_refused(kb: KnowledgeBase, tool: Any) -> None:
    kb.graphs.overlay_create(EX + "scratch", G1)
    refusal(lambda: tool(kb, [EX + "scratch"]), "not_acquirable", "overlay")


def test_a_frozen_graph_is_refused_by_plain_acquire(kb: KnowledgeBase) -> None:
    freeze(kb, G2)
    refusal(lambda: acquire(kb, [G2]), "not_acquirable", "frozen")


def test_root_is_named_by_its_urn(kb: KnowledgeBase) -> None:
    body = acquire(kb, [ROOT_IRI])
    assert [g["graph"] for g in body["graphs"]] == [ROOT_IRI]
    assert body["graphs"][0]["ntriples"] == f'<{EX}s> <{EX}name> "root thing" .\n'
    assert body["graphs"][0]["triples"] == 1


@pytest.mark.parametrize("tool", [acquire, composed])
def test_graphs_come_back_in_request_order(kb: KnowledgeBase, tool: Any) -> None:
    for order in ([G2, ROOT_IRI, G1], [G1, G2, ROOT_IRI]):
        assert [g["graph"] for g in tool(kb, order)["graphs"]] == order


@pytest.mark.parametrize(
    "graphs, phrase",
    [
        ([], "at least one"),
        ([G1, G2, G1], "unique"),
        ([""], "non-empty IRI"),
        (["not an iri"], "absolute IRI"),
    ],
)
@pytest.mark.parametrize("tool", [acquire, composed])
def test_the_graph_list_is_checked(kb: KnowledgeBase, tool: Any, graphs: list[str], phrase: str) -> None:
    error = refusal(lambda: tool(kb, graphs), "invalid_field", phrase)
    assert error.field == "graphs"


# -- the bytes and their hash -----------------------------------------------------------------------


def test_graph_hash_is_the_hash_of_the_exact_ntriples(kb: KnowledgeBase) -> None:
    g1, root = acquire(kb, [G1, ROOT_IRI])["graphs"]
    for entry, triples in ((g1, 4), (root, 1)):
        assert entry["graph_hash"] == sha256(entry["ntriples"])
        assert entry["triples"] == entry["ntriples"].count("\n") == triples


def test_the_ntriples_are_canonical_like_a_share(kb: KnowledgeBase) -> None:
    """AQ-1: the same canonical form as export.nt, so the same graph hashes the same way."""
    entry = acquire(kb, [G1])["graphs"][0]
    share = kb.sharing.share(scope={"kind": "graph", "value": G1}, no_shapes=True)
    assert entry["ntriples"] == share["files"]["export.nt"]
    assert entry["graph_hash"] == share["manifest"]["graph_hash"]
    assert "_:c14n0" in entry["ntriples"]  # the blank node was relabelled by RDFC-1.0


def test_an_empty_graph_is_the_empty_string(kb: KnowledgeBase) -> None:
    kb.graphs.create(G3)
    entry = acquire(kb, [G3])["graphs"][0]
    assert entry == {"graph": G3, "triples": 0, "graph_hash": sha256(""), "ntriples": ""}


def test_the_response_shape(kb: KnowledgeBase) -> None:
    body = acquire(kb, [G1])
    assert list(body) == ["source_store_id", "tx", "complete", "bytes", "graphs"]
    assert body["source_store_id"] == lineage(kb) and body["tx"] == head(kb) and body["complete"] is True
    assert list(body["graphs"][0]) == ["graph", "triples", "graph_hash", "ntriples"]


# -- the transaction pin ----------------------------------------------------------------------------


def test_a_pin_reads_the_graph_as_of_that_transaction(kb: KnowledgeBase) -> None:
    before = acquire(kb, [G1])
    pin = head(kb)
    kb.knot(f'<{G1}/c> <{EX}p> "later" .', graph=G1)
    kb.update(f"DELETE DATA {{ GRAPH <{G1}> {{ <{G1}/a> <{EX}p> <{G1}/b> }} }}")
    assert acquire(kb, [G1])["graphs"] != before["graphs"]  # the graph did change
    first, second = acquire(kb, [G1], tx=pin), acquire(kb, [G1], tx=pin)
    assert first["tx"] == pin and first["graphs"] == before["graphs"]
    assert json.dumps(first) == json.dumps(second)  # byte-identical on repeat


def test_a_pin_outside_the_log_is_refused(kb: KnowledgeBase) -> None:
    for pin in (0, -3, head(kb) + 1):
        error = refusal(lambda pin=pin: acquire(kb, [G1], tx=pin), "tx_out_of_range", "out of range")
        assert error.field == "tx"
    assert acquire(kb, [G1], tx=1)["tx"] == 1  # the first transaction is a pin like any other


def test_an_empty_store_has_no_transaction_to_pin(tmp_path: Path) -> None:
    with KnowledgeBase(migrated_location(tmp_path, "empty.db")) as store:
        assert acquire(store, [ROOT_IRI])["tx"] == 0
        refusal(lambda: acquire(store, [ROOT_IRI], tx=1), "tx_out_of_range", "no transaction yet")


def test_a_pin_is_refused_while_an_archive_is_mounted(kb: KnowledgeBase) -> None:
    pin = head(kb)
    freeze(kb, G2)
    refusal(lambda: acquire(kb, [G1], tx=pin), "archives_mounted", "archive pack is mounted")
    assert acquire(kb, [G1])["graphs"][0]["graph"] == G1  # an unpinned read of MAIN still works


# -- size bounds --------------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", [acquire, composed])
def test_the_bound_is_on_the_whole_response_and_never_partial(kb: KnowledgeBase, tool: Any) -> None:
    exact = tool(kb, [G1, G2])["bytes"]
    assert tool(kb, [G1, G2], max_bytes=exact)["bytes"] == exact
    error = refusal(lambda: tool(kb, [G1, G2], max_bytes=exact - 1), "acquire_too_large", "nothing partial")
    assert f"{exact} bytes" in error.message


def test_bytes_counts_the_encoded_response_itself(kb: KnowledgeBase) -> None:
    body = acquire(kb, [G1, G2, ROOT_IRI])
    assert body["bytes"] == len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@pytest.mark.parametrize("max_bytes, phrase", [(CAP + 1, "server cap"), (0, "at least 1")])
def test_max_bytes_cannot_raise_the_cap(kb: KnowledgeBase, max_bytes: int, phrase: str) -> None:
    refusal(lambda: acquire(kb, [G1], max_bytes=max_bytes), "invalid_field", phrase)


def test_the_server_cap_applies_without_max_bytes(kb: KnowledgeBase) -> None:
    call = lambda: acquiring.acquire(kb.db, source_store_id=lineage(kb), graphs=[G1], cap=200)  # noqa: E731
    refusal(call, "acquire_too_large", "over max_bytes 200")


# -- label floors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", ["/acquire", "/acquire/composed"])
def test_a_label_floor_refuses_as_on_any_read(tmp_path: Path, route: str) -> None:
    with serve(tmp_path, labels={"min_freshness": "recomputing"}) as client:
        body = {"source_store_id": lineage(kb_of(client)), "graphs": [ROOT_IRI]}
        refused = problem(client.post(route, json=body), "label_floor")
        assert f"<{ROOT_IRI}>" in refused["error"]
        labelled = client.post(
            "/graph/label", json={"graph": ROOT_IRI, "timestamp": T1, "freshness": "fresh"}
        )
        assert labelled.status_code == 200, labelled.text
        assert client.post(route, json=body).status_code == 200


# -- the composed tool ----------------------------------------------------------------------------------


def test_without_mounts_the_census_is_empty(kb: KnowledgeBase) -> None:
    body = composed(kb, [G1, ROOT_IRI])
    assert list(body) == ["source_store_id", "tx", "generation", "census", "complete", "bytes", "graphs"]
    assert body["census"] == [] and body["generation"] == generation_of([])
    assert [(g["graph"], g["provider"]) for g in body["graphs"]] == [(G1, "main"), (ROOT_IRI, "main")]
    assert list(body["graphs"][0]) == ["graph", "provider", "triples", "graph_hash", "ntriples"]


def test_the_census_lists_mounted_archives_without_paths(kb: KnowledgeBase, tmp_path: Path) -> None:
    frozen = freeze(kb, G2)
    body = composed(kb, [G1])
    assert body["census"] == [
        {
            "alias": frozen["alias"],
            "kind": "archive",
            "content_hash": frozen["content_hash"],
            "term_space": "origin",
            "graphs": [G2],
        }
    ]
    assert body["generation"] == generation_of(body["census"])
    text = json.dumps(body)
    assert str(tmp_path) not in text and ".qpack.db" not in text


def test_a_frozen_graph_is_served_by_its_archive(kb: KnowledgeBase) -> None:
    unfrozen = acquire(kb, [G2])["graphs"][0]
    frozen = freeze(kb, G2)
    body = composed(kb, [G1, G2])
    served = {g["graph"]: g for g in body["graphs"]}
    assert served[G1]["provider"] == "main"
    assert served[G2]["provider"] == frozen["alias"]
    # Rule FZ-1 carried through: the archive answers the rows the graph held before the freeze.
    assert {k: served[G2][k] for k in unfrozen} == unfrozen


def test_a_pin_needs_the_generation(kb: KnowledgeBase) -> None:
    error = refusal(lambda: composed(kb, [G1], tx=head(kb)), "missing_field", "expected_generation")
    assert error.field == "expected_generation"


def test_a_stale_generation_is_refused(kb: KnowledgeBase) -> None:
    taken = composed(kb, [G1])["generation"]
    freeze(kb, G2)
    refusal(lambda: composed(kb, [G1], expected_generation=taken), "generation_mismatch", "not the current")
    refusal(
        lambda: composed(kb, [G1], tx=1, expected_generation=taken), "generation_mismatch", "not the current"
    )


def test_the_current_generation_is_accepted(kb: KnowledgeBase) -> None:
    taken = composed(kb, [G1])
    again = composed(kb, [G1], expected_generation=taken["generation"])
    assert json.dumps(again) == json.dumps(taken)


def test_a_pin_reaches_main_rows_only_while_archives_stay_mounted(kb: KnowledgeBase) -> None:
    """AC-1: the pin reads MAIN as of the transaction; the archive is read as mounted."""
    pinned_g1 = acquire(kb, [G1])["graphs"][0]
    pin = head(kb)
    kb.knot(f'<{G1}/c> <{EX}p> "later" .', graph=G1)
    frozen = freeze(kb, G2)
    now = composed(kb, [G2])
    body = composed(kb, [G1, G2], tx=pin, expected_generation=now["generation"])
    assert body["tx"] == pin
    g1, g2 = body["graphs"]
    assert {k: g1[k] for k in pinned_g1} == pinned_g1
    assert g2["provider"] == frozen["alias"] and g2["ntriples"] == now["graphs"][0]["ntriples"]


def test_a_pin_outside_the_log_is_refused_by_the_composed_tool(kb: KnowledgeBase) -> None:
    generation = composed(kb, [G1])["generation"]
    for pin in (0, head(kb) + 1):
        refusal(
            lambda pin=pin: composed(kb, [G1], tx=pin, expected_generation=generation),
            "tx_out_of_range",
            "out of range",
        )


def test_a_census_change_during_the_read_breaks_the_fence(kb: KnowledgeBase) -> None:
    """AC-3: a freeze committed between the read and the closing census refuses the answer."""
    if kb.db.file_path is None:
        pytest.skip("freeze needs a SQLite store on disk")

    def freeze_meanwhile() -> None:
        kb.graphs.freeze(graph=G2, timestamp=T1)

    call = lambda: acquiring.acquire_composed(  # noqa: E731
        kb.db, source_store_id=lineage(kb), graphs=[G1], cap=CAP, before_closing_census=freeze_meanwhile
    )
    refusal(call, "census_changed", "fence broken")
    assert composed(kb, [G1])["census"][0]["graphs"] == [G2]  # the freeze itself went through


# -- REST: strict fields, reads, the size on the wire ---------------------------------------------------


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        store = kb_of(c)
        store.graphs.create(G1)
        store.knot(f'<{G1}/a> <{EX}p> "one" .', graph=G1)
        yield c


def good(client: TestClient) -> dict[str, Any]:
    return {"source_store_id": lineage(kb_of(client)), "graphs": [G1]}


ROUTES: Final = ["/acquire", "/acquire/composed"]


@pytest.mark.parametrize("route", ROUTES)
def test_the_route_answers_with_its_own_size(client: TestClient, route: str) -> None:
    response = client.post(route, json=good(client))
    assert response.status_code == 200, response.text
    assert response.json()["bytes"] == len(response.content)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(
    "change, reason, field",
    [
        ({"graph": G1}, "unknown_field", "graph"),
        ({"path": "/tmp/x"}, "unknown_field", "path"),
        ({"tx": "3"}, "wrong_type", "tx"),
        ({"tx": True}, "wrong_type", "tx"),
        ({"tx": 1.0}, "wrong_type", "tx"),
        ({"graphs": "x"}, "wrong_type", "graphs"),
        ({"graphs": [1]}, "wrong_type", "graphs.0"),
        ({"source_store_id": 7}, "wrong_type", "source_store_id"),
        ({"max_bytes": "10"}, "wrong_type", "max_bytes"),
    ],
)
def test_strict_fields_are_refused_before_any_work(
    client: TestClient, route: str, change: dict[str, Any], reason: str, field: str
) -> None:
    body = problem(client.post(route, json={**good(client), **change}), reason)
    assert body["field"] == field


def test_the_composed_route_types_expected_generation(client: TestClient) -> None:
    body = problem(
        client.post("/acquire/composed", json={**good(client), "expected_generation": 5}), "wrong_type"
    )
    assert body["field"] == "expected_generation"
    body = problem(
        client.post("/acquire", json={**good(client), "expected_generation": "sha256:0"}), "unknown_field"
    )
    assert body["field"] == "expected_generation"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("missing", ["source_store_id", "graphs"])
def test_required_fields(client: TestClient, route: str, missing: str) -> None:
    request = {k: v for k, v in good(client).items() if k != missing}
    assert problem(client.post(route, json=request), "missing_field")["field"] == missing


@pytest.mark.parametrize("route", ROUTES)
def test_an_oversized_answer_is_a_problem_without_graphs(client: TestClient, route: str) -> None:
    body = problem(client.post(route, json={**good(client), "max_bytes": 100}), "acquire_too_large")
    assert "graphs" not in body and "ntriples" not in json.dumps(body)


@pytest.mark.parametrize("route", ROUTES)
def test_the_routes_are_reads_on_a_read_only_server(tmp_path: Path, route: str) -> None:
    with serve(tmp_path, server={"read_only": True, "auth_token": "t" * 24}) as c:
        body = {"source_store_id": lineage(kb_of(c)), "graphs": [ROOT_IRI]}
        assert c.post(route, json=body).status_code == 200
