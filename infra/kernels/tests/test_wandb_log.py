"""The W&B helper of the tracking activity: offline, it logs each step once and reads a torn file up to the tear.
Run as the activity runs it, one process per request (W&B writes its files out when the process ends)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from selfplay_kernel.wandb_log import logged_steps

KERNELS = Path(__file__).resolve().parents[1]


def log(request: dict) -> list[int]:
    env = {**os.environ, "PYTHONPATH": str(KERNELS), "WANDB_SILENT": "true"}
    done = subprocess.run(
        [sys.executable, "-m", "selfplay_kernel.wandb_log"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])["logged"]


def _request(directory: Path, steps: list[int]) -> dict:
    return {
        "settings": {"project": "selfplay-test", "mode": "offline", "dir": str(directory)},
        "run": {"id": "run-a", "name": "run-a", "group": "run-a", "config": {"recipe": "spice"}},
        "points": [
            {"step": s, "wallTime": 1.0 + s, "scalars": {"reward/x": s / 2}, "histograms": {"tasks/pass_rate": [1, s, 0]}}
            for s in steps
        ],
    }


def test_a_repeated_request_logs_no_step_twice(tmp_path):
    assert log(_request(tmp_path, [1, 2])) == [1, 2]
    assert log(_request(tmp_path, [1, 2, 3])) == [3]
    assert logged_steps(tmp_path, "run-a") == [1, 2, 3]


def test_a_torn_file_is_read_up_to_the_tear(tmp_path):
    log(_request(tmp_path, [1, 2]))
    (path,) = tmp_path.glob("wandb/offline-run-*-run-a/run-run-a.wandb")
    whole = path.read_bytes()
    # A writer killed mid-record: the last bytes never reached the file.
    path.write_bytes(whole[:-3])
    steps = logged_steps(tmp_path, "run-a")
    assert steps in ([1], [1, 2])
    assert len(steps) == len(set(steps))
