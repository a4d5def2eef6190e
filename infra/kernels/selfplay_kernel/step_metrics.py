"""A train step's metrics, reduced three times, each by field name: a mini-batch's micro-batches and then the
ranks add up sums over their loss tokens (`TokenSums`); each optimizer step turns its sums into means
(`StepMetrics`); the request's applied steps are combined into the response's metrics (`combine_steps`, a
`TrainStepMetrics`, the contract's shape).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from typing_extensions import NotRequired, TypedDict

from .distributed import World
from .encoding import Trajectory


@dataclass
class TokenSums:
    """Sums over loss tokens, added up over micro-batches (`add`) and ranks (`over_ranks`). The importance
    weights are those of the loss tokens that have a behaviour log-prob (micro_batch.py)."""

    loss: float = 0.0
    """The micro-batches' weighted loss terms: the mini-batch's objective."""
    kl: float = 0.0
    clipped: int = 0
    dual_clipped: int = 0
    weight_total: float = 0.0
    weight_count: int = 0
    weight_truncated: int = 0
    weight_largest: float = 0.0
    """The one field taken as a maximum, not a sum."""
    entropy_by_role: dict[str, float] = field(default_factory=dict)

    def add(self, other: TokenSums) -> None:
        for name in SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.weight_largest = max(self.weight_largest, other.weight_largest)
        for role, h in other.entropy_by_role.items():
            self.entropy_by_role[role] = self.entropy_by_role.get(role, 0.0) + h

    def over_ranks(self, world: World, roles: list[str]) -> TokenSums:
        """The sums of every rank: one all-reduce of the summed fields and the per-role entropies, one of the
        largest weight. `roles` is the mini-batch's, the same list on every rank (a rank's share may lack some)."""
        summed = [getattr(self, name) for name in SUMMED]
        totals = world.sum([*summed, *(self.entropy_by_role.get(r, 0.0) for r in roles)])
        (largest,) = world.max([self.weight_largest])
        return TokenSums(
            **dict(zip(SUMMED, totals)),
            weight_largest=largest,
            entropy_by_role=dict(zip(roles, totals[len(SUMMED) :])),
        )


SUMMED = [f.name for f in fields(TokenSums) if f.name not in ("weight_largest", "entropy_by_role")]


@dataclass(kw_only=True)
class StepMetrics:
    """One optimizer step's metrics: its loss, and means over its mini-batch's loss tokens (the importance
    weights' over the tokens that have a behaviour log-prob, `importanceTokens`). `gradNorm` and `applied` are
    the optimizer step's own."""

    loss: float
    kl: float
    clipFraction: float
    dualClipFraction: float
    importanceTokens: int
    importanceWeightMean: float
    importanceWeightMax: float
    importanceWeightTruncatedFraction: float
    tokens: int
    entropy: float
    entropyByRole: dict[str, float]
    tokensByRole: dict[str, int]
    """Every role of the mini-batch, one whose rows have no loss token with 0."""
    gradNorm: float = math.nan
    applied: bool = False

    @classmethod
    def of(cls, sums: TokenSums, tokens_by_role: dict[str, int]) -> StepMetrics:
        """The means of a mini-batch's sums (over all ranks) whose rows hold `tokens_by_role` loss tokens."""
        n = sum(tokens_by_role.values())
        count = sums.weight_count

        def per_token(total: float) -> float:
            return total / n if n else 0.0

        return cls(
            loss=sums.loss,
            kl=per_token(sums.kl),
            clipFraction=per_token(sums.clipped),
            dualClipFraction=per_token(sums.dual_clipped),
            importanceTokens=count,
            importanceWeightMean=sums.weight_total / count if count else 1.0,
            importanceWeightMax=sums.weight_largest if count else 1.0,
            importanceWeightTruncatedFraction=sums.weight_truncated / count if count else 0.0,
            tokens=n,
            entropy=per_token(sum(sums.entropy_by_role.values())),
            entropyByRole={role: sums.entropy_by_role[role] / k for role, k in tokens_by_role.items() if k},
            tokensByRole=tokens_by_role,
        )


# Which token count weighs each mean when steps are combined: a step weighs as the tokens the mean is over.
WEIGHED_BY = {
    "kl": "tokens",
    "clipFraction": "tokens",
    "dualClipFraction": "tokens",
    "entropy": "tokens",
    "importanceWeightMean": "importanceTokens",
    "importanceWeightTruncatedFraction": "importanceTokens",
}
# A mean over no token: no importance weight is 1 (on policy), every other mean 0.
EMPTY_MEAN = {"importanceWeightMean": 1.0}


class TrainStepMetrics(TypedDict):
    """The metrics of POST /v1/train/step's response. The fields a client may find absent are those kernels
    before them did not report (this kernel reports every one)."""

    loss: float
    """The mean of the applied optimizer steps' losses."""
    kl: float
    clipFraction: float
    dualClipFraction: NotRequired[float]
    """Loss tokens where dual-clip capped the loss, as a fraction of all loss tokens."""
    importanceWeightMean: NotRequired[float]
    """Importance weights over the loss tokens with a behaviour log-prob: under `ppo_ratio` the ratio π/μ the
    clip sees ("truncated": outside the clip range), under `tis` the raw π_old/μ (truncated: above the cap)."""
    importanceWeightMax: NotRequired[float]
    importanceWeightTruncatedFraction: NotRequired[float]
    entropy: NotRequired[float]
    """Mean next-token entropy (nats) over the loss tokens."""
    entropyByRole: NotRequired[dict[str, float]]
    """The same per row role: a role collapsing onto a few answers shows here first."""
    gradNorm: float
    """The mean of the applied steps' gradient norms, before clipping."""
    optimizerSteps: NotRequired[int]
    """Optimizer steps taken (one per mini-batch and epoch)."""
    stepsByRole: NotRequired[dict[str, int]]
    """Per role, the optimizer steps whose mini-batch held its rows: with `update.roleOrder`, its own phase's."""
    firstStepByRole: NotRequired[dict[str, int]]
    """Per role, the first of those steps (1-based): the order the roles were updated in."""
    tokensByRole: NotRequired[dict[str, int]]
    """Per role, its loss tokens."""
    gradNormByRole: NotRequired[dict[str, float]]
    """Per role, the mean gradient norm (before clipping) of the steps that held its rows."""
    tokens: int
    skippedSteps: NotRequired[int]
    """Mini-batches whose loss or gradient was not finite, skipped without changing the weights."""
    rowsRetokenized: NotRequired[int]
    """Rows trained on the kernel's tokenization of their text (no `completionTokens`)."""
    tokenExactFraction: NotRequired[float]
    """The share of rows trained on their sampled token ids."""
    maxRowStaleness: NotRequired[int]
    """The most versions any row was sampled before `baseVersion` (staleness.py): 0 on policy."""
    seconds: float
    """How long the step took, from its checks to its response."""


def combine_steps(
    applied: list[StepMetrics], skipped: int, seqs: list[Trajectory], row_staleness: int
) -> TrainStepMetrics:
    """The response's metrics of a request's optimizer steps on `seqs`: the `applied` ones, and `skipped` more
    whose loss or gradient was not finite. Loss and gradNorm are the applied steps' means, the other means
    weighed as `WEIGHED_BY` says, the largest importance weight the largest; optimizerSteps their count, the
    per-role metrics `by_role`'s; `row_staleness` is the rows' (staleness.py). `seconds` is 0: the caller times
    the whole step."""

    def mean(name: str) -> float:
        weight = WEIGHED_BY[name]
        total = sum(getattr(s, weight) for s in applied)
        if not total:
            return EMPTY_MEAN.get(name, 0.0)
        return sum(getattr(s, name) * getattr(s, weight) for s in applied) / total

    roles = by_role(applied)
    exact = sum(s.exact for s in seqs)
    return {
        "loss": sum(s.loss for s in applied) / len(applied),
        "kl": mean("kl"),
        "clipFraction": mean("clipFraction"),
        "dualClipFraction": mean("dualClipFraction"),
        "importanceWeightMean": mean("importanceWeightMean"),
        "importanceWeightMax": max(s.importanceWeightMax for s in applied),
        "importanceWeightTruncatedFraction": mean("importanceWeightTruncatedFraction"),
        "entropy": mean("entropy"),
        "entropyByRole": roles.entropy,
        "gradNorm": sum(s.gradNorm for s in applied) / len(applied),
        "optimizerSteps": len(applied),
        "stepsByRole": roles.steps,
        "firstStepByRole": roles.first_step,
        "tokensByRole": roles.tokens,
        "gradNormByRole": roles.grad_norm,
        "tokens": sum(sum(s.in_loss) for s in seqs),
        "skippedSteps": skipped,
        "rowsRetokenized": len(seqs) - exact,
        "tokenExactFraction": exact / len(seqs),
        "maxRowStaleness": row_staleness,
        "seconds": 0.0,
    }


@dataclass
class RoleMetrics:
    """Per role, over the steps that held its rows: their count and the first of them (1-based), which show the
    order the roles were updated in (`update.roleOrder`); its loss tokens and their mean entropy; the steps' mean
    gradient norm (what shows a role's rows moved the weights, not only that they were sent)."""

    steps: dict[str, int] = field(default_factory=dict)
    first_step: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    entropy: dict[str, float] = field(default_factory=dict)
    grad_norm: dict[str, float] = field(default_factory=dict)


def by_role(applied: list[StepMetrics]) -> RoleMetrics:
    out = RoleMetrics()
    entropy_sum: dict[str, float] = {}
    grad_norm_sum: dict[str, float] = {}
    for number, s in enumerate(applied, start=1):
        for role, n in s.tokensByRole.items():
            out.tokens[role] = out.tokens.get(role, 0) + n
            entropy_sum[role] = entropy_sum.get(role, 0.0) + s.entropyByRole.get(role, 0.0) * n
            out.steps[role] = out.steps.get(role, 0) + 1
            out.first_step.setdefault(role, number)
            grad_norm_sum[role] = grad_norm_sum.get(role, 0.0) + s.gradNorm
    out.entropy = {role: entropy_sum[role] / n for role, n in out.tokens.items() if n}
    out.grad_norm = {role: total / out.steps[role] for role, total in grad_norm_sum.items()}
    return out
