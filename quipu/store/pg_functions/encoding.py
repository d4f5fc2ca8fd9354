"""The tagged encoding of ``values`` in SQL: 64-bit integers and doubles to and from their
little-endian bytes, UTF-8 checked without an exception block, the string and header
encodings, and ``quipu_dec`` (``values.decode``). It depends on no other family; every family
but ``dates`` builds on it.
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users.
STATEMENTS: Final[dict[str, str]] = {
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
}
