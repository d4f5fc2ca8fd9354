"""A refused write over HTTP changes nothing and appends ``write.refused`` (DM §11.1, issue 6).

/knot answers a SHACL refusal with 200 ``conforms: false``; /episode with 400 ``shacl_violation``.
Either way the event is recorded after the rollback, carrying the declared actor and source.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.rest.support import kb_of, serve

EX = "http://ex.org/"
SHAPES = (
    "@prefix sh: <http://www.w3.org/ns/shacl#> . @prefix : <http://ex.org/> . "
    "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .\n"
    ":PersonShape a sh:NodeShape ; sh:targetClass :Person ; "
    "sh:property [ sh:path :age ; sh:datatype xsd:integer ] ."
)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serve(tmp_path, base_ns=EX, shacl={"validate_on_write": True}) as c:
        assert (
            c.post("/shapes", json={"action": "load", "name": "people", "turtle": SHAPES}).status_code == 200
        )
        yield c


def test_a_refused_knot_changes_nothing_and_emits_write_refused(client: TestClient) -> None:
    kb = kb_of(client)
    good = client.post("/knot", json={"turtle": f"<{EX}c> a <{EX}Person> ; <{EX}age> 3 ."})
    assert good.json()["conforms"] is True
    before, mark = kb.export(), kb.events()[-1]["offset"]
    refused = client.post(
        "/knot",
        json={"turtle": f'<{EX}d> a <{EX}Person> ; <{EX}age> "x" .', "actor": "bot", "source": "feed"},
    )
    assert refused.status_code == 200 and refused.json()["conforms"] is False
    assert kb.export() == before
    [event] = kb.events(after=mark)
    assert event["type"] == "write.refused" and event["tx_id"] == good.json()["tx_id"]
    assert event["payload"]["actor"] == "bot" and event["payload"]["source"] == "feed"
    assert event["payload"]["gate"] == "shacl" and event["payload"]["refused_datums"] == 2


def test_a_refused_episode_is_400_and_emits_write_refused(client: TestClient) -> None:
    kb = kb_of(client)
    mark = kb.events()[-1]["offset"] if kb.events() else 0
    response = client.post(
        "/episode",
        json={"name": "bad", "nodes": [{"name": "x", "type": "Person", "properties": {"age": "old"}}]},
    )
    assert response.status_code == 400 and response.json()["reason"] == "shacl_violation"
    assert kb.stats()["facts"] == 0
    [event] = kb.events(after=mark)
    assert event["type"] == "write.refused" and event["payload"]["source"] == "episode:bad"
