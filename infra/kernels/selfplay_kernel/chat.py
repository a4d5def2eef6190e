"""Turning chat messages and completions into token ids, the same way for sampling and for training.

The prompt is the tokenizer's chat template with the generation prompt appended; the completion is tokenized
on its own (no special tokens) and followed by EOS, so the trainer scores exactly the tokens a sampler would
have emitted to say "this answer is finished".

A row that carries the sampled token ids (`completionTokens`) is not tokenized at all: its ids are the
completion, and only the text the environment inserted between turns is tokenized (`encode_sampled`).

A multi-turn tool loop continues one assistant message (`continue_final_message`): the sampler's prompt is
then the earlier messages with the generation prompt, followed by the partial message tokenized on its own,
which is how the trainer will tokenize that message's text as the start of the completion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def encode_prompt(
    tokenizer, messages: Sequence[dict], *, add_generation_prompt: bool = True, continue_final_message: bool = False
) -> list[int]:
    """Token ids of `messages` under the chat template, ending with the assistant generation prompt (unless
    `add_generation_prompt` is false), or, with `continue_final_message`, with the last (assistant) message
    left open for the model to continue.

    The continued message is not rendered by the template's own `continue_final_message`, which strips its
    trailing whitespace (an observation's closing blank line) and tokenizes it together with the template:
    the sampler must see the tokens the trainer will score.
    """
    if continue_final_message:
        *head, last = messages
        return encode_prompt(tokenizer, head) + tokenizer(last["content"], add_special_tokens=False)["input_ids"]
    text = tokenizer.apply_chat_template(list(messages), add_generation_prompt=add_generation_prompt, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


@dataclass(frozen=True)
class EncodedCompletion:
    """Completion token ids (EOS last) and, per token, whether it counts in the loss."""

    ids: list[int]
    in_loss: list[bool]


def encode_completion(tokenizer, completion: str, mask_spans: Sequence[tuple[int, int]] = ()) -> EncodedCompletion:
    """Tokenizes `completion` + EOS. A token is left out of the loss when its character range overlaps any
    `[start, end)` span (character = Unicode code point, as Python indexes strings); EOS is always in."""
    enc = tokenizer(completion, add_special_tokens=False, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    in_loss = [
        not any(start < span_end and span_start < end for span_start, span_end in mask_spans if span_end > span_start)
        for start, end in enc["offset_mapping"]
    ]
    return EncodedCompletion(ids=ids + [tokenizer.eos_token_id], in_loss=in_loss + [True])


def eos_ids(model, tokenizer) -> list[int]:
    """The ids that end a generation: the tokenizer's EOS and those of the model's generation config (an
    instruct model's end-of-turn token)."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(configured)
    return sorted(i for i in ids if i is not None)


def encode_sampled(tokenizer, segments: Sequence, ends: Sequence[int]) -> EncodedCompletion:
    """The completion of a token-exact row: each sampled segment's ids as they are (in the loss), each inserted
    text tokenized on its own (out of the loss), then EOS (in the loss) unless the last sampled id already is
    one of `ends` (the engine returned the stop token it sampled)."""
    ids: list[int] = []
    in_loss: list[bool] = []
    for segment in segments:
        if hasattr(segment, "ids"):
            ids += segment.ids
            in_loss += [True] * len(segment.ids)
        else:
            text_ids = tokenizer(segment.text, add_special_tokens=False)["input_ids"]
            ids += text_ids
            in_loss += [False] * len(text_ids)
    last = segments[-1]
    if not (hasattr(last, "ids") and last.ids[-1] in ends):
        ids.append(tokenizer.eos_token_id)
        in_loss.append(True)
    return EncodedCompletion(ids=ids, in_loss=in_loss)
