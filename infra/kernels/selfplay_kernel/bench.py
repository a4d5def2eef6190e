"""Throughput benchmark: training-step tokens/s and sampler completion tokens/s on a locally built model.

    python -m selfplay_kernel.bench [--device auto|cpu|cuda] [--config tiny|small]

`tiny` (the default on CPU) is the test model: hidden 64, 2 layers, 32 trajectories of ~128 tokens per step.
`small` (the default on CUDA) is hidden 1024, 8 layers, 64 trajectories of ~512 tokens. Each runs 3 warm-up
and 5 timed training steps through the same code as `/v1/train/step`, then 1 warm-up and 3 timed sampling
batches through the same code as `/v1/chat/completions`. Train tokens count prompt + completion tokens (all
go through forward and backward). The last line is `kernel_train_tokens_per_s <n>`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from .batch import TrainingRow
from .chat import encode_prompt
from .encoding import encode_rows
from .policy import KernelConfig, Policy, resolve_device
from .requests import TrainStepRequest
from .sampler import ChatCompletionRequest, Sampler
from .tiny import build_tiny_model
from .trainer import train_step

CONFIGS = {
    "tiny": {
        "model": {"hidden_size": 64, "layers": 2, "heads": 4},
        "dtype": "float32",
        "trajectories": 32,
        "prompt_words": 20,
        "completion_words": 70,
        "micro_batch_size": 8,
        "sample_rows": 32,
        "sample_tokens": 128,
    },
    "small": {
        "model": {"hidden_size": 1024, "layers": 8, "heads": 16},
        "dtype": "bfloat16",
        "trajectories": 64,
        "prompt_words": 80,
        "completion_words": 280,
        "micro_batch_size": 16,
        "sample_rows": 64,
        "sample_tokens": 256,
    },
}
WARMUP_STEPS, TIMED_STEPS = 3, 5
WARMUP_SAMPLES, TIMED_SAMPLES = 1, 3


def _text(rng: random.Random, words: int) -> str:
    vocab = "the answer is a number we find by adding two and three then four so x equals y because".split()
    return " ".join(rng.choice(vocab) for _ in range(words))


def _rows(cfg: dict, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [
        {
            "messages": [{"role": "user", "content": _text(rng, cfg["prompt_words"])}],
            "completion": _text(rng, cfg["completion_words"]),
            "role": "reasoner",
            "group": f"reasoner/doc-{i // 8}",
            "reward": float(i % 2),
            "advantage": 0.5 if i % 2 else -0.5,
        }
        for i in range(cfg["trajectories"])
    ]


def _step_request(batch_path: Path, raw: bytes, rows: int, step: int, policy: str) -> TrainStepRequest:
    return TrainStepRequest.model_validate_json(
        json.dumps(
            {
                "idempotencyKey": f"bench/iter-{step}/{policy}",
                "runId": "bench",
                "iteration": step,
                "policy": policy,
                "baseVersion": step,
                "batch": {"uri": str(batch_path), "rows": rows, "sha256": hashlib.sha256(raw).hexdigest()},
                "loss": {
                    "type": "ppo_clip",
                    "normalization": "dr_grpo",
                    "normalizerConstant": 512,
                    "clipLow": 0.2,
                    "clipHigh": 0.2,
                    "klCoef": 0.0,
                },
                "optimizer": {
                    "learningRate": 1e-6,
                    "schedule": "constant",
                    "warmupSteps": 0,
                    "maxGradNorm": 1.0,
                    "weightDecay": 0.0,
                },
            }
        )
    )


def run(device: str, config: str) -> float:
    cfg = CONFIGS[config]
    torch_device = resolve_device(device)
    with tempfile.TemporaryDirectory(prefix="selfplay-bench-") as tmp:
        model_dir = build_tiny_model(Path(tmp) / "model", seed=0, **cfg["model"])
        policy = Policy.load(
            KernelConfig(
                model=str(model_dir),
                policy="bench",
                device=str(torch_device),
                dtype=cfg["dtype"],
                micro_batch_size=cfg["micro_batch_size"],
                max_batch_rows=cfg["sample_rows"],
            )
        )
        rows = _rows(cfg, seed=0)
        raw = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
        batch_path = Path(tmp) / "batch.jsonl"
        batch_path.write_bytes(raw)
        seqs = encode_rows(policy, [TrainingRow.model_validate_json(json.dumps(r)) for r in rows])
        tokens = sum(s.length for s in seqs)
        completion_tokens = sum(len(s.completion) for s in seqs)

        times = []
        for step in range(WARMUP_STEPS + TIMED_STEPS):
            started = time.perf_counter()
            train_step(policy, _step_request(batch_path, raw, len(rows), step, "bench"))
            if torch_device.type == "cuda":
                torch.cuda.synchronize()
            if step >= WARMUP_STEPS:
                times.append(time.perf_counter() - started)
        step_s = statistics.mean(times)
        train_tps = tokens / step_s

        sampler = Sampler(policy)
        request = ChatCompletionRequest(
            model="bench",
            messages=[{"role": "user", "content": _text(random.Random(1), cfg["prompt_words"])}],
            n=cfg["sample_rows"],
            temperature=1.0,
            max_tokens=cfg["sample_tokens"],
            seed=0,
        )
        generated, sample_times = 0, []
        try:
            for i in range(WARMUP_SAMPLES + TIMED_SAMPLES):
                started = time.perf_counter()
                answer = sampler.complete(request)
                if i >= WARMUP_SAMPLES:
                    sample_times.append(time.perf_counter() - started)
                    generated += answer["usage"]["completion_tokens"]
        finally:
            sampler.close()
        sample_tps = generated / sum(sample_times)
        prompt_tokens = len(encode_prompt(policy.tokenizer, [m.model_dump() for m in request.messages]))

    hardware = torch.cuda.get_device_name() if torch_device.type == "cuda" else "cpu"
    print(f"device {torch_device} ({hardware}), config {config}, dtype {cfg['dtype']}, torch {torch.__version__}")
    print(
        f"train: {len(rows)} trajectories, {tokens} tokens ({completion_tokens} completion) per step, "
        f"micro-batch {cfg['micro_batch_size']}, {TIMED_STEPS} timed steps after {WARMUP_STEPS} warm-up: "
        f"{step_s:.3f} s/step, {train_tps:.1f} tokens/s, {completion_tokens / step_s:.1f} completion tokens/s"
    )
    print(
        f"sample: {cfg['sample_rows']} rows x up to {cfg['sample_tokens']} tokens "
        f"after a {prompt_tokens}-token prompt, "
        f"{TIMED_SAMPLES} timed batches: {sample_tps:.1f} completion tokens/s"
    )
    print(f"kernel_sample_tokens_per_s {sample_tps:.1f}")
    print(f"kernel_train_tokens_per_s {train_tps:.1f}")
    return train_tps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m selfplay_kernel.bench", description=__doc__)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--config", choices=sorted(CONFIGS), help="default: tiny on CPU, small on CUDA")
    args = parser.parse_args(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    config = args.config or ("small" if resolve_device(args.device).type == "cuda" else "tiny")
    run(args.device, config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
