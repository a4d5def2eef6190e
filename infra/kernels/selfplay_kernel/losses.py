"""The RL losses as pure tensor functions (no model, no I/O), so each can be unit-tested on its own.

A batch's objective is a weighted sum over completion tokens:

    L = sum_i  w_i * sum_{t in loss tokens of i}  ( pg_it + klCoef * k3_it - entropyCoef * H_it )

where the per-sequence weight w_i carries the normalisation (see `sequence_weights`) and H_it is the entropy
of the policy's next-token distribution at token t (subtracted: a bonus for exploration). Because L is a plain
weighted sum, summing the gradients of micro-batches gives exactly the full-batch gradient, whatever the
micro-batch size.

Options for off-policy rows (a batch sampled by another engine, or several versions ago), all off by default:

- dual-clip (`dualClip` c > 1, verl's `clip_ratio_c`): for a negative advantage the PPO term is capped at
  -c * A, so a token whose ratio has grown huge cannot dominate the batch (`dual_clip`);
- a clamp of the per-token k3 value (`k3Clamp`; verl clamps k3 to [-10, 10], and k3 >= 0, so only the upper
  bound acts): a token the policy moved far from the reference adds at most the clamp, with no gradient;
- the off-policy correction (`offPolicy`): `ppo_ratio` (the default) takes the PPO ratio against the
  behaviour log-probs mu the sampler reported; `tis` takes it against the kernel's own log-probs of the batch
  at the start of the step, pi_old (decoupled PPO's proximal policy), and multiplies each token's term by the
  truncated importance weight min(pi_old / mu, C) (`truncated_importance_weights`), which corrects for the
  sampler's mismatch while bounding the variance.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

# exp() of a log-ratio beyond this overflows float32 long before it means anything; the clipped branch of the
# surrogate already ignores such ratios, so clamping only keeps the unclipped branch finite.
MAX_LOG_RATIO = 20.0

# Positions per pass of the entropy (forward, and backward when it is in the loss): bounds its extra
# (positions x vocab) float32 copies (with a vocabulary of 150k, 1024 positions take 600 MB).
ENTROPY_CHUNK = 1024


def token_scores(
    logits: torch.Tensor, targets: torch.Tensor, entropy: str = "none", temperatures: Sequence[float] | None = None
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log softmax(l)[target] per position, in float32, with l = logits / T, T the row's sampling temperature
    (`temperatures`, one per row; default 1), and optionally the entropy of each position's distribution,
    H = logsumexp(l) - sum_v softmax(l)_v * l_v. One row at a time, to bound the peak memory of the
    (tokens x vocab) float32 copies.

    The temperature is that of the distribution the row's tokens were drawn from: the policy the gradient is
    of, and the one the sampler's behaviour log-probs are of (sampler.py), so that the PPO ratio is exactly 1
    on policy. verl divides the logits by the rollout temperature the same way, for the entropy too.

    entropy: "none"; "value" (detached: a metric only); "grad" (differentiable: an entropy term in the loss).
    """
    if entropy not in ("none", "value", "grad"):
        raise ValueError(f"unknown entropy mode {entropy!r}")
    logps, entropies = [], []
    for row_logits, row_targets, t in zip(logits, targets, temperatures or [1.0] * len(logits)):
        row_logits = row_logits.float()
        if t != 1.0:
            row_logits = row_logits / t
        log_z = torch.logsumexp(row_logits, dim=-1)
        picked = row_logits.gather(-1, row_targets.unsqueeze(-1)).squeeze(-1)
        logps.append(picked - log_z)
        if entropy == "grad":
            entropies.append(Entropy.apply(row_logits))
        elif entropy == "value":
            with torch.no_grad():
                entropies.append(_chunked_entropy(row_logits))
    return torch.stack(logps), (torch.stack(entropies) if entropies else None)


def _chunked_entropy(scores: torch.Tensor) -> torch.Tensor:
    """H per position of float32 scores [T, V], ENTROPY_CHUNK positions per pass."""
    parts = []
    for i in range(0, scores.shape[0], ENTROPY_CHUNK):
        chunk = scores[i : i + ENTROPY_CHUNK]
        # entr(p) = -p log p, 0 at p = 0 (a token the model rules out with a -inf score).
        parts.append(torch.special.entr(torch.softmax(chunk, dim=-1)).sum(-1))
    return torch.cat(parts)


class Entropy(torch.autograd.Function):
    """H per position of scores [T, V], differentiable without keeping softmax for the backward pass (autograd
    would keep one more T x V float32 tensor per row until then): the backward recomputes it chunk by chunk,
    with dH/dl_j = -p_j * (log p_j + H). Only the scores are kept, which the log-prob path keeps anyway."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        h = _chunked_entropy(scores)
        ctx.save_for_backward(scores, h)
        return h

    @staticmethod
    def backward(ctx, grad_h: torch.Tensor) -> torch.Tensor:
        scores, h = ctx.saved_tensors
        grad = torch.empty_like(scores)
        for i in range(0, scores.shape[0], ENTROPY_CHUNK):
            end = i + ENTROPY_CHUNK
            log_p = torch.log_softmax(scores[i:end], dim=-1)
            p = log_p.exp()
            d = -p * (log_p + h[i:end].unsqueeze(-1)) * grad_h[i:end].unsqueeze(-1)
            grad[i:end] = torch.where(p > 0, d, 0.0)
        return grad


def policy_loss(
    kind: str,
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float,
    clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token policy-gradient loss and a bool tensor of tokens where the PPO clip was active.

    ppo_clip:  -min(r*A, clip(r, 1-clip_low, 1+clip_high)*A),  r = exp(logp - old_logp)
    reinforce: -A * logp
    `advantages` broadcasts against `logp` (one value per sequence, shape [B, 1]).
    """
    if kind == "reinforce":
        return -advantages * logp, torch.zeros_like(logp, dtype=torch.bool)
    if kind != "ppo_clip":
        raise ValueError(f"unknown policy loss {kind!r}")
    ratio = torch.exp((logp - old_logp).clamp(max=MAX_LOG_RATIO))
    unclipped = ratio * advantages
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * advantages
    loss = -torch.minimum(unclipped, clipped)
    return loss, clipped < unclipped


def dual_clip(
    loss: torch.Tensor, advantages: torch.Tensor, clip_c: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dual-clip PPO (Ye et al. 2020; verl's `clip_ratio_c`): where the advantage is negative, the per-token
    loss is capped at -clip_c * A (c > 1), with no gradient where the cap acts. Returns the loss and a bool
    tensor of the tokens where it acted."""
    cap = -clip_c * advantages
    capped = (advantages < 0) & (loss > cap)
    return torch.where(capped, cap.expand_as(loss), loss), capped


def truncated_importance_weights(
    proximal_logp: torch.Tensor, behaviour_logp: torch.Tensor, cap: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """min(pi_old / mu, cap) per token (truncated importance sampling), detached, and a bool tensor of the tokens
    where the cap acted. A token without a behaviour log-prob (NaN: an EOS the sampler did not report) weighs 1;
    a row without any is refused before (batch.require_behaviour)."""
    raw = torch.exp((proximal_logp - behaviour_logp).clamp(max=MAX_LOG_RATIO)).detach()
    raw = torch.where(torch.isnan(behaviour_logp), 1.0, raw)
    return raw.clamp(max=cap), raw > cap


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor, clamp: float | None = None) -> torch.Tensor:
    """Schulman's k3 estimator of KL(policy || reference) per token: exp(d) - d - 1 with d = ref - logp.
    Non-negative, and exactly 0 where the policy equals the reference. With `clamp`, at most that value (no
    gradient beyond it)."""
    d = (ref_logp - logp).clamp(-MAX_LOG_RATIO, MAX_LOG_RATIO)
    k3 = torch.expm1(d) - d
    return k3 if clamp is None else k3.clamp(max=clamp)


def sequence_weights(normalization: str, loss_tokens: Sequence[int], normalizer_constant: float) -> list[float]:
    """The weight w_i of each sequence's token SUM in the batch objective, from the loss-token counts T_i of
    ALL B sequences of the batch (not of one micro-batch):

    dr_grpo:       w_i = 1 / (C * B)      Oat's Dr.GRPO: each sequence's token sum divided by the constant C
                                          (the generation budget), then the mean over sequences. No length
                                          bias: every token of every answer weighs the same.
    token_mean:    w_i = 1 / sum_j T_j    one mean over all loss tokens of the batch (DAPO-style token-level
                                          mean; long answers weigh more in total, every token the same).
    sequence_mean: w_i = 1 / (B * T_i)    the original GRPO: mean over each sequence's tokens, then the mean
                                          over sequences (each answer weighs the same, whatever its length).

    A sequence with no loss token gets weight 0 in sequence_mean; an all-masked batch gets weight 0 in
    token_mean (there is nothing to average).
    """
    b = len(loss_tokens)
    if normalization == "dr_grpo":
        return [1.0 / (normalizer_constant * b)] * b
    if normalization == "token_mean":
        total = sum(loss_tokens)
        return [1.0 / total if total else 0.0] * b
    if normalization == "sequence_mean":
        return [1.0 / (b * t) if t else 0.0 for t in loss_tokens]
    raise ValueError(f"unknown normalization {normalization!r}")
