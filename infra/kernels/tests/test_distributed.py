"""The kernel under torchrun on CPU (gloo, 2 ranks): a train step equals the single-process step, a checkpoint
written by 2 ranks restores on 1 and on 2, and rank 0's HTTP API serves sampling and publishing from its
replica. Each test starts `torchrun --nproc-per-node 2 -m selfplay_kernel serve` as a real process tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import torch
from conftest import POLICY, row, step_request, token_logprobs, write_batch
from safetensors.torch import load_file

LORA = {"lora_rank": 4, "lora_alpha": 8.0}
MICRO_BATCH = 2

# Five rows of different lengths and two roles: with micro-batches of 2, rank 0 trains on 3 rows (2 passes),
# rank 1 on 2 rows (1 pass and 1 padding pass).
ROWS = [
    row("four", 1.0),
    row("The answer is \\boxed{4} because two and two make four.", -0.5),
    row("", 0.25),
    row("Seven", -1.0),
    row("One two three four five six seven eight nine ten.", 0.75, role="proposer"),
]
# KL (reference model sharded too, or LoRA's adapter switched off) and entropy terms in the loss.
LOSS = {"klCoef": 0.05, "entropyCoef": 0.01}
OPTIMIZER = {"learningRate": 1e-3}
# How far (L2, per tensor) two ranks' weights may be from one rank's, as a share of how far the steps moved them
# (`assert_same_update`). Measured on a 2-core x86 CPU with 1 and 2 threads: at most 2e-4. With rank 1's rows
# left out of the gradient: 0.7 or more on every tensor; with the gradient averaged over the ranks instead of
# summed (half of it, which AdamW mostly hides): 0.01 to 0.1 on a third of the tensors after the first step
# (and `gradNorm` half the one rank's).
UPDATE_RTOL = 1e-2


@contextmanager
def torchrun_kernel(
    model: str,
    tmp_path: Path,
    lora: bool,
    threads: int = 1,
    program: Sequence[str] = ("-m", "selfplay_kernel"),
    env: Mapping[str, str] | None = None,
) -> Iterator[httpx.Client]:
    """`serve` of `program` on 2 CPU ranks of `threads` threads each, with `env` added to the environment;
    yields a client of rank 0's API. SIGTERM at the end must stop every rank: rank 0 shuts its server down and
    stops rank 1 (torchrun itself then exits 1, as it does on any signal)."""
    args = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    args += [*program, "serve", "--model", model, "--policy", POLICY, "--device", "cpu"]
    args += ["--port", "0", "--micro-batch-size", str(MICRO_BATCH), "--insecure-no-token"]
    if lora:
        args += ["--lora-rank", str(LORA["lora_rank"]), "--lora-alpha", str(LORA["lora_alpha"])]
    env = {**{k: v for k, v in os.environ.items() if k != "SELFPLAY_KERNEL_TOKEN"}, **(env or {}), "OMP_NUM_THREADS": str(threads), "PYTHONPATH": os.pathsep.join(sys.path)}
    log = (tmp_path / "torchrun.log").open("w")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True, env=env, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert line, f"torchrun exited before serving: {(tmp_path / 'torchrun.log').read_text()[-3000:]}"
        announced = json.loads(line)
        assert announced["worldSize"] == 2
        with httpx.Client(base_url=announced["url"], timeout=300) as client:
            yield client
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        logged = (tmp_path / "torchrun.log").read_text()
        assert "rank 1: stopped by rank 0" in logged and "Finished server process" in logged, logged[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def post(client, path: str, body: dict) -> dict:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def checkpoint(client, uri: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """Checkpoints through the API; the trainable tensors and the optimizer state it wrote."""
    post(client, f"/v1/policies/{POLICY}/checkpoint", {"uri": str(uri)})
    return load_file(str(uri / "trainable.safetensors")), torch.load(uri / "optimizer.pt", weights_only=True)


def assert_close_states(a: tuple[dict, dict], b: tuple[dict, dict], atol: float) -> None:
    (tensors_a, opt_a), (tensors_b, opt_b) = a, b
    assert tensors_a.keys() == tensors_b.keys()
    for name in tensors_a:
        assert torch.allclose(tensors_a[name], tensors_b[name], rtol=0, atol=atol), name
    assert_close_optimizer_states(opt_a, opt_b, len(tensors_a))


def assert_same_update(start: dict, two: tuple[dict, dict], one: tuple[dict, dict]) -> None:
    """Two ranks moved every trainable tensor as one rank did, up to float rounding. Rounding is measured against
    the update itself, not in absolute terms: the ranks sum the gradient in another order than one process does
    (an order that also changes with the CPU's kernels and thread count), and AdamW divides each gradient entry
    by its running magnitude plus eps (1e-8), so an entry whose gradient is near eps moves by lr x rounding/eps:
    about 1e-5, where an absolute tolerance of 1e-5 failed on another machine. A wrong two-rank step (a rank's
    rows left out of the gradient, a gradient not summed over the ranks) changes whole tensors instead: a
    difference of the update's own order (UPDATE_RTOL says what was measured). A tensor no step moved (LoRA's A
    while its B is still 0) must not move on two ranks either."""
    (tensors_two, opt_two), (tensors_one, opt_one) = two, one
    assert tensors_two.keys() == tensors_one.keys() == start.keys()
    for name, mine in tensors_one.items():
        update = torch.linalg.vector_norm(mine.double() - start[name].double())
        difference = torch.linalg.vector_norm(tensors_two[name].double() - mine.double())
        assert difference <= UPDATE_RTOL * update, (name, float(difference), float(update))
    assert_close_optimizer_states(opt_two, opt_one, len(tensors_one))


def assert_close_optimizer_states(opt_a: dict, opt_b: dict, tensors: int) -> None:
    assert opt_a["state"].keys() == opt_b["state"].keys() and len(opt_a["state"]) == tensors
    for index, entry in opt_a["state"].items():
        other = opt_b["state"][index]
        assert int(entry["step"]) == int(other["step"])
        for key in ("exp_avg", "exp_avg_sq"):
            scale = float(entry[key].abs().max()) or 1.0
            assert torch.allclose(entry[key], other[key], rtol=1e-3, atol=1e-4 * scale), (index, key)


def assert_same_metrics(a: dict, b: dict) -> None:
    assert a["tokens"] == b["tokens"] and a["optimizerSteps"] == b["optimizerSteps"]
    keys = ("loss", "gradNorm", "kl", "clipFraction", "entropy", "dualClipFraction", "importanceWeightMean")
    for key in (*keys, "importanceWeightMax", "importanceWeightTruncatedFraction", "tokenExactFraction"):
        assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-7), key
    assert a["entropyByRole"] == pytest.approx(b["entropyByRole"], rel=1e-4)


def sampled_logprobs(client) -> list[float]:
    body = {
        "model": POLICY,
        "messages": [{"role": "user", "content": "What is two plus two?"}],
        "max_tokens": 6,
        "seed": 7,
        "logprobs": True,
    }
    choice = post(client, "/v1/chat/completions", body)["choices"][0]
    return [t["logprob"] for t in choice["logprobs"]["content"]]


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def sampled_earlier(policy, r: dict) -> dict:
    """The row with behaviour log-probs: those of `policy`'s weights now, so later versions train it off-policy."""
    logprobs = token_logprobs(policy, r["completion"], r["messages"])[:-1]
    return {**r, "behaviourLogprobs": logprobs.tolist()}


@pytest.mark.parametrize("threads", [1, 2], ids=["1thread", "2threads"])
@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_steps_on_two_ranks_equal_the_steps_on_one(make_kernel, tiny_model, tmp_path, lora, threads):
    """On any CPU and thread count (each side's torch threads are `threads`): see `assert_same_update`."""
    one = make_kernel(micro_batch_size=MICRO_BATCH, **(LORA if lora else {}))
    batch = write_batch(tmp_path / "b.jsonl", ROWS)
    first = step_request(batch, key="k1", loss=LOSS, optimizer=OPTIMIZER)
    # Two prompts' mini-batches, twice: four optimizer steps, behaviour log-probs filled on each rank's rows.
    second = step_request(batch, key="k2", base=1, loss=LOSS, optimizer=OPTIMIZER)
    second["update"] = {"miniBatchPrompts": 1, "epochs": 2}
    second["batch"] = write_batch(
        tmp_path / "b2.jsonl", ROWS + [row("Eight", 0.5, messages=[{"role": "user", "content": "And 4+4?"}])]
    )
    # The off-policy options over four steps on rows sampled by version 0: pi_old scored on each rank's rows,
    # importance weights, dual-clip, a token-exact row.
    off_policy = {**LOSS, "offPolicy": "tis", "dualClip": 3.0}
    third = step_request(batch, key="k3", base=2, loss=off_policy, optimizer=OPTIMIZER)
    third["update"] = second["update"]
    ids = one.policy.tokenizer("Nine", add_special_tokens=False)["input_ids"]
    extra = row("Nine", -0.5, messages=[{"role": "user", "content": "And 4+5?"}], completionTokens=[{"ids": ids}])
    third["batch"] = write_batch(tmp_path / "b3.jsonl", [sampled_earlier(one.policy, r) for r in [*ROWS, extra]])
    start = checkpoint(one.client, tmp_path / "one-start")[0]
    with torch_threads(threads), torchrun_kernel(tiny_model, tmp_path, lora, threads) as two:
        for request in (first, second, third):
            expected = post(one.client, "/v1/train/step", request)
            got = post(two, "/v1/train/step", request)
            assert got["policyVersion"] == expected["policyVersion"]
            assert_same_metrics(got["metrics"], expected["metrics"])
            assert_same_update(
                start,
                checkpoint(two, tmp_path / f"two-{request['idempotencyKey']}"),
                checkpoint(one.client, tmp_path / f"one-{request['idempotencyKey']}"),
            )
            # Rank 0 samples from its replica, which follows every step.
            assert sampled_logprobs(two) == pytest.approx(sampled_logprobs(one.client), abs=1e-4)
        assert got["metrics"]["optimizerSteps"] == 4
        assert got["metrics"]["tokenExactFraction"] == pytest.approx(1 / (len(ROWS) + 1))
        assert got["metrics"]["importanceWeightMean"] != pytest.approx(1.0, abs=1e-3)
        published = post(two, f"/v1/policies/{POLICY}/publish", {"uri": str(tmp_path / "snap"), "version": 3})
        assert published["format"] == ("lora" if lora else "full")
        assert (tmp_path / "snap" / ("adapter_config.json" if lora else "config.json")).is_file()


def test_a_two_rank_checkpoint_restores_on_one_and_on_two(make_kernel, tiny_model, tmp_path):
    batch = write_batch(tmp_path / "b.jsonl", ROWS)
    first = step_request(batch, key="k1", loss=LOSS, optimizer=OPTIMIZER)
    second = step_request(batch, key="k2", base=1, loss=LOSS, optimizer=OPTIMIZER)
    with torchrun_kernel(tiny_model, tmp_path, lora=False) as two:
        post(two, "/v1/train/step", first)
        saved = checkpoint(two, tmp_path / "two-v1")
        after_second = post(two, "/v1/train/step", second)["metrics"]

        # On 1 rank: the same weights and optimizer state, so the next step is the one 2 ranks took.
        one = make_kernel(micro_batch_size=MICRO_BATCH)
        restored = post(one.client, f"/v1/policies/{POLICY}/restore", {"uri": str(tmp_path / "two-v1")})
        assert restored["policyVersion"] == 1
        assert_close_states(checkpoint(one.client, tmp_path / "one-v1"), saved, atol=0)
        assert_same_metrics(post(one.client, "/v1/train/step", second)["metrics"], after_second)
        assert post(one.client, "/v1/train/step", first)["applied"] is False  # applied keys travel too

        # On 2 ranks, back from version 2: the weights of version 1 exactly, and again the same second step.
        assert post(two, f"/v1/policies/{POLICY}/restore", {"uri": str(tmp_path / "two-v1")})["policyVersion"] == 1
        assert_close_states(checkpoint(two, tmp_path / "two-v1-again"), saved, atol=0)
        again = post(two, "/v1/train/step", {**second, "idempotencyKey": "k2-again"})["metrics"]
        assert_same_metrics(again, after_second)

        # A checkpoint that is not there fails on every rank alike, and the ranks go on serving.
        missing = two.post(f"/v1/policies/{POLICY}/restore", json={"uri": str(tmp_path / "nothing")})
        assert missing.status_code == 404 and missing.json()["error"]["type"] == "checkpoint_not_found"
        assert two.get(f"/v1/policies/{POLICY}").json()["policyVersion"] == 2
        bad_batch = {**second, "idempotencyKey": "k3", "baseVersion": 2, "batch": {**batch, "sha256": "0" * 64}}
        refused = two.post("/v1/train/step", json=bad_batch)  # a batch whose bytes do not match: corrupt
        assert refused.status_code == 422 and refused.json()["error"]["type"] == "corrupt_object"
        assert post(two, "/v1/train/step", {**second, "idempotencyKey": "k4", "baseVersion": 2})["applied"]


def test_a_step_that_fails_on_one_rank_is_rolled_back_on_every_rank(make_kernel, tiny_model, tmp_path):
    """Rank 1's second optimizer step of three raises after updating its shards, while rank 0's succeeds: both
    learn of it at the end of that step and roll their shards back, exactly, and the retry applies the request
    once (the weights one rank's clean application gives, up to the ranks' rounding: `assert_same_update`)."""
    questions = [[{"role": "user", "content": f"Question {i % 3}?"}] for i in range(len(ROWS) + 1)]
    rows = [{**r, "messages": q} for r, q in zip([*ROWS, ROWS[0]], questions)]
    batch = write_batch(tmp_path / "b.jsonl", rows)
    request = {**step_request(batch, loss=LOSS, optimizer=OPTIMIZER), "update": {"miniBatchPrompts": 1}}
    failing = {"SELFPLAY_TEST_FAIL_RANK": "1", "SELFPLAY_TEST_FAIL_STEP": "2"}
    program = [str(Path(__file__).with_name("failing_kernel.py"))]
    with torchrun_kernel(tiny_model, tmp_path, lora=False, program=program, env=failing) as two:
        start, _ = checkpoint(two, tmp_path / "start")
        failed = two.post("/v1/train/step", json=request)
        assert failed.status_code == 500
        assert failed.json()["error"]["message"] == (
            "OutOfMemoryError: injected on rank 1 after the update (rolled back: the policy is still at version 0, "
            "and the step can be retried)"
        )
        assert two.get(f"/v1/policies/{POLICY}").json()["policyVersion"] == 0
        tensors, optimizer_state = checkpoint(two, tmp_path / "after-failure")
        assert tensors.keys() == start.keys() and all(torch.equal(tensors[n], start[n]) for n in start)
        assert optimizer_state["state"] == {}

        retried = post(two, "/v1/train/step", request)
        assert retried["policyVersion"] == 1 and retried["metrics"]["optimizerSteps"] == 3
        one = make_kernel(micro_batch_size=MICRO_BATCH)
        post(one.client, "/v1/train/step", request)
        assert_same_update(start, checkpoint(two, tmp_path / "two-v1"), checkpoint(one.client, tmp_path / "one-v1"))
