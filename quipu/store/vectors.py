"""The vector table (tools-search §3.1): one embedding per entity over valid time.

Writing an entity's vector closes its current row (``valid_to`` = the stamp) and adds the new
one from the stamp on; nothing is deleted, so a search ``valid_at`` a past instant reads the
vectors live then. Two writes for one entity within the same second replace the row in place
rather than leave a zero-length window (stamps are whole seconds). Every write raises the
``vector_state`` generation in its own transaction and stamps the rows it touched with it, so a
cached index (quipu/search/vectors.py) learns with one lookup whether it is current, and reads
only the rows changed since — also when another process wrote them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, and_, func, or_, select, update

from quipu.store.schema import vector_state, vectors


@dataclass(frozen=True, slots=True)
class VectorRow:
    entity_id: int
    text: str
    embedding: bytes  # little-endian float32
    valid_from: str
    valid_to: str | None
    named_only: bool


_COLUMNS = (
    vectors.c.entity_id,
    vectors.c.text,
    vectors.c.embedding,
    vectors.c.valid_from,
    vectors.c.valid_to,
    vectors.c.named_only,
)


def _rows(conn: Connection, *where: object) -> list[VectorRow]:
    query = select(*_COLUMNS).where(*where).order_by(vectors.c.entity_id, vectors.c.valid_from)  # type: ignore[arg-type]
    return [VectorRow(r[0], r[1], bytes(r[2]), r[3], r[4], bool(r[5])) for r in conn.execute(query)]


def generation(conn: Connection) -> int:
    """The generation of the last vector write (0: never written)."""
    return int(conn.execute(select(vector_state.c.generation)).scalar_one())


def _next_generation(conn: Connection) -> int:
    conn.execute(update(vector_state).values(generation=vector_state.c.generation + 1))
    return generation(conn)


def write(
    conn: Connection, rows: Sequence[tuple[int, str, bytes]], stamp: str, *, named_only: bool = False
) -> int:
    """Make each ``(entity_id, text, embedding)`` the entity's current vector from ``stamp`` on;
    inside the caller's write transaction. The new generation."""
    if not rows:
        return generation(conn)
    changed = _next_generation(conn)
    ids = [entity for entity, _text, _embedding in rows]
    current: dict[int, str] = dict(
        conn.execute(
            select(vectors.c.entity_id, vectors.c.valid_from).where(
                vectors.c.entity_id.in_(ids), vectors.c.valid_to.is_(None)
            )
        ).all()
    )
    # A row that began this same second and was closed this same second (``close``, then a new
    # text) holds the primary key the new row needs: it is reopened in place instead.
    same = select(vectors.c.entity_id).where(vectors.c.entity_id.in_(ids), vectors.c.valid_from == stamp)
    this_second = {int(row[0]) for row in conn.execute(same)}
    for entity, text, embedding in rows:
        values = {"text": text, "embedding": embedding, "named_only": int(named_only), "changed": changed}
        began = current.get(entity)
        if began is not None and began != stamp:
            conn.execute(
                update(vectors)
                .where(vectors.c.entity_id == entity, vectors.c.valid_from == began)
                .values(valid_to=stamp, changed=changed)
            )
        if entity in this_second:  # written earlier in this same second: replace, no empty window
            conn.execute(
                update(vectors)
                .where(vectors.c.entity_id == entity, vectors.c.valid_from == stamp)
                .values(valid_to=None, **values)
            )
            continue
        conn.execute(vectors.insert().values(entity_id=entity, valid_from=stamp, valid_to=None, **values))
    return changed


def close(conn: Connection, entity_ids: Iterable[int], stamp: str) -> int:
    """End the current vectors of these entities at ``stamp`` (their facts are gone); the number closed."""
    ids = list(entity_ids)
    if not ids:
        return 0
    live = and_(vectors.c.entity_id.in_(ids), vectors.c.valid_to.is_(None))
    count = int(conn.execute(select(func.count()).select_from(vectors).where(live)).scalar_one())
    if count:
        changed = _next_generation(conn)
        conn.execute(update(vectors).where(live).values(valid_to=stamp, changed=changed))
    return count


def current(conn: Connection) -> list[VectorRow]:
    """Every current vector, by entity id."""
    return _rows(conn, vectors.c.valid_to.is_(None))


def live_at(conn: Connection, instant: str) -> list[VectorRow]:
    """The vectors live at ``instant`` (``valid_from <= t < valid_to``), by entity id."""
    return _rows(
        conn, vectors.c.valid_from <= instant, or_(vectors.c.valid_to.is_(None), vectors.c.valid_to > instant)
    )


def changed_since(conn: Connection, since: int) -> list[VectorRow]:
    """The rows a write after generation ``since`` added or closed, by entity id, oldest first."""
    return _rows(conn, vectors.c.changed > since)


def count_current(conn: Connection) -> int:
    """How many entities have a current vector (the ``embedded_entities`` of §2)."""
    query = select(func.count()).select_from(vectors).where(vectors.c.valid_to.is_(None))
    return int(conn.execute(query).scalar_one())


def for_entities(
    conn: Connection, entity_ids: Iterable[int], instant: str | None = None
) -> dict[int, VectorRow]:
    """The current vector (or the one live at ``instant``) of each of these entities that has one."""
    ids = list(entity_ids)
    if not ids:
        return {}
    live: list[object] = [vectors.c.entity_id.in_(ids)]
    if instant is None:
        live.append(vectors.c.valid_to.is_(None))
    else:
        live += [
            vectors.c.valid_from <= instant,
            or_(vectors.c.valid_to.is_(None), vectors.c.valid_to > instant),
        ]
    return {row.entity_id: row for row in _rows(conn, *live)}
