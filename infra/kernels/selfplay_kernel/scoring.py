"""Log-probs (and entropies) of completions under a model, at each row's sampling temperature: the policy's,
the reference's and pi_old's all come from here, so all of them are of the tempered distribution, as the
behaviour log-probs are.
"""

from __future__ import annotations

import torch

from . import losses
from .encoding import Trajectory


def completion_logprobs(
    model: torch.nn.Module, seqs: list[Trajectory], device: torch.device, pad_id: int
) -> torch.Tensor:
    """Log-probs of each sequence's completion tokens under `model` (see `completion_scores`)."""
    return completion_scores(model, seqs, device, pad_id)[0]


def completion_scores(
    model: torch.nn.Module, seqs: list[Trajectory], device: torch.device, pad_id: int, entropy: str = "none"
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of each sequence's completion tokens under `model` at the sequence's sampling temperature,
    right-aligned in a [B, K] tensor (K = longest completion; positions left of a shorter completion hold
    prompt or padding scores), and the entropy of each of those positions' distributions when asked
    (losses.token_scores's `entropy`). The policy's, the reference's and pi_old's log-probs all come from here,
    so all of them are of the tempered distribution, as the behaviour log-probs are.

    Sequences are left-padded so every completion ends at the last position; only the last K+1 positions'
    logits are computed (`logits_to_keep`), which skips the vocabulary projection of long prompts."""
    width = max(s.length for s in seqs)
    k = max(len(s.completion) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, width - s.length :] = torch.tensor(s.prompt + s.completion)
        attention[i, width - s.length :] = 1
    ids, attention = ids.to(device), attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    logits = model(
        input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=k + 1, use_cache=False
    ).logits[:, :-1]
    return losses.token_scores(logits, ids[:, width - k :], entropy, [s.temperature for s in seqs])

