"""Build hook: stamp the source commit into ``quipu/_build_info.py`` (read by ``/version``).

Hatchling runs it before every build: sdist, wheel and the editable wheel uv installs. In the
top directory of a git work tree it writes the ``HEAD`` commit and whether the tree differs from
it (tracked changes, or untracked files that would be packaged). Anywhere else (an unpacked sdist,
a plain tarball) it keeps the stamp the sdist carries, or writes ``"unknown"``. The file is
gitignored, so it is named as a build artifact to be packaged all the same.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STAMP = Path("quipu") / "_build_info.py"
UNKNOWN = ("unknown", False)


def _git(root: Path, *args: str) -> str | None:
    """Output of a git command in ``root``, or None when git is missing or fails."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_stamp(root: Path) -> tuple[str, bool] | None:
    """``(commit, dirty)`` when ``root`` is the top of a git work tree with a commit, else None."""
    top = _git(root, "rev-parse", "--show-toplevel")
    # An unpacked tarball inside some other repository must not take that repository's commit.
    if top is None or Path(top.strip()).resolve() != root.resolve():
        return None
    sha = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    if sha is None:
        return None
    status = _git(root, "status", "--porcelain")
    return sha.strip(), status is None or bool(status.strip())


def render(sha: str, dirty: bool) -> str:
    return (
        '"""Written by hatch_build.py when the package was built; do not edit (gitignored)."""\n\n'
        f"GIT_SHA = {sha!r}\nGIT_DIRTY = {dirty!r}\n"
    )


def write_stamp(root: Path) -> Path:
    """Write (or keep) the stamp under ``root``; returns its path."""
    path = root / STAMP
    stamp = git_stamp(root)
    if stamp is None and path.is_file():
        return path  # an sdist's stamp, made where the sdist was built
    text = render(*(stamp or UNKNOWN))
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


class BuildInfoHook(BuildHookInterface[BuilderConfig]):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        write_stamp(Path(self.root))
        build_data["artifacts"].append("/" + STAMP.as_posix())
