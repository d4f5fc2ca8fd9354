"""The SPARQL value functions of ``sqlfunctions`` as PostgreSQL server functions.

SQLite gets them as Python UDFs on every connection; PostgreSQL runs no Python, so each one
the compiler may call is written here in SQL or PL/pgSQL over the same tagged encoding
(``values``: tag byte, then the payload; integers and doubles little-endian), with the same
answers, NULL included for a SPARQL error. ``tests/store/test_pg_functions.py`` checks each
against its Python twin.

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

from quipu.store import values

VERSION: Final = 4

_X: Final = values.XSD
_INTEGER_TYPES_SQL: Final = ", ".join(f"'{t}'" for t in sorted(values._INTEGER_TYPES | {values.XSD_INTEGER}))
_NUMERIC_TYPES_SQL: Final = f"{_INTEGER_TYPES_SQL}, '{_X}decimal', '{_X}float'"
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
    )


# name -> the statement creating it, helpers before their users (SQL bodies are checked at
# creation). The q_* names match sqlfunctions (SCALARS, AGGREGATES).
_STATEMENTS: Final[dict[str, str]] = {
    # -- encoding and decoding ---------------------------------------------------------------
    # A 64-bit integer as 8 bytes, little-endian.
    "quipu_le8": r"""
CREATE OR REPLACE FUNCTION quipu_le8(n bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT substr(int8send(n), 8, 1) || substr(int8send(n), 7, 1) || substr(int8send(n), 6, 1) || substr(int8send(n), 5, 1) || substr(int8send(n), 4, 1) || substr(int8send(n), 3, 1) || substr(int8send(n), 2, 1) || substr(int8send(n), 1, 1)
$$""",
    # An integer literal's encoding: tag 2 and the 64-bit value, little-endian.
    "q_int": r"""
CREATE OR REPLACE FUNCTION q_int(n bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT '\x02'::bytea || quipu_le8(n) $$""",
    # Bytes 2..9 (after the tag) as a signed 64-bit little-endian integer; the caller checks length.
    "quipu_i64": r"""
CREATE OR REPLACE FUNCTION quipu_i64(b bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT ('x' || encode(substr(b, 9, 1) || substr(b, 8, 1) || substr(b, 7, 1) || substr(b, 6, 1)
          || substr(b, 5, 1) || substr(b, 4, 1) || substr(b, 3, 1) || substr(b, 2, 1), 'hex'))::bit(64)::bigint
$$""",
    # Bytes 2..9 as an IEEE double, rebuilt from its fields (a NaN keeps its sign, not its payload).
    "quipu_f64": r"""
CREATE OR REPLACE FUNCTION quipu_f64(b bytea) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  bits bigint := quipu_i64(b);
  e integer := ((bits >> 52) & 2047)::integer;
  m bigint := bits & 4503599627370495;
  x double precision;
BEGIN
  IF e = 2047 THEN
    x := CASE WHEN m = 0 THEN 'Infinity'::float8 ELSE 'NaN'::float8 END;
  ELSIF e = 0 THEN
    x := m::float8 * 2.0::float8 ^ (-1074);
  ELSE
    x := (m + 4503599627370496)::float8 * 2.0::float8 ^ (e - 1075);
  END IF;
  RETURN CASE WHEN bits < 0 THEN -x ELSE x END;
END $$""",
    "quipu_f64enc": r"""
CREATE OR REPLACE FUNCTION quipu_f64enc(x double precision) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT '\x03'::bytea || substr(float8send(x), 8, 1) || substr(float8send(x), 7, 1) || substr(float8send(x), 6, 1) || substr(float8send(x), 5, 1) || substr(float8send(x), 4, 1) || substr(float8send(x), 3, 1) || substr(float8send(x), 2, 1) || substr(float8send(x), 1, 1)
$$""",
    # The sign bit of a double (-0.0 and a negative NaN included).
    "quipu_f8neg": r"""
CREATE OR REPLACE FUNCTION quipu_f8neg(x double precision) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT get_byte(float8send(x), 0) >= 128 $$""",
    # UTF-8 bytes as text; NULL where Python's decode fails (or for NUL, which text cannot hold).
    "quipu_utf8": r"""
CREATE OR REPLACE FUNCTION quipu_utf8(b bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  t text;
BEGIN
  IF position('\x00'::bytea IN b) > 0 THEN
    RETURN NULL;
  END IF;
  -- Checked, not caught: an exception block is a subtransaction, which parallel queries forbid.
  -- Each byte as a Latin-1 character, matched against RFC 3629's well-formed sequences.
  t := convert_from(b, 'LATIN1');
  IF t !~ '^[\x01-\x7f]*$' AND t !~ ('^([\x01-\x7f]|[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]'
      '|[\xe1-\xec\xee\xef][\x80-\xbf]{2}|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}'
      '|[\xf1-\xf3][\x80-\xbf]{3}|\xf4[\x80-\x8f][\x80-\xbf]{2})*$') THEN
    RETURN NULL;
  END IF;
  RETURN convert_from(b, 'UTF8');
END $$""",
    # A string, language-tagged string or typed literal's encoding (values._with_header).
    "quipu_header": r"""
CREATE OR REPLACE FUNCTION quipu_header(tag integer, header text, lex text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN octet_length(convert_to(header, 'UTF8')) <= 65535 THEN
    set_byte('\x00'::bytea, 0, tag)
    || set_byte(set_byte('\x0000'::bytea, 0, octet_length(convert_to(header, 'UTF8')) % 256), 1,
                octet_length(convert_to(header, 'UTF8')) / 256)
    || convert_to(header, 'UTF8') || convert_to(lex, 'UTF8') END
$$""",
    "quipu_str": r"""
CREATE OR REPLACE FUNCTION quipu_str(lex text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT '\x01'::bytea || convert_to(lex, 'UTF8') $$""",
    # values.decode: the tag (NULL when Python cannot decode), the text and the lang/datatype.
    "quipu_dec": r"""
CREATE OR REPLACE FUNCTION quipu_dec(b bytea, OUT tag integer, OUT lex text, OUT hdr text)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  t integer;
  n integer;
BEGIN
  IF octet_length(b) = 0 THEN
    RETURN;
  END IF;
  t := get_byte(b, 0);
  IF t IN (0, 2, 3) THEN
    IF octet_length(b) >= 9 THEN
      tag := t;
    END IF;
  ELSIF t = 1 THEN
    lex := quipu_utf8(substr(b, 2));
    IF lex IS NOT NULL THEN
      tag := 1;
    END IF;
  ELSIF t = 4 THEN
    IF octet_length(b) >= 2 THEN
      tag := 4;
    END IF;
  ELSIF t = 5 THEN
    tag := 5;
  ELSIF t IN (6, 7) AND octet_length(b) >= 3 THEN
    n := get_byte(b, 1) + 256 * get_byte(b, 2);
    hdr := quipu_utf8(substr(b, 4, n));
    lex := quipu_utf8(substr(b, 4 + n));
    IF hdr IS NOT NULL AND lex IS NOT NULL THEN
      tag := t;
    END IF;
  END IF;
END $$""",
    # -- numbers -------------------------------------------------------------------------------
    # numeric -> double as Python's float(): overflow is an infinity, underflow a signed zero.
    "quipu_n2f_slow": r"""
CREATE OR REPLACE FUNCTION quipu_n2f_slow(n numeric, neg boolean) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  -- PostgreSQL raises where C rounds to an infinity (from 2^1024 - 2^970 up) or to zero
  -- (2^-1075 and below, the tie going to the even zero).
  IF abs(n) >= 2::numeric ^ 1024 - 2::numeric ^ 970 THEN
    RETURN CASE WHEN neg THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END;
  ELSIF abs(n) * 2::numeric ^ 1075 <= 1 THEN
    RETURN CASE WHEN neg THEN '-0'::float8 ELSE '0'::float8 END;
  END IF;
  RETURN n::float8;
END $$""",
    "quipu_n2f": r"""
CREATE OR REPLACE FUNCTION quipu_n2f(n numeric, neg boolean) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN n = 0 THEN CASE WHEN neg THEN '-0'::float8 ELSE '0'::float8 END
              WHEN abs(n) BETWEEN 1e-300 AND 1e300 THEN n::float8
              ELSE quipu_n2f_slow(n, neg) END
$$""",
    # A well-formed xsd:double lexical form as Python's float().
    "quipu_lexf": r"""
CREATE OR REPLACE FUNCTION quipu_lexf(lex text) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN lex = 'NaN' THEN 'NaN'::float8
              WHEN lex IN ('INF', '+INF') THEN 'Infinity'::float8
              WHEN lex = '-INF' THEN '-Infinity'::float8
              ELSE quipu_n2f(lex::numeric, left(lex, 1) = '-') END
$$""",
    # values.double_lexical: Python's repr() of the shortest round-trip digits, E for e.
    "quipu_dlex": r"""
CREATE OR REPLACE FUNCTION quipu_dlex(x double precision) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET extra_float_digits = 1 AS $$
DECLARE
  t text;
  neg boolean;
  mant text;
  ex integer := 0;
  ip text;
  d text;
  dp integer;
  cand numeric;
BEGIN
  IF x = 'NaN'::float8 THEN
    RETURN 'NaN';
  ELSIF x = 'Infinity'::float8 THEN
    RETURN 'INF';
  ELSIF x = '-Infinity'::float8 THEN
    RETURN '-INF';
  END IF;
  t := x::text;
  neg := left(t, 1) = '-';
  IF neg THEN
    t := substr(t, 2);
  END IF;
  IF position('e' IN t) > 0 THEN
    mant := split_part(t, 'e', 1);
    ex := split_part(t, 'e', 2)::integer;
  ELSE
    mant := t;
  END IF;
  ip := split_part(mant, '.', 1);
  d := ip || split_part(mant, '.', 2);
  dp := length(ip) + ex - (length(d) - length(ltrim(d, '0')));
  d := rtrim(ltrim(d, '0'), '0');
  -- PostgreSQL's shortest digits are sometimes one longer than Python's at a rounding tie:
  -- take the exact value rounded to fewer digits while it still reads back as x.
  WHILE length(d) > 1 LOOP
    -- x rounded to one digit fewer: the digits' rounding is x's unless they end in a 5
    IF right(d, 1) = '5' THEN
      cand := quipu_round_sig(abs(quipu_f2n(x)), length(d) - 1, false);
    ELSE
      cand := quipu_round_sig(('0.' || d)::numeric, length(d) - 1, false) * quipu_pow10(dp);
    END IF;
    EXIT WHEN quipu_n2f(cand, false) <> abs(x);
    t := rtrim(replace(ltrim(cand::text, '0'), '.', ''), '0');
    dp := quipu_exp10(cand) + 1;
    d := ltrim(t, '0');
  END LOOP;
  IF d = '' THEN
    t := '0.0';
  ELSIF dp <= -4 OR dp > 16 THEN
    t := left(d, 1) || CASE WHEN length(d) > 1 THEN '.' || substr(d, 2) ELSE '' END || 'E'
         || CASE WHEN dp - 1 < 0 THEN '-' ELSE '' END || CASE WHEN abs(dp - 1) < 10 THEN '0' ELSE '' END
         || abs(dp - 1)::text;
  ELSIF dp <= 0 THEN
    t := '0.' || repeat('0', -dp) || d;
  ELSIF dp < length(d) THEN
    t := left(d, dp) || '.' || substr(d, dp + 1);
  ELSE
    t := d || repeat('0', dp - length(d)) || '.0';
  END IF;
  RETURN CASE WHEN neg THEN '-' || t ELSE t END;
END $$""",
    "quipu_pow10": r"""
CREATE OR REPLACE FUNCTION quipu_pow10(k integer) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT ('1e' || k)::numeric $$""",
    # floor(log10(x)) of a positive numeric, exactly (from its digits).
    "quipu_exp10": r"""
CREATE OR REPLACE FUNCTION quipu_exp10(x numeric) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN x >= 1 THEN length(split_part(x::text, '.', 1)) - 1
              ELSE -(length(split_part(x::text, '.', 2)) - length(ltrim(split_part(x::text, '.', 2), '0')) + 1)
         END
$$""",
    # x rounded to ``digits`` significant digits, half to even. ``sticky``: the true value is a
    # little larger in magnitude than ``x`` (digits were cut off).
    "quipu_round_sig": r"""
CREATE OR REPLACE FUNCTION quipu_round_sig(x numeric, digits integer, sticky boolean) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  ax numeric := abs(x);
  s integer;
  t numeric;
  r numeric;
  half numeric;
BEGIN
  IF x = 0 THEN
    RETURN x;
  END IF;
  s := digits - 1 - quipu_exp10(ax);
  t := trunc(ax, s);
  IF t = ax AND NOT sticky THEN
    RETURN x;
  END IF;
  r := ax - t;
  half := 5 * quipu_pow10(-s - 1);
  IF r > half OR (r = half AND (sticky OR mod(trunc(t * quipu_pow10(s)), 2) = 1)) THEN
    t := t + quipu_pow10(-s);
  END IF;
  RETURN CASE WHEN x < 0 THEN -t ELSE t END;
END $$""",
    # Python's decimal context: 28 significant digits, half to even.
    "quipu_dround": r"""
CREATE OR REPLACE FUNCTION quipu_dround(x numeric, sticky boolean) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_round_sig(x, 28, sticky) $$""",
    # The exact value of a finite double (Python compares Decimal and float exactly).
    "quipu_f2n": r"""
CREATE OR REPLACE FUNCTION quipu_f2n(x double precision) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  bits bigint := ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint;
  e integer := ((bits >> 52) & 2047)::integer;
  m numeric := bits & 4503599627370495;
  ex integer;
  r numeric;
BEGIN
  IF e = 0 THEN
    ex := -1074;
  ELSE
    m := m + 4503599627370496;
    ex := e - 1075;
  END IF;
  r := CASE WHEN ex >= 0 THEN m * 2::numeric ^ ex ELSE m * 5::numeric ^ (-ex) * quipu_pow10(ex) END;
  RETURN CASE WHEN bits < 0 THEN -r ELSE r END;
END $$""",
    # a / b (b <> 0) correctly rounded to 28 significant digits, as Python's Decimal does.
    "quipu_ddiv": r"""
CREATE OR REPLACE FUNCTION quipu_ddiv(a numeric, b numeric) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  s integer;
  n numeric;
  q numeric;
  r numeric;
BEGIN
  IF a = 0 THEN
    RETURN 0;
  END IF;
  s := 30 - quipu_exp10(abs(a)) + quipu_exp10(abs(b));
  n := abs(a) * quipu_pow10(s);
  q := div(n, abs(b));
  r := n - q * abs(b);
  r := quipu_dround(q * quipu_pow10(-s), r <> 0);
  RETURN CASE WHEN (a < 0) <> (b < 0) THEN -r ELSE r END;
END $$""",
    # sqlfunctions._decimal_lexical (NULL where Python's quantize overflows its precision).
    "quipu_declex": r"""
CREATE OR REPLACE FUNCTION quipu_declex(x numeric, negzero boolean) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN x <> trunc(x) THEN trim_scale(x)::text
              WHEN abs(x) >= 1e28 THEN NULL
              ELSE CASE WHEN x < 0 OR (x = 0 AND negzero) THEN '-' ELSE '' END || abs(trunc(x))::text || '.0'
         END
$$""",
    # A value's number: kind 0 integer, 1 decimal, 2 float, 3 double (NULL: not a number), the
    # numeric (integer, decimal) or double (float, double) and its sign bit; with the decoding.
    "quipu_val": r"""
CREATE OR REPLACE FUNCTION quipu_val(b bytea, OUT tag integer, OUT lex text, OUT hdr text, OUT k integer,
                                     OUT n numeric, OUT f double precision, OUT sb boolean)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  IF octet_length(b) >= 9 AND get_byte(b, 0) IN (2, 3) THEN
    tag := get_byte(b, 0);  -- the common numbers need no text decoding
  ELSE
    d := quipu_dec(b);
    tag := d.tag;
    lex := d.lex;
    hdr := d.hdr;
  END IF;
  IF tag = 2 THEN
    k := 0;
    n := quipu_i64(b);
    sb := n < 0;
  ELSIF tag = 3 THEN
    k := 3;
    f := quipu_f64(b);
    sb := get_byte(b, 8) >= 128;
  ELSIF tag = 7 THEN
    IF hdr IN (@INTEGER_TYPES@) THEN
      IF lex ~ '@INTEGER_RE@' THEN
        k := 0;
        n := lex::numeric;
        sb := n < 0;
      END IF;
    ELSIF hdr = '@XSD@decimal' THEN
      IF lex ~ '@DECIMAL_RE@' THEN
        k := 1;
        n := lex::numeric;
        sb := left(lex, 1) = '-';
      END IF;
    ELSIF hdr = '@XSD@float' THEN
      IF lex ~ '@DOUBLE_RE@' THEN
        k := 2;
        f := quipu_lexf(lex);
        sb := left(lex, 1) = '-';
      END IF;
    END IF;
  END IF;
END $$""",
    # sqlfunctions.encode_num; ``negzero``: a decimal zero is -0.
    "quipu_enc": r"""
CREATE OR REPLACE FUNCTION quipu_enc(k integer, n numeric, f double precision, negzero boolean) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE k
    WHEN 0 THEN CASE WHEN n BETWEEN -9223372036854775808 AND 9223372036854775807 THEN q_int(n::bigint) END
    WHEN 1 THEN quipu_header(7, '@XSD@decimal', quipu_declex(n, coalesce(negzero, false)))
    WHEN 2 THEN quipu_header(7, '@XSD@float', quipu_dlex(f))
    WHEN 3 THEN quipu_f64enc(f)
  END
$$""",
    # p op q in IEEE arithmetic: PostgreSQL raises on overflow and underflow where C does not.
    "quipu_fop": r"""
CREATE OR REPLACE FUNCTION quipu_fop(op text, p double precision, q double precision) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  h double precision;
  a numeric;
  b numeric;
  s integer;
  r numeric;
  neg boolean;
BEGIN
  -- PostgreSQL raises on overflow and underflow where C gives an infinity or a zero, so results
  -- that could overflow or underflow are computed exactly and rounded once.
  IF p = 'NaN'::float8 OR q = 'NaN'::float8 OR abs(p) = 'Infinity'::float8 OR abs(q) = 'Infinity'::float8
     OR ((p = 0 OR abs(p) BETWEEN 1e-150 AND 1e150) AND (q = 0 OR abs(q) BETWEEN 1e-150 AND 1e150))
     OR (op IN ('+', '-') AND (abs(p) < 1e300 OR abs(q) < 1e300)) THEN
    RETURN CASE op WHEN '+' THEN p + q WHEN '-' THEN p - q WHEN '*' THEN p * q ELSE p / q END;
  END IF;
  IF op IN ('+', '-') THEN  -- both huge: halving is exact, and rounding commutes with it
    h := CASE op WHEN '+' THEN p / 2 + q / 2 ELSE p / 2 - q / 2 END;
    IF abs(h) > 8.98846567431158e307 THEN
      RETURN CASE WHEN h < 0 THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END;
    END IF;
    RETURN h * 2;
  END IF;
  neg := quipu_f8neg(p) <> quipu_f8neg(q);
  a := abs(quipu_f2n(p));
  b := abs(quipu_f2n(q));
  IF op = '*' THEN
    r := a * b;
  ELSIF a = 0 THEN
    r := 0;
  ELSE  -- 70 significant digits and a sticky last one: rounding to a double is then exact
    s := 70 - quipu_exp10(a) + quipu_exp10(b);
    r := div(a * quipu_pow10(s), b);
    IF r * b <> a * quipu_pow10(s) THEN
      r := r * 10 + 1;
      s := s + 1;
    END IF;
    r := r * quipu_pow10(-s);
  END IF;
  RETURN quipu_n2f(CASE WHEN neg THEN -r ELSE r END, neg);
END $$""",
    # Two numbers of kinds ka, kb promoted (sqlfunctions._promote): the kind, and both operands
    # as doubles (kind >= 2) or numerics.
    "quipu_promote": r"""
CREATE OR REPLACE FUNCTION quipu_promote(ka integer, na numeric, fa double precision, sa boolean,
                                         kb integer, nb numeric, fb double precision, sb boolean,
                                         OUT k integer, OUT p double precision, OUT q double precision)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
  k := greatest(ka, kb);
  IF k >= 2 THEN
    p := CASE WHEN ka >= 2 THEN fa ELSE quipu_n2f(na, sa) END;
    q := CASE WHEN kb >= 2 THEN fb ELSE quipu_n2f(nb, sb) END;
  END IF;
END $$""",
    # -- dates ---------------------------------------------------------------------------------
    # sqlfunctions._when: a dateTime (datetime.fromisoformat's extended forms) or date as a
    # number of seconds (UTC when ``aware``); ok is false where Python's parse fails.
    "quipu_when": r"""
CREATE OR REPLACE FUNCTION quipu_when(dt text, lex text, OUT ok boolean, OUT aware boolean, OUT key numeric)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  m text[];
  y integer;
  mo integer;
  d integer;
  h integer := 0;
  mi integer := 0;
  s integer := 0;
  us integer := 0;
  off integer := 0;
BEGIN
  ok := false;
  aware := false;
  IF dt = '@XSD@dateTime' THEN
    m := regexp_match(replace(lex, 'Z', '+00:00'),
      '^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:.([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?'
      '(?:([+-])([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?)?)?$');
    IF m IS NULL THEN
      RETURN;
    END IF;
    h := coalesce(m[4]::integer, 0);
    mi := coalesce(m[5]::integer, 0);
    s := coalesce(m[6]::integer, 0);
    us := coalesce(rpad(left(m[7], 6), 6, '0')::integer, 0);
    IF h > 23 OR mi > 59 OR s > 59 THEN
      RETURN;
    END IF;
    IF m[8] IS NOT NULL THEN
      aware := true;
      off := m[9]::integer * 3600 + m[10]::integer * 60 + coalesce(m[11]::integer, 0);
      IF off >= 86400 THEN
        RETURN;
      END IF;
      IF m[8] = '-' THEN
        off := -off;
      END IF;
    END IF;
  ELSIF dt = '@XSD@date' THEN
    IF length(lex) <> 10 THEN
      RETURN;
    END IF;
    m := regexp_match(lex, '^([0-9]{4})-([0-9]{2})-([0-9]{2})$');
    IF m IS NULL THEN
      RETURN;
    END IF;
  ELSE
    RETURN;
  END IF;
  y := m[1]::integer;
  mo := m[2]::integer;
  d := m[3]::integer;
  IF y < 1 OR mo < 1 OR mo > 12 OR d < 1
     OR d > extract(day FROM make_date(y, mo, 1) + interval '1 month' - interval '1 day') THEN
    RETURN;
  END IF;
  ok := true;
  key := (make_date(y, mo, d) - date '2000-01-01')::numeric * 86400 + h * 3600 + mi * 60 + s
         + us / 1000000.0 - off;
END $$""",
}

_STATEMENTS.update(
    {
        # -- scalars -----------------------------------------------------------------------
        "q_num": r"""
CREATE OR REPLACE FUNCTION q_num(v bytea) RETURNS double precision
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  IF octet_length(v) >= 9 AND get_byte(v, 0) = 2 THEN
    RETURN quipu_i64(v)::float8;  -- C's conversion rounds to nearest, as Python's float() does
  END IF;
  -- SQLite stores the Python twin's NaN as NULL, so NaN is NULL here too
  x := quipu_val(v);
  RETURN CASE WHEN x.k IN (0, 1) THEN quipu_n2f(x.n, x.sb) WHEN x.f <> 'NaN'::float8 THEN x.f END;
END $$""",
        "q_isnumeric": r"""
CREATE OR REPLACE FUNCTION q_isnumeric(v bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  x := quipu_val(v);
  RETURN CASE WHEN x.tag IS NULL THEN NULL WHEN x.k IS NULL THEN 0 ELSE 1 END;
END $$""",
        "q_isliteral": r"""
CREATE OR REPLACE FUNCTION q_isliteral(v bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  d := quipu_dec(v);
  RETURN CASE WHEN d.tag IS NULL THEN NULL WHEN d.tag = 0 THEN 0 ELSE 1 END;
END $$""",
        "q_ebv": r"""
CREATE OR REPLACE FUNCTION q_ebv(v bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  x := quipu_val(v);
  RETURN CASE
      WHEN x.tag IS NULL THEN NULL
      WHEN x.tag = 4 THEN CASE WHEN get_byte(v, 1) = 1 THEN 1 ELSE 0 END
      WHEN x.tag IN (1, 6) THEN CASE WHEN x.lex <> '' THEN 1 ELSE 0 END
      WHEN x.k >= 2 THEN CASE WHEN x.f = 0 OR x.f = 'NaN'::float8 THEN 0 ELSE 1 END
      WHEN x.k IS NOT NULL THEN CASE WHEN x.n = 0 THEN 0 ELSE 1 END
      WHEN x.tag = 7 AND x.hdr IN (@NUMERIC_TYPES@) THEN 0
    END;
END $$""",
        "q_bool": r"""
CREATE OR REPLACE FUNCTION q_bool(b bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN b <> 0 THEN '\x0401'::bytea ELSE '\x0400'::bytea END
$$""",
        "q_ref": r"""
CREATE OR REPLACE FUNCTION q_ref(id bigint) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT '\x00'::bytea || quipu_le8(id) $$""",
        "q_refid": r"""
CREATE OR REPLACE FUNCTION q_refid(v bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN octet_length(v) < 9 THEN NULL WHEN get_byte(v, 0) = 0 THEN quipu_i64(v) END
$$""",
        "q_simple": r"""
CREATE OR REPLACE FUNCTION q_simple(t text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_str(t) $$""",
        "q_iristr": r"""
CREATE OR REPLACE FUNCTION q_iristr(iri text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN left(iri, 2) = '_:' THEN NULL ELSE quipu_str(iri) END
$$""",
        "q_lex": r"""
CREATE OR REPLACE FUNCTION q_lex(v bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  d := quipu_dec(v);
  RETURN CASE d.tag
      WHEN 1 THEN d.lex WHEN 6 THEN d.lex WHEN 7 THEN d.lex
      WHEN 2 THEN quipu_i64(v)::text
      WHEN 3 THEN quipu_dlex(quipu_f64(v))
      WHEN 4 THEN CASE WHEN get_byte(v, 1) = 1 THEN 'true' ELSE 'false' END
      WHEN 5 THEN replace(encode(substr(v, 2), 'base64'), E'\n', '')
    END;
END $$""",
        "q_dt": r"""
CREATE OR REPLACE FUNCTION q_dt(v bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  d := quipu_dec(v);
  RETURN CASE d.tag
      WHEN 1 THEN '@XSD@string' WHEN 2 THEN '@XSD@integer' WHEN 3 THEN '@XSD@double'
      WHEN 4 THEN '@XSD@boolean' WHEN 5 THEN '@XSD@base64Binary'
      WHEN 6 THEN 'http://www.w3.org/1999/02/22-rdf-syntax-ns#langString' WHEN 7 THEN d.hdr
    END;
END $$""",
        "q_lang": r"""
CREATE OR REPLACE FUNCTION q_lang(v bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  d := quipu_dec(v);
  RETURN CASE WHEN d.tag IS NULL OR d.tag = 0 THEN NULL WHEN d.tag = 6 THEN d.hdr ELSE '' END;
END $$""",
        # SPARQL < ordering: -1, 0, 1, or NULL (a type error).
        "q_cmp": r"""
CREATE OR REPLACE FUNCTION q_cmp(a bytea, b bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
  y record;
  pr record;
  wx record;
  wy record;
BEGIN
  IF octet_length(a) >= 9 AND octet_length(b) >= 9 AND get_byte(a, 0) = 2 AND get_byte(b, 0) = 2 THEN
    RETURN sign(quipu_i64(a) - quipu_i64(b)::numeric)::integer;
  END IF;
  x := quipu_val(a);
  y := quipu_val(b);
  IF x.tag IS NULL OR y.tag IS NULL OR x.tag = 0 OR y.tag = 0 THEN
    RETURN NULL;
  END IF;
  IF x.k IS NOT NULL AND y.k IS NOT NULL THEN
    IF greatest(x.k, y.k) < 2 THEN
      RETURN sign(x.n - y.n)::integer;
    END IF;
    pr := quipu_promote(x.k, x.n, x.f, x.sb, y.k, y.n, y.f, y.sb);
    IF pr.p = 'NaN'::float8 OR pr.q = 'NaN'::float8 THEN
      RETURN NULL;
    END IF;
    RETURN CASE WHEN pr.p > pr.q THEN 1 WHEN pr.p < pr.q THEN -1 ELSE 0 END;
  END IF;
  IF x.tag = 1 AND y.tag = 1 THEN
    RETURN CASE WHEN x.lex COLLATE "C" > y.lex THEN 1 WHEN x.lex COLLATE "C" < y.lex THEN -1 ELSE 0 END;
  END IF;
  IF x.tag = 4 AND y.tag = 4 THEN
    RETURN (get_byte(a, 1) = 1)::integer - (get_byte(b, 1) = 1)::integer;
  END IF;
  IF x.tag = 7 AND y.tag = 7 AND x.hdr = y.hdr THEN
    wx := quipu_when(x.hdr, x.lex);
    wy := quipu_when(y.hdr, y.lex);
    IF NOT wx.ok OR NOT wy.ok OR wx.aware <> wy.aware THEN
      RETURN NULL;
    END IF;
    RETURN sign(wx.key - wy.key)::integer;
  END IF;
  RETURN NULL;
END $$""",
        # SPARQL =: 1, 0, or NULL (a type error).
        "q_eq": r"""
CREATE OR REPLACE FUNCTION q_eq(a bytea, b bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
  y record;
  pr record;
  wx record;
  wy record;
BEGIN
  IF octet_length(a) >= 9 AND octet_length(b) >= 9 AND get_byte(a, 0) = 2 AND get_byte(b, 0) = 2 THEN
    RETURN (quipu_i64(a) = quipu_i64(b))::integer;
  END IF;
  x := quipu_val(a);
  y := quipu_val(b);
  IF x.tag IS NULL OR y.tag IS NULL THEN
    RETURN NULL;
  END IF;
  IF x.k IS NOT NULL AND y.k IS NOT NULL THEN
    IF greatest(x.k, y.k) < 2 THEN
      RETURN (x.n = y.n)::integer;
    END IF;
    pr := quipu_promote(x.k, x.n, x.f, x.sb, y.k, y.n, y.f, y.sb);
    IF pr.p = 'NaN'::float8 OR pr.q = 'NaN'::float8 THEN
      RETURN 0;
    END IF;
    RETURN (pr.p = pr.q)::integer;
  END IF;
  IF a = b THEN
    RETURN 1;
  END IF;
  IF x.tag = 0 OR y.tag = 0 OR (x.tag = y.tag AND x.tag IN (1, 4, 6)) THEN
    RETURN 0;
  END IF;
  IF x.tag = 7 AND y.tag = 7 AND x.hdr = y.hdr THEN
    wx := quipu_when(x.hdr, x.lex);
    wy := quipu_when(y.hdr, y.lex);
    IF wx.ok AND wy.ok THEN
      RETURN (wx.aware = wy.aware AND wx.key = wy.key)::integer;
    END IF;
  END IF;
  RETURN NULL;
END $$""",
        # a op b with XSD numeric promotion; any op but + - * divides, as in Python.
        "q_arith": r"""
CREATE OR REPLACE FUNCTION q_arith(op text, a bytea, b bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
  y record;
  pr record;
  r numeric;
  zneg boolean;
BEGIN
  x := quipu_val(a);
  y := quipu_val(b);
  IF x.k IS NULL OR y.k IS NULL THEN
    RETURN NULL;
  END IF;
  pr := quipu_promote(x.k, x.n, x.f, x.sb, y.k, y.n, y.f, y.sb);
  IF pr.k >= 2 THEN
    IF op NOT IN ('+', '-', '*') AND pr.q = 0 THEN
      IF pr.p = 0 THEN
        RETURN quipu_enc(pr.k, NULL, 'NaN'::float8, NULL);
      END IF;
      RETURN quipu_enc(pr.k, NULL, CASE WHEN quipu_f8neg(pr.p) <> quipu_f8neg(pr.q)
                                        THEN '-Infinity'::float8 ELSE 'Infinity'::float8 END, NULL);
    END IF;
    RETURN quipu_enc(pr.k, NULL, quipu_fop(op, pr.p, pr.q), NULL);
  END IF;
  IF op = '+' THEN
    r := x.n + y.n;
    zneg := x.sb AND y.sb;
  ELSIF op = '-' THEN
    r := x.n - y.n;
    zneg := x.sb AND NOT y.sb;
  ELSIF op = '*' THEN
    r := x.n * y.n;
    zneg := x.sb <> y.sb;
  ELSE
    IF y.n = 0 THEN
      RETURN NULL;
    END IF;
    RETURN quipu_enc(1, quipu_ddiv(x.n, y.n), NULL, x.sb <> y.sb);
  END IF;
  IF pr.k = 0 THEN
    RETURN quipu_enc(0, r, NULL, NULL);
  END IF;
  RETURN quipu_enc(1, quipu_dround(r, false), NULL, zneg);
END $$""",
        "q_neg": r"""
CREATE OR REPLACE FUNCTION q_neg(a bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  x := quipu_val(a);
  IF x.k IS NULL THEN
    RETURN NULL;
  ELSIF x.k = 3 THEN  -- flip the sign bit, as C's negation does
    RETURN '\x03'::bytea || substr(a, 2, 7) || set_byte('\x00'::bytea, 0, get_byte(a, 8) # 128);
  ELSIF x.k = 2 THEN
    RETURN quipu_enc(2, NULL, -x.f, NULL);
  ELSIF x.k = 1 THEN  -- Decimal's unary minus rounds, and gives +0 for any zero
    RETURN quipu_enc(1, quipu_dround(-x.n, false), NULL, false);
  END IF;
  RETURN quipu_enc(0, -x.n, NULL, NULL);
END $$""",
    }
)

_STATEMENTS.update(
    {
        # -- aggregates ----------------------------------------------------------------------
        # Aggregate states are composite types; CREATE TYPE has no OR REPLACE, so a changed
        # layout needs a new type name.
        "quipu_sum_state": r"""
DO $$ BEGIN
  CREATE TYPE quipu_sum_state AS (k integer, n numeric, f double precision, cnt bigint, err boolean);
EXCEPTION WHEN duplicate_object THEN NULL;
END $$""",
        # sqlfunctions._Sum.step: XSD promotion; a non-number makes the aggregate an error.
        "quipu_sum_step": r"""
CREATE OR REPLACE FUNCTION quipu_sum_step(s quipu_sum_state, v bytea) RETURNS quipu_sum_state
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  x record;
  kind integer;
BEGIN
  IF v IS NULL OR s.err THEN
    RETURN s;
  END IF;
  x := quipu_val(v);
  IF x.k IS NULL THEN
    s.err := true;
    RETURN s;
  END IF;
  kind := greatest(s.k, x.k);
  IF kind >= 2 THEN
    s.f := quipu_fop('+', CASE WHEN s.k >= 2 THEN s.f ELSE quipu_n2f(s.n, false) END,
                     CASE WHEN x.k >= 2 THEN x.f ELSE quipu_n2f(x.n, x.sb) END);
    s.n := NULL;
  ELSIF kind = 1 THEN
    s.n := quipu_dround(s.n + x.n, false);
  ELSE
    s.n := s.n + x.n;
  END IF;
  s.k := kind;
  s.cnt := s.cnt + 1;
  RETURN s;
END $$""",
        "quipu_sum_final": r"""
CREATE OR REPLACE FUNCTION quipu_sum_final(s quipu_sum_state) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN NOT s.err THEN quipu_enc(s.k, s.n, s.f, false) END
$$""",
        "quipu_avg_final": r"""
CREATE OR REPLACE FUNCTION quipu_avg_final(s quipu_sum_state) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN s.err THEN NULL
              WHEN s.cnt = 0 THEN q_int(0)
              WHEN s.k <= 1 THEN quipu_enc(1, quipu_ddiv(s.n, s.cnt), NULL, false)
              ELSE quipu_enc(s.k, NULL, quipu_fop('/', s.f, s.cnt::float8), NULL) END
$$""",
        "q_sum": r"""
CREATE OR REPLACE AGGREGATE q_sum(bytea) (
  SFUNC = quipu_sum_step, STYPE = quipu_sum_state, FINALFUNC = quipu_sum_final,
  INITCOND = '(0,0,,0,f)', PARALLEL = SAFE
)""",
        "q_avg": r"""
CREATE OR REPLACE AGGREGATE q_avg(bytea) (
  SFUNC = quipu_sum_step, STYPE = quipu_sum_state, FINALFUNC = quipu_avg_final,
  INITCOND = '(0,0,,0,f)', PARALLEL = SAFE
)""",
        "quipu_first": r"""
CREATE OR REPLACE FUNCTION quipu_first(s bytea, v bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT s $$""",
        # A strict step with no initial state: the first non-NULL value is the state.
        "q_sample": r"""
CREATE OR REPLACE AGGREGATE q_sample(bytea) (SFUNC = quipu_first, STYPE = bytea, PARALLEL = SAFE)""",
        # GROUP_CONCAT's state: {separator, error flag, parts...} (a plpgsql step appends in place).
        "quipu_gc_step": r"""
CREATE OR REPLACE FUNCTION quipu_gc_step(s text[], v bytea, sep text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  d record;
BEGIN
  s[1] := sep;
  IF v IS NULL OR s[2] = '1' THEN
    RETURN s;
  END IF;
  d := quipu_dec(v);
  IF d.tag IS NULL OR d.tag = 0 THEN
    s[2] := '1';
    RETURN s;
  END IF;
  RETURN s || CASE WHEN d.tag IN (1, 6, 7) THEN d.lex WHEN d.tag = 5 THEN '' ELSE q_lex(v) END;
END $$""",
        "quipu_gc_final": r"""
CREATE OR REPLACE FUNCTION quipu_gc_final(s text[]) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN s[2] = '0' THEN quipu_str(array_to_string(s[3:], s[1])) END
$$""",
        "q_group_concat": r"""
CREATE OR REPLACE AGGREGATE q_group_concat(bytea, text) (
  SFUNC = quipu_gc_step, STYPE = text[], FINALFUNC = quipu_gc_final, INITCOND = '{" ",0}', PARALLEL = SAFE
)""",
        # sqlfunctions._order_key: blank nodes, IRIs (by text), numbers, other literals.
        "quipu_okey": r"""
CREATE OR REPLACE FUNCTION quipu_okey(v bytea, iri text, OUT cat integer, OUT num numeric,
                                      OUT fl double precision, OUT isf boolean,
                                      OUT s1 text, OUT s2 text, OUT s3 text, OUT s4 text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  IF iri IS NOT NULL THEN
    cat := CASE WHEN left(iri, 2) = '_:' THEN 0 ELSE 1 END;
    s1 := iri;
    RETURN;
  END IF;
  x := quipu_val(v);
  IF (CASE WHEN octet_length(v) = 0 THEN false
           WHEN get_byte(v, 0) IN (0, 2, 3) THEN octet_length(v) < 9
           ELSE get_byte(v, 0) IN (6, 7) AND octet_length(v) < 3 END) THEN
    cat := 10;  -- truncated: Python's struct.unpack raises
  ELSIF x.tag IS NULL THEN
    cat := 9;
  ELSIF x.k IS NOT NULL THEN
    cat := 2;
    isf := x.k >= 2;
    fl := x.f;
    num := x.n;
  ELSE
    cat := 3;
    s1 := CASE x.tag WHEN 0 THEN 'ref' WHEN 1 THEN 'str' WHEN 4 THEN 'bool' WHEN 5 THEN 'bytes'
                     WHEN 6 THEN 'lang' ELSE 'typed' END;
    s2 := CASE x.tag WHEN 4 THEN '@XSD@boolean' WHEN 5 THEN '@XSD@base64Binary'
                     WHEN 6 THEN 'http://www.w3.org/1999/02/22-rdf-syntax-ns#langString'
                     WHEN 7 THEN x.hdr ELSE '' END;
    s3 := CASE WHEN x.tag = 6 THEN x.hdr ELSE '' END;
    s4 := CASE WHEN x.tag IN (1, 6, 7) THEN x.lex
               WHEN x.tag = 4 THEN CASE WHEN get_byte(v, 1) = 1 THEN 'true' ELSE 'false' END
               ELSE '' END;
  END IF;
END $$""",
        "quipu_tcmp": r"""
CREATE OR REPLACE FUNCTION quipu_tcmp(a text, b text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN a COLLATE "C" < b THEN -1 WHEN a COLLATE "C" > b THEN 1 ELSE 0 END
$$""",
        # Python's comparison of two order keys: -1, 0, 1; NULL where no comparison holds (a
        # NaN); 2 where Python raises (a NaN against a Decimal).
        "quipu_okey_cmp": r"""
CREATE OR REPLACE FUNCTION quipu_okey_cmp(v1 bytea, i1 text, v2 bytea, i2 text) RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  a record;
  b record;
  f double precision;
  n numeric;
  c integer;
BEGIN
  a := quipu_okey(v1, i1);
  b := quipu_okey(v2, i2);
  IF a.cat = 10 OR b.cat = 10 THEN
    RETURN 2;
  ELSIF a.cat <> b.cat THEN
    RETURN sign(a.cat - b.cat)::integer;
  ELSIF a.cat IN (0, 1) THEN
    RETURN quipu_tcmp(a.s1, b.s1);
  ELSIF a.cat = 3 THEN
    c := quipu_tcmp(a.s1, b.s1);
    IF c = 0 THEN c := quipu_tcmp(a.s2, b.s2); END IF;
    IF c = 0 THEN c := quipu_tcmp(a.s3, b.s3); END IF;
    IF c = 0 THEN c := quipu_tcmp(a.s4, b.s4); END IF;
    RETURN c;
  ELSIF a.cat <> 2 THEN
    RETURN 0;
  END IF;
  IF a.isf AND b.isf THEN
    IF a.fl = 'NaN'::float8 OR b.fl = 'NaN'::float8 THEN
      RETURN NULL;
    END IF;
    RETURN CASE WHEN a.fl < b.fl THEN -1 WHEN a.fl > b.fl THEN 1 ELSE 0 END;
  ELSIF NOT a.isf AND NOT b.isf THEN
    RETURN sign(a.num - b.num)::integer;
  END IF;
  -- a double against an exact number: compared exactly, as Python compares float and Decimal
  f := CASE WHEN a.isf THEN a.fl ELSE b.fl END;
  n := CASE WHEN a.isf THEN b.num ELSE a.num END;
  IF f = 'NaN'::float8 THEN
    RETURN 2;
  END IF;
  c := CASE WHEN f = 'Infinity'::float8 THEN 1 WHEN f = '-Infinity'::float8 THEN -1
            ELSE sign(quipu_f2n(f) - n)::integer END;
  RETURN CASE WHEN a.isf THEN c ELSE -c END;
END $$""",
        "quipu_pick": r"""
DO $$ BEGIN
  CREATE TYPE quipu_pick AS (v bytea, iri text, err boolean);
EXCEPTION WHEN duplicate_object THEN NULL;
END $$""",
        # MIN/MAX in SPARQL order (sqlfunctions._MinMax); ``want`` is -1 for MIN, 1 for MAX.
        "quipu_pick_step": r"""
CREATE OR REPLACE FUNCTION quipu_pick_step(s quipu_pick, v bytea, iri text, want integer) RETURNS quipu_pick
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  c integer;
BEGIN
  IF v IS NULL THEN
    RETURN s;
  ELSIF s IS NULL THEN
    RETURN ROW(v, iri, (quipu_okey(v, iri)).cat = 10)::quipu_pick;
  ELSIF s.err THEN
    RETURN s;
  END IF;
  c := quipu_okey_cmp(v, iri, s.v, s.iri);
  IF c = 2 THEN
    s.err := true;
  ELSIF c = want THEN
    s := ROW(v, iri, false)::quipu_pick;
  END IF;
  RETURN s;
END $$""",
        "quipu_min_step": r"""
CREATE OR REPLACE FUNCTION quipu_min_step(s quipu_pick, v bytea, iri text) RETURNS quipu_pick
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT quipu_pick_step(s, v, iri, -1) $$""",
        "quipu_max_step": r"""
CREATE OR REPLACE FUNCTION quipu_max_step(s quipu_pick, v bytea, iri text) RETURNS quipu_pick
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT quipu_pick_step(s, v, iri, 1) $$""",
        "quipu_pick_final": r"""
CREATE OR REPLACE FUNCTION quipu_pick_final(s quipu_pick) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT CASE WHEN NOT s.err THEN s.v END $$""",
        "q_min": r"""
CREATE OR REPLACE AGGREGATE q_min(bytea, text) (
  SFUNC = quipu_min_step, STYPE = quipu_pick, FINALFUNC = quipu_pick_final, PARALLEL = SAFE
)""",
        "q_max": r"""
CREATE OR REPLACE AGGREGATE q_max(bytea, text) (
  SFUNC = quipu_max_step, STYPE = quipu_pick, FINALFUNC = quipu_pick_final, PARALLEL = SAFE
)""",
    }
)

_STATEMENTS.update(
    {
        # -- strings -------------------------------------------------------------------------
        # Python's str.upper / str.lower are full Unicode case mappings (ß -> SS, final sigma);
        # ICU's root locale gives the same. Without ICU only ASCII text is mapped, and other text
        # is an error rather than a wrong answer.
        "quipu_case": r"""
DO $do$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu') THEN
    EXECUTE $f$CREATE OR REPLACE FUNCTION quipu_upper(t text) RETURNS text
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $b$ SELECT upper(t COLLATE "und-x-icu") $b$$f$;
    EXECUTE $f$CREATE OR REPLACE FUNCTION quipu_lower(t text) RETURNS text
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $b$ SELECT lower(t COLLATE "und-x-icu") $b$$f$;
  ELSE
    EXECUTE $f$CREATE OR REPLACE FUNCTION quipu_upper(t text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $b$ BEGIN
        IF t ~ '^[\x01-\x7f]*$' THEN RETURN upper(t COLLATE "C"); END IF;
        RAISE EXCEPTION 'quipu: UCASE of non-ASCII text needs a PostgreSQL built with ICU';
      END $b$$f$;
    EXECUTE $f$CREATE OR REPLACE FUNCTION quipu_lower(t text) RETURNS text
      LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $b$ BEGIN
        IF t ~ '^[\x01-\x7f]*$' THEN RETURN lower(t COLLATE "C"); END IF;
        RAISE EXCEPTION 'quipu: LCASE of non-ASCII text needs a PostgreSQL built with ICU';
      END $b$$f$;
  END IF;
END $do$""",
        # values.lang_string (the tag lower-cased).
        "quipu_lang_string": r"""
CREATE OR REPLACE FUNCTION quipu_lang_string(lex text, lang text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_header(6, quipu_lower(lang), lex) $$""",
        # A string result with the language tag of the argument it came from (NULL lang: simple).
        "quipu_same_kind": r"""
CREATE OR REPLACE FUNCTION quipu_same_kind(lang text, lex text) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN lex IS NULL THEN NULL WHEN coalesce(lang, '') = '' THEN quipu_str(lex)
              ELSE quipu_lang_string(lex, lang) END
$$""",
        # sqlfunctions._text_arg: (lexical, lang) of a simple or language-tagged string; lang is
        # NULL for a simple one. ok is NULL where the value is no string.
        "quipu_text": r"""
CREATE OR REPLACE FUNCTION quipu_text(v bytea, OUT ok boolean, OUT lex text, OUT lang text)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  d record := quipu_dec(v);
BEGIN
  IF d.tag IN (1, 6) THEN
    ok := true;
    lex := d.lex;
    lang := CASE WHEN d.tag = 6 THEN d.hdr END;
  END IF;
END $$""",
        "q_strfn1": r"""
CREATE OR REPLACE FUNCTION q_strfn1(name text, a bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
BEGIN
  x := quipu_text(a);
  RETURN CASE WHEN x.ok IS NULL THEN NULL
                WHEN name = 'STRLEN' THEN q_int(char_length(x.lex))
                WHEN name = 'UCASE' THEN quipu_same_kind(x.lang, quipu_upper(x.lex))
                WHEN name = 'LCASE' THEN quipu_same_kind(x.lang, quipu_lower(x.lex)) END;
END $$""",
        "quipu_concat_none": r"""
CREATE OR REPLACE FUNCTION q_concat() RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT '\x01'::bytea $$""",
        # CONCAT: a language tag survives only when every argument has the same one.
        "q_concat": r"""
CREATE OR REPLACE FUNCTION q_concat(VARIADIC args bytea[]) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  a bytea;
  x record;
  parts text := '';
  first boolean := true;
  tag text;
  mixed boolean := false;
BEGIN
  FOREACH a IN ARRAY args LOOP
    IF a IS NULL THEN
      RETURN NULL;
    END IF;
    x := quipu_text(a);
    IF x.ok IS NULL THEN
      RETURN NULL;
    END IF;
    parts := parts || x.lex;
    IF first THEN
      tag := x.lang;
      first := false;
    ELSIF tag IS DISTINCT FROM x.lang THEN
      mixed := true;
    END IF;
  END LOOP;
  IF NOT mixed AND coalesce(tag, '') <> '' THEN
    RETURN quipu_lang_string(parts, tag);
  END IF;
  RETURN quipu_str(parts);
END $$""",
        # values.literal (via sqlfunctions._strdt): both arguments simple strings.
        "q_strdt": r"""
CREATE OR REPLACE FUNCTION q_strdt(lex_v bytea, dt_v bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
  d record;
  t text;
  n numeric;
BEGIN
  x := quipu_dec(lex_v);
  d := quipu_dec(dt_v);
  IF x.tag IS DISTINCT FROM 1 OR d.tag IS DISTINCT FROM 1 THEN
    RETURN NULL;
  END IF;
  t := d.lex;
  IF t = '@XSD@string' THEN
    RETURN quipu_str(x.lex);
  ELSIF t = '@XSD@integer' THEN
    IF x.lex !~ '@INTEGER_RE@' THEN
      RETURN NULL;
    END IF;
    n := x.lex::numeric;
    RETURN CASE WHEN n BETWEEN -9223372036854775808 AND 9223372036854775807 THEN q_int(n::bigint) END;
  ELSIF t = '@XSD@double' THEN
    IF x.lex !~ '@DOUBLE_RE@' THEN
      RETURN NULL;
    END IF;
    RETURN quipu_f64enc(quipu_lexf(x.lex));
  ELSIF t = '@XSD@boolean' AND x.lex IN ('true', '1', 'false', '0') THEN
    RETURN CASE WHEN x.lex IN ('true', '1') THEN '\x0401'::bytea ELSE '\x0400'::bytea END;
  ELSIF t IN (@INTEGER_TYPES@) THEN
    IF x.lex !~ '@INTEGER_RE@' THEN
      RETURN NULL;
    END IF;
  ELSIF t = '@XSD@decimal' THEN
    IF x.lex !~ '@DECIMAL_RE@' THEN
      RETURN NULL;
    END IF;
  ELSIF t = '@XSD@float' AND x.lex !~ '@DOUBLE_RE@' THEN
    RETURN NULL;
  END IF;
  RETURN quipu_header(7, t, x.lex);
END $$""",
        "q_strlang": r"""
CREATE OR REPLACE FUNCTION q_strlang(lex_v bytea, tag_v bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record := quipu_dec(lex_v);
  t record := quipu_dec(tag_v);
BEGIN
  RETURN CASE WHEN x.tag = 1 AND t.tag = 1 AND t.lex <> '' THEN quipu_lang_string(x.lex, t.lex) END;
END $$""",
        # The value of a decimal digit in any script (Python's int() of a \d).
        "quipu_digit": r"""
CREATE OR REPLACE FUNCTION quipu_digit(c text) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT ascii(c) - max(z) FROM unnest('{@DIGIT_ZEROS@}'::integer[]) AS z WHERE z <= ascii(c)
$$""",
        # TZ (as_duration 0) and TIMEZONE (1) of an xsd:dateTime, as sqlfunctions._timezone: its
        # pattern's \d is any decimal digit and its $ also matches before a final newline.
        "q_timezone": r"""
CREATE OR REPLACE FUNCTION q_timezone(a bytea, as_duration integer) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  d record;
  tz text;
  hours integer;
  minutes integer;
  out text;
BEGIN
  IF a IS NULL THEN
    RETURN NULL;
  END IF;
  d := quipu_dec(a);
  IF d.tag IS DISTINCT FROM 7 OR d.hdr <> '@XSD@dateTime' THEN
    RETURN NULL;
  END IF;
  tz := (regexp_match(d.lex, '(Z|[+-]@DIGIT@@DIGIT@:@DIGIT@@DIGIT@)\n?$'))[1];
  IF coalesce(as_duration, 0) = 0 THEN
    RETURN quipu_str(coalesce(tz, ''));
  ELSIF tz IS NULL THEN
    RETURN NULL;
  ELSIF tz = 'Z' THEN
    out := 'PT0S';
  ELSE
    hours := quipu_digit(substr(tz, 2, 1)) * 10 + quipu_digit(substr(tz, 3, 1));
    minutes := quipu_digit(substr(tz, 5, 1)) * 10 + quipu_digit(substr(tz, 6, 1));
    out := CASE WHEN left(tz, 1) = '-' THEN '-' ELSE '' END || 'PT'
           || CASE WHEN hours <> 0 THEN hours || 'H' ELSE '' END
           || CASE WHEN minutes <> 0 THEN minutes || 'M' ELSE '' END;
    IF hours = 0 AND minutes = 0 THEN
      out := 'PT0S';
    END IF;
  END IF;
  RETURN quipu_header(7, '@XSD@dayTimeDuration', out);
END $$""",
    }
)

_STATEMENTS.update(
    {
        # sqlfunctions.str_fn's two-argument names. Python's q_strfn2 answers an int for
        # CONTAINS/STRSTARTS/STRENDS and an encoding for STRBEFORE/STRAFTER; a PostgreSQL
        # function has one result type, so the halves are here, ready for the compiler to call
        # by two names. Until then q_strfn2 is not in FUNCTIONS.
        "quipu_strfn2_args": r"""
CREATE OR REPLACE FUNCTION quipu_strfn2_args(a bytea, b bytea, OUT ok boolean, OUT x text, OUT xl text, OUT y text)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  p record := quipu_text(a);
  q record := quipu_text(b);
BEGIN
  IF p.ok AND q.ok AND (q.lang IS NULL OR q.lang IS NOT DISTINCT FROM p.lang) THEN
    ok := true;
    x := p.lex;
    xl := p.lang;
    y := q.lex;
  END IF;
END $$""",
        "quipu_strfn2_int": r"""
CREATE OR REPLACE FUNCTION quipu_strfn2_int(name text, a bytea, b bytea) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  t record;
BEGIN
  t := quipu_strfn2_args(a, b);
  RETURN CASE WHEN t.ok IS NULL THEN NULL
                WHEN name = 'CONTAINS' THEN (position(t.y IN t.x) > 0)::integer
                WHEN name = 'STRSTARTS' THEN starts_with(t.x, t.y)::integer
                WHEN name = 'STRENDS' THEN (right(t.x, length(t.y)) = t.y)::integer END;
END $$""",
        "quipu_strfn2_enc": r"""
CREATE OR REPLACE FUNCTION quipu_strfn2_enc(name text, a bytea, b bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  t record;
BEGIN
  t := quipu_strfn2_args(a, b);
  RETURN CASE WHEN t.ok IS NULL THEN NULL
                WHEN name NOT IN ('STRBEFORE', 'STRAFTER') THEN NULL
                WHEN position(t.y IN t.x) = 0 THEN '\x01'::bytea
                WHEN name = 'STRBEFORE' THEN
                  CASE WHEN position(t.y IN t.x) > 1 OR t.y = ''
                       THEN quipu_same_kind(t.xl, left(t.x, position(t.y IN t.x) - 1)) ELSE '\x01'::bytea END
                ELSE
                  CASE WHEN position(t.y IN t.x) + length(t.y) <= length(t.x) OR t.y = ''
                       THEN quipu_same_kind(t.xl, substr(t.x, position(t.y IN t.x) + length(t.y)))
                       ELSE '\x01'::bytea END
           END;
END $$""",
    }
)

# The two-argument string functions under the compiler's two names: a test (CONTAINS, STRSTARTS,
# STRENDS: 1, 0 or NULL) and a part (STRBEFORE, STRAFTER: an encoding).
_STATEMENTS.update(
    {
        "q_strtest": r"""
CREATE OR REPLACE FUNCTION q_strtest(name text, a bytea, b bytea) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_strfn2_int(name, a, b) $$""",
        "q_strpart": r"""
CREATE OR REPLACE FUNCTION q_strpart(name text, a bytea, b bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_strfn2_enc(name, a, b) $$""",
    }
)

# REGEX for a pattern pg_regex accepts, given its ARE (pg_regex.to_pg): 1, 0, or NULL when the
# text is not a string literal (sqlfunctions.regex). The compiler checks the pattern and flags;
# the text's NULL cases are the Python twins'.
_STATEMENTS.update(
    {
        "q_pgregex": r"""
CREATE OR REPLACE FUNCTION q_pgregex(a bytea, are text) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record := quipu_text(a);
BEGIN
  RETURN CASE WHEN x.ok IS NULL THEN NULL ELSE (x.lex ~ are)::integer END;
END $$""",
        # REPLACE for a pattern and replacement pg_regex accepts (pg_regex.to_pg_replace).
        "q_pgreplace": r"""
CREATE OR REPLACE FUNCTION q_pgreplace(a bytea, are text, replacement text) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record := quipu_text(a);
BEGIN
  RETURN CASE WHEN x.ok IS NULL THEN NULL
              ELSE quipu_same_kind(x.lang, regexp_replace(x.lex, are, replacement, 'g')) END;
END $$""",
    }
)

FUNCTIONS: Final[dict[str, str]] = {name: _sub(sql) for name, sql in _STATEMENTS.items()}

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
