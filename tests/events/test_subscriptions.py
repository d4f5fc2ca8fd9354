"""Managing push subscriptions over REST (tools-core §3.13 quipu_subscriptions): create, list,
delete, their refusals, the create-time address guard and the optional secret [designed here].
Delivery itself is tested in test_delivery*.py."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.events import webhook_guard
from tests.rest.support import kb_of, problem, serve

PUBLIC_HOOK = "http://93.184.215.14/hook"  # a public address literal: no DNS needed
TOKEN = "subscriptions-token-0123456789"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path) as c:
        yield c


def call(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/subscriptions", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def create(client: TestClient, consumer: str = "hooks", **fields: Any) -> dict[str, Any]:
    return call(client, action="create", consumer_id=consumer, webhook_url=PUBLIC_HOOK, **fields)


def test_create_list_delete_round_trip(client: TestClient) -> None:
    made = create(client, types=["edge.added", " type.new "], mode="batch", batch_size=5, batch_window_s=9)
    assert made == {"action": "created", "id": made["id"], "consumer_id": "hooks"}
    listed = call(client)  # action defaults to list
    assert listed["count"] == 1
    sub = listed["subscriptions"][0]
    assert {
        k: sub[k]
        for k in ("id", "consumer_id", "types", "mode", "webhook_url", "batch_size", "batch_window_s")
    } == {
        "id": made["id"],
        "consumer_id": "hooks",
        "types": ["edge.added", "type.new"],
        "mode": "batch",
        "webhook_url": PUBLIC_HOOK,
        "batch_size": 5,
        "batch_window_s": 9,
    }
    assert sub["signed"] is False and sub["cursor"] == 0
    assert sub["delivery"]["state"] == "ok" and sub["delivery"]["failures"] == 0
    assert call(client, action="delete", consumer_id="hooks") == {
        "action": "deleted",
        "consumer_id": "hooks",
        "found": True,
    }
    assert call(client, action="list") == {"count": 0, "subscriptions": []}
    assert call(client, action="delete", consumer_id="hooks")["found"] is False


def test_defaults_are_realtime_50_and_30_and_an_empty_types_list_means_all(client: TestClient) -> None:
    create(client, types=[])
    sub = call(client)["subscriptions"][0]
    assert (sub["mode"], sub["batch_size"], sub["batch_window_s"], sub["types"]) == ("realtime", 50, 30, [])


def test_the_same_consumer_twice_is_refused(client: TestClient) -> None:
    create(client)
    body = problem(
        client.post(
            "/subscriptions", json={"action": "create", "consumer_id": "hooks", "webhook_url": PUBLIC_HOOK}
        ),
        "invalid_field",
    )
    assert body["field"] == "consumer_id" and "already has a subscription" in body["error"]


def test_deleting_keeps_the_cursor_and_recreating_resumes_from_it(client: TestClient) -> None:
    create(client)
    client.post("/events/commit", json={"consumer_id": "sub:hooks", "offset": 7})
    call(client, action="delete", consumer_id="hooks")
    assert client.get("/events", params={"consumer": "sub:hooks"}).json()["committed_offset"] == 7
    create(client)  # rule 4: the same consumer id resumes
    assert call(client)["subscriptions"][0]["cursor"] == 7


def test_the_cursor_exists_from_creation_so_retention_cannot_pass_it(client: TestClient) -> None:
    create(client, consumer="fresh")
    body = client.get("/events", params={"consumer": "sub:fresh"}).json()
    assert body["committed_offset"] == 0


SPARQL_ASK = "sparql_ask filters are not evaluated yet; refusing to store one that would be silently ignored"


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {"action": "nope"},
            "action",
            "unknown subscriptions action 'nope' (expected: create, list, delete)",
        ),
        ({"action": "create", "webhook_url": PUBLIC_HOOK}, "consumer_id", "consumer_id is required"),
        ({"action": "delete"}, "consumer_id", "consumer_id is required"),
        ({"action": "create", "consumer_id": "c"}, "webhook_url", "webhook_url is required"),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": "   "},
            "webhook_url",
            "webhook_url is required",
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": "ftp://93.184.215.14/x"},
            "webhook_url",
            None,
        ),
        ({"action": "create", "consumer_id": "c", "webhook_url": "file:///etc/passwd"}, "webhook_url", None),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": "http://u:p@93.184.215.14/"},
            "webhook_url",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "mode": "stream"},
            "mode",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "batch_size": -1},
            "batch_size",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "batch_size": 0},
            "batch_size",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "batch_window_s": -5},
            "batch_window_s",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "sparql_ask": "ASK {}"},
            "sparql_ask",
            SPARQL_ASK,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "secret": "short"},
            "secret",
            None,
        ),
        (
            {"action": "create", "consumer_id": "c", "webhook_url": PUBLIC_HOOK, "types": "edge.added"},
            "types",
            None,
        ),
        ({"action": "list", "bogus": True}, "bogus", None),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_stores_nothing(
    client: TestClient, body: dict[str, Any], field: str, message: str | None
) -> None:
    response = client.post("/subscriptions", json=body)
    out = response.json()
    assert response.status_code == 400 and out["field"] == field, out
    if message is not None:
        assert out["error"] == message
    assert call(client)["count"] == 0


def test_a_blank_sparql_ask_is_accepted_as_absent(client: TestClient) -> None:
    create(client, sparql_ask="  ")
    assert call(client)["count"] == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://[::1]/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data",  # cloud metadata, link-local
        "http://[fe80::1]/hook",
        "http://100.64.0.1/hook",  # shared address space
        "http://0.0.0.0/hook",
        "http://[::ffff:127.0.0.1]/hook",  # IPv4-mapped loopback
        "http://[2002:a00:1::]/hook",  # 6to4 of 10.0.0.1
        "http://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
        "http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook",  # Teredo, client 10.0.0.1
        "http://[::a9fe:a9fe]/hook",  # IPv4-compatible 169.254.169.254
    ],
)
def test_private_and_loopback_receivers_are_refused_by_default(client: TestClient, url: str) -> None:
    body = problem(
        client.post("/subscriptions", json={"action": "create", "consumer_id": "c", "webhook_url": url}),
        "invalid_field",
    )
    assert body["field"] == "webhook_url" and "webhook_allow_private" in body["error"]


def test_webhook_allow_private_lets_a_loopback_receiver_in(tmp_path: Path) -> None:
    with serve(tmp_path, events={"webhook_allow_private": True}) as client:
        call(client, action="create", consumer_id="local", webhook_url="http://127.0.0.1:9/hook")
        assert call(client)["subscriptions"][0]["webhook_url"] == "http://127.0.0.1:9/hook"


def test_a_secret_is_never_listed(client: TestClient) -> None:
    secret = "s3cret-0123456789-abcdef"
    create(client, secret=secret)
    response = client.post("/subscriptions", json={"action": "list"})
    assert secret not in response.text
    assert response.json()["subscriptions"][0]["signed"] is True


def test_every_action_is_a_write_needing_the_bearer_and_refused_read_only(tmp_path: Path) -> None:
    with serve(tmp_path, server={"auth_token": TOKEN}) as client:
        assert client.post("/subscriptions", json={"action": "list"}).status_code == 401  # rule 5
        ok = client.post(
            "/subscriptions", json={"action": "list"}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        assert ok.status_code == 200
    (tmp_path / "ro").mkdir()
    with serve(tmp_path / "ro", server={"auth_token": TOKEN, "read_only": True}) as client:
        refused = client.post(
            "/subscriptions", json={"action": "list"}, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        body = problem(refused, "server_is_read_only", 403)
        assert "list included" in str(body)  # the 403 says why a list is a write


def test_subscriptions_write_no_transaction(client: TestClient) -> None:
    kb = kb_of(client)
    create(client)
    call(client, action="delete", consumer_id="hooks")
    assert kb.transactions(limit=None)["count"] == 0


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("2002:808:808::1", True),  # 6to4 of a public address
        ("64:ff9b::808:808", True),  # NAT64 of a public address
        ("::ffff:8.8.8.8", True),
        ("::ffff:10.0.0.1", False),
        ("2002:c0a8:1::", False),  # 6to4 of 192.168.0.1
        ("64:ff9b:1::a9fe:a9fe", False),  # local-use NAT64 of the metadata address
        ("::1", False),
        ("224.0.0.1", False),
        ("ff02::1", False),
    ],
)
def test_an_ipv4_address_inside_an_ipv6_one_is_judged_as_itself(address: str, public: bool) -> None:
    assert webhook_guard.is_public(ipaddress.ip_address(address)) is public
