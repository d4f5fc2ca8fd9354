"""Credentials come from the transport only; writes are attributed; read-only mode refuses writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.acceptance.mcp.harness import (
    ALICE,
    BOB,
    PRINCIPALS,
    SHARED,
    TRANSPORTS,
    Principal,
    Target,
    error_body,
    ok_body,
    run,
    serve,
    turtle,
)

KNOTS_PER_CLIENT = 10
READ_QUERY = "SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"


async def _knot(client: Client, subject: str, **extra: Any) -> Any:
    return await client.call_tool("quipu_knot", {"turtle": turtle(subject, "x"), **extra})


def test_a_write_without_a_valid_credential_is_refused_and_reads_stay_open(target: Target) -> None:
    subject = f"http://example.org/acceptance/anonymous-{target.transport}"

    async def main() -> tuple[Any, Any, Any]:
        async with target.client() as client:
            anonymous = await _knot(client, subject)
            read = await client.call_tool("quipu_query", {"query": READ_QUERY})
        async with target.client("not-a-credential-of-this-store") as client:
            wrong = await _knot(client, subject)
        return anonymous, read, wrong

    anonymous, read, wrong = run(main)
    for refused in (anonymous, wrong):
        body = error_body(refused)
        assert (body["status"], body["reason"]) == (401, "missing_or_invalid_bearer_token")
    assert isinstance(ok_body(read)["rows"], list)


def test_a_credential_in_a_tool_argument_is_never_used(target: Target) -> None:
    subject = f"http://example.org/acceptance/smuggled-{target.transport}"
    smuggled = {"authorization": f"Bearer {SHARED.token}", "Authorization": f"Bearer {SHARED.token}"}

    async def main() -> tuple[Any, Any]:
        async with target.client() as client:
            refused = await _knot(client, subject, **smuggled)
        async with target.client(SHARED.token) as client:
            accepted = await _knot(client, subject, **smuggled)
        return refused, accepted

    refused, accepted = run(main)
    assert error_body(refused)["reason"] == "missing_or_invalid_bearer_token"
    # With the transport's credential the same arguments go to REST as they are: just unknown keys.
    assert ok_body(accepted)["ignored_fields"] == ["Authorization", "authorization"]


def test_concurrent_clients_with_shared_and_named_credentials_each_get_their_own_attribution(
    target: Target,
) -> None:
    async def one_client(principal: Principal, n: int, out: dict[int, dict[str, Any]]) -> None:
        # bob's stdio token file is mode 400: read-only private files are accepted too.
        token_mode = 0o400 if principal is BOB else 0o600
        async with target.client(principal.token, token_mode=token_mode) as client:
            tx_ids: list[int] = []

            async def write(i: int) -> None:
                subject = f"http://example.org/acceptance/concurrent-{target.transport}-{n}-{i}"
                tx_ids.append(ok_body(await _knot(client, subject))["tx_id"])

            async with anyio.create_task_group() as writes:
                for i in range(KNOTS_PER_CLIENT):
                    writes.start_soon(write, i)
            log = ok_body(await client.call_tool("quipu_transactions", {}))
            recorded = {tx["id"]: tx["authenticated"] for tx in log["transactions"]}
            out.update(
                {tx_id: {"expected": principal.identity, "recorded": recorded[tx_id]} for tx_id in tx_ids}
            )

    async def main() -> dict[int, dict[str, Any]]:
        out: dict[int, dict[str, Any]] = {}
        async with anyio.create_task_group() as clients:
            for n, principal in enumerate(PRINCIPALS):
                clients.start_soon(one_client, principal, n, out)
        return out

    attributed = run(main, timeout=90)
    assert len(attributed) == len(PRINCIPALS) * KNOTS_PER_CLIENT  # every write its own transaction
    for tx_id, seen in attributed.items():
        assert seen["recorded"] == seen["expected"], tx_id
    principals = {seen["recorded"]["principal"] for seen in attributed.values()}
    assert principals == {"legacy-shared-bearer", "alice", "bob"}


# -- read-only mode ----------------------------------------------------------------------------


@pytest.fixture(scope="module", params=TRANSPORTS)
def read_only(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root: Path = tmp_path_factory.mktemp(f"read-only-{request.param}")
    with serve(
        request.param,
        root,
        overrides={"server": {"read_only": True}},
        env={"QUIPU_SERVER__READ_ONLY": "true"},
    ) as served:
        yield served


def test_read_only_mode_refuses_writes_even_with_a_valid_credential_and_serves_reads(
    read_only: Target,
) -> None:
    async def main() -> tuple[Any, Any, Any]:
        async with read_only.client(ALICE.token) as client:
            write = await _knot(client, "http://example.org/acceptance/read-only")
            query = await client.call_tool("quipu_query", {"query": READ_QUERY})
            health = await client.call_tool("quipu_health", {})
        return write, query, health

    write, query, health = run(main)
    body = error_body(write)
    assert (body["status"], body["reason"]) == (403, "server_is_read_only")
    assert ok_body(query)["rows"] == []
    assert ok_body(health)["status"] == "ok"
