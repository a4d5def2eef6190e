"""Probes that never wait behind sampling, and a wedged kernel noticed (GET /health/live) and restarted in place."""

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
from conftest import AUTH, POLICY, read_line, row, served, step_request, write_batch

from selfplay_kernel.sampler import Sampler
from selfplay_kernel.watchdog import restart_args

KERNELS = Path(__file__).resolve().parent.parent


def test_health_answers_while_more_sampling_requests_block_than_the_default_thread_pool_has(make_kernel, monkeypatch):
    """50 chat requests blocked in sampling (the default thread pool has 40 threads, which they all took before:
    the probes then waited behind them); /health, /health/live and GET /v1/policies still answer."""
    kernel = make_kernel()
    blocked, release = threading.Condition(), threading.Event()
    waiting = [0]

    def complete(self, request):
        with blocked:
            waiting[0] += 1
            blocked.notify_all()
        release.wait()
        return {"choices": []}

    monkeypatch.setattr(Sampler, "complete", complete)
    body = {"model": POLICY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    with served(kernel.client.app) as url:
        def ask() -> None:
            httpx.post(f"{url}/v1/chat/completions", json=body, headers=AUTH, timeout=120)

        callers = [threading.Thread(target=ask) for _ in range(50)]
        for caller in callers:
            caller.start()
        try:
            with blocked:
                # Every request is inside sampling at once: none waits for a thread (the bound only fails the test).
                assert blocked.wait_for(lambda: waiting[0] == 50, timeout=60), f"only {waiting[0]} of 50 got a thread"
            with httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
                assert client.get("/health").json() == {"status": "ok"}
                assert client.get("/health/live").json() == {"status": "ok"}
                assert client.get(f"/v1/policies/{POLICY}").json()["policyVersion"] == 0
        finally:
            release.set()
            for caller in callers:
                caller.join(60)


def test_liveness_fails_while_an_operation_holds_the_policy_past_its_deadline(make_kernel):
    kernel = make_kernel(op_deadline_seconds=1e-9)
    assert kernel.client.get("/health/live", headers={"Authorization": ""}).status_code == 200
    with kernel.policy.ops:  # as a train step stuck in a CUDA call would
        response = kernel.client.get("/health/live", headers={"Authorization": ""})
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["type"] == "wedged"
        assert error["message"].startswith("an operation has held the policy for ")
        assert "past its deadline of 1e-09 s (--op-deadline-seconds)" in error["message"]
        # Readiness stays: the kernel is up, only its operations are stuck.
        assert kernel.client.get("/health").status_code == 200
    assert kernel.client.get("/health/live").status_code == 200


def test_restart_args_keep_the_bound_port():
    assert restart_args(["py", "-m", "selfplay_kernel", "serve", "--port", "0", "--model", "m"], 8123) == [
        "py",
        "-m",
        "selfplay_kernel",
        "serve",
        "--model",
        "m",
        "--port",
        "8123",
    ]
    assert restart_args(["py", "k.py", "serve", "--port=0"], 9) == ["py", "k.py", "serve", "--port", "9"]


def test_a_wedged_kernel_restarts_in_place_on_its_port_and_trains_again(tiny_model, tmp_path):
    """The first step hangs (tests/wedging_kernel.py): past --op-deadline-seconds the kernel re-executes itself on
    the same port, at its base weights, and the step resent to it is applied."""
    mark = tmp_path / "wedged"
    process = subprocess.Popen(
        [
            sys.executable,
            str(KERNELS / "tests" / "wedging_kernel.py"),
            "serve",
            "--model",
            tiny_model,
            "--policy",
            POLICY,
            "--port",
            "0",
            "--device",
            "cpu",
            "--op-deadline-seconds",
            "1",
            "--restart-when-wedged",
            # Loopback only, and the re-executed command keeps the flag.
            "--insecure-no-token",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "SELFPLAY_TEST_WEDGE_MARK": str(mark)},
    )
    stderr: list[str] = []
    threading.Thread(target=lambda: stderr.extend(process.stderr), daemon=True).start()
    try:
        first = json.loads(read_line(process, 120))
        batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0), row("five", -1.0)])
        request = step_request(batch)
        lost = threading.Thread(
            target=lambda: _ignore(lambda: httpx.post(f"{first['url']}/v1/train/step", json=request, timeout=120)),
            daemon=True,
        )
        lost.start()
        # The restarted process announces itself again, on the same port.
        again = json.loads(read_line(process, 120, stderr))
        assert again["port"] == first["port"] and again["policyVersion"] == 0
        assert mark.read_text() == str(process.pid)  # the same process, re-executed
        assert any("has held the policy for" in line and "restarting in place" in line for line in stderr)
        with httpx.Client(base_url=again["url"], timeout=120) as client:
            assert client.get("/health/live").status_code == 200
            answer = client.post("/v1/train/step", json=request)
            assert answer.status_code == 200, answer.text
            assert answer.json()["policyVersion"] == 1
    finally:
        process.kill()
        process.wait(30)


def _ignore(call) -> None:
    try:
        call()
    except httpx.HTTPError:
        pass  # the connection dies with the process that held it
