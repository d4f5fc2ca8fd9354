"""The string functions: case mapping (ICU where the server has it), language-tagged results,
STRLEN, UCASE, LCASE, CONCAT, STRDT, STRLANG, TZ and TIMEZONE, the two-argument tests and
parts (CONTAINS, STRBEFORE and the rest), and REGEX and REPLACE over ``pg_regex``'s
translations. They depend on ``encoding``, and STRDT on ``numbers`` (``quipu_lexf``).
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users; the package fills in the
# @NAME@ placeholders.
STATEMENTS: Final[dict[str, str]] = {
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
  f double precision;
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
    -- values._integer_lexical: canonical, Int within 64 bits and Typed past them
    t := coalesce(nullif(ltrim(ltrim(x.lex, '+-'), '0'), ''), '0');
    t := CASE WHEN left(x.lex, 1) = '-' AND t <> '0' THEN '-' || t ELSE t END;
    IF length(t) <= 20 THEN
      n := t::numeric;
      IF n BETWEEN -9223372036854775808 AND 9223372036854775807 THEN
        RETURN q_int(n::bigint);
      END IF;
    END IF;
    RETURN quipu_header(7, '@XSD@integer', t);
  ELSIF t = '@XSD@double' THEN
    IF x.lex !~ '@DOUBLE_RE@' THEN
      RETURN NULL;
    END IF;
    -- values.literal: Float for the canonical form, else Typed with the form as written
    f := quipu_lexf(x.lex);
    RETURN CASE WHEN quipu_dlex(f) = x.lex THEN quipu_f64enc(f) ELSE quipu_header(7, t, x.lex) END;
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
    # The two-argument string functions under the compiler's two names: a test (CONTAINS,
    # STRSTARTS, STRENDS: 1, 0 or NULL) and a part (STRBEFORE, STRAFTER: an encoding).
    "q_strtest": r"""
CREATE OR REPLACE FUNCTION q_strtest(name text, a bytea, b bytea) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_strfn2_int(name, a, b) $$""",
    "q_strpart": r"""
CREATE OR REPLACE FUNCTION q_strpart(name text, a bytea, b bytea) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$ SELECT quipu_strfn2_enc(name, a, b) $$""",
    # REGEX for a pattern pg_regex accepts, given its ARE (pg_regex.to_pg): 1, 0, or NULL when
    # the text is not a string literal (sqlfunctions.regex). The compiler checks the pattern and
    # flags; the text's NULL cases are the Python twins'.
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
