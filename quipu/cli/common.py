"""What every ``quipu`` command family shares: the store options, the error channel, the input
files and the JSON output.

Nothing here imports the store stack or the settings: ``quipu --help`` must not pay for them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from quipu.errors import ConfigError, InvalidField, QuipuError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from quipu.api import KnowledgeBase


@cache
def err() -> Console:
    """The Rich console on stderr (row counts, progress bars), made on first use: Rich's import
    is not on the path of ``quipu --help``."""
    from rich.console import Console

    return Console(stderr=True)


DbOption = Annotated[
    str | None,
    typer.Option("--db", help="Store file (or ':memory:'); default from QUIPU_STORE__DB or quipu.toml"),
]
ConfigOption = Annotated[str | None, typer.Option("--config", help="TOML file with a [quipu] table")]


@contextmanager
def refusals() -> Iterator[None]:
    """Turn quipu's errors into one plain line on stderr and exit status 2 (1 for 5xx)."""
    try:
        yield
    except QuipuError as exc:
        # Plain text: a message may quote user input, which must never be read as Rich markup,
        # and scripts read it whole, so no wrapping either.
        sys.stderr.write(f"error: {exc.message}\n")
        usage = exc.status < 500 or isinstance(exc, ConfigError)  # the caller can fix these
        raise typer.Exit(2 if usage else 1) from None


class RefusingGroup(TyperGroup):
    """The root command group: it reports a QuipuError from any command through ``refusals``, so the
    mapping lives in one place (as quipu/rest/problems.py for REST) and commands just raise."""

    def invoke(self, ctx: Any) -> Any:  # Any: typer does not export its click Context base
        with refusals():
            return super().invoke(ctx)


@contextmanager
def open_store(db: str | None, config: str | None) -> Iterator[KnowledgeBase]:
    """The configured store, open for the duration of one command."""
    from quipu.api import KnowledgeBase  # imported late: the CLI starts without the store stack
    from quipu.config import load_settings

    kb = KnowledgeBase.from_settings(load_settings(config, store={"db": db}))
    try:
        yield kb
    finally:
        kb.close()


def emit(data: Any) -> None:
    """A result on stdout: indented UTF-8 JSON."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _named_file(path: str, flag: str, what: str | None) -> Path | None:
    """The file named on the command line, None for ``-`` (stdin); a missing file is refused."""
    if path == "-":
        return None
    if not Path(path).is_file():
        raise InvalidField(f"{what or flag} file not found: {path}", field=flag)
    return Path(path)


def read_text(path: str, flag: str = "FILE", *, what: str | None = None) -> str:
    """A UTF-8 file named by FLAG (``-`` is stdin); a refusal calls it WHAT (default FLAG)."""
    file = _named_file(path, flag, what)
    return sys.stdin.read() if file is None else file.read_text(encoding="utf-8")


def read_bytes(path: str, flag: str = "FILE", *, what: str | None = None) -> bytes:
    """``read_text`` undecoded, for parsers that read the bytes themselves (RDF documents)."""
    file = _named_file(path, flag, what)
    return sys.stdin.buffer.read() if file is None else file.read_bytes()


def stage_bar() -> Progress:
    """A pulsing bar on stderr for work of unknown length: the current stage and the time taken."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), console=err())


def progress_bar(label: str, unit: str = "", *, disable: bool = False) -> Progress:
    """A progress bar on stderr: LABEL, the bar, done/total UNIT and the time taken."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.completed:,}/{task.total:,}" + unit),
        TimeElapsedColumn(),
        console=err(),
        disable=disable,
    )
