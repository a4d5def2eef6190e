"""How far behind the policy it trains each row of a step was sampled: `baseVersion` minus the row's
`behaviourVersion` (batch.py), 0 for a row without one (a batch from before the field, on policy).

The step's metrics report the largest (`maxRowStaleness`), so a manifest shows the staleness each step actually
trained on, not only the bound the run was configured with. The kernel also refuses, before any weight is
touched (400 `batch_invalid`), a row that breaks the bound, rather than training it:
- a row newer than `baseVersion` was not sampled by any version this policy's history has reached: the batch
  belongs to another history (a rolled-back lineage, a wrong commit), whatever the correction;
- a row older than `baseVersion - maxStaleness`, when the request states the run's bound. The importance
  correction (`offPolicy: tis`) weighs such a row by its truncated ratio, so training it would not crash
  anything, but the truncation's bias grows with the distance, and the bound is what the run promised its
  learning: a row past it means the orchestration broke that promise, which a number in the metrics would only
  show after the weights had moved. A request without the bound (a client from before it) is only reported.
"""

from __future__ import annotations

from .batch import TrainingRow
from .errors import KernelError


def row_staleness(rows: list[TrainingRow], base_version: int, max_staleness: int | None) -> int:
    """The largest staleness of the rows (0 for none); raises KernelError (400) on a row outside the bound."""
    largest = 0
    for number, row in enumerate(rows, start=1):
        version = base_version if row.behaviourVersion is None else row.behaviourVersion
        lag = base_version - version
        if lag < 0:
            raise _refused(number, row, f"sampled by version {version}, newer than baseVersion {base_version}")
        if max_staleness is not None and lag > max_staleness:
            raise _refused(
                number,
                row,
                f"sampled by version {version}, {lag} versions before baseVersion {base_version}, but the "
                f"step's maxStaleness is {max_staleness}",
            )
        largest = max(largest, lag)
    return largest


def _refused(number: int, row: TrainingRow, problem: str) -> KernelError:
    return KernelError(
        400, "batch_invalid", f"batch row {number} (role {row.role!r}): behaviourVersion: {problem}"
    )
