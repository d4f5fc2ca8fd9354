"""The OWL write gate (errata: owl:disjointWith and owl:FunctionalProperty only, behind
``[quipu.owl] validate_on_write``, on by default with the extra): refusals leave the store
unchanged, a later functional value replaces the earlier one, two in one write are refused."""

from __future__ import annotations

from pathlib import Path

from tests.owl.support import EX, PREFIXES, load, requires_owl
from tests.rest.support import all_claims, kb_of, objects, refused_write, serve

pytestmark = requires_owl

AEGIS = "http://aegis.gastown.local/ontology/"
ONTOLOGY = PREFIXES + (
    "ex:Person owl:disjointWith ex:Robot . ex:Android rdfs:subClassOf ex:Robot .\n"
    "ex:ssn a owl:FunctionalProperty .\n"
    f"<{AEGIS}Person> owl:disjointWith <{AEGIS}Robot> .\n"
)


def test_a_disjoint_typing_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:al a ex:Person .")
        load(client, turtle=ONTOLOGY)
        body = refused_write(
            client, "/knot", json={"turtle": PREFIXES + 'ex:al a ex:Robot . ex:al ex:name "Al" .'}
        )
        assert body["reason"] == "owl_violation"
        assert "cannot be both" in body["error"] and "nothing was written" in body["error"]
        assert body["violations"] == [
            {
                "kind": "disjoint_classes",
                "focus_node": f"{EX}al",
                "classes": [f"{EX}Robot", f"{EX}Person"],
                "axiom": f"<{EX}Robot> owl:disjointWith <{EX}Person>",
                "message": f"<{EX}al> cannot be both <{EX}Robot> and <{EX}Person> (disjoint classes)",
            }
        ]


def test_disjointness_follows_the_class_hierarchy_and_reports_every_violation(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, turtle=ONTOLOGY)
        body = refused_write(
            client,
            "/knot",
            json={"turtle": PREFIXES + "ex:b a ex:Person, ex:Android . ex:c a ex:Robot, ex:Person ."},
        )
        assert [(v["focus_node"], v["axiom"]) for v in body["violations"]] == [
            (f"{EX}b", f"<{EX}Robot> owl:disjointWith <{EX}Person>"),
            (f"{EX}c", f"<{EX}Person> owl:disjointWith <{EX}Robot>"),
        ]


def test_a_later_functional_value_replaces_the_earlier_one(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, turtle=ONTOLOGY)
        kb_of(client).knot(PREFIXES + 'ex:al ex:ssn "111" .', timestamp="2026-12-01T00:00:00Z")
        done = client.post(
            "/knot", json={"turtle": PREFIXES + 'ex:al ex:ssn "222" .', "timestamp": "2026-12-02T00:00:00Z"}
        )
        assert done.status_code == 200, done.text
        assert objects(client, f"{EX}al", f"{EX}ssn") == ["222"]
        claims = all_claims(client, f"{EX}al", f"{EX}ssn")
        closed = [c for c in claims if c[1] is not None]
        assert len(closed) == 1 and closed[0][1] == "2026-12-02T00:00:00Z"  # closed in the writer's tx
        assert closed[0][3] == done.json()["tx_id"]
        again = client.post("/knot", json={"turtle": PREFIXES + 'ex:al ex:ssn "222" .'})
        assert again.status_code == 200 and objects(client, f"{EX}al", f"{EX}ssn") == ["222"]


def test_two_functional_values_in_one_write_are_refused(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, turtle=ONTOLOGY)
        kb_of(client).knot(PREFIXES + 'ex:al ex:ssn "111" .')
        body = refused_write(client, "/knot", json={"turtle": PREFIXES + 'ex:al ex:ssn "1", "2" .'})
        assert body["violations"][0]["kind"] == "functional_property"
        assert body["violations"][0]["count"] == 2 and "in one write" in body["error"]


def test_sparql_update_and_episodes_pass_the_gate_too(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:al a ex:Person .")
        load(client, turtle=ONTOLOGY)
        body = refused_write(
            client,
            "/update",
            content=f"INSERT DATA {{ <{EX}al> a <{EX}Robot> }}",
            headers={"Content-Type": "application/sparql-update"},
        )
        assert body["reason"] == "owl_violation"
        episode = {"name": "e1", "source": "agent", "nodes": [{"name": "unit7", "type": "Person"}]}
        assert client.post("/episode", json=episode).status_code == 200
        clash = {"name": "e2", "source": "agent", "nodes": [{"name": "unit7", "type": "Robot"}]}
        assert refused_write(client, "/episode", json=clash)["reason"] == "owl_violation"


def test_a_refusal_is_recorded_as_write_refused_by_the_owl_gate(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        kb_of(client).knot(PREFIXES + "ex:al a ex:Person .")
        load(client, turtle=ONTOLOGY)
        client.post("/knot", json={"turtle": PREFIXES + "ex:al a ex:Robot ."})
        refused = [e for e in kb_of(client).events() if e["type"] == "write.refused"]
        assert [e["payload"]["gate"] for e in refused] == ["owl"]
        assert "cannot be both" in refused[0]["payload"]["reason"]


def test_only_root_writes_are_gated(tmp_path: Path) -> None:
    with serve(tmp_path) as client:
        load(client, turtle=ONTOLOGY)
        assert client.post("/graph/create", json={"graph": f"{EX}g"}).status_code == 200
        done = client.post(
            "/knot", json={"turtle": PREFIXES + "ex:b a ex:Person, ex:Robot .", "graph": f"{EX}g"}
        )
        assert done.status_code == 200, done.text


def test_validate_on_write_false_turns_the_gate_off(tmp_path: Path) -> None:
    with serve(tmp_path, owl={"validate_on_write": False}) as client:
        load(client, turtle=ONTOLOGY)
        done = client.post(
            "/knot", json={"turtle": PREFIXES + 'ex:b a ex:Person, ex:Robot . ex:b ex:ssn "1", "2" .'}
        )
        assert done.status_code == 200, done.text
        assert objects(client, f"{EX}b", f"{EX}ssn") == ["1", "2"]
