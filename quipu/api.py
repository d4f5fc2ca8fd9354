"""The embedding API and the composition root: ``kb = quipu.open(path)``, then knot / retract /
set / query / export.

``KnowledgeBase`` opens the database, holds the store's settings (query budgets, the episode
namespace, the SHACL switch) and one service object per capability family that has state of its
own (``uploads``, ``search``). Its verbs are the families' own functions bound to this store and its
settings (``functools.partial``) — not wrappers — so each operation's parameters are written
once, where the operation is implemented. The REST routers call the same verbs and services.
"""

from __future__ import annotations

from functools import partial
from types import TracebackType
from typing import Final

from rdflib import Graph
from rdflib.term import Node

from quipu import __version__
from quipu.config import (
    EmbeddingSettings,
    EventsSettings,
    GovernanceSettings,
    LabelsSettings,
    OwlSettings,
    ResolutionSettings,
    SearchSettings,
    Settings,
    SharingSettings,
    WorkflowSettings,
    owl_installed,
)
from quipu.documents import export as documents_export
from quipu.documents.knot import knot
from quipu.episodes import retract as episode_retract
from quipu.episodes import write as episode_write
from quipu.episodes.iris import DEFAULT_BASE_NS
from quipu.events.service import Feeds
from quipu.governance import proposals
from quipu.governance.golden_paths import GoldenPaths
from quipu.governance.service import Governance
from quipu.governance.workflow import Workflow
from quipu.graphs.analytics import Analytics
from quipu.graphs.questions import Questions
from quipu.graphs.service import Graphs
from quipu.owl.service import Owl
from quipu.reasoning.reasoner import Reasoner
from quipu.search.service import Search
from quipu.shacl import gate, registry
from quipu.sharing.service import Sharing
from quipu.sparql.engine import run_query
from quipu.sparql.update import run_update
from quipu.store import budget as budgets
from quipu.store import ownership, reads, writes
from quipu.store.database import Database
from quipu.store.dialect import SqliteTuning
from quipu.store.graph_labels import LabelFloor
from quipu.store.graph_scope import check_floor_settings
from quipu.store.wal import DEFAULT_LIMIT_MB
from quipu.uploads.service import Uploads


class KnowledgeBase:
    """A bitemporal RDF store opened from a file path, ``":memory:"``, an SQLite or a PostgreSQL URL.

    The verbs, each documented where it is implemented:

    * writes: ``knot``, ``retract``, ``set``, ``retract_source``, ``update``, ``create_graph``,
      ``episode``, ``episodes_complete``, ``retract_episode``, ``stage_part``, ``promote``;
    * shapes and proposals: ``load_shapes``, ``remove_shapes``, ``shape_sets``, ``validate``,
      ``propose``, ``proposals``, ``accept_proposal``, ``reject_proposal``;
    * reads: ``query``, ``query_result``, ``export``, ``export_result``, ``cord``, ``unravel``,
      ``entity``, ``entity_history``, ``entity_turtle``, ``fragments``, ``transactions``,
      ``events``, ``stats``, ``time_span``, ``wal_bytes``.
    """

    def __init__(
        self,
        location: str,
        *,
        synchronous: str = "NORMAL",
        cache_mb: int = 256,
        wal_checkpoint_mb: int = DEFAULT_LIMIT_MB,
        readers: int = 4,
        max_readers: int | None = None,
        max_sparql_rows: int | None = None,
        sparql_compiler: bool = True,
        query_timeout_ms: int | None = None,
        max_join_rows: int | None = None,
        base_ns: str = DEFAULT_BASE_NS,
        validate_on_write: bool = False,
        embedding: EmbeddingSettings | None = None,
        search_settings: SearchSettings | None = None,
        resolution: ResolutionSettings | None = None,
        labels: LabelsSettings | None = None,
        archive_dir: str | None = None,
        events: EventsSettings | None = None,
        owl: OwlSettings | None = None,
        reactive: bool = False,
        governance: GovernanceSettings | None = None,
        workflow: WorkflowSettings | None = None,
        sharing: SharingSettings | None = None,
    ) -> None:
        # Query budgets (DM §13.3): None or 0 is unlimited, as in settings.search. Checked before
        # the store opens, so a bad one leaves nothing open.
        timeout_ms = budgets.limit("query_timeout_ms", query_timeout_ms)
        max_join_rows = budgets.limit("max_join_rows", max_join_rows)
        floor = _label_floor(labels)
        tuning = SqliteTuning(synchronous=synchronous, cache_mb=cache_mb, wal_checkpoint_mb=wal_checkpoint_mb)
        db = self.db = Database(location, tuning, readers=readers, max_readers=max_readers)
        db.label_floor = floor  # every reader enforces it (quipu.store.graph_scope)
        # The settings the verbs are bound with: Final, since changing one would not reach them.
        self.max_sparql_rows: Final = max_sparql_rows
        self.sparql_compiler: Final = sparql_compiler  # False forces rdflib's evaluator (to compare)
        self.query_timeout_ms: Final = timeout_ms
        self.max_join_rows: Final = max_join_rows
        self.base_ns: Final = base_ns  # episode IRIs are minted under it (DM §9.1)
        self.validate_on_write: Final = validate_on_write  # stored shapes SHACL-gate episodes (§3.4)

        # -- writes
        self.knot = partial(knot, db)
        self.retract = partial(writes.retract, db)
        self.set = partial(writes.set_value, db)
        self.retract_source = partial(ownership.retract_source, db)
        self.update = partial(run_update, db)
        self.create_graph = partial(writes.register_graph, db)
        self.episode = partial(episode_write.write, db, base_ns=base_ns, validate_on_write=validate_on_write)
        self.episodes_complete = partial(
            episode_write.complete, db, base_ns=base_ns, validate_on_write=validate_on_write
        )
        self.retract_episode = partial(episode_retract.retract_episode, db)
        # Staged snapshots and their promotion workers: the one family with state of its own.
        self.uploads = Uploads(db, self.knot)
        self.stage_part = self.uploads.stage
        self.promote = self.uploads.promote
        # Search: the embedding provider (loaded on first use) and the cached vector index.
        if search_settings is None:  # the search tools run their SPARQL under the same budgets
            search_settings = SearchSettings(
                query_timeout_ms=timeout_ms or 0,
                max_join_rows=max_join_rows or 0,
                max_sparql_rows=max_sparql_rows or 10_000,
            )
        self.search = Search(db, embedding, search_settings, resolution, base_ns=base_ns)
        # With [quipu.embedding] auto_embed, an episode write is followed, once committed, by the
        # embedding of the entities it touched (tools-search §3.4); /knot loads never are.
        self.episode = self.search.auto_embedded(self.episode)
        self.episodes_complete = self.search.auto_embedded(self.episodes_complete)

        # Named graphs: registry, labels, datasets, overlays and deep freeze.
        self.graphs = Graphs(db, archive_dir)
        # Graph analytics: node-link view, projections and their algorithms, report, impact.
        self.analytics = Analytics(db)
        # Datalog rules to fixpoint, derivations in the premise graph's companion (quipu_reason).
        # With [quipu.reasoning] reactive, every committed write is followed by the maintenance
        # of the stored rules' derivations over the graphs it changed.
        self.reasoning = Reasoner(db, base_ns, reactive=reactive, timeout_ms=timeout_ms)
        # The owl extra: stored ontologies, materialisation, explain and the OWL write gate.
        self.owl = Owl(
            db,
            installed=owl_installed(),
            settings=owl or OwlSettings(),
            stored_rules=self.reasoning.stored_rules,
            base_ns=base_ns,
        )
        # Golden paths: the provenance cone and the backtest of trajectories (gp-grammar/1).
        self.golden_paths = GoldenPaths(db, base_ns)
        # Event feeds: pages, consumer cursors, change pages, subscriptions, retention.
        self.feeds = Feeds(db, events)

        # -- shapes and schema proposals
        self.load_shapes = partial(registry.load, db)
        self.remove_shapes = partial(registry.remove, db)
        self.shape_sets = partial(registry.current, db)
        self.validate = partial(gate.dry_run, db)
        self.propose = partial(proposals.submit, db)
        self.proposals = partial(proposals.listing, db)
        self.accept_proposal = partial(proposals.accept, db)
        self.reject_proposal = partial(proposals.reject, db)

        # -- reads
        self.query_result = partial(
            run_query,
            db,
            max_rows=max_sparql_rows,
            compiled=sparql_compiler,
            timeout_ms=timeout_ms,
            max_join_rows=max_join_rows,
        )
        # Named questions (ask, stored queries, co-occurrence) run through query_result's budgets.
        self.questions = Questions(db, self.query_result)
        # Governance: policy verdicts, verdict verification, the verifier registry (all reads).
        rules, flow = governance or GovernanceSettings(), workflow or WorkflowSettings()
        self.governance = Governance(
            db,
            self.query_result,
            signing_key_file=rules.signing_key_file,
            hardware_verdict_schemes=rules.hardware_verdict_schemes,
            workflow=Workflow(
                db, enforce=flow.enforce_direct_updates, scope=flow.scope, verifier=flow.verifier
            ),
        )
        self.export_result = partial(
            documents_export.export,
            db,
            max_rows=max_sparql_rows,
            timeout_ms=timeout_ms,
            max_join_rows=max_join_rows,
        )
        self.entity_turtle = partial(documents_export.entity_turtle, db)
        # Sharing: shares, import and promotion, three-way merge, alignment, acquisition.
        self.sharing = Sharing(
            db,
            export=partial(self.export_result, base_ns=base_ns),
            resolve=self.search.resolve,
            producer_version=__version__,
            max_share_bytes=(sharing or SharingSettings()).max_share_bytes,
        )
        self.cord = partial(reads.cord, db, max_rows=max_sparql_rows or 10_000)
        self.unravel = partial(reads.unravel, db)
        self.entity = partial(reads.entity, db)
        self.entity_history = partial(reads.entity_history, db)
        self.transactions = partial(reads.transaction_log, db)
        self.fragments = partial(reads.fragments, db)
        self.events = partial(reads.events, db)
        self.stats = partial(reads.stats_cache().get, db)
        self.time_span = partial(reads.time_span_cache().get, db)  # head tx and valid-time range
        self.wal_bytes = db.wal_bytes  # SQLite's write-ahead log file now (None elsewhere)

    @classmethod
    def from_settings(cls, settings: Settings, *, max_readers: int | None = None) -> KnowledgeBase:
        """The store ``settings.store`` names, with the query budgets of ``settings.search``;
        ``max_readers`` lets the reader pool grow that far (a server's read lanes need it)."""
        store, search = settings.store, settings.search
        return cls(
            store.db,
            synchronous=store.synchronous,
            cache_mb=store.cache_mb,
            wal_checkpoint_mb=store.wal_checkpoint_mb,
            readers=store.readers,
            max_readers=max_readers,
            max_sparql_rows=search.max_sparql_rows,
            query_timeout_ms=search.query_timeout_ms,
            max_join_rows=search.max_join_rows,
            base_ns=settings.base_ns,
            validate_on_write=settings.shacl.validate_on_write,
            embedding=settings.embedding,
            search_settings=search,
            resolution=settings.resolution,
            labels=settings.labels,
            archive_dir=settings.graphs.archive_dir,
            events=settings.events,
            owl=settings.owl,
            reactive=settings.reasoning.reactive,
            governance=settings.governance,
            workflow=settings.workflow,
            sharing=settings.sharing,
        )

    # -- reads with a shape of their own ------------------------------------------------------

    def query(
        self,
        sparql: str,
        valid_at: str | None = None,
        as_of_tx: int | None = None,
        *,
        graph: str | None = None,
        base: str | None = None,
        inference: str | None = None,
    ) -> list[dict[str, Node]] | bool | Graph:
        """SELECT → rows (dicts of rdflib terms), ASK → bool, CONSTRUCT/DESCRIBE → a Graph.

        ``query_result`` gives the full result (variables, truncation flag, form, plan)."""
        result = self.query_result(
            sparql, valid_at=valid_at, as_of_tx=as_of_tx, graph=graph, base=base, inference=inference
        )
        if result.form == "SELECT":
            return result.rows
        if result.form == "ASK":
            return bool(result.boolean)
        assert result.graph is not None
        return result.graph

    def export(self, format: str = "ntriples", *, graph: str | None = None) -> str:
        """Deterministic N-Triples or Turtle of ROOT's (or one graph's) current statements;
        ``export_result`` exports any scope and says what it exported."""
        return self.export_result(graph=graph, format=format).rdf

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self.uploads.close()
        self.db.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _label_floor(labels: LabelsSettings | None) -> LabelFloor | None:
    """``[quipu.labels]`` as the store's floor; None when no key is set (no label work)."""
    if labels is None:
        return None
    floor = LabelFloor(
        min_freshness=labels.min_freshness,
        min_trust_rank=labels.min_trust_rank,
        min_trust_chain=labels.min_trust_chain,
        deny_policy_tokens=tuple(labels.deny_policy_tokens),
        deny_data_kinds=tuple(labels.deny_data_kinds),
    )
    check_floor_settings(floor)
    return floor if floor.active else None
