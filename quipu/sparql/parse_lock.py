"""One lock around rdflib's SPARQL grammar, which is not thread-safe (rdflib#1282).

pyparsing learns each parse action's arity from its first calls. Two threads doing that at once
can settle on a wrong arity for good: from then on every parse in the process fails with
"postParse2() missing 1 required positional argument" (seen on a cold server taking concurrent
``/query`` requests). Query and update parsing share the grammar, so both hold this lock; it
also keeps queries from parsing while an update has ``rdflib.NORMALIZE_LITERALS`` switched off.
"""

from __future__ import annotations

import threading

SPARQL_PARSE_LOCK = threading.Lock()
