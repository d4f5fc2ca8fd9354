"""What the sharing modules need from the rest of the store, in one value.

``Sharing`` (the service) builds it once; each tool's module takes it instead of the service, so
the modules never import the service that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quipu.documents.export import ExportResult
from quipu.store.database import Database

Exporter = Callable[..., ExportResult]  # the /export of one scope (quipu.documents.export)
Resolver = Callable[..., dict[str, Any]]  # quipu_resolve_entity (quipu.search)


@dataclass(frozen=True, slots=True)
class Environment:
    db: Database
    export: Exporter
    resolve: Resolver
    producer_version: str
    max_share_bytes: int  # [quipu.sharing] max_share_bytes
    clock: Callable[[], int]  # epoch seconds: attestation windows are checked against it
