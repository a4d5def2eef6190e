"""Turning chat messages and completions into token ids, the same way for sampling and for training.

The prompt is the tokenizer's chat template with the generation prompt appended; the completion is tokenized
on its own (no special tokens) and followed by EOS, so the trainer scores exactly the tokens a sampler would
have emitted to say "this answer is finished".

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
