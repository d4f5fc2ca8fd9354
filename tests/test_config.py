"""Settings sources and their precedence, and the checks on credentials (quipu.config, docs/config.md).

Weakest first: defaults < user file (``$XDG_CONFIG_HOME/quipu/config.toml``) < project file
(``./quipu.toml``, or the one ``--config`` / ``QUIPU_CONFIG`` names) < ``QUIPU_*`` environment <
flags. Each test points ``XDG_CONFIG_HOME``, ``HOME`` and the working directory at temp dirs.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from quipu.config import load_settings
from quipu.config_files import user_config_file
from quipu.defaults import DEFAULT_PORT
from quipu.errors import ConfigError
from quipu.rest.auth import MAX_TOKEN_FILE, Credentials, hash_token

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

TOKEN = "a-token-of-at-least-sixteen-chars"
posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


@dataclass(frozen=True)
class Places:
    user: Path
    project: Path
    tmp: Path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Places:
    xdg, home, project = tmp_path / "xdg", tmp_path / "home", tmp_path / "project"
    for d in (xdg, home, project):
        d.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(project)
    return Places(xdg / "quipu" / "config.toml", project / "quipu.toml", tmp_path)


# -- precedence -----------------------------------------------------------------------------------


def test_defaults_apply_without_any_file(places: Places) -> None:
    s = load_settings()
    assert (s.store.db, s.server.host, s.server.port) == ("quipu.db", "127.0.0.1", DEFAULT_PORT)
    assert DEFAULT_PORT == 3030
    assert s.server.read_only is False and s.server.credentials == []


def test_user_file_is_read_from_xdg_config_home(places: Places) -> None:
    assert user_config_file() == places.user
    write(places.user, "[quipu.server]\nport = 4001\n")
    assert load_settings().server.port == 4001


def test_user_file_falls_back_to_dot_config_under_home(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    write(places.tmp / "home" / ".config" / "quipu" / "config.toml", "[quipu.server]\nport = 4011\n")
    assert load_settings().server.port == 4011


def test_project_file_overrides_user_file_key_by_key(places: Places) -> None:
    write(
        places.user,
        """
        [quipu.server]
        port = 4001
        host = "127.0.0.2"
        cors_allowed_origins = ["https://user.example"]
        [quipu.search]
        max_sparql_rows = 5
        """,
    )
    write(places.project, '[quipu.server]\nport = 4002\ncors_allowed_origins = ["https://project.example"]\n')
    s = load_settings()
    assert s.server.port == 4002
    assert s.server.host == "127.0.0.2"  # tables merge: the user's other keys stay
    assert s.search.max_sparql_rows == 5
    assert s.server.cors_allowed_origins == ["https://project.example"]  # lists replace


def test_environment_overrides_project_file(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    write(places.user, "[quipu.server]\nport = 4001\n")
    write(places.project, '[quipu.server]\nport = 4002\nhost = "127.0.0.3"\n')
    monkeypatch.setenv("QUIPU_SERVER__PORT", "4003")
    monkeypatch.setenv("QUIPU_SERVER__READ_ONLY", "true")
    s = load_settings()
    assert (s.server.port, s.server.host, s.server.read_only) == (4003, "127.0.0.3", True)


def test_flags_override_environment(places: Places, monkeypatch: pytest.MonkeyPatch) -> None:
    write(places.project, '[quipu.store]\ndb = "project.db"\n')
    monkeypatch.setenv("QUIPU_STORE__DB", "env.db")
    monkeypatch.setenv("QUIPU_SERVER__PORT", "4003")
    s = load_settings(store={"db": "flag.db"}, server={"port": 4004, "host": None, "read_only": None})
    assert (s.store.db, s.server.port) == ("flag.db", 4004)
    assert s.server.host == "127.0.0.1" and s.server.read_only is False  # None flags change nothing


def test_config_flag_takes_the_project_files_place(places: Places) -> None:
    write(places.user, "[quipu.search]\nmax_sparql_rows = 7\n")
    write(places.project, "[quipu.server]\nport = 4002\n")
    other = write(places.tmp / "other.toml", "[quipu.server]\nread_only = true\n")
    s = load_settings(str(other))
    assert s.server.read_only is True
    assert s.server.port == DEFAULT_PORT  # ./quipu.toml is not read
    assert s.search.max_sparql_rows == 7  # the user file still is


def test_quipu_config_names_the_file_and_the_flag_wins(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_env = write(places.tmp / "env.toml", "[quipu.server]\nport = 4005\n")
    by_flag = write(places.tmp / "flag.toml", "[quipu.server]\nport = 4006\n")
    monkeypatch.setenv("QUIPU_CONFIG", str(by_env))
    assert load_settings().server.port == 4005
    assert load_settings(str(by_flag)).server.port == 4006


def test_a_named_config_file_must_exist(places: Places) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(str(places.tmp / "missing.toml"))


def test_invalid_toml_names_the_file(places: Places) -> None:
    write(places.project, "[quipu.server\nport = 1\n")
    with pytest.raises(ConfigError, match=r"invalid TOML in quipu\.toml"):
        load_settings()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("[quipu.server]\nprot = 1\n", "server.prot"),
        ("[quipu]\nbogus = 1\n", "bogus"),
        ('[quipu.server]\nport = "high"\n', "server.port"),
        ("[quipu.server]\nport = 70000\n", "server.port"),
        ('[quipu.store]\nsynchronous = "SOMETIMES"\n', "store.synchronous"),
        ("[quipu.search]\nmax_sparql_rows = 0\n", "search.max_sparql_rows"),
    ],
)
def test_a_bad_key_or_value_is_refused_by_name(places: Places, text: str, where: str) -> None:
    write(places.project, text)
    with pytest.raises(ConfigError, match="invalid configuration") as caught:
        load_settings()
    assert where in caught.value.message


# -- credentials ----------------------------------------------------------------------------------


def credentials_toml(*entries: str) -> str:
    return "".join(f"[[quipu.server.credentials]]\n{textwrap.dedent(e)}\n" for e in entries)


def private_token_file(path: Path, token: str = TOKEN, mode: int = 0o600) -> Path:
    path.write_text(token + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def test_named_credentials_load_and_verify(places: Places) -> None:
    token_file = private_token_file(places.tmp / "bot.token", "file-token-0123456789")
    write(
        places.project,
        credentials_toml(
            f'principal = "ci-bot"\nid = "ci-bot-1"\ntoken_hash = "{hash_token(TOKEN)}"',
            f'principal = "nightly"\ntoken_file = "{token_file}"',
        ),
    )
    creds = Credentials.from_settings(load_settings().server)
    bot = creds.verify(f"Bearer {TOKEN}")
    nightly = creds.verify("bearer  file-token-0123456789 ")
    assert bot is not None and (bot.principal, bot.credential_id) == ("ci-bot", "ci-bot-1")
    assert nightly is not None and (nightly.principal, nightly.credential_id) == ("nightly", "nightly")
    assert creds.verify("Bearer wrong-token-0123456789") is None


def test_a_credential_with_both_token_file_and_token_hash_is_refused(places: Places) -> None:
    write(
        places.project,
        credentials_toml(f'principal = "a"\ntoken_file = "x"\ntoken_hash = "{hash_token(TOKEN)}"'),
    )
    with pytest.raises(ConfigError, match="exactly one of token_file or token_hash"):
        load_settings()


def test_a_credential_with_neither_token_file_nor_token_hash_is_refused(places: Places) -> None:
    write(places.project, credentials_toml('principal = "a"'))
    with pytest.raises(ConfigError, match="exactly one of token_file or token_hash"):
        load_settings()


def test_a_duplicate_principal_is_refused(places: Places) -> None:
    write(
        places.project,
        credentials_toml(
            f'principal = "a"\nid = "one"\ntoken_hash = "{hash_token(TOKEN)}"',
            f'principal = "a"\nid = "two"\ntoken_hash = "{hash_token(TOKEN + "x")}"',
        ),
    )
    with pytest.raises(ConfigError, match="principal used more than once: a"):
        load_settings()


def test_a_duplicate_credential_id_is_refused(places: Places) -> None:
    write(
        places.project,
        credentials_toml(
            f'principal = "a"\nid = "same"\ntoken_hash = "{hash_token(TOKEN)}"',
            f'principal = "same"\ntoken_hash = "{hash_token(TOKEN + "x")}"',
        ),
    )
    with pytest.raises(ConfigError, match="credential_id used more than once: same"):
        load_settings()


@posix_only
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o610])
def test_a_token_file_open_to_others_is_refused(places: Places, mode: int) -> None:
    token_file = private_token_file(places.tmp / "open.token", mode=mode)
    settings = load_settings(server={"credentials": [{"principal": "a", "token_file": str(token_file)}]})
    with pytest.raises(ConfigError, match="must be private"):
        Credentials.from_settings(settings.server)


@posix_only
def test_a_read_only_private_token_file_is_accepted(places: Places) -> None:
    token_file = private_token_file(places.tmp / "ro.token", mode=0o400)
    settings = load_settings(server={"credentials": [{"principal": "a", "token_file": str(token_file)}]})
    assert Credentials.from_settings(settings.server).verify(f"Bearer {TOKEN}") is not None


@pytest.mark.parametrize(
    ("make", "phrase"),
    [
        (lambda d: d / "missing.token", "cannot read token file"),
        (lambda d: d, "not a regular file"),
        (lambda d: private_token_file(d / "big.token", "x" * (MAX_TOKEN_FILE + 1)), "larger than 4096 bytes"),
        (lambda d: private_token_file(d / "short.token", "short"), "shorter than 16"),
    ],
)
def test_an_unusable_token_file_is_refused(places: Places, make: Callable[[Path], Path], phrase: str) -> None:
    path = make(places.tmp)
    settings = load_settings(server={"credentials": [{"principal": "a", "token_file": str(path)}]})
    with pytest.raises(ConfigError, match=phrase):
        Credentials.from_settings(settings.server)


def test_a_malformed_token_hash_is_refused(places: Places) -> None:
    settings = load_settings(server={"credentials": [{"principal": "a", "token_hash": "md5:00:11"}]})
    with pytest.raises(ConfigError, match="token_hash must be"):
        Credentials.from_settings(settings.server)


@pytest.mark.parametrize("token", ["short", "   fifteen-chars   ", ""])
def test_a_short_auth_token_is_refused(places: Places, token: str) -> None:
    with pytest.raises(ConfigError, match="auth_token must be at least 16 characters"):
        load_settings(server={"auth_token": token})


def test_a_short_auth_token_from_the_environment_is_refused(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QUIPU_SERVER__AUTH_TOKEN", "tooshort")
    with pytest.raises(ConfigError, match=r"server\.auth_token"):
        load_settings()


def test_the_shared_auth_token_is_trimmed(places: Places) -> None:
    assert load_settings(server={"auth_token": f"  {TOKEN}\n"}).server.auth_token == TOKEN
