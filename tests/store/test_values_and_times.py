"""Unit tests of the instant grammar (DM §6.1) and the tagged value encoding (DM §2)."""

from __future__ import annotations

import math
import re
import struct
from typing import Any

import pytest

from quipu import times
from quipu.errors import BadLiteral, BadRequest, InvalidField
from quipu.store import values
from quipu.store.values import XSD

# Never reaches the backend under test: the PostgreSQL half skips it (tests/conftest.py).
pytestmark = pytest.mark.backend_independent

# -- times.parse_instant --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-04-01T10:20:30Z", "2026-04-01T10:20:30Z"),
        ("2026-04-01t10:20:30z", "2026-04-01T10:20:30Z"),
        ("2026-04-01T10:20:30z", "2026-04-01T10:20:30Z"),
        ("2026-04-01T10:20:30+00:00", "2026-04-01T10:20:30Z"),
        ("2026-04-01T10:20:30-00:00", "2026-04-01T10:20:30Z"),
        ("2026-03-04T09:15:00+01:00", "2026-03-04T08:15:00Z"),
        ("2026-03-04T09:15:00+05:30", "2026-03-04T03:45:00Z"),
        ("2026-03-04T21:15:00-05:00", "2026-03-05T02:15:00Z"),
        # offsets across a day, month and year boundary
        ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00Z"),
        ("2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00Z"),
        ("2026-03-01T00:00:00+00:01", "2026-02-28T23:59:00Z"),
        ("2028-03-01T00:00:00+00:01", "2028-02-29T23:59:00Z"),
        # fractions are truncated, never rounded
        ("2026-04-01T10:20:30.999999Z", "2026-04-01T10:20:30Z"),
        ("2026-04-01T10:20:30.5Z", "2026-04-01T10:20:30Z"),
        ("2026-12-31T23:59:59.9999Z", "2026-12-31T23:59:59Z"),
        ("2026-04-01T10:20:30.0+02:00", "2026-04-01T08:20:30Z"),
        # a leap second carries into the next minute (and day and year)
        ("2026-06-30T23:59:60Z", "2026-07-01T00:00:00Z"),
        ("2026-12-31T23:59:60Z", "2027-01-01T00:00:00Z"),
        ("2026-12-31T23:59:60.5Z", "2027-01-01T00:00:00Z"),
        ("2026-04-01T10:20:60+01:00", "2026-04-01T09:21:00Z"),
        # leap years
        ("2028-02-29T12:00:00Z", "2028-02-29T12:00:00Z"),
        ("2000-02-29T12:00:00Z", "2000-02-29T12:00:00Z"),
        ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59Z"),
    ],
)
def test_parse_instant_normalises(text: str, expected: str) -> None:
    out = times.parse_instant(text)
    assert out == expected
    assert out is not None and len(out) == 20


@pytest.mark.parametrize(
    "text",
    [
        "2026-04-01",  # bare date
        "2026-04-01T10:20:30",  # missing offset
        "2026-04-01T10:20Z",  # missing seconds
        "2026-04-01 10:20:30Z",  # space instead of T
        "2026-04-01T24:00:00Z",  # 24:00
        "2026-04-01T23:60:00Z",
        "2026-04-01T23:59:61Z",
        "2026-02-29T00:00:00Z",  # not a leap year
        "1900-02-29T00:00:00Z",  # century, not a leap year
        "2026-04-31T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-04-00T00:00:00Z",
        "2026-04-01T10:20:30Zjunk",  # trailing text
        " 2026-04-01T10:20:30Z",
        "2026-04-01T10:20:30Z ",
        "2026-04-01T10:20:30+0100",  # offset without colon
        "2026-04-01T10:20:30+01",
        "2026-04-01T10:20:30+24:00",
        "2026-04-01T10:20:30+01:60",
        "2026-04-01T10:20:30.Z",  # empty fraction
        "26-04-01T10:20:30Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:30:00-01:00",  # leaves year 9999
        "0001-01-01T00:30:00+01:00",  # before year 1
        "",
        "now",
    ],
)
def test_parse_instant_rejects(text: str) -> None:
    assert times.parse_instant(text) is None


@pytest.mark.parametrize("text", ["２０２６-04-01T10:20:30Z", "٢٠٢٦-04-01T10:20:30Z"])
def test_parse_instant_rejects_non_ascii_digits(text: str) -> None:
    assert times.parse_instant(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("0999-12-31T23:59:59Z", "0999-12-31T23:59:59Z"),
        ("1000-01-01T00:30:00+01:00", "0999-12-31T23:30:00Z"),
    ],
)
def test_parse_instant_pads_years_below_1000(text: str, expected: str) -> None:
    assert times.parse_instant(text) == expected


def test_normalise_valid_from_refuses_with_the_field_named() -> None:
    with pytest.raises(InvalidField, match="invalid 'valid_from': '2026-04-01'") as info:
        times.normalise_valid_from("2026-04-01")
    assert info.value.field == "valid_from"
    assert info.value.reason == "invalid_valid_from"
    with pytest.raises(InvalidField, match="invalid 'valid_from'"):
        times.normalise_valid_from(20260401)  # type: ignore[arg-type]
    assert times.normalise_valid_from("2026-03-04T09:15:00.987+01:00") == "2026-03-04T08:15:00Z"


def test_normalise_timestamp() -> None:
    assert times.normalise_timestamp("2026-03-04T09:15:00+01:00") == "2026-03-04T08:15:00Z"
    assert times.normalise_timestamp("2026-04-01") == "2026-04-01"  # a bare date, as written
    for malformed in ("last tuesday", "12345678901-01-01T00:00:00Z", "0000-01-01", "2026-02-30"):
        with pytest.raises(InvalidField) as refused:
            times.normalise_timestamp(malformed)
        assert refused.value.field == "timestamp"
    for absent in (None, ""):
        now = times.normalise_timestamp(absent)
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", now)
        assert times.parse_instant(now) == now


def test_normalise_valid_at() -> None:
    assert times.normalise_valid_at(None) is None
    assert times.normalise_valid_at("2026-04-02") == "2026-04-02"
    assert times.normalise_valid_at("2026-04-02T01:30:00+02:00") == "2026-04-01T23:30:00Z"
    for malformed in ("whenever", "zzz", " 2026-04-02", "10000-01-01T00:00:00Z"):
        with pytest.raises(InvalidField) as refused:
            times.normalise_valid_at(malformed)
        assert refused.value.field == "valid_at"


def test_now_is_whole_seconds_utc() -> None:
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", times.now())


# -- values: encoding ------------------------------------------------------------------------------


def test_tag_layout() -> None:
    assert values.ref(7) == bytes([0]) + struct.pack("<q", 7)
    assert values.string("hé") == b"\x01" + "hé".encode()
    assert values.integer(-2) == b"\x02" + struct.pack("<q", -2)
    assert values.double(1.5) == b"\x03" + struct.pack("<d", 1.5)
    assert values.boolean(True) == b"\x04\x01"
    assert values.boolean(False) == b"\x04\x00"
    assert values.lang_string("chat", "fr") == b"\x06" + struct.pack("<H", 2) + b"fr" + b"chat"
    dt = XSD + "date"
    assert (
        values.literal("2026-01-01", dt) == b"\x07" + struct.pack("<H", len(dt)) + dt.encode() + b"2026-01-01"
    )


@pytest.mark.parametrize(
    ("encoded", "kind", "value", "lexical"),
    [
        (values.ref(42), "ref", 42, ""),
        (values.string(""), "str", "", ""),
        (values.string('a@b "c"\n'), "str", 'a@b "c"\n', 'a@b "c"\n'),
        (values.integer(0), "int", 0, "0"),
        (values.integer(2**63 - 1), "int", 2**63 - 1, str(2**63 - 1)),
        (values.integer(-(2**63)), "int", -(2**63), str(-(2**63))),
        (values.double(1.5), "float", 1.5, "1.5"),
        (values.double(1e20), "float", 1e20, "1E20"),
        (values.double(float("inf")), "float", float("inf"), "INF"),
        (values.double(float("-inf")), "float", float("-inf"), "-INF"),
        (values.boolean(True), "bool", True, "true"),
        (values.boolean(False), "bool", False, "false"),
        (bytes([values.TAG_BYTES]) + b"\x00\xff", "bytes", b"\x00\xff", ""),
        (values.lang_string("user@host", "en-GB"), "lang", "user@host", "user@host"),
        (values.literal("01.50", XSD + "decimal"), "typed", "01.50", "01.50"),
    ],
)
def test_decode_round_trip(encoded: bytes, kind: str, value: Any, lexical: str) -> None:
    d = values.decode(encoded)
    assert d.kind == kind
    assert d.value == value
    assert d.lexical == lexical


def test_decode_metadata() -> None:
    assert values.decode(values.lang_string("x", "en")).lang == "en"
    assert values.decode(values.lang_string("x", "en")).datatype == values.RDF_LANGSTRING
    assert values.decode(values.integer(1)).datatype == values.XSD_INTEGER
    assert values.decode(values.double(1.0)).datatype == values.XSD_DOUBLE
    assert values.decode(values.boolean(True)).datatype == values.XSD_BOOLEAN
    assert values.decode(values.literal("P1D", XSD + "duration")).datatype == XSD + "duration"
    assert math.isnan(values.decode(values.literal("NaN", values.XSD_DOUBLE)).value)
    with pytest.raises(ValueError, match="unknown value tag"):
        values.decode(b"\x09abc")


def test_literal_mapping() -> None:
    assert values.literal("x") == values.string("x")
    assert values.literal("x", values.XSD_STRING) == values.string("x")
    assert values.literal("x", None, "en") == values.lang_string("x", "en")
    assert values.literal("x", values.XSD_STRING, "en") == values.lang_string("x", "en")  # lang wins
    assert values.literal("5", values.XSD_INTEGER) == values.integer(5)
    assert values.literal("+005", values.XSD_INTEGER) == values.integer(5)
    assert values.literal("-0", values.XSD_INTEGER) == values.integer(0)
    assert values.literal("1.5", values.XSD_DOUBLE) == values.double(1.5)
    assert values.literal("1E20", values.XSD_DOUBLE) == values.double(1e20)
    assert values.literal("-INF", values.XSD_DOUBLE) == values.double(float("-inf"))
    assert values.literal("NaN", values.XSD_DOUBLE) == values.double(float("nan"))
    for true in ("true", "1"):
        assert values.literal(true, values.XSD_BOOLEAN) == values.boolean(True)
    for false in ("false", "0"):
        assert values.literal(false, values.XSD_BOOLEAN) == values.boolean(False)
    for ill_formed in ("TRUE", "yes", "", " true"):  # kept verbatim, never silently false
        kept = values.decode(values.literal(ill_formed, values.XSD_BOOLEAN))
        assert (kept.kind, kept.lexical, kept.datatype) == ("typed", ill_formed, values.XSD_BOOLEAN)
    # Other numeric types stay Typed with the lexical form verbatim.
    assert values.decode(values.literal("007", XSD + "int")).lexical == "007"
    assert values.decode(values.literal("1.50", XSD + "decimal")).kind == "typed"
    assert values.literal("1.50", XSD + "decimal") != values.literal("1.5", XSD + "decimal")
    assert values.literal("1.50", XSD + "decimal") != values.literal("1.5", values.XSD_DOUBLE)


@pytest.mark.parametrize(
    "lexical", ["15E-1", "1.50", "01.5", "1e3", "1.0E0", "1e20", "+INF", "1e999", "1e-999"]
)
def test_a_double_not_in_canonical_form_keeps_its_lexical_form(lexical: str) -> None:
    kept = values.decode(values.literal(lexical, values.XSD_DOUBLE))
    assert (kept.kind, kept.lexical, kept.datatype) == ("typed", lexical, values.XSD_DOUBLE)
    assert values.literal(lexical, values.XSD_DOUBLE) != values.double(float(lexical.replace("INF", "inf")))
    assert values.numeric(values.literal(lexical, values.XSD_DOUBLE)) == float(lexical.replace("INF", "inf"))


@pytest.mark.parametrize(
    ("lexical", "canonical"),
    [
        ("9223372036854775808", "9223372036854775808"),
        ("-9223372036854775809", "-9223372036854775809"),
        ("+00018446744073709551617", "18446744073709551617"),
        ("-0000099999999999999999999", "-99999999999999999999"),
        ("1" * 5000, "1" * 5000),
    ],
)
def test_an_integer_past_64_bits_is_typed_in_canonical_form(lexical: str, canonical: str) -> None:
    kept = values.literal(lexical, values.XSD_INTEGER)
    d = values.decode(kept)
    assert (d.kind, d.lexical, d.datatype) == ("typed", canonical, values.XSD_INTEGER)
    assert values.literal(canonical, values.XSD_INTEGER) == kept
    if len(canonical) < 4000:
        assert values.integer(int(canonical)) == kept
        assert values.numeric(kept) == float(int(canonical))
    else:
        assert values.numeric(kept) == float("inf")


@pytest.mark.parametrize(
    ("lexical", "datatype"),
    [
        ("abc", values.XSD_INTEGER),
        ("1.0", values.XSD_INTEGER),
        ("", values.XSD_INTEGER),
        (" 5", values.XSD_INTEGER),
        ("+-5", values.XSD_INTEGER),
        ("abc", values.XSD_DOUBLE),
        ("1,5", values.XSD_DOUBLE),
        ("inf", values.XSD_DOUBLE),
        ("1.2.3", XSD + "decimal"),
        ("1e3", XSD + "decimal"),
        ("", XSD + "decimal"),
        ("1.5", XSD + "long"),
        ("x", XSD + "unsignedByte"),
        ("one", XSD + "float"),
    ],
)
def test_literal_refuses_bad_numeric_lexicals(lexical: str, datatype: str) -> None:
    with pytest.raises(BadLiteral, match=re.escape(f'"{lexical}"')):
        values.literal(lexical, datatype)


def test_integer_range() -> None:
    assert values.integer(2**63 - 1)[0] == values.TAG_INT
    assert values.integer(2**63) == values.literal(str(2**63), values.XSD_INTEGER)
    assert values.decode(values.integer(-(2**63) - 1)).lexical == str(-(2**63) - 1)
    with pytest.raises(BadLiteral, match="too long"):  # past Python's int/str conversion limit
        values.integer(10**5000)


def test_header_length_limit() -> None:
    with pytest.raises(BadLiteral, match="65535"):
        values.literal("x", "http://example.org/" + "d" * 70_000)
    assert values.decode(values.literal("x", "http://e/" + "d" * 65_000)).lexical == "x"


def test_digest_ref_id_and_numeric_shadow() -> None:
    assert len(values.digest(b"abc")) == 16
    assert values.digest(values.integer(5)) != values.digest(values.string("5"))
    assert values.ref_id(values.ref(123)) == 123
    assert values.ref_id(values.string("x")) is None
    assert values.numeric(values.integer(5)) == 5.0
    assert values.numeric(values.double(2.5)) == 2.5
    assert values.numeric(values.double(float("nan"))) is None
    assert values.numeric(values.literal("1.50", XSD + "decimal")) == 1.5
    assert values.numeric(values.literal("007", XSD + "int")) == 7.0
    assert values.numeric(values.literal("2026-01-01", XSD + "date")) is None
    assert values.numeric(values.string("5")) is None
    assert values.numeric(values.boolean(True)) is None


# -- values: the JSON surface ---------------------------------------------------------------------


def test_from_json_forms() -> None:
    bare = values.from_json("http://example.org/x")
    assert (bare.encoded, bare.iri, bare.bare_string) == (values.string("http://example.org/x"), None, True)
    explicit = values.from_json({"str": "http://example.org/x"})
    assert (explicit.encoded, explicit.bare_string) == (values.string("http://example.org/x"), False)
    ref = values.from_json({"iri": "http://example.org/x"})
    assert (ref.iri, ref.encoded, ref.bare_string) == ("http://example.org/x", None, False)
    assert values.from_json({"int": 5}).encoded == values.integer(5)
    assert values.from_json({"int": 10**30}).encoded == values.literal(str(10**30), values.XSD_INTEGER)
    assert values.from_json({"float": 1.5}).encoded == values.double(1.5)
    assert values.from_json({"float": 2}).encoded == values.double(2.0)
    assert values.from_json({"bool": False}).encoded == values.boolean(False)
    assert values.from_json({"value": "chat", "lang": "fr"}).encoded == values.lang_string("chat", "fr")
    assert values.from_json({"value": "P1D", "datatype": XSD + "duration"}).encoded == values.literal(
        "P1D", XSD + "duration"
    )


def test_from_json_canonicalises_like_ingestion() -> None:
    """DM §2 rule 4: {"value": "5", "datatype": xsd:integer} equals "5"^^xsd:integer and {"int": 5}."""
    turtle_form = values.literal("5", values.XSD_INTEGER)
    assert values.from_json({"int": 5}).encoded == turtle_form
    assert values.from_json({"value": "5", "datatype": values.XSD_INTEGER}).encoded == turtle_form
    assert (
        values.from_json({"value": "5.0", "datatype": values.XSD_DOUBLE}).encoded
        == values.from_json({"float": 5.0}).encoded
    )
    # a double keeps its written form: "5" is another term than "5.0", on either surface alike
    assert values.from_json({"value": "5", "datatype": values.XSD_DOUBLE}).encoded == values.literal(
        "5", values.XSD_DOUBLE
    )
    assert values.literal("5", values.XSD_DOUBLE) != values.from_json({"float": 5.0}).encoded
    assert (
        values.from_json({"value": "true", "datatype": values.XSD_BOOLEAN}).encoded
        == values.from_json({"bool": True}).encoded
    )
    assert (
        values.from_json({"value": "x", "datatype": values.XSD_STRING}).encoded
        == values.from_json({"str": "x"}).encoded
    )
    with pytest.raises(BadLiteral):
        values.from_json({"value": "five", "datatype": values.XSD_INTEGER})


@pytest.mark.parametrize(
    "bad",
    [
        None,
        5,
        1.5,
        True,
        ["x"],
        {},
        {"iri": 5},
        {"iri": "relative/path"},
        {"iri": ""},
        {"iri": "http://example.org/has space"},
        {"str": 5},
        {"int": 1.5},
        {"int": "5"},
        {"int": True},
        {"float": "1.5"},
        {"float": False},
        {"bool": 1},
        {"bool": "true"},
        {"value": "x"},
        {"value": 5, "lang": "en"},
        {"value": "x", "lang": "en", "datatype": XSD + "string"},
        {"str": "x", "extra": 1},
        {"ref": "http://example.org/x"},
    ],
)
def test_from_json_bad_forms(bad: Any) -> None:
    with pytest.raises(InvalidField) as info:
        values.from_json(bad)
    assert info.value.field is not None and info.value.field.startswith("value")


def test_from_json_float_out_of_range_is_a_bad_request() -> None:
    with pytest.raises(BadRequest):
        values.from_json({"float": 10**400})


def test_to_json_forms() -> None:
    iri_of = {3: "http://example.org/x", 4: "_:b0123456789abcdef_n"}
    assert values.to_json(values.ref(3), iri_of) == "http://example.org/x"
    assert values.to_json(values.ref(4), iri_of) == "_:b0123456789abcdef_n"
    assert values.to_json(values.string("s"), iri_of) == "s"
    assert values.to_json(values.integer(-3), iri_of) == -3
    assert values.to_json(values.double(0.25), iri_of) == 0.25
    for lexical in ("NaN", "INF", "-INF"):  # [changed from DM §2.1]: null lost the value
        assert values.to_json(values.literal(lexical, values.XSD_DOUBLE), iri_of) == {
            "value": lexical,
            "datatype": values.XSD_DOUBLE,
        }
    assert values.to_json(values.literal("1e3", values.XSD_DOUBLE), iri_of) == {
        "value": "1e3",
        "datatype": values.XSD_DOUBLE,
    }
    assert values.to_json(values.integer(2**64), iri_of) == {
        "value": str(2**64),
        "datatype": values.XSD_INTEGER,
    }
    assert values.to_json(values.boolean(True), iri_of) is True
    assert values.to_json(values.lang_string("v", "en"), iri_of) == {"value": "v", "lang": "en"}
    assert values.to_json(values.literal("01.50", XSD + "decimal"), iri_of) == {
        "value": "01.50",
        "datatype": XSD + "decimal",
    }
    assert values.to_json(bytes([values.TAG_BYTES]) + b"abc", iri_of) == "<3 bytes>"


@pytest.mark.parametrize(
    "value",
    [
        {"str": "x"},
        {"int": 9},
        {"float": -0.5},
        {"bool": True},
        {"value": "v", "lang": "en"},
        {"value": "2026-01-01", "datatype": XSD + "date"},
    ],
)
def test_json_round_trip(value: dict[str, Any]) -> None:
    encoded = values.from_json(value).encoded
    assert encoded is not None
    out = values.to_json(encoded, {})
    again = values.from_json(out if isinstance(out, dict) else {next(iter(value)): out})
    assert again.encoded == encoded


def test_shape_helpers() -> None:
    assert values.looks_like_iri("http://example.org/x")
    assert values.looks_like_iri("urn://x")
    assert not values.looks_like_iri("see http://example.org/x")
    assert not values.looks_like_iri("urn:isbn:123")
    assert not values.looks_like_iri("plain")
    assert values.check_iri("urn:isbn:123", "f") == "urn:isbn:123"
    for bad in ("", "  ", "noscheme", "http://x/<y>", 'http://x/"', "http://x/ y", None, 5):
        with pytest.raises(InvalidField, match="'f'"):
            values.check_iri(bad, "f")
