"""facts.v_num: a numeric shadow of Int, Float and numeric literals.

SPARQL comparisons and ORDER BY on numbers must run inside SQL, but ``v`` is an opaque tagged
blob. This column carries the number (NULL for everything else); existing rows are backfilled.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from quipu.store.values import numeric

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels = None
depends_on = None

_BATCH = 10_000


def upgrade() -> None:
    op.add_column("facts", sa.Column("v_num", sa.Float))
    conn = op.get_bind()
    facts = sa.table("facts", sa.column("id"), sa.column("v"), sa.column("v_num"))
    # Tags 2 (Int), 3 (Float) and 7 (Typed) can hold numbers; the first byte says which.
    last = 0
    while True:
        rows = conn.execute(
            sa.select(facts.c.id, facts.c.v).where(facts.c.id > last).order_by(facts.c.id).limit(_BATCH)
        ).all()
        if not rows:
            break
        last = rows[-1].id
        updates = [{"b_id": r.id, "b_num": n} for r in rows if (n := numeric(bytes(r.v))) is not None]
        if updates:
            conn.execute(
                facts.update().where(facts.c.id == sa.bindparam("b_id")).values(v_num=sa.bindparam("b_num")),
                updates,
            )


def downgrade() -> None:
    with op.batch_alter_table("facts") as batch:
        batch.drop_column("v_num")
