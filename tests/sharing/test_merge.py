"""``quipu_merge_decisions`` and ``quipu_merge_apply`` (tools-graphs-governance §4.4, §4.5) over a real
store: the decisions document, a three-way merge whose conflicts a decisions file resolves, the
dry run, every refusal (each writing nothing), and the REST routes' status codes and
``ignored_fields``.

Shares are built here the way a producer builds them (a canonical slice sealed by
``build_manifest``), so the tests do not depend on a second store.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from quipu.api import KnowledgeBase
from quipu.errors import BadRequest
from quipu.sharing import canonical, snapshot
from quipu.sharing.manifest import canonical_json, sha256_id, share_id_of
from quipu.sharing.share import Members, Scope, build_manifest
from quipu.sharing.snapshot import Slice
from tests.backends import migrated_location
from tests.rest.support import kb_of, problem, refused_write, serve
from tests.store import snapshot as tables

EX = "http://ex.org/"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
TASK, STATUS, OWNER, TAG = EX + "task", EX + "status", EX + "owner", EX + "tag"
SHAPES = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
<{EX}TaskShape> a sh:NodeShape ;
  sh:property [ sh:path <{STATUS}> ; sh:maxCount 1 ] , [ sh:path <{OWNER}> ; sh:maxCount 1 ] .
"""
BASE_NT = f"""<{TASK}> <{STATUS}> "open" .
<{TASK}> <{OWNER}> <{EX}alice> .
<{TASK}> <{TAG}> "a" .
<{TASK}> <{RDFS_LABEL}> "Task one" .
<{STATUS}> <{RDFS_LABEL}> "status" .
"""
# Theirs: status replaced, owner replaced, a tag and a new fact added.
THEIRS_NT = f"""<{TASK}> <{STATUS}> "done" .
<{TASK}> <{OWNER}> <{EX}bob> .
<{TASK}> <{TAG}> "a" .
<{TASK}> <{TAG}> "b" .
<{TASK}> <{RDFS_LABEL}> "Task one" .
<{STATUS}> <{RDFS_LABEL}> "status" .
<{EX}other> <{EX}p> "x" .
"""
SCHEMA = "https://github.com/scbrown/quipu/merge-decisions/v1"


def make_share(
    ntriples: str,
    *,
    parent: str | None = None,
    shapes: str = SHAPES,
    created_at: str = "2026-03-01T00:00:00Z",
    attested: bool = False,
) -> dict[str, Any]:
    """An inline share of ``ntriples`` as another store would produce it."""
    text = canonical.canonical_nquads(ntriples)
    piece = Slice(text, text.count("\n"), 7, created_at, "urn:quipu:store:producer", "root", None)
    manifest = build_manifest(
        piece,
        Scope("root", None),
        Members(shapes),
        parent_share=parent,
        turtle_view=False,
        producer_version="test",
    )
    if attested:  # excluded from the share id; only its presence matters here
        manifest["attestation"] = {"envelope": {}, "binding": {}}
    return {"manifest": manifest, "export_ntriples": text, "shapes_turtle": shapes}


@dataclass
class Merge:
    kb: KnowledgeBase
    base: dict[str, Any]
    incoming: dict[str, Any]

    def decisions(self, **extra: Any) -> dict[str, Any]:
        return self.kb.sharing.merge_decisions(incoming=self.incoming, base=self.base, **extra)

    def apply(self, decisions: dict[str, Any], **extra: Any) -> dict[str, Any]:
        fields: dict[str, Any] = {"reviewer": "alice", **extra}
        return self.kb.sharing.merge_apply(
            incoming=self.incoming, base=self.base, decisions=decisions, **fields
        )


def diverge(kb: KnowledgeBase) -> None:
    """ROOT ("ours") from the base: status changed, owner deleted, a tag added."""
    kb.knot(BASE_NT, "nt", timestamp="2026-01-01T00:00:00Z")
    kb.set(TASK, STATUS, "blocked", timestamp="2026-05-01T00:00:00Z", actor="carol", source="ops-desk")
    kb.retract(TASK, OWNER, {"iri": EX + "alice"})
    kb.knot(f'<{TASK}> <{TAG}> "c" .', "nt")


@pytest.fixture
def merge(tmp_path: Path) -> Iterator[Merge]:
    with KnowledgeBase(migrated_location(tmp_path)) as kb:
        diverge(kb)
        base = make_share(BASE_NT)
        yield Merge(kb, base, make_share(THEIRS_NT, parent=base["manifest"]["share_id"]))


def decided(doc: dict[str, Any]) -> dict[str, Any]:
    """The owner row takes theirs, the status row an explicit value."""
    out = copy.deepcopy(doc)
    for row in out["rows"]:
        if row["predicate"] == OWNER:
            row["decision"] = {"choose": "theirs"}
        else:
            row["decision"] = {"values": ['"reviewed"']}
            row["decided_by"], row["decided_at"] = "alice", "2026-06-01T00:00:00Z"
    return out


def state(kb: KnowledgeBase) -> tuple[str, int, dict[str, list[tuple[Any, ...]]]]:
    """What a refusal must leave unchanged: the export, the transaction count, every table."""
    return kb.export("ntriples"), kb.transactions(limit=None)["count"], tables(kb)


def root_values(kb: KnowledgeBase, s: str, p: str) -> set[str]:
    rows = kb.query(f"SELECT ?o WHERE {{ <{s}> <{p}> ?o }}")
    assert isinstance(rows, list)
    return {str(r["o"]) for r in rows}


# -- decisions ------------------------------------------------------------------------------------


def test_the_decisions_document(merge: Merge) -> None:
    before = state(merge.kb)
    doc = merge.decisions()
    assert state(merge.kb) == before  # a read: nothing written
    root = snapshot.take(merge.kb.db, merge.kb.sharing.env.export, "root", None)
    assert doc["schema"] == SCHEMA
    assert doc["incoming_share"] == merge.incoming["manifest"]["share_id"]
    assert doc["base_share"] == merge.base["manifest"]["share_id"]
    assert doc["local_graph_hash"] == sha256_id(root.ntriples)  # MD-2: pinned to this ROOT
    assert doc["incoming_graph_hash"] == merge.incoming["manifest"]["graph_hash"]
    assert doc["labels"] == {TASK: "Task one", STATUS: "status"}
    owner, status = doc["rows"]
    assert (owner["id"], owner["predicate"], owner["kind"]) == ("d1", OWNER, "delete_replace")
    assert (owner["base"], owner["ours"], owner["theirs"]) == ([f"<{EX}alice>"], [], [f"<{EX}bob>"])
    assert (status["id"], status["predicate"], status["kind"]) == ("d2", STATUS, "max_count_exceeded")
    assert (status["base"], status["ours"], status["theirs"]) == (['"open"'], ['"blocked"'], ['"done"'])
    assert status["subject"] == f"<{TASK}>" and status["max_count"] == 1
    assert status["rule"].startswith("sh:maxCount 1 on status:")  # the predicate by its label
    assert owner["rule"] == f"sh:maxCount 1 on <{OWNER}>: ours deleted the value while theirs replaced it"
    (fact,) = status["provenance"]["ours"]
    assert fact["value"] == '"blocked"' and fact["valid_from"] == "2026-05-01T00:00:00Z"
    assert (fact["actor"], fact["source"]) == ("carol", "ops-desk") and isinstance(fact["tx"], int)
    assert owner["provenance"]["ours"] == []
    assert status["provenance"]["theirs"] == {
        "share_id": doc["incoming_share"],
        "created_at": "2026-03-01T00:00:00Z",
        "store_id": "urn:quipu:store:producer",
        "attested": False,
    }
    assert status["provenance"]["base"]["share_id"] == doc["base_share"]
    assert all(row["decision"] is None and row["proposal"] is None for row in doc["rows"])  # MD-1


def test_proposals_are_advisory(merge: Merge) -> None:
    merge.incoming = make_share(THEIRS_NT, parent=merge.base["manifest"]["share_id"], attested=True)
    doc = merge.decisions(propose=True)
    owner, status = doc["rows"]
    assert owner["proposal"]["choose"] == "theirs"  # no local fact
    assert status["proposal"]["choose"] == "ours"  # local valid_from 2026-05 is newer than 2026-03
    assert status["provenance"]["theirs"]["attested"] is True
    for row in doc["rows"]:
        assert row["decision"] is None  # MD-1
        assert "attestation" in row["proposal"]["evidence"][0]
        assert row["proposal"]["evidence"][-1].endswith("the operator decides")


def one_sided(kb: KnowledgeBase, added: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """ROOT at the base, and an incoming share (base, incoming) that only adds ``added``."""
    kb.knot(BASE_NT, "nt")
    base = make_share(BASE_NT)
    return base, make_share(BASE_NT + added, parent=base["manifest"]["share_id"])


def test_a_merge_without_conflicts_has_no_rows_and_no_labels(tmp_path: Path) -> None:
    with KnowledgeBase(migrated_location(tmp_path)) as kb:
        base, incoming = one_sided(kb, f'<{TASK}> <{TAG}> "z" .\n')
        doc = kb.sharing.merge_decisions(incoming=incoming, base=base)
        assert doc["rows"] == [] and "labels" not in doc
        out = kb.sharing.merge_apply(incoming=incoming, base=base, decisions=doc, reviewer="r")
        assert (out["outcome"], out["asserted"], out["retracted"], out["applied"]) == ("merged", 1, 0, [])
        assert root_values(kb, TASK, TAG) == {"a", "z"}
        # Nothing left to write: the merge opens no transaction.
        again = kb.sharing.merge_decisions(incoming=incoming, base=base)
        count = kb.transactions(limit=None)["count"]
        quiet = kb.sharing.merge_apply(incoming=incoming, base=base, decisions=again, reviewer="r")
        assert (quiet["tx_id"], quiet["asserted"], quiet["retracted"]) == (None, 0, 0)
        assert kb.transactions(limit=None)["count"] == count


# -- apply ----------------------------------------------------------------------------------------


def test_a_three_way_merge_resolved_through_a_decisions_file(merge: Merge) -> None:
    doc = decided(merge.decisions())
    count = merge.kb.transactions(limit=None)["count"]
    out = merge.apply(doc, actor="merge-bot")
    assert merge.kb.transactions(limit=None)["count"] == count + 1  # MA-1: one transaction
    assert out["outcome"] == "merged" and isinstance(out["tx_id"], int)
    # status "blocked" retracted; "reviewed", bob, tag b and the new fact asserted
    assert (out["asserted"], out["retracted"]) == (4, 1)
    assert out["provenance_parents"] == [doc["local_graph_hash"], doc["incoming_share"]]
    assert out["conflicts"] == [] and out["reviewer"] == "alice"
    assert out["decisions_sha256"] == sha256_id(canonical_json(doc))  # MA-3
    assert out["applied"] == [
        {"id": "d1", "subject": f"<{TASK}>", "predicate": OWNER, "values": [f"<{EX}bob>"]},
        {
            "id": "d2",
            "subject": f"<{TASK}>",
            "predicate": STATUS,
            "values": ['"reviewed"'],
            "decided_by": "alice",
            "decided_at": "2026-06-01T00:00:00Z",
        },
    ]
    assert root_values(merge.kb, TASK, STATUS) == {"reviewed"}
    assert root_values(merge.kb, TASK, OWNER) == {EX + "bob"}
    assert root_values(merge.kb, TASK, TAG) == {"a", "b", "c"}  # unbounded: both additions
    assert root_values(merge.kb, EX + "other", EX + "p") == {"x"}
    tx = merge.kb.transactions(limit=None)["transactions"][-1]
    assert tx["id"] == out["tx_id"] and tx["actor"] == "merge-bot"  # MA-2
    assert tx["source"] == (
        f"share-merge:parents={doc['local_graph_hash']},{doc['incoming_share']};"
        f"decisions={out['decisions_sha256']};reviewer=alice"
    )


def test_choosing_base_replaces_the_slot_with_the_held_value(merge: Merge) -> None:
    doc = merge.decisions()
    for row in doc["rows"]:
        row["decision"] = {"choose": "base"}
    merge.apply(doc)
    assert root_values(merge.kb, TASK, STATUS) == {"open"}  # MA-4: ours' value is gone
    assert root_values(merge.kb, TASK, OWNER) == {EX + "alice"}


def test_an_empty_decision_clears_the_slot(merge: Merge) -> None:
    doc = merge.decisions()
    for row in doc["rows"]:
        row["decision"] = {"values": []}
    merge.apply(doc)
    assert root_values(merge.kb, TASK, STATUS) == set() and root_values(merge.kb, TASK, OWNER) == set()


def test_the_dry_run_reports_exactly_what_apply_does(merge: Merge) -> None:
    doc = decided(merge.decisions())
    before = state(merge.kb)
    dry = merge.apply(doc, dry_run=True)
    assert state(merge.kb) == before  # MA-5: nothing written
    assert dry["outcome"] == "dry-run" and dry["tx_id"] is None
    done = merge.apply(doc)
    for key in ("asserted", "retracted", "applied", "decisions_sha256", "provenance_parents", "conflicts"):
        assert dry[key] == done[key], key


def test_repeating_an_apply_is_refused_as_stale(merge: Merge) -> None:
    doc = decided(merge.decisions())
    merge.apply(doc)
    before = state(merge.kb)
    with pytest.raises(BadRequest, match="stale decisions: ROOT changed") as caught:
        merge.apply(doc)
    assert caught.value.reason == "stale_decisions"
    assert state(merge.kb) == before


def _root_moved(m: Merge, doc: dict[str, Any]) -> None:
    m.kb.knot(f'<{TASK}> <{TAG}> "late" .', "nt")


def _other_incoming(m: Merge, doc: dict[str, Any]) -> None:
    m.incoming = make_share(THEIRS_NT + f'<{EX}more> <{EX}p> "y" .\n', parent=m.base["manifest"]["share_id"])


def _base_moved(m: Merge, doc: dict[str, Any]) -> None:
    doc["base_share"] = sha256_id("another base")


def _row_dropped(m: Merge, doc: dict[str, Any]) -> None:
    doc["rows"].pop()


def _row_changed(m: Merge, doc: dict[str, Any]) -> None:
    doc["rows"][1]["theirs"] = ['"something else"']


def _row_added(m: Merge, doc: dict[str, Any]) -> None:
    doc["rows"].append({**doc["rows"][1], "id": "d3", "subject": f"<{EX}ghost>"})


STALE: dict[str, tuple[Callable[[Merge, dict[str, Any]], None], str]] = {
    "root moved": (_root_moved, "ROOT changed"),
    "incoming share differs": (_other_incoming, "the incoming share changed"),
    "base moved": (_base_moved, "the base share changed"),
    "conflict dropped": (_row_dropped, "the set of conflicts"),
    "conflict changed": (_row_changed, "the set of conflicts"),
    "conflict added": (_row_added, "the set of conflicts"),
}


@pytest.mark.parametrize("case", sorted(STALE))
def test_stale_decisions_are_refused_and_write_nothing(merge: Merge, case: str) -> None:
    doc = decided(merge.decisions())
    change, phrase = STALE[case]
    change(merge, doc)
    before = state(merge.kb)
    with pytest.raises(BadRequest, match=re.escape(f"stale decisions: {phrase}")) as caught:
        merge.apply(doc)
    assert caught.value.reason == "stale_decisions"
    assert state(merge.kb) == before


def test_rows_may_come_in_any_order(merge: Merge) -> None:
    doc = decided(merge.decisions())
    doc["rows"].reverse()
    doc["rows"][0]["theirs"] = list(reversed(doc["rows"][0]["theirs"]))
    assert merge.apply(doc)["outcome"] == "merged"


def _set_decision(index: int, decision: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc["rows"][index]["decision"] = decision

    return change


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        doc[key] = value

    return change


def _row_field(doc: dict[str, Any]) -> None:
    doc["rows"][0]["comment"] = "looks fine"


STATUS_ROW = 1
REFUSED: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "undecided row": (_set_decision(0, None), "undecided_row", "is undecided"),
    "too many values": (
        _set_decision(STATUS_ROW, {"values": ['"x"', '"y"']}),
        "too_many_values",
        "above sh:maxCount 1",
    ),
    "a value twice": (_set_decision(STATUS_ROW, {"values": ['"x"', '"x"']}), "too_many_values", "2 values"),
    "smuggled newline": (
        _set_decision(STATUS_ROW, {"values": [f'"x" .\n<{TASK}> <{OWNER}> <{EX}mallory>']}),
        "invalid_decision_value",
        "not exactly one RDF term",
    ),
    "smuggled second triple": (
        _set_decision(STATUS_ROW, {"values": [f'"x" . <{TASK}> <{OWNER}> <{EX}mallory>']}),
        "invalid_decision_value",
        "not exactly one RDF term",
    ),
    "three terms": (
        _set_decision(STATUS_ROW, {"values": [f"<{EX}a> <{EX}b> <{EX}c>"]}),
        "invalid_decision_value",
        "not exactly one RDF term",
    ),
    "not a term": (_set_decision(STATUS_ROW, {"values": ["reviewed"]}), "invalid_decision_value", "RDF term"),
    "not a string": (_set_decision(STATUS_ROW, {"values": [5]}), "invalid_decision_value", "RDF term"),
    "bad choice": (_set_decision(0, {"choose": "mine"}), "invalid_field", "must be one of"),
    "two decisions": (_set_decision(0, {"choose": "ours", "values": []}), "invalid_field", '{"choose"'),
    "unknown file field": (
        _set("comment", "hi"),
        "undefined_decisions_field",
        "unknown field 'comment' in the file",
    ),
    "unknown row field": (_row_field, "undefined_decisions_field", "unknown field 'comment' in row d1"),
    "wrong schema": (
        _set("schema", "https://example.org/other"),
        "unsupported_schema",
        "not a merge decisions file",
    ),
    "missing rows": (lambda doc: doc.pop("rows"), "missing_field", "'decisions.rows' is required"),
    "duplicate row id": (
        lambda doc: doc["rows"][1].update(id="d1"),
        "invalid_field",
        "appears twice",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_bad_decisions_file_is_refused_and_writes_nothing(merge: Merge, case: str) -> None:
    doc = decided(merge.decisions())
    change, reason, phrase = REFUSED[case]
    change(doc)
    before = state(merge.kb)
    for dry_run in (True, False):  # MA-5: the dry run refuses exactly as apply does
        with pytest.raises(BadRequest, match=re.escape(phrase)) as caught:
            merge.apply(doc, dry_run=dry_run)
        assert caught.value.reason == reason
    assert state(merge.kb) == before


@pytest.mark.parametrize("reviewer", ["", "   ", "al\nice"])
def test_a_blank_reviewer_is_refused(merge: Merge, reviewer: str) -> None:
    doc = decided(merge.decisions())
    before = state(merge.kb)
    with pytest.raises(BadRequest) as caught:
        merge.apply(doc, reviewer=reviewer)
    assert caught.value.field == "reviewer"
    assert state(merge.kb) == before


def test_the_hash_is_of_the_canonical_document_not_its_bytes(merge: Merge) -> None:
    doc = decided(merge.decisions())
    # The same object with its keys in another order and other whitespace on the wire.
    reordered = json.loads(json.dumps(dict(reversed(list(doc.items()))), indent=4))
    first = merge.apply(doc, dry_run=True)["decisions_sha256"]
    assert merge.apply(reordered, dry_run=True)["decisions_sha256"] == first
    doc["rows"][0]["decided_by"] = "someone else"  # echoed, not trusted, but hashed
    assert merge.apply(doc, dry_run=True)["decisions_sha256"] != first


# -- the shares -----------------------------------------------------------------------------------


def test_the_base_must_be_the_incoming_shares_parent(merge: Merge) -> None:
    other = make_share(BASE_NT + f'<{EX}x> <{EX}p> "base2" .\n')
    doc = decided(merge.decisions())
    before = state(merge.kb)
    calls: list[Callable[[], Any]] = [
        lambda: merge.kb.sharing.merge_decisions(incoming=merge.incoming, base=other),
        lambda: merge.kb.sharing.merge_apply(
            incoming=merge.incoming, base=other, decisions=doc, reviewer="r"
        ),
    ]
    for call in calls:
        with pytest.raises(BadRequest, match="is not the incoming share's parent_share") as caught:
            call()
        assert caught.value.reason == "base_not_parent"
    assert state(merge.kb) == before


def test_an_incoming_share_without_a_parent_has_no_base(merge: Merge) -> None:
    orphan = make_share(THEIRS_NT)
    with pytest.raises(BadRequest, match="three-way merge has no base"):
        merge.kb.sharing.merge_decisions(incoming=orphan, base=merge.base)
    doc = decided(merge.decisions())
    with pytest.raises(BadRequest, match="three-way merge has no base"):
        merge.kb.sharing.merge_apply(incoming=orphan, base=merge.base, decisions=doc, reviewer="r")


def test_either_share_must_verify(merge: Merge) -> None:
    tampered = copy.deepcopy(merge.incoming)
    tampered["export_ntriples"] += f'<{EX}evil> <{EX}p> "x" .\n'
    with pytest.raises(BadRequest, match="share graph hash mismatch"):
        merge.kb.sharing.merge_decisions(incoming=tampered, base=merge.base)
    bad_base = copy.deepcopy(merge.base)
    bad_base["manifest"]["store_id"] = "urn:forged"
    with pytest.raises(BadRequest, match="share id mismatch"):
        merge.kb.sharing.merge_decisions(incoming=merge.incoming, base=bad_base)
    with pytest.raises(BadRequest, match=r"'incoming\.export_ntriples' is required"):
        merge.kb.sharing.merge_decisions(incoming={"manifest": {}, "shapes_turtle": ""}, base=merge.base)


def test_a_share_not_declared_canonical_is_canonicalised_first(merge: Merge) -> None:
    """A manifest without ``canonicalization`` seals whatever N-Triples it carries: the merge
    canonicalises it before comparing, so the same triples give the same rows."""
    loose = copy.deepcopy(merge.incoming)
    manifest = loose["manifest"]
    loose["export_ntriples"] = "".join(reversed(THEIRS_NT.splitlines(keepends=True))).replace(" .", "  .")
    del manifest["canonicalization"], manifest["share_id"]
    manifest["graph_hash"] = sha256_id(loose["export_ntriples"])
    manifest["share_id"] = share_id_of(manifest)
    rows = merge.decisions()["rows"]
    merge.incoming = loose
    assert merge.decisions()["rows"] == [
        {
            **row,
            "provenance": {
                **row["provenance"],
                "theirs": {**row["provenance"]["theirs"], "share_id": manifest["share_id"]},
            },
        }
        for row in rows
    ]


def test_a_write_naming_a_blank_node_is_refused(tmp_path: Path) -> None:
    """Blank nodes are compared by canonical label; ROOT cannot be addressed by one."""
    with KnowledgeBase(migrated_location(tmp_path)) as kb:
        base, incoming = one_sided(kb, f'_:n <{EX}p> "anonymous" .\n')
        doc = kb.sharing.merge_decisions(incoming=incoming, base=base)
        assert doc["rows"] == []
        before = state(kb)
        with pytest.raises(BadRequest, match="names a blank node") as caught:
            kb.sharing.merge_apply(incoming=incoming, base=base, decisions=doc, reviewer="r", dry_run=True)
        assert caught.value.reason == "blank_node_unaddressable"
        assert state(kb) == before


def test_the_stores_write_gate_applies_to_the_merge(tmp_path: Path) -> None:
    """The additions pass the stored shape sets' gates as any ROOT write does; the dry run too."""
    with KnowledgeBase(migrated_location(tmp_path)) as kb:
        gate = f"""@prefix sh: <http://www.w3.org/ns/shacl#> .
<{EX}Numbers> a sh:NodeShape ; sh:targetSubjectsOf <{EX}n> ;
  sh:property [ sh:path <{EX}n> ; sh:datatype <http://www.w3.org/2001/XMLSchema#integer> ] ."""
        kb.load_shapes("numbers", gate)
        base, incoming = one_sided(kb, f'<{EX}other> <{EX}n> "not a number" .\n')
        doc = kb.sharing.merge_decisions(incoming=incoming, base=base)
        before = state(kb)
        for dry_run in (True, False):
            with pytest.raises(BadRequest) as caught:
                kb.sharing.merge_apply(
                    incoming=incoming, base=base, decisions=doc, reviewer="r", dry_run=dry_run
                )
            assert caught.value.reason == "shacl_violation"
        assert state(kb) == before


# -- REST -----------------------------------------------------------------------------------------


def test_the_rest_routes(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb = kb_of(client)
        diverge(kb)
        base = make_share(BASE_NT)
        incoming = make_share(THEIRS_NT, parent=base["manifest"]["share_id"])
        answer = client.post(
            "/merge/decisions", json={"incoming": incoming, "base": base, "extra": 1, "also": 2}
        )
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        assert doc.pop("ignored_fields") == ["also", "extra"]  # annotating (§0.5)
        assert doc == kb.sharing.merge_decisions(incoming=incoming, base=base)
        orphan = make_share(THEIRS_NT)
        body = problem(
            client.post("/merge/decisions", json={"incoming": orphan, "base": base}), "no_merge_base"
        )
        assert "three-way merge has no base" in body["error"]
        request = {"incoming": incoming, "base": base, "decisions": decided(doc), "reviewer": "alice"}
        undecided = {**request, "decisions": doc}
        refused_write(client, "/merge/apply", json=undecided, field="decisions.rows[0].decision")
        refused_write(client, "/merge/apply", json={**request, "reviewer": " "}, field="reviewer")
        refused_write(client, "/merge/apply", json={k: v for k, v in request.items() if k != "reviewer"})
        dry = client.post("/merge/apply", json={**request, "dry_run": True, "note": "x"})
        assert dry.status_code == 200, dry.text
        assert dry.json()["outcome"] == "dry-run" and dry.json()["ignored_fields"] == ["note"]
        done = client.post("/merge/apply", json=request)
        assert done.status_code == 200, done.text
        assert done.json()["asserted"] == dry.json()["asserted"] and "ignored_fields" not in done.json()
        stale = refused_write(client, "/merge/apply", json=request, field="decisions")
        assert stale["reason"] == "stale_decisions"
