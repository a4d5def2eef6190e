"""`python -m selfplay_kernel` with faults inside a train step, for the chaos test on the real kernel
(test/integration/kernel-chaos.test.ts). Each fault is named by the request's iteration and the mini-batch (from
1) whose optimizer step has just updated the weights, so it lands in the middle of a step whatever the timing:

- SELFPLAY_TEST_RAISE_AT=`iteration:mini-batch` raises once, as a CUDA out-of-memory error after the update
  would (the kernel rolls the step back, and the retry of the same request trains normally);
- SELFPLAY_TEST_HOLD_AT=`iteration:mini-batch` holds the step there forever, for the test to SIGKILL the kernel
  in the middle of it.

- SELFPLAY_TEST_ARM_FILE names a file the chaos suite (`npm run chaos -- --trainer kernel`) writes `raise` or
  `hold` into when it wants that fault now: the next step's mini-batch 2 or later takes it and deletes the file.

Each fault appends a JSON line `{"fault", "iteration", "miniBatch"}` to SELFPLAY_TEST_FAULT_LOG as it fires,
which is how the test knows it has.
"""

import json
import os
import sys
import threading
from pathlib import Path

import torch

from selfplay_kernel import trainer
from selfplay_kernel.cli import main


def _at(name: str) -> tuple[int, int] | None:
    value = os.environ.get(name)
    if not value:
        return None
    iteration, mini_batch = value.split(":")
    return int(iteration), int(mini_batch)


def armed(arm: Path | None) -> str | None:
    """The fault the suite armed (`raise` or `hold`), taken: the file is deleted, so it fires once."""
    if arm is None or not arm.exists():
        return None
    fault = arm.read_text().strip()
    arm.unlink()
    return fault


def inject(
    raise_at: tuple[int, int] | None, hold_at: tuple[int, int] | None, log: Path, arm: Path | None = None
) -> None:
    apply, optimizer_step = trainer._apply, trainer.optimizer_step
    where = {"iteration": -1, "miniBatch": 0}
    raised = False

    def fired(fault: str) -> None:
        with log.open("a") as f:
            f.write(json.dumps({"fault": fault, **where}) + "\n")

    def counting_apply(policy, seqs, request, *rest):
        where.update(iteration=request.iteration, miniBatch=0)
        return apply(policy, seqs, request, *rest)

    def faulty_optimizer_step(*args, **kwargs):
        nonlocal raised
        result = optimizer_step(*args, **kwargs)
        where["miniBatch"] += 1
        now = (where["iteration"], where["miniBatch"])
        on_demand = armed(arm) if now[1] >= 2 else None
        if (now == raise_at and not raised) or on_demand == "raise":
            raised = raised or now == raise_at
            fired("raise")
            raise torch.OutOfMemoryError(f"injected in iteration {now[0]}, mini-batch {now[1]}, after the update")
        if now == hold_at or on_demand == "hold":
            fired("hold")
            threading.Event().wait()  # never set: the test kills the process
        return result

    # _apply calls optimizer_step through the module's globals, so both replacements take effect.
    trainer._apply, trainer.optimizer_step = counting_apply, faulty_optimizer_step


if __name__ == "__main__":
    arm_file = os.environ.get("SELFPLAY_TEST_ARM_FILE")
    inject(
        _at("SELFPLAY_TEST_RAISE_AT"),
        _at("SELFPLAY_TEST_HOLD_AT"),
        Path(os.environ["SELFPLAY_TEST_FAULT_LOG"]),
        Path(arm_file) if arm_file else None,
    )
    sys.exit(main())
