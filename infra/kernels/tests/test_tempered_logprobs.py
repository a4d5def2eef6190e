"""A row is scored at the temperature it was sampled at: the sampler's behaviour log-probs mu and the trainer's
log-probs of the same ids are both log softmax(logits / T) before top-p, so the PPO ratio is 1 on policy."""

import pytest
import torch
from conftest import PROMPT, row, step_request, training_rows, write_batch

from selfplay_kernel.chat import encode_prompt
from selfplay_kernel.encoding import encode_rows
from selfplay_kernel.scoring import completion_logprobs


def tempered(policy, ids: list[int], temperature: float) -> list[float]:
    """log softmax(logits / temperature)[id] of each id after PROMPT, from one plain forward pass."""
    prompt = encode_prompt(policy.tokenizer, PROMPT)
    with torch.no_grad():
        logits = policy.model(torch.tensor([prompt + ids], device=policy.device)).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1] / temperature, dim=-1)
    return logp.gather(-1, torch.tensor(ids, device=policy.device).unsqueeze(-1)).squeeze(-1).tolist()


@pytest.mark.parametrize(
    "temperature, top_p, fields, scored_at",
    [
        (0.7, 0.95, {"temperature": 0.7, "topP": 0.95}, 0.7),
        # A row sampled at 1 carries no fields (the kernel's default), as does a greedy row, whose mu is at 1.
        (1.0, 1.0, {}, 1.0),
        (0.0, 1.0, {}, 1.0),
    ],
)
def test_a_row_sampled_at_a_temperature_has_ratio_one_on_policy(
    make_kernel, tmp_path, temperature, top_p, fields, scored_at
):
    kernel = make_kernel()
    policy = kernel.policy
    body = {
        "model": "pol",
        "messages": PROMPT,
        "max_tokens": 16,
        "seed": 5,
        "temperature": temperature,
        "top_p": top_p,
        "logprobs": True,
        "return_token_ids": True,
    }
    choice = kernel.client.post("/v1/chat/completions", json=body).json()["choices"][0]
    ids, mu = choice["token_ids"], [c["logprob"] for c in choice["logprobs"]["content"]]
    assert mu == pytest.approx(tempered(policy, ids, scored_at), abs=1e-4)
    if scored_at != 1.0:  # not vacuous: the tempered log-probs are not the untempered ones
        assert mu != pytest.approx(tempered(policy, ids, 1.0), abs=1e-2)

    sampled = row(choice["message"]["content"], 1.0, completionTokens=[{"ids": ids}], behaviourLogprobs=mu, **fields)
    (seq,) = encode_rows(policy, training_rows([sampled]))
    with torch.no_grad():
        trained = completion_logprobs(policy.model, [seq], policy.device, policy.tokenizer.pad_token_id)
    assert trained[0, : len(ids)].tolist() == pytest.approx(mu, abs=1e-4)
    # And so the step sees ratio 1 on every token.
    batch = write_batch(tmp_path / "b.jsonl", [sampled])
    response = kernel.client.post("/v1/train/step", json=step_request(batch, optimizer={"learningRate": 0.0}))
    assert response.status_code == 200, response.text
    metrics = response.json()["metrics"]
    assert metrics["importanceWeightMean"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["importanceWeightMax"] == pytest.approx(1.0, abs=1e-4)
    assert metrics["clipFraction"] == 0.0
