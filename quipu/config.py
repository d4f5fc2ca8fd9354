"""One typed settings object, built once at start-up.

Sources, weakest first: defaults, the ``[quipu]`` table of a TOML file (``quipu.toml`` in the
working directory, or ``--config`` / ``QUIPU_CONFIG``), ``QUIPU_*`` environment variables
(``QUIPU_STORE__DB``, ``QUIPU_SERVER__PORT``, …) and finally CLI flags.
"""

from __future__ import annotations

import os
import tomllib
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from quipu.errors import ConfigError

DEFAULT_CONFIG_FILE = "quipu.toml"
# The --config flag for the Settings being built right now (sources are classmethods).
_config_file: ContextVar[str | None] = ContextVar("quipu_config_file", default=None)


class StoreSettings(BaseModel):
    db: str = "quipu.db"
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    cache_mb: int = Field(256, ge=1)
    readers: int = Field(4, ge=1)


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    auth_token: str | None = None
    read_only: bool = False


class SearchSettings(BaseModel):
    query_timeout_ms: int = Field(30_000, ge=0)
    max_join_rows: int = Field(1_000_000, ge=0)
    max_sparql_rows: int = Field(10_000, ge=1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QUIPU_", env_nested_delimiter="__", extra="forbid")

    store: StoreSettings = StoreSettings()
    server: ServerSettings = ServerSettings()
    search: SearchSettings = SearchSettings()
    base_ns: str = "http://aegis.gastown.local/ontology/"

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _TomlSource(settings_cls)


class _TomlSource(PydanticBaseSettingsSource):
    """The ``[quipu]`` table of the config file, when there is one."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        explicit = _config_file.get() or os.environ.get("QUIPU_CONFIG")
        path = Path(explicit) if explicit else Path(DEFAULT_CONFIG_FILE)
        if not path.exists():
            if explicit:
                raise ConfigError(f"config file not found: {path}")
            return {}
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {path}: {exc}") from None
        table = data.get("quipu", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [quipu] must be a table")
        return table


def _strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_none(v) for k, v in value.items() if v is not None}
    return value


def load_settings(config_file: str | None = None, **overrides: Any) -> Settings:
    """Build the settings; ``overrides`` are CLI flags as nested dicts (None means unset)."""
    token = _config_file.set(config_file)
    try:
        return Settings(**_strip_none(overrides))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise ConfigError(f"invalid configuration: {problems}") from None
    finally:
        _config_file.reset(token)
