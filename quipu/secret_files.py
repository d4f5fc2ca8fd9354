"""Files that hold secrets named by the settings (bearer tokens, the signing key): private,
regular and small, or the server refuses to start and says which file and why."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from quipu.errors import ConfigError


def read_private(path_text: str, what: str, *, kind: str, max_bytes: int, fix: bool = False) -> bytes:
    """The bytes of ``path_text``, a regular file of at most ``max_bytes`` that only its owner
    can read (mode 600 or 400). ``what`` names the setting and ``kind`` the file in every
    refusal; ``fix`` adds the ``chmod`` that repairs a loose mode."""
    path = Path(path_text).expanduser()
    try:
        info = path.stat()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {kind} {path}: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{what}: {kind} {path} is not a regular file")
    if info.st_size > max_bytes:
        raise ConfigError(f"{what}: {kind} {path} is larger than {max_bytes} bytes")
    if os.name == "posix" and stat.S_IMODE(info.st_mode) not in (0o600, 0o400):
        mode = oct(stat.S_IMODE(info.st_mode))[2:]
        hint = f" (chmod 600 {path})" if fix else ""
        raise ConfigError(f"{what}: {kind} {path} must be private: mode 600 or 400, not {mode}{hint}")
    return path.read_bytes()
