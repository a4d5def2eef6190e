"""A training row as token ids (a `Trajectory`): the prompt through the chat template, the completion as the
row's sampled ids when it carries them (token in, token out), else by tokenizing its text; refused (400) when
it does not fit the context or its behaviour log-probs do not line up with its tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .batch import TrainingRow
from .chat import encode_completion, encode_prompt, encode_sampled, eos_ids
from .errors import KernelError
from .policy import Policy


@dataclass
class Trajectory:
    """One row as token ids: prompt, completion (EOS last), loss mask and behaviour log-probs per token.
    `exact`: the completion is the sampled ids the row carried (else the kernel tokenized its text);
    `proximal`: the policy's own log-probs at the start of a multi-step update (the `tis` correction's pi_old);
    `temperature`: the row's sampling temperature, which every log-prob of it is taken at (losses.token_scores)."""

    prompt: list[int]
    completion: list[int]
    in_loss: list[bool]
    behaviour: list[float] | None  # one per completion token; NaN where the row gave none (EOS)
    advantage: float
    role: str
    exact: bool = False
    proximal: list[float] | None = None
    temperature: float = 1.0

    @property
    def length(self) -> int:
        return len(self.prompt) + len(self.completion)


def encode_rows(policy: Policy, rows: list[TrainingRow]) -> list[Trajectory]:
    """Turns every row into token ids: the prompt through the chat template, the completion as the row's
    sampled ids when it carries them (`encode_exact`), else by tokenizing its text. Refuses (400) rows that do
    not fit the context or whose behaviour log-probs do not line up with the completion's tokens (with or
    without the EOS token)."""
    out = []
    ends = eos_ids(policy.model, policy.tokenizer)
    for number, row in enumerate(rows, start=1):
        prompt = encode_prompt(policy.tokenizer, [m.model_dump() for m in row.messages])
        if row.completionTokens is not None:
            out.append(encode_exact(policy, row, number, prompt, ends))
            continue
        comp = encode_completion(policy.tokenizer, row.completion, [tuple(s) for s in row.lossMaskSpans or []])
        _check_context(policy, number, len(prompt) + len(comp.ids))
        behaviour = row.behaviourLogprobs
        if behaviour is not None and len(behaviour) not in (len(comp.ids) - 1, len(comp.ids)):
            raise KernelError(
                400,
                "batch_invalid",
                f"batch row {number}: behaviourLogprobs: {len(behaviour)} values, but the completion is "
                f"{len(comp.ids) - 1} tokens (+1 for EOS) under this kernel's tokenizer",
            )
        if behaviour is not None and len(behaviour) < len(comp.ids):
            behaviour = [*behaviour, math.nan]
        out.append(
            Trajectory(prompt, comp.ids, comp.in_loss, behaviour, row.advantage, row.role, temperature=row.temperature)
        )
    return out


def encode_exact(policy: Policy, row: TrainingRow, number: int, prompt: list[int], ends: list[int]) -> Trajectory:
    """A token-exact row: its sampled ids trained on as they are, with their behaviour log-probs; the text
    inserted between turns tokenized and out of the loss (chat.encode_sampled). Ids outside this kernel's
    vocabulary mean another tokenizer sampled them: refused (400)."""
    assert row.completionTokens is not None
    vocab = len(policy.tokenizer)
    sampled = [i for seg in row.completionTokens if hasattr(seg, "ids") for i in seg.ids]
    bad = next((i for i in sampled if i >= vocab), None)
    if bad is not None:
        raise KernelError(
            400,
            "batch_invalid",
            f"batch row {number}: completionTokens: token id {bad} is outside this kernel's vocabulary of {vocab} "
            "(sampled by another tokenizer?)",
        )
    comp = encode_sampled(policy.tokenizer, row.completionTokens, ends)
    _check_context(policy, number, len(prompt) + len(comp.ids))
    behaviour = None
    if row.behaviourLogprobs is not None:
        # The sampled ids are the loss tokens, in order, but for an EOS the kernel appended last (no value).
        given = iter(row.behaviourLogprobs)
        behaviour = [next(given, math.nan) if kept else math.nan for kept in comp.in_loss]
    return Trajectory(
        prompt, comp.ids, comp.in_loss, behaviour, row.advantage, row.role, exact=True, temperature=row.temperature
    )


def _check_context(policy: Policy, number: int, total: int) -> None:
    if total > policy.context_length:
        raise KernelError(
            400,
            "batch_invalid",
            f"batch row {number}: prompt and completion are {total} tokens; the model's context is "
            f"{policy.context_length}",
        )

