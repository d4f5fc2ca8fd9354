"""``gp-grammar/1`` (tools-graphs-governance §6.0): step signatures and subsequence matching.

The original has no textual pattern language, so these are the tests of the signature model and
of the matcher; the store-backed reads of signatures are tested in test_golden_paths.py.
"""

from __future__ import annotations

import pytest

from quipu.governance.gp_grammar import (
    GRAMMAR_VERSION,
    Conforms,
    DeviatesAt,
    Signature,
    match,
    signature,
    target_class,
)

# Pure functions: the PostgreSQL half skips these (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

EDIT = Signature("edit", "literal")
RUN = Signature("run", "literal")
VERIFY = Signature("verify", "literal")


def test_the_version_string_is_exactly_gp_grammar_1() -> None:
    assert GRAMMAR_VERSION == "gp-grammar/1"


def test_signatures_serialise_with_snake_case_fields() -> None:
    assert Signature("edit", "none").to_json() == {"action_kind": "edit", "target_class": "none"}


# -- the target class --------------------------------------------------------------------------


def test_no_target_is_none() -> None:
    assert target_class([]) == "none"


def test_a_literal_target_is_literal() -> None:
    assert target_class([None]) == "literal"


def test_an_iri_target_without_a_type_is_untyped() -> None:
    assert target_class([frozenset()]) == "untyped"


def test_an_iri_target_takes_its_lexicographically_smallest_type() -> None:
    assert target_class([frozenset({"http://ex/b/Zeta", "http://ex/a/Alpha"})]) == "http://ex/a/Alpha"


def test_several_targets_take_the_smallest_of_their_classes() -> None:
    # [designed here] "http://…" < "literal" < "untyped" in code point order.
    assert target_class([None, frozenset()]) == "literal"
    assert target_class([frozenset(), frozenset({"http://ex/T"})]) == "http://ex/T"


# -- the signature -----------------------------------------------------------------------------


def test_a_step_without_an_action_kind_has_no_signature() -> None:
    assert signature([], [None]) is None


def test_a_signature_pairs_the_action_kind_and_the_target_class() -> None:
    assert signature(["edit"], [frozenset({"http://ex/Doc"})]) == Signature("edit", "http://ex/Doc")


def test_action_kinds_compare_exactly() -> None:
    assert signature(["Edit"], []) != signature(["edit"], [])
    assert match([Signature("edit", "none")], [Signature("Edit", "none")]) == DeviatesAt(0)


def test_several_action_kinds_take_the_smallest() -> None:
    assert signature(["verify", "edit"], []) == Signature("edit", "none")


# -- matching ----------------------------------------------------------------------------------


def test_the_exact_sequence_conforms() -> None:
    assert match([EDIT, RUN], [EDIT, RUN]) == Conforms()


def test_gaps_are_allowed() -> None:
    read = Signature("read", "literal")
    assert match([EDIT, VERIFY], [read, EDIT, RUN, read, VERIFY]) == Conforms()


def test_order_is_not_negotiable() -> None:
    assert match([RUN, EDIT], [EDIT, RUN]) == DeviatesAt(1)


def test_both_halves_of_the_signature_must_match() -> None:
    assert match([EDIT], [Signature("edit", "untyped")]) == DeviatesAt(0)


def test_unevaluable_steps_neither_match_nor_deviate() -> None:
    assert match([EDIT, RUN], [None, EDIT, None, RUN, None]) == Conforms()
    assert match([EDIT, RUN], [None, EDIT, None]) == DeviatesAt(1)


def test_an_empty_trajectory_deviates_at_the_first_element() -> None:
    assert match([EDIT], []) == DeviatesAt(0)


def test_deviation_is_the_first_element_no_remaining_step_can_match() -> None:
    # The earliest match of each element is optimal: taking "edit" at index 0 leaves the most.
    assert match([EDIT, RUN, VERIFY], [EDIT, EDIT, RUN, EDIT]) == DeviatesAt(2)
    assert match([EDIT, RUN, VERIFY], [RUN, VERIFY]) == DeviatesAt(0)


def test_a_repeated_element_needs_a_step_each() -> None:
    assert match([EDIT, EDIT], [EDIT]) == DeviatesAt(1)
    assert match([EDIT, EDIT], [EDIT, RUN, EDIT]) == Conforms()
