"""``POST /share``, ``/import`` and ``/import/promote`` (tools-graphs-governance §4.0–§4.3) over two
real stores: every seal, the gates, quarantine, promotion and the refusals that write nothing."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from quipu.sharing import manifest as mf
from tests.rest.support import BOT_SERVER, BOT_TOKEN, kb_of, problem, refused_write, serve, state

EX = "http://ex.org/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
DATA = f"""@prefix ex: <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:alice a ex:Person ; rdfs:label "Alice" ; ex:knows ex:bob ;
  ex:note "bonjour"@fr, "hello"@en ;
  ex:address [ ex:city "Lima" ; ex:zip [ ex:code "15001" ] ] .
ex:bob a ex:Person ; rdfs:label "Bob" .
"""
GRAPH = "http://ex.org/g/people"
SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <{EX}> .
ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;
  sh:property [ sh:path <{RDFS_LABEL}> ; sh:minCount 1 ] .
"""
STRICT_SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <{EX}> .
ex:PersonShape a sh:NodeShape ; sh:targetClass ex:Person ;
  sh:property [ sh:path ex:employer ; sh:minCount 1 ] .
"""
OTHER_SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <{EX}> .
ex:ThingShape a sh:NodeShape ; sh:targetClass ex:Thing .
"""


@pytest.fixture
def a(tmp_path: Path) -> Iterator[TestClient]:
    (tmp_path / "a").mkdir()
    with serve(tmp_path / "a") as client:
        kb = kb_of(client)
        kb.create_graph(GRAPH)
        kb.knot(DATA, graph=GRAPH, timestamp="2026-01-02T03:04:05Z")
        yield client


@pytest.fixture
def b(tmp_path: Path) -> Iterator[TestClient]:
    (tmp_path / "b").mkdir()
    with serve(tmp_path / "b") as client:
        yield client


def share_of(client: TestClient, **body: Any) -> dict[str, Any]:
    body.setdefault("scope", {"kind": "graph", "value": GRAPH})
    body.setdefault("no_shapes", "shapes" not in body)
    response = client.post("/share", json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def wire(shared: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The /import body carrying a /share result, as the seeds describe it."""
    files = shared["files"]
    body = {
        "manifest": shared["manifest"],
        "export_ntriples": files["export.nt"],
        "shapes_turtle": files["shapes.ttl"],
        "source": "https://a.example/shares",
    }
    if "queries.ttl" in files:
        body["queries_turtle"] = files["queries.ttl"]
    if "alignments.ttl" in files:
        body["alignments_turtle"] = files["alignments.ttl"]
    return {**body, **extra}


def resealed(body: dict[str, Any], **manifest_changes: Any) -> dict[str, Any]:
    """A body whose manifest was edited and then honestly re-sealed (a new valid share id)."""
    out = copy.deepcopy(body)
    out["manifest"].update(manifest_changes)
    out["manifest"]["graph_hash"] = mf.sha256_id(out["export_ntriples"])
    out["manifest"]["share_id"] = mf.share_id_of(out["manifest"])
    return out


# -- quipu_share --------------------------------------------------------------------------------


def test_a_share_is_canonical_sealed_and_repeatable(a: TestClient) -> None:
    first = share_of(a)
    manifest, files = first["manifest"], first["files"]
    assert files["manifest.json"] == mf.canonical_json(manifest) + "\n"
    assert manifest["share_id"] == mf.share_id_of(manifest)
    assert manifest["graph_hash"] == mf.sha256_id(files["export.nt"])
    assert manifest["shapes_hash"] == mf.sha256_id("") and files["shapes.ttl"] == ""
    assert manifest["canonicalization"] == "RDFC-1.0"
    assert manifest["scope"] == {"kind": "graph", "value": GRAPH}
    assert manifest["parent_share"] is None
    assert manifest["files"] == {"graph": "export.nt", "shapes": "shapes.ttl", "turtle_view": None}
    # SH-1: created_at is the anchor transaction's timestamp, never the wall clock
    assert manifest["created_at"] == "2026-01-02T03:04:05Z"
    assert manifest["tx_anchor"] >= 1
    lines = files["export.nt"].splitlines()
    assert lines == sorted(lines) and files["export.nt"].endswith("\n")
    assert '"bonjour"@fr' in files["export.nt"] and "_:c14n0" in files["export.nt"]
    assert f'<{EX}alice> <{RDFS_LABEL}> "Alice" .' in lines
    assert share_of(a) == first  # byte-identical over unchanged state
    assert (
        "dcat:Dataset" in files["manifest.ttl"]
        and manifest["graph_hash"].removeprefix("sha256:") in files["manifest.ttl"]
    )


def test_a_write_changes_the_share_and_a_turtle_view_is_derived_not_sealed(a: TestClient) -> None:
    before = share_of(a)
    viewed = share_of(a, turtle_view=True)
    assert viewed["manifest"]["files"]["turtle_view"] == "export.ttl"
    assert "Alice" in viewed["files"]["export.ttl"]
    assert viewed["manifest"]["graph_hash"] == before["manifest"]["graph_hash"]
    kb_of(a).knot(f'<{EX}carol> <{RDFS_LABEL}> "Carol" .', format="ntriples", graph=GRAPH)
    after = share_of(a)
    assert after["manifest"]["share_id"] != before["manifest"]["share_id"]
    assert after["manifest"]["tx_anchor"] > before["manifest"]["tx_anchor"]


def test_shapes_are_bundled_by_name(a: TestClient) -> None:
    problem(a.post("/share", json={"scope": {"kind": "root", "value": None}}), "no_shapes_loaded")
    kb_of(a).load_shapes("people", SHAPES)
    kb_of(a).load_shapes("another", OTHER_SHAPES)
    shared = share_of(a, shapes=["people"])
    assert shared["files"]["shapes.ttl"] == "# --- people ---\n" + SHAPES.rstrip() + "\n"
    every = share_of(a, scope={"kind": "root", "value": None}, no_shapes=False)
    assert every["files"]["shapes.ttl"].startswith("# --- another ---\n")
    assert "# --- people ---\n" in every["files"]["shapes.ttl"]
    problem(
        a.post("/share", json={"scope": {"kind": "root", "value": None}, "shapes": ["nope"]}), "invalid_field"
    )


def test_an_empty_store_shares_the_empty_graph_at_the_epoch(b: TestClient) -> None:
    shared = share_of(b, scope={"kind": "root", "value": None})
    assert shared["files"]["export.nt"] == ""
    assert shared["manifest"]["tx_anchor"] == 0
    assert shared["manifest"]["created_at"] == "1970-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("body", "reason", "field"),
    [
        ({"scope": {"kind": "root", "value": None}, "pack_dir": "x"}, "unknown_field", "pack_dir"),
        (
            {"scope": {"kind": "root", "value": None}, "destination": "internal"},
            "unknown_field",
            "destination",
        ),
        ({"scope": {"kind": "root", "value": None}, "no_shapes": "yes"}, "wrong_type", "no_shapes"),
        ({"scope": {"kind": "tree", "value": None}, "no_shapes": True}, "invalid_field", "scope.kind"),
        ({"scope": {"kind": "root", "value": "x"}, "no_shapes": True}, "invalid_field", "scope.value"),
        ({"scope": {"kind": "graph", "value": None}, "no_shapes": True}, "missing_field", "scope.value"),
        (
            {"scope": {"kind": "graph", "value": "http://ex.org/nope"}, "no_shapes": True},
            "unknown_graph",
            "graph",
        ),
        (
            {"scope": {"kind": "root", "value": None}, "no_shapes": True, "max_bytes": 0},
            "invalid_field",
            "max_bytes",
        ),
        (
            {"scope": {"kind": "root", "value": None}, "no_shapes": True, "max_bytes": 9 * 1024 * 1024},
            "invalid_field",
            "max_bytes",
        ),
        (
            {"scope": {"kind": "root", "value": None}, "no_shapes": True, "parent_share": "abc"},
            "invalid_field",
            "parent_share",
        ),
        (
            {
                "scope": {"kind": "root", "value": None},
                "no_shapes": True,
                "alignments_turtle": "not turtle <",
            },
            "rdf_parse_error",
            "alignments_turtle",
        ),
        (
            {"scope": {"kind": "construct", "value": "SELECT * WHERE { ?s ?p ?o }"}, "no_shapes": True},
            "query_error",
            "construct",
        ),
    ],
)
def test_share_refusals(a: TestClient, body: dict[str, Any], reason: str, field: str) -> None:
    found = problem(a.post("/share", json=body), reason)
    assert found.get("field") == field, found


def test_an_oversized_share_is_refused_whole(a: TestClient) -> None:
    found = problem(
        a.post(
            "/share", json={"scope": {"kind": "graph", "value": GRAPH}, "no_shapes": True, "max_bytes": 500}
        ),
        "share_too_large",
    )
    assert "max_bytes 500" in found["error"]


def test_alignment_evidence_is_sealed(a: TestClient) -> None:
    evidence = f"<{EX}alice> <http://www.w3.org/2002/07/owl#sameAs> <{EX}alicia> .\n"
    shared = share_of(a, alignments_turtle=evidence)
    assert shared["files"]["alignments.ttl"] == evidence
    assert shared["manifest"]["alignments_hash"] == mf.sha256_id(evidence)
    assert shared["manifest"]["files"]["alignments"] == "alignments.ttl"
    assert shared["manifest"]["share_id"] != share_of(a)["manifest"]["share_id"]


# -- quipu_import -------------------------------------------------------------------------------


def test_import_stages_without_touching_root_and_a_second_import_is_unchanged(
    a: TestClient, b: TestClient
) -> None:
    shared = share_of(a)
    root_before = kb_of(b).export("ntriples")
    response = b.post("/import", json=wire(shared, actor="claimed-bot"))
    assert response.status_code == 200, response.text
    body = response.json()
    hexid = shared["manifest"]["share_id"].removeprefix("sha256:")
    assert body["outcome"] == "staged"
    assert body["staging_graph"] == f"urn:quipu:import:staging:{hexid}"
    assert body["import_id"].startswith("urn:quipu:import:event:")
    assert body["triples"] == {"accepted": shared["files"]["export.nt"].count("\n"), "quarantined": 0}
    assert body["promotion"] == {"eligible": True, "blockers": []}
    assert body["attestation"]["tier"] == "transport"
    assert body["validation"]["conforms"] is True and body["validation"]["blocking"] is False
    assert kb_of(b).export("ntriples") == root_before  # IM-1: ROOT is never written
    staged = kb_of(b).export("ntriples", graph=body["staging_graph"])
    assert '"bonjour"@fr' in staged
    log = kb_of(b).transactions()["transactions"]
    assert (
        log[-1]["source"]
        == f"share-import:https://a.example/shares:{shared['manifest']['share_id']}:claimed-actor=claimed-bot"
    )
    assert log[-1]["actor"] is None  # the body's actor is a claim, never the transaction actor
    events = [e["type"] for e in kb_of(b).events()]
    assert events.count("import.staged") == 1
    before = state(b)
    again = b.post("/import", json=wire(shared)).json()
    assert again["outcome"] == "unchanged" and again["staging_graph"] == body["staging_graph"]
    assert state(b) == before


def test_the_transaction_actor_is_the_authenticated_principal(a: TestClient, tmp_path: Path) -> None:
    shared = share_of(a)
    (tmp_path / "c").mkdir()
    with serve(tmp_path / "c", server=BOT_SERVER) as c:
        headers = {"Authorization": f"Bearer {BOT_TOKEN}"}
        assert c.post("/import", json=wire(shared)).status_code == 401
        assert c.post("/import", json=wire(shared, actor="mallory"), headers=headers).status_code == 200
        assert kb_of(c).transactions()["transactions"][-1]["actor"] == "bot"


def _flip(text: str, at: int) -> str:
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1 :]


@pytest.mark.parametrize(
    ("tamper", "phrase"),
    [
        (lambda w: {**w, "export_ntriples": _flip(w["export_ntriples"], 3)}, "share graph hash mismatch"),
        (lambda w: {**w, "shapes_turtle": "# added\n"}, "share shapes hash mismatch"),
        (
            lambda w: {**w, "manifest": {**w["manifest"], "store_id": _flip(w["manifest"]["store_id"], 12)}},
            "share id mismatch",
        ),
        (
            lambda w: {**w, "manifest": {**w["manifest"], "tx_anchor": w["manifest"]["tx_anchor"] + 1}},
            "share id mismatch",
        ),
        (
            lambda w: {
                **w,
                "manifest": {**w["manifest"], "graph_hash": _flip(w["manifest"]["graph_hash"], 10)},
            },
            "share id mismatch",
        ),
        (
            lambda w: {**w, "manifest": {**w["manifest"], "schema": "https://example.org/v9"}},
            "unsupported share manifest schema",
        ),
        (
            lambda w: {
                **w,
                "manifest": {**w["manifest"], "files": {**w["manifest"]["files"], "graph": "../etc/passwd"}},
            },
            "unsupported payload paths",
        ),
        (lambda w: {**w, "queries_turtle": ""}, "must be supplied exactly when"),
    ],
)
def test_a_tampered_share_is_refused_naming_the_seal_and_writes_nothing(
    a: TestClient, b: TestClient, tamper: Any, phrase: str
) -> None:
    body = refused_write(b, "/import", json=tamper(wire(share_of(a))))
    assert phrase in body["error"], body


def test_a_non_canonical_payload_is_refused_even_when_resealed(a: TestClient, b: TestClient) -> None:
    honest = wire(share_of(a))
    relabelled = honest["export_ntriples"].replace("_:c14n0", "_:zz")
    forged = resealed({**honest, "export_ntriples": relabelled})
    body = refused_write(b, "/import", json=forged)
    assert "not RDFC-1.0 canonical" in body["error"]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"path": "/tmp/share"}, "unknown_field"),
        ({"accept_exact": "true"}, "wrong_type"),
        ({"query_namespace": "a/b"}, "invalid_field"),
        ({"query_namespace": ".."}, "invalid_field"),
        ({"source": " "}, "invalid_field"),
    ],
)
def test_import_field_refusals(a: TestClient, b: TestClient, extra: dict[str, Any], reason: str) -> None:
    before = state(b)
    problem(b.post("/import", json=wire(share_of(a), **extra)), reason)
    assert state(b) == before


def test_an_oversized_share_is_refused_before_it_is_read(a: TestClient, tmp_path: Path) -> None:
    long = "x" * 2000
    kb_of(a).knot(f'<{EX}carol> <{EX}note> "{long}" .', format="ntriples", graph=GRAPH)
    shared = wire(share_of(a))
    (tmp_path / "small").mkdir()
    with serve(tmp_path / "small", sharing={"max_share_bytes": 1024}) as small:
        # Under the route's body bound, so the members are measured once parsed.
        found = problem(small.post("/import", json=shared), "payload_too_large", 413)
        assert "max_share_bytes 1024" in found["error"]
        # Far over it: refused on the declared length, before the body is read.
        huge = small.post(
            "/import", content=b"{" + b" " * (600 * 1024) + b"}", headers={"Content-Type": "application/json"}
        )
        problem(huge, "payload_too_large", 413)


def test_nonconforming_data_is_quarantined_and_cannot_be_promoted(a: TestClient, b: TestClient) -> None:
    kb_of(b).load_shapes("people", STRICT_SHAPES)
    shared = share_of(a)
    body = b.post("/import", json=wire(shared)).json()
    hexid = shared["manifest"]["share_id"].removeprefix("sha256:")
    assert body["outcome"] == "quarantined"
    assert body["staging_graph"] == f"urn:quipu:import:quarantine:{hexid}"
    assert body["promotion"] == {"eligible": False, "blockers": ["shacl_nonconforming"]}
    assert body["triples"]["accepted"] == 0 and body["triples"]["quarantined"] > 0
    assert body["validation"]["blocking"] is True
    assert [e["type"] for e in kb_of(b).events()].count("import.quarantined") == 1
    found = problem(
        b.post("/import/promote", json={"share_id": shared["manifest"]["share_id"]}), "no_eligible_import"
    )
    assert "no eligible staged import" in found["error"]


def test_off_vocabulary_types_block_and_adoption_follows_new_shapes(a: TestClient, b: TestClient) -> None:
    kb_of(b).load_shapes("things", OTHER_SHAPES)
    shared = share_of(a)
    first = b.post("/import", json=wire(shared)).json()
    assert first["outcome"] == "quarantined"
    assert first["validation"]["off_vocabulary"] == [f"{EX}Person"]
    assert first["promotion"]["blockers"] == ["off_vocabulary"]
    kb_of(b).load_shapes("people", SHAPES)  # the receiver now sanctions Person
    second = b.post("/import", json=wire(shared)).json()
    assert second["outcome"] == "staged" and second["staging_graph"].startswith("urn:quipu:import:staging:")
    assert [e["type"] for e in kb_of(b).events()].count("import.adopted") == 1


def test_exact_name_matches_are_proposals_unless_accepted(
    a: TestClient, b: TestClient, tmp_path: Path
) -> None:
    local = "http://local.example/people/alice"
    kb_of(b).knot(f'<{local}> <{RDFS_LABEL}> "Alice" .', format="ntriples")
    shared = share_of(a)
    body = b.post("/import", json=wire(shared)).json()
    merges = body["resolution"]["exact_merges"]
    assert merges == [
        {"foreign": f"{EX}alice", "local": local, "score": 1.0, "matched_on": "canonical_name:exact"}
    ]
    assert f"{EX}bob" in body["resolution"]["unmatched"]
    staged = kb_of(b).export("ntriples", graph=body["staging_graph"])
    assert f"<{EX}alice>" in staged and local not in staged  # IM-2: reported, not rewritten
    (tmp_path / "d").mkdir()
    with serve(tmp_path / "d") as d:
        kb_of(d).knot(f'<{local}> <{RDFS_LABEL}> "Alice" .', format="ntriples")
        accepted = d.post("/import", json=wire(shared, accept_exact=True)).json()
        rewritten = kb_of(d).export("ntriples", graph=accepted["staging_graph"])
        assert f"<{local}> <{EX}knows> <{EX}bob>" in rewritten and f"<{EX}alice>" not in rewritten


def test_alignment_evidence_is_reported_and_never_applied(a: TestClient, b: TestClient) -> None:
    evidence = f"<{EX}alice> <http://www.w3.org/2002/07/owl#sameAs> <{EX}alicia> .\n"
    body = b.post("/import", json=wire(share_of(a, alignments_turtle=evidence))).json()
    assert body["alignments"] == {"hash": mf.sha256_id(evidence), "triples": 1, "applied": False}
    everywhere = kb_of(b).query(
        "SELECT ?s WHERE { GRAPH ?g { ?s <http://www.w3.org/2002/07/owl#sameAs> ?o } }"
    )
    assert everywhere == []  # IM-6


# -- quipu_import_promote -----------------------------------------------------------------------


def canonical_export(client: TestClient, graph: str | None = None) -> str:
    from quipu.sharing import canonical

    return canonical.canonical_nquads(kb_of(client).export("ntriples", graph=graph))


def test_promotion_lands_the_share_in_root_with_the_same_canonical_hash(a: TestClient, b: TestClient) -> None:
    shared = share_of(a)
    staged = b.post("/import", json=wire(shared)).json()
    sid = shared["manifest"]["share_id"]
    response = b.post("/import/promote", json={"share_id": sid, "actor": "reviewer"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["outcome"] == "promoted" and body["staging_graph"] == staged["staging_graph"]
    assert body["triples"] == staged["triples"]["accepted"] and body["suppressed_retractions"] == 0
    assert mf.sha256_id(canonical_export(b)) == shared["manifest"]["graph_hash"]
    assert kb_of(b).export("ntriples", graph=staged["staging_graph"])  # PR-2: the staging graph stays
    log = kb_of(b).transactions()["transactions"]
    assert (
        log[-1]["id"] == body["tx_id"]
        and log[-1]["source"] == f"share-promotion:{sid}:claimed-actor=reviewer"
    )
    assert [e["type"] for e in kb_of(b).events()].count("import.promoted") == 1
    # Re-promoting adds nothing; a fact ROOT retracted since is not brought back.
    before = kb_of(b).export("ntriples")
    assert b.post("/import/promote", json={"share_id": sid}).json()["triples"] == body["triples"]
    assert kb_of(b).export("ntriples") == before
    kb_of(b).retract(f"{EX}bob", RDFS_LABEL)
    again = b.post("/import/promote", json={"share_id": sid}).json()
    assert again["suppressed_retractions"] == 1
    assert f'<{EX}bob> <{RDFS_LABEL}> "Bob"' not in kb_of(b).export("ntriples")
    # A promoted share imported again records no new review state.
    assert b.post("/import", json=wire(shared)).json()["outcome"] == "unchanged"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"share_id": "abc"}, "invalid_field"),
        ({"share_id": "sha256:" + "0" * 64}, "no_eligible_import"),
        ({"share_id": "sha256:" + "0" * 64, "force": True}, "unknown_field"),
        ({"share_id": 5}, "wrong_type"),
    ],
)
def test_promote_refusals(b: TestClient, body: dict[str, Any], reason: str) -> None:
    before = state(b)
    problem(b.post("/import/promote", json=body), reason)
    assert state(b) == before


def test_promotion_is_gated_by_the_receivers_shapes(a: TestClient, b: TestClient) -> None:
    shared = share_of(a)
    assert b.post("/import", json=wire(shared)).json()["outcome"] == "staged"
    kb_of(b).load_shapes("people", STRICT_SHAPES)  # loaded after staging: promotion still checks
    before = kb_of(b).export("ntriples")
    response = b.post("/import/promote", json={"share_id": shared["manifest"]["share_id"]})
    assert response.status_code == 400, response.text
    assert kb_of(b).export("ntriples") == before


# -- rules that span the members ----------------------------------------------------------------

AEGIS = "http://aegis.gastown.local/ontology/"


def test_the_outward_scrub_refuses_a_share_naming_the_member(a: TestClient) -> None:
    """SH-2: a block-tier InternalIdentifierPattern that matches a member refuses the share."""
    kb_of(a).knot(
        f'<{EX}rule> a <{AEGIS}InternalIdentifierPattern> ; <{AEGIS}regex> "bonjour" ; '
        f'<{AEGIS}enforcementTier> "block" ; <{RDFS_LABEL}> "greeting" .',
        format="turtle",
    )
    found = problem(
        a.post("/share", json={"scope": {"kind": "graph", "value": GRAPH}, "no_shapes": True}),
        "outward_scrub",
        403,
    )
    assert found["member"] == "export.nt" and found["pattern"] == "greeting"
    start, end = found["byte_range"]
    assert share_of_bytes(a)[start:end] == b"bonjour"


def share_of_bytes(client: TestClient) -> bytes:
    """The export.nt a share of GRAPH would carry, without the scrub (the CLI's internal path)."""
    from quipu.sharing import producing

    _manifest, files = producing.members(
        kb_of(client).sharing.env, scope={"kind": "graph", "value": GRAPH}, no_shapes=True, internal=True
    )
    return files["export.nt"].encode("utf-8")


QUERY = f"SELECT ?p WHERE {{ ?p a <{EX}Person> }}"


def test_carried_queries_seal_into_the_share_and_install_under_a_namespace(
    a: TestClient, b: TestClient
) -> None:
    """SH-3 and IM-3: a query's text changes queries_hash and share_id only; import installs it
    namespaced, and a second identical import installs nothing."""
    kb_of(a).questions.queries(action="load", name="people", template=QUERY, description="who")
    root = {"kind": "root", "value": None}
    first = share_of(a, scope=root)
    assert "queries.ttl" in first["files"] and first["manifest"]["files"]["queries"] == "queries.ttl"
    kb_of(a).questions.queries(action="load", name="people", template=QUERY + " LIMIT 5", description="who")
    second = share_of(a, scope=root)
    for key in ("graph_hash", "shapes_hash"):
        assert first["manifest"][key] == second["manifest"][key]
    for key in ("queries_hash", "share_id"):
        assert first["manifest"][key] != second["manifest"][key]
    assert "queries.ttl" not in share_of(a, scope=root, queries=[])["files"]
    body = b.post("/import", json=wire(second, query_namespace="demo")).json()
    assert body["queries"]["installed"] == ["demo/people"] and body["queries"]["namespace"] == "demo"
    stored = kb_of(b).questions.queries(action="get", name="demo/people")
    assert "LIMIT 5" in json.dumps(stored)
    again = b.post("/import", json=wire(second, query_namespace="demo")).json()
    assert again["outcome"] == "unchanged" and again["queries"]["installed"] == []


def test_promotion_merges_nothing(a: TestClient, b: TestClient) -> None:
    """PR-4: an exact match that was not accepted stays a separate IRI in ROOT."""
    local = "http://local.example/people/alice"
    kb_of(b).knot(f'<{local}> <{RDFS_LABEL}> "Alice" .', format="ntriples")
    shared = share_of(a)
    assert b.post("/import", json=wire(shared)).json()["resolution"]["exact_merges"]
    b.post("/import/promote", json={"share_id": shared["manifest"]["share_id"]})
    root = kb_of(b).export("ntriples")
    assert f'<{local}> <{RDFS_LABEL}> "Alice" .' in root and f'<{EX}alice> <{RDFS_LABEL}> "Alice" .' in root


def test_every_store_has_an_identity_of_its_own(a: TestClient, b: TestClient) -> None:
    """store_id: written by the store's migration, so two stores never share one."""
    ids = {share_of(c, scope={"kind": "root", "value": None})["manifest"]["store_id"] for c in (a, b)}
    assert len(ids) == 2 and all(i.startswith("urn:quipu:store:") for i in ids)
