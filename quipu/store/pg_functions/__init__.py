"""The SPARQL value functions of ``sqlfunctions`` as PostgreSQL server functions.

SQLite gets them as Python UDFs on every connection; PostgreSQL runs no Python, so each one
the compiler may call is written here in SQL or PL/pgSQL over the same tagged encoding
(``values``: tag byte, then the payload; integers and doubles little-endian), with the same
answers, NULL included for a SPARQL error. ``tests/store/test_pg_functions.py`` checks each
against its Python twin.

The statements live in one module per family, each an ordered ``STATEMENTS`` dict with
``@NAME@`` placeholders for the constants below: ``encoding``, ``numbers``, ``dates``,
``scalars``, ``aggregates`` and ``strings``, in that (dependency) order. ``FUNCTIONS`` joins
them in that order with the placeholders filled in.

They are installed when a store opens (``install``), like SQLite's registration, rather than
by a migration: the set grows with the compiler, and ``CREATE OR REPLACE`` under the write
lock is idempotent. ``VERSION`` marks the installed set; bump it whenever a body changes. A
role that may not create functions still gets a working store: the compiler then leaves every
query that needs one to rdflib's evaluator.

Internal helpers are named ``quipu_*``. Where the Python twin raises (a truncated encoding,
a decimal beyond 28 integral digits) the PostgreSQL one answers NULL. Text containing NUL
cannot be a PostgreSQL ``text``, so a string function given one answers NULL too. No body
uses an exception block: that is a subtransaction, which a parallel query refuses.

Not here: ``q_call`` (a Python callback per row), and ``q_regex2/3`` and ``q_replace3/4``
(Python's ``re`` and PostgreSQL's regular expressions differ in syntax and matching). For REGEX
and REPLACE with constant arguments in the subsets of ``pg_regex``, ``q_pgregex`` and
``q_pgreplace`` take their translations.
"""

from __future__ import annotations

from typing import Any, Final

from quipu.store import sqlfunctions, values
from quipu.store.pg_functions import aggregates, dates, encoding, numbers, scalars, strings

__all__ = ["DIGIT_ZEROS", "FUNCTIONS", "VERSION", "install", "installed_version", "names"]

VERSION: Final = 7

_X: Final = values.XSD
_INTEGER_TYPES_SQL: Final = ", ".join(f"'{t}'" for t in sorted(values._INTEGER_TYPES | {values.XSD_INTEGER}))
_NUMERIC_TYPES_SQL: Final = f"{_INTEGER_TYPES_SQL}, '{_X}decimal', '{_X}float', '{_X}double'"
# The lexical grammars of ``values`` (what ingestion accepts), anchored.
_INTEGER_RE: Final = r"^[+-]?[0-9]+$"
_DECIMAL_RE: Final = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$"
_DOUBLE_RE: Final = r"^([+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?INF|NaN)$"

# The first code point of each run of ten decimal digits (Unicode category Nd, 14.0): what
# Python's ``\d`` and ``int()`` read as digits. The test checks it against ``unicodedata``.
DIGIT_ZEROS: Final = (
    0x30,
    0x660,
    0x6F0,
    0x7C0,
    0x966,
    0x9E6,
    0xA66,
    0xAE6,
    0xB66,
    0xBE6,
    0xC66,
    0xCE6,
    0xD66,
    0xDE6,
    0xE50,
    0xED0,
    0xF20,
    0x1040,
    0x1090,
    0x17E0,
    0x1810,
    0x1946,
    0x19D0,
    0x1A80,
    0x1A90,
    0x1B50,
    0x1BB0,
    0x1C40,
    0x1C50,
    0xA620,
    0xA8D0,
    0xA900,
    0xA9D0,
    0xA9F0,
    0xAA50,
    0xABF0,
    0xFF10,
    0x104A0,
    0x10D30,
    0x11066,
    0x110F0,
    0x11136,
    0x111D0,
    0x112F0,
    0x11450,
    0x114D0,
    0x11650,
    0x116C0,
    0x11730,
    0x118E0,
    0x11950,
    0x11C50,
    0x11D50,
    0x11DA0,
    0x16A60,
    0x16AC0,
    0x16B50,
    0x1D7CE,
    0x1D7D8,
    0x1D7E2,
    0x1D7EC,
    0x1D7F6,
    0x1E140,
    0x1E2F0,
    0x1E950,
    0x1FBF0,
)


def _digit_class() -> str:
    return "".join(f"{chr(z)}-{chr(z + 9)}" for z in DIGIT_ZEROS)


def _sub(sql: str) -> str:
    return (
        sql.replace("@INTEGER_TYPES@", _INTEGER_TYPES_SQL)
        .replace("@NUMERIC_TYPES@", _NUMERIC_TYPES_SQL)
        .replace("@INTEGER_RE@", _INTEGER_RE)
        .replace("@DECIMAL_RE@", _DECIMAL_RE)
        .replace("@DOUBLE_RE@", _DOUBLE_RE)
        .replace("@XSD@", _X)
        .replace("@DIGIT@", "[" + _digit_class() + "]")
        .replace("@DIGIT_ZEROS@", ",".join(str(z) for z in DIGIT_ZEROS))
        .replace("@MAX_EXACT_DIGITS@", str(sqlfunctions.MAX_EXACT_DIGITS))
    )


# name -> the statement creating it, helpers before their users (SQL bodies are checked at
# creation), so the families go in dependency order. The q_* names match sqlfunctions
# (SCALARS, AGGREGATES).
_FAMILIES: Final[tuple[dict[str, str], ...]] = (
    encoding.STATEMENTS,
    numbers.STATEMENTS,
    dates.STATEMENTS,
    scalars.STATEMENTS,
    aggregates.STATEMENTS,
    strings.STATEMENTS,
)

FUNCTIONS: Final[dict[str, str]] = {name: _sub(sql) for family in _FAMILIES for name, sql in family.items()}

_MARKER: Final = "quipu_functions_version"


def _marker_sql() -> str:
    return (
        f"CREATE OR REPLACE FUNCTION {_MARKER}() RETURNS integer "
        f"LANGUAGE sql IMMUTABLE AS $$ SELECT {VERSION} $$"
    )


def installed_version(cursor: Any) -> int | None:
    cursor.execute(
        "SELECT 1 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE p.proname = %s AND n.nspname = current_schema()",
        (_MARKER,),
    )
    if cursor.fetchone() is None:
        return None
    cursor.execute(f"SELECT {_MARKER}()")
    row = cursor.fetchone()
    return None if row is None else int(row[0])


def install(cursor: Any) -> None:
    """Create or replace every function, then the version marker (inside the caller's write)."""
    for statement in FUNCTIONS.values():
        cursor.execute(statement)
    cursor.execute(_marker_sql())


def names() -> frozenset[str]:
    return frozenset(FUNCTIONS)
