"""Toolset names and what a ``--toolsets`` selection means (standard library only: the stdio
front narrows ``tools/list`` with it before the registry is loaded).

The seven Quipu toolsets are the default surface. ``logic`` (the logic memory's 29 tools) is
opt-in: it is served only when a selection names it, or names ``all``. Two special names, as
the GitHub MCP server spells them, stand for groups: ``default`` (the seven) and ``all`` (every
toolset), so ``default,logic`` is the usual surface plus the logic memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

DEFAULT_TOOLSETS: Final = ("data", "search", "graphs", "governance", "sharing", "events", "service")
LOGIC: Final = "logic"
OPT_IN_TOOLSETS: Final = (LOGIC,)
ALL_TOOLSETS: Final = (*DEFAULT_TOOLSETS, *OPT_IN_TOOLSETS)
DEFAULT: Final = "default"
ALL: Final = "all"
NAMES: Final = (*ALL_TOOLSETS, DEFAULT, ALL)  # every name a selection may use, as refusals list them


def unknown(names: Iterable[str]) -> list[str]:
    """The names of ``names`` that are neither a toolset nor a special name, sorted."""
    return sorted(set(names) - set(NAMES))


def expand(names: Iterable[str] | None) -> frozenset[str]:
    """The toolsets a selection serves: None (no flag, no setting) is the default surface;
    ``default`` and ``all`` stand for their groups. Unknown names are the caller's to refuse."""
    if names is None:
        return frozenset(DEFAULT_TOOLSETS)
    wanted: set[str] = set()
    for name in names:
        if name == DEFAULT:
            wanted.update(DEFAULT_TOOLSETS)
        elif name == ALL:
            wanted.update(ALL_TOOLSETS)
        else:
            wanted.add(name)
    return frozenset(wanted)
