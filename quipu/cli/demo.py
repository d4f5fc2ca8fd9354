"""``quipu demo``: a fresh store holding the demo graph (``quipu.demo_graph``: a month of a small
ops world with history), served as ``quipu-server --db PATH --bind 127.0.0.1:3030`` would serve
it, with the explorer at ``/ui/``. ``--no-serve`` only creates and loads the store.

The store is always new: an existing file at ``--db`` is refused unless ``--force``, which
replaces it (with its SQLite ``-wal`` and ``-shm`` files). One line on stderr says what was
loaded and where to look; stdout stays empty.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from quipu.cli.server import BIND_FORMS, DEFAULT_BIND, base_url, parse_bind
from quipu.defaults import DEFAULT_PORT
from quipu.errors import InvalidField

app = typer.Typer()

DEFAULT_DB = "quipu-demo.db"
_SIDECARS = ("-wal", "-shm", "-journal")  # SQLite's files beside a store file


@app.command("demo")
def demo(
    db: Annotated[str, typer.Option("--db", metavar="PATH", help="the store file to create")] = DEFAULT_DB,
    bind: Annotated[
        str,
        typer.Option("--bind", metavar="ADDRESS", help=f"{BIND_FORMS} to serve on"),
    ] = DEFAULT_BIND,
    force: Annotated[bool, typer.Option("--force", help="replace an existing file at --db")] = False,
    no_serve: Annotated[
        bool, typer.Option("--no-serve", help="create and load the store, then exit without serving")
    ] = False,
) -> None:
    """Create a store holding the demo graph (a month of an ops world) and serve it with the explorer."""
    if "://" in db or db.strip() == ":memory:":
        raise InvalidField(
            f"--db {db!r}: quipu demo creates a fresh store file; give a file path", field="--db"
        )
    host, port = parse_bind(bind)  # checked before anything is written
    host, port = host or "127.0.0.1", DEFAULT_PORT if port is None else port
    url, explicit = base_url(host, port), f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    path = Path(db)
    _make_room(path, force)

    from quipu import demo_graph
    from quipu.api import KnowledgeBase  # the store stack loads only to run the command

    try:
        with KnowledgeBase(str(path)) as kb:
            loaded = demo_graph.load(kb)
            # The keyword index, so the explorer's keyword search is BM25 rather than its
            # label-match fallback; a few hundred rows, one batch.
            while not kb.search.keyword_backfill(10_000)["complete"]:
                pass
    except BaseException:
        _remove(path)  # a half-loaded demo is no demo: the next run starts afresh
        raise
    where = (
        f"the explorer is at {url}/ui/"
        if not no_serve
        else f"serve it with `quipu-server --db {db} --bind {explicit}` and open {url}/ui/"
    )
    sys.stderr.write(
        f"quipu demo: loaded {loaded.entities_at_end} entities in {loaded.transactions} transactions "
        f"(valid time {loaded.start} .. {loaded.end}) into {db}; {where}\n"
    )
    if no_serve:
        return
    from quipu.cli.server import serve

    # Keyword search reads the index built above; a setting of the caller's own still wins.
    os.environ.setdefault("QUIPU_SEARCH__KEYWORD", "true")

    serve(db=str(path), bind=explicit)  # explicit: a configured server.host never widens it


def _make_room(path: Path, force: bool) -> None:
    """Refuse an existing file at ``path`` unless ``force``, which removes it and its sidecars."""
    if path.is_dir():
        raise InvalidField(
            f"--db {str(path)!r} is a directory: quipu demo creates a store file", field="--db"
        )
    existing = [file for file in _files(path) if file.exists()]
    if not existing:
        return
    if not force:
        raise InvalidField(
            f"{existing[0]} already exists: quipu demo creates a fresh store; pass --force to "
            "replace it, or choose another --db",
            field="--db",
        )
    _remove(path)


def _files(path: Path) -> list[Path]:
    """The store file and the SQLite files beside it."""
    return [path, *(path.with_name(path.name + suffix) for suffix in _SIDECARS)]


def _remove(path: Path) -> None:
    for file in _files(path):
        file.unlink(missing_ok=True)
