"""CURIE compaction rules of tools-core §0.6 (``quipu.rdfio.curie.PrefixMap``)."""

from __future__ import annotations

import quipu
from quipu.rdfio.curie import EMPTY, PrefixMap
from quipu.shacl.registry import loaded_prefixes

EX = "http://ex.org/"


def test_prefix_bound_to_two_namespaces_is_dropped() -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX, "a": "http://a/"}, {"ex": "http://other/"}])
    assert prefixes.namespaces == {"a": "http://a/"}
    assert prefixes.compact(f"{EX}x") == f"{EX}x"


def test_same_namespace_under_two_prefixes_keeps_the_smallest() -> None:
    prefixes = PrefixMap.from_declarations([{"zed": EX}, {"abc": EX}])
    assert prefixes.namespaces == {"abc": EX}
    assert prefixes.compact(f"{EX}thing") == "abc:thing"


def test_the_empty_prefix_is_never_used() -> None:
    prefixes = PrefixMap.from_declarations([{"": EX}])
    assert not prefixes
    assert prefixes.compact(f"{EX}thing") == f"{EX}thing"


def test_longest_matching_namespace_wins() -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX, "exs": f"{EX}sub/"}])
    assert prefixes.compact(f"{EX}sub/thing") == "exs:thing"
    assert prefixes.compact(f"{EX}thing") == "ex:thing"


def test_only_safe_local_names_compact() -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX}])
    assert prefixes.compact(f"{EX}a.b-c_1") == "ex:a.b-c_1"
    assert prefixes.compact(f"{EX}9lives") == "ex:9lives"
    for unsafe in ("ends.", "", "has space", "a/b", "-dash", "q?x=1", "frag#x"):
        assert prefixes.compact(EX + unsafe) == EX + unsafe, unsafe


def test_used_gives_the_context_of_compacted_names() -> None:
    prefixes = PrefixMap.from_declarations([{"ex": EX, "b": "http://b/"}])
    assert prefixes.used(["ex:a", "ex:b", "http://full/iri", "zz:unknown"]) == {"ex": EX}


def test_nothing_compacts_before_shape_sets_load() -> None:
    with quipu.open(":memory:") as kb:
        assert loaded_prefixes(kb.db) is EMPTY and not EMPTY


def test_loaded_prefixes_follow_the_open_shape_sets() -> None:
    shapes = "@prefix ex: <http://ex.org/> . @prefix sh: <http://www.w3.org/ns/shacl#> .\n"
    shapes += "ex:S a sh:NodeShape ; sh:targetClass ex:T ."
    with quipu.open(":memory:") as kb:
        kb.load_shapes("one", shapes)
        kb.load_shapes(
            "two", "@prefix ex: <http://other/> . @prefix b: <http://b/> . <http://b/x> a <http://b/y> ."
        )
        # ex is bound two ways (dropped); sh and b survive
        assert loaded_prefixes(kb.db).namespaces == {"sh": "http://www.w3.org/ns/shacl#", "b": "http://b/"}
        kb.remove_shapes("two")
        assert loaded_prefixes(kb.db).compact(EX + "a") == "ex:a"
