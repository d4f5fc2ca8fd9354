"""``pg_regex``: which SPARQL REGEX and REPLACE patterns PostgreSQL runs with Python's answers,
and their translation. The unit tests always run; on PostgreSQL, ``q_pgregex`` and
``q_pgreplace`` over the translations are checked against ``sqlfunctions.regex`` and
``sqlfunctions._replace`` on random patterns of the subsets and random strings.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection

import quipu
from quipu.api import KnowledgeBase
from quipu.store import sqlfunctions, values
from quipu.store.pg_regex import pg_regex_ok, pg_replace_ok, to_pg, to_pg_replace
from tests.backends import on_postgres, store_location

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
on_pg = pytest.mark.skipif(not on_postgres(), reason="runs in the PostgreSQL half (QUIPU_TEST_DB)")

# Characters that tell the engines apart: newline and CR (., $), case pairs and Unicode folds
# (ſ, K), non-ASCII letters and digits (\w, \d), and punctuation.
CHARS = "ab\nA\r é1٣ſK_-.]^$\\"
SUBJECTS = st.text(alphabet=CHARS, max_size=8)
FLAGS = st.sampled_from([None, "", "s", "m", "q", "sq", "qq", "ms"])


def python_answer(text: str, pattern: str, flags: str | None) -> int | None:
    f = None if flags is None else values.string(flags)
    return sqlfunctions.regex(values.string(text), values.string(pattern), f)


# -- the grammar of the accepted subset --------------------------------------------------------

LITERAL = st.sampled_from(["a", "b", "A", "1", " ", "é", "ſ", "\n", r"\n", r"\.", r"\-", r"\$", r"\^", r"\]"])
MEMBER = st.sampled_from(["a", "b", "A", "1", "é", " ", "\n", r"\n", r"\]", r"\\", r"\^", "-", "_", r"\b"])
RANGE = st.sampled_from(["a-b", "0-9", "A-Z", "b-z"])
QUANT = st.sampled_from(["*", "+", "?", "{2}", "{0,1}", "{1,}", "*?", "+?", "??", "{1,2}?"])


@st.composite
def bracket(draw: st.DrawFn) -> str:
    items = draw(st.lists(st.one_of(MEMBER, RANGE), min_size=1, max_size=3))
    if items[0] == "-" and len(items) > 1 and items[1] == "-":
        items = items[1:]
    return "[" + draw(st.sampled_from(["", "^"])) + "".join(items) + "]"


def patterns() -> st.SearchStrategy[str]:
    atom = st.one_of(LITERAL, st.just("."), bracket())

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.builds(lambda p, o: f"({o}{p})", inner, st.sampled_from(["", "?:"]))
        quantified = st.builds(lambda a, q: a + q, st.one_of(atom, group), QUANT)
        piece = st.one_of(atom, group, quantified, st.sampled_from(["^", "$"]))
        sequence = st.lists(piece, max_size=4).map("".join)
        return st.lists(sequence, min_size=1, max_size=3).map("|".join)

    return st.recursive(atom, extend, max_leaves=8)


@st.composite
def fixed_patterns(draw: st.DrawFn) -> str:
    """REPLACE's subset: no quantifier, no alternation."""
    atom = st.one_of(LITERAL, st.just("."), bracket())
    group = st.builds(
        lambda p, o: f"({o}{p})",
        st.lists(atom, min_size=1, max_size=2).map("".join),
        st.sampled_from(["", "", "?:"]),
    )
    piece = st.one_of(atom, atom, group, st.sampled_from(["^", "$"]))
    return "".join(draw(st.lists(piece, min_size=1, max_size=4)))


REPLACEMENTS = st.text(alphabet="x$0123\\&a\n", max_size=6)


def python_replace(text: str, pattern: str, flags: str | None, replacement: str) -> bytes | None:
    args = [values.string(text), values.string(pattern), values.string(replacement)]
    return sqlfunctions._replace(*args, *([] if flags is None else [values.string(flags)]))


# -- unit tests --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "abc",
        "^a.b$",
        "(a|b)+c?",
        "(?:ab){2,3}",
        "[a-z0-9_]",
        "[^\\n]",
        r"\.\*\?",
        "é+",
        "",
        "a*?",
        "a{1,}",
        "[-a]",
        "[a-]",
    ],
)
def test_the_subset_is_accepted(pattern: str) -> None:
    assert pg_regex_ok(pattern, None)
    assert pg_regex_ok(pattern, "s")


@pytest.mark.parametrize(
    "pattern",
    [
        r"\w",
        r"\d",
        r"\s",
        r"\b",
        r"\B",
        r"\A",
        r"\Z",
        r"\1",
        r"(a)\1",
        r"\x41",
        r"\u0041",
        r"\N{LATIN SMALL LETTER A}",
        "(?=a)",
        "(?!a)",
        "(?<=a)b",
        "(?P<n>a)",
        "(?i)a",
        "(?>a)",
        "a*+",
        "a++",
        "a{2}+",
        "a**",
        "a{2}{3}",
        "*a",
        "a|*",
        "^*",
        "$?",
        "a{",
        "a{x}",
        "a{,3}",
        "a{3,2}",
        "a{256}",
        "(a{100}){100}",
        "(ab",
        "ab)",
        "[abc",
        "[]a]",
        "[^]a]",
        "[[:alpha:]]",
        "[a--b]",
        "[a&&b]",
        "[a-Z]",
        "[z-a]",
        "[a-é]",
        r"[\d]",
        r"[\w-z]",
        "\\",
        "a" * 1001,
    ],
)
def test_patterns_outside_the_subset_are_rejected(pattern: str) -> None:
    assert not pg_regex_ok(pattern, None)
    with pytest.raises(ValueError):
        to_pg(pattern, None)


@pytest.mark.parametrize("flags", ["i", "x", "si", "qi", "z", "S"])
def test_flags_other_than_s_m_q_are_rejected(flags: str) -> None:
    assert not pg_regex_ok("abc", flags)


def test_the_m_flag_is_accepted_only_without_anchors() -> None:
    assert pg_regex_ok("a.b", "m")
    assert not pg_regex_ok("^a", "m")
    assert not pg_regex_ok("a$", "ms")


def test_the_q_flag_escapes_as_python_does() -> None:
    assert pg_regex_ok("a.b(c]{,$\\w", "q")
    assert pg_regex_ok("a.b", "qq")
    assert to_pg(".", "q") == to_pg(r"\.", None)


def test_dot_excludes_newline_without_the_s_flag() -> None:
    assert to_pg("a.b", None) == "***:a[^\\n]b"
    assert to_pg("a.b", "s") == "***:a.b"


def test_dollar_also_matches_before_a_final_newline() -> None:
    assert to_pg("a$", None) == "***:a(?=\\n?\\Z)"


def test_punctuation_is_escaped_and_groups_do_not_capture() -> None:
    assert to_pg("(a)|[.-]", None) == "***:(?:a)|[\\.\\-]"
    assert to_pg("a+?", None) == "***:(?:a)+?"


@FAST
@given(patterns(), FLAGS)
def test_every_accepted_pattern_compiles_in_python_without_warnings(pattern: str, flags: str | None) -> None:
    if not pg_regex_ok(pattern, flags):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sqlfunctions._pattern(pattern, flags or "") is not None


# -- against PostgreSQL ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    if not on_postgres():
        pytest.skip("runs in the PostgreSQL half (QUIPU_TEST_DB)")
    store = quipu.open(store_location(tmp_path_factory.mktemp("rx")))
    yield store
    store.close()


@pytest.fixture(scope="module")
def conn(kb: KnowledgeBase) -> Iterator[Connection]:
    with kb.db.read() as c:
        yield c


def pg_answers(conn: Connection, encodings: list[bytes], are: str) -> list[Any]:
    """q_pgregex over each encoding, in one statement."""
    with conn.begin_nested():  # a server error fails this call only, not the module's snapshot
        rows = conn.exec_driver_sql(
            "SELECT q_pgregex(t.v, %s) FROM unnest(%s::bytea[]) WITH ORDINALITY AS t(v, n) ORDER BY t.n",
            (are, encodings),
        ).fetchall()
    return [r[0] for r in rows]


def check(conn: Connection, pattern: str, flags: str | None, texts: list[str]) -> None:
    assert pg_regex_ok(pattern, flags)
    got = pg_answers(conn, [values.string(t) for t in texts], to_pg(pattern, flags))
    expected = [python_answer(t, pattern, flags) for t in texts]
    assert got == expected, (
        pattern,
        flags,
        to_pg(pattern, flags),
        list(zip(texts, got, expected, strict=False)),
    )


EDGES = ["", "a", "A", "\n", "a\n", "a\n\n", "\na", "\r", "a\r\n", "é", "ab", "b a", "K", "ſ", "1", "٣"]


@on_pg
@FAST
@given(patterns(), FLAGS, st.lists(SUBJECTS, max_size=12))
def test_q_pgregex_agrees_with_python_on_the_subset(
    conn: Connection, pattern: str, flags: str | None, texts: list[str]
) -> None:
    if pg_regex_ok(pattern, flags):
        check(conn, pattern, flags, EDGES + texts)


@on_pg
@FAST
@given(st.text(alphabet="ab\n.^$*+?{}[]()|\\-,12:=!<>Ps", max_size=10), FLAGS, st.lists(SUBJECTS, max_size=8))
def test_q_pgregex_agrees_with_python_on_any_pattern_it_accepts(
    conn: Connection, pattern: str, flags: str | None, texts: list[str]
) -> None:
    """Raw strings of metacharacters: whatever pg_regex_ok lets through must agree."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pg_regex_ok(pattern, flags):
            check(conn, pattern, flags, EDGES + texts)


PUNCTUATION = [chr(c) for c in range(0x20, 0x7F) if not chr(c).isalnum()]


@on_pg
def test_every_escaped_ascii_character_is_literal_in_and_out_of_brackets(conn: Connection) -> None:
    texts = EDGES + PUNCTUATION + ["\\\\", "\t", "\x08", "\x0b", "\x0c", "\x07"]
    for c in PUNCTUATION:
        check(conn, "\\" + c, None, texts)
        check(conn, "[\\" + c + "]", None, texts)
        check(conn, "[^\\" + c + "]", None, texts)
    for e in "ntrfva":
        check(conn, "\\" + e, None, texts)
        check(conn, "[\\" + e + "]", None, texts)
    check(conn, r"[\b]", None, texts)


@on_pg
def test_anchors_and_dot_around_newlines(conn: Connection) -> None:
    texts = [*EDGES, "a\nb", "b\na", "\n\n", "ba\n"]
    for pattern in ["$", "^", "^$", "a$", "^a$", "a$\n", "a\n$", "$\n", "(a|$)b", "a.b", ".", "^.$", "(a$)+"]:
        for flags in (None, "s"):
            check(conn, pattern, flags, texts)


@on_pg
def test_a_non_string_text_answers_null_as_in_python(conn: Connection) -> None:
    encodings = [values.integer(1), values.lang_string("a", "en"), values.string("a")]
    got = pg_answers(conn, encodings, to_pg("a", None))
    assert got == [sqlfunctions.regex(e, values.string("a")) for e in encodings] == [None, 1, 1]


# -- REPLACE -----------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["a+", "a|b", "a?", "(a)*", "a{2}", "^", "$", "^$", "", "(?:)", "\\w"])
def test_replace_rejects_choices_and_empty_matches(pattern: str) -> None:
    assert not pg_replace_ok(pattern, None, "x")
    with pytest.raises(ValueError):
        to_pg_replace(pattern, None, "x")


def test_replace_keeps_groups_and_translates_the_replacement() -> None:
    assert to_pg_replace("(a)(?:b)(c)$", None, "$2\\$0&$1x") == (
        "***:(a)(?:b)(c)(?=\\n?\\Z)",
        "\\2\\\\\\&&\\1x",
    )
    assert to_pg_replace("a", None, "$") == ("***:a", "$")


def test_replace_rejects_a_reference_to_a_missing_group() -> None:
    assert pg_replace_ok("(a)", None, "$1")
    assert not pg_replace_ok("(a)", None, "$2")
    assert not pg_replace_ok("(?:a)", None, "$1")
    assert pg_replace_ok("(?:a)", None, "$0")


def pg_replaced(conn: Connection, encodings: list[bytes], are: str, replacement: str) -> list[Any]:
    with conn.begin_nested():
        rows = conn.exec_driver_sql(
            "SELECT q_pgreplace(t.v, %s, %s) FROM unnest(%s::bytea[]) WITH ORDINALITY AS t(v, n) ORDER BY t.n",
            (are, replacement, encodings),
        ).fetchall()
    return [None if r[0] is None else bytes(r[0]) for r in rows]


def check_replace(
    conn: Connection, pattern: str, flags: str | None, replacement: str, texts: list[str]
) -> None:
    are, repl = to_pg_replace(pattern, flags, replacement)
    got = pg_replaced(conn, [values.string(t) for t in texts], are, repl)
    expected = [python_replace(t, pattern, flags, replacement) for t in texts]
    assert got == expected, (
        pattern,
        flags,
        replacement,
        are,
        repl,
        list(zip(texts, got, expected, strict=False)),
    )


REPLACE_TEXTS = [*EDGES, "aa", "aaa", "a\na\n", "abab", "ba\n", "1a1"]


@on_pg
@FAST
@given(fixed_patterns(), FLAGS, REPLACEMENTS, st.lists(SUBJECTS, max_size=12))
def test_q_pgreplace_agrees_with_python_on_the_subset(
    conn: Connection, pattern: str, flags: str | None, replacement: str, texts: list[str]
) -> None:
    if pg_replace_ok(pattern, flags, replacement):
        check_replace(conn, pattern, flags, replacement, REPLACE_TEXTS + texts)


@on_pg
def test_q_pgreplace_keeps_the_language_and_answers_null_for_a_non_string(conn: Connection) -> None:
    encodings = [values.integer(1), values.lang_string("ba", "en"), values.string("ba")]
    are, repl = to_pg_replace("a", None, "[$0]")
    expected = [sqlfunctions._replace(e, values.string("a"), values.string("[$0]")) for e in encodings]
    assert pg_replaced(conn, encodings, are, repl) == expected
    assert expected == [None, values.lang_string("b[a]", "en"), values.string("b[a]")]
