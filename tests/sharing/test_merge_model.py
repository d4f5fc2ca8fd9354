"""The three-way merge model (tools-graphs-governance §4.4) as a pure function: slots, sh:maxCount
bounds from the incoming shapes, the two conflict kinds, held base values and unbounded unions."""

from __future__ import annotations

import pytest

from quipu.errors import BadRequest
from quipu.sharing.merge_model import (
    DELETE_REPLACE,
    MAX_COUNT_EXCEEDED,
    Triple,
    combine,
    max_counts,
    merge,
    parse_lines,
)
from quipu.sharing.merge_report import labels, literal_text, proposal, rule

pytestmark = pytest.mark.backend_independent

S = "<http://ex.org/s>"
ONE = "http://ex.org/one"
TWO = "http://ex.org/two"
MANY = "http://ex.org/many"
BOUNDS = {ONE: 1, TWO: 2}


def g(*pairs: tuple[str, str], subject: str = S) -> set[Triple]:
    return {(subject, p, o) for p, o in pairs}


def values(triples: set[Triple], predicate: str, subject: str = S) -> set[str]:
    return {o for s, p, o in triples if (s, p) == (subject, predicate)}


def test_divergent_values_on_a_bound_one_slot_conflict_and_hold_base() -> None:
    result = merge(g((ONE, '"base"')), g((ONE, '"ours"')), g((ONE, '"theirs"')), BOUNDS)
    (conflict,) = result.conflicts
    assert conflict.kind == MAX_COUNT_EXCEEDED and conflict.max_count == 1
    assert (conflict.base, conflict.ours, conflict.theirs) == (('"base"',), ('"ours"',), ('"theirs"',))
    assert values(result.merged, ONE) == {'"base"'}  # held at base until decided


def test_too_many_values_under_a_larger_bound() -> None:
    result = merge(g((TWO, '"a"')), g((TWO, '"a"'), (TWO, '"b"')), g((TWO, '"a"'), (TWO, '"c"')), BOUNDS)
    (conflict,) = result.conflicts
    assert conflict.kind == MAX_COUNT_EXCEEDED and conflict.max_count == 2
    assert values(result.merged, TWO) == {'"a"'}


def test_within_the_bound_additions_merge_cleanly() -> None:
    result = merge(set(), g((TWO, '"b"')), g((TWO, '"c"')), BOUNDS)
    assert result.conflicts == []
    assert values(result.merged, TWO) == {'"b"', '"c"'}


@pytest.mark.parametrize("deleter", ["ours", "theirs"])
def test_delete_against_replace_is_a_conflict_on_bound_one(deleter: str) -> None:
    base, deleted, replaced = g((ONE, '"base"')), set[Triple](), g((ONE, '"new"'))
    ours, theirs = (deleted, replaced) if deleter == "ours" else (replaced, deleted)
    result = merge(base, ours, theirs, BOUNDS)
    (conflict,) = result.conflicts
    assert conflict.kind == DELETE_REPLACE
    assert values(result.merged, ONE) == {'"base"'}
    assert f"{deleter} deleted the value" in rule(conflict, {})


def test_one_sided_changes_never_conflict() -> None:
    base = g((ONE, '"base"'))
    assert merge(base, g((ONE, '"ours"')), base, BOUNDS).conflicts == []  # only ours changed
    deleted = merge(base, set(), base, BOUNDS)  # ours deleted, theirs kept
    assert deleted.conflicts == [] and values(deleted.merged, ONE) == set()
    both = merge(base, set(), set(), BOUNDS)
    assert both.conflicts == [] and values(both.merged, ONE) == set()


def test_unbounded_slots_union_and_drop_what_either_side_removed() -> None:
    base = g((MANY, '"kept"'), (MANY, '"dropped-by-ours"'), (MANY, '"dropped-by-theirs"'))
    ours = g((MANY, '"kept"'), (MANY, '"dropped-by-theirs"'), (MANY, '"ours"'))
    theirs = g((MANY, '"kept"'), (MANY, '"dropped-by-ours"'), (MANY, '"theirs"'))
    result = merge(base, ours, theirs, BOUNDS)
    assert result.conflicts == []
    assert values(result.merged, MANY) == {'"kept"', '"ours"', '"theirs"'}


def test_conflicts_come_in_slot_order_and_other_slots_merge() -> None:
    other = "<http://ex.org/a>"
    base = g((ONE, '"b"')) | g((ONE, '"b"'), subject=other)
    ours = g((ONE, '"o"'), (MANY, '"x"')) | g((ONE, '"o"'), subject=other)
    theirs = g((ONE, '"t"')) | g((ONE, '"t"'), subject=other)
    result = merge(base, ours, theirs, BOUNDS)
    assert [c.subject for c in result.conflicts] == [other, S]
    assert values(result.merged, MANY) == {'"x"'}


def test_combine_is_the_slot_rule() -> None:
    assert combine({"a", "b"}, {"a", "c"}, {"b", "d"}) == {"c", "d"}


SHAPES = """
@prefix sh: <http://www.w3.org/ns/shacl#> .
@prefix ex: <http://ex.org/> .
ex:S a sh:NodeShape ; sh:property [ sh:path ex:one ; sh:maxCount 1 ] , [ sh:path ex:two ; sh:maxCount 3 ] .
ex:T a sh:NodeShape ; sh:property [ sh:path ex:two ; sh:maxCount 2 ] , [ sh:path ex:many ; sh:minCount 1 ] .
ex:U a sh:NodeShape ; sh:property [ sh:path ex:odd ; sh:maxCount "x" ] , [ sh:path [ sh:inversePath ex:inv ] ; sh:maxCount 1 ] .
"""


def test_bounds_come_from_sh_path_and_integer_sh_max_count() -> None:
    assert max_counts(SHAPES) == {ONE: 1, TWO: 2}  # the tighter of two bounds holds
    assert max_counts("") == {}
    with pytest.raises(BadRequest, match=r"shapes\.ttl does not parse"):
        max_counts("@prefix broken")


def test_canonical_lines_split_into_terms() -> None:
    text = f'{S} <{ONE}> "two words . and more" .\n_:c14n0 <{MANY}> "line\u2028sep"@en .\n'
    assert parse_lines(text, "t") == {
        (S, ONE, '"two words . and more"'),
        ("_:c14n0", MANY, '"line\u2028sep"@en'),
    }
    assert parse_lines("", "t") == set()
    for bad in (f"{S} <{ONE}>\n", f'"lit" <{ONE}> <x> .\n', f"{S} {ONE} <x> .\n"):
        with pytest.raises(BadRequest, match="not a canonical N-Triples triple"):
            parse_lines(bad, "t")


def test_labels_prefer_untagged_then_english_then_lexical() -> None:
    label = "http://www.w3.org/2000/01/rdf-schema#label"
    graphs = [
        {(f"<{ONE}>", label, '"eins"@de'), (f"<{ONE}>", label, '"one"@en')},
        {(f"<{TWO}>", label, '"zwei"@de'), (f"<{TWO}>", label, '"deux"@fr')},
        {(S, label, '"b \\"s\\""'), (S, label, '"a"@en'), (S, label, '"c"')},
    ]
    found = labels({ONE, TWO, "http://ex.org/s", MANY}, graphs)
    assert found == {ONE: "one", TWO: "deux", "http://ex.org/s": 'b "s"'}
    assert literal_text('"x\\u00e9\\n"^^<http://www.w3.org/2001/XMLSchema#string>') == ("x\u00e9\n", None)
    assert literal_text("<http://ex.org/x>") is None


def test_the_mechanical_proposal() -> None:
    base = g((ONE, '"base"'))
    changed_theirs = merge(base, base, g((ONE, '"t"'), (ONE, '"u"')), BOUNDS).conflicts[0]
    assert proposal(changed_theirs, [], {"created_at": "2026-01-01T00:00:00Z"})["choose"] == "theirs"
    both = merge(base, g((ONE, '"o"')), g((ONE, '"t"')), BOUNDS).conflicts[0]
    newer_ours = [{"valid_from": "2026-06-01T00:00:00Z"}, {"valid_from": "2025-01-01T00:00:00Z"}]
    theirs = {"created_at": "2026-03-01T00:00:00Z", "attested": True}
    out = proposal(both, newer_ours, theirs)
    assert out["choose"] == "ours"
    assert "attestation" in out["evidence"][0] and out["evidence"][-1].endswith("the operator decides")
    tie = proposal(both, [{"valid_from": "2026-03-01T00:00:00Z"}], theirs)
    assert tie["choose"] == "theirs"  # ties go to theirs
    deleted = merge(base, set(), g((ONE, '"t"')), BOUNDS).conflicts[0]
    assert proposal(deleted, [], theirs)["choose"] == "theirs"  # no local fact
    only_ours = merge(g((TWO, '"a"')), g((TWO, '"a"'), (TWO, '"b"'), (TWO, '"c"')), g((TWO, '"a"')), BOUNDS)
    assert proposal(only_ours.conflicts[0], [], theirs)["choose"] == "ours"
