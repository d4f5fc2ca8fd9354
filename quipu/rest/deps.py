"""Shared dependencies of the route handlers, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from quipu.api import KnowledgeBase
from quipu.config import Settings
from quipu.identity import Authenticated
from quipu.rest.auth import guard
from quipu.rest.lanes import Lanes


# Async on purpose: FastAPI runs a plain ``def`` dependency in a worker thread, for every request.
async def _kb(request: Request) -> KnowledgeBase:
    kb: KnowledgeBase = request.app.state.kb
    return kb


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _lanes(request: Request) -> Lanes:
    lanes: Lanes = request.app.state.lanes
    return lanes


KbDep = Annotated[KnowledgeBase, Depends(_kb)]
LanesDep = Annotated[Lanes, Depends(_lanes)]  # for a route that picks its read lane per request
SettingsDep = Annotated[Settings, Depends(_settings)]
# The verified caller of a write (None when no credential is configured). ``guard`` runs once
# per request: the app-wide dependency and this alias share FastAPI's per-request cache.
AuthDep = Annotated[Authenticated | None, Depends(guard)]
