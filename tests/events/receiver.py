"""A webhook receiver for the delivery tests, in process (``Receiver``) or as a process of its
own (``python tests/events/receiver.py --port P --out FILE [--secret S]``).

The process records every event it accepts as one JSON line ``{"offset", "delivery"}`` in
``--out`` (flushed before it answers 200, so a receiver killed mid-request has either recorded
the batch or not answered), a rejected delivery as ``{"rejected": <delivery id>}``, and answers
401 when ``--secret`` is given and the signature does not verify; ``--delay`` holds each 200
that long after recording. It prints ``ready`` once it listens. It uses only the standard library and quipu.events.signing.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO

from quipu.events import signing


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        got = Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        status = self.server.handle_delivery(got)
        self.send_response(status)
        if 300 <= status < 400:
            self.send_header("Location", "http://127.0.0.1:9/elsewhere")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None  # quiet


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, handle: Callable[[Received], int]) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.handle_delivery = handle


class Receiver:
    """An in-process receiver on a free loopback port. ``answers``: the statuses to give, in
    order (the last one repeats); ``secret``: answer 401 unless the signature verifies."""

    def __init__(self, answers: tuple[int, ...] = (200,), secret: str | None = None) -> None:
        self.answers = list(answers)
        self.secret = secret
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = _Server(0, self._handle)
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def _handle(self, got: Received) -> int:
        with self._lock:
            self.received.append(got)
            if self.secret is not None and not signing.verify(
                self.secret, got.body, got.headers.get("x-quipu-signature")
            ):
                return 401
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--secret")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between recording and answering")
    args = parser.parse_args(argv)
    out: BinaryIO = args.out.open("ab")
    lock = threading.Lock()

    def handle(got: Received) -> int:
        delivery = got.headers.get("x-quipu-delivery", "")
        with lock:
            if args.secret is not None and not signing.verify(
                args.secret, got.body, got.headers.get("x-quipu-signature")
            ):
                out.write(json.dumps({"rejected": delivery}).encode() + b"\n")
                out.flush()
                return 401
            lines = [
                json.dumps({"offset": event["offset"], "delivery": delivery}).encode() + b"\n"
                for event in got.json()["events"]
            ]
            out.write(b"".join(lines))
            out.flush()
        time.sleep(args.delay)  # a window in which a kill leaves a recorded batch unanswered
        return 200

    server = _Server(args.port, handle)
    print("ready", flush=True)
    try:
        server.serve_forever()
    finally:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
