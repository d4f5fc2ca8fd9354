"""The SPARQL aggregates of ``sqlfunctions.AGGREGATES`` (SUM, AVG, SAMPLE, GROUP_CONCAT, MIN,
MAX) as PostgreSQL aggregates: their state types, step and final functions, and the order key
MIN and MAX compare by. They depend on ``encoding`` and ``numbers``, and GROUP_CONCAT on
``scalars`` (``q_lex``).
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users; the package fills in the
# @NAME@ placeholders.
STATEMENTS: Final[dict[str, str]] = {
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
    s.f := quipu_fop('+', CASE WHEN s.k >= 2 THEN s.f ELSE quipu_n2f(s.n, s.n < 0) END,
                     CASE WHEN x.k >= 2 THEN x.f ELSE quipu_n2f(x.n, x.sb) END);
    s.n := NULL;
  ELSIF kind = 1 THEN
    s.n := quipu_dround(CASE WHEN abs(s.n) < 1e60000 AND abs(x.n) < 1e60000 THEN s.n + x.n
                             ELSE quipu_nop('+', s.n, x.n) END, false);
  ELSE
    s.n := CASE WHEN abs(s.n) < 1e60000 AND abs(x.n) < 1e60000 THEN s.n + x.n
                ELSE quipu_nop('+', s.n, x.n) END;  -- quipu_nop: NULL past numeric's range
  END IF;
  IF kind <= 1 AND s.n IS NULL THEN  -- past numeric's range
    s.err := true;
    RETURN s;
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
