"""Shared fixtures: one tiny model per session, kernels (policy + sampler + in-process HTTP client) per test."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import uvicorn
from fastapi.testclient import TestClient

from selfplay_kernel.access import Access, Roots
from selfplay_kernel.app import create_app
from selfplay_kernel.batch import TrainingRow
from selfplay_kernel.policy import KernelConfig, Policy
from selfplay_kernel.sampler import Sampler
from selfplay_kernel.tiny import build_tiny_model
from selfplay_kernel.trainer import completion_logprobs, encode_rows

POLICY = "pol"
# Where the tests' kernels run: `cpu` by default; SELFPLAY_KERNEL_TEST_DEVICE=cuda runs the suite on a GPU.
DEVICE = os.environ.get("SELFPLAY_KERNEL_TEST_DEVICE", "cpu")
TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROMPT = [{"role": "user", "content": "What is two plus two?"}]


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", seed=0))


@dataclass
class Kernel:
    policy: Policy
    sampler: Sampler
    client: TestClient


@pytest.fixture
def make_kernel(tiny_model: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """Kernels behind TOKEN (their clients send it) whose storage roots are the tests' temporary
    directories and the S3 bucket `runs`."""
    made: list[Kernel] = []
    roots = Roots([str(tmp_path_factory.getbasetemp()), "s3://runs"])

    def make(access: Access | None = None, **overrides) -> Kernel:
        config = KernelConfig(model=tiny_model, policy=POLICY, device=DEVICE, **overrides)
        policy = Policy.load(config)
        sampler = Sampler(policy)
        app = create_app(policy, sampler, access or Access(token=TOKEN, roots=roots))
        kernel = Kernel(policy, sampler, TestClient(app, headers=AUTH, raise_server_exceptions=False))
        made.append(kernel)
        return kernel

    yield make
    for kernel in made:
        kernel.sampler.close()


def row(completion: str, advantage: float, **extra) -> dict:
    return {
        "messages": PROMPT,
        "completion": completion,
        "role": "reasoner",
        "group": "reasoner/doc-1",
        "reward": advantage,
        "advantage": advantage,
        **extra,
    }


def training_rows(rows: list[dict]) -> list[TrainingRow]:
    """Rows as the kernel parses them: from JSON."""
    return [TrainingRow.model_validate_json(json.dumps(r)) for r in rows]


def write_batch(path: Path, rows: list[dict], gz: bool = False) -> dict:
    """Writes rows as JSONL (gzipped when gz) and returns the request's `batch` reference."""
    raw = ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
    if gz:
        raw = gzip.compress(raw, mtime=0)
        path = path.with_name(path.name + ".gz")
    path.write_bytes(raw)
    return {"uri": str(path), "rows": len(rows), "sha256": hashlib.sha256(raw).hexdigest()}


def step_request(
    batch: dict, key: str = "run/iter-0/pol", base: int = 0, loss: dict | None = None, optimizer: dict | None = None
) -> dict:
    return {
        "idempotencyKey": key,
        "runId": "run",
        "iteration": 0,
        "policy": POLICY,
        "baseVersion": base,
        "batch": batch,
        "loss": {
            "type": "ppo_clip",
            "normalization": "dr_grpo",
            "normalizerConstant": 64,
            "clipLow": 0.2,
            "clipHigh": 0.2,
            "klCoef": 0.0,
            **(loss or {}),
        },
        "optimizer": {
            "learningRate": 1e-2,
            "schedule": "constant",
            "warmupSteps": 0,
            "maxGradNorm": 1.0,
            "weightDecay": 0.0,
            **(optimizer or {}),
        },
    }


def token_logprobs(policy: Policy, completion: str, messages: list[dict] | None = None) -> torch.Tensor:
    """The policy's log-prob of each token of `completion` + EOS after `messages` (default PROMPT)."""
    (seq,) = encode_rows(policy, training_rows([row(completion, 0.0, messages=messages or PROMPT)]))
    with torch.no_grad():
        return completion_logprobs(policy.model, [seq], policy.device, policy.tokenizer.pad_token_id)[0].cpu()


def params(policy: Policy) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in policy.trainable().items()}


def same_params(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def read_line(process: subprocess.Popen, timeout: float, stderr: list[str] | None = None) -> str:
    """The next line a `serve` process prints (its announcement), failing the test after `timeout` seconds (with
    the `stderr` lines collected so far)."""
    result: list[str] = []
    reader = threading.Thread(target=lambda: result.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert result and result[0], (
        f"serve printed nothing in {timeout}s (exit code {process.poll()})" + "".join(stderr or [])[-4000:]
    )
    return result[0]


@contextmanager
def served(app) -> Iterator[str]:
    """`app` on a real uvicorn server (a thread pool as in production, unlike the in-process TestClient)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "uvicorn did not start"
        thread.join(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
