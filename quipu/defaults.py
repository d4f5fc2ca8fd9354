"""Defaults the command line shows before any settings are loaded (``quipu-server --help``), kept
apart from ``quipu.config`` so that showing them imports no settings machinery."""

from __future__ import annotations

from typing import Final

DEFAULT_PORT: Final = 3030
# Idle keep-alive connections are held longer than client pools keep theirs (httpx: 5 s), so a
# client never reuses a connection the server is closing at the same instant.
KEEP_ALIVE_SECONDS: Final = 65
# The owl extra's reasoner: the extra is installed exactly when this module can be found.
OWL_REASONER: Final = "reasonable"
