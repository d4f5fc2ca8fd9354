"""XSD numbers as Python computes them: numeric and double conversions that overflow and
underflow as C does, Python's ``repr`` of a double, the 28-digit decimal context, exact
division, ``quipu_val`` (a value's number and kind), ``quipu_enc`` and numeric promotion.
It depends on ``encoding``.
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users; the package fills in the
# @NAME@ placeholders.
STATEMENTS: Final[dict[str, str]] = {
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
    # A well-formed finite xsd:double (or integer) lexical form as a numeric that rounds to the
    # same double as the form itself: a form past numeric's range (10^131072, 16383 fraction
    # digits; "1e999999999", "1" x 200000) is cut to 800 significant digits and a sticky one
    # (enough to round any double correctly) or to a power of ten beyond the double range.
    "quipu_lexn": r"""
CREATE OR REPLACE FUNCTION quipu_lexn(lex text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  mant text := split_part(lower(ltrim(lex, '+-')), 'e', 1);
  ex text := split_part(lower(lex), 'e', 2);
  ip text := split_part(mant, '.', 1);
  d text := replace(mant, '.', '');
  a bigint;
BEGIN
  IF length(lex) <= 300 AND length(ltrim(ltrim(ex, '+-'), '0')) <= 3 THEN
    RETURN lex::numeric;  -- the common case, well inside numeric's range
  END IF;
  -- a: the decimal exponent of the first significant digit
  a := length(ip) - (length(d) - length(ltrim(d, '0'))) - 1;
  d := rtrim(ltrim(d, '0'), '0');
  IF d = '' OR (length(ltrim(ltrim(ex, '+-'), '0')) > 12 AND left(ex, 1) = '-') THEN
    RETURN 0;  -- quipu_n2f gives zero its sign
  ELSIF length(ltrim(ltrim(ex, '+-'), '0')) > 12 THEN
    a := 401;
  ELSE
    a := a + CASE WHEN ex = '' THEN 0 ELSE ex::bigint END;
  END IF;
  IF a > 400 THEN
    RETURN CASE WHEN left(lex, 1) = '-' THEN -1e400 ELSE 1e400 END;
  ELSIF a < -400 THEN
    RETURN 0;
  ELSIF length(d) > 800 THEN
    d := left(d, 800) || '1';
  END IF;
  RETURN CASE WHEN left(lex, 1) = '-' THEN -1 ELSE 1 END * ('0.' || d || 'e' || (a + 1))::numeric;
END $$""",
    # A well-formed xsd:decimal lexical form as a numeric. numeric holds 131072 integer digits
    # and 16383 fraction digits; a longer fraction is rounded (half up) to 16383 digits, and an
    # integer part past the range is NULL: not a number here, where Python's Decimal is exact.
    "quipu_decn": r"""
CREATE OR REPLACE FUNCTION quipu_decn(lex text) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  ip text;
  fp text;
  r numeric;
BEGIN
  IF length(lex) <= 16000 THEN
    RETURN lex::numeric;  -- the common case, well inside numeric's range
  END IF;
  ip := ltrim(split_part(ltrim(lex, '+-'), '.', 1), '0');
  fp := rtrim(split_part(lex, '.', 2), '0');
  IF length(ip) > 131072 THEN
    RETURN NULL;
  END IF;
  r := ('0' || ip || '.' || left(fp, 16383))::numeric;
  IF substr(fp, 16384, 1) >= '5' THEN
    r := r + 1e-16383;
  END IF;
  RETURN CASE WHEN left(lex, 1) = '-' THEN -r ELSE r END;
END $$""",
    # a + b, a - b or a * b exactly, or NULL where the result is past numeric's range (10^131072).
    # Callers try the plain operator first when both operands are under 10^60000, which no
    # result can overflow: only larger operands pay for this call and its exception block.
    "quipu_nop": r"""
CREATE OR REPLACE FUNCTION quipu_nop(op text, a numeric, b numeric) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  RETURN CASE op WHEN '+' THEN a + b WHEN '-' THEN a - b ELSE a * b END;
EXCEPTION WHEN numeric_value_out_of_range THEN
  RETURN NULL;
END $$""",
    # A well-formed xsd:double lexical form as Python's float().
    "quipu_lexf": r"""
CREATE OR REPLACE FUNCTION quipu_lexf(lex text) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN lex = 'NaN' THEN 'NaN'::float8
              WHEN lex IN ('INF', '+INF') THEN 'Infinity'::float8
              WHEN lex = '-INF' THEN '-Infinity'::float8
              ELSE quipu_n2f(quipu_lexn(lex), left(lex, 1) = '-') END
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
  ea integer;
  eb integer;
  s integer;
BEGIN
  IF a = 0 THEN
    RETURN 0;
  END IF;
  ea := quipu_exp10(abs(a));
  eb := quipu_exp10(abs(b));
  s := 30 - ea + eb;
  IF greatest(abs(ea), abs(eb)) > 16000 THEN  -- the quotient may be past numeric's range: NULL then
    BEGIN
      RETURN quipu_ddiv_at(a, b, s);
    EXCEPTION WHEN numeric_value_out_of_range THEN
      RETURN NULL;
    END;
  END IF;
  RETURN quipu_ddiv_at(a, b, s);
END $$""",
    "quipu_ddiv_at": r"""
CREATE OR REPLACE FUNCTION quipu_ddiv_at(a numeric, b numeric, s integer) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  n numeric;
  q numeric;
  r numeric;
BEGIN
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
      IF lex !~ '@INTEGER_RE@' THEN
        NULL;
      ELSIF length(ltrim(lex, '+-')) > @MAX_EXACT_DIGITS@ THEN  -- sqlfunctions.num_of: a double
        k := 3;
        f := quipu_lexf(lex);
        sb := left(lex, 1) = '-';
      ELSE
        k := 0;
        n := lex::numeric;
        sb := n < 0;
      END IF;
    ELSIF hdr = '@XSD@decimal' THEN
      IF lex ~ '@DECIMAL_RE@' THEN
        n := quipu_decn(lex);
        IF n IS NOT NULL THEN
          k := 1;
          sb := left(lex, 1) = '-';
        END IF;
      END IF;
    ELSIF hdr IN ('@XSD@float', '@XSD@double') THEN
      IF lex ~ '@DOUBLE_RE@' THEN
        k := CASE WHEN hdr = '@XSD@float' THEN 2 ELSE 3 END;
        f := quipu_lexf(lex);
        sb := left(lex, 1) = '-';
      END IF;
    END IF;
  END IF;
END $$""",
    # sqlfunctions.encode_num; ``negzero``: a decimal zero is -0. An integer past 64 bits is
    # Typed (values.integer), and one Python cannot write out (sqlfunctions.MAX_EXACT_DIGITS) NULL.
    "quipu_enc": r"""
CREATE OR REPLACE FUNCTION quipu_enc(k integer, n numeric, f double precision, negzero boolean) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE k
    WHEN 0 THEN CASE WHEN n BETWEEN -9223372036854775808 AND 9223372036854775807 THEN q_int(n::bigint)
                     WHEN length(abs(n)::text) <= @MAX_EXACT_DIGITS@ THEN quipu_header(7, '@XSD@integer', n::text) END
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
}
