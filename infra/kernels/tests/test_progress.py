"""GET /v1/train/progress: how far the running step has got, answered while the step holds the policy."""

import threading

import httpx
from conftest import AUTH, POLICY, served, step_request, write_batch

from selfplay_kernel import trainer

QUESTIONS = ["What is two plus two?", "Name a river."]


class Gate:
    """Holds the step at the start of chosen micro-batches (1-based calls of `micro_batch_loss`) until released."""

    def __init__(self, monkeypatch, holds: set[int]) -> None:
        self.holds, self.calls = holds, 0
        self.reached, self.release = threading.Event(), threading.Event()
        real = trainer.micro_batch_loss

        def held(*args, **kwargs):
            self.calls += 1
            if self.calls in self.holds:
                self.reached.set()
                assert self.release.wait(60), "the test never released the step"
                self.release.clear()
            return real(*args, **kwargs)

        monkeypatch.setattr(trainer, "micro_batch_loss", held)

    def wait(self) -> None:
        assert self.reached.wait(60), "the step never reached the held micro-batch"
        self.reached.clear()


def test_progress_of_a_step_held_mid_way(make_kernel, tmp_path, monkeypatch):
    """Two mini-batches (one prompt each) of two rows, one row per micro-batch: held at the second micro-batch,
    one row has its gradient; held at the third, the first mini-batch is done. No step: `step` is null."""
    kernel = make_kernel(micro_batch_size=1)
    rows = [
        {**r, "messages": [{"role": "user", "content": q}]}
        for q in QUESTIONS
        for r in (
            {"completion": "four", "advantage": 1.0, "reward": 1.0, "role": "reasoner", "group": "g"},
            {"completion": "seven", "advantage": -1.0, "reward": 0.0, "role": "reasoner", "group": "g"},
        )
    ]
    request = {**step_request(write_batch(tmp_path / "b.jsonl", rows)), "update": {"miniBatchPrompts": 1}}
    gate = Gate(monkeypatch, holds={2, 3})
    with served(kernel.client.app) as url, httpx.Client(base_url=url, headers=AUTH, timeout=10) as client:
        progress = lambda: client.get("/v1/train/progress").json()
        assert progress() == {"object": "train.progress", "policy": POLICY, "step": None}
        answer: list[httpx.Response] = []
        stepping = threading.Thread(
            target=lambda: answer.append(httpx.post(f"{url}/v1/train/step", json=request, headers=AUTH, timeout=120))
        )
        stepping.start()
        try:
            gate.wait()
            step = {"idempotencyKey": "run/iter-0/pol", "miniBatches": 2, "rows": 4}
            assert progress()["step"] == {**step, "miniBatchesDone": 0, "rowsTrained": 1}
            # The route needs the token, like every route but the probes.
            assert httpx.get(f"{url}/v1/train/progress").status_code == 401
            gate.release.set()
            gate.wait()
            assert progress()["step"] == {**step, "miniBatchesDone": 1, "rowsTrained": 2}
        finally:
            gate.release.set()
            stepping.join(120)
        assert answer[0].json()["metrics"]["optimizerSteps"] == 2
        assert progress()["step"] is None
