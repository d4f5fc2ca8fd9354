"""Rows of the attestation registry (tools-graphs-governance §4.0.6; migrations/versions/0012).

``share_sessions`` holds the producer session bindings a receiver registered through a separate
channel (``quipu share trust``); ``share_nonces`` holds the envelope nonces that ``attested``
imports consumed, so the same envelope never attests twice. Validation and the trust decision
are the sharing package's business: this module only reads and writes rows, inside the caller's
transaction.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from sqlalchemy import Connection, insert, select, update

from quipu.store.context import WriteContext
from quipu.store.schema import share_nonces, share_sessions

_s = share_sessions.c
_n = share_nonces.c


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One registered binding: the public half of a producer's session key."""

    session: str
    agent: str
    public_key: str  # 64 lowercase hex digits: the raw Ed25519 public key
    key_id: str  # "sha256:" + hex(sha256(raw public key))
    introducer: str
    issued_at_epoch: int
    expires_at_epoch: int
    revoked: bool
    registered_at: str


def lookup(conn: Connection, session: str) -> SessionRow | None:
    """The binding registered for ``session``, revoked or not; None when there is none."""
    row = conn.execute(select(share_sessions).where(_s.session == session)).first()
    if row is None:
        return None
    return SessionRow(**{**row._mapping, "revoked": bool(row.revoked)})


def register(ctx: WriteContext, binding_row: SessionRow) -> None:
    """Insert a new binding (the caller has checked that its session is not registered yet)."""
    ctx.conn.execute(
        insert(share_sessions).values({**asdict(binding_row), "revoked": int(binding_row.revoked)})
    )


def revoke(ctx: WriteContext, session: str) -> bool:
    """Mark ``session`` revoked; False when no such session is registered. The row stays, so a
    revoked session can never be registered again under the same name."""
    done = ctx.conn.execute(update(share_sessions).where(_s.session == session).values(revoked=1))
    return bool(done.rowcount)


def nonce_used(conn: Connection, nonce: str) -> bool:
    """Whether an attested import already consumed ``nonce``."""
    return nonce_spender(conn, nonce) is not None


def nonce_spender(conn: Connection, nonce: str) -> str | None:
    """The share whose attested import consumed ``nonce``; None while it is unspent."""
    found = conn.execute(select(_n.share_id).where(_n.nonce == nonce)).scalar()
    return None if found is None else str(found)


def consume_nonce(ctx: WriteContext, nonce: str, session: str, share_id: str, at: str) -> bool:
    """Record ``nonce`` as consumed by the import of ``share_id``; False when it already was.

    Writes are serialised (``Database.write``), so the check and the insert cannot interleave
    with another import's: of two imports racing with one envelope, exactly one gets True."""
    if nonce_used(ctx.conn, nonce):
        return False
    ctx.conn.execute(
        insert(share_nonces).values(nonce=nonce, session=session, share_id=share_id, consumed_at=at)
    )
    return True
