"""The real `serve` process: one JSON line on stdout once listening, clean exit on SIGTERM; `tiny-model`."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from conftest import read_line

from selfplay_kernel import cli


def test_serve_announces_itself_and_stops_on_sigterm(tiny_model):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "selfplay_kernel",
            "serve",
            "--model",
            tiny_model,
            "--policy",
            "pol",
            "--port",
            "0",
            "--device",
            "cpu",
            "--insecure-no-token",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "SELFPLAY_KERNEL_TOKEN"}, "PYTHONUNBUFFERED": "1"},
    )
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(process.stderr), daemon=True).start()
    try:
        line = read_line(process, timeout=120)
        announced = json.loads(line)
        assert announced["device"] == "cpu" and announced["policyVersion"] == 0 and announced["model"] == tiny_model
        assert announced["url"] == f"http://127.0.0.1:{announced['port']}"
        with httpx.Client(base_url=announced["url"], timeout=30) as client:
            assert client.get("/v1/models").json()["data"][0]["id"] == "pol"
            assert client.get("/v1/policies/pol").json() == {"policy": "pol", "policyVersion": 0, "lineage": None}
            answer = client.post(
                "/v1/chat/completions",
                json={"model": "pol", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4},
            )
            assert answer.status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, "".join(stderr)
        assert process.stdout.read() == ""  # nothing but the one line on stdout
    finally:
        if process.poll() is None:
            process.kill()


def test_tiny_model_is_deterministic(tiny_model, tmp_path, capsys):
    assert cli.main(["tiny-model", str(tmp_path / "again"), "--seed", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"model": str(tmp_path / "again")}
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        first, again = (
            hashlib.sha256((Path(root) / name).read_bytes()).hexdigest() for root in (tiny_model, tmp_path / "again")
        )
        assert first == again, name


def test_tokenizer_round_trips_any_utf8(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    for text in ["plain", "Ünïcödé – 数学 🙂\n\t\\boxed{x^2}", "\x00\x7f", ""]:
        assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"


def test_serve_refuses_a_negative_step_snapshot_limit(capsys):
    args = ["serve", "--model", "unused", "--policy", "pol", "--step-snapshot-max-gib", "-1"]
    assert cli.main(args) == 2
    assert capsys.readouterr().err == "--step-snapshot-max-gib must be >= 0\n"
    assert cli.parser().parse_args(args[:5]).step_snapshot_max_gib == 16.0


def test_warm_start_takes_role_targets_and_refuses_bad_ones(capsys):
    base = ["warm-start", "examples.jsonl", "out"]
    targets = ["--target", "reasoner=0.9", "--target", "challenger=0.5"]
    args = cli.parser().parse_args([*base, *targets, "--max-cycles", "3"])
    assert args.target == [("reasoner", 0.9), ("challenger", 0.5)] and args.max_cycles == 3
    assert cli.parser().parse_args(base).target == []
    for bad in ("reasoner", "reasoner=1.5", "=0.5", "reasoner=most"):
        with pytest.raises(SystemExit) as refused:
            cli.parser().parse_args([*base, "--target", bad])
        assert refused.value.code == 2
        assert "expected ROLE=ACCURACY with ACCURACY in [0, 1]" in capsys.readouterr().err


def test_warm_start_takes_role_weights_and_learning_rates_and_refuses_bad_ones(capsys):
    base = ["warm-start", "examples.jsonl", "out"]
    weights = ["--role-weight", "solver=0.4", "--role-weight", "judge_answer=0.35"]
    args = cli.parser().parse_args([*base, *weights, "--role-learning-rate", "proposer=2.5"])
    assert args.role_weight == [("solver", 0.4), ("judge_answer", 0.35)]
    assert args.role_learning_rate == [("proposer", 2.5)]
    unset = cli.parser().parse_args(base)
    assert unset.role_weight == [] and unset.role_learning_rate == []
    for bad in ("solver", "solver=0", "=1", "solver=-1", "solver=nan", "solver=lots"):
        with pytest.raises(SystemExit) as refused:
            cli.parser().parse_args([*base, "--role-weight", bad])
        assert refused.value.code == 2
        assert "expected ROLE=FACTOR with FACTOR > 0" in capsys.readouterr().err


def test_serve_and_embed_refuse_to_start_without_a_token_unless_told(monkeypatch):
    monkeypatch.delenv("SELFPLAY_KERNEL_TOKEN", raising=False)
    for command in (["serve", "--model", "unused", "--policy", "pol"], ["embed"]):
        with pytest.raises(SystemExit, match="refusing to start without a token.*--insecure-no-token"):
            cli.main(command)
        with pytest.raises(SystemExit, match="--host 0.0.0.0: refusing to listen beyond loopback without a token"):
            cli.main([*command, "--host", "0.0.0.0", "--insecure-no-token"])
