"""Logs a run's points to Weights & Biases for the orchestrator's tracking activity (activities/tracking/wandb.ts).

Reads one JSON request on stdin: the W&B settings (project, entity, mode, dir), the tracker run (id, name, group,
config) and the points (step, scalars, histograms); prints one JSON line: the steps logged. It logs only the
steps the W&B run does not hold yet, so a retried or repeated request never logs a step twice: online, W&B
resumes the run and says its next step; offline, the run's earlier offline files are read for the last step.
Credentials and the server come from the environment (WANDB_API_KEY, WANDB_BASE_URL), never from the request.
"""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path
from typing import Any, Iterator

# The W&B transaction log (`run-{id}.wandb`): a header, then records in 32 KiB blocks, LevelDB's log format.
_HEADER = b":W&B\xe1\xbe\x00"
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def log_records(path: Path) -> Iterator[bytes]:
    """The records of a W&B transaction log; a torn record at its end (a killed writer) ends it."""
    data = path.read_bytes()
    if not data.startswith(_HEADER):
        raise ValueError(f"{path} is not a W&B transaction log (no :W&B header)")
    pos, pending = len(_HEADER), b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        if kind == 0 or len(chunk) < length:
            return
        pos += 7 + length
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            pending = chunk
        elif kind == _MIDDLE:
            pending += chunk
        elif kind == _LAST:
            yield pending + chunk
            pending = b""


def logged_steps(wandb_dir: Path, run_id: str) -> list[int]:
    """The `_step` of every history record in the run's offline files under `wandb_dir` (its `wandb/` folder)."""
    from wandb.proto import wandb_internal_pb2 as pb

    steps: list[int] = []
    for path in sorted(wandb_dir.glob(f"wandb/offline-run-*-{run_id}/run-{run_id}.wandb")):
        for raw in log_records(path):
            record = pb.Record()
            record.ParseFromString(raw)
            if record.WhichOneof("record_type") != "history":
                continue
            for item in record.history.item:
                if item.key == "_step" or list(item.nested_key) == ["_step"]:
                    steps.append(int(json.loads(item.value_json)))
    return steps


def log(request: dict[str, Any]) -> list[int]:
    import wandb

    settings, run, points = request["settings"], request["run"], request["points"]
    mode = settings.get("mode", "online")
    directory = Path(settings.get("dir") or ".")
    directory.mkdir(parents=True, exist_ok=True)
    held = logged_steps(directory, run["id"]) if mode == "offline" else []
    tracker = wandb.init(
        project=settings["project"],
        entity=settings.get("entity"),
        dir=str(directory),
        mode=mode,
        id=run["id"],
        name=run["name"],
        group=run["group"],
        config=run["config"],
        resume="allow",
    )
    try:
        next_step = max(tracker.step, max(held, default=-1) + 1)
        logged = []
        for point in sorted(points, key=lambda p: p["step"]):
            if point["step"] < next_step:
                continue
            values: dict[str, Any] = dict(point["scalars"])
            for name, counts in point["histograms"].items():
                edges = [k - 0.5 for k in range(len(counts) + 1)]
                values[name] = wandb.Histogram(np_histogram=(counts, edges))
            tracker.log(values, step=point["step"])
            logged.append(point["step"])
        return logged
    finally:
        tracker.finish()


def main() -> None:
    os.environ.setdefault("WANDB_SILENT", "true")
    logged = log(json.load(sys.stdin))
    print(json.dumps({"logged": logged}))


if __name__ == "__main__":
    main()
