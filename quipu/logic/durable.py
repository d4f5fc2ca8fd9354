"""Durable file writes of the logic memory: a file replaced whole, so that a reader or a crash
never sees half of it (R-N1 for snapshots, R-M4 for the mount manifest), and the directory
fsync that makes a create or rename itself survive a crash.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def replace_file(final: Path, data: bytes) -> None:
    """Write ``data`` to ``<final>.tmp``, fsync it, rename it over ``final`` and fsync the
    directory. On failure the ``.tmp`` file is removed, ``final`` is left as it was, and the
    error is raised."""
    tmp = final.with_name(final.name + ".tmp")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(final.parent)


def fsync_dir(directory: Path) -> None:
    """Make a create or rename in ``directory`` durable (best effort: not every FS allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["fsync_dir", "replace_file"]
