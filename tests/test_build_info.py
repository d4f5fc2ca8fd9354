"""The build stamp behind ``/version`` (tools-core §4.3) and the ``features`` it reports.

``hatch_build.py`` writes ``quipu/_build_info.py`` at build time; these tests run it on temp git
repositories and build real sdists and wheels of a copy of the project with hatchling, so the
stamp is checked where it ends up: in the packaged file. ``features`` is checked on handwritten
distribution metadata.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import types
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import hatch_build
from quipu import version
from quipu.config import owl_installed

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parent.parent
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
# Temp repositories must not pick up the developer's git config (signing, hooks, templates).
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.strip()


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A git repository at ``path`` with ``files`` committed; returns the commit."""
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "test")
    return git(path, "rev-parse", "HEAD")


def stamp_of(text: str) -> tuple[str, bool]:
    namespace: dict[str, object] = {}
    exec(text, namespace)
    return str(namespace["GIT_SHA"]), bool(namespace["GIT_DIRTY"])


# -- the hook's stamp -------------------------------------------------------------------------


@needs_git
def test_a_clean_checkout_is_stamped_with_its_commit(tmp_path: Path) -> None:
    sha = make_repo(tmp_path, {".gitignore": "quipu/_build_info.py\n", "quipu/__init__.py": ""})
    path = hatch_build.write_stamp(tmp_path)
    assert path == tmp_path / "quipu" / "_build_info.py"
    assert stamp_of(path.read_text()) == (sha, False)  # the (gitignored) stamp does not dirty it


@needs_git
@pytest.mark.parametrize("change", ["edit", "untracked"])
def test_a_changed_checkout_is_stamped_dirty(tmp_path: Path, change: str) -> None:
    sha = make_repo(tmp_path, {".gitignore": "*.log\n", "quipu/__init__.py": ""})
    (tmp_path / "build.log").write_text("ignored files do not count")
    assert hatch_build.git_stamp(tmp_path) == (sha, False)
    if change == "edit":
        (tmp_path / "quipu" / "__init__.py").write_text("x = 1\n")
    else:  # an untracked, unignored file would be packaged, so the build differs from the commit
        (tmp_path / "quipu" / "new.py").write_text("")
    assert hatch_build.git_stamp(tmp_path) == (sha, True)


@needs_git
def test_a_tree_inside_another_repository_does_not_take_its_commit(tmp_path: Path) -> None:
    make_repo(tmp_path, {"README": "outer"})
    inner = tmp_path / "unpacked-sdist"
    (inner / "quipu").mkdir(parents=True)
    assert hatch_build.git_stamp(inner) is None
    assert stamp_of(hatch_build.write_stamp(inner).read_text()) == ("unknown", False)


def test_without_git_an_existing_stamp_is_kept_else_unknown(tmp_path: Path) -> None:
    (tmp_path / "quipu").mkdir()
    assert stamp_of(hatch_build.write_stamp(tmp_path).read_text()) == ("unknown", False)
    sdist_stamp = hatch_build.render("0123456789abcdef0123456789abcdef01234567", True)
    (tmp_path / "quipu" / "_build_info.py").write_text(sdist_stamp)
    assert hatch_build.write_stamp(tmp_path).read_text() == sdist_stamp


# -- real builds of a copy of the project -----------------------------------------------------


def copy_project(dest: Path) -> Path:
    dest.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", "_build_info.py")
    for name in ("pyproject.toml", "hatch_build.py", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("quipu", "migrations"):
        shutil.copytree(ROOT / name, dest / name, ignore=skip)
    (dest / ".gitignore").write_text("quipu/_build_info.py\n")
    return dest


def build(project: Path, kind: str, out: Path) -> Path:
    """Build an sdist or wheel with hatchling in a fresh interpreter, as a frontend would."""
    out.mkdir(parents=True, exist_ok=True)
    code = f"import sys, hatchling.build as b; print(b.build_{kind}(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return out / proc.stdout.strip().splitlines()[-1]


def wheel_stamp(wheel: Path) -> tuple[str, bool]:
    with zipfile.ZipFile(wheel) as z:
        return stamp_of(z.read("quipu/_build_info.py").decode())


def explorer_files(wheel: Path) -> set[str]:
    """The web explorer's package data in a wheel (``pip install quipu`` serves /ui from it)."""
    with zipfile.ZipFile(wheel) as z:
        return {n.removeprefix("quipu/rest/ui_assets/") for n in z.namelist() if "/ui_assets/" in n}


EXPLORER = {"index.html", "explorer.css", "js/main.js", "vendor/d3-force.min.js", "vendor/LICENSE-d3.txt"}


@needs_git
def test_wheel_and_sdist_carry_the_stamp_and_a_wheel_built_from_the_sdist_keeps_it(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "checkout")
    sha = make_repo(project, {})
    wheel = build(project, "wheel", tmp_path / "dist")
    assert wheel_stamp(wheel) == (sha, False)
    assert explorer_files(wheel) >= EXPLORER

    sdist = build(project, "sdist", tmp_path / "dist")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (unpacked,) = (tmp_path / "unpacked").iterdir()
    assert stamp_of((unpacked / "quipu" / "_build_info.py").read_text()) == (sha, False)
    assert not (unpacked / ".git").exists()
    rebuilt = build(unpacked, "wheel", tmp_path / "from-sdist")
    assert wheel_stamp(rebuilt) == (sha, False)
    assert explorer_files(rebuilt) >= EXPLORER


def test_a_source_tree_without_git_builds_with_an_unknown_stamp(tmp_path: Path) -> None:
    project = copy_project(tmp_path / "tarball")
    assert wheel_stamp(build(project, "wheel", tmp_path / "dist")) == ("unknown", False)


def test_pyproject_runs_the_hook_and_rebuilds_on_a_new_commit() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "custom" in config["tool"]["hatch"]["build"]["hooks"]  # default path: hatch_build.py
    keys = config["tool"]["uv"]["cache-keys"]
    assert {"git": {"commit": True}} in keys
    assert {"file": "pyproject.toml"} in keys  # cache-keys replace uv's default, so name it again
    assert "quipu/_build_info.py" in (ROOT / ".gitignore").read_text().split()


# -- reading the stamp ------------------------------------------------------------------------


def test_build_stamp_reads_the_generated_module(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("quipu._build_info")
    fake.GIT_SHA = "f" * 40  # type: ignore[attr-defined]
    fake.GIT_DIRTY = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "quipu._build_info", fake)
    assert version.build_stamp() == ("f" * 40, True)
    assert version.version_info()["git_sha"] == "f" * 40


def test_build_stamp_is_unknown_without_the_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "quipu._build_info", None)  # import fails
    assert version.build_stamp() == ("unknown", False)


# -- features ---------------------------------------------------------------------------------


def fake_distribution(site: Path, name: str, lines: list[str]) -> metadata.Distribution:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    header = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    (info / "METADATA").write_text("\n".join(header + lines) + "\n")
    return metadata.PathDistribution(info)


def test_features_name_every_extra_with_whether_its_requirements_are_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    fake_distribution(
        tmp_path,
        "quipu_fake_dep",
        [
            "Provides-Extra: works",
            'Requires-Dist: pydantic>=2; extra == "works"',
            "Provides-Extra: broken",
            'Requires-Dist: quipu-surely-not-installed; extra == "broken"',
        ],
    )
    dist = fake_distribution(
        tmp_path,
        "quipu_fake",
        [
            "Requires-Dist: quipu-surely-not-installed; python_version < '3'",  # base, and not here
            "Provides-Extra: shacl",
            'Requires-Dist: pydantic>=2; extra == "shacl"',
            "Provides-Extra: mcp",
            'Requires-Dist: quipu-surely-not-installed>=1; extra == "mcp"',
            "Provides-Extra: too-new",
            'Requires-Dist: pydantic>=999; extra == "too-new"',
            "Provides-Extra: other-os",
            'Requires-Dist: quipu-surely-not-installed; extra == "other-os" and sys_platform == "no-such-os"',
            "Provides-Extra: nested-ok",
            'Requires-Dist: quipu_fake_dep[works]; extra == "nested-ok"',
            "Provides-Extra: nested-broken",
            'Requires-Dist: quipu_fake_dep[broken]; extra == "nested-broken"',
            "Provides-Extra: loop",
            'Requires-Dist: quipu_fake[loop]; extra == "loop"',
        ],
    )
    assert version.features(dist) == {
        "loop": True,
        "mcp": False,
        "nested-broken": False,
        "nested-ok": True,
        "other-os": True,  # nothing it adds applies on this platform
        "shacl": True,
        "too-new": False,
    }


def test_quipu_declares_its_extras() -> None:
    # `embedding` brings the packaged model (docs/search.md); the dev environment has it.
    # `owl` (docs/owl.md) is installed only in the owl job's own virtualenv.
    assert version.installed_features() == {"embedding": True, "owl": owl_installed()}
    assert metadata.metadata("quipu").get_all("Provides-Extra") == ["embedding", "owl"]
