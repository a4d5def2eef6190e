"""A train step is all or nothing: a failure in mini-batch 2 of 3 leaves the policy as it was (rolled back from
a CPU snapshot, or marked dirty until a restore when there is none), and the retry applies the request once.

Weights and optimizer state are compared exactly (torch.equal), not with a tolerance: a rollback copies the
saved bits back, and the retry then runs the same arithmetic on the same bits in one process as a fresh kernel
does, so any difference at all means something of the failed attempt was left behind."""

import itertools

import pytest
import torch
from conftest import params, row, same_params, step_request, write_batch

LORA = {"lora_rank": 4, "lora_alpha": 8.0}
QUESTIONS = ["What is two plus two?", "What is one plus three?", "Name a river."]


def three_mini_batches(tmp_path) -> dict:
    """A request of three optimizer steps, one per prompt."""
    rows = [
        {**row(c, a), "messages": [{"role": "user", "content": q}]}
        for q in QUESTIONS
        for c, a in (("The answer is four.", 1.0), ("Seven", -1.0))
    ]
    return {**step_request(write_batch(tmp_path / "b.jsonl", rows)), "update": {"miniBatchPrompts": 1}}


def fail_optimizer_step(monkeypatch, policy, call: int, after_update: bool) -> None:
    """The policy's optimizer raises a CUDA-style out-of-memory error on its `call`-th step (from 1), after
    that step has updated the weights or before it has; its other steps run as usual."""
    real, calls = policy.optimizer.step, itertools.count(1)

    def step(*args, **kwargs):
        failing = next(calls) == call
        if failing and not after_update:
            raise torch.OutOfMemoryError("injected before the update")
        result = real(*args, **kwargs)
        if failing:
            raise torch.OutOfMemoryError("injected after the update")
        return result

    monkeypatch.setattr(policy.optimizer, "step", step)


def optimizer_state(policy) -> dict[str, dict[str, torch.Tensor]]:
    """The optimizer's state per parameter name, cloned (empty before the first step)."""
    names = {id(p): name for name, p in policy.trainable().items()}
    return {
        names[id(p)]: {k: v.clone() for k, v in state.items()} for p, state in policy.optimizer.state.items()
    }


def same_optimizer_state(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[n].keys() == b[n].keys() and all(torch.equal(a[n][k], b[n][k]) for k in a[n]) for n in a
    )


def clean_application(make_kernel, request: dict, **config) -> tuple[dict, dict]:
    """The weights and optimizer state of the request applied once on a fresh kernel."""
    fresh = make_kernel(**config)
    response = fresh.client.post("/v1/train/step", json=request)
    assert response.status_code == 200, response.text
    return params(fresh.policy), optimizer_state(fresh.policy)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_a_failed_mini_batch_is_rolled_back_and_the_retry_applies_the_request_once(
    make_kernel, monkeypatch, tmp_path, lora
):
    config = LORA if lora else {}
    kernel = make_kernel(**config)
    request = three_mini_batches(tmp_path)
    before = params(kernel.policy)
    fail_optimizer_step(monkeypatch, kernel.policy, call=2, after_update=True)

    failed = kernel.client.post("/v1/train/step", json=request)
    assert failed.status_code == 500
    assert failed.json()["error"]["message"] == (
        "OutOfMemoryError: injected after the update (rolled back: the policy is still at version 0, and the step "
        "can be retried)"
    )
    assert kernel.client.get("/v1/policies/pol").json()["policyVersion"] == 0
    assert same_params(before, params(kernel.policy))
    assert optimizer_state(kernel.policy) == {}  # as before the first step: AdamW's state was created by it
    assert all(p.grad is None for p in kernel.policy.trainable().values())

    retried = kernel.client.post("/v1/train/step", json=request)
    assert retried.status_code == 200, retried.text
    assert retried.json()["applied"] is True and retried.json()["policyVersion"] == 1
    assert retried.json()["metrics"]["optimizerSteps"] == 3
    weights, state = clean_application(make_kernel, request, **config)
    assert not same_params(before, weights)
    assert same_params(weights, params(kernel.policy))
    assert same_optimizer_state(state, optimizer_state(kernel.policy))


def test_a_rollback_restores_existing_optimizer_state_in_place(make_kernel, monkeypatch, tmp_path):
    """The second request of a kernel: AdamW's moments and step counts exist and are put back, not dropped."""
    kernel = make_kernel()
    first = three_mini_batches(tmp_path)
    assert kernel.client.post("/v1/train/step", json=first).status_code == 200
    second = {**first, "idempotencyKey": "run/iter-1/pol", "iteration": 1, "baseVersion": 1}
    before, state_before = params(kernel.policy), optimizer_state(kernel.policy)
    fail_optimizer_step(monkeypatch, kernel.policy, call=2, after_update=True)

    assert kernel.client.post("/v1/train/step", json=second).status_code == 500
    assert same_params(before, params(kernel.policy))
    assert same_optimizer_state(state_before, optimizer_state(kernel.policy))
    assert kernel.client.post("/v1/train/step", json=second).json()["policyVersion"] == 2

    fresh = make_kernel()
    for request in (first, second):
        assert fresh.client.post("/v1/train/step", json=request).status_code == 200
    assert same_params(params(fresh.policy), params(kernel.policy))
    assert same_optimizer_state(optimizer_state(fresh.policy), optimizer_state(kernel.policy))


def test_without_a_snapshot_a_failed_step_leaves_the_policy_dirty_until_a_restore(
    make_kernel, monkeypatch, tmp_path
):
    kernel = make_kernel(step_snapshot_max_gib=0)
    request = three_mini_batches(tmp_path)
    saved = str(tmp_path / "v0")
    assert kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": saved}).status_code == 200
    fail_optimizer_step(monkeypatch, kernel.policy, call=2, after_update=True)

    failed = kernel.client.post("/v1/train/step", json=request)
    assert failed.status_code == 500
    assert failed.json()["error"]["message"] == (
        "OutOfMemoryError: injected after the update (the policy is dirty until a checkpoint is restored)"
    )
    dirty = (
        "policy 'pol': a step failed after moving the weights of version 0 (OutOfMemoryError: injected after the "
        "update), and no snapshot could undo it (one takes 0.0 GiB per rank, over --step-snapshot-max-gib 0); "
        "restore a checkpoint (POST /v1/policies/pol/restore) first"
    )
    refused = [
        kernel.client.post("/v1/train/step", json=request),
        kernel.client.post("/v1/policies/pol/checkpoint", json={"uri": saved}),
        kernel.client.post("/v1/policies/pol/publish", json={"uri": str(tmp_path / "snap"), "version": 0}),
    ]
    for response in refused:
        assert response.status_code == 409
        assert response.json()["error"] == {"type": "policy_dirty", "message": dirty, "code": "policy_dirty"}
    assert not (tmp_path / "snap").exists()

    assert kernel.client.post("/v1/policies/pol/restore", json={"uri": saved}).status_code == 200
    retried = kernel.client.post("/v1/train/step", json=request)
    assert retried.status_code == 200, retried.text
    assert retried.json()["policyVersion"] == 1
    weights, state = clean_application(make_kernel, request)
    assert same_params(weights, params(kernel.policy))
    assert same_optimizer_state(state, optimizer_state(kernel.policy))


def test_a_failure_before_the_first_optimizer_step_changes_nothing_and_dirties_nothing(
    make_kernel, monkeypatch, tmp_path
):
    kernel = make_kernel(step_snapshot_max_gib=0)
    request = three_mini_batches(tmp_path)
    before = params(kernel.policy)
    fail_optimizer_step(monkeypatch, kernel.policy, call=1, after_update=False)

    failed = kernel.client.post("/v1/train/step", json=request)
    assert failed.status_code == 500
    assert failed.json()["error"]["message"] == "OutOfMemoryError: injected before the update"
    assert same_params(before, params(kernel.policy))
    assert kernel.client.post("/v1/train/step", json=request).json()["policyVersion"] == 1
