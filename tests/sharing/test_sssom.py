"""The SSSOM mapping set and its TSV form (tools-graphs-governance §3.0), and the pure decide (§3.2).

No store: parse, serialise, ``set_version``, unordered pairs, ``decide`` and the check against the
SSSOM LinkML schema (``sssom-schema``).
"""

from __future__ import annotations

import pytest

from quipu.errors import BadRequest, InvalidField
from quipu.sharing import sssom
from quipu.sharing.sssom import MappingRow, MappingSet

pytestmark = pytest.mark.backend_independent

EX = "http://ex.org/"
SAME_AS = sssom.OWL_SAME_AS
HEADER = (
    "#curie_map:\n"
    '#  owl: "http://www.w3.org/2002/07/owl#"\n'
    '#  semapv: "https://w3id.org/semapv/vocab/"\n'
    '#  skos: "http://www.w3.org/2004/02/skos/core#"\n'
    '#mapping_set_id: "urn:quipu:align:mcp"\n'
    "subject_id\tsubject_label\tpredicate_id\tobject_id\tobject_label\tmapping_justification\t"
    "predicate_modifier\tconfidence\tauthor_id\n"
)
ROW_B = f"{EX}b\tBee\t{SAME_AS}\t{EX}y\tWhy\tsemapv:LexicalSimilarityThresholdMatching\t\t0.912\t\n"
ROW_A = f"{EX}a\tAy\t{SAME_AS}\t{EX}x\tax\tsemapv:LexicalMatching\t\t1.000\t\n"
CANONICAL = HEADER + ROW_A + ROW_B


def row(subject: str, obj: str, **fields: object) -> MappingRow:
    base: dict[str, object] = {"predicate_id": SAME_AS, "justification": "LexicalMatching"}
    return MappingRow(subject_id=EX + subject, object_id=EX + obj, **{**base, **fields})  # type: ignore[arg-type]


# -- serialise -----------------------------------------------------------------------------


def test_serialise_is_byte_exact_sorted_and_three_decimal() -> None:
    rows = (
        row("b", "y", subject_label="Bee", object_label="Why", justification="LexicalSimilarityThresholdMatching",
            confidence=0.91249),
        row("a", "x", subject_label="Ay", object_label="ax", confidence=1),
    )  # fmt: skip
    # Rows sorted by (subject_id, object_id, predicate_id); curie lines by prefix; every line ends in \n.
    assert sssom.serialise(MappingSet(sssom.DEFAULT_SET_ID, rows)) == CANONICAL


def test_extra_prefixes_are_sorted_among_the_base_ones() -> None:
    text = sssom.serialise(MappingSet("urn:x:set", (), {"ex": EX, "zz": "urn:zz:"}))
    prefixes = [line.split(":")[0].strip("# ") for line in text.splitlines()[1:6]]
    assert prefixes == ["ex", "owl", "semapv", "skos", "zz"]


def test_rows_with_the_same_key_serialise_the_same_in_any_order() -> None:
    one = row("a", "x", justification="LexicalMatching")
    two = row("a", "x", justification="CompositeMatching")
    first = sssom.serialise(MappingSet("urn:x:set", (one, two)))
    assert first == sssom.serialise(MappingSet("urn:x:set", (two, one)))


@pytest.mark.parametrize("bad", ["tab\there", "new\nline", "carriage\rreturn"])
def test_a_tab_or_newline_in_a_cell_is_refused_not_altered(bad: str) -> None:
    with pytest.raises(BadRequest, match="cannot represent a tab or newline in subject_label"):
        sssom.serialise(MappingSet("urn:x:set", (row("a", "x", subject_label=bad),)))


def test_negative_zero_confidence_is_written_as_zero() -> None:
    text = sssom.serialise(MappingSet("urn:x:set", (row("a", "x", confidence=-0.0),)))
    assert text.splitlines()[-1].split("\t")[7] == "0.000"


# -- parse and the version -------------------------------------------------------------------


def test_parse_then_serialise_is_a_fixpoint() -> None:
    parsed = sssom.parse(CANONICAL)
    assert sssom.serialise(parsed) == CANONICAL
    a, b = parsed.mappings
    assert (a.subject_label, a.confidence, a.author_id, a.negated) == ("Ay", 1.0, None, False)
    assert b.justification == "LexicalSimilarityThresholdMatching"


def test_set_version_is_the_sha256_of_the_serialisation() -> None:
    import hashlib

    version = sssom.set_version(sssom.parse(CANONICAL))
    assert version == "sha256:" + hashlib.sha256(CANONICAL.encode()).hexdigest()


def test_whitespace_and_column_order_do_not_change_the_version() -> None:
    expected = sssom.set_version(sssom.parse(CANONICAL))
    lines = CANONICAL.splitlines()
    order = [7, 3, 0, 8, 5, 1, 6, 2, 4]  # columns are read by name, wherever they stand
    table = [line.split("\t") for line in lines[5:]]
    reordered = "\n".join(lines[:5] + ["\t".join(cells[i] for i in order) for cells in table]) + "\n"
    assert reordered != CANONICAL
    assert sssom.set_version(sssom.parse(reordered)) == expected
    spaced = CANONICAL.replace("\tAy\t", "\t  Ay \t").replace("\n", "\r\n") + "\n\n"
    spaced = spaced.replace(
        '#mapping_set_id: "urn:quipu:align:mcp"', "#mapping_set_id:   urn:quipu:align:mcp  "
    )
    assert sssom.set_version(sssom.parse(spaced)) == expected


def test_any_content_change_changes_the_version() -> None:
    expected = sssom.set_version(sssom.parse(CANONICAL))
    for edited in (
        CANONICAL.replace("\tAy\t", "\tAye\t"),
        CANONICAL.replace("1.000", "0.999"),
        CANONICAL.replace(f"{ROW_A[:-2]}\t", f"{ROW_A[:-2]}\tops"),
        CANONICAL.replace("urn:quipu:align:mcp", "urn:quipu:align:other"),
    ):
        assert sssom.set_version(sssom.parse(edited)) != expected, edited


def test_unknown_columns_are_ignored() -> None:
    widened = CANONICAL.replace("author_id\n", "author_id\tcomment\n").replace("\t\n", "\t\ta note\n")
    assert sssom.serialise(sssom.parse(widened)) == CANONICAL


def test_semapv_terms_parse_as_curie_or_full_iri() -> None:
    full = CANONICAL.replace("semapv:LexicalMatching", sssom.SEMAPV_NS + "LexicalMatching")
    assert sssom.serialise(sssom.parse(full)) == CANONICAL


@pytest.mark.parametrize(
    "edit, phrase",
    [
        (("semapv:LexicalMatching", "semapv:GutFeeling"), "unknown mapping_justification"),
        (("semapv:LexicalMatching", "LexicalMatching"), "unknown mapping_justification"),
        (("1.000\t", "1.000\tops"), None),  # a control: an author is fine
        (("\t\t1.000", "\tNOT\t1.000"), "only 'Not'"),
        (("\t\t1.000", "\tnot\t1.000"), "only 'Not'"),
        (("1.000", "high"), "confidence 'high'"),
        (("1.000", "1.5"), "from 0 to 1"),
        (("\tpredicate_id\t", "\tpredicate\t"), "missing the required column predicate_id"),
        (("\tmapping_justification\t", "\tjustification\t"), "required column mapping_justification"),
        (('#mapping_set_id: "urn:quipu:align:mcp"\n', ""), "no mapping_set_id"),
        ((f"{EX}a\tAy", "\tAy"), "subject_id is empty"),
        (("author_id\n", "author_id\tsubject_id\n"), "names the column subject_id twice"),
    ],
)
def test_parse_refusals(edit: tuple[str, str], phrase: str | None) -> None:
    text = CANONICAL.replace(*edit, 1)
    if phrase is None:
        sssom.parse(text)
        return
    with pytest.raises(InvalidField, match=phrase) as refused:
        sssom.parse(text)
    assert refused.value.status == 400 and refused.value.field == "set_tsv"


def test_a_set_without_a_header_row_is_refused() -> None:
    with pytest.raises(InvalidField, match="no header row"):
        sssom.parse("#curie_map:\n#mapping_set_id: urn:x\n")


def test_the_parsed_curie_map_keeps_extra_prefixes_and_the_base_ones() -> None:
    parsed = sssom.parse(
        '#curie_map:\n#  ex: "http://ex.org/"\n#mapping_set_id: urn:x\n' + HEADER.splitlines()[-1]
    )
    assert dict(parsed.curie_map) == {**sssom.BASE_CURIE_MAP, "ex": EX}
    assert parsed.mappings == ()


# -- rows and pairs ----------------------------------------------------------------------------


def test_pair_keys_are_unordered() -> None:
    assert sssom.pair_key("b", "a") == sssom.pair_key("a", "b") == ("a", "b")
    assert row("a", "x").pair_key() == row("x", "a").pair_key()


def test_what_a_row_derives() -> None:
    assert not row("a", "x").derives_same_as  # undecided (AA-6)
    assert row("a", "x", author_id="ops").derives_same_as
    assert row("a", "x", author_id="ops", predicate_id="owl:sameAs").derives_same_as
    close = row("a", "x", author_id="ops", predicate_id=sssom.SKOS_NS + "closeMatch")
    assert not close.derives_same_as and not close.derives_distinct_from
    negated = row("a", "x", author_id="ops", negated=True)
    assert negated.derives_distinct_from and not negated.derives_same_as


# -- decide (pure) ----------------------------------------------------------------------------

PROPOSED = MappingSet(sssom.DEFAULT_SET_ID, (row("a", "x"), row("b", "y"), row("c", "z")))


def test_ad1_accept_authors_and_negate_also_negates() -> None:
    decided = sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept"), (EX + "y", EX + "b", "negate")], "ops")
    a, b, c = decided.mapping_set.mappings
    assert (a.author_id, a.negated) == ("ops", False)
    assert (b.author_id, b.negated) == ("ops", True)  # matched though given as (object, subject)
    assert (c.author_id, c.negated) == (None, False)
    assert decided.applied == 2 and decided.unmatched == []


def test_ad2_identical_duplicates_are_harmless_and_conflicts_are_refused() -> None:
    once = sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept")], "ops")
    twice = sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept"), (EX + "x", EX + "a", "accept")], "ops")
    assert sssom.serialise(once.mapping_set) == sssom.serialise(twice.mapping_set)
    with pytest.raises(InvalidField, match="conflicting decisions"):
        sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept"), (EX + "x", EX + "a", "negate")], "ops")


def test_ad3_a_pair_no_row_names_changes_nothing_and_is_reported() -> None:
    decided = sssom.decide(PROPOSED, [(EX + "q", EX + "r", "accept")], "ops")
    assert decided.mapping_set == PROPOSED
    assert decided.applied == 0 and decided.unmatched == [(EX + "q", EX + "r")]


def test_a_recorded_judgement_is_not_decided_again() -> None:
    decided = sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept")], "ops").mapping_set
    for verdict in ("accept", "negate"):
        with pytest.raises(InvalidField, match="already carries a judgement"):
            sssom.decide(decided, [(EX + "x", EX + "a", verdict)], "other")


@pytest.mark.parametrize("reviewer", ["", "   "])
def test_a_blank_reviewer_is_refused(reviewer: str) -> None:
    with pytest.raises(InvalidField, match="non-blank") as refused:
        sssom.decide(PROPOSED, [], reviewer)
    assert refused.value.field == "reviewer"


def test_the_reviewer_is_trimmed_so_the_decided_set_is_a_fixpoint() -> None:
    decided = sssom.decide(PROPOSED, [(EX + "a", EX + "x", "accept")], "  ops ").mapping_set
    text = sssom.serialise(decided)
    assert sssom.serialise(sssom.parse(text)) == text and decided.mappings[0].author_id == "ops"


# -- the SSSOM schema ---------------------------------------------------------------------------


def test_our_serialisation_validates_against_the_sssom_schema() -> None:
    decided = sssom.decide(
        sssom.parse(CANONICAL),
        [(EX + "a", EX + "x", "accept"), (EX + "b", EX + "y", "negate")],
        "orcid:0000-0001",
    )
    sssom.validate_with_schema(sssom.serialise(decided.mapping_set))
    sssom.validate_with_schema(CANONICAL)


@pytest.mark.parametrize(
    "edit, phrase",
    [
        (("author_id\n", "author_id\tquipu_note\n"), "'quipu_note' is not a mapping slot"),
        (("1.000\t", "1.000\tAlice Smith"), "line 7, column author_id"),
        (("\t\t1.000", "\tMaybe\t1.000"), "column predicate_modifier"),
        (("1.000", "lots"), "column confidence"),
        (('#mapping_set_id: "urn:quipu:align:mcp"\n', '#mapping_set_id: "urn:quipu:align:mcp"\n#flavour: x\n'),
         "'flavour' is not a mapping set slot"),
    ],
)  # fmt: skip
def test_the_schema_names_what_it_rejects(edit: tuple[str, str], phrase: str) -> None:
    with pytest.raises(InvalidField, match=phrase):
        sssom.validate_with_schema(CANONICAL.replace(*edit, 1))


def test_a_licence_in_the_header_is_checked_as_a_uri() -> None:
    licensed = CANONICAL.replace(
        "#mapping_set_id", '#license: "https://creativecommons.org/publicdomain/zero/1.0/"\n#mapping_set_id'
    )
    sssom.validate_with_schema(licensed)
    assert sssom.serialise(sssom.parse(licensed)) == CANONICAL  # other metadata is not part of the set
