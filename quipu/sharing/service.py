"""``Sharing``: the per-store service behind the sharing tools (tools-graphs-governance §3–§4).

It holds what the family needs from the rest of the store (the export of a scope, the entity
resolver, the server's share cap and the import clock) and hands each tool to the module that
does the work. Modules load on first use: a server that never shares never imports them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from quipu.sharing.environment import Environment, Exporter, Resolver
from quipu.store.database import Database

DEFAULT_MAX_SHARE_BYTES = 8 * 1024 * 1024


def _epoch() -> int:
    return int(time.time())


class Sharing:
    def __init__(
        self,
        db: Database,
        *,
        export: Exporter,
        resolve: Resolver,
        producer_version: str,
        max_share_bytes: int = DEFAULT_MAX_SHARE_BYTES,
        clock: Callable[[], int] = _epoch,
    ) -> None:
        self.db = db
        self.max_share_bytes = max_share_bytes
        self.env = Environment(db, export, resolve, producer_version, max_share_bytes, clock)

    # Each tool's keyword arguments are the named module function's own (one signature each).

    # -- shares ---------------------------------------------------------------------------------

    def share(self, **fields: Any) -> dict[str, Any]:
        """``POST /share`` (§4.1), ``producing.produce``: the manifest and every member."""
        from quipu.sharing import producing

        return producing.produce(self.env, **fields)

    def import_share(self, **fields: Any) -> dict[str, Any]:
        """``POST /import`` (§4.2), ``importing.import_share``: verify, gate and stage a share."""
        from quipu.sharing import importing

        return importing.import_share(self.env, **fields)

    def promote(self, **fields: Any) -> dict[str, Any]:
        """``POST /import/promote`` (§4.3), ``promotion.promote``: a staged share into ROOT."""
        from quipu.sharing import promotion

        return promotion.promote(self.db, **fields)

    # -- three-way merge ------------------------------------------------------------------------

    def merge_decisions(self, **fields: Any) -> dict[str, Any]:
        """``POST /merge/decisions`` (§4.4), ``merge.decisions``: the conflicts, nothing written."""
        from quipu.sharing import merge

        return merge.decisions(self.env, **fields)

    def merge_apply(self, **fields: Any) -> dict[str, Any]:
        """``POST /merge/apply`` (§4.5), ``merge.apply``: the decided merge in one transaction."""
        from quipu.sharing import merge

        return merge.apply(self.env, **fields)

    # -- alignment ------------------------------------------------------------------------------

    def align_propose(self, **fields: Any) -> dict[str, Any]:
        """``POST /align/propose`` (§3.1), ``align.propose``."""
        from quipu.sharing import align

        return align.propose(self.db, **fields)

    def align_decide(self, **fields: Any) -> dict[str, Any]:
        """``POST /align/decide`` (§3.2), ``align.decide``: a pure function of its inputs."""
        from quipu.sharing import align

        return align.decide(**fields)

    def align_apply(self, **fields: Any) -> dict[str, Any]:
        """``POST /align/apply`` (§3.3), ``align.apply``: the only writing step of alignment."""
        from quipu.sharing import align

        return align.apply(self.db, **fields)

    # -- acquisition ----------------------------------------------------------------------------

    def acquire(self, **fields: Any) -> dict[str, Any]:
        """``POST /acquire`` (§4.6), ``acquire.acquire``: whole MAIN graphs, all or nothing."""
        from quipu.sharing import acquire

        return acquire.acquire(self.db, cap=self.max_share_bytes, **fields)

    def acquire_composed(self, **fields: Any) -> dict[str, Any]:
        """``POST /acquire/composed`` (§4.7), ``acquire.acquire_composed``: with a fenced census."""
        from quipu.sharing import acquire

        return acquire.acquire_composed(self.db, cap=self.max_share_bytes, **fields)
