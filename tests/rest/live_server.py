"""A real ``quipu`` HTTP server on a free loopback port, in a background thread (for tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from fastapi import FastAPI

from quipu.config import Settings
from quipu.defaults import KEEP_ALIVE_SECONDS
from quipu.rest.app import create_app


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def live_server(
    settings: Settings,
    *,
    startup_timeout: float = 20.0,
    factory: Callable[[Settings], FastAPI] = create_app,
) -> Iterator[str]:
    """Serve ``factory(settings)`` with uvicorn; yields the base URL, stops on exit."""
    port = free_port()
    config = uvicorn.Config(
        factory(settings),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"quipu-test-server-{port}", daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + startup_timeout
    try:
        while True:
            try:
                if httpx.get(base + "/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"test server on port {port} did not start")
            time.sleep(0.05)
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=15)
