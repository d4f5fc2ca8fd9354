"""The server's own signing identity: an Ed25519 key that signs policy verdicts (§5.1 step 6).

``[quipu.governance] signing_key_file`` names a PEM (PKCS#8) Ed25519 private key, as
``openssl genpkey -algorithm ed25519`` writes one, or a file holding the 32-byte seed as 64 hex
digits. It must be a private regular file (mode 600 or 400): a looser mode refuses to start,
since anyone who can read the key can sign verdicts in the server's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from quipu.errors import ConfigError
from quipu.secret_files import read_private

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_KEY_FILE = 16 * 1024


@dataclass(frozen=True)
class SigningIdentity:
    name: str  # the verifier name verdicts are signed as (v1: "quipu")
    key: Ed25519PrivateKey

    @property
    def public_hex(self) -> str:
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        return self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()

    def sign(self, message: bytes) -> str:
        return self.key.sign(message).hex()


def load(path_text: str, name: str) -> SigningIdentity:
    """Read and check the key file; every problem is a ConfigError naming the setting."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    what = "governance.signing_key_file"
    path = Path(path_text).expanduser()
    data = read_private(path_text, what, kind="key file", max_bytes=MAX_KEY_FILE, fix=True)
    text = data.decode("ascii", errors="replace").strip()
    if len(text) == 64 and all(c in "0123456789abcdefABCDEF" for c in text):
        return SigningIdentity(name, Ed25519PrivateKey.from_private_bytes(bytes.fromhex(text)))
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise ConfigError(
            f"{what}: {path} is neither a PEM private key nor a 64-hex-digit seed: {exc}"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{what}: {path} holds a {type(key).__name__}, not an Ed25519 key")
    return SigningIdentity(name, key)
