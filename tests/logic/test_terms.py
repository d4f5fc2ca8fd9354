"""The Python half of the value encoding: decoding tagged results, R-J encoding, literals."""

from __future__ import annotations

import json
import math

import pytest

from quipu.logic.terms import (
    Atom,
    Compound,
    DecodeError,
    PlString,
    Solutions,
    Variable,
    decode,
    prolog_string,
    solutions_json,
    to_json,
)


def test_decode_keeps_atoms_strings_and_variables_apart() -> None:
    assert decode({"functor": "a", "args": ["x"]}) == Atom("x")
    assert decode({"functor": "s", "args": ["x"]}) == PlString("x")
    assert decode({"functor": "v", "args": ["_G1"]}) == Variable("_G1")
    assert decode({"functor": "i", "args": ["123456789012345678901234"]}) == 123456789012345678901234
    assert decode({"functor": "l", "args": [[1, 2.5]]}) == (1, 2.5)
    assert decode({"functor": "c", "args": ["f", [{"functor": "a", "args": ["b"]}]]}) == Compound(
        "f", (Atom("b"),)
    )
    assert math.isinf(decode({"functor": "x", "args": ["-1.0Inf"]}))  # type: ignore[arg-type]


def test_decode_refuses_untagged_values() -> None:
    with pytest.raises(DecodeError):
        decode("bare")
    with pytest.raises(DecodeError):
        decode(True)


def test_json_encoding_of_values_follows_r_j3() -> None:
    term = Compound("f", (Atom("Tag-Triggered"), PlString("1.0"), (), (Atom("a"), 1), Variable("_G1"), 2.5))
    assert to_json(term) == {"functor": "f", "args": ["Tag-Triggered", "1.0", [], ["a", 1], "_G1", 2.5]}
    assert to_json(math.inf) == "inf"
    assert to_json(math.nan) == "nan"


def test_solutions_text_is_compact_ordered_and_utf8() -> None:
    sols = Solutions(("X", "Y"), ((Atom("äpfel"), 1), (Atom("b"), 2)))
    text = solutions_json(sols)
    assert text == '[{"X":"äpfel","Y":1},{"X":"b","Y":2}]'
    assert solutions_json(Solutions((), ((), ()))) == "[{},{}]"
    assert solutions_json(Solutions(("X",), ())) == "[]"
    assert list(json.loads(text)[0]) == ["X", "Y"]


def test_prolog_string_escapes_everything_that_could_end_the_literal() -> None:
    assert prolog_string('a"b\\c\nd\te') == '"a\\"b\\\\c\\nd\\te"'
    assert prolog_string("\x01") == '"\\x1\\"'
    with pytest.raises(ValueError):
        prolog_string("\ud800")
