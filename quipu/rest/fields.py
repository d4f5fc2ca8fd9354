"""The two unknown-field regimes of tools-core §0.4, as request-model bases and helpers.

* ``Annotating`` bodies accept unknown top-level keys and report them, sorted, as
  ``ignored_fields`` in a JSON response (or the ``X-Quipu-Ignored-Fields`` header otherwise).
* ``Strict`` bodies refuse an unknown key (400 ``unknown_field``) or a known key of the wrong
  JSON type (400 ``wrong_type``) before any work; ``strict_params`` does the same for the query
  string of a strict GET route.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Collection, Iterable
from typing import Annotated, Any

from fastapi import Request
from pydantic import BaseModel, ConfigDict, WithJsonSchema

from quipu.errors import UnknownField

IGNORED_HEADER = "X-Quipu-Ignored-Fields"


class Body(BaseModel):
    """A request body: its declared fields go on to a service as keyword arguments."""

    def fields(self, *, exclude: Collection[str] = ()) -> dict[str, Any]:
        """The declared fields by name, nested models as plain data; unknown keys are left out."""
        return self.model_dump(include=set(type(self).model_fields).difference(exclude))


class Annotating(Body):
    """A request body whose unknown keys are reported, not refused. Types are strict JSON."""

    model_config = ConfigDict(extra="allow", strict=True)

    def ignored_fields(self) -> list[str]:
        return sorted(self.model_extra or {})

    def annotate(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` with ``ignored_fields`` added when this request carried unknown keys."""
        ignored = self.ignored_fields()
        if ignored:
            body["ignored_fields"] = ignored
        return body

    def ignored_header(self) -> dict[str, str]:
        ignored = self.ignored_fields()
        return {IGNORED_HEADER: json.dumps(ignored)} if ignored else {}


class Strict(Body):
    """A request body that refuses unknown keys and wrong JSON types."""

    model_config = ConfigDict(extra="forbid", strict=True)


def strict_params(*names: str) -> Callable[[Request], Awaitable[None]]:
    """A dependency refusing query-string parameters other than ``names``."""
    allowed = frozenset(names)

    async def check(request: Request) -> None:  # async: a plain check needs no worker thread
        refuse_unknown(request.query_params.keys(), allowed)

    return check


def refuse_unknown(given: Iterable[str], allowed: frozenset[str]) -> None:
    unknown = sorted(set(given) - allowed)
    if unknown:
        accepted = ", ".join(sorted(allowed)) or "none"
        raise UnknownField(
            f"unknown parameter '{unknown[0]}' (accepted: {accepted})",
            field=unknown[0],
        )


# A search limit: the schema publishes 1 as the least a client should send, while the route
# clamps a smaller one up to 1 (tools-search §0.6, "limit 0 behaves as 1").
ClampedLimit = Annotated[int, WithJsonSchema({"type": "integer", "minimum": 1})]
