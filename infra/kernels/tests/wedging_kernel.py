"""`python -m selfplay_kernel` whose first train step hangs forever, as on a hung CUDA or NCCL call, for the
watchdog's restart test (test_watchdog.py). The file SELFPLAY_TEST_WEDGE_MARK is written when the step hangs; a
restarted process (the same command, re-executed) finds it and trains normally."""

import os
import sys
import threading
from pathlib import Path

from selfplay_kernel import trainer
from selfplay_kernel.cli import main


def wedge_first_step(mark: Path) -> None:
    real = trainer._apply

    def apply(policy, seqs, *rest):
        if not mark.exists():
            mark.write_text(str(os.getpid()))
            threading.Event().wait()  # never set
        return real(policy, seqs, *rest)

    trainer._apply = apply


if __name__ == "__main__":
    wedge_first_step(Path(os.environ["SELFPLAY_TEST_WEDGE_MARK"]))
    sys.exit(main())
