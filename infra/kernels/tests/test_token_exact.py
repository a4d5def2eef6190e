"""Token in, token out: a row that carries its sampled ids is trained on those ids, never re-tokenized; bad ids
are refused with a 400 that names the problem; the sampler returns the ids a row needs."""

import pytest
import torch
from conftest import PROMPT, row, step_request, training_rows, write_batch

from selfplay_kernel.chat import encode_prompt
from selfplay_kernel.encoding import Trajectory, encode_rows
from selfplay_kernel.requests import LossSpec
from selfplay_kernel.scoring import completion_logprobs
from selfplay_kernel.trainer import accumulate_gradients

SPEC = LossSpec(type="ppo_clip", normalization="token_mean", normalizerConstant=1, clipLow=0.2, clipHigh=0.2, klCoef=0)


def non_canonical(tokenizer, text: str) -> list[int]:
    """`text` spelled one byte-level character per token: ids a sampler may well emit, which tokenizing the
    decoded text never gives back (BPE merges the characters)."""
    tokens = tokenizer.convert_ids_to_tokens(tokenizer(text, add_special_tokens=False)["input_ids"])
    return [tokenizer.convert_tokens_to_ids(char) for token in tokens for char in token]


def scores(policy, completion: list[int]) -> torch.Tensor:
    """The policy's log-prob of each of `completion`'s tokens after PROMPT."""
    seq = Trajectory(encode_prompt(policy.tokenizer, PROMPT), completion, [True] * len(completion), None, 0.0, "r")
    with torch.no_grad():
        return completion_logprobs(policy.model, [seq], policy.device, policy.tokenizer.pad_token_id)[0].cpu()


def test_the_kernel_trains_on_the_sampled_ids_where_retokenizing_would_differ(make_kernel):
    policy = make_kernel().policy
    tok, eos = policy.tokenizer, policy.tokenizer.eos_token_id
    text = "The answer is four."
    sampled = non_canonical(tok, text)
    assert tok.decode(sampled) == text
    retokenized = tok(tok.decode(sampled), add_special_tokens=False)["input_ids"]
    assert retokenized != sampled and len(retokenized) < len(sampled)  # re-tokenizing would change the tokens

    behaviour = scores(policy, sampled + [eos])[:-1].tolist()  # what the sampler reported for its own ids
    exact, by_text = encode_rows(
        policy,
        training_rows(
            [
                row(text, 1.0, completionTokens=[{"ids": sampled}], behaviourLogprobs=behaviour),
                row(text, 1.0),
            ]
        ),
    )
    assert exact.completion == sampled + [eos] and exact.exact and exact.in_loss == [True] * (len(sampled) + 1)
    assert by_text.completion == retokenized + [eos] and not by_text.exact
    assert exact.behaviour == pytest.approx(behaviour + [float("nan")], nan_ok=True)

    # The kernel's log-probs of the row are those of the sampled ids: the importance weight to the behaviour
    # log-probs is 1 on every token. Had it scored the re-tokenized completion, the two would not even line up.
    metrics = accumulate_gradients(policy, [exact], SPEC)
    assert metrics.importanceWeightMean == pytest.approx(1.0, abs=1e-4)
    assert metrics.importanceWeightMax == pytest.approx(1.0, abs=1e-4)
    assert metrics.tokens == len(sampled) + 1
    assert float(scores(policy, sampled + [eos]).sum()) != pytest.approx(
        float(scores(policy, retokenized + [eos]).sum()), abs=1e-3
    )


def test_a_step_reports_how_many_rows_were_token_exact(make_kernel, tmp_path):
    kernel = make_kernel()
    tok = kernel.policy.tokenizer
    ids = tok("Seven hundred", add_special_tokens=False)["input_ids"]
    rows = [row("Seven hundred", 1.0, completionTokens=[{"ids": ids}])] * 3 + [row("four", -1.0)]
    response = kernel.client.post("/v1/train/step", json=step_request(write_batch(tmp_path / "b.jsonl", rows)))
    assert response.status_code == 200, response.text
    metrics = response.json()["metrics"]
    assert metrics["rowsRetokenized"] == 1 and metrics["tokenExactFraction"] == pytest.approx(0.75)


def test_inserted_text_is_tokenized_and_left_out_of_the_loss_and_a_sampled_stop_token_is_not_doubled(make_kernel):
    policy = make_kernel().policy
    tok, eos = policy.tokenizer, policy.tokenizer.eos_token_id
    first = tok("Let x be", add_special_tokens=False)["input_ids"]
    second = [*tok("two", add_special_tokens=False)["input_ids"], eos]
    observation = "<information>the river city</information>"
    (seq,) = encode_rows(
        policy,
        training_rows(
            [
                row(
                    "Let x be" + observation + "two",
                    1.0,
                    completionTokens=[{"ids": first}, {"text": observation}, {"ids": second}],
                    behaviourLogprobs=[-1.0] * (len(first) + len(second)),
                )
            ]
        ),
    )
    inserted = tok(observation, add_special_tokens=False)["input_ids"]
    assert seq.completion == first + inserted + second  # ends with the sampled EOS, none appended
    assert seq.in_loss == [True] * len(first) + [False] * len(inserted) + [True] * len(second)
    assert seq.behaviour[: len(first)] == [-1.0] * len(first)
    assert all(b != b for b in seq.behaviour[len(first) : len(first) + len(inserted)])  # NaN: no behaviour value


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"completionTokens": [{"ids": [5, 100_000]}]}, "token id 100000 is outside this kernel's vocabulary"),
        ({"completionTokens": [{"ids": [5, 6, 7]}], "behaviourLogprobs": [-0.5, -0.5]},
         "behaviourLogprobs: 2 values, but completionTokens hold 3 sampled ids"),
        ({"completionTokens": [{"ids": [5, -1]}]}, "completionTokens.0"),
        ({"completionTokens": [{"ids": [5, 6.5]}]}, "completionTokens.0"),
        ({"completionTokens": [{"text": "only tool text"}]}, "completionTokens: no segment holds sampled ids"),
        ({"completionTokens": []}, "completionTokens"),
    ],
)
def test_bad_ids_are_refused_with_a_400_naming_the_problem(make_kernel, tmp_path, extra, message):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0), row("four", 1.0, **extra)])
    response = kernel.client.post("/v1/train/step", json=step_request(batch))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "batch_invalid"
    assert message in error["message"] and ("line 2" in error["message"] or "row 2" in error["message"])
    assert kernel.policy.version == 0


def test_the_sampler_returns_the_ids_and_logprobs_a_token_exact_row_needs(make_kernel):
    kernel = make_kernel()
    body = {"model": "pol", "messages": PROMPT, "max_tokens": 10, "seed": 3, "logprobs": True}
    answer = kernel.client.post(
        "/v1/chat/completions", json={**body, "return_token_ids": True, "return_tokens_as_token_ids": True}
    ).json()
    choice = answer["choices"][0]
    ids = choice["token_ids"]
    assert answer["prompt_token_ids"] == encode_prompt(kernel.policy.tokenizer, PROMPT)
    assert [c["token"] for c in choice["logprobs"]["content"]] == [f"token_id:{t}" for t in ids]
    lps = [c["logprob"] for c in choice["logprobs"]["content"]]
    assert kernel.policy.tokenizer.decode(ids, skip_special_tokens=True).startswith(choice["message"]["content"])
    eos_ended = choice["finish_reason"] == "stop"
    assert torch.allclose(scores(kernel.policy, ids), torch.tensor(lps), atol=1e-4)
    # Without the switches the answer is as before: no ids, text tokens in the log-probs.
    plain = kernel.client.post("/v1/chat/completions", json=body).json()["choices"][0]
    assert "token_ids" not in plain and plain["message"]["content"] == choice["message"]["content"]
    assert len(plain["logprobs"]["content"]) == len(ids) - (1 if eos_ended else 0)


def test_the_sampled_ids_run_through_a_matched_stop_string(make_kernel):
    kernel = make_kernel()
    body = {"model": "pol", "messages": PROMPT, "max_tokens": 24, "seed": 21}
    full = kernel.client.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]
    stop = full[6:9]
    answer = kernel.client.post(
        "/v1/chat/completions", json={**body, "stop": stop, "return_token_ids": True}
    ).json()["choices"][0]
    decoded = kernel.policy.tokenizer.decode(answer["token_ids"], skip_special_tokens=True)
    assert answer["message"]["content"] == full[: full.index(stop)]
    assert decoded.startswith(answer["message"]["content"] + stop)  # the stop string's tokens were sampled
    shorter = kernel.policy.tokenizer.decode(answer["token_ids"][:-1], skip_special_tokens=True)
    assert not shorter.startswith(answer["message"]["content"] + stop)  # and no token after them
