"""The Reasoner's learning ceiling in the toy world: RL on ideal tasks, with no Challenger in the way.

Every step takes the next `--tasks-per-step` sums from a task file (the kinds in turn, so the Reasoner always
has its frontier in front of it), samples `--group` answers to each with the kernel's own sampler, rewards an
answer 1 when its last \\boxed{} holds the sum, takes Dr.GRPO's advantage (reward minus the group's mean) and
applies one step through the kernel's own `train_step`, with the toy world's loss (PPO-clip, Dr.GRPO
normalised by the 24-token budget). Every `--eval-every` steps it scores the held-out file as the run's
evaluation does: 2 samples per item at temperature 1, seeded per item.

What it measures is how fast the warm-started model can learn by RL at all, which bounds what SPICE can show in
this world: SPICE's Reasoner trains on fewer and less informative tasks per step than these.

    python infra/toy-world/reasoner_ceiling.py --model DIR --tasks FILE --held-out FILE [--steps 200] ...

Task and held-out files are JSONL `{"messages", "answer", "kind"}` (bench/reasoner-ceiling.ts writes them).
Prints one line per evaluation and last `reasoner_ceiling_gain <points>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import torch

from selfplay_kernel.chat import encode_prompt
from selfplay_kernel.policy import KernelConfig, Policy
from selfplay_kernel.sampler import Row, generate
from selfplay_kernel.trainer import TrainStepRequest, train_step

MAX_TOKENS = 24
EVAL_SAMPLES = 2
BOXED = re.compile(r"\\boxed\{(-?\d+)\}")


def read_tasks(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def correct(text: str, answer: int) -> bool:
    """The last \\boxed{} is the answer, as the project's checker reads it; sums are integers, compared exactly."""
    found = BOXED.findall(text)
    return bool(found) and int(found[-1]) == answer


def sample(policy: Policy, tasks: list[dict], n: int, max_tokens: int, seed: int) -> list[list[dict]]:
    """`n` samples of each task at temperature 1 through the sampler's batch generation; per task, per sample,
    the text and the sampled ids and log-probs."""
    prompts = [encode_prompt(policy.tokenizer, t["messages"]) for t in tasks]
    rows = [Row(p, 1.0, 1.0, max_tokens, [], seed + i * n + k) for i, p in enumerate(prompts) for k in range(n)]
    out = []
    for start in range(0, len(rows), policy.config.max_batch_rows):
        out += generate(policy.serving_model, policy.tokenizer, rows[start : start + policy.config.max_batch_rows], policy.device)
    return [[{"text": s.text, "ids": s.tokens, "logprobs": s.logprobs} for s in out[i * n : (i + 1) * n]] for i in range(len(tasks))]


def evaluate(policy: Policy, held_out: list[dict]) -> tuple[float, dict[str, float]]:
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for task, samples in zip(held_out, sample(policy, held_out, EVAL_SAMPLES, 10, seed=10_000_000)):
        by_kind[task["kind"]] += [correct(s["text"], task["answer"]) for s in samples]
    every = [c for v in by_kind.values() for c in v]
    return sum(every) / len(every), {k: sum(v) / len(v) for k, v in sorted(by_kind.items())}


def training_rows(tasks: list[dict], groups: list[list[dict]], sign: float) -> list[dict]:
    """Rows of the groups with a spread of rewards (a group all right or all wrong has advantage 0)."""
    rows = []
    for i, (task, group) in enumerate(zip(tasks, groups)):
        rewards = [float(correct(s["text"], task["answer"])) for s in group]
        mean = sum(rewards) / len(rewards)
        for s, r in zip(group, rewards):
            if r == mean:
                continue
            rows.append(
                {
                    "messages": task["messages"],
                    "completion": s["text"],
                    "completionTokens": [{"ids": s["ids"]}],
                    "behaviourLogprobs": s["logprobs"],
                    "role": "reasoner",
                    "group": f"reasoner/task-{i}",
                    "reward": r,
                    "advantage": sign * (r - mean),
                }
            )
    return rows


def step_request(batch: Path, raw: bytes, rows: int, version: int, lr: float) -> TrainStepRequest:
    return TrainStepRequest.model_validate_json(
        json.dumps(
            {
                "idempotencyKey": f"ceiling/version-{version}",
                "runId": "ceiling",
                "iteration": version + 1,
                "policy": "toy",
                "baseVersion": version,
                "batch": {"uri": str(batch), "rows": rows, "sha256": hashlib.sha256(raw).hexdigest()},
                "loss": {
                    "type": "ppo_clip",
                    "normalization": "dr_grpo",
                    "normalizerConstant": MAX_TOKENS,
                    "clipLow": 0.2,
                    "clipHigh": 0.2,
                    "klCoef": 0.0,
                },
                "optimizer": {
                    "learningRate": lr,
                    "schedule": "constant",
                    "warmupSteps": 0,
                    "maxGradNorm": 1.0,
                    "weightDecay": 0.0,
                },
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--tasks", required=True)
    parser.add_argument("--held-out", required=True)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--tasks-per-step", type=int, default=32)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--flipped", action="store_true", help="the control: every advantage with its sign flipped")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    torch.manual_seed(0)
    policy = Policy.load(KernelConfig(model=args.model, policy="toy", device="cpu", max_batch_rows=256))
    tasks, held_out = read_tasks(args.tasks), read_tasks(args.held_out)
    if len(tasks) < args.steps * args.tasks_per_step:
        raise SystemExit(f"{args.tasks}: {len(tasks)} tasks, {args.steps * args.tasks_per_step} needed")

    def report(step: int) -> float:
        accuracy, by_kind = evaluate(policy, held_out)
        kinds = ", ".join(f"{k} {100 * a:.1f}%" for k, a in by_kind.items())
        print(f"step {step}: held-out {100 * accuracy:.1f}% ({kinds})", flush=True)
        return accuracy

    start = report(0)
    accuracy, version = start, 0  # a step whose groups are all uniform trains nothing and makes no version
    with tempfile.TemporaryDirectory(prefix="reasoner-ceiling-") as tmp:
        for step in range(1, args.steps + 1):
            batch_tasks = tasks[(step - 1) * args.tasks_per_step : step * args.tasks_per_step]
            groups = sample(policy, batch_tasks, args.group, MAX_TOKENS, seed=step * 100_000)
            rows = training_rows(batch_tasks, groups, -1.0 if args.flipped else 1.0)
            if rows:
                raw = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
                batch = Path(tmp) / f"step-{step}.jsonl"
                batch.write_bytes(raw)
                train_step(policy, step_request(batch, raw, len(rows), version, args.lr))
                version += 1
            if step % args.eval_every == 0 or step == args.steps:
                accuracy = report(step)
    print(f"reasoner_ceiling_gain {100 * (accuracy - start):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
