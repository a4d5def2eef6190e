"""One micro-batch's term of the batch objective, sum_i w_i * sum_t (pg_it + klCoef * k3_it - entropyCoef * H_it)
over its loss tokens (the policy-gradient terms from losses.py, the off-policy corrections the request asks for),
and the sums over its loss tokens that the step's metrics are made of (step_metrics.TokenSums).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from . import losses
from .encoding import Trajectory
from .policy import Policy
from .requests import LossSpec
from .scoring import completion_logprobs, completion_scores
from .step_metrics import TokenSums


@dataclass
class MicroBatchLoss:
    """One micro-batch's weighted loss (a term of the batch objective) and what the metrics need."""

    loss: torch.Tensor
    logp: torch.Tensor  # [B, K] completion log-probs, right-aligned
    mask: torch.Tensor  # [B, K] tokens in the loss
    sums: TokenSums  # all but `loss`, which the caller adds for the micro-batches it counts


def micro_batch_loss(policy: Policy, mb: list[Trajectory], weights: list[float], spec: LossSpec) -> MicroBatchLoss:
    """The micro-batch's term of the objective, `weights` its sequences' (losses.sequence_weights). The entropy
    is always measured (a metric: a collapsing policy shows it first), and differentiated only when its
    coefficient is not 0."""
    device, pad_id = policy.device, policy.tokenizer.pad_token_id
    entropy_mode = "grad" if spec.entropyCoef > 0 else "value"
    logp, entropy = completion_scores(policy.model, mb, device, pad_id, entropy_mode)
    assert entropy is not None
    k = logp.shape[1]
    mask = right_aligned([s.in_loss for s in mb], k, False, torch.bool, device)
    behaviour = right_aligned([s.behaviour or [] for s in mb], k, math.nan, torch.float32, device)
    # Tokens without a behaviour log-prob (no row value, or the EOS the sampler did not report) use the
    # current policy's, detached: ratio 1, so their gradient is the plain policy gradient.
    old = torch.where(torch.isnan(behaviour), logp.detach(), behaviour)
    adv = torch.tensor([s.advantage for s in mb], dtype=torch.float32, device=device).unsqueeze(1)
    known = mask & ~torch.isnan(behaviour)
    if spec.offPolicy == "tis":
        # pi_old: the policy at the start of the request; the current one itself when it is a single step.
        proximal = right_aligned([s.proximal or [] for s in mb], k, math.nan, torch.float32, device)
        proximal = torch.where(torch.isnan(proximal), logp.detach(), proximal)
        per_token, was_clipped = losses.policy_loss(spec.type, logp, proximal, adv, spec.clipLow, spec.clipHigh)
        weight, truncated = losses.truncated_importance_weights(proximal, behaviour, spec.importanceCap)
        raw = torch.exp((proximal - old).clamp(max=losses.MAX_LOG_RATIO))
    else:
        per_token, was_clipped = losses.policy_loss(spec.type, logp, old, adv, spec.clipLow, spec.clipHigh)
        raw = torch.exp((logp.detach() - old).clamp(max=losses.MAX_LOG_RATIO))
        truncated = (raw < 1 - spec.clipLow) | (raw > 1 + spec.clipHigh)
        weight = None
    dual = torch.zeros_like(mask)
    if spec.dualClip is not None:
        per_token, dual = losses.dual_clip(per_token, adv, spec.dualClip)
    if weight is not None:
        per_token = per_token * weight
    kl_sum = 0.0
    if spec.klCoef > 0:
        with torch.no_grad(), policy.reference() as ref_model:
            ref_logp = completion_logprobs(ref_model, mb, device, pad_id)
        kl = losses.k3_kl(logp, ref_logp, spec.k3Clamp)
        per_token = per_token + spec.klCoef * kl
        kl_sum = float(torch.where(mask, kl.detach(), 0.0).sum())
    if spec.entropyCoef > 0:
        per_token = per_token - spec.entropyCoef * entropy
    w = torch.tensor(weights, dtype=torch.float32, device=device).unsqueeze(1)
    # where(), not a product with the mask: a NaN score at a padded position must not leak into the sum.
    loss = (torch.where(mask, per_token, 0.0) * w).sum()
    entropy_by_role: dict[str, float] = {}
    for s, h in zip(mb, torch.where(mask, entropy.detach(), 0.0).sum(-1).tolist()):
        entropy_by_role[s.role] = entropy_by_role.get(s.role, 0.0) + h
    picked = raw.detach()[known]  # the importance weights' statistics: before any truncation
    sums = TokenSums(
        kl=kl_sum,
        clipped=int((was_clipped & mask).sum()),
        dual_clipped=int((dual & mask).sum()),
        weight_total=float(picked.sum()),
        weight_count=int(known.sum()),
        weight_truncated=int((truncated & known).sum()),
        weight_largest=float(picked.max()) if picked.numel() else 0.0,
        entropy_by_role=entropy_by_role,
    )
    return MicroBatchLoss(loss, logp, mask, sums)


def right_aligned(values: list[list], width: int, fill, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Per-token values of each sequence's completion in a [B, width] tensor, right-aligned as the scores are
    (scoring.completion_scores); `fill` left of a shorter row."""
    out = torch.full((len(values), width), fill, dtype=dtype)
    for i, row in enumerate(values):
        if row:
            out[i, width - len(row) :] = torch.tensor(row, dtype=dtype)
    return out.to(device)
