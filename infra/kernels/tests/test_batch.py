"""Batch loading and validation: every malformed batch is refused with a message that names the problem."""

import hashlib
import json

import pytest
from conftest import POLICY, row, step_request, token_logprobs, write_batch


@pytest.fixture
def kernel(make_kernel):
    return make_kernel()


def _refusal(kernel, body: dict) -> tuple[int, dict]:
    response = kernel.client.post("/v1/train/step", json=body)
    return response.status_code, response.json()["error"]


def test_gzipped_batch_is_read(kernel, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0), row("five", -1.0)], gz=True)
    response = kernel.client.post("/v1/train/step", json=step_request(batch))
    assert response.status_code == 200, response.text
    assert response.json()["policyVersion"] == 1


def test_file_uri_is_read(kernel, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    batch["uri"] = "file://" + batch["uri"]
    assert kernel.client.post("/v1/train/step", json=step_request(batch)).status_code == 200


def test_bad_json_line(kernel, tmp_path):
    good = json.dumps(row("four", 1.0))
    path = tmp_path / "b.jsonl"
    raw = f"{good}\n{{not json\n".encode()
    path.write_bytes(raw)
    batch = {"uri": str(path), "rows": 2, "sha256": hashlib.sha256(raw).hexdigest()}
    status, error = _refusal(kernel, step_request(batch))
    # Bytes that do not decode: a corrupt object (422), which the client does not retry, not a refused request.
    assert status == 422 and error["type"] == "corrupt_object"
    assert error["message"] == "batch line 2: not JSON"


@pytest.mark.parametrize(
    "bad_row, message",
    [
        ({k: v for k, v in row("x", 1.0).items() if k != "advantage"}, "batch line 1: advantage: Field required"),
        ({**row("x", 1.0), "advantage": "high"}, "batch line 1: advantage: Input should be a valid number"),
        ({**row("x", 1.0), "messages": []}, "batch line 1: messages: List should have at least 1 item"),
        ({**row("x", 1.0), "extra": 1}, "batch line 1: extra: Extra inputs are not permitted"),
        ({**row("x", 1.0), "lossMaskSpans": [[0, 9]]}, "batch line 1: lossMaskSpans.0: span [0, 9) is not inside"),
        ({**row("x", 1.0), "behaviourLogprobs": [0.5]}, "batch line 1: behaviourLogprobs.0: Input should be less"),
        ({**row("x", 1.0), "temperature": 0.0}, "batch line 1: temperature: Input should be greater than 0"),
        ({**row("x", 1.0), "topP": 0.0}, "batch line 1: topP: Input should be greater than 0"),
        ({**row("x", 1.0), "topP": 1.5}, "batch line 1: topP: Input should be less than or equal to 1"),
    ],
)
def test_invalid_rows(kernel, tmp_path, bad_row, message):
    batch = write_batch(tmp_path / "b.jsonl", [bad_row])
    status, error = _refusal(kernel, step_request(batch))
    assert status == 400
    assert error["message"].startswith(message), error["message"]


def test_behaviour_logprobs_of_the_wrong_length(kernel, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0, behaviourLogprobs=[-1.0] * 50)])
    status, error = _refusal(kernel, step_request(batch))
    assert status == 400 and "behaviourLogprobs: 50 values" in error["message"]


def test_a_tis_step_refuses_rows_without_behaviour_logprobs(kernel, tmp_path):
    """Their importance weight pi_old/mu has no mu: weighing them 1 would train a stale row as on-policy."""
    given = row("four", 1.0, behaviourLogprobs=token_logprobs(kernel.policy, "four")[:-1].tolist())
    rows = [given, row("five", -1.0, role="proposer", group="proposer/doc-1"), row("six", 0.5)]
    batch = write_batch(tmp_path / "b.jsonl", rows)
    status, error = _refusal(kernel, step_request(batch, loss={"offPolicy": "tis"}))
    assert status == 400 and error["type"] == "batch_invalid"
    assert error["message"].startswith("batch row 2 (role 'proposer'): behaviourLogprobs: none, but loss.offPolicy")
    assert error["message"].endswith("(2 of 3 rows have none)")
    assert kernel.client.get(f"/v1/policies/{POLICY}").json()["policyVersion"] == 0
    # The PPO ratio takes a row without them as on-policy (ratio 1), as a synchronous row is: the step is taken.
    assert kernel.client.post("/v1/train/step", json=step_request(batch)).status_code == 200


def test_wrong_sha(kernel, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    status, error = _refusal(kernel, step_request({**batch, "sha256": "0" * 64}))
    assert status == 422 and error["type"] == "corrupt_object"
    assert error["message"].startswith(f"batch.sha256: the object's sha256 is {batch['sha256']}")


def test_wrong_row_count(kernel, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0), row("five", 1.0)])
    status, error = _refusal(kernel, step_request({**batch, "rows": 3}))
    assert status == 400 and error["message"] == "batch.rows: the batch holds 2 rows, not 3"


def test_missing_object(kernel, tmp_path):
    batch = {"uri": str(tmp_path / "absent.jsonl"), "rows": 1, "sha256": "0" * 64}
    status, error = _refusal(kernel, step_request(batch))
    assert status == 400 and error["type"] == "batch_not_found"
    assert "no object at" in error["message"]


def test_not_gzip(kernel, tmp_path):
    path = tmp_path / "b.jsonl.gz"
    path.write_bytes(b"plain text")
    batch = {"uri": str(path), "rows": 1, "sha256": hashlib.sha256(b"plain text").hexdigest()}
    status, error = _refusal(kernel, step_request(batch))
    assert status == 422 and error["type"] == "corrupt_object"
    assert error["message"].startswith("batch.uri: not a gzip object")


def test_relative_uri(kernel, tmp_path):
    status, error = _refusal(kernel, step_request({"uri": "b.jsonl", "rows": 1, "sha256": "0" * 64}))
    assert status == 400 and error["message"].startswith("batch.uri: 'b.jsonl' is not file:///abs/path")


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"loss": {"type": "dpo"}}, "loss.type: Input should be 'ppo_clip' or 'reinforce'"),
        ({"baseVersion": -1}, "baseVersion: Input should be greater than or equal to 0"),
        ({"batch": {"uri": "/x", "rows": 1, "sha256": "xyz"}}, "batch.sha256: String should match pattern"),
        ({"surprise": True}, "surprise: Extra inputs are not permitted"),
    ],
)
def test_invalid_request(kernel, tmp_path, patch, message):
    body = step_request(write_batch(tmp_path / "b.jsonl", [row("four", 1.0)]))
    for key, value in patch.items():
        body[key] = {**body[key], **value} if isinstance(value, dict) and key == "loss" else value
    status, error = _refusal(kernel, body)
    assert status == 400 and error["type"] == "invalid_request"
    assert error["message"].startswith(message), error["message"]


def test_body_that_is_not_json(kernel):
    response = kernel.client.post("/v1/train/step", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "the body is not valid JSON"


def test_unknown_policy(kernel, tmp_path):
    body = step_request(write_batch(tmp_path / "b.jsonl", [row("four", 1.0)]))
    status, error = _refusal(kernel, {**body, "policy": "other"})
    assert status == 404 and error["type"] == "policy_not_found"
    assert error["message"] == f"policy: this kernel holds policy {POLICY!r}, not 'other'"
    for method, path in [("GET", "/v1/policies/other"), ("POST", "/v1/policies/other/checkpoint")]:
        response = kernel.client.request(method, path, json={"uri": str(tmp_path / "c")} if method == "POST" else None)
        assert response.status_code == 404 and response.json()["error"]["type"] == "policy_not_found"
    assert kernel.client.get(f"/v1/policies/{POLICY}").json() == {"policy": POLICY, "policyVersion": 0, "lineage": None}


def test_unknown_route(kernel):
    response = kernel.client.get("/v1/nothing")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == "no route for GET /v1/nothing"
