"""Checkpoint / restore / publish, and a second kernel serving a published snapshot."""

import json
import shutil

import pytest
import torch
from conftest import PROMPT, params, row, same_params, step_request, write_batch

LORA = {"lora_rank": 4, "lora_alpha": 8.0}
PROBE = torch.tensor([[5, 17, 99, 300, 7, 42, 2]])


def logits(kernel) -> torch.Tensor:
    with torch.no_grad():
        return kernel.policy.model(input_ids=PROBE.to(kernel.policy.device)).logits.cpu()


def train(kernel, tmp_path, key: str, base: int) -> dict:
    batch = write_batch(tmp_path / f"{key}.jsonl", [row("The answer is four.", 1.0), row("Seven", -1.0)])
    response = kernel.client.post("/v1/train/step", json=step_request(batch, key=key, base=base))
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_checkpoint_restore_round_trip(make_kernel, tmp_path, lora):
    config = LORA if lora else {}
    a = make_kernel(**config)
    first = train(a, tmp_path, "k1", 0)
    at_v1 = logits(a)
    uri = str(tmp_path / "ckpt")
    saved = a.client.post("/v1/policies/pol/checkpoint", json={"uri": uri}).json()
    assert saved["policyVersion"] == 1 and saved["bytes"] > 0
    marker = (tmp_path / "ckpt" / "COMPLETE").stat().st_mtime_ns
    assert a.client.post("/v1/policies/pol/checkpoint", json={"uri": "file://" + uri}).json()["bytes"] == saved["bytes"]
    assert (tmp_path / "ckpt" / "COMPLETE").stat().st_mtime_ns == marker  # idempotent: not rewritten

    train(a, tmp_path, "k2", 1)
    assert not torch.equal(logits(a), at_v1)
    assert a.client.post("/v1/policies/pol/restore", json={"uri": uri}).json() == {"policy": "pol", "policyVersion": 1, "lineage": "run"}
    assert torch.equal(logits(a), at_v1)
    again = a.client.post(
        "/v1/train/step", json=step_request(write_batch(tmp_path / "x.jsonl", [row("x", 1.0)]), key="k1")
    )
    assert again.json() == {**first, "applied": False}  # the applied key came back with the checkpoint

    b = make_kernel(**config)
    assert b.client.post("/v1/policies/pol/restore", json={"uri": uri}).json()["policyVersion"] == 1
    assert torch.equal(logits(b), at_v1)
    # Optimizer state came back too: the same next step gives the same weights.
    train(a, tmp_path, "k3", 1)
    train(b, tmp_path, "k3", 1)
    assert same_params(params(a.policy), params(b.policy))


def test_restore_refuses_incomplete_and_mismatched_checkpoints(make_kernel, tmp_path):
    full = make_kernel()
    uri = str(tmp_path / "ckpt")
    full.client.post("/v1/policies/pol/checkpoint", json={"uri": uri})
    shutil.copytree(uri, tmp_path / "half")
    (tmp_path / "half" / "COMPLETE").unlink()
    response = full.client.post("/v1/policies/pol/restore", json={"uri": str(tmp_path / "half")})
    assert response.status_code == 404
    assert (
        response.json()["error"]["message"]
        == f"uri: no complete checkpoint at {tmp_path / 'half'} (no COMPLETE marker)"
    )

    lora = make_kernel(**LORA)
    response = lora.client.post("/v1/policies/pol/restore", json={"uri": uri})
    assert response.status_code == 400
    assert "written with LoRA rank 0; this kernel runs rank 4" in response.json()["error"]["message"]


@pytest.mark.parametrize("file", ["trainable.safetensors", "optimizer.pt", "state.json"])
def test_a_corrupt_checkpoint_is_422_corrupt_object_and_changes_nothing(make_kernel, tmp_path, file):
    """A truncated file of a complete checkpoint is corruption, not an outage: 422 (the client's CorruptData, never
    retried) naming the file, where it was a 500 retried forever."""
    kernel = make_kernel()
    uri = str(tmp_path / "ckpt")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri}).status_code == 200
    path = tmp_path / "ckpt" / file
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    before = params(kernel.policy)
    response = kernel.client.post("/v1/policies/pol/restore", json={"uri": uri})
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["type"] == "corrupt_object" and error["code"] == "corrupt_object"
    assert error["message"].startswith(f"{uri}/{file} is corrupt: ")
    assert same_params(params(kernel.policy), before)


@pytest.mark.parametrize("file", ["trainable.safetensors", "optimizer.pt", "rng.pt"])
def test_a_checkpoint_with_other_bytes_of_the_same_length_is_422_corrupt_object(make_kernel, tmp_path, file):
    """Bit rot or a torn overwrite that keeps the size: the files still decode (a safetensors file's tensor bytes
    are read as they are), so only the sha256 the COMPLETE marker names tells them from what was written. Before
    the marker named them, this restore answered 200 with the rotten weights."""
    kernel = make_kernel()
    uri = str(tmp_path / "ckpt")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri}).status_code == 200
    path = tmp_path / "ckpt" / file
    data = bytearray(path.read_bytes())
    at = len(data) - 64 if file == "trainable.safetensors" else len(data) // 2
    data[at : at + 4] = bytes(b ^ 0xFF for b in data[at : at + 4])
    path.write_bytes(bytes(data))
    before = params(kernel.policy)
    response = kernel.client.post("/v1/policies/pol/restore", json={"uri": uri})
    assert response.status_code == 422, response.text
    message = response.json()["error"]["message"]
    assert message.startswith(f"{uri}/{file} is corrupt: its sha256 is ")
    assert "not the one its COMPLETE marker names" in message
    assert same_params(params(kernel.policy), before)


def test_a_checkpoint_write_on_a_full_disk_is_507_storage_full(make_kernel, tmp_path, monkeypatch):
    """ENOSPC while a checkpoint is written is no outage that a retry outlasts: 507 `storage_full` (the client's
    non-retryable StorageFull, the run waiting for its operator), where it was a 500 retried forever."""
    import errno
    import os

    from selfplay_kernel import state

    def full_disk(tensors, filename):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    kernel = make_kernel()
    monkeypatch.setattr(state, "save_file", full_disk)
    uri = str(tmp_path / "ckpt")
    response = kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri})
    assert response.status_code == 507, response.text
    error = response.json()["error"]
    assert error["type"] == "storage_full"
    assert error["message"].startswith("storage full: free space or raise the retention, then `selfplay retry RUN` (")
    assert "No space left on device" in error["message"]
    monkeypatch.undo()
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri}).status_code == 200


def test_checkpoint_over_another_version_is_refused(make_kernel, tmp_path):
    kernel = make_kernel()
    uri = str(tmp_path / "ckpt")
    kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri})
    train(kernel, tmp_path, "k1", 0)
    refused = kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": uri})
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "checkpoint_conflict"
    assert "already holds a checkpoint of policy 'pol' version 0 of run None, not version 1" in refused.text
    fresh = make_kernel()
    assert fresh.client.post("/v1/policies/pol/restore", json={"uri": uri}).json()["policyVersion"] == 0


def _greedy(kernel, logprobs: bool = False) -> dict:
    body = {"model": "pol", "messages": PROMPT, "temperature": 0, "max_tokens": 12, "logprobs": logprobs}
    response = kernel.client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_pinned_snapshot_outlives_the_next_step(make_kernel, tmp_path):
    """A sampler pinned to version 1 keeps serving it while its own kernel trains on to version 4."""
    kernel = make_kernel()
    train(kernel, tmp_path, "k0", 0)
    uri = str(tmp_path / "snap1")
    kernel.client.post("/v1/policies/pol/publish", json={"uri": uri, "version": 1})
    at_v1 = _greedy(kernel, logprobs=True)
    loaded = kernel.client.post("/v1/sampler/load", json={"uri": uri, "version": 1, "pin": True}).json()
    assert loaded["loaded"] is True and loaded["weight_version"] == 1
    for i in range(1, 4):  # big steps: unpinned, the greedy answer would change
        train(kernel, tmp_path, f"k{i}", i)
    served = _greedy(kernel, logprobs=True)
    listed = kernel.client.get("/v1/models").json()["data"][0]
    assert listed["weight_version"] == 1 and listed["pinned"] is True
    assert served["system_fingerprint"] == "weights-v1"
    digest = json.loads((tmp_path / "snap1" / "COMPLETE").read_text())["sha256"]
    assert served["metadata"] == {"weight_version": f"1-{digest[:12]}"}  # a copy's answers name its weights
    for s, t in zip(served["choices"][0]["logprobs"]["content"], at_v1["choices"][0]["logprobs"]["content"]):
        assert s["logprob"] == pytest.approx(t["logprob"], abs=1e-4)
    # Unpinned, loading the live version goes back to the live weights.
    live = kernel.client.post("/v1/sampler/load", json={"uri": str(tmp_path / "nowhere"), "version": 4}).json()
    assert live == {"object": "sampler.load", "model": "pol", "weight_version": 4, "loaded": False}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_publish_then_load_in_another_kernel(make_kernel, tmp_path, lora):
    config = LORA if lora else {}
    trainer = make_kernel(**config)
    before = _greedy(trainer)["choices"][0]["message"]["content"]
    for i in range(3):  # big steps, so the greedy answer surely changes
        train(trainer, tmp_path, f"k{i}", i)
    uri = str(tmp_path / "snap")
    conflict = trainer.client.post("/v1/policies/pol/publish", json={"uri": uri, "version": 2})
    assert conflict.status_code == 409 and conflict.json()["error"]["type"] == "version_conflict"
    published = trainer.client.post("/v1/policies/pol/publish", json={"uri": uri, "version": 3}).json()
    assert published == {
        "uri": uri,
        "policyVersion": 3,
        "format": "lora" if lora else "full",
        "sha256": json.loads((tmp_path / "snap" / "COMPLETE").read_text())["sha256"],
    }
    assert (tmp_path / "snap" / ("adapter_config.json" if lora else "config.json")).exists()
    assert (tmp_path / "snap" / "COMPLETE").exists()
    assert trainer.client.post("/v1/policies/pol/publish", json={"uri": uri, "version": 3}).json() == published

    sampler = make_kernel(**config)
    assert sampler.client.get("/v1/models").json()["data"][0]["weight_version"] == 0
    wrong = sampler.client.post("/v1/sampler/load", json={"uri": uri, "version": 4})
    assert wrong.status_code == 409 and "is version 3, not 4" in wrong.json()["error"]["message"]
    loaded = sampler.client.post("/v1/sampler/load", json={"uri": uri, "version": 3}).json()
    assert loaded["loaded"] is True and loaded["weight_version"] == 3
    assert sampler.client.get("/v1/models").json()["data"][0]["weight_version"] == 3
    served, live = _greedy(sampler, logprobs=True), _greedy(trainer, logprobs=True)
    assert served["choices"][0]["message"]["content"] == live["choices"][0]["message"]["content"] != before
    assert served["system_fingerprint"] == "weights-v3"
    for s, t in zip(served["choices"][0]["logprobs"]["content"], live["choices"][0]["logprobs"]["content"]):
        assert s["logprob"] == pytest.approx(t["logprob"], abs=1e-4)

    # Loading the version the live policy is at is a no-op (and goes back to the live weights).
    assert trainer.client.post("/v1/sampler/load", json={"uri": uri, "version": 3}).json()["loaded"] is False
    back = sampler.client.post("/v1/sampler/load", json={"uri": str(tmp_path / "nowhere"), "version": 0}).json()
    assert back == {"object": "sampler.load", "model": "pol", "weight_version": 0, "loaded": False}
    assert _greedy(sampler)["choices"][0]["message"]["content"] == before


def test_load_of_a_missing_snapshot(make_kernel, tmp_path):
    kernel = make_kernel()
    response = kernel.client.post("/v1/sampler/load", json={"uri": str(tmp_path / "none"), "version": 1})
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "snapshot_not_found"


def test_a_local_location_writes_only_inside_itself(tmp_path):
    from selfplay_kernel.errors import KernelError
    from selfplay_kernel.storage import parse

    loc = parse(str(tmp_path / "ckpt"))
    (tmp_path / "outside").mkdir()
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "link").symlink_to(tmp_path / "outside")
    for name in ("../x", "/abs", "a//b", "link/x"):
        with pytest.raises(KernelError) as refused:
            loc.write(name, b"data")
        assert refused.value.type == "unsafe_path", name
    assert list((tmp_path / "outside").iterdir()) == [] and not (tmp_path / "x").exists()
    loc.write("sub/ok", b"data")
    assert (tmp_path / "ckpt" / "sub" / "ok").read_bytes() == b"data"
