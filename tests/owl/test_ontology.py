"""``POST /ontology`` (tools-graphs-governance §8.1, errata): the Summary, materialisation of every
family into ROOT's companion graph, versioned storage (OL-1), one transaction actor ``owl``
(OL-2), the gate's cache (OL-3), remove keeps what was materialised (OL-4), the ``materialize``
action, and bad input refused with the store unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from quipu.store import ontologies
from tests.owl.support import (
    COMPANION,
    DATA,
    EX,
    ONTOLOGY,
    PREFIXES,
    RDF_TYPE,
    SAME_AS,
    SUMMARY,
    load,
    requires_owl,
)
from tests.rest.support import kb_of, objects, problem, raw, refused_write, serve

pytestmark = requires_owl

NO_COUNTS = {
    "subclass_inferences": 0,
    "sub_property_inferences": 0,
    "inverse_inferences": 0,
    "symmetric_inferences": 0,
    "equivalent_class_inferences": 0,
    "domain_range_inferences": 0,
    "transitive_inferences": 0,
    "equivalent_property_inferences": 0,
    "same_as_inferences": 0,
    "total": 0,
}


def _ask(client: object, s: str, p: str, o: str, graph: str | None = None) -> bool:
    return bool(kb_of(client).query(f"ASK {{ <{s}> <{p}> <{o}> }}", graph=graph))  # type: ignore[arg-type]


def test_load_answers_the_summary_and_materialises_every_family(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        body = load(client, timestamp="2026-12-01T00:00:00Z")
        assert body["action"] == "load" and body["name"] == "zoo"
        assert body["axioms"] == SUMMARY
        assert body["materialized"] == {
            **NO_COUNTS,
            "subclass_inferences": 2,  # rex: Mammal, Animal
            "equivalent_class_inferences": 1,  # tom: Companion
            "domain_range_inferences": 2,  # ann: Owner, car: Possession
            "sub_property_inferences": 1,  # ann caresFor rex
            "equivalent_property_inferences": 1,  # ann fancies tea
            "inverse_inferences": 1,  # bob childOf ann
            "symmetric_inferences": 1,  # cat knows ann
            "transitive_inferences": 1,  # a1 ancestorOf a3
            "total": 10,
        }
        expected = [
            (f"{EX}rex", RDF_TYPE, f"{EX}Animal"),
            (f"{EX}rex", RDF_TYPE, f"{EX}Mammal"),
            (f"{EX}tom", RDF_TYPE, f"{EX}Companion"),
            (f"{EX}ann", RDF_TYPE, f"{EX}Owner"),
            (f"{EX}car", RDF_TYPE, f"{EX}Possession"),
            (f"{EX}ann", f"{EX}caresFor", f"{EX}rex"),
            (f"{EX}ann", f"{EX}fancies", f"{EX}tea"),
            (f"{EX}bob", f"{EX}childOf", f"{EX}ann"),
            (f"{EX}cat", f"{EX}knows", f"{EX}ann"),
            (f"{EX}a1", f"{EX}ancestorOf", f"{EX}a3"),
        ]
        for s, p, o in expected:
            assert _ask(client, s, p, o, graph=COMPANION), (s, p, o)
            assert not _ask(client, s, p, o), (s, p, o)  # errata: never into ROOT itself


def _transactions(client: object, source: str) -> list[tuple[object, ...]]:
    return raw(
        client,  # type: ignore[arg-type]
        "SELECT t.actor, t.timestamp, g.iri FROM transactions t JOIN terms g ON g.id = t.graph "
        "WHERE t.source = ? ORDER BY t.id",
        source,
    )


def test_materialisation_is_one_transaction_actor_owl_source_owl_materialize(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client, timestamp="2026-12-01T00:00:00Z")
        # OL-2 and the errata: one transaction for every family, into ROOT's companion
        assert _transactions(client, "owl:materialize") == [("owl", "2026-12-01T00:00:00Z", COMPANION)]
        # the companion's bookkeeping, as the Datalog reasoner keeps it (DM §3 rule 4)
        assert _transactions(client, "quipu:inferred-plane") == [("quipu", "2026-12-01T00:00:00Z", COMPANION)]
        again = load(client, timestamp="2026-12-02T00:00:00Z")
        assert again["materialized"] == NO_COUNTS  # nothing new: nothing written
        assert len(_transactions(client, "owl:materialize")) == 1


def test_same_as_is_closed_and_co_referent_nodes_share_statements(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + 'ex:x owl:sameAs ex:y . ex:y owl:sameAs ex:z . ex:x ex:name "X" .')
        body = load(client, turtle=PREFIXES + "ex:Dog rdfs:subClassOf ex:Animal .")
        assert body["materialized"]["same_as_inferences"] == body["materialized"]["total"]
        for s, o in ((f"{EX}y", f"{EX}x"), (f"{EX}x", f"{EX}z"), (f"{EX}z", f"{EX}x")):
            assert _ask(client, s, SAME_AS, o, graph=COMPANION), (s, o)
        assert not _ask(client, f"{EX}x", SAME_AS, f"{EX}x", graph=COMPANION)  # no reflexive noise
        rows = kb_of(client).query(f'SELECT ?s WHERE {{ ?s <{EX}name> "X" }} ORDER BY ?s', graph=COMPANION)
        assert isinstance(rows, list)
        assert [str(r["s"]) for r in rows] == [f"{EX}y", f"{EX}z"]


def test_ol1_storage_is_versioned_by_name(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, timestamp="2026-12-01T00:00:00Z")
        load(client, turtle=PREFIXES + "ex:A rdfs:subClassOf ex:B .", timestamp="2026-12-02T00:00:00Z")
        load(client, turtle=PREFIXES + "ex:C rdfs:subClassOf ex:D .", timestamp="2026-12-02T00:00:00Z")
        with kb_of(client).db.read() as conn:
            assert ontologies.versions_of(conn, "zoo") == [
                ("2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"),
                ("2026-12-02T00:00:00Z", None),  # the same-instant reload replaced this one
            ]
            assert "ex:C" in ontologies.open_versions(conn)[0].turtle
        listed = client.post("/ontology", json={"action": "list"}).json()
        assert listed["count"] == 1 and listed["ontologies"][0]["axioms"]["subclass_of"] == 1
        gone = client.post(
            "/ontology", json={"action": "remove", "name": "zoo", "timestamp": "2026-12-03T00:00:00Z"}
        )
        assert gone.json() == {"action": "remove", "name": "zoo", "removed": True}
        again = client.post("/ontology", json={"action": "remove", "name": "zoo"})
        assert again.json()["removed"] is False
        with kb_of(client).db.read() as conn:  # remove closes, never deletes history
            assert ontologies.versions_of(conn, "zoo")[-1] == ("2026-12-02T00:00:00Z", "2026-12-03T00:00:00Z")
        assert client.post("/ontology", json={}).json() == {"action": "list", "ontologies": [], "count": 0}


def test_a_version_cannot_end_before_it_began(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, timestamp="2026-12-02T00:00:00Z")
        body = refused_write(
            client,
            "/ontology",
            field="timestamp",
            json={"action": "load", "name": "zoo", "turtle": ONTOLOGY, "timestamp": "2026-12-01T00:00:00Z"},
        )
        assert "versions only move forward" in body["error"]


def test_ol4_remove_keeps_what_was_materialised(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client)
        assert client.post("/ontology", json={"action": "remove", "name": "zoo"}).json()["removed"] is True
        assert _ask(client, f"{EX}rex", RDF_TYPE, f"{EX}Animal", graph=COMPANION)


def test_ol3_a_load_and_a_remove_bite_on_the_very_next_write(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:al a ex:Person .")
        assert (
            client.post("/knot", json={"turtle": PREFIXES + "ex:b1 a ex:Person, ex:Robot ."}).status_code
            == 200
        )
        load(client)
        refused_write(client, "/knot", json={"turtle": PREFIXES + "ex:al a ex:Robot ."})
        client.post("/ontology", json={"action": "remove", "name": "zoo"})
        assert client.post("/knot", json={"turtle": PREFIXES + "ex:al a ex:Robot ."}).status_code == 200


def test_the_materialize_action_re_derives_from_every_stored_ontology(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        none = client.post("/ontology", json={"action": "materialize"}).json()
        assert none["ontologies"] == 0 and none["materialized"] is None and "load" in none["note"]
        kb_of(client).knot(DATA)
        load(client)
        load(client, name="more", turtle=PREFIXES + "ex:Animal rdfs:subClassOf ex:Being .")
        assert _ask(client, f"{EX}rex", RDF_TYPE, f"{EX}Being", graph=COMPANION)
        kb_of(client).retract(f"{EX}a2", f"{EX}ancestorOf")
        body = client.post("/ontology", json={"action": "materialize"}).json()
        assert body["ontologies"] == 2
        assert body["materialized"]["total"] == 0 and body["materialized"]["retracted"] == 1
        assert not _ask(client, f"{EX}a1", f"{EX}ancestorOf", f"{EX}a3", graph=COMPANION)


def test_list_shows_each_stored_ontology_with_its_summary(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, timestamp="2026-12-01T00:00:00Z")
        with kb_of(client).db.write() as ctx:  # a stored text that no longer parses
            ontologies.store(ctx, "broken", "not turtle (", "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z")
        body = client.post("/ontology", json={"action": "list", "extra": 1}).json()
        assert body["count"] == 2 and body["ignored_fields"] == ["extra"]
        assert [(o["name"], o["axioms"]) for o in body["ontologies"]] == [
            ("broken", {"error": "parse failed"}),
            ("zoo", SUMMARY),
        ]
        assert all(o["loaded_at"].endswith("Z") for o in body["ontologies"])


@pytest.mark.parametrize(
    ("request_body", "reason", "field"),
    [
        ({"action": "drop", "name": "zoo"}, "unknown_action", "action"),
        ({"action": "load", "turtle": ONTOLOGY}, "missing_field", "name"),
        ({"action": "load", "name": "zoo"}, "missing_field", "turtle"),
        ({"action": "load", "name": "zoo", "turtle": "ex:a ex:b"}, "invalid_ontology", "turtle"),
        ({"action": "remove"}, "missing_field", "name"),
        ({"action": 3}, "wrong_type", "action"),
    ],
)
def test_bad_requests_are_refused_and_write_nothing(
    tmp_path: Path, request_body: dict[str, object], reason: str, field: str
) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(DATA)
        load(client)
        body = refused_write(client, "/ontology", field=field, json=request_body)
        assert body["reason"] == reason


def test_an_unknown_action_never_falls_through_to_list(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        body = problem(client.post("/ontology", json={"action": "lists"}), "unknown_action")
        assert "'lists'" in body["error"] and "ontologies" not in body


def test_every_action_is_a_write(tmp_path: Path) -> None:
    with serve(tmp_path, server={"read_only": True}) as client:
        response = client.post("/ontology", json={"action": "list"})
        assert response.status_code == 403 and response.json()["reason"] == "server_is_read_only"
        assert client.post("/explain", json={"s": f"{EX}a", "p": f"{EX}b", "o": "c"}).status_code == 400


def test_literal_premises_keep_their_spelling(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + 'ex:ann ex:feeds "oats", "hay"@en, 7 .')
        load(client)
        assert objects(client, f"{EX}ann", f"{EX}caresFor", graph=COMPANION) == ["7", "hay", "oats"]
        rows = kb_of(client).query(f'ASK {{ <{EX}ann> <{EX}caresFor> "hay"@en }}', graph=COMPANION)
        assert rows is True


def test_reactive_materialize_follows_relevant_writes_only(tmp_path: Path) -> None:
    with serve(tmp_path, owl={"reactive_materialize": True}) as client:
        load(client)
        assert client.post("/knot", json={"turtle": PREFIXES + "ex:fido a ex:Dog ."}).status_code == 200
        assert _ask(client, f"{EX}fido", RDF_TYPE, f"{EX}Animal", graph=COMPANION)  # before the answer
        runs = len(_transactions(client, "owl:materialize"))
        client.post("/knot", json={"turtle": PREFIXES + 'ex:fido ex:name "Fido" .'})  # no axiom reads it
        assert len(_transactions(client, "owl:materialize")) == runs
        kb_of(client).retract(f"{EX}fido", RDF_TYPE, {"iri": f"{EX}Dog"}, allow_orphan=True)
        assert not _ask(client, f"{EX}fido", RDF_TYPE, f"{EX}Animal", graph=COMPANION)


def test_without_reactive_materialize_a_write_materialises_nothing(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client)
        client.post("/knot", json={"turtle": PREFIXES + "ex:fido a ex:Dog ."})
        assert not _ask(client, f"{EX}fido", RDF_TYPE, f"{EX}Animal", graph=COMPANION)
