"""``SELECT *`` columns come in the order their variables first appear, in every process."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from quipu.api import KnowledgeBase

EX = "http://ex.org/"
QUERY = "SELECT * WHERE { ?s ?p ?o . OPTIONAL { ?o ?q ?z } BIND(1 AS ?one) }"
PROBE = """
import quipu
kb = quipu.open(":memory:")
print(",".join(kb.query_result({q!r}).variables))
"""


def test_select_star_follows_the_text(kb: KnowledgeBase) -> None:
    kb.knot(f"<{EX}a> <{EX}b> <{EX}c> .", "nt")
    assert kb.query_result(QUERY).variables == ["s", "p", "o", "q", "z", "one"]
    assert kb.query_result("SELECT DISTINCT * { ?x ?y ?w }").variables == ["x", "y", "w"]
    # An explicit projection keeps its own order, and a '*' in an IRI or string changes nothing.
    assert kb.query_result("SELECT ?o ?s { ?s ?p ?o }").variables == ["o", "s"]
    text = 'PREFIX e: <http://ex.org/SELECT*> SELECT ?w ?v { ?v ?p "SELECT * ?x" . ?v ?p ?w }'
    assert kb.query_result(text).variables == ["w", "v"]


@pytest.mark.backend_independent
def test_select_star_order_does_not_depend_on_the_hash_seed() -> None:
    seen = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", PROBE.format(q=QUERY)], capture_output=True, text=True, env=env, timeout=60
        )
        assert out.returncode == 0, out.stderr
        seen.add(out.stdout.strip())
    assert seen == {"s,p,o,q,z,one"}
