"""MAE's Judge in minutes: a warm start of the Judge's examples alone (or of the full mix), scored as it trains.

The full warm start takes 12,500 steps and a quarter of an hour to say whether a form of the Judge's working
teaches the verdict; this trains the warm start's own model, tokenizer and steps (`warm_start.py`) on the
examples given, by the roles' weights given, and every `--eval-every` steps prints on the probe's gradings
(about training facts, the answer shown right a quarter of the time):

- `verdict|right working`: the greedy verdict after the Judge's right working, forced (the comparison alone,
  with no slip of its own working in the way), on right and on wrong answers shown;
- greedy and sampled (temperature 1): how often its working is right, and how often its `<score>` agrees with
  the true verdict (9 for a right answer, 2 for a wrong one), which is what the Solver's reward rests on.

    python infra/toy-world/mae_judge_probe.py --examples FILE --probe FILE [--steps 3000] [--eval-every 500]
        [--role-weight ROLE=W ...] [--hidden 64] [--lr 2e-3] [--seed 0]
    python infra/toy-world/mae_judge_probe.py --model DIR --probe FILE     # scores a warm-started model only

The files are JSONL: examples as the warm start reads them, probe rows `{"messages", "completion", "verdict",
"answer", "shown"}` (bench/mae-judge.ts writes both). Prints last `judge_verdict_accuracy <percent>` (the verdict
after the right working, at the end).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import torch

from selfplay_kernel.chat import encode_completion, encode_prompt
from selfplay_kernel.sampler import Row, generate
from selfplay_kernel.tiny import build_model
from selfplay_kernel.warm_start import (
    WarmStartConfig,
    cosine_learning_rate,
    encode_examples,
    role_batches,
    sft_step,
    train_tokenizer,
)

SCORE = re.compile(r"<score>(\d+)</score>")
WORKED = re.compile(r"= (\d+);")


def read_jsonl(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]


def verdict_given_right_working(model, tokenizer, probe: list[dict]) -> dict[str, float]:
    """The Judge's right working forced (its completion up to the result's `; `), the rest greedy: the share
    of probe rows whose score is the true verdict, on right and on wrong answers shown."""
    rows = []
    for row in probe:
        forced = row["completion"][: row["completion"].index("; ") + 2]
        prefix = encode_completion(tokenizer, forced).ids[:-1]
        rows.append(Row(encode_prompt(tokenizer, row["messages"]) + prefix, 0.0, 1.0, 24, [], 0))
    out = []
    for start in range(0, len(rows), 256):
        out += generate(model, tokenizer, rows[start : start + 256], torch.device("cpu"))
    hits: dict[str, list[float]] = {"right": [], "wrong": []}
    for row, sample in zip(probe, out):
        score = SCORE.search(sample.text)
        hits["right" if row["shown"] == row["answer"] else "wrong"].append(float(bool(score) and int(score.group(1)) == row["verdict"]))
    return {key: sum(v) / max(1, len(v)) for key, v in hits.items()}


def generated(model, tokenizer, probe: list[dict], temperature: float, seed: int) -> dict[str, float]:
    """Greedy (temperature 0) or sampled gradings: the share whose working is right, whose score agrees with
    the true verdict, and, of those of a wrong answer shown, whose working copied it (the shortcut the answer
    shown offers: it is often right, and a near miss shares a digit with the answer)."""
    rows = [Row(encode_prompt(tokenizer, r["messages"]), temperature, 1.0, 40, [], seed + i) for i, r in enumerate(probe)]
    out = []
    for start in range(0, len(rows), 256):
        out += generate(model, tokenizer, rows[start : start + 256], torch.device("cpu"))
    working = agree = copied = 0
    for row, sample in zip(probe, out):
        worked, score = WORKED.search(sample.text), SCORE.search(sample.text)
        working += bool(worked) and int(worked.group(1)) == row["answer"]
        agree += bool(score) and int(score.group(1)) == row["verdict"]
        copied += bool(worked) and row["shown"] != row["answer"] and int(worked.group(1)) == row["shown"]
    wrong = sum(r["shown"] != r["answer"] for r in probe)
    return {"working": working / len(probe), "agrees": agree / len(probe), "copied": copied / max(1, wrong)}


def report(model, tokenizer, probe: list[dict], seed: int) -> float:
    """Prints the probe's figures for the model as it is; returns the verdict's accuracy after right working."""
    model.eval()
    verdict = verdict_given_right_working(model, tokenizer, probe)
    greedy = generated(model, tokenizer, probe, 0.0, seed)
    sampled = generated(model, tokenizer, probe, 1.0, seed)
    model.train()
    print(
        f"verdict|right working {100 * verdict['right']:.1f}% on right answers, {100 * verdict['wrong']:.1f}% on "
        f"wrong; greedy working {100 * greedy['working']:.1f}% agrees {100 * greedy['agrees']:.1f}% "
        f"copied {100 * greedy['copied']:.1f}%; sampled working {100 * sampled['working']:.1f}% agrees "
        f"{100 * sampled['agrees']:.1f}% copied {100 * sampled['copied']:.1f}%",
        flush=True,
    )
    return 50 * (verdict["right"] + verdict["wrong"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples")
    parser.add_argument("--model", help="a warm-started model directory to score instead of training one")
    parser.add_argument("--probe", required=True)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--role-weight", action="append", default=[], help="ROLE=W (roles not named: 1)")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    probe = read_jsonl(args.probe)
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(args.model)
        accuracy = report(AutoModelForCausalLM.from_pretrained(args.model), tokenizer, probe, args.seed)
        print(f"judge_verdict_accuracy {accuracy:.1f}")
        return
    if not args.examples:
        parser.error("--examples (or --model) is required")

    weights = tuple((r, float(w)) for r, w in (x.split("=", 1) for x in args.role_weight))
    config = WarmStartConfig(steps=args.steps, hidden_size=args.hidden, learning_rate=args.lr, seed=args.seed, role_weights=weights)
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    rows = read_jsonl(args.examples)
    tokenizer = train_tokenizer(rows, config)
    data = encode_examples(tokenizer, rows)
    model = build_model(
        tokenizer, hidden_size=config.hidden_size, layers=config.layers, heads=config.heads, max_positions=4096, seed=config.seed
    )
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    batches = role_batches(data, config.batch_size, dict(config.role_weights), random.Random(config.seed))
    started = time.perf_counter()
    accuracy = 0.0
    for step in range(config.steps):
        lr = cosine_learning_rate(config.learning_rate, step, config.steps, config.warmup_steps)
        loss, _ = sft_step(model, optimizer, next(batches), lr, tokenizer.pad_token_id)
        if (step + 1) % args.eval_every == 0 or step + 1 == config.steps:
            print(f"step {step + 1} ({time.perf_counter() - started:.0f} s) loss {loss:.3f}: ", end="")
            accuracy = report(model, tokenizer, probe, config.seed)
    print(f"judge_verdict_accuracy {accuracy:.1f}")


if __name__ == "__main__":
    main()
