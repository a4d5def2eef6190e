"""`python -m selfplay_kernel` whose AdamW fails once, for the atomic step's test under torchrun
(test_distributed.py): on rank SELFPLAY_TEST_FAIL_RANK, optimizer step SELFPLAY_TEST_FAIL_STEP (from 1) updates
the rank's shards and then raises, as an out-of-memory error after the update would."""

import itertools
import os
import sys

import torch

from selfplay_kernel.cli import main


def fail_once(rank: int, call: int) -> None:
    real, calls = torch.optim.AdamW.step, itertools.count(1)

    def step(self, *args, **kwargs):
        result = real(self, *args, **kwargs)
        if next(calls) == call and int(os.environ.get("RANK", "0")) == rank:
            raise torch.OutOfMemoryError(f"injected on rank {rank} after the update")
        return result

    # Before any optimizer exists: its constructor wraps this step with the step hooks the kernel relies on.
    torch.optim.AdamW.step = step


if __name__ == "__main__":
    fail_once(int(os.environ["SELFPLAY_TEST_FAIL_RANK"]), int(os.environ["SELFPLAY_TEST_FAIL_STEP"]))
    sys.exit(main())
