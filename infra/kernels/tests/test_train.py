"""The training step: direction of the update, loss mask, micro-batching, PPO clip, KL, entropy, idempotency,
versions."""

import dataclasses
import math

import pytest
import torch
from conftest import params, row, same_params, step_request, token_logprobs, training_rows, write_batch

from selfplay_kernel.chat import encode_completion
from selfplay_kernel.encoding import encode_rows
from selfplay_kernel.micro_batch import micro_batch_loss
from selfplay_kernel.requests import LossSpec
from selfplay_kernel.scoring import completion_scores
from selfplay_kernel.trainer import accumulate_gradients

LORA = {"lora_rank": 4, "lora_alpha": 8.0}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("loss_type", ["ppo_clip", "reinforce"])
def test_advantage_sign_moves_the_completion_logprob(make_kernel, tmp_path, lora, loss_type):
    kernel = make_kernel(**(LORA if lora else {}))
    good, bad = "The answer is four.", "Seven hundred"
    before = {c: float(token_logprobs(kernel.policy, c).sum()) for c in (good, bad)}
    batch = write_batch(tmp_path / "b.jsonl", [row(good, 1.0), row(bad, -1.0)] * 2)
    response = kernel.client.post("/v1/train/step", json=step_request(batch, loss={"type": loss_type}))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["applied"] is True and body["policyVersion"] == 1
    assert body["metrics"]["tokens"] > 0 and body["metrics"]["gradNorm"] > 0
    after = {c: float(token_logprobs(kernel.policy, c).sum()) for c in (good, bad)}
    assert after[good] > before[good] + 0.1
    assert after[bad] < before[bad] - 0.1


def test_masked_tokens_get_no_gradient(make_kernel):
    policy = make_kernel().policy
    completion = "Let x be 12. Retrieved: the city river. So x = 12."
    span = (completion.index("Retrieved"), completion.index(" So"))
    encoded = encode_completion(policy.tokenizer, completion, [span])
    assert 0 < encoded.in_loss.count(False) < len(encoded.ids) - 1 and encoded.in_loss[-1]
    (seq,) = encode_rows(policy, training_rows([row(completion, 1.0, lossMaskSpans=[list(span)])]))
    spec = LossSpec(
        type="ppo_clip", normalization="token_mean", normalizerConstant=1, clipLow=0.2, clipHigh=0.2, klCoef=0.1
    )
    part = micro_batch_loss(policy, [seq], [1.0], spec)
    part.logp.retain_grad()
    part.loss.backward()
    grad, mask = part.logp.grad[0], part.mask[0]
    assert mask.tolist() == encoded.in_loss
    assert torch.all(grad[~mask] == 0)
    assert torch.all(grad[mask] != 0)


@pytest.mark.parametrize("entropy_coef", [0.0, 0.01], ids=["no-entropy", "entropy"])
@pytest.mark.parametrize("normalization", ["dr_grpo", "token_mean", "sequence_mean"])
def test_micro_batch_accumulation_equals_the_full_batch(make_kernel, normalization, entropy_coef):
    policy = make_kernel().policy
    rows = [
        row("four", 1.0),
        row("The answer is \\boxed{4} because two and two make four.", -0.5, lossMaskSpans=[[4, 10]]),
        row("", 0.25),
        row("Seven", -1.0),
        row("One two three four five six seven eight nine ten.", 0.75, role="proposer"),
    ]
    seqs = encode_rows(policy, training_rows(rows))
    seqs[3].behaviour = [-7.0] * len(seqs[3].completion)  # ratio != 1: exercises the clip
    spec = LossSpec(
        type="ppo_clip",
        normalization=normalization,
        normalizerConstant=32,
        clipLow=0.2,
        clipHigh=0.2,
        klCoef=0.05,
        entropyCoef=entropy_coef,
    )
    grads, metrics = [], []
    for size in (1, 2, len(rows)):
        policy.config = dataclasses.replace(policy.config, micro_batch_size=size)
        metrics.append(dataclasses.asdict(accumulate_gradients(policy, seqs, spec)))
        grads.append({n: p.grad.clone() for n, p in policy.trainable().items()})
    # pytest.approx compares flat dicts only: the per-role values are compared on their own (and the gradient
    # norm, not taken before the optimizer step, is NaN in all).
    by_role = [m.pop("entropyByRole") for m in metrics]
    tokens_by_role = [m.pop("tokensByRole") for m in metrics]
    assert by_role[-1].keys() == {"reasoner", "proposer"}
    assert tokens_by_role[0] == tokens_by_role[1] == tokens_by_role[2]
    for other, other_metrics, other_by_role in zip(grads[:-1], metrics[:-1], by_role[:-1]):
        assert other_by_role == pytest.approx(by_role[-1], rel=1e-5)
        assert other_metrics == pytest.approx(metrics[-1], rel=1e-5, abs=1e-7, nan_ok=True)
        for name, full in grads[-1].items():
            assert torch.allclose(other[name], full, rtol=1e-4, atol=1e-7), name


def test_ppo_clip_fraction_and_clipped_tokens_have_no_gradient(make_kernel, tmp_path):
    kernel = make_kernel()
    completion = "The answer is four."
    current = token_logprobs(kernel.policy, completion).tolist()
    higher = [lp - 1.0 for lp in current]  # behaviour was less likely: r = e > 1 + clipHigh

    def step(key: str, advantage: float, behaviour: list[float], base: int) -> dict:
        batch = write_batch(tmp_path / f"{key}.jsonl", [row(completion, advantage, behaviourLogprobs=behaviour)])
        response = kernel.client.post("/v1/train/step", json=step_request(batch, key=key, base=base))
        assert response.status_code == 200, response.text
        return response.json()["metrics"]

    before = params(kernel.policy)
    clipped = step("k1", 1.0, higher, 0)
    assert clipped["clipFraction"] == 1.0 and clipped["gradNorm"] == 0.0
    assert same_params(before, params(kernel.policy))  # AdamW with zero gradient and no decay: no change

    against = step("k2", -1.0, higher, 1)  # moving against the advantage is never clipped
    assert against["clipFraction"] == 0.0 and against["gradNorm"] > 0

    # Without the EOS value (the sampler does not report it): the EOS token falls back to ratio 1.
    now = token_logprobs(kernel.policy, completion).tolist()
    partial = step("k3", 1.0, now[:-1], 2)
    assert partial["clipFraction"] == 0.0 and partial["gradNorm"] > 0


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_kl_is_zero_at_the_reference_and_grows_after_a_step(make_kernel, tmp_path, lora):
    kernel = make_kernel(**(LORA if lora else {}))
    batch = write_batch(tmp_path / "b.jsonl", [row("The answer is four.", 1.0), row("Seven", -1.0)])
    first = kernel.client.post("/v1/train/step", json=step_request(batch, key="k1", loss={"klCoef": 0.1})).json()
    assert abs(first["metrics"]["kl"]) < 1e-6
    second = kernel.client.post(
        "/v1/train/step", json=step_request(batch, key="k2", base=1, loss={"klCoef": 0.1})
    ).json()
    assert second["metrics"]["kl"] > 1e-6


def _mean_entropy(policy, seqs) -> float:
    """The policy's mean next-token entropy over the loss tokens of `seqs`."""
    with torch.no_grad():
        logp, entropy = completion_scores(policy.model, seqs, policy.device, policy.tokenizer.pad_token_id, "value")
    total = tokens = 0.0
    for i, s in enumerate(seqs):
        in_loss = torch.tensor(s.in_loss)
        total += float(entropy[i, logp.shape[1] - len(s.completion) :][in_loss].sum())
        tokens += int(in_loss.sum())
    return total / tokens


def test_entropy_is_reported_per_role_and_its_bonus_raises_it(make_kernel, tmp_path):
    kernel = make_kernel()
    proposer = row("Ask about the river.", 0.0, role="proposer", group="proposer/doc-1")
    solvers = [row("The answer is four.", 0.0), row("Seven", 0.0)]
    seqs = encode_rows(kernel.policy, training_rows([proposer, *solvers]))
    before = {"proposer": _mean_entropy(kernel.policy, seqs[:1]), "reasoner": _mean_entropy(kernel.policy, seqs[1:])}
    batch = write_batch(tmp_path / "b.jsonl", [proposer, *solvers])

    # Zero advantages and no bonus: measured, but no gradient at all.
    measured = kernel.client.post("/v1/train/step", json=step_request(batch, key="k0")).json()["metrics"]
    assert measured["entropyByRole"] == pytest.approx(before, rel=1e-5)
    assert measured["entropy"] == pytest.approx(_mean_entropy(kernel.policy, seqs), rel=1e-5)
    assert measured["gradNorm"] == 0.0

    # The bonus alone moves the weights, towards a flatter next-token distribution.
    bonus = step_request(batch, key="k1", base=1, loss={"entropyCoef": 1.0})
    stepped = kernel.client.post("/v1/train/step", json=bonus).json()["metrics"]
    assert stepped["gradNorm"] > 0
    assert _mean_entropy(kernel.policy, seqs) > measured["entropy"] + 1e-3


def test_repeated_key_applies_nothing(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    first = kernel.client.post("/v1/train/step", json=step_request(batch)).json()
    snapshot = params(kernel.policy)
    # Even with another base version: the key decides, so a retry after success never conflicts.
    again = kernel.client.post("/v1/train/step", json=step_request(batch, base=0)).json()
    assert again == {**first, "applied": False}
    assert same_params(snapshot, params(kernel.policy))
    assert kernel.client.get("/v1/policies/pol").json()["policyVersion"] == 1


def test_version_conflict(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    response = kernel.client.post("/v1/train/step", json=step_request(batch, base=3))
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["type"] == "version_conflict"
    assert (
        error["message"] == "baseVersion: the batch was sampled from version 3 of policy 'pol', which is at version 0"
    )


def test_fully_masked_batch_still_counts_as_a_step(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0, lossMaskSpans=[[0, 4]])])
    body = kernel.client.post("/v1/train/step", json=step_request(batch, loss={"normalization": "token_mean"})).json()
    assert body["policyVersion"] == 1 and body["metrics"]["tokens"] == 1  # only EOS is left


def _step_metrics(kernel, tmp_path, rows: list[dict], loss: dict) -> dict:
    batch = write_batch(tmp_path / "b.jsonl", rows)
    request = step_request(batch, loss={"normalization": "token_mean", **loss})
    response = kernel.client.post("/v1/train/step", json=request)
    assert response.status_code == 200, response.text
    return response.json()["metrics"]


def test_dual_clip_caps_negative_advantage_tokens_and_reports_its_fraction(make_kernel, tmp_path):
    kernel = make_kernel()
    completion = "The answer is four."
    current = token_logprobs(kernel.policy, completion).tolist()
    n = len(current)
    far = [lp - 2.0 for lp in current[:-1]]  # r = e^2 = 7.39 on every token but EOS (no value: r = 1)
    rows = [row(completion, -1.0, behaviourLogprobs=far)]
    metrics = _step_metrics(kernel, tmp_path, rows, {"dualClip": 3.0})
    # Per token -min(r*A, clip(r)*A) = 7.39, capped at 3 * 1; the EOS token: 1. token_mean over n tokens.
    assert metrics["dualClipFraction"] == pytest.approx((n - 1) / n)
    assert metrics["loss"] == pytest.approx((3.0 * (n - 1) + 1.0) / n, rel=1e-4)
    assert metrics["importanceWeightMean"] == pytest.approx(math.exp(2), rel=1e-4)
    assert metrics["importanceWeightTruncatedFraction"] == 1.0  # 7.39 is outside the clip range [0.8, 1.2]


def test_without_dual_clip_the_same_batch_is_plain_ppo(make_kernel, tmp_path):
    kernel = make_kernel()
    completion = "The answer is four."
    current = token_logprobs(kernel.policy, completion).tolist()
    n = len(current)
    rows = [row(completion, -1.0, behaviourLogprobs=[lp - 2.0 for lp in current[:-1]])]
    metrics = _step_metrics(kernel, tmp_path, rows, {})
    assert metrics["dualClipFraction"] == 0.0
    assert metrics["loss"] == pytest.approx((math.exp(2) * (n - 1) + 1.0) / n, rel=1e-4)


def test_tis_weights_the_on_policy_ratio_by_the_truncated_importance_weight(make_kernel, tmp_path):
    kernel = make_kernel()
    completion = "The answer is four."
    current = token_logprobs(kernel.policy, completion).tolist()
    n = len(current)
    behind = [lp - 1.0 for lp in current[:-1]]  # pi_old / mu = e = 2.718 > C = 2 on every token but EOS
    (seq,) = encode_rows(kernel.policy, training_rows([row(completion, 1.0, behaviourLogprobs=behind)]))
    base = dict(type="ppo_clip", normalization="token_mean", normalizerConstant=1, clipLow=0.2, clipHigh=0.2, klCoef=0)
    grads = {}
    for mode in ("tis", "ppo_ratio"):
        spec = LossSpec(**base, offPolicy=mode, importanceCap=2.0)
        part = micro_batch_loss(kernel.policy, [dataclasses.replace(seq)], [1.0 / n], spec)
        part.logp.retain_grad()
        part.loss.backward()
        grads[mode] = part.logp.grad[0, -n:].cpu()
    # tis: ratio 1 to pi_old (the policy itself in one step), each term weighted by min(e, 2) = 2; EOS by 1.
    expected = torch.tensor([2.0] * (n - 1) + [1.0]) * (-1.0 / n)
    assert torch.allclose(grads["tis"], expected, atol=1e-6)
    # ppo_ratio: r = e to the behaviour, beyond 1 + clipHigh with A > 0: clipped, no gradient but EOS's.
    assert torch.allclose(grads["ppo_ratio"], torch.tensor([0.0] * (n - 1) + [-1.0 / n]), atol=1e-6)

    metrics = _step_metrics(
        kernel, tmp_path, [row(completion, 1.0, behaviourLogprobs=behind)], {"offPolicy": "tis", "importanceCap": 2.0}
    )
    assert metrics["importanceWeightMean"] == pytest.approx(math.e, rel=1e-4)
    assert metrics["importanceWeightMax"] == pytest.approx(math.e, rel=1e-4)
    assert metrics["importanceWeightTruncatedFraction"] == 1.0
    assert metrics["clipFraction"] == 0.0
    assert metrics["loss"] == pytest.approx(-(2.0 * (n - 1) + 1.0) / n, rel=1e-4)


def test_tis_over_several_steps_takes_the_ratio_against_the_policy_at_the_start(make_kernel, tmp_path):
    kernel = make_kernel()
    completion = "The answer is four."
    current = token_logprobs(kernel.policy, completion).tolist()
    rows = [row(completion, 1.0, behaviourLogprobs=current[:-1])] * 2
    batch = write_batch(tmp_path / "b.jsonl", rows)
    request = step_request(batch, loss={"offPolicy": "tis", "normalization": "token_mean"})
    request["update"] = {"miniBatchPrompts": 1, "epochs": 2, "roleOrder": []}
    response = kernel.client.post("/v1/train/step", json=request)
    assert response.status_code == 200, response.text
    metrics = response.json()["metrics"]
    assert metrics["optimizerSteps"] == 2  # one prompt: one mini-batch, two epochs
    # pi_old is fixed at the start, where it equals the behaviour: every weight is 1, none truncated, while
    # the later steps' ratios to pi_old move (and the first steps' lr of 1e-2 is large enough to clip some).
    assert metrics["importanceWeightMean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["importanceWeightTruncatedFraction"] == 0.0


def test_dual_clip_needs_ppo_and_a_c_above_one(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    for loss, message in [
        ({"dualClip": 3.0, "type": "reinforce"}, "dualClip: dual-clip caps the PPO surrogate"),
        ({"dualClip": 1.0}, "loss.dualClip"),
        ({"offPolicy": "vtrace"}, "loss.offPolicy"),
    ]:
        response = kernel.client.post("/v1/train/step", json=step_request(batch, loss=loss))
        assert response.status_code == 400, response.text
        assert message in response.json()["error"]["message"]
