"""The OpenAI-compatible sampler: n, seeds, batching, stop strings, max_tokens, logprobs, errors."""

import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from conftest import PROMPT

from selfplay_kernel.chat import encode_prompt
from selfplay_kernel.sampler import Row, generate
from selfplay_kernel.encoding import Trajectory
from selfplay_kernel.scoring import completion_logprobs


@pytest.fixture
def kernel(make_kernel):
    return make_kernel()


def chat(kernel, **body) -> dict:
    response = kernel.client.post(
        "/v1/chat/completions", json={"model": "pol", "messages": PROMPT, "max_tokens": 12, **body}
    )
    assert response.status_code == 200, response.text
    return response.json()


def texts(answer: dict) -> list[str]:
    return [c["message"]["content"] for c in answer["choices"]]


def test_models_lists_the_policy(kernel):
    assert kernel.client.get("/v1/models").json() == {
        "object": "list",
        "data": [
            {
                "id": "pol",
                "object": "model",
                "owned_by": "selfplay-kernel",
                "weight_version": 0,
                "lineage": None,
                "pinned": False,
                "weight_digest": None,
            }
        ],
    }


def test_n_samples_and_usage(kernel):
    answer = chat(kernel, n=3, seed=7, max_tokens=8)
    assert answer["object"] == "chat.completion" and answer["model"] == "pol"
    assert [c["index"] for c in answer["choices"]] == [0, 1, 2]
    assert len(set(texts(answer))) > 1
    usage = answer["usage"]
    assert usage["prompt_tokens"] == len(encode_prompt(kernel.policy.tokenizer, PROMPT))
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_seed_determinism(kernel):
    first = chat(kernel, n=3, seed=11)
    assert texts(chat(kernel, n=3, seed=11)) == texts(first)
    assert texts(chat(kernel, n=3, seed=12)) != texts(first)
    # Sample i of a seeded request is the single sample of seed + i.
    singles = [texts(chat(kernel, seed=11 + i))[0] for i in range(3)]
    assert singles == texts(first)


def test_concurrent_requests_share_a_batch_without_changing_answers(kernel, caplog):
    seeds = list(range(100, 106))
    settings = {s: {"temperature": 0.5 + 0.1 * i, "top_p": 0.9, "max_tokens": 4 + i} for i, s in enumerate(seeds)}
    solo = {s: texts(chat(kernel, seed=s, **settings[s]))[0] for s in seeds}
    caplog.set_level(logging.INFO, logger="selfplay_kernel.sampler")
    with ThreadPoolExecutor(len(seeds)) as pool:
        # Hold the weights so the sampler thread waits with the first request while the others queue up.
        with kernel.policy.weights.write():
            futures = {s: pool.submit(chat, kernel, seed=s, **settings[s]) for s in seeds}
            deadline = time.monotonic() + 30
            while kernel.sampler._queue.qsize() < len(seeds) - 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        together = {s: texts(f.result())[0] for s, f in futures.items()}
    assert together == solo
    # How the queued requests split into batches depends on thread timing; that several shared one does not.
    batched = [int(m.group(1)) for r in caplog.records if (m := re.search(r"\((\d+) requests", r.getMessage()))]
    assert max(batched) >= 2


def test_temperature_zero_is_greedy(kernel):
    a = chat(kernel, temperature=0, seed=1)
    b = chat(kernel, temperature=0, seed=2, n=2)
    assert texts(b) == texts(a) * 2
    assert texts(chat(kernel, temperature=1.0, top_p=1e-6, seed=3)) == texts(a)  # top_p keeps only the top token


def test_max_tokens_gives_length(kernel):
    answer = chat(kernel, seed=5, max_tokens=6)
    assert answer["choices"][0]["finish_reason"] == "length"
    assert answer["usage"]["completion_tokens"] == 6


def test_stop_string(kernel):
    full = texts(chat(kernel, seed=21, max_tokens=24))[0]
    stop = full[8:11]
    assert stop.strip(), full
    answer = chat(kernel, seed=21, max_tokens=24, stop=[stop, "never-appears"])
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert texts(answer)[0] == full[: full.index(stop)]
    single = chat(kernel, seed=21, max_tokens=24, stop=stop)
    assert texts(single) == texts(answer)


def test_logprobs_are_the_trainers_logprobs(kernel):
    answer = chat(kernel, seed=3, max_tokens=10, logprobs=True)
    content = answer["choices"][0]["logprobs"]["content"]
    assert len(content) == answer["usage"]["completion_tokens"]
    assert all(set(c) >= {"token", "logprob"} and c["logprob"] <= 0 for c in content)
    assert "".join(c["token"] for c in content) == texts(answer)[0]
    assert chat(kernel, seed=3)["choices"][0]["logprobs"] is None

    policy = kernel.policy
    prompt = encode_prompt(policy.tokenizer, PROMPT)
    (sample,) = generate(policy.model, policy.tokenizer, [Row(prompt, 1.0, 1.0, 10, [], 3)], policy.device)
    assert [round(lp, 4) for lp in sample.logprobs] == [round(c["logprob"], 4) for c in content]
    seq = Trajectory(prompt, sample.tokens, [True] * len(sample.tokens), None, 0.0, "solver")
    with torch.no_grad():
        trained = completion_logprobs(policy.model, [seq], policy.device, policy.tokenizer.pad_token_id)[0].cpu()
    assert torch.allclose(trained, torch.tensor(sample.logprobs), atol=1e-4)


def test_unknown_model(kernel):
    response = kernel.client.post("/v1/chat/completions", json={"model": "gpt-x", "messages": PROMPT})
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found" and error["type"] == "invalid_request_error"
    assert "'gpt-x' does not exist" in error["message"]


@pytest.mark.parametrize(
    "body, message",
    [
        ({"messages": []}, "messages: List should have at least 1 item"),
        ({"n": 0}, "n: Input should be greater than or equal to 1"),
        ({"top_p": 0}, "top_p: Input should be greater than 0"),
        ({"stream": True}, "stream: Input should be False"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages.0.role: Input should be"),
    ],
)
def test_bad_body(kernel, body, message):
    response = kernel.client.post("/v1/chat/completions", json={"model": "pol", "messages": PROMPT, **body})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"].startswith(message), error["message"]
