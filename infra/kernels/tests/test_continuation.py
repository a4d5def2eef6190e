"""Continuing an assistant message (`continue_final_message`), as the multi-turn search loop asks for."""

import pytest
from conftest import PROMPT

from selfplay_kernel.chat import encode_prompt
from selfplay_kernel.sampler import Row, generate


@pytest.fixture
def kernel(make_kernel):
    return make_kernel()


def post(kernel, **body):
    return kernel.client.post("/v1/chat/completions", json={"model": "pol", "messages": PROMPT, **body})


def test_the_continued_message_stays_open_with_its_trailing_whitespace(kernel):
    tok = kernel.policy.tokenizer
    prefix = "The answer is\n<information>\nDoc 1 x\n</information>\n\n"
    messages = [*PROMPT, {"role": "assistant", "content": prefix}]
    ids = encode_prompt(tok, messages, add_generation_prompt=False, continue_final_message=True)
    # What the trainer will see: the prompt with its generation prompt, then the completion's own tokens.
    assert ids == encode_prompt(tok, PROMPT) + tok(prefix, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids).endswith("<|im_start|>assistant\n" + prefix)
    # Without continuation the assistant message is closed, and a new one would follow it.
    closed = tok.decode(encode_prompt(tok, messages, add_generation_prompt=False))
    assert closed.endswith(prefix + "<|im_end|>\n")


def test_a_greedy_continuation_goes_on_where_the_prefix_stops(kernel):
    policy, tok = kernel.policy, kernel.policy.tokenizer
    prompt = encode_prompt(tok, PROMPT)
    (whole,) = generate(policy.model, tok, [Row(prompt, 0.0, 1.0, 16, [], 0)], policy.device)
    # A cut where the prefix's text tokenizes back to the same tokens, so both runs see the same sequence.
    cut = next(
        j
        for j in range(4, 12)
        if tok(tok.decode(whole.tokens[:j]), add_special_tokens=False)["input_ids"] == whole.tokens[:j]
    )
    prefix = tok.decode(whole.tokens[:cut])
    answer = post(
        kernel,
        messages=[*PROMPT, {"role": "assistant", "content": prefix}],
        continue_final_message=True,
        add_generation_prompt=False,
        temperature=0,
        max_tokens=16 - cut,
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["choices"][0]["message"]["content"] == tok.decode(whole.tokens[cut:])
    assert body["usage"]["prompt_tokens"] == len(prompt) + cut


@pytest.mark.parametrize(
    "messages, extra, message",
    [
        ([*PROMPT, {"role": "assistant", "content": "x"}], {}, "cannot both be true"),
        (PROMPT, {"add_generation_prompt": False}, "needs an assistant message last"),
    ],
)
def test_bad_continuations(kernel, messages, extra, message):
    response = post(kernel, messages=messages, continue_final_message=True, **extra)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and message in error["message"], error["message"]
