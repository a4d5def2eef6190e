"""The loss functions on hand-made tensors."""

import math

import pytest
import torch

from selfplay_kernel import losses
from selfplay_kernel.requests import OptimizerSpec
from selfplay_kernel.trainer import learning_rate


def _ppo(ratio: float, advantage: float, clip: float = 0.2):
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    loss, clipped = losses.policy_loss("ppo_clip", logp, torch.zeros(1, 1), torch.tensor([[advantage]]), clip, clip)
    loss.sum().backward()
    return float(loss.detach()), bool(clipped), float(logp.grad)


def test_ppo_inside_the_clip_range_is_the_policy_gradient():
    loss, clipped, grad = _ppo(1.1, 2.0)
    assert loss == pytest.approx(-2.2) and not clipped
    assert grad == pytest.approx(-2.2)  # d(-r*A)/dlogp = -r*A


@pytest.mark.parametrize(
    "ratio, advantage, clipped_value",
    [(1.5, 1.0, 1.2), (0.5, -1.0, 0.8)],  # pushed further the way the advantage wants: clipped
)
def test_ppo_clips_beyond_the_boundary_and_stops_the_gradient(ratio, advantage, clipped_value):
    loss, clipped, grad = _ppo(ratio, advantage)
    assert clipped
    assert loss == pytest.approx(-clipped_value * advantage)
    assert grad == 0.0


@pytest.mark.parametrize("ratio, advantage", [(1.5, -1.0), (0.5, 1.0)])
def test_ppo_does_not_clip_a_move_against_the_advantage(ratio, advantage):
    loss, clipped, grad = _ppo(ratio, advantage)
    assert not clipped
    assert loss == pytest.approx(-ratio * advantage)
    assert grad == pytest.approx(-ratio * advantage)


def test_ppo_at_ratio_one_is_the_plain_policy_gradient():
    # One PPO epoch without behaviour log-probs: r = 1, both branches tie, and their gradients add up to -A.
    loss, clipped, grad = _ppo(1.0, 1.5)
    assert not clipped
    assert loss == pytest.approx(-1.5) and grad == pytest.approx(-1.5)


def test_ppo_asymmetric_clip_range():
    logp = torch.log(torch.tensor([[1.25, 0.85]]))
    loss, clipped = losses.policy_loss("ppo_clip", logp, torch.zeros(1, 2), torch.tensor([[1.0]]), 0.1, 0.3)
    assert clipped.tolist() == [[False, False]]
    loss, clipped = losses.policy_loss("ppo_clip", logp, torch.zeros(1, 2), torch.tensor([[-1.0]]), 0.1, 0.3)
    assert clipped.tolist() == [[False, True]]  # 1.25 against A<0 is never clipped; 0.85 < 1 - 0.1 is


def test_reinforce_is_minus_advantage_times_logp():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, clipped = losses.policy_loss("reinforce", logp, torch.zeros(1, 2), torch.tensor([[3.0]]), 0.2, 0.2)
    loss.sum().backward()
    assert loss.tolist() == [[3.0, 6.0]]
    assert logp.grad.tolist() == [[-3.0, -3.0]]
    assert not clipped.any()


def test_k3_is_zero_at_the_reference_and_positive_elsewhere():
    logp = torch.tensor([-1.0, -2.0, -0.5])
    assert torch.equal(losses.k3_kl(logp, logp), torch.zeros(3))
    ref = torch.tensor([-1.5, -1.0, -0.5])
    d = ref - logp
    assert torch.allclose(losses.k3_kl(logp, ref), torch.exp(d) - d - 1)
    assert (losses.k3_kl(logp, ref)[:2] > 0).all()


def test_sequence_weights():
    counts = [2, 4, 0]
    assert losses.sequence_weights("dr_grpo", counts, 10) == pytest.approx([1 / 30] * 3)
    assert losses.sequence_weights("token_mean", counts, 10) == pytest.approx([1 / 6] * 3)
    assert losses.sequence_weights("sequence_mean", counts, 10) == pytest.approx([1 / 6, 1 / 12, 0.0])
    assert losses.sequence_weights("token_mean", [0, 0], 10) == [0.0, 0.0]


def test_token_scores_are_log_softmax_at_the_target_and_the_entropy(monkeypatch):
    monkeypatch.setattr(losses, "ENTROPY_CHUNK", 2)  # 3 positions: one full chunk and a partial one
    logits = torch.randn(2, 3, 7, requires_grad=True)
    targets = torch.randint(0, 7, (2, 3))
    log_softmax = torch.log_softmax(logits, -1)
    expected = log_softmax.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logp, none = losses.token_scores(logits, targets)
    assert torch.allclose(logp, expected, atol=1e-6) and none is None
    expected_entropy = -(log_softmax.exp() * log_softmax).sum(-1)
    _, measured = losses.token_scores(logits, targets, "value")
    _, differentiable = losses.token_scores(logits, targets, "grad")
    assert torch.allclose(measured, expected_entropy, atol=1e-5)
    assert torch.allclose(differentiable, expected_entropy, atol=1e-5)
    assert not measured.requires_grad and differentiable.requires_grad
    # Uniform logits: the entropy is log V, its maximum.
    _, uniform = losses.token_scores(torch.zeros(1, 2, 7), torch.zeros(1, 2, dtype=torch.long), "value")
    assert torch.allclose(uniform, torch.full((1, 2), math.log(7)), atol=1e-6)
    with pytest.raises(ValueError, match="unknown entropy mode"):
        losses.token_scores(logits, targets, "maybe")


def test_token_scores_take_each_row_at_its_temperature():
    logits = torch.randn(2, 3, 7)
    targets = torch.randint(0, 7, (2, 3))
    logp, entropy = losses.token_scores(logits, targets, "value", [0.5, 1.0])
    expected, expected_entropy = losses.token_scores(torch.stack([logits[0] / 0.5, logits[1]]), targets, "value")
    assert torch.allclose(logp, expected) and torch.allclose(entropy, expected_entropy)


def test_entropy_gradient_is_autograd_s_without_keeping_softmax(monkeypatch):
    monkeypatch.setattr(losses, "ENTROPY_CHUNK", 2)
    logits = torch.randn(2, 5, 9)
    logits[0, 1, 3] = -math.inf  # a token ruled out: p = 0 contributes nothing, and no NaN
    weights = torch.randn(2, 5)
    ours = logits.clone().requires_grad_(True)
    _, h = losses.token_scores(ours, torch.zeros(2, 5, dtype=torch.long), "grad")
    (h * weights).sum().backward()
    # The reference: plain autograd through log Z - sum p*l, with the ruled-out token at a very low finite score
    # (at -inf its own gradient would be NaN).
    reference = logits.nan_to_num(neginf=-1e4).requires_grad_(True)
    expected_h = torch.logsumexp(reference, -1) - (torch.softmax(reference, -1) * reference).sum(-1)
    (expected_h * weights).sum().backward()
    assert torch.allclose(h, expected_h, atol=1e-5)
    assert torch.isfinite(ours.grad).all()
    assert torch.allclose(ours.grad, reference.grad, atol=1e-5)


def test_warmup_schedule():
    spec = OptimizerSpec(learningRate=1.0, schedule="warmup_constant", warmupSteps=4, maxGradNorm=1, weightDecay=0)
    assert [learning_rate(spec, s) for s in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    constant = spec.model_copy(update={"schedule": "constant"})
    assert learning_rate(constant, 0) == 1.0


def test_dual_clip_caps_the_loss_of_a_negative_advantage_at_c_times_minus_a():
    # r = 5, A = -1: PPO's term is -min(5 * -1, 1.2 * -1) = 5; dual-clip with c = 3 caps it at 3, no gradient.
    # r = 2, A = -1: 2 < 3, untouched; r = 5, A = +1: PPO clips at 1.2, dual-clip never acts on A > 0.
    logp = torch.log(torch.tensor([[5.0, 2.0, 5.0]])).requires_grad_()
    adv = torch.tensor([[-1.0, -1.0, 1.0]])
    loss, _ = losses.policy_loss("ppo_clip", logp, torch.zeros(1, 3), adv, 0.2, 0.2)
    capped, acted = losses.dual_clip(loss, adv, 3.0)
    assert capped[0].tolist() == pytest.approx([3.0, 2.0, -1.2])
    assert acted.tolist() == [[True, False, False]]
    capped.sum().backward()
    assert logp.grad[0].tolist() == pytest.approx([0.0, 2.0, 0.0])  # d(-r*A)/dlogp = -r*A = 2 for the middle one


def test_dual_clip_with_a_per_sequence_advantage_broadcasts():
    loss = torch.tensor([[4.0, 1.0], [4.0, 1.0]])
    capped, acted = losses.dual_clip(loss, torch.tensor([[-1.0], [0.5]]), 2.0)
    assert capped.tolist() == [[2.0, 1.0], [4.0, 1.0]]
    assert acted.tolist() == [[True, False], [False, False]]


def test_k3_clamp_bounds_each_token_and_stops_its_gradient():
    # d = ref - logp = 3: k3 = e^3 - 3 - 1 = 16.0855; clamped at 10. d = 0.5: e^0.5 - 1.5 = 0.1487, untouched.
    logp = torch.tensor([-4.0, -1.0], requires_grad=True)
    ref = torch.tensor([-1.0, -0.5])
    unclamped = losses.k3_kl(logp, ref)
    assert unclamped.tolist() == pytest.approx([math.exp(3) - 4, math.exp(0.5) - 1.5])
    clamped = losses.k3_kl(logp, ref, clamp=10.0)
    assert clamped.tolist() == pytest.approx([10.0, math.exp(0.5) - 1.5])
    clamped.sum().backward()
    assert logp.grad.tolist() == pytest.approx([0.0, -(math.exp(0.5) - 1)])  # dk3/dlogp = -(e^d - 1)


def test_truncated_importance_weights_are_min_of_the_ratio_and_the_cap():
    # pi_old / mu = e^1 = 2.718 -> capped at 2; e^-1 = 0.368 kept; mu unknown (NaN) -> 1.
    proximal = torch.tensor([[-1.0, -2.0, -1.0]])
    behaviour = torch.tensor([[-2.0, -1.0, float("nan")]])
    weight, truncated = losses.truncated_importance_weights(proximal, behaviour, 2.0)
    assert weight[0].tolist() == pytest.approx([2.0, math.exp(-1), 1.0])
    assert truncated.tolist() == [[True, False, False]]
    assert not weight.requires_grad
