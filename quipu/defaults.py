"""Defaults the command line shows before any settings are loaded (``quipu-server --help``), kept
apart from ``quipu.config`` so that showing them imports no settings machinery."""

from __future__ import annotations

from typing import Final

DEFAULT_PORT: Final = 3030
