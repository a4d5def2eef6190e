"""How far the running train step has got, for `GET /v1/train/progress`. A step takes minutes to hours, and the
trainer activity that waits on it heartbeats this progress (activities/stages/update.ts), so an operator sees a
step move and not only that its worker is alive. The step's thread writes it; the route reads it on the event
loop (a copy under a lock held for a few assignments), so it answers while the step holds the policy.

Rows are counted per mini-batch they are trained in (with `epochs` > 1 a row counts once per epoch), so
`rowsTrained` ends at `rows`. Under FSDP each rank trains its share of a mini-batch; rank 0, which serves the
route, counts its own micro-batches and scales them to the mini-batch, exact again at each mini-batch's end.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class StepProgress:
    """The running step's idempotency key, mini-batches and rows: planned and done. None: no step runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._step: dict | None = None
        self._rows_before = 0  # rows of the finished mini-batches
        self._batch_rows = 0  # rows of the mini-batch in training

    @contextmanager
    def running(self, key: str) -> Iterator[None]:
        """The step `key` runs while the block does (on rank 0: the others' progress stays unread and empty)."""
        with self._lock:
            self._rows_before = self._batch_rows = 0
            self._step = {"idempotencyKey": key, "miniBatches": 0, "miniBatchesDone": 0, "rows": 0, "rowsTrained": 0}
        try:
            yield
        finally:
            with self._lock:
                self._step = None

    def planned(self, plan: list[list[int]]) -> None:
        """The step's batch is read and cut into mini-batches (row indices); until then both counts are 0."""
        with self._lock:
            if self._step is not None:
                self._step.update(miniBatches=len(plan), rows=sum(len(rows) for rows in plan))

    def mini_batch(self, rows: int) -> None:
        """A mini-batch of `rows` rows starts training."""
        with self._lock:
            self._batch_rows = rows

    def trained(self, fraction: float) -> None:
        """`fraction` of the current mini-batch's rows have their gradient."""
        with self._lock:
            if self._step is not None:
                self._step["rowsTrained"] = self._rows_before + round(self._batch_rows * fraction)

    def mini_batch_done(self) -> None:
        with self._lock:
            self._rows_before += self._batch_rows
            if self._step is not None:
                self._step["miniBatchesDone"] += 1
                self._step["rowsTrained"] = self._rows_before

    def snapshot(self) -> dict | None:
        with self._lock:
            return None if self._step is None else dict(self._step)
