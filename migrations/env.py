"""Alembic environment. The store passes its own connection; the CLI path builds an engine."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from quipu.store.schema import metadata

config = context.config
connection = config.attributes.get("connection")


def _run(conn: object) -> None:
    context.configure(
        connection=conn,  # type: ignore[arg-type]
        target_metadata=metadata,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    context.configure(url=config.get_main_option("sqlalchemy.url"), target_metadata=metadata)
    with context.begin_transaction():
        context.run_migrations()
elif connection is not None:
    _run(connection)
else:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite:///quipu.db")
    with engine.begin() as conn:
        _run(conn)
