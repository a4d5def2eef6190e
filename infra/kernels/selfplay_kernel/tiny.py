"""A tiny, deterministic causal LM with a locally trained tokenizer, for tests and CPU benchmarks.

Nothing is downloaded: the tokenizer is a byte-level BPE trained on generated text (so any UTF-8 string
round-trips), wrapped as a PreTrainedTokenizerFast with a Qwen-style chat template, and the model is a
randomly initialised Qwen2 of the requested size. The same seed gives byte-identical files.
"""

from __future__ import annotations

import random
from pathlib import Path

CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_WORDS = (
    "the of and to in is that for it as with was on be by this are from at or an which have not has "
    "question answer document number value equal sum product prime integer expression because therefore "
    "let find compute solve show prove if then so we x y z n k a b c one two three four five six seven "
    "eight nine ten hundred thousand system user assistant boxed reason step first second final correct "
    "option choice probability energy force mass time rate area volume history river city language"
).split()


def _corpus(seed: int, lines: int = 3000) -> list[str]:
    """Generated training text for the BPE: words, numbers, punctuation, LaTeX-ish and chat markup."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(3, 14))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 10_000)))
        if rng.random() < 0.2:
            words.append(f"\\boxed{{{rng.randint(0, 99)}}}")
        sentence = " ".join(words)
        out.append(sentence.capitalize() + rng.choice([".", "?", "!", ":", ","]))
    return out


def build_tokenizer(seed: int = 0, vocab_size: int = 1024):
    """A byte-level BPE tokenizer with chat template, eos `<|im_end|>` and pad `<|endoftext|>`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(seed), trainer=trainer)
    return chat_tokenizer(tok)


def chat_tokenizer(tok):
    """A trained `tokenizers.Tokenizer` as a transformers tokenizer with the Qwen-style chat template, eos
    `<|im_end|>` and pad `<|endoftext|>`."""
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer, hidden_size: int, layers: int, heads: int, max_positions: int, seed: int):
    """A randomly initialised Qwen2 causal LM sized for `tokenizer`, in float32."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).to(torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return model


def build_tiny_model(
    out_dir: str | Path,
    seed: int = 0,
    hidden_size: int = 64,
    layers: int = 2,
    heads: int = 4,
    max_positions: int = 16384,
) -> Path:
    """Writes tokenizer + randomly initialised Qwen2 causal LM to `out_dir` (loadable with `--model`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(seed)
    model = build_model(tokenizer, hidden_size, layers, heads, max_positions, seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
