"""Reading server-sent events over real HTTP, as a client does (the /changes and /events streams)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

TIMEOUT = httpx.Timeout(20.0)


@dataclass(frozen=True)
class Frame:
    event: str | None = None
    id: str | None = None
    data: Any = None
    comment: str | None = None


def frames(response: httpx.Response) -> Iterator[Frame]:
    """The SSE frames of a streamed response, comments included, as they arrive."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line == "":
            if fields:
                yield Frame(fields.get("event"), fields.get("id"), json.loads(fields.get("data", "null")))
                fields = {}
        elif line.startswith(":"):
            yield Frame(comment=line[1:].strip())
        else:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
