"""Where the settings files are, and their ``[quipu]`` tables merged: plain TOML, no validation.

``quipu.config`` builds the typed settings from these tables; the stdio server also peeks at
them before that (quipu/cli/stdio_launch.py), to narrow its cached tool list without waiting a
third of a second for the settings library to load.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Final

from quipu.errors import ConfigError

DEFAULT_CONFIG_FILE: Final = "quipu.toml"


def user_config_file() -> Path:
    """The per-user config file (XDG base directory rules)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "quipu" / "config.toml"


def _read_table(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML in {path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    table = data.get("quipu", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [quipu] must be a table")
    return table


def _merge(weak: dict[str, Any], strong: dict[str, Any]) -> dict[str, Any]:
    out = dict(weak)
    for key, value in strong.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def config_tables(explicit: str | None) -> dict[str, Any]:
    """The user's ``[quipu]`` table overlaid with the project's (``explicit``, else ``QUIPU_CONFIG``,
    else ``quipu.toml`` in the working directory); an explicit file must exist."""
    explicit = explicit or os.environ.get("QUIPU_CONFIG")
    merged: dict[str, Any] = {}
    user = user_config_file()
    if user.is_file():
        merged = _read_table(user)
    path = Path(explicit) if explicit else Path(DEFAULT_CONFIG_FILE)
    if path.exists():
        merged = _merge(merged, _read_table(path))
    elif explicit:
        raise ConfigError(f"config file not found: {path}")
    return merged
