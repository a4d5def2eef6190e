"""The idempotent training step: the optimizer steps of a policy-gradient loss on a batch given by reference,
one policy version.

Order of checks (so a retry is always safe): request shape (400) -> policy name (404) -> idempotency key seen
before (first response again, `applied: false`) -> weights of a failed step (409 `policy_dirty`, atomic.py) ->
lineage (409, lineage.py) -> base version (409) -> batch (400/503), its rows' staleness (400, staleness.py) ->
steps. The batch becomes one optimizer step, or one per mini-batch when the request's `update` asks for several
(minibatch.py), all or none of them (atomic.py). Each step's gradient is accumulated over micro-batches of
`--micro-batch-size` sequences; the per-sequence weights are computed over the step's whole mini-batch first
(losses.sequence_weights), so the result equals the mini-batch's full gradient. Under FSDP (distributed.py)
every rank computes the weights over the whole mini-batch and trains on its share of the sequences; the
gradients and metrics are summed over the ranks, so the step equals the single-process one up to float rounding.

The parts: the request (requests.py), its rows as token ids (encoding.py), their scores (scoring.py), a
micro-batch's loss (micro_batch.py), the metrics (step_metrics.py).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterator
from functools import partial

import torch

from . import losses
from .atomic import atomic_step, check_clean
from .batch import load_batch
from .distributed import World, collective, everywhere, scalar
from .encoding import Trajectory, encode_rows
from .errors import KernelError
from .lineage import check_step
from .micro_batch import micro_batch_loss
from .minibatch import UpdateSpec, plan_steps
from .policy import Policy
from .requests import LossSpec, OptimizerSpec, TrainStepRequest
from .scoring import completion_logprobs
from .staleness import row_staleness
from .step_metrics import StepMetrics, TokenSums, TrainStepMetrics, combine_steps

log = logging.getLogger(__name__)


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
def run_step(policy: Policy, request_json: str) -> TrainStepMetrics:
    """Every rank: reads and encodes the whole batch (the sequence weights and the mini-batch plan need every
    row), trains on its share of the rows, and moves to the next version; returns the step's metrics. A failure
    leaves the version as it was, and the weights too (or the policy dirty: atomic.py)."""
    request = TrainStepRequest.model_validate_json(request_json)

    def read() -> tuple[list[Trajectory], int]:
        rows = load_batch(request.batch, request.loss.offPolicy)
        staleness = row_staleness(rows, request.baseVersion, request.maxStaleness)
        return encode_rows(policy, rows), staleness

    seqs, staleness = policy.world.agree(read)
    with policy.weights.write():
        with atomic_step(policy):
            metrics = _apply(policy, seqs, request, staleness)
        policy.version += 1
        policy.lineage = request.runId
        policy.refresh_replica()
    return metrics


def rank_shares(world: World, seqs: list[Trajectory]) -> list[list[int]]:
    """Which of a step's sequences each rank trains on: sorted by length (shortest together in a micro-batch,
    to waste little padding), then dealt round robin (so ranks get similar lengths)."""
    order = sorted(range(len(seqs)), key=lambda i: seqs[i].length)
    return [order[r :: world.size] for r in range(world.size)]


def accumulate_gradients(policy: Policy, seqs: list[Trajectory], spec: LossSpec) -> StepMetrics:
    """Fills the trainable parameters' .grad with the full-batch gradient, one micro-batch at a time (under
    FSDP, each rank its share of the sequences, the gradients summed over ranks); returns the batch's metrics
    (without the optimizer step's gradNorm)."""
    world = policy.world
    loss_tokens = [sum(s.in_loss) for s in seqs]
    weights = losses.sequence_weights(spec.normalization, loss_tokens, spec.normalizerConstant)
    shares = rank_shares(world, seqs)
    mine = shares[world.rank]
    size = policy.config.micro_batch_size
    sums = TokenSums()
    policy.optimizer.zero_grad(set_to_none=True)
    for start in range(0, world.passes([len(s) for s in shares], size) * size, size):
        idx = mine[start : start + size]
        if not idx:  # a padding pass: the ranks' FSDP collectives stay in step; weight 0, no gradient
            micro_batch_loss(policy, [seqs[shares[0][0]]], [0.0], spec).loss.backward()
            continue
        part = micro_batch_loss(policy, [seqs[i] for i in idx], [weights[i] for i in idx], spec)
        (part.loss * world.gradient_scale).backward()
        part.sums.loss = float(part.loss.detach())
        sums.add(part.sums)
        policy.progress.trained(min(start + size, len(mine)) / len(mine))
    tokens_by_role: dict[str, int] = {}
    for s, n in zip(seqs, loss_tokens):
        tokens_by_role[s.role] = tokens_by_role.get(s.role, 0) + n
    return StepMetrics.of(sums.over_ranks(world, sorted(tokens_by_role)), tokens_by_role)


def _apply(policy: Policy, seqs: list[Trajectory], request: TrainStepRequest, staleness: int) -> TrainStepMetrics:
    """The optimizer steps of the request's mini-batches (minibatch.plan_steps), their metrics combined (with the
    rows' `staleness`). A step whose loss or gradient is not finite is skipped (counted in `skippedSteps`); when
    no step could be taken, nothing has changed and the request fails."""
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
    applied = [s for s in steps if s.applied]
    if not applied:
        raise KernelError(
            400,
            "non_finite_gradient",
            f"the batch gives a non-finite loss ({steps[0].loss}) or gradient norm ({steps[0].gradNorm}); "
            "no step applied",
        )
    return combine_steps(applied, len(steps) - len(applied), seqs, staleness)


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


def optimizer_step(policy: Policy, seqs: list[Trajectory], request: TrainStepRequest) -> StepMetrics:
    """Gradient of one mini-batch, clipping, one AdamW step at the scheduled learning rate; on a non-finite
    loss or gradient nothing changes and the result says `applied: False`. The learning rate follows the
    policy version (one per iteration), so every step of an iteration takes the same rate."""
    metrics = accumulate_gradients(policy, seqs, request.loss)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    grad_norm = scalar(torch.nn.utils.clip_grad_norm_(params, request.optimizer.maxGradNorm))
    finite = math.isfinite(grad_norm) and math.isfinite(metrics.loss)
    if finite:
        lr = learning_rate(request.optimizer, policy.version)
        for group in policy.optimizer.param_groups:
            group["lr"] = lr
            group["weight_decay"] = request.optimizer.weightDecay
        policy.optimizer.step()
    policy.optimizer.zero_grad(set_to_none=True)
    return dataclasses.replace(metrics, gradNorm=grad_norm, applied=finite)
