"""The semantic event log (DM §11.1): events written inside the transaction they describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Advisory:
    """An event a gate queued during validation (``shacl.violation`` from an "emit" shape).

    Appended after the write's semantic events, in the same transaction; lost with it on rollback.
    """

    type: str
    subject: str | None
    payload: dict[str, Any] = field(default_factory=dict)
