"""Turns the kernel's tiny random model into a scripted agent: a seeded bigram chain over a few tokens.

A random model almost never writes `<search>…</search>`, so a test of the multi-turn search loop on the real
kernel would never continue a message. This rewrites a built tiny model (in place) so that:

- the spec's `tokens` (e.g. `<search>`, `</search>`) are single tokens of the tokenizer (added, not special:
  they decode as text), with independent random embeddings;
- every transformer block adds nothing to the residual stream (`o_proj` and `down_proj` zeroed), so the
  next-token distribution depends on the last token only;
- the untied LM head makes that dependency the spec's `chain`: `{source: {target: probability}}`, texts of one
  token each (`EOS` for the end of the message). A newline ends the generation prompt and every
  `<information>` block, so `"\\n"` is where each turn starts. Tokens outside the chain are e^(SCALE·√h) times
  less likely than a source's targets.

So a test picks what each turn writes (`<search> river</search>`, `<task> city</task>`, nothing, …) and with
what probability, seeded by the sampler like any model. The weights stay trainable (the zeroed projections get
gradients), so a training step is a real update.

Usage: python scripted_model.py MODEL_DIR SPEC_JSON
"""

from __future__ import annotations

import json
import math
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

SCALE = 10.0


def main(model_dir: str, spec: dict) -> None:
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.add_tokens(list(spec["tokens"]))
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    old = model.get_input_embeddings().weight.shape[0]
    model.resize_token_embeddings(len(tokenizer), mean_resizing=False)

    def one_token(text: str) -> int:
        if text == "EOS":
            return tokenizer.eos_token_id
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise SystemExit(f"{text!r} is not one token: {tokenizer.convert_ids_to_tokens(ids)}")
        return ids[0]

    with torch.no_grad():
        embed = model.get_input_embeddings().weight
        # Independent random embeddings for the new tokens (resizing's default, the old tokens' mean plus a
        # little noise, would make them nearly parallel, and the chain could not tell them apart).
        generator = torch.Generator().manual_seed(0)
        embed[old:] = torch.randn(embed[old:].shape, generator=generator) * embed[:old].std()
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        # The last hidden state is the source token's embedding under RMSNorm (unit weights): norm √h. A head
        # row of (SCALE + log p / √h) · ê gives logit SCALE · √h + log p, so a source's targets get their
        # probabilities.
        root = math.sqrt(embed.shape[1])
        head = torch.zeros_like(embed)
        for source, targets in spec["chain"].items():
            s = one_token(source)
            direction = embed[s] / embed[s].norm()
            total = sum(targets.values())
            for target, weight in targets.items():
                if weight > 0:
                    head[one_token(target)] += (SCALE + math.log(weight / total) / root) * direction
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(head)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))
