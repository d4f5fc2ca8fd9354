"""Who an authenticated request is: recorded on every transaction it commits (DM §4).

A declared ``actor`` is never an identity; only a verified bearer credential makes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

AuthClass = Literal["named_bearer", "legacy_shared_bearer"]
SHARED_PRINCIPAL: Final = "legacy-shared-bearer"


@dataclass(frozen=True, slots=True)
class Authenticated:
    """A verified credential: a named one carries its principal and id, the shared one neither."""

    principal: str
    credential_id: str | None
    auth_class: AuthClass

    def as_json(self) -> dict[str, str | None]:
        return {
            "principal": self.principal,
            "credential_id": self.credential_id,
            "auth_class": self.auth_class,
        }


SHARED: Final = Authenticated(SHARED_PRINCIPAL, None, "legacy_shared_bearer")
