"""The shared entity scopes of the search tools (tools-search §0.8): provenance groups and types,
read on a real store of the backend under test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.search.scopes import group_members, intersect, typed_members
from tests.backends import store_location

EX = "http://ex.org/"
AEGIS = "http://aegis.gastown.local/ontology/"
QUECHUA_GROUP = "https://scbrown.github.io/quechua/ns#groupId"
P = (
    f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
    "@prefix prov: <http://www.w3.org/ns/prov#> .\n"
)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path, "scopes.db")) as store:
        yield store


def members(
    kb: KnowledgeBase, group_ids: list[object] | None, valid_at: str | None = None
) -> set[str] | None:
    with kb.db.read() as conn:
        found = group_members(kb.db, conn, group_ids, valid_at)
        return None if found is None else set(kb.db.terms.iris(conn, found).values())


def typed(kb: KnowledgeBase, cls: str, *, infer: bool, valid_at: str | None = None) -> set[str]:
    with kb.db.read() as conn:
        found = typed_members(kb.db, conn, cls, valid_at, infer=infer)
        return set(kb.db.terms.iris(conn, found).values())


def names(*local: str, ns: str = AEGIS) -> set[str]:
    return {ns + n for n in local}


# -- group scope ----------------------------------------------------------------------------------


def test_absent_empty_and_all_non_string_lists_are_no_scope(kb: KnowledgeBase) -> None:
    kb.episode("e1", group_id="team", nodes=[{"name": "svc", "type": "Service"}])
    assert members(kb, None) is None
    assert members(kb, []) is None
    assert members(kb, [5, None, {"g": 1}]) is None  # every entry ignored: nothing asked for


def test_episode_entities_of_the_listed_groups_only(kb: KnowledgeBase) -> None:
    kb.episode(
        "e1", group_id="team", nodes=[{"name": "svc", "type": "Service"}, {"name": "db", "type": "Database"}]
    )
    kb.episode("e2", group_id="other", nodes=[{"name": "cache", "type": "Cache"}])
    kb.episode("e3", nodes=[{"name": "loner", "type": "Thing"}])  # an episode without a group
    assert members(kb, ["team"]) == names("svc", "db")  # the activity itself was not generated
    assert members(kb, ["team", 7, "other"]) == names("svc", "db", "cache")  # non-strings ignored
    assert members(kb, ["TEAM"]) == set()  # exact string equality
    assert members(kb, ["nobody"]) == set()


def test_knot_written_entities_are_dropped(kb: KnowledgeBase) -> None:
    kb.episode("e1", group_id="team", nodes=[{"name": "svc", "type": "Service"}])
    # The same node name written with /knot: no episode generated it. Extra facts about an
    # episode entity keep it in scope, since an episode still generated it.
    kb.knot(P + f':knotted rdfs:label "svc" . <{AEGIS}svc> :extra "x" .')
    assert members(kb, ["team"]) == names("svc")


def test_both_vocabulary_spellings_count_and_an_entity_is_listed_once(kb: KnowledgeBase) -> None:
    kb.knot(
        P
        + f"""
        :act1 <{QUECHUA_GROUP}> "team" .
        :act2 <{AEGIS}groupId> "team" ; <{QUECHUA_GROUP}> "team" .
        :q prov:wasGeneratedBy :act1 .
        :both prov:wasGeneratedBy :act1, :act2 .
        """
    )
    with kb.db.read() as conn:
        found = group_members(kb.db, conn, ["team"], None)
    assert found is not None and len(found) == 2
    assert members(kb, ["team"]) == names("q", "both", ns=EX)


def test_unrelated_predicates_ending_in_group_id_stay_outside(kb: KnowledgeBase) -> None:
    kb.knot(
        P
        + """
        :act :groupId "team" ; <http://other.org/ns#groupId> "team" ; :team_groupId "team" .
        :x prov:wasGeneratedBy :act .
        :y :groupId "team" .
        """
    )
    assert members(kb, ["team"]) == set()


def test_an_entity_pointing_at_a_grouped_activity_otherwise_stays_outside(kb: KnowledgeBase) -> None:
    kb.knot(P + f':act <{AEGIS}groupId> "team" . :gen prov:wasGeneratedBy :act . :other :about :act .')
    assert members(kb, ["team"]) == names("gen", ns=EX)


def test_scope_is_read_at_valid_at(kb: KnowledgeBase) -> None:
    kb.knot(
        P + f':act <{AEGIS}groupId> "team" . :x prov:wasGeneratedBy :act .',
        valid_from="2020-01-01T00:00:00Z",
    )
    kb.retract(f"{EX}x", "http://www.w3.org/ns/prov#wasGeneratedBy", timestamp="2022-01-01T00:00:00Z")
    assert members(kb, ["team"]) == set()  # current: the provenance link is closed
    assert members(kb, ["team"], "2021-06-01T00:00:00Z") == names("x", ns=EX)
    assert members(kb, ["team"], "2019-06-01T00:00:00Z") == set()  # not yet true


def test_the_scope_is_never_truncated(kb: KnowledgeBase) -> None:
    nodes = [{"name": f"n{i:04d}", "type": "Node"} for i in range(1234)]
    kb.episode("big", group_id="team", nodes=nodes)
    found = members(kb, ["team"])
    assert found is not None and len(found) == 1234


# -- type scope -----------------------------------------------------------------------------------


TYPES = (
    P
    + """
    :Dog rdfs:subClassOf :Mammal . :Mammal rdfs:subClassOf :Animal . :Animal rdfs:subClassOf :Mammal .
    :rex a :Dog . :tom a :Mammal . :ant a :Animal . :rock a :Stone .
    """
)


def test_asserted_types_only_without_inference(kb: KnowledgeBase) -> None:
    kb.knot(TYPES)
    assert typed(kb, EX + "Mammal", infer=False) == names("tom", ns=EX)
    assert typed(kb, EX + "Unknown", infer=False) == set()


def test_inference_admits_transitive_subclasses_and_survives_a_cycle(kb: KnowledgeBase) -> None:
    kb.knot(TYPES)
    assert typed(kb, EX + "Animal", infer=True) == names("rex", "tom", "ant", ns=EX)
    assert typed(kb, EX + "Dog", infer=True) == names("rex", ns=EX)
    assert typed(kb, EX + "Stone", infer=True) == names("rock", ns=EX)


def test_types_are_read_at_valid_at(kb: KnowledgeBase) -> None:
    kb.knot(P + ":rex a :Dog . :Dog rdfs:subClassOf :Animal .", valid_from="2020-01-01T00:00:00Z")
    kb.retract(
        f"{EX}rex", "http://www.w3.org/1999/02/22-rdf-syntax-ns#type", timestamp="2022-01-01T00:00:00Z"
    )
    assert typed(kb, EX + "Animal", infer=True) == set()
    assert typed(kb, EX + "Animal", infer=True, valid_at="2021-01-01T00:00:00Z") == names("rex", ns=EX)
    assert typed(kb, EX + "Dog", infer=False, valid_at="2019-01-01T00:00:00Z") == set()


def test_intersect() -> None:
    assert intersect(None, None) is None
    assert intersect({1, 2}, None) == {1, 2}
    assert intersect({1, 2}, {2, 3}) == {2}
