"""The clause splitter used for snapshots and seed files (quipu/logic/clause_split.py)."""

from __future__ import annotations

import pytest

from quipu.logic.clause_split import SourceClause, split_clauses


def texts(source: str) -> list[str]:
    return [clause.text for clause in split_clauses(source).clauses]


def test_one_clause_per_line() -> None:
    assert texts("a(1).\nb(2).\n") == ["a(1)", "b(2)"]


def test_end_token_needs_layout_after_the_period() -> None:
    assert texts("a(1). b(2).\tc(3).%x\n") == ["a(1)", "b(2)", "c(3)"]


def test_quoted_atom_with_period_and_space_is_not_an_end() -> None:
    assert texts("t('x. y').\nu('end.').\n") == ["t('x. y')", "u('end.')"]


def test_doubled_and_escaped_quotes_in_atoms() -> None:
    assert texts("a('it''s. ok').\nb('it\\'s. ok').\n") == ["a('it''s. ok')", "b('it\\'s. ok')"]


def test_string_with_escaped_double_quote_and_period() -> None:
    assert texts('s("say \\". hi").\n') == ['s("say \\". hi")']


def test_backquoted_text() -> None:
    assert texts("b(`a. b`).\n") == ["b(`a. b`)"]


def test_hex_escape_ending_in_backslash_before_closing_quote() -> None:
    assert texts("h('\\x41\\'). i(x).\n") == ["h('\\x41\\')", "i(x)"]


def test_char_code_period() -> None:
    assert texts("c(0'.). d(0'. ).\n") == ["c(0'.)", "d(0'. )"]


def test_char_code_quote_forms() -> None:
    assert texts("q(0'''). r(0''). s(0'\\n). t(0'%).\n") == ["q(0''')", "r(0'')", "s(0'\\n)", "t(0'%)"]


def test_char_code_symbol_before_end() -> None:
    # the '+' belongs to 0'+, so the following period still ends the clause
    assert texts("v(X) :- X = 0'+.\nw.\n") == ["v(X) :- X = 0'+", "w"]


def test_univ_operator_is_not_an_end() -> None:
    assert texts("p(T, L) :- T =.. L.\n") == ["p(T, L) :- T =.. L"]


def test_symbol_period_run_is_not_an_end() -> None:
    split = split_clauses("x :- y = +.\n")
    assert split.clauses == ()
    assert split.tail is not None and split.tail.text == "x :- y = +."


def test_decimal_numbers() -> None:
    assert texts("n(1.5). m(2.0e10). k(-3.25).\n") == ["n(1.5)", "m(2.0e10)", "k(-3.25)"]


def test_integer_before_end() -> None:
    assert texts("x(1) :- Y = 1.\n") == ["x(1) :- Y = 1"]


def test_radix_number() -> None:
    assert texts("r(16'FF). s(2'101).\n") == ["r(16'FF)", "s(2'101)"]


def test_line_comments_are_removed() -> None:
    assert texts("% head. line\na(1). % trailing. comment\nb(2).") == ["a(1)", "b(2)"]


def test_percent_inside_quotes_is_text() -> None:
    assert texts("p('100%. sure').\n") == ["p('100%. sure')"]


def test_block_comments_are_replaced_by_a_space() -> None:
    assert texts("/* a. b */ a(1). /* x */b(/* y. */2).\n") == ["a(1)", "b( 2)"]


def test_period_before_block_comment_is_not_an_end() -> None:
    # as in SWI-Prolog: "./*" is a symbol-char token, so there is no end token here
    split = split_clauses("a(1)./* x */b(2).\n")
    assert [c.text for c in split.clauses] == ["a(1)./* x */b(2)"]


def test_block_comment_inside_symbol_token_is_not_a_comment() -> None:
    assert texts("f(a =/* z */ b) .\n") == ["f(a =/* z */ b)"]
    # so a period inside it followed by a space does end the clause, as SWI-Prolog reads it
    assert texts("f(a =/* z. */ b) .\n") == ["f(a =/* z", "*/ b)"]


def test_end_of_text_without_newline() -> None:
    assert texts("a(1).\nb(2).") == ["a(1)", "b(2)"]
    assert split_clauses("a(1).\nb(2).").tail is None


def test_unterminated_last_clause_is_the_tail() -> None:
    split = split_clauses("a(1).\nb(2)")
    assert [c.text for c in split.clauses] == ["a(1)"]
    assert split.tail == SourceClause("b(2)", 2)


def test_unterminated_quote_is_the_tail() -> None:
    split = split_clauses("a(1).\nb('open. x).\n")
    assert [c.text for c in split.clauses] == ["a(1)"]
    assert split.tail is not None and split.tail.text == "b('open. x)."


def test_trailing_comment_only_is_no_tail() -> None:
    assert split_clauses("a(1).\n% done\n/* end */\n").tail is None


def test_line_numbers_point_at_the_first_character() -> None:
    split = split_clauses("% c\n\na(1).\n\n  b(2,\n  3).\nc.\n")
    assert [(c.text, c.line) for c in split.clauses] == [("a(1)", 3), ("b(2,\n  3)", 5), ("c", 7)]


def test_directives_are_clauses_starting_with_neck() -> None:
    assert texts(":- dynamic(foo/1).\nfoo(1).\n") == [":- dynamic(foo/1)", "foo(1)"]


def test_rule_with_conjunction_and_lists() -> None:
    source = "anc(X, Y) :- par(X, Z), anc(Z, Y).\nl([a, 'b. c', \"d.\"]).\n"
    assert texts(source) == ["anc(X, Y) :- par(X, Z), anc(Z, Y)", "l([a, 'b. c', \"d.\"])"]


def test_dict_style_period_followed_by_name_is_not_an_end() -> None:
    assert texts("g(X) :- Y = X.key.\n") == ["g(X) :- Y = X.key"]


@pytest.mark.parametrize("source", ["", "\n\n", "% only a comment\n"])
def test_empty_sources(source: str) -> None:
    split = split_clauses(source)
    assert split.clauses == () and split.tail is None


def test_large_source_splits_every_clause() -> None:
    source = "".join(f"feature(f{i}, 'name {i}. x', {i}.5).\n" for i in range(20000))
    split = split_clauses(source)
    assert len(split.clauses) == 20000 and split.tail is None
    assert split.clauses[-1] == SourceClause("feature(f19999, 'name 19999. x', 19999.5)", 20000)
