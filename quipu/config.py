"""One typed settings object, built once at start-up.

Sources, weakest first: defaults; the ``[quipu]`` table of the user's file
(``$XDG_CONFIG_HOME/quipu/config.toml``, else ``~/.config/quipu/config.toml``); the ``[quipu]``
table of ``quipu.toml`` in the working directory (or of the file named by ``--config`` /
``QUIPU_CONFIG``, which takes its place); ``QUIPU_*`` environment variables (``QUIPU_STORE__DB``,
``QUIPU_SERVER__PORT``, …); and finally CLI flags. Every key is listed in ``docs/config.md``,
and a test checks that each documented key exists here and is read by the code.
"""

from __future__ import annotations

import importlib.util
from contextvars import ContextVar
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from quipu.config_files import config_tables
from quipu.defaults import DEFAULT_PORT, OWL_REASONER
from quipu.errors import ConfigError

# The --config flag for the Settings being built right now (sources are classmethods).
_config_file: ContextVar[str | None] = ContextVar("quipu_config_file", default=None)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreSettings(_Section):
    db: str = "quipu.db"
    synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "NORMAL"
    cache_mb: int = Field(256, ge=1)
    wal_checkpoint_mb: int = Field(16, ge=1)
    readers: int = Field(4, ge=1)


class NamedCredential(_Section):
    """A service-specific bearer token: a principal, and the token as a file or a salted hash.

    The token itself never appears in the config: ``token_file`` names a private file holding
    it, or ``token_hash`` holds ``sha256:<salt hex>:<hex of sha256(salt || token)>`` (made by
    ``quipu token``).
    """

    principal: str = Field(min_length=1, max_length=256)
    id: str | None = Field(None, min_length=1, max_length=256)  # credential_id; default: principal
    token_file: str | None = None
    token_hash: str | None = None

    @model_validator(mode="after")
    def _one_secret(self) -> NamedCredential:
        if (self.token_file is None) == (self.token_hash is None):
            raise ValueError(f"credential {self.principal!r} needs exactly one of token_file or token_hash")
        return self

    @property
    def credential_id(self) -> str:
        return self.id or self.principal


class ServerSettings(_Section):
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    auth_token: str | None = None
    read_only: bool = False
    credentials: list[NamedCredential] = []
    cors_allowed_origins: list[str] = []
    read_auth: Literal["open", "token"] = "open"  # "token": reads need a credential too (not /health)
    max_concurrent_queries: int | None = Field(None, ge=1)  # per read lane; None: 2 x CPU cores
    queue_timeout_ms: int = Field(5_000, ge=0)  # how long a read waits for a slot before its 503

    @field_validator("auth_token")
    @classmethod
    def _usable_token(cls, value: str | None) -> str | None:
        if value is not None and len(value.strip()) < 16:
            raise ValueError("auth_token must be at least 16 characters (use a random secret)")
        return value.strip() if value is not None else None

    @model_validator(mode="after")
    def _reads_can_authenticate(self) -> ServerSettings:
        if self.read_auth == "token" and self.auth_token is None and not self.credentials:
            raise ValueError('read_auth = "token" needs a credential: set auth_token or credentials')
        return self

    @model_validator(mode="after")
    def _unique_credentials(self) -> ServerSettings:
        for attr in ("principal", "credential_id"):
            seen = [getattr(c, attr) for c in self.credentials]
            doubles = sorted({x for x in seen if seen.count(x) > 1})
            if doubles:
                raise ValueError(f"credentials: {attr} used more than once: {', '.join(doubles)}")
        return self


class SearchSettings(_Section):
    """Query budgets and the search tools' switches and defaults (tools-search §1.1)."""

    query_timeout_ms: int = Field(30_000, ge=0)
    max_join_rows: int = Field(1_000_000, ge=0)
    max_sparql_rows: int = Field(10_000, ge=1)
    default_limit: int = Field(10, ge=1)  # results when the caller gives no limit
    max_limit: int = Field(1000, ge=1)  # hard clamp for caller limits
    oversample_factor: int = Field(10, ge=1)  # candidates fetched per result before filtering
    mode: Literal["semantic", "keyword", "hybrid"] = "semantic"  # quipu_search's default mode
    keyword: bool = False  # keyword mode (the index itself is built by `quipu search-index`)
    hybrid: bool = False  # mode "hybrid"
    alpha: float = Field(0.5, ge=0.0, le=1.0)  # hybrid's default semantic weight
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: float = Field(60.0, gt=0)
    anchored: bool = False  # anchored (graph-rooted) search
    named_graphs: bool = False  # explicit graph scope for semantic and hybrid search


class ResolutionSettings(_Section):
    """``quipu_resolve_entity``'s defaults (tools-search §1.3)."""

    threshold: float = Field(0.85, ge=0.0, le=1.0)
    top_k: int = Field(3, ge=0)


class VectorSettings(_Section):
    """Where vectors live: the store's own table is the one backend served (spec errata)."""

    backend: Literal["sqlite"] = "sqlite"


class EmbeddingSettings(_Section):
    """The local embedding model (tools-search §1.2): a provider exists only when both paths are set."""

    auto_embed: bool = False  # embed the entities an episode write touched
    embed_batch_size: int = Field(32, ge=0)  # texts per provider call on the write path (0: 32)
    model_path: str | None = None  # the weights, conventionally <model dir>/model.safetensors
    tokenizer_path: str | None = None  # conventionally <model dir>/tokenizer.json
    dimension: int = Field(384, ge=1)
    max_sequence_length: int = Field(256, ge=0)  # tokens per text; longer texts are cut (0: 256)


class McpSettings(_Section):
    """The MCP adapter: which tools it serves, and the hosts ``/mcp`` answers to."""

    toolsets: list[str] | None = None  # None: the default toolsets (the opt-in logic one left out)
    read_only_tools: bool = False
    allowed_hosts: list[str] = []  # beyond loopback and server.host; "name:*" allows any port


class ShaclSettings(_Section):
    validate_on_write: bool = False  # stored shape sets gate episode writes (tools-core §3.4)


class OwlSettings(_Section):
    """The owl extra (docs/owl.md); without it these keys are accepted and have no effect."""

    # the OWL write gate (owl:disjointWith, owl:FunctionalProperty) on ROOT writes; None: on
    # exactly when the extra is installed
    validate_on_write: bool | None = None
    reactive_materialize: bool = False  # re-materialise right after a relevant committed ROOT write


def owl_installed() -> bool:
    """Whether the ``owl`` extra is installed: its reasoner is found, and not imported."""
    return importlib.util.find_spec(OWL_REASONER) is not None


class LogicSettings(_Section):
    """The zpm-compatible logic memory (``/logic/<tool>``)."""

    project: str | None = None  # the folder whose .zpm/ is used; None: discover from the cwd
    # The store (a file path or database URL) zpm's rdf/3 family reads (docs/logic.md);
    # quipu-server always reads its own store.
    store: str | None = None


class GovernanceSettings(_Section):
    """Policy verdicts and their verification (docs/governance.md)."""

    signing_key_file: str | None = None  # the server's Ed25519 key (mode 600); None: unsigned
    hardware_verdict_schemes: bool = False  # verify WebAuthn and SSHSIG verdicts too


class WorkflowSettings(_Section):
    """The direct-workflow guard on /update (tools-core §3.10 rule 9; docs/governance.md)."""

    enforce_direct_updates: bool = False
    scope: list[str] = []  # predicate IRIs an update may change only with a workflow signature
    verifier: str = "workflow"  # the verifier registration whose key signs guarded updates


class ReasoningSettings(_Section):
    """The Datalog reasoner (docs/reasoning.md)."""

    reactive: bool = False  # maintain the stored rules' derivations right after every write


class LabelsSettings(_Section):
    """Label floors (tools-graphs-governance §1.3): unset keys mean no label work at all. A
    floor refuses a read whose graphs fall below it; it is not access control."""

    min_freshness: Literal["fresh", "recomputing", "stale"] | None = None
    min_trust_rank: int | None = None  # needs min_trust_chain: ranks compare only within a chain
    min_trust_chain: str | None = None
    deny_policy_tokens: list[str] = []
    deny_data_kinds: list[str] = []  # a blocklist: an undeclared kind passes


class GraphsSettings(_Section):
    archive_dir: str | None = None  # where freeze writes packs; None: the store file's directory


class EventsSettings(_Section):
    """The event feeds (docs/events.md): retention and webhook delivery."""

    retention_days: int | None = Field(None, ge=1)  # None: events are kept forever
    webhook_allow_private: bool = False  # loopback, link-local and private receivers (SSRF guard)
    delivery_interval_s: float = Field(2.0, gt=0, le=3600)  # how often the worker looks for events
    delivery_timeout_s: float = Field(10.0, gt=0, le=300)  # one POST to a receiver
    retry_max_s: float = Field(300.0, ge=1, le=86_400)  # cap of the backoff between failed attempts


class SharingSettings(_Section):
    """Shares and acquisition (docs/sharing.md)."""

    # The largest share the server builds, returns or accepts: a request may lower it, never raise it.
    max_share_bytes: int = Field(8 * 1024 * 1024, ge=1024, le=64 * 1024 * 1024)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="QUIPU_", env_nested_delimiter="__", extra="forbid")

    store: StoreSettings = StoreSettings()
    server: ServerSettings = ServerSettings()
    search: SearchSettings = SearchSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    resolution: ResolutionSettings = ResolutionSettings()
    vector: VectorSettings = VectorSettings()
    mcp: McpSettings = McpSettings()
    shacl: ShaclSettings = ShaclSettings()
    owl: OwlSettings = OwlSettings()
    logic: LogicSettings = LogicSettings()
    reasoning: ReasoningSettings = ReasoningSettings()
    governance: GovernanceSettings = GovernanceSettings()
    workflow: WorkflowSettings = WorkflowSettings()
    labels: LabelsSettings = LabelsSettings()
    graphs: GraphsSettings = GraphsSettings()
    events: EventsSettings = EventsSettings()
    sharing: SharingSettings = SharingSettings()
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
    """The ``[quipu]`` tables of the user's file and the project's (or ``--config``) file."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return config_tables(_config_file.get())


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
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {problems}") from None
    finally:
        _config_file.reset(token)
