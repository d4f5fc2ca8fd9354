"""Service routes: liveness, store statistics and the serving build (tools-core §4)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel

from quipu.rest.deps import KbDep
from quipu.rest.fields import strict_params
from quipu.version import version_info

router = APIRouter(tags=["service"])
NoArguments = Annotated[None, Depends(strict_params())]


class Health(BaseModel):
    status: str


class ValidTime(BaseModel):
    earliest: str | None
    latest: str | None


class Stats(BaseModel):
    facts: int
    entities: int
    predicates: int
    # The SQLite write-ahead log's size now (null on PostgreSQL and in memory): a log that keeps
    # growing means checkpoints are being starved (docs/store.md).
    wal_bytes: int | None
    # Where the history lies, for a time slider such as the explorer's [designed here]: the
    # latest transaction id, and the first and last valid-time instants ROOT's assertions name.
    head_tx: int
    valid_time: ValidTime


class Version(BaseModel):
    version: str
    git_sha: str
    git_dirty: bool
    features: dict[str, bool]


@router.get("/health", response_model=Health)
async def health(_: NoArguments) -> dict[str, str]:
    """Liveness of the process; never touches the store or waits for the writer."""
    return {"status": "ok"}


@router.get("/stats", response_model=Stats)
def stats(kb: KbDep, _: NoArguments) -> dict[str, Any]:
    """Counts of ROOT's current statements, entities and predicates, the transaction head and
    the valid-time range of ROOT's history (cached per transaction head)."""
    return {**kb.stats(), "wal_bytes": kb.wal_bytes(), **kb.time_span()}


@router.get("/version", response_model=Version)
async def version(_: NoArguments) -> dict[str, Any]:
    """Package version, source commit and dirty flag stamped at build time."""
    return version_info()
