"""Name tokens of an IRI, for the keyword index (tools-search §4.1).

The segment after the last ``/``, ``#`` or ``:``, then the same segment with a space before each
upper-case letter that follows a lower-case one: ``…/ClockworkStation`` gives
``ClockworkStation Clockwork Station``. The index's tokenizer splits the rest (punctuation,
hyphens, underscores). The triggers that keep the index call it as SQL, so it exists on both
backends and the two must agree: ASCII letter classes on each side.
"""

from __future__ import annotations

import re
from typing import Any, Final

_LAST_SEGMENT: Final = re.compile(r"^.*[/#:]", re.DOTALL)
_CAMEL: Final = re.compile(r"([a-z])([A-Z])")

# PostgreSQL's copy of ``name_tokens`` (installed with the index, tools-search §4.2).
PG_FUNCTION: Final = r"""
CREATE OR REPLACE FUNCTION quipu_name_tokens(iri text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT seg || ' ' || regexp_replace(seg, '([a-z])([A-Z])', '\1 \2', 'g')
  FROM (SELECT regexp_replace(iri, '^.*[/#:]', '') AS seg) AS s
$$"""


def name_tokens(iri: str | None) -> str | None:
    if iri is None:
        return None
    segment = _LAST_SEGMENT.sub("", iri)
    return segment + " " + _CAMEL.sub(r"\1 \2", segment)


def register(dbapi_conn: Any) -> None:
    """Install ``quipu_name_tokens`` on one sqlite3 connection: every connection that may write
    facts needs it, since the index's triggers call it whether or not keyword search is on."""
    dbapi_conn.create_function("quipu_name_tokens", 1, name_tokens, deterministic=True)
