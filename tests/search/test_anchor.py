"""Anchored search machinery (tools-search §5.1.8, rules 15 and 16 of §5.1.12) on real stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import quipu
from quipu.api import KnowledgeBase
from quipu.errors import InvalidField
from quipu.search.anchor import (
    AnchorParams,
    Neighbourhood,
    anchor_block,
    merge_candidates,
    parse_anchor_params,
    pool_sizes,
    rerank,
    resolve_anchor,
    walk,
)
from tests.backends import store_location

EX = "http://ex.org/"
PREFIXES = {"ex": EX, "owl": "http://www.w3.org/2002/07/owl#"}
P = (
    f"@prefix : <{EX}> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> . "
    "@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix prov: <http://www.w3.org/ns/prov#> . "
    "@prefix q: <https://quipu.dev/ontology/> .\n"
)
T1, T2 = "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"
BETWEEN = "2026-01-15T00:00:00Z"

# The module graph: a chain a -knows-> b -knows-> c -knows-> d -knows-> e -knows-> f, with c's
# alias c2 (owl:sameAs, both ways of writing it) leading on to x; z points at a; excluded
# predicates and a worksWith branch hang off a. Labels for resolution live beside it.
GRAPH = (
    P
    + """
:a rdfs:label "Alpha" ; :knows :b ; a :Thing ; q:distinctFrom :q ; prov:wasGeneratedBy :ep ;
   :worksWith :w ; :mentionsText "not an edge" .
:b :knows :c .
:c :knows :d ; owl:sameAs :c2 .
:c2 :knows :x .
:d :knows :e .
:e :knows :f .
:z :knows :a .
:w owl:sameAs :w2 .
:w2 :knows :w3 .
:ep :about :epTarget .
:tw1 rdfs:label "Twin" .
:tw2 rdfs:label "Twin" .
:tagged rdfs:label "Tagged"@en .
"""
    + "".join(f':crowd{i} rdfs:label "Crowd" .\n' for i in range(7))
)


def expand(text: str) -> str | None:
    prefix, sep, local = text.partition(":")
    return PREFIXES[prefix] + local if sep and prefix in PREFIXES else None


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    with quipu.open(store_location(tmp_path_factory.mktemp("anchor"), "anchor.db")) as store:
        store.knot(GRAPH, "turtle")
        yield store


def ids(kb: KnowledgeBase, *names: str) -> dict[str, int]:
    with kb.db.read() as conn:
        found = kb.db.terms.lookup(conn, [EX + n for n in names])
    return {iri.removeprefix(EX): tid for iri, tid in found.items()}


def resolve(kb: KnowledgeBase, text: str, valid_at: str | None = None) -> int:
    with kb.db.read() as conn:
        return resolve_anchor(kb.db, conn, text, expand_curie=expand, valid_at=valid_at)


def neighbourhood(
    kb: KnowledgeBase, anchor: str = "a", valid_at: str | None = None, **fields: Any
) -> Neighbourhood:
    budget = fields.pop("budget", 5000)
    params = parse_anchor_params({"anchor": EX + anchor, **fields}, max_limit=1000)
    with kb.db.read() as conn:
        tid = resolve_anchor(kb.db, conn, params.anchor, expand_curie=expand, valid_at=valid_at)
        return walk(kb.db, conn, tid, params, valid_at, expand_curie=expand, budget=budget)


def hops(kb: KnowledgeBase, nb: Neighbourhood) -> dict[str, int]:
    with kb.db.read() as conn:
        names = kb.db.terms.iris(conn, nb.hops)
    return {names[n].removeprefix(EX): h for n, h in nb.hops.items()}


# -- parameters ------------------------------------------------------------------------------


@pytest.mark.backend_independent
def test_defaults() -> None:
    assert parse_anchor_params({"anchor": "ex:a"}, max_limit=1000) == AnchorParams(
        "ex:a", max_hops=3, mode="decay", decay=0.5, via=None, direction="both", explain=False
    )
    full = parse_anchor_params(
        {
            "anchor": "Alpha",
            "max_hops": 0,
            "anchor_mode": "filter",
            "decay": 1,
            "via": ["ex:knows"],
            "direction": "in",
            "explain": True,
            "limit": 1000,
        },
        max_limit=1000,
    )
    assert full == AnchorParams("Alpha", 0, "filter", 1.0, ("ex:knows",), "in", True)


@pytest.mark.backend_independent
def test_rule15_max_hops_is_capped_at_four() -> None:
    params = parse_anchor_params({"anchor": "a", "max_hops": 9}, max_limit=1000)
    assert params.max_hops == 4
    nb = Neighbourhood(anchor_id=1, anchor_iri=EX + "a", hops={1: 0}, parents={})
    assert anchor_block(nb, params)["max_hops"] == 4
    assert parse_anchor_params({"anchor": "a", "max_hops": 10**30}, max_limit=1000).max_hops == 4


@pytest.mark.backend_independent
@pytest.mark.parametrize(
    ("fields", "field", "phrase"),
    [
        ({}, "anchor", "anchor must be a non-empty string"),
        ({"anchor": ""}, "anchor", "non-empty string"),
        ({"anchor": "   "}, "anchor", "non-empty string"),
        ({"anchor": 7}, "anchor", "non-empty string"),
        ({"max_hops": -1}, "max_hops", "non-negative integer"),
        ({"max_hops": 2.0}, "max_hops", "non-negative integer"),
        ({"max_hops": True}, "max_hops", "non-negative integer"),
        ({"max_hops": "2"}, "max_hops", "non-negative integer"),
        ({"anchor_mode": "rank"}, "anchor_mode", 'not "rank"'),
        ({"anchor_mode": None}, "anchor_mode", "sort, decay or filter"),
        ({"decay": 0}, "decay", "(0, 1]"),
        ({"decay": 1.5}, "decay", "(0, 1]"),
        ({"decay": -0.5}, "decay", "(0, 1]"),
        ({"decay": True}, "decay", "(0, 1]"),
        ({"decay": "0.5"}, "decay", "(0, 1]"),
        ({"decay": float("nan")}, "decay", "(0, 1]"),
        ({"decay": float("inf")}, "decay", "(0, 1]"),
        ({"decay": 10**400}, "decay", "(0, 1]"),
        ({"via": "ex:knows"}, "via", "array of non-empty"),
        ({"via": ["ex:knows", ""]}, "via", "array of non-empty"),
        ({"via": [3]}, "via", "array of non-empty"),
        ({"direction": "up"}, "direction", 'out, in or both, not "up"'),
        ({"explain": "yes"}, "explain", "boolean"),
        ({"limit": 1001}, "limit", "must not exceed 1000"),
    ],
)
def test_parameter_refusals_name_the_field(fields: dict[str, Any], field: str, phrase: str) -> None:
    body = {"anchor": "ex:a", **fields} if field != "anchor" else fields
    with pytest.raises(InvalidField) as caught:
        parse_anchor_params(body, max_limit=5000)
    assert caught.value.field == field and caught.value.status == 400
    assert phrase in caught.value.message


@pytest.mark.backend_independent
def test_limit_is_judged_after_the_max_limit_clamp() -> None:
    # A limit the server clamps to max_limit (1000 or less) is not refused.
    assert parse_anchor_params({"anchor": "a", "limit": 5000}, max_limit=1000).anchor == "a"
    assert parse_anchor_params({"anchor": "a", "via": []}, max_limit=1000).via == ()


# -- anchor resolution -----------------------------------------------------------------------


def test_resolution_by_iri_curie_and_label(graph: KnowledgeBase) -> None:
    a = ids(graph, "a")["a"]
    assert resolve(graph, EX + "a") == a
    assert resolve(graph, "ex:a") == a
    assert resolve(graph, "Alpha") == a
    # an IRI only pointed at (an object, never a subject) is still a node to anchor on
    assert resolve(graph, "ex:x") == ids(graph, "x")["x"]


def test_resolution_refuses_an_unknown_text(graph: KnowledgeBase) -> None:
    for text in ("Nobody", EX + "nobody", "ex:nobody", "alpha", "Tagged", EX + "knows"):
        with pytest.raises(InvalidField) as caught:
            resolve(graph, text)
        assert caught.value.field == "anchor"
        assert "is not an IRI, CURIE or exact label of any entity" in caught.value.message


def test_resolution_refuses_an_ambiguous_label(graph: KnowledgeBase) -> None:
    with pytest.raises(InvalidField) as caught:
        resolve(graph, "Twin")
    message = caught.value.message
    assert "ambiguous" in message and "2 entities" in message and "pass one IRI" in message
    assert EX + "tw1" in message and EX + "tw2" in message
    with pytest.raises(InvalidField) as caught:
        resolve(graph, "Crowd")
    message = caught.value.message
    assert "6 or more entities" in message
    crowd = sorted(ids(graph, *(f"crowd{i}" for i in range(7))).items(), key=lambda item: item[1])
    listed = [name for name, _tid in crowd if EX + name + "," in message or EX + name + ")" in message]
    assert listed == [name for name, _tid in crowd[:5]]  # the first five by term id


def test_resolution_at_valid_at(kb: KnowledgeBase) -> None:
    kb.knot(P + ':old rdfs:label "Gone" ; :knows :b .', valid_from=T1, timestamp=T1)
    kb.retract(EX + "old", timestamp=T2)
    assert resolve(kb, "Gone", valid_at=BETWEEN) == ids(kb, "old")["old"]
    assert resolve(kb, EX + "old", valid_at=BETWEEN) == ids(kb, "old")["old"]
    for text in ("Gone", EX + "old"):
        with pytest.raises(InvalidField, match="is not an IRI"):
            resolve(kb, text)
        with pytest.raises(InvalidField, match="is not an IRI"):
            resolve(kb, text, valid_at=T2)  # valid_to is exclusive


# -- the walk --------------------------------------------------------------------------------


def test_hop_counts_on_a_chain_with_aliases(graph: KnowledgeBase) -> None:
    nb = neighbourhood(graph)
    # rule 16: c2 (owl:sameAs of c) reports c's hop; x, behind the alias, is one further
    assert hops(graph, nb) == {
        **{"a": 0, "b": 1, "z": 1, "w": 1, "w2": 1, "w3": 2},
        **{"c": 2, "c2": 2, "d": 3, "x": 3},
    }
    assert nb.reached == 10 and not nb.truncated and nb.hubs_not_expanded == 0


def test_default_exclusions_are_not_followed(graph: KnowledgeBase) -> None:
    reached = hops(graph, neighbourhood(graph, max_hops=4))
    # rdf:type, quipu:distinctFrom [recommended] and prov:wasGeneratedBy lead nowhere
    assert not {"Thing", "q", "ep", "epTarget"} & set(reached)
    assert reached["e"] == 4 and "f" not in reached


def test_rule15_a_max_hops_of_nine_walks_four(graph: KnowledgeBase) -> None:
    nb = neighbourhood(graph, max_hops=9)
    assert hops(graph, nb)["e"] == 4 and "f" not in hops(graph, nb)
    assert (
        anchor_block(nb, parse_anchor_params({"anchor": "a", "max_hops": 9}, max_limit=1000))["max_hops"] == 4
    )


def test_max_hops_zero_reaches_only_the_anchor_and_its_aliases(graph: KnowledgeBase) -> None:
    assert hops(graph, neighbourhood(graph, max_hops=0)) == {"a": 0}
    assert hops(graph, neighbourhood(graph, "c", max_hops=0)) == {"c": 0, "c2": 0}
    # the alias written the other way round (c2 is the object) is found from c2 as well
    assert hops(graph, neighbourhood(graph, "c2", max_hops=0)) == {"c2": 0, "c": 0}


def test_direction(graph: KnowledgeBase) -> None:
    out = hops(graph, neighbourhood(graph, max_hops=2, direction="out"))
    assert "z" not in out and out["b"] == 1 and out["c"] == 2
    incoming = hops(graph, neighbourhood(graph, max_hops=2, direction="in"))
    assert incoming == {"a": 0, "z": 1}
    # owl:sameAs is followed both ways whatever the direction ("c owl:sameAs c2" is incoming at
    # c2): an alias is the same node, so its edges in the asked direction count as the node's
    assert hops(graph, neighbourhood(graph, "c2", max_hops=1, direction="out")) == {
        "c2": 0,
        "c": 0,
        "x": 1,
        "d": 1,
    }
    assert hops(graph, neighbourhood(graph, "c2", max_hops=1, direction="in")) == {"c2": 0, "c": 0, "b": 1}


def test_via_replaces_the_exclusions(graph: KnowledgeBase) -> None:
    # only worksWith (a CURIE) and owl:sameAs are followed
    assert hops(graph, neighbourhood(graph, via=["ex:worksWith"])) == {"a": 0, "w": 1, "w2": 1}
    # an excluded predicate named in via is followed
    reached = hops(
        graph, neighbourhood(graph, via=[EX + "knows", "http://www.w3.org/ns/prov#wasGeneratedBy"])
    )
    assert reached["ep"] == 1 and reached["b"] == 1 and "epTarget" not in reached
    assert hops(graph, neighbourhood(graph, via=[])) == {"a": 0}


def test_paths_with_explain(graph: KnowledgeBase) -> None:
    nb = neighbourhood(graph, explain=True)
    n = ids(graph, "a", "x", "z", "c2", "w2")
    knows, same = EX + "knows", "http://www.w3.org/2002/07/owl#sameAs"
    assert nb.path(n["a"]) == EX + "a"
    assert nb.path(n["z"]) == f"{EX}a <-[{knows}]- {EX}z"
    assert (
        nb.path(n["x"])
        == f"{EX}a -[{knows}]-> {EX}b -[{knows}]-> {EX}c -[{same}]-> {EX}c2 -[{knows}]-> {EX}x"
    )
    assert nb.path(n["w2"]) == f"{EX}a -[{EX}worksWith]-> {EX}w -[{same}]-> {EX}w2"
    assert nb.path(ids(graph, "f")["f"]) is None


def test_walk_at_valid_at(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :knows :b . :b :knows :c .", valid_from=T1, timestamp=T1)
    kb.knot(P + ":a :knows :late .", valid_from=T2, timestamp=T2)
    kb.retract(EX + "b", EX + "knows", {"iri": EX + "c"}, timestamp=T2)
    assert hops(kb, neighbourhood(kb, valid_at=BETWEEN)) == {"a": 0, "b": 1, "c": 2}
    assert hops(kb, neighbourhood(kb)) == {"a": 0, "b": 1, "late": 1}
    assert hops(kb, neighbourhood(kb, valid_at=T2)) == {"a": 0, "b": 1, "late": 1}


def test_a_hub_is_reached_but_not_expanded(kb: KnowledgeBase) -> None:
    leaves = "".join(f":hub :has :leaf{i} .\n" for i in range(150))
    kb.knot(P + ":root :knows :hub . :hub owl:sameAs :alias . :alias :knows :beyond .\n" + leaves)
    reached = hops(kb, neighbourhood(kb, "root"))
    nb = neighbourhood(kb, "root")
    # hub has 152 edges (150 leaves, root, alias): reached, its aliases followed, leaves not
    assert reached == {"root": 0, "hub": 1, "alias": 1, "beyond": 2}
    assert nb.hubs_not_expanded == 1 and not nb.truncated
    # the anchor itself is always expanded, hub or not
    from_hub = hops(kb, neighbourhood(kb, "hub", max_hops=1))
    assert len(from_hub) == 154 and from_hub["leaf149"] == 1 and from_hub["beyond"] == 1


def test_a_node_with_150_edges_is_expanded(kb: KnowledgeBase) -> None:
    leaves = "".join(f":hub :has :leaf{i} .\n" for i in range(149))
    kb.knot(P + ":root :knows :hub .\n" + leaves)
    nb = neighbourhood(kb, "root")
    assert nb.reached == 151 and nb.hubs_not_expanded == 0


def test_node_budget_truncates_and_names_the_hop(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :knows :b1 , :b2 . :b1 :knows :c1 , :c2 , :c3 . :b2 :knows :c4 .")
    whole = neighbourhood(kb)
    assert whole.reached == 7 and not whole.truncated
    nb = neighbourhood(kb, budget=5)
    assert nb.reached == 5 and nb.truncated and nb.truncated_at_hop == 2
    reached = hops(kb, nb)
    assert {"a", "b1", "b2"} < set(reached) and sorted(reached.values()) == [0, 1, 1, 2, 2]
    assert neighbourhood(kb, budget=5).hops == nb.hops


def test_the_anchor_edge_cap_marks_truncation_at_hop_one(kb: KnowledgeBase) -> None:
    kb.knot(P + ":a :knows :b1 , :b2 , :b3 , :b4 . :m owl:sameAs :s1 , :s2 , :s3 , :s4 .")
    nb = neighbourhood(kb, budget=3)  # the anchor reads at most budget + 1 = 4 edges
    assert nb.truncated and nb.truncated_at_hop == 1 and nb.reached == 3
    block = anchor_block(nb, parse_anchor_params({"anchor": "a"}, max_limit=1000))
    assert block["truncated"] is True and block["truncated_at_hop"] == 1
    # at max_hops 0 the anchor reads only its aliases: four of them hit the cap at hop 0
    assert not neighbourhood(kb, budget=3, max_hops=0).truncated
    assert neighbourhood(kb, "m", budget=3, max_hops=0).truncated_at_hop == 0
    assert not neighbourhood(kb, budget=5).truncated


# -- candidates and re-ranking ---------------------------------------------------------------


def _row(entity_id: int, score: float, name: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"entity": EX + (name or f"e{entity_id}"), "entity_id": entity_id, "score": score, **extra}


def _nb(hop_of: dict[int, int]) -> Neighbourhood:
    return Neighbourhood(anchor_id=1, anchor_iri=EX + "e1", hops=hop_of, parents={})


def _params(**fields: Any) -> AnchorParams:
    return parse_anchor_params({"anchor": "e1", **fields}, max_limit=1000)


CANDIDATES = [_row(2, 0.9), _row(3, 0.8), _row(4, 0.6), _row(5, 0.95), _row(6, 0.8), _row(1, 0.3)]
HOPS = {1: 0, 2: 2, 3: 1, 4: 1, 6: 1}  # 5 is unreachable


@pytest.mark.backend_independent
def test_rule16_decay_keeps_the_unreachable_one_hop_beyond() -> None:
    rows = rerank(CANDIDATES, _nb(HOPS), _params(max_hops=2), 10)
    by_id = {r["entity_id"]: r for r in rows}
    assert by_id[5]["hops"] is None and by_id[5]["score"] == pytest.approx(0.95 * 0.5**3)
    assert by_id[5]["text_score"] == 0.95
    assert by_id[2]["score"] == pytest.approx(0.9 * 0.25) and by_id[1]["score"] == 0.3
    # 3 and 6 tie at 0.4: the lower term id first
    assert [r["entity_id"] for r in rows] == [3, 6, 1, 4, 2, 5]  # 3, 6 tie (0.4), then 1, 4 (0.3)
    # with a gentle decay a strong match two hops out beats a weaker one at one hop
    rows = rerank(CANDIDATES, _nb(HOPS), _params(decay=0.9), 10)
    assert rows[0]["entity_id"] == 2 and rows[0]["score"] == pytest.approx(0.9 * 0.9**2)
    assert {r["entity_id"]: r["score"] for r in rows}[5] == pytest.approx(0.95 * 0.9**4)


@pytest.mark.backend_independent
def test_rule16_filter_removes_the_unreachable() -> None:
    rows = rerank(CANDIDATES, _nb(HOPS), _params(anchor_mode="filter"), 10)
    assert [r["entity_id"] for r in rows] == [2, 3, 6, 4, 1]
    assert all(r["score"] == r["text_score"] for r in rows)


@pytest.mark.backend_independent
def test_sort_mode_orders_by_hops_then_text_score() -> None:
    rows = rerank(CANDIDATES, _nb(HOPS), _params(anchor_mode="sort"), 10)
    assert [(r["entity_id"], r["hops"]) for r in rows] == [(1, 0), (3, 1), (6, 1), (4, 1), (2, 2), (5, None)]
    assert [r["score"] for r in rows] == [0.3, 0.8, 0.8, 0.6, 0.9, 0.95]


@pytest.mark.backend_independent
def test_rerank_takes_limit_copies_rows_and_keeps_their_keys() -> None:
    original = [_row(2, 0.9, ranking_reason="semantic", text="x")]
    rows = rerank(original, _nb(HOPS), _params(), 1)
    assert rows == [{**original[0], "text_score": 0.9, "score": pytest.approx(0.225), "hops": 2}]
    assert original[0]["score"] == 0.9 and "path" not in rows[0]
    assert len(rerank(CANDIDATES, _nb(HOPS), _params(), 2)) == 2
    # a custom tie order (e.g. by IRI) replaces the term id
    rows = rerank(
        [_row(6, 0.5, "a6"), _row(3, 0.5, "z3")],
        _nb(HOPS),
        _params(),
        2,
        term_order=lambda r: -r["entity_id"],
    )
    assert [r["entity_id"] for r in rows] == [6, 3]


def test_rerank_on_a_real_walk_with_paths(graph: KnowledgeBase) -> None:
    nb = neighbourhood(graph, explain=True)
    n = ids(graph, "x", "f", "b")
    rows = rerank(
        [_row(n["x"], 0.9, "x"), _row(n["f"], 0.99, "f"), _row(n["b"], 0.5, "b")],
        nb,
        _params(explain=True),
        3,
    )
    assert [(r["entity"], r["hops"]) for r in rows] == [(EX + "b", 1), (EX + "x", 3), (EX + "f", None)]
    assert rows[0]["path"] == f"{EX}a -[{EX}knows]-> {EX}b"
    assert rows[1]["path"].endswith(f"-[{EX}knows]-> {EX}x") and rows[2]["path"] is None
    assert rows[2]["score"] == pytest.approx(0.99 * 0.5**4)


@pytest.mark.backend_independent
def test_pool_sizes() -> None:
    assert pool_sizes(10, 10, 1000) == (200, 100, 100)
    assert pool_sizes(25, 10, 1000) == (250, 125, 125)
    assert pool_sizes(150, 10, 1000) == (1000, 500, 500)
    assert pool_sizes(10, 10, 5000) == (200, 100, 100)
    assert pool_sizes(1, 1, 1) == (1, 1, 1)
    assert pool_sizes(3, 10, 3) == (3, 2, 1)
    assert pool_sizes(5, 10, 201) == (200, 100, 100)


@pytest.mark.backend_independent
def test_merge_candidates() -> None:
    global_rows = [_row(2, 0.9, "b", source="global"), _row(3, 0.7, "c")]
    local_rows = [_row(2, 0.9, "b", source="neighbourhood"), _row(4, 0.7, "a"), _row(5, 0.2, "e")]
    merged = merge_candidates(global_rows, local_rows)
    assert [r["entity"] for r in merged] == [EX + "b", EX + "a", EX + "c", EX + "e"]  # ties by IRI
    assert merged[0]["source"] == "global"  # the global copy wins
    # one-row pool: the neighbourhood's best is the candidate
    assert merge_candidates([_row(3, 0.99, "c")], [_row(4, 0.1, "d")], pool=1) == [_row(4, 0.1, "d")]
    assert merge_candidates([_row(3, 0.99, "c")], [], pool=1) == [_row(3, 0.99, "c")]


def test_anchor_block(graph: KnowledgeBase) -> None:
    nb = neighbourhood(graph, max_hops=2, anchor_mode="sort", decay=0.25)
    block = anchor_block(nb, _params(max_hops=2, anchor_mode="sort", decay=0.25))
    assert block == {
        "iri": EX + "a",
        "mode": "sort",
        "max_hops": 2,
        "decay": 0.25,
        "reached": nb.reached,
        "truncated": False,
        "truncated_at_hop": None,
        "hubs_not_expanded": 0,
        "candidate_sources": ["global", "neighbourhood"],
    }
