"""The scalar ``q_*`` functions over any term: the number, literal and truth-value tests
(``q_num``, ``q_isnumeric``, ``q_isliteral``, ``q_ebv``), building and taking apart an
encoding (``q_bool``, ``q_ref``, ``q_lex``, ``q_dt``, ``q_lang`` and the rest), SPARQL ordering
and equality (``q_cmp``, ``q_eq``) and arithmetic (``q_arith``, ``q_neg``). The string
functions are in ``strings``. They depend on ``encoding``, ``numbers`` and ``dates``.
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users; the package fills in the
# @NAME@ placeholders.
STATEMENTS: Final[dict[str, str]] = {
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
    # sqlfunctions.exact_key: ORDER BY's tie-break among numbers with one double shadow.
    "q_numkey": r"""
CREATE OR REPLACE FUNCTION q_numkey(v bytea) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  x record;
  f double precision;
  c integer;
  e integer;
  d text;
BEGIN
  x := quipu_val(v);
  IF x.k IS NULL THEN
    RETURN NULL;
  ELSIF x.k >= 2 THEN
    RETURN '\x31'::bytea;
  END IF;
  f := quipu_n2f(x.n, x.sb);
  c := CASE WHEN f = 'Infinity'::float8 THEN -1 WHEN f = '-Infinity'::float8 THEN 1
            ELSE sign(x.n - quipu_f2n(f))::integer END;
  IF c = 0 THEN
    RETURN '\x31'::bytea;
  END IF;
  e := quipu_exp10(abs(x.n));
  d := rtrim(ltrim(replace(abs(x.n)::text, '.', ''), '0'), '0');
  RETURN convert_to(CASE WHEN c < 0 THEN '0' ELSE '2' END
      || CASE WHEN x.n > 0 THEN 'P' || lpad((e + 1000000000)::text, 10, '0') || d
              ELSE 'N' || lpad((1000000000 - e)::text, 10, '0') || translate(d, '0123456789', '9876543210') || ':'
         END, 'UTF8');
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
  IF op NOT IN ('+', '-', '*') THEN
    IF y.n = 0 THEN
      RETURN NULL;
    END IF;
    RETURN quipu_enc(1, quipu_ddiv(x.n, y.n), NULL, x.sb <> y.sb);
  END IF;
  zneg := CASE op WHEN '+' THEN x.sb AND y.sb WHEN '-' THEN x.sb AND NOT y.sb ELSE x.sb <> y.sb END;
  IF abs(x.n) < 1e60000 AND abs(y.n) < 1e60000 THEN  -- the result fits numeric's range
    r := CASE op WHEN '+' THEN x.n + y.n WHEN '-' THEN x.n - y.n ELSE x.n * y.n END;
  ELSE
    r := quipu_nop(op, x.n, y.n);
    IF r IS NULL THEN  -- past numeric's range
      RETURN NULL;
    END IF;
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
  ELSIF x.k = 3 AND x.tag = 3 THEN  -- flip the sign bit, as C's negation does
    RETURN '\x03'::bytea || substr(a, 2, 7) || set_byte('\x00'::bytea, 0, get_byte(a, 8) # 128);
  ELSIF x.k >= 2 THEN
    RETURN quipu_enc(x.k, NULL, -x.f, NULL);
  ELSIF x.k = 1 THEN  -- Decimal's unary minus rounds, and gives +0 for any zero
    RETURN quipu_enc(1, quipu_dround(-x.n, false), NULL, false);
  END IF;
  RETURN quipu_enc(0, -x.n, NULL, NULL);
END $$""",
}
