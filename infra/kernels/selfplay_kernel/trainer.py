"""The idempotent training step: the optimizer steps of a policy-gradient loss on a batch given by reference,
one policy version.

Order of checks (so a retry is always safe): request shape (400) -> policy name (404) -> idempotency key seen
before (first response again, `applied: false`) -> weights of a failed step (409 `policy_dirty`, atomic.py) ->
lineage (409, lineage.py) -> base version (409) -> batch (400/503) -> steps. The batch becomes one optimizer
step, or one per mini-batch when the request's `update` asks for several (minibatch.py), all or none of them
(atomic.py). Each step's gradient is accumulated over micro-batches of `--micro-batch-size` sequences; the
per-sequence weights are computed over the step's whole mini-batch first (losses.sequence_weights), so the
result equals the mini-batch's full gradient. Under FSDP (distributed.py) every rank computes the weights over
the whole mini-batch and trains on its share of the sequences; the gradients and metrics are summed over the
ranks, so the step equals the single-process one up to float rounding.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

from . import losses
from .atomic import atomic_step, check_clean
from .batch import BatchRef, TrainingRow, load_batch
from .chat import encode_completion, encode_prompt, encode_sampled, eos_ids
from .distributed import World, collective, everywhere, scalar
from .errors import KernelError
from .lineage import check_step
from .minibatch import UpdateSpec, plan_steps
from .policy import Policy

log = logging.getLogger(__name__)

NonNegInt = Annotated[int, Field(ge=0)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class LossSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    type: Literal["ppo_clip", "reinforce"]
    normalization: Literal["dr_grpo", "token_mean", "sequence_mean"]
    normalizerConstant: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    clipLow: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    clipHigh: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    klCoef: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    # A default, unlike the rest: clients of the contract before the entropy term send none.
    entropyCoef: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    # The off-policy options (losses.py), defaults off: clients before them send none.
    dualClip: Annotated[float, Field(gt=1, allow_inf_nan=False)] | None = None
    k3Clamp: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    offPolicy: Literal["ppo_ratio", "tis"] = "ppo_ratio"
    importanceCap: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 2.0

    @model_validator(mode="after")
    def _dual_clip_needs_ppo(self) -> LossSpec:
        if self.dualClip is not None and self.type != "ppo_clip":
            raise ValueError("dualClip: dual-clip caps the PPO surrogate; it needs type ppo_clip")
        return self


class OptimizerSpec(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    # 0 is a negative control (a run that must not learn), not a mistake.
    learningRate: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    schedule: Literal["constant", "warmup_constant"]
    warmupSteps: NonNegInt
    maxGradNorm: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    weightDecay: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class TrainStepRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")
    idempotencyKey: Annotated[str, Field(min_length=1)]
    runId: Annotated[str, Field(min_length=1)]
    iteration: NonNegInt
    policy: Annotated[str, Field(min_length=1)]
    baseVersion: NonNegInt
    batch: BatchRef
    loss: LossSpec
    optimizer: OptimizerSpec
    # Absent: the whole batch in one optimizer step (clients from before mini-batches send none).
    update: UpdateSpec | None = None


@dataclass
class Trajectory:
    """One row as token ids: prompt, completion (EOS last), loss mask and behaviour log-probs per token.
    `exact`: the completion is the sampled ids the row carried (else the kernel tokenized its text);
    `proximal`: the policy's own log-probs at the start of a multi-step update (the `tis` correction's pi_old);
    `temperature`: the row's sampling temperature, which every log-prob of it is taken at (losses.token_scores)."""

    prompt: list[int]
    completion: list[int]
    in_loss: list[bool]
    behaviour: list[float] | None  # one per completion token; NaN where the row gave none (EOS)
    advantage: float
    role: str
    exact: bool = False
    proximal: list[float] | None = None
    temperature: float = 1.0

    @property
    def length(self) -> int:
        return len(self.prompt) + len(self.completion)


def encode_rows(policy: Policy, rows: list[TrainingRow]) -> list[Trajectory]:
    """Turns every row into token ids: the prompt through the chat template, the completion as the row's
    sampled ids when it carries them (`encode_exact`), else by tokenizing its text. Refuses (400) rows that do
    not fit the context or whose behaviour log-probs do not line up with the completion's tokens (with or
    without the EOS token)."""
    out = []
    ends = eos_ids(policy.model, policy.tokenizer)
    for number, row in enumerate(rows, start=1):
        prompt = encode_prompt(policy.tokenizer, [m.model_dump() for m in row.messages])
        if row.completionTokens is not None:
            out.append(encode_exact(policy, row, number, prompt, ends))
            continue
        comp = encode_completion(policy.tokenizer, row.completion, [tuple(s) for s in row.lossMaskSpans or []])
        _check_context(policy, number, len(prompt) + len(comp.ids))
        behaviour = row.behaviourLogprobs
        if behaviour is not None and len(behaviour) not in (len(comp.ids) - 1, len(comp.ids)):
            raise KernelError(
                400,
                "batch_invalid",
                f"batch row {number}: behaviourLogprobs: {len(behaviour)} values, but the completion is "
                f"{len(comp.ids) - 1} tokens (+1 for EOS) under this kernel's tokenizer",
            )
        if behaviour is not None and len(behaviour) < len(comp.ids):
            behaviour = [*behaviour, math.nan]
        out.append(
            Trajectory(prompt, comp.ids, comp.in_loss, behaviour, row.advantage, row.role, temperature=row.temperature)
        )
    return out


def encode_exact(policy: Policy, row: TrainingRow, number: int, prompt: list[int], ends: list[int]) -> Trajectory:
    """A token-exact row: its sampled ids trained on as they are, with their behaviour log-probs; the text
    inserted between turns tokenized and out of the loss (chat.encode_sampled). Ids outside this kernel's
    vocabulary mean another tokenizer sampled them: refused (400)."""
    assert row.completionTokens is not None
    vocab = len(policy.tokenizer)
    sampled = [i for seg in row.completionTokens if hasattr(seg, "ids") for i in seg.ids]
    bad = next((i for i in sampled if i >= vocab), None)
    if bad is not None:
        raise KernelError(
            400,
            "batch_invalid",
            f"batch row {number}: completionTokens: token id {bad} is outside this kernel's vocabulary of {vocab} "
            "(sampled by another tokenizer?)",
        )
    comp = encode_sampled(policy.tokenizer, row.completionTokens, ends)
    _check_context(policy, number, len(prompt) + len(comp.ids))
    behaviour = None
    if row.behaviourLogprobs is not None:
        # The sampled ids are the loss tokens, in order, but for an EOS the kernel appended last (no value).
        given = iter(row.behaviourLogprobs)
        behaviour = [next(given, math.nan) if kept else math.nan for kept in comp.in_loss]
    return Trajectory(
        prompt, comp.ids, comp.in_loss, behaviour, row.advantage, row.role, exact=True, temperature=row.temperature
    )


def _check_context(policy: Policy, number: int, total: int) -> None:
    if total > policy.context_length:
        raise KernelError(
            400,
            "batch_invalid",
            f"batch row {number}: prompt and completion are {total} tokens; the model's context is "
            f"{policy.context_length}",
        )


def completion_logprobs(
    model: torch.nn.Module, seqs: list[Trajectory], device: torch.device, pad_id: int
) -> torch.Tensor:
    """Log-probs of each sequence's completion tokens under `model` (see `completion_scores`)."""
    return completion_scores(model, seqs, device, pad_id)[0]


def completion_scores(
    model: torch.nn.Module, seqs: list[Trajectory], device: torch.device, pad_id: int, entropy: str = "none"
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of each sequence's completion tokens under `model` at the sequence's sampling temperature,
    right-aligned in a [B, K] tensor (K = longest completion; positions left of a shorter completion hold
    prompt or padding scores), and the entropy of each of those positions' distributions when asked
    (losses.token_scores's `entropy`). The policy's, the reference's and pi_old's log-probs all come from here,
    so all of them are of the tempered distribution, as the behaviour log-probs are.

    Sequences are left-padded so every completion ends at the last position; only the last K+1 positions'
    logits are computed (`logits_to_keep`), which skips the vocabulary projection of long prompts."""
    width = max(s.length for s in seqs)
    k = max(len(s.completion) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - s.length :] = torch.tensor(s.prompt + s.completion)
        attention[i, width - s.length :] = 1
    ids, attention = ids.to(device), attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = model(
        input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=k + 1, use_cache=False
    ).logits[:, :-1]
    return losses.token_scores(logits, ids[:, width - k :], entropy, [s.temperature for s in seqs])


def _right_aligned(values: list[list], width: int, fill, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    out = torch.full((len(values), width), fill, dtype=dtype)
    for i, row in enumerate(values):
        if row:
            out[i, width - len(row) :] = torch.tensor(row, dtype=dtype)
    return out.to(device)


def learning_rate(spec: OptimizerSpec, step: int) -> float:
    """`constant`, or `warmup_constant`: linear from lr/warmupSteps at step 0 up to lr at step warmupSteps-1."""
    if spec.schedule == "warmup_constant" and spec.warmupSteps > 0:
        return spec.learningRate * min(1.0, (step + 1) / spec.warmupSteps)
    return spec.learningRate


def train_step(policy: Policy, request: TrainStepRequest) -> dict:
    """Applies the step once per idempotency key and returns the TrainStepResponse as a dict. The checks up to
    the base version are rank 0's; the step itself runs on every rank (`run_step`)."""
    if request.policy != policy.config.policy:
        raise KernelError(
            404,
            "policy_not_found",
            f"policy: this kernel holds policy {policy.config.policy!r}, not {request.policy!r}",
        )
    with policy.ops:
        first = policy.responses.get(request.idempotencyKey)
        if first is not None:
            return {**first, "applied": False}
        check_clean(policy)
        check_step(policy, request.runId)
        if request.baseVersion != policy.version:
            raise KernelError(
                409,
                "version_conflict",
                f"baseVersion: the batch was sampled from version {request.baseVersion} of policy "
                f"{request.policy!r}, which is at version {policy.version}",
            )
        started = time.perf_counter()
        with policy.progress.running(request.idempotencyKey):
            metrics = everywhere(policy, run_step, request.model_dump_json())
        metrics["seconds"] = time.perf_counter() - started
        response = {
            "idempotencyKey": request.idempotencyKey,
            "applied": True,
            "policyVersion": policy.version,
            "metrics": metrics,
        }
        policy.responses[request.idempotencyKey] = response
        log.info("step %s -> version %d: %s", request.idempotencyKey, policy.version, metrics)
        return response


@collective
def run_step(policy: Policy, request_json: str) -> dict:
    """Every rank: reads and encodes the whole batch (the sequence weights and the mini-batch plan need every
    row), trains on its share of the rows, and moves to the next version; returns the step's metrics. A failure
    leaves the version as it was, and the weights too (or the policy dirty: atomic.py)."""
    request = TrainStepRequest.model_validate_json(request_json)
    seqs = policy.world.agree(lambda: encode_rows(policy, load_batch(request.batch, request.loss.offPolicy)))
    with policy.weights.write():
        with atomic_step(policy):
            metrics = _apply(policy, seqs, request)
        policy.version += 1
        policy.lineage = request.runId
        policy.refresh_replica()
    return metrics


@dataclass
class MicroBatchLoss:
    """One micro-batch's weighted loss (a term of the batch objective) and what the metrics need."""

    loss: torch.Tensor
    logp: torch.Tensor  # [B, K] completion log-probs, right-aligned
    mask: torch.Tensor  # [B, K] tokens in the loss
    kl_sum: float
    clipped: int
    entropy_sums: list[float]  # per sequence, over its loss tokens
    dual_clipped: int = 0
    weights: ImportanceWeights | None = None


@dataclass
class ImportanceWeights:
    """Sums of the importance weights over the loss tokens that have a behaviour log-prob (see
    `importance_weights`), to be combined over micro-batches and ranks."""

    total: float = 0.0
    count: int = 0
    largest: float = 0.0
    truncated: int = 0

    def add(self, other: ImportanceWeights) -> None:
        self.total += other.total
        self.count += other.count
        self.largest = max(self.largest, other.largest)
        self.truncated += other.truncated


def importance_weights(raw: torch.Tensor, truncated: torch.Tensor, counted: torch.Tensor) -> ImportanceWeights:
    """The statistics of the raw weights `raw` (before any truncation) over the `counted` tokens."""
    picked = raw.detach()[counted]
    return ImportanceWeights(
        total=float(picked.sum()),
        count=int(counted.sum()),
        largest=float(picked.max()) if picked.numel() else 0.0,
        truncated=int((truncated & counted).sum()),
    )


def micro_batch_loss(policy: Policy, mb: list[Trajectory], weights: list[float], spec: LossSpec) -> MicroBatchLoss:
    """The micro-batch's term sum_i w_i * sum_t (pg_it + klCoef * k3_it - entropyCoef * H_it) over its loss
    tokens. The entropy is always measured (a metric: a collapsing policy shows it first), and differentiated
    only when its coefficient is not 0."""
    device, pad_id = policy.device, policy.tokenizer.pad_token_id
    entropy_mode = "grad" if spec.entropyCoef > 0 else "value"
    logp, entropy = completion_scores(policy.model, mb, device, pad_id, entropy_mode)
    assert entropy is not None
    k = logp.shape[1]
    mask = _right_aligned([s.in_loss for s in mb], k, False, torch.bool, device)
    behaviour = _right_aligned([s.behaviour or [] for s in mb], k, math.nan, torch.float32, device)
    # Tokens without a behaviour log-prob (no row value, or the EOS the sampler did not report) use the
    # current policy's, detached: ratio 1, so their gradient is the plain policy gradient.
    old = torch.where(torch.isnan(behaviour), logp.detach(), behaviour)
    adv = torch.tensor([s.advantage for s in mb], dtype=torch.float32, device=device).unsqueeze(1)
    known = mask & ~torch.isnan(behaviour)
    if spec.offPolicy == "tis":
        # pi_old: the policy at the start of the request; the current one itself when it is a single step.
        proximal = _right_aligned([s.proximal or [] for s in mb], k, math.nan, torch.float32, device)
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
    entropy_sums = torch.where(mask, entropy.detach(), 0.0).sum(-1).tolist()
    return MicroBatchLoss(
        loss,
        logp,
        mask,
        kl_sum,
        int((was_clipped & mask).sum()),
        entropy_sums,
        dual_clipped=int((dual & mask).sum()),
        weights=importance_weights(raw, truncated, known),
    )


def rank_shares(world: World, seqs: list[Trajectory]) -> list[list[int]]:
    """Which of a step's sequences each rank trains on: sorted by length (shortest together in a micro-batch,
    to waste little padding), then dealt round robin (so ranks get similar lengths)."""
    order = sorted(range(len(seqs)), key=lambda i: seqs[i].length)
    return [order[r :: world.size] for r in range(world.size)]


def accumulate_gradients(policy: Policy, seqs: list[Trajectory], spec: LossSpec) -> dict:
    """Fills the trainable parameters' .grad with the full-batch gradient, one micro-batch at a time (under
    FSDP, each rank its share of the sequences, the gradients summed over ranks); returns loss, kl,
    clipFraction, tokens, and the mean entropy per loss token, over the batch and per role."""
    world = policy.world
    loss_tokens = [sum(s.in_loss) for s in seqs]
    weights = losses.sequence_weights(spec.normalization, loss_tokens, spec.normalizerConstant)
    n_tokens = sum(loss_tokens)
    shares = rank_shares(world, seqs)
    mine = shares[world.rank]
    size = policy.config.micro_batch_size
    total_loss = total_kl = 0.0
    clipped = dual_clipped = 0
    weights_seen = ImportanceWeights()
    entropy_sum: dict[str, float] = {}
    policy.optimizer.zero_grad(set_to_none=True)
    for start in range(0, world.passes([len(s) for s in shares], size) * size, size):
        idx = mine[start : start + size]
        if not idx:  # a padding pass: the ranks' FSDP collectives stay in step; weight 0, no gradient
            micro_batch_loss(policy, [seqs[shares[0][0]]], [0.0], spec).loss.backward()
            continue
        part = micro_batch_loss(policy, [seqs[i] for i in idx], [weights[i] for i in idx], spec)
        (part.loss * world.gradient_scale).backward()
        total_loss += float(part.loss.detach())
        total_kl += part.kl_sum
        clipped += part.clipped
        dual_clipped += part.dual_clipped
        if part.weights is not None:
            weights_seen.add(part.weights)
        for i, h in zip(idx, part.entropy_sums):
            entropy_sum[seqs[i].role] = entropy_sum.get(seqs[i].role, 0.0) + h
        policy.progress.trained(min(start + size, len(mine)) / len(mine))
    roles = sorted({s.role for s in seqs})
    total_loss, total_kl, clipped, dual_clipped, w_total, w_count, w_truncated, *sums = world.sum(
        [
            total_loss,
            total_kl,
            clipped,
            dual_clipped,
            weights_seen.total,
            weights_seen.count,
            weights_seen.truncated,
            *(entropy_sum.get(r, 0.0) for r in roles),
        ]
    )
    (w_largest,) = world.max([weights_seen.largest])
    entropy_sum = dict(zip(roles, sums))
    role_tokens: dict[str, int] = {}
    for s, n in zip(seqs, loss_tokens):
        role_tokens[s.role] = role_tokens.get(s.role, 0) + n
    return {
        "loss": total_loss,
        "kl": total_kl / n_tokens if n_tokens else 0.0,
        "clipFraction": clipped / n_tokens if n_tokens else 0.0,
        "dualClipFraction": dual_clipped / n_tokens if n_tokens else 0.0,
        "importanceTokens": w_count,
        "importanceWeightMean": w_total / w_count if w_count else 1.0,
        "importanceWeightMax": w_largest if w_count else 1.0,
        "importanceWeightTruncatedFraction": w_truncated / w_count if w_count else 0.0,
        "tokens": n_tokens,
        "entropy": sum(entropy_sum.values()) / n_tokens if n_tokens else 0.0,
        "entropyByRole": {role: entropy_sum[role] / n for role, n in role_tokens.items() if n},
    }


def _apply(policy: Policy, seqs: list[Trajectory], request: TrainStepRequest) -> dict:
    """The optimizer steps of the request's mini-batches (minibatch.plan_steps), their metrics combined. A step
    whose loss or gradient is not finite is skipped (counted in `skippedSteps`); when no step could be taken,
    nothing has changed and the request fails."""
    spec = request.update or UpdateSpec()
    plan = plan_steps([tuple(s.prompt) for s in seqs], [s.role for s in seqs], spec)
    policy.progress.planned(plan)
    if len(plan) > 1:
        if request.loss.offPolicy == "tis":
            fill_proximal(policy, seqs, plan)
        fill_behaviour(policy, seqs, plan)
    steps = []
    for rows in plan:
        policy.progress.mini_batch(len(rows))
        # A failure on any rank fails the optimizer step on every rank, so all of them roll back (atomic.py).
        steps.append(policy.world.agree(partial(optimizer_step, policy, [seqs[i] for i in rows], request)))
        policy.progress.mini_batch_done()
    applied = [s for s in steps if s["applied"]]
    if not applied:
        raise KernelError(
            400,
            "non_finite_gradient",
            f"the batch gives a non-finite loss ({steps[0]['loss']}) or gradient norm ({steps[0]['gradNorm']}); "
            "no step applied",
        )
    exact = sum(s.exact for s in seqs)
    return {
        **combine_steps(applied),
        "tokens": sum(sum(s.in_loss) for s in seqs),
        "skippedSteps": len(steps) - len(applied),
        "rowsRetokenized": len(seqs) - exact,
        "tokenExactFraction": exact / len(seqs),
    }


def fill_behaviour(policy: Policy, seqs: list[Trajectory], plan: list[list[int]]) -> None:
    """Before the first of several steps, gives every token without a behaviour log-prob the policy's log-prob
    now (verl's `old_log_prob`): the later steps' ratios then measure how far the earlier steps moved the
    policy, and the clip bounds it, instead of the ratio 1 a detached current log-prob would give."""
    missing = [i for i, s in enumerate(seqs) if s.behaviour is None or any(math.isnan(b) for b in s.behaviour)]
    for s, now in score_now(policy, seqs, plan, missing):
        given = s.behaviour or [math.nan] * len(now)
        s.behaviour = [n if math.isnan(b) else b for n, b in zip(now, given)]


def fill_proximal(policy: Policy, seqs: list[Trajectory], plan: list[list[int]]) -> None:
    """Before the first of several steps of a `tis` update, records every row's log-probs under the policy now:
    pi_old, which every step's PPO ratio is taken against (a single step needs none: pi_old is the policy)."""
    for s, now in score_now(policy, seqs, plan, list(range(len(seqs)))):
        s.proximal = now


def score_now(
    policy: Policy, seqs: list[Trajectory], plan: list[list[int]], wanted: list[int]
) -> Iterator[tuple[Trajectory, list[float]]]:
    """The `wanted` rows' completion log-probs under the current weights, without gradient. Under FSDP each rank
    scores the rows it will train on (`rank_shares` of their step)."""
    world = policy.world
    owner = {}
    for rows in plan:
        for rank, share in enumerate(rank_shares(world, [seqs[i] for i in rows])):
            owner.update({rows[k]: rank for k in share})
    shares = [[i for i in wanted if owner[i] == rank] for rank in range(world.size)]
    mine = shares[world.rank]
    size = policy.config.micro_batch_size
    for start in range(0, world.passes([len(s) for s in shares], size) * size, size):
        part = [seqs[i] for i in mine[start : start + size]]
        with torch.no_grad():  # an empty part: a padding pass over any row, for FSDP's collectives
            logp = completion_logprobs(policy.model, part or seqs[:1], policy.device, policy.tokenizer.pad_token_id)
        for s, scores in zip(part, logp.tolist()):
            yield s, scores[len(scores) - len(s.completion) :]


def optimizer_step(policy: Policy, seqs: list[Trajectory], request: TrainStepRequest) -> dict:
    """Gradient of one mini-batch, clipping, one AdamW step at the scheduled learning rate; on a non-finite
    loss or gradient nothing changes and the result says `applied: False`. The learning rate follows the
    policy version (one per iteration), so every step of an iteration takes the same rate."""
    metrics = accumulate_gradients(policy, seqs, request.loss)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    grad_norm = scalar(torch.nn.utils.clip_grad_norm_(params, request.optimizer.maxGradNorm))
    finite = math.isfinite(grad_norm) and math.isfinite(metrics["loss"])
    if finite:
        lr = learning_rate(request.optimizer, policy.version)
        for group in policy.optimizer.param_groups:
            group["lr"] = lr
            group["weight_decay"] = request.optimizer.weightDecay
        policy.optimizer.step()
    policy.optimizer.zero_grad(set_to_none=True)
    role_tokens: dict[str, int] = {}
    for s in seqs:
        role_tokens[s.role] = role_tokens.get(s.role, 0) + sum(s.in_loss)
    return {**metrics, "gradNorm": grad_norm, "applied": finite, "roleTokens": role_tokens}


def combine_steps(steps: list[dict]) -> dict:
    """The metrics of the applied steps together: loss and gradNorm their means; kl, the clip fractions and the
    entropies means over all their loss tokens (a step weighs as its tokens); the importance weights' mean and
    truncated fraction over every token that had a behaviour log-prob, their max the largest; optimizerSteps
    their count, and per role the steps that held its rows and the first of them (1-based), which show the
    order the roles were updated in (`update.roleOrder`), its loss tokens, and the mean gradient norm of the
    steps that held its rows (what shows a role's rows moved the weights, not only that they were sent)."""
    tokens = sum(s["tokens"] for s in steps)
    weighed = sum(s["importanceTokens"] for s in steps)

    def per_weighed_token(key: str, default: float) -> float:
        return sum(s[key] * s["importanceTokens"] for s in steps) / weighed if weighed else default

    def per_token(key: str) -> float:
        return sum(s[key] * s["tokens"] for s in steps) / tokens if tokens else 0.0

    role_sum: dict[str, float] = {}
    role_tokens: dict[str, int] = {}
    steps_by_role: dict[str, int] = {}
    first_step_by_role: dict[str, int] = {}
    grad_norm_by_role: dict[str, float] = {}
    for number, s in enumerate(steps, start=1):
        for role, n in s["roleTokens"].items():
            role_tokens[role] = role_tokens.get(role, 0) + n
            role_sum[role] = role_sum.get(role, 0.0) + s["entropyByRole"].get(role, 0.0) * n
            steps_by_role[role] = steps_by_role.get(role, 0) + 1
            first_step_by_role.setdefault(role, number)
            grad_norm_by_role[role] = grad_norm_by_role.get(role, 0.0) + s["gradNorm"]
    return {
        "loss": sum(s["loss"] for s in steps) / len(steps),
        "kl": per_token("kl"),
        "clipFraction": per_token("clipFraction"),
        "dualClipFraction": per_token("dualClipFraction"),
        "importanceWeightMean": per_weighed_token("importanceWeightMean", 1.0),
        "importanceWeightMax": max(s["importanceWeightMax"] for s in steps),
        "importanceWeightTruncatedFraction": per_weighed_token("importanceWeightTruncatedFraction", 0.0),
        "entropy": per_token("entropy"),
        "entropyByRole": {role: role_sum[role] / n for role, n in role_tokens.items() if n},
        "gradNorm": sum(s["gradNorm"] for s in steps) / len(steps),
        "optimizerSteps": len(steps),
        "stepsByRole": steps_by_role,
        "firstStepByRole": first_step_by_role,
        "tokensByRole": role_tokens,
        "gradNormByRole": {role: total / steps_by_role[role] for role, total in grad_norm_by_role.items()},
    }
