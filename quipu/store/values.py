"""The tagged byte encoding of statement values (DM §2) and its mappings.

Two values are equal exactly when their encodings are equal, so retraction, deduplication and
pattern matching compare bytes. Literal encodings do not depend on the term dictionary; only a
``Ref`` needs a term id.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
from dataclasses import dataclass
from typing import Any, Final

from quipu.errors import BadLiteral, InvalidField

XSD: Final = "http://www.w3.org/2001/XMLSchema#"
RDF: Final = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
XSD_STRING: Final = XSD + "string"
XSD_INTEGER: Final = XSD + "integer"
XSD_DOUBLE: Final = XSD + "double"
XSD_BOOLEAN: Final = XSD + "boolean"
XSD_BASE64: Final = XSD + "base64Binary"
RDF_LANGSTRING: Final = RDF + "langString"

TAG_REF, TAG_STR, TAG_INT, TAG_FLOAT, TAG_BOOL, TAG_BYTES, TAG_LANG, TAG_TYPED = range(8)

INTEGER_LEX: Final = re.compile(r"[+-]?[0-9]+")
_DECIMAL_LEX = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)")
_DOUBLE_LEX = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN")
_INTEGER_TYPES = frozenset(
    XSD + t
    for t in (
        "long",
        "int",
        "short",
        "byte",
        "nonNegativeInteger",
        "nonPositiveInteger",
        "positiveInteger",
        "negativeInteger",
        "unsignedLong",
        "unsignedInt",
        "unsignedShort",
        "unsignedByte",
    )
)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_REF_PREFIX: Final = bytes([TAG_REF])
_STR_PREFIX: Final = bytes([TAG_STR])
_pack_q = struct.Struct("<q").pack
_pack_d = struct.Struct("<d").pack


def encodable(text: str) -> bool:
    """Whether ``text`` has a UTF-8 form (a lone surrogate has none, so no stored term is it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def digest(data: bytes) -> bytes:
    """The 16-byte digest that indexes stand on (first half of SHA-256)."""
    return hashlib.sha256(data).digest()[:16]


def ref(term_id: int) -> bytes:
    return _REF_PREFIX + _pack_q(term_id)


def ref_id(value: bytes) -> int | None:
    """The term id of a ``Ref`` encoding, else None."""
    if value[0] == TAG_REF:
        return int(struct.unpack_from("<q", value, 1)[0])
    return None


def string(text: str) -> bytes:
    return _STR_PREFIX + text.encode("utf-8")


def integer(n: int) -> bytes:
    """An ``xsd:integer`` of any size: ``Int`` when it fits 64 bits, else ``Typed`` (see ``literal``)."""
    if _I64_MIN <= n <= _I64_MAX:
        return bytes([TAG_INT]) + _pack_q(n)
    try:
        text = str(n)
    except ValueError:  # past Python's int/str conversion limit (sys.get_int_max_str_digits)
        raise BadLiteral(f"bad integer literal: an integer of {n.bit_length()} bits is too long") from None
    return _with_header(TAG_TYPED, XSD_INTEGER, text)


def _integer_lexical(lexical: str) -> bytes:
    """A well-formed xsd:integer lexical form, canonicalised (no ``+``, no leading zeros)
    without ``int()`` when it is long, so its size costs linear time."""
    digits = lexical.lstrip("+-").lstrip("0") or "0"
    if len(digits) <= 19:  # every i64 has at most 19 digits
        return integer(-int(digits) if lexical[0] == "-" else int(digits))
    return _with_header(TAG_TYPED, XSD_INTEGER, "-" + digits if lexical[0] == "-" else digits)


def double(x: float) -> bytes:
    return bytes([TAG_FLOAT]) + _pack_d(x)


def boolean(b: bool) -> bytes:
    return bytes([TAG_BOOL, 1 if b else 0])


def _with_header(tag: int, header: str, lexical: str) -> bytes:
    head = header.encode("utf-8")
    if len(head) > 0xFFFF:
        raise BadLiteral("language tag or datatype IRI longer than 65535 bytes")
    return bytes([tag]) + struct.pack("<H", len(head)) + head + lexical.encode("utf-8")


_BOOLEAN_LEX: Final = {"true": True, "1": True, "false": False, "0": False}


def lang_string(lexical: str, lang: str) -> bytes:
    # Tags compare case-insensitively (BCP 47); the parser lower-cases them, so everyone does.
    return _with_header(TAG_LANG, lang.lower(), lexical)


def literal(lexical: str, datatype: str | None = None, lang: str | None = None) -> bytes:
    """Encode an RDF literal the way ingestion does (DM §2, rules 1-3)."""
    if lang:
        return lang_string(lexical, lang)
    if datatype is None or datatype == XSD_STRING:
        return string(lexical)
    # [changed from DM §2] xsd:integer is unbounded: one outside 64 bits is stored exactly, as
    # Typed with its canonical lexical form, instead of being refused. So an integer is still
    # canonicalised whatever its size ("+007" and "7" are one value), and equal values have
    # equal bytes.
    if datatype == XSD_INTEGER:
        if not INTEGER_LEX.fullmatch(lexical):
            raise BadLiteral(f'bad integer literal: "{lexical}" is not an xsd:integer')
        return _integer_lexical(lexical)
    # [changed from DM §2] An xsd:double keeps the lexical form it was written with: Float only
    # when that form is the canonical one ``double_lexical`` prints back ("1.5", "1E16",
    # "INF", "NaN"), Typed otherwise ("1e3", "1.5E0", "1e999"). The encoding stays a function of
    # (lexical, datatype) alone, and a term never changes on the way in ("1e999" is not "INF").
    if datatype == XSD_DOUBLE:
        if not _DOUBLE_LEX.fullmatch(lexical):
            raise BadLiteral(f'bad double literal: "{lexical}" is not an xsd:double')
        x = float(lexical.replace("INF", "inf"))
        if double_lexical(x) == lexical:
            return double(x)
        return _with_header(TAG_TYPED, XSD_DOUBLE, lexical)
    if datatype == XSD_BOOLEAN and lexical in _BOOLEAN_LEX:
        return boolean(_BOOLEAN_LEX[lexical])
    # [changed from DM §2] An ill-formed xsd:boolean is kept verbatim as Typed rather than read
    # as false: nothing is lost, and SHACL's sh:datatype can still see that it is ill-formed.
    if datatype == XSD + "decimal" or datatype in _INTEGER_TYPES:
        pattern = INTEGER_LEX if datatype in _INTEGER_TYPES else _DECIMAL_LEX
        if not pattern.fullmatch(lexical):
            raise BadLiteral(f'bad numeric literal: "{lexical}" is not a valid <{datatype}>')
    elif datatype == XSD + "float" and not _DOUBLE_LEX.fullmatch(lexical):
        raise BadLiteral(f'bad numeric literal: "{lexical}" is not a valid <{datatype}>')
    return _with_header(TAG_TYPED, datatype, lexical)


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded value: ``kind`` is one of ref/str/int/float/bool/bytes/lang/typed."""

    kind: str
    value: Any  # term id, text, number, bool or bytes
    lexical: str = ""
    lang: str | None = None
    datatype: str | None = None


def decode(value: bytes) -> Decoded:
    tag = value[0]
    if tag == TAG_REF:
        return Decoded("ref", struct.unpack_from("<q", value, 1)[0])
    if tag == TAG_STR:
        text = value[1:].decode("utf-8")
        return Decoded("str", text, text)
    if tag == TAG_INT:
        n = struct.unpack_from("<q", value, 1)[0]
        return Decoded("int", n, str(n), datatype=XSD_INTEGER)
    if tag == TAG_FLOAT:
        x = struct.unpack_from("<d", value, 1)[0]
        return Decoded("float", x, double_lexical(x), datatype=XSD_DOUBLE)
    if tag == TAG_BOOL:
        b = value[1] == 1
        return Decoded("bool", b, "true" if b else "false", datatype=XSD_BOOLEAN)
    if tag == TAG_BYTES:
        return Decoded("bytes", value[1:], datatype=XSD_BASE64)
    if tag in (TAG_LANG, TAG_TYPED):
        (n,) = struct.unpack_from("<H", value, 1)
        header = value[3 : 3 + n].decode("utf-8")
        lexical = value[3 + n :].decode("utf-8")
        if tag == TAG_LANG:
            return Decoded("lang", lexical, lexical, lang=header, datatype=RDF_LANGSTRING)
        return Decoded("typed", lexical, lexical, datatype=header)
    raise ValueError(f"unknown value tag {tag}")


def double_lexical(x: float) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "INF" if x > 0 else "-INF"
    return repr(x).replace("e+", "E").replace("e", "E")


_NUMERIC_TYPED: Final = _INTEGER_TYPES | {XSD_INTEGER, XSD_DOUBLE, XSD + "decimal", XSD + "float"}


def numeric(value: bytes) -> float | None:
    """The numeric shadow of a value, for ordering and comparison in SQL; None if not a number.

    A double approximates an integer or decimal: the shadow orders values only where it
    differs, and SQL asks the exact comparison (``sqlfunctions``) where two shadows are equal.
    """
    tag = value[0]
    if tag == TAG_INT:
        return float(struct.unpack_from("<q", value, 1)[0])
    if tag == TAG_FLOAT:
        x = struct.unpack_from("<d", value, 1)[0]
        return None if math.isnan(x) else float(x)
    if tag == TAG_TYPED:
        d = decode(value)
        if d.datatype in _NUMERIC_TYPED:
            try:
                x = float(d.lexical.replace("INF", "inf"))
            except ValueError:
                return None
            return None if math.isnan(x) else x
    return None


def looks_like_iri(text: str) -> bool:
    """The shape guard's test for a bare string that was probably meant as an IRI."""
    return "://" in text and not any(c.isspace() for c in text)


_IRI_FORBIDDEN = re.compile(r'[\x00-\x20<>"{}|^`\\]')
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


_BLANK_KEY = re.compile(r"_:[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def check_iri(text: object, field: str, *, blank: bool = False) -> str:
    """An absolute IRI from a request field, or 400 naming the field.

    ``blank=True`` also accepts a stored blank-node key (``_:…``) where a node is meant.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidField(f"'{field}' must be a non-empty IRI", field=field)
    if blank and _BLANK_KEY.fullmatch(text):
        return text
    if not _SCHEME.match(text) or _IRI_FORBIDDEN.search(text):
        raise InvalidField(f"'{field}' is not an absolute IRI: {text!r}", field=field)
    return text


@dataclass(frozen=True, slots=True)
class ValueInput:
    """A JSON-surface object value (DM §2.1): an IRI to resolve, or literal bytes."""

    iri: str | None = None
    encoded: bytes | None = None
    bare_string: bool = False


def from_json(value: object, field: str = "value") -> ValueInput:
    """Parse the JSON input forms of DM §2.1."""
    if isinstance(value, str):
        return ValueInput(encoded=string(value), bare_string=True)
    if isinstance(value, dict):
        keys = set(value)
        if keys == {"iri"} and isinstance(value["iri"], str):
            return ValueInput(iri=check_iri(value["iri"], f"{field}.iri", blank=True))
        if keys == {"str"} and isinstance(value["str"], str):
            return ValueInput(encoded=string(value["str"]))
        if keys == {"int"} and isinstance(value["int"], int) and not isinstance(value["int"], bool):
            return ValueInput(encoded=integer(value["int"]))
        if (
            keys == {"float"}
            and isinstance(value["float"], int | float)
            and not isinstance(value["float"], bool)
        ):
            try:
                return ValueInput(encoded=double(float(value["float"])))
            except OverflowError:
                raise InvalidField(f"'{field}.float' is out of range for a double", field=field) from None
        if keys == {"bool"} and isinstance(value["bool"], bool):
            return ValueInput(encoded=boolean(value["bool"]))
        if keys == {"value", "lang"} and isinstance(value["value"], str) and isinstance(value["lang"], str):
            return ValueInput(encoded=lang_string(value["value"], value["lang"]))
        if (
            keys == {"value", "datatype"}
            and isinstance(value["value"], str)
            and isinstance(value["datatype"], str)
        ):
            return ValueInput(encoded=literal(value["value"], value["datatype"]))
    raise InvalidField(
        f'\'{field}\' must be a string or one of {{"iri"}}, {{"str"}}, {{"int"}}, {{"float"}}, '
        '{"bool"}, {"value","lang"}, {"value","datatype"}',
        field=field,
    )


def to_json(value: bytes, iri_of: dict[int, str]) -> object:
    """The JSON output form of a stored value (DM §2.1); ``iri_of`` resolves Ref ids.

    [changed from DM §2.1] A non-finite double is ``{"value": "NaN"|"INF"|"-INF", "datatype":
    xsd:double}``, not ``null``: null loses the value, and the typed form reads back as it was.
    A JSON number is written only for an ``Int`` or a finite ``Float``, whose ``{"int"}`` /
    ``{"float"}`` input gives the same value back; an integer past 64 bits or a double kept in
    its written lexical form is Typed, and stays ``{"value", "datatype"}``.
    """
    d = decode(value)
    if d.kind == "ref":
        return iri_of[d.value]
    if d.kind in ("str", "int", "bool"):
        return d.value
    if d.kind == "float" and math.isfinite(d.value):
        return d.value
    if d.kind == "lang":
        return {"value": d.lexical, "lang": d.lang}
    if d.kind in ("typed", "float"):
        return {"value": d.lexical, "datatype": d.datatype}
    return f"<{len(d.value)} bytes>"
