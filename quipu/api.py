"""The embedding API: ``kb = quipu.open(path)``, then knot / retract / set / query / export."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

from rdflib import Graph
from rdflib.term import Node

from quipu import times
from quipu.config import Settings
from quipu.episodes import build as episode_build
from quipu.episodes import gate as episode_gate
from quipu.episodes import ingest as episode_ingest
from quipu.episodes import retract as episode_retract
from quipu.identity import Authenticated
from quipu.proposals import queue as proposal_queue
from quipu.rdfio import ingest
from quipu.rdfio.export import DEFAULT_BASE_NS, ExportResult, entity_turtle, export
from quipu.shacl import gate, registry
from quipu.shacl.validate import Report
from quipu.sparql import budget as budgets
from quipu.sparql.engine import QueryResult, run_query
from quipu.sparql.update import run_update
from quipu.store import events as store_events
from quipu.store import ownership, reads, writes
from quipu.store.database import Database
from quipu.store.dialect import SqliteTuning
from quipu.uploads.service import Uploads
from quipu.uploads.stage import StageResult


class KnowledgeBase:
    """A bitemporal RDF store opened from a file path, ``":memory:"`` or an SQLite URL."""

    def __init__(
        self,
        location: str,
        *,
        synchronous: str = "NORMAL",
        cache_mb: int = 256,
        readers: int = 4,
        max_sparql_rows: int | None = None,
        sparql_compiler: bool = True,
        query_timeout_ms: int | None = None,
        max_join_rows: int | None = None,
        base_ns: str = DEFAULT_BASE_NS,
        validate_on_write: bool = False,
    ) -> None:
        self.db = Database(
            location, SqliteTuning(synchronous=synchronous, cache_mb=cache_mb), readers=readers
        )
        self.max_sparql_rows = max_sparql_rows
        self.sparql_compiler = sparql_compiler  # False forces rdflib's evaluator (for comparison)
        # Query budgets (DM §13.3): None or 0 is unlimited, as in settings.search.
        self.query_timeout_ms = budgets.limit("query_timeout_ms", query_timeout_ms)
        self.max_join_rows = budgets.limit("max_join_rows", max_join_rows)
        self._stats = reads.StatsCache()
        self.base_ns = base_ns  # episode IRIs are minted under it (DM §9.1)
        self.validate_on_write = validate_on_write  # stored shapes SHACL-gate episodes (§3.4)
        self.uploads = Uploads(self.db, self.knot)  # staged snapshots and their promotion workers

    @classmethod
    def from_settings(cls, settings: Settings) -> KnowledgeBase:
        """The store ``settings.store`` names, with the query budgets of ``settings.search``."""
        store, search = settings.store, settings.search
        return cls(
            store.db,
            synchronous=store.synchronous,
            cache_mb=store.cache_mb,
            readers=store.readers,
            max_sparql_rows=search.max_sparql_rows,
            query_timeout_ms=search.query_timeout_ms,
            max_join_rows=search.max_join_rows,
            base_ns=settings.base_ns,
            validate_on_write=settings.shacl.validate_on_write,
        )

    # -- writes ------------------------------------------------------------------------------

    def knot(
        self,
        data: str | bytes,
        format: str = "turtle",
        *,
        timestamp: str | None = None,
        valid_from: str | None = None,
        actor: str | None = None,
        source: str | None = None,
        graph: str | None = None,
        blank_node_scope: str | None = None,
        base_iri: str | None = None,
        progress: writes.Progress | None = None,
        auth: Authenticated | None = None,
        replace_snapshot: bool = False,
        snapshot: str | None = None,
        shapes: str | None = None,
    ) -> writes.KnotResult:
        """Assert an RDF document in one transaction (per destination graph).

        ``replace_snapshot=True, snapshot=KEY`` replaces everything ``snapshot:KEY`` owns in the
        graph instead (DM §8): facts in both versions stay untouched, the rest close (scoped to
        the key, stamped ``timestamp``), and ``source`` is ignored.

        Gated by the stored shape sets plus ``shapes`` (extra SHACL Turtle): an unsanctioned
        ``rdf:type`` raises ``WriteRefused`` (``unknown_type``), a SHACL violation raises
        ``ShaclViolation`` carrying the report; either way nothing is written.
        """
        return ingest.knot(
            self.db,
            data,
            format=format,
            timestamp=timestamp,
            valid_from=valid_from,
            actor=actor,
            source=source,
            graph=graph,
            blank_node_scope=blank_node_scope,
            base_iri=base_iri,
            progress=progress,
            auth=auth,
            replace_snapshot=replace_snapshot,
            snapshot=snapshot,
            shapes=shapes,
        )

    def stage_part(
        self,
        *,
        upload_id: str,
        snapshot: str,
        content_hash: str,
        part_hash: str,
        payload: str,
        part_number: int,
        total_parts: int,
        total_bytes: int,
        timestamp: str | None = None,
        actor: str | None = None,
        source: str | None = None,
        graph: str | None = None,
    ) -> StageResult:
        """Stage one immutable part of a large snapshot upload (tools-core §3.2); no facts change."""
        return self.uploads.stage(
            upload_id=upload_id,
            snapshot=snapshot,
            content_hash=content_hash,
            part_hash=part_hash,
            payload=payload,
            part_number=part_number,
            total_parts=total_parts,
            total_bytes=total_bytes,
            timestamp=timestamp,
            actor=actor,
            source=source,
            graph=graph,
        )

    def promote(self, upload_id: str, *, auth: Authenticated | None = None) -> dict[str, Any]:
        """Start or read back the atomic promotion of a staged upload (tools-core §3.3).

        Answers ``{"upload_id", "pending": True}`` while it runs in the background, then the
        ``/knot`` body plus the upload's identity (or the SHACL refusal body); a recorded
        failure is raised again on every call until it expires.
        """
        return self.uploads.promote(upload_id, auth=auth)

    def retract(
        self,
        entity: str,
        predicate: str | None = None,
        value: Any = None,
        *,
        timestamp: str | None = None,
        actor: str | None = None,
        source: str | None = None,
        allow_orphan: bool = False,
        auth: Authenticated | None = None,
    ) -> writes.RetractResult:
        """Close ROOT statements about ``entity``: all, one predicate's, or one statement."""
        return writes.retract(
            self.db,
            entity,
            predicate=predicate,
            value=value,
            timestamp=timestamp,
            actor=actor,
            source=source,
            allow_orphan=allow_orphan,
            auth=auth,
        )

    def set(
        self,
        entity: str,
        predicate: str,
        value: Any,
        *,
        timestamp: str | None = None,
        actor: str | None = None,
        source: str | None = None,
        auth: Authenticated | None = None,
    ) -> writes.SetResult:
        """Make ``value`` the only current object of (entity, predicate)."""
        return writes.set_value(
            self.db, entity, predicate, value, timestamp=timestamp, actor=actor, source=source, auth=auth
        )

    def retract_source(
        self,
        source: str,
        repair: str,
        *,
        apply: bool = False,
        expect: int | None = None,
        graph: str | None = None,
        timestamp: str | None = None,
        actor: str | None = None,
        auth: Authenticated | None = None,
    ) -> dict[str, Any]:
        """Plan, or with ``apply=True, expect=<planned>`` apply, a source-scoped retraction.

        Only ``source``'s own claims close: statements other sources also own stay visible.
        """
        return ownership.retract_source(
            self.db,
            source,
            repair,
            apply=apply,
            expect=expect,
            graph=graph,
            timestamp=timestamp,
            actor=actor,
            auth=auth,
        )

    def episode(
        self,
        name: str,
        *,
        episode_body: str | None = None,
        source: str | None = None,
        group_id: str | None = None,
        nodes: Sequence[Any] | None = None,
        edges: Sequence[Any] | None = None,
        graph: str | None = None,
        replace_snapshot: bool = False,
        valid_from: str | None = None,
        base_ns: str | None = None,
        gates: tuple[episode_ingest.Gate, ...] = (),
        shapes: str | None = None,
        auth: Authenticated | None = None,
    ) -> episode_ingest.EpisodeResult:
        """Write an episode (nodes and edges with provenance) under source ``episode:<name>``.

        An identical episode (same name and content hash) is ``unchanged`` and writes nothing.
        ``valid_from`` back-dates the facts' valid time (local callers only: the REST route never
        passes one); ``gates`` refuse the write before the idempotency check. The vocabulary and
        SHACL gate always runs first: request ``shapes`` and, with ``validate_on_write``, the stored
        shape sets; a SHACL failure raises ``EpisodeShaclViolation`` (400) and writes nothing.
        """
        parsed = episode_build.parse_episode(
            name,
            episode_body=episode_body,
            source=source,
            group_id=group_id,
            nodes=nodes,
            edges=edges,
            replace_snapshot=replace_snapshot,
        )
        shacl = episode_gate.episode_gate(
            self.db, request_shapes=shapes, validate_on_write=self.validate_on_write
        )
        return episode_ingest.ingest(
            self.db,
            parsed,
            base_ns=base_ns or self.base_ns,
            graph=graph,
            valid_from=times.normalise_valid_from(valid_from, "timestamp") if valid_from else None,
            auth=auth,
            gates=(shacl, *gates),
        )

    def episodes_complete(
        self,
        name: str,
        *,
        episode_body: str | None = None,
        group_id: str | None = None,
        source_description: str | None = None,
        timestamp: str | None = None,
        base_ns: str | None = None,
        gates: tuple[episode_ingest.Gate, ...] = (),
        auth: Authenticated | None = None,
    ) -> episode_ingest.EpisodeResult:
        """Graphiti's flat form: an episode with no nodes or edges; ``timestamp`` is valid time only."""
        return self.episode(
            name,
            episode_body=episode_body,
            source=source_description,
            group_id=group_id,
            valid_from=timestamp,
            base_ns=base_ns,
            gates=gates,
            auth=auth,
        )

    def retract_episode(
        self,
        episode: str,
        *,
        on_orphan: str | None = None,
        timestamp: str | None = None,
        actor: str | None = None,
        auth: Authenticated | None = None,
    ) -> dict[str, Any]:
        """Close what ``episode:<episode>`` owns in every graph; ``on_orphan`` is preserve/refuse/allow."""
        return episode_retract.retract_episode(
            self.db, episode, on_orphan=on_orphan, timestamp=timestamp, actor=actor, auth=auth
        )

    # -- shapes ------------------------------------------------------------------------------

    def load_shapes(self, name: str, turtle: str, *, timestamp: str | None = None) -> registry.ShapeSet:
        """Store a named SHACL shape set (a new version; the same timestamp replaces it)."""
        return registry.load(self.db, name, turtle, timestamp=timestamp)

    def remove_shapes(self, name: str, *, timestamp: str | None = None) -> bool:
        """Close a shape set's open version (history is kept); False when none was open."""
        return registry.remove(self.db, name, timestamp=timestamp)

    def shape_sets(self) -> list[registry.ShapeSet]:
        """The open shape sets, by name."""
        return registry.current(self.db)

    # -- schema proposals (tools-graphs-governance §7) ---------------------------------------

    def propose(
        self,
        kind: str,
        target: str,
        diff: str,
        proposer: str,
        *,
        rationale: str | None = None,
        trigger_ref: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> proposal_queue.Proposal:
        """File a pending schema-change proposal (``shape``/``ontology``/``class``/``property``)."""
        return proposal_queue.submit(
            self.db,
            kind,
            target,
            diff,
            proposer,
            rationale=rationale,
            trigger_ref=trigger_ref,
            timestamp=timestamp,
            auth=auth,
        )

    def proposals(self, status: str | None = None) -> list[proposal_queue.Proposal]:
        """The proposal queue, newest first, optionally only one status."""
        return proposal_queue.listing(self.db, status)

    def accept_proposal(
        self,
        proposal_id: int,
        decided_by: str,
        *,
        note: str | None = None,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> proposal_queue.Proposal:
        """Accept a pending proposal; a shape proposal's Turtle becomes the shape set ``target``."""
        return proposal_queue.accept(
            self.db, proposal_id, decided_by, note=note, timestamp=timestamp, auth=auth
        )

    def reject_proposal(
        self,
        proposal_id: int,
        decided_by: str,
        note: str,
        *,
        timestamp: str | None = None,
        auth: Authenticated | None = None,
    ) -> proposal_queue.Proposal:
        """Reject a pending proposal, recording why."""
        return proposal_queue.reject(self.db, proposal_id, decided_by, note, timestamp=timestamp, auth=auth)

    def validate(
        self,
        data: str | bytes,
        shapes: str | None = None,
        *,
        valid_at: str | None = None,
        as_of_tx: int | None = None,
        format: str = "turtle",
    ) -> Report:
        """Dry-run SHACL validation of a document, payload only (tools-core §2.1)."""
        return gate.dry_run(self.db, data, shapes, valid_at=valid_at, as_of_tx=as_of_tx, format=format)

    def create_graph(self, iri: str, *, actor: str | None = None, auth: Authenticated | None = None) -> bool:
        """Register a committed named graph so writes may target it; False if it existed."""
        return writes.register_graph(self.db, iri, actor=actor, auth=auth)

    def update(
        self,
        update: str,
        *,
        actor: str | None = None,
        source: str | None = None,
        auth: Authenticated | None = None,
        using_graphs: Sequence[str] = (),
        using_named_graphs: Sequence[str] = (),
    ) -> dict[str, Any]:
        """Run a SPARQL 1.1 Update request atomically; one transaction per changed graph.

        Returns ``{"tx", "asserted", "retracted", "graphs": [...]}`` (``graph`` None = ROOT);
        ``tx`` is None when nothing changed. Deletions retract (history is kept); inserts are
        asserted with ``valid_from`` = now under ``source`` (default ``sparql-update``).
        ``using_graphs``/``using_named_graphs`` are the protocol's ``using-graph-uri`` and
        ``using-named-graph-uri``: the dataset of every DELETE/INSERT … WHERE.
        """
        return run_update(
            self.db,
            update,
            actor=actor,
            source=source,
            auth=auth,
            using_graphs=using_graphs,
            using_named_graphs=using_named_graphs,
        )

    # -- reads -------------------------------------------------------------------------------

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
        """SELECT → rows (dicts of rdflib terms), ASK → bool, CONSTRUCT/DESCRIBE → a Graph."""
        result = self.query_result(
            sparql, valid_at=valid_at, as_of_tx=as_of_tx, graph=graph, base=base, inference=inference
        )
        if result.form == "SELECT":
            return result.rows
        if result.form == "ASK":
            return bool(result.boolean)
        assert result.graph is not None
        return result.graph

    def query_result(
        self,
        sparql: str,
        *,
        valid_at: str | None = None,
        as_of_tx: int | None = None,
        graph: str | None = None,
        base: str | None = None,
        inference: str | None = None,
        default_graphs: Sequence[str] | None = None,
        named_graphs: Sequence[str] | None = None,
    ) -> QueryResult:
        """The full result: variables, truncation flag and form, as well as the rows.

        ``base`` resolves relative IRIs in the query text. ``inference="rdfs"`` lets
        ``?s a <T>`` match instances of T's subclasses (``rdfs:subClassOf``, transitively).
        ``default_graphs`` / ``named_graphs`` replace the query's ``FROM`` / ``FROM NAMED``.
        """
        return run_query(
            self.db,
            sparql,
            valid_at=valid_at,
            as_of_tx=as_of_tx,
            graph=graph,
            max_rows=self.max_sparql_rows,
            base=base,
            compiled=self.sparql_compiler,
            timeout_ms=self.query_timeout_ms,
            max_join_rows=self.max_join_rows,
            inference=inference,
            default_graphs=default_graphs,
            named_graphs=named_graphs,
        )

    def export(self, format: str = "ntriples", *, graph: str | None = None) -> str:
        """Deterministic N-Triples or Turtle of ROOT's (or one graph's) current statements."""
        return export(self.db, graph=graph, format=format).rdf

    def export_result(
        self,
        *,
        graph: str | None = None,
        group_id: str | None = None,
        construct: str | None = None,
        format: str = "turtle",
        base_ns: str = DEFAULT_BASE_NS,
    ) -> ExportResult:
        """One scope (ROOT, a graph, an episode group or a CONSTRUCT/DESCRIBE result) as
        deterministic RDF, with its scope and triple count. A construct result larger than
        ``max_sparql_rows`` is refused; the query budgets apply to it."""
        return export(
            self.db,
            graph=graph,
            group_id=group_id,
            construct=construct,
            format=format,
            base_ns=base_ns,
            max_rows=self.max_sparql_rows,
            timeout_ms=self.query_timeout_ms,
            max_join_rows=self.max_join_rows,
        )

    def cord(
        self, *, type: str | None = None, predicate: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        return reads.cord(
            self.db, type=type, predicate=predicate, limit=limit, max_rows=self.max_sparql_rows or 10_000
        )

    def unravel(self, *, tx: int | None = None, valid_at: str | None = None) -> dict[str, Any]:
        return reads.unravel(self.db, tx=tx, valid_at=valid_at)

    def entity(self, iri: str, *, expanded: bool = False) -> dict[str, Any]:
        return reads.entity(self.db, iri, expanded=expanded)

    def entity_history(self, iri: str) -> dict[str, Any]:
        return reads.entity_history(self.db, iri)

    def transactions(self, *, since: int = 0, limit: int | None = 1000) -> dict[str, Any]:
        return reads.transaction_log(self.db, since=since, limit=limit)

    def events(self, *, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Semantic events after an offset, oldest first, in the wire envelope (DM §11.1)."""
        with self.db.read() as conn:
            return store_events.read_events(conn, after=after, limit=limit)

    def fragments(
        self,
        *,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        page: int = 1,
        page_size: int = 100,
    ) -> dict[str, Any]:
        """One page of a Triple Pattern Fragment over ROOT's current statements."""
        return reads.fragments(
            self.db, subject=subject, predicate=predicate, object=object, page=page, page_size=page_size
        )

    def entity_turtle(self, iri: str) -> str:
        """Turtle of one subject's current ROOT statements (400 for an IRI never interned)."""
        return entity_turtle(self.db, iri)

    def stats(self) -> dict[str, int]:
        return self._stats.get(self.db)

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
