"""``quipu_when``: an ``xsd:dateTime`` or ``xsd:date`` as a number of seconds, parsed as
Python's ``datetime.fromisoformat`` parses it, for comparing and ordering dates. It depends on
no other family (the date functions that return a string, such as TZ, are in ``strings``).
"""

from __future__ import annotations

from typing import Final

# name -> the statement creating it, helpers before their users; the package fills in the
# @NAME@ placeholders.
STATEMENTS: Final[dict[str, str]] = {
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
