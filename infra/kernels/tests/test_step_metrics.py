"""The step's metrics, reduced by field name: over micro-batches (`TokenSums.add`), over ranks
(`TokenSums.over_ranks`, one all-reduce unpacked by name), into one step's means (`StepMetrics.of`) and over the
request's steps (`combine_steps`)."""

import math

import pytest

from selfplay_kernel.encoding import Trajectory
from selfplay_kernel.step_metrics import SUMMED, StepMetrics, TokenSums, combine_steps


class TwoRanks:
    """A world of two ranks whose other rank holds `other`'s values: sum and max over both, element-wise."""

    def __init__(self, other: list[float], other_largest: float) -> None:
        self.other, self.other_largest = other, other_largest
        self.calls: list[list[float]] = []

    def sum(self, values):
        self.calls.append(list(values))
        return [a + b for a, b in zip(values, self.other)]

    def max(self, values):
        return [max(values[0], self.other_largest)]


def sums(**fields) -> TokenSums:
    return TokenSums(**fields)


def test_add_sums_every_field_by_name_and_keeps_the_largest_weight():
    total = sums(loss=1.0, kl=0.5, clipped=1, weight_largest=2.0, entropy_by_role={"a": 1.0})
    more = {"dual_clipped": 1, "weight_count": 3, "weight_largest": 1.5, "entropy_by_role": {"a": 0.5, "b": 2.0}}
    total.add(sums(loss=2.0, kl=0.25, clipped=2, **more))
    expected = {"dual_clipped": 1, "weight_count": 3, "weight_largest": 2.0, "entropy_by_role": {"a": 1.5, "b": 2.0}}
    assert total == sums(loss=3.0, kl=0.75, clipped=3, **expected)


def test_over_ranks_unpacks_the_all_reduce_by_field_name_with_every_role_of_the_batch():
    """This rank's share holds no `b` row; the other rank's does. Each summed field and role comes back by name."""
    mine = sums(loss=1.0, kl=2.0, clipped=3, dual_clipped=4, weight_total=5.0, weight_count=6, weight_truncated=7)
    mine.weight_largest, mine.entropy_by_role = 1.5, {"a": 0.5}
    other = [10.0 * (i + 1) for i in range(len(SUMMED))] + [100.0, 200.0]  # then roles a, b
    world = TwoRanks(other, other_largest=3.0)
    total = mine.over_ranks(world, ["a", "b"])
    assert len(world.calls) == 1  # one collective for every sum
    assert {name: getattr(total, name) for name in SUMMED} == dict(zip(SUMMED, [11, 22, 33, 44, 55, 66, 77]))
    assert (total.weight_largest, total.entropy_by_role) == (3.0, {"a": 100.5, "b": 200.0})


def test_a_steps_means_are_over_its_loss_tokens_and_its_weighed_tokens():
    totals = sums(loss=0.5, kl=1.0, clipped=2, dual_clipped=1, weight_total=6.0, weight_count=4, weight_truncated=1)
    totals.weight_largest, totals.entropy_by_role = 3.0, {"a": 4.0, "b": 0.0}
    step = StepMetrics.of(totals, {"a": 8, "b": 0})
    assert step.kl == 1.0 / 8 and step.clipFraction == 2 / 8 and step.dualClipFraction == 1 / 8
    assert step.importanceWeightMean == 1.5 and step.importanceWeightMax == 3.0
    assert step.importanceWeightTruncatedFraction == 0.25
    assert step.tokens == 8 and step.entropy == 0.5
    assert step.entropyByRole == {"a": 0.5}  # a role without loss tokens has no mean
    assert step.tokensByRole == {"a": 8, "b": 0}
    assert math.isnan(step.gradNorm) and not step.applied


def test_a_step_without_importance_weights_reports_them_at_one():
    step = StepMetrics.of(sums(), {"a": 0})
    assert (step.importanceWeightMean, step.importanceWeightMax, step.importanceWeightTruncatedFraction) == (1, 1, 0)
    assert step.kl == 0.0 and step.entropy == 0.0


def trajectory(role: str, tokens: int, exact: bool) -> Trajectory:
    return Trajectory([1], [2] * tokens, [True] * tokens, None, 0.0, role, exact=exact)


def test_combine_steps_weighs_each_mean_by_the_tokens_it_is_over():
    solver = {"solver": 8.0}
    first = StepMetrics.of(
        sums(loss=1.0, kl=4.0, clipped=4, weight_total=4.0, weight_count=2, weight_largest=2.5, entropy_by_role=solver),
        {"solver": 4},
    )
    proposer = {"proposer": 2.0}
    second = StepMetrics.of(
        sums(loss=3.0, weight_total=6.0, weight_count=6, weight_largest=1.0, entropy_by_role=proposer),
        {"proposer": 12},
    )
    first.gradNorm, second.gradNorm = 2.0, 4.0
    seqs = [trajectory("solver", 4, True), trajectory("proposer", 12, False)]
    metrics = combine_steps([first, second], 1, seqs, 2)
    assert metrics["loss"] == 2.0 and metrics["gradNorm"] == 3.0
    assert metrics["kl"] == pytest.approx(4.0 / 16)  # (1.0 * 4 + 0.0 * 12) / 16
    assert metrics["clipFraction"] == pytest.approx(4 / 16)
    assert metrics["importanceWeightMean"] == pytest.approx((2.0 * 2 + 1.0 * 6) / 8)
    assert metrics["importanceWeightMax"] == 2.5
    assert metrics["entropy"] == pytest.approx(10.0 / 16)
    assert metrics["entropyByRole"] == {"solver": 2.0, "proposer": pytest.approx(2.0 / 12)}
    assert metrics["stepsByRole"] == {"solver": 1, "proposer": 1}
    assert metrics["firstStepByRole"] == {"solver": 1, "proposer": 2}
    assert metrics["tokensByRole"] == {"solver": 4, "proposer": 12}
    assert metrics["gradNormByRole"] == {"solver": 2.0, "proposer": 4.0}
    assert (metrics["optimizerSteps"], metrics["skippedSteps"], metrics["tokens"]) == (2, 1, 16)
    assert metrics["maxRowStaleness"] == 2
    assert (metrics["rowsRetokenized"], metrics["tokenExactFraction"]) == (1, 0.5)
