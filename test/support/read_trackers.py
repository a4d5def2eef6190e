"""Reads back what the tracking activity wrote, with each tracker's own reader, as JSON on stdout.

  read_trackers.py tensorboard LOGDIR     {run: {"scalars": {tag: [[step, value], ...]}, "histograms": {tag: [[step, counts]]}}}
  read_trackers.py wandb DIR RUN_ID       {"steps": [every logged _step, in file order], "runs": offline run folders}
"""

import json
import sys
from pathlib import Path


def tensorboard(logdir: str) -> dict:
    from tensorboard.backend.event_processing.event_multiplexer import EventMultiplexer

    # 0 keeps every event (the default keeps one histogram per tag).
    mux = EventMultiplexer(size_guidance={"scalars": 0, "histograms": 0})
    mux.AddRunsFromDirectory(logdir)
    mux.Reload()
    out = {}
    for run, tags in mux.Runs().items():
        accumulator = mux.GetAccumulator(run)
        out[run] = {
            "scalars": {t: [[e.step, e.value] for e in accumulator.Scalars(t)] for t in tags["scalars"]},
            "histograms": {
                t: [[e.step, list(e.histogram_value.bucket)] for e in accumulator.Histograms(t)]
                for t in tags["histograms"]
            },
        }
    return out


def wandb(directory: str, run_id: str) -> dict:
    from selfplay_kernel.wandb_log import logged_steps

    runs = sorted(p.name for p in Path(directory).glob(f"wandb/offline-run-*-{run_id}"))
    return {"steps": logged_steps(Path(directory), run_id), "runs": runs}


if __name__ == "__main__":
    kind, *args = sys.argv[1:]
    print(json.dumps(tensorboard(*args) if kind == "tensorboard" else wandb(*args)))
