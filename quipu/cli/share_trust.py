"""``quipu share keygen|trust|revoke``: the key and session acts around producer attestation
(tools-graphs-governance §4.0.6). CLI only: none of them is reachable over HTTP or MCP.

* ``keygen FILE`` writes a new Ed25519 private key (PEM, mode 600) for ``--attest-key`` and
  prints its public half.
* ``trust BINDING.json`` is the receiver registering a producer's session binding through a
  channel other than the share itself; only then can that session's shares import ``attested``.
* ``revoke SESSION`` stops a registered session from attesting anything again.

``register`` adds the three commands to the ``share`` group (quipu/cli/sharing.py).
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from quipu.cli.common import ConfigOption, DbOption, emit, open_store, read_text
from quipu.errors import InvalidField


def share_keygen(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="where to write the private key (must not exist)")
    ],
) -> None:
    """Write a new Ed25519 private key (PEM, mode 600) and print its public key and key_id."""
    from quipu.sharing.attestation import new_key_file  # the store stack loads only to run it

    emit(new_key_file(file))


def share_trust(
    binding_file: Annotated[
        str, typer.Argument(metavar="BINDING", help="the producer's binding JSON (- for stdin)")
    ],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Register a producer's session binding, received outside the share, so its shares can
    import as attested. Registering it again changes nothing."""
    from quipu.sharing.attestation import register_binding

    text = read_text(binding_file, "BINDING", what="binding")
    try:
        binding = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidField(f"binding file is not JSON: {exc}", field="binding") from None
    with open_store(db, config) as kb:
        emit(register_binding(kb.db, binding))


def share_revoke(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="the registered session id")],
    db: DbOption = None,
    config: ConfigOption = None,
) -> None:
    """Revoke a registered session: its envelopes refuse every later import."""
    from quipu.sharing.attestation import revoke_session

    with open_store(db, config) as kb:
        emit(revoke_session(kb.db, session))


def register(app: typer.Typer) -> None:
    """Add ``keygen``, ``trust`` and ``revoke`` to ``app`` (the ``share`` command group)."""
    app.command("keygen")(share_keygen)
    app.command("trust")(share_trust)
    app.command("revoke")(share_revoke)
