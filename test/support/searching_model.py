"""Turns the kernel's tiny random model into a search agent of sorts: a seeded, nearly deterministic bigram chain.

A random model almost never writes `<search>…</search>`, so a test of the multi-turn search loop on the real
kernel would never continue a message. This rewrites a built tiny model (in place) so that:

- `<search>`, `</search>`, `<task>` and `</task>` are single tokens of the tokenizer (added, not special:
  they decode as text);
- every transformer block adds nothing to the residual stream (`o_proj` and `down_proj` zeroed), so the
  next-token distribution depends on the last token only;
- the untied LM head makes that dependency a chain. After a newline (the end of the generation prompt, and
  of every `<information>` block) comes `<search>`, `<task>` or EOS with the given shares; then
  `<search>` → ` QUERY` → `</search>` and `<task>` → ` TASK` → `</task>`, each the only likely choice at
  temperature 1.

So a turn is `<search> QUERY</search>` (the server stops at `</search>`, the environment appends an observation
that ends with a newline, and the continued message goes on), `<task> TASK</task>` or nothing. The weights stay
trainable (the zeroed projections get gradients), so a training step is a real update.

Usage: python searching_model.py MODEL_DIR QUERY_WORD TASK_WORD STOP_SHARE TASK_SHARE
"""

from __future__ import annotations

import math
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

SCALE = 10.0


def main(model_dir: str, query: str, task: str, stop_share: float, task_share: float) -> None:
    search_share = 1.0 - stop_share - task_share
    if search_share <= 0 or stop_share < 0 or task_share < 0:
        raise SystemExit("the stop and task shares must be ≥ 0 and leave a positive search share")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.add_tokens(["<search>", "</search>", "<task>", "</task>"])
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    with torch.no_grad():
        # Independent random embeddings for the new tokens (resizing's default, the old tokens' mean plus a
        # little noise, would make the four nearly parallel, and the chain could not tell them apart).
        embed = model.get_input_embeddings().weight
        generator = torch.Generator().manual_seed(0)
        embed[old:] = torch.randn(embed[old:].shape, generator=generator) * embed[:old].std()

    def one_token(text: str) -> int:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise SystemExit(f"{text!r} is not one token: {tokenizer.convert_ids_to_tokens(ids)}")
        return ids[0]

    newline = one_token("\n")
    open_search, query_word, close_search = (one_token(t) for t in ["<search>", f" {query}", "</search>"])
    open_task, task_word, close_task = (one_token(t) for t in ["<task>", f" {task}", "</task>"])
    # source → [(target, probability)]
    chain = {
        newline: [(open_search, search_share), (open_task, task_share), (tokenizer.eos_token_id, stop_share)],
        open_search: [(query_word, 1.0)],
        query_word: [(close_search, 1.0)],
        open_task: [(task_word, 1.0)],
        task_word: [(close_task, 1.0)],
    }

    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed = model.model.embed_tokens.weight
        # The last hidden state is the source token's embedding under RMSNorm (unit weights): norm sqrt(h). A
        # head row of (SCALE + log p / sqrt(h)) · ê gives logit SCALE · sqrt(h) + log p, so the targets of one
        # source get their probabilities and every other token is e^(SCALE · sqrt(h)) times less likely.
        root = math.sqrt(embed.shape[1])
        head = torch.zeros_like(embed)
        for source, targets in chain.items():
            direction = embed[source] / embed[source].norm()
            for target, p in targets:
                if p > 0:
                    head[target] += (SCALE + math.log(p) / root) * direction
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(head)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
