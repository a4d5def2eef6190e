"""Opt-in tokenizers for warm starts whose examples copy names. The word tokenizer (a search agent's queries and
answers): the BPE's merges stay inside words, so a name is cut into the same tokens wherever it stands and whether
or not the tokenizer saw it, and a world's fixed words and tags are tokens of their own. Or warm_start's own
tokenizer with a world's `pieces` added as tokens of their own (SPELL's number words, which its BPE would fuse
with the text around them, while its digits and templates stay cut as they were).

warm_start.py's tokenizer splits only around digits, so its merges cross word boundaries: trained on SSP's
toy world it cut `<search> Loru` `sta` `d `, and a held-out name (which no example names) was never cut as a
training name in the same place was: copying it was not the copy the model had been taught.

This lives outside warm_start.py on purpose: that file and every module it imports are part of the SPICE and
MAE toy worlds' cache keys (infra/toy-world/warm-start-sources.ts), whose tokenizers must not change. So the
options swap warm_start's BPE builder for the duration of one warm start instead of adding a parameter there.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from . import warm_start as line

# Every whitespace character and every punctuation character is a piece of its own: a BPE merge never joins
# a word to a space or a bracket, so ` Lorustad`, `>Lorustad` and `Lorustad.` all hold the same tokens.
WORD_BOUNDARY = r"\s|[^\w\s]"

# warm_start's own BPE builder, which the word tokenizer trains with (on texts already split at words).
_build_line_tokenizer = line.build_line_tokenizer


def build_word_tokenizer(texts: list[str], vocab_size: int, pieces: Sequence[str] = ()):
    """A byte-level BPE whose merges stay inside words (digits still one by one), with `pieces` as tokens
    matched before the BPE splits anything, and the Qwen-style chat template: warm_start's BPE trained on the
    texts cut at word boundaries (so no merge spans one), then told to cut every text it encodes the same way."""
    from tokenizers import AddedToken, Regex, pre_tokenizers

    split = pre_tokenizers.Split(Regex(WORD_BOUNDARY), behavior="isolated")
    words = [word for text in texts for word, _ in split.pre_tokenize_str(text)]
    tokenizer = _build_line_tokenizer(words, vocab_size)
    backend = tokenizer.backend_tokenizer
    backend.pre_tokenizer = pre_tokenizers.Sequence([split, backend.pre_tokenizer])
    tokenizer.add_tokens([AddedToken(p, normalized=False) for p in sorted(set(pieces))])
    return tokenizer


def build_line_tokenizer_with_pieces(texts: list[str], vocab_size: int, pieces: Sequence[str] = ()):
    """warm_start's BPE, split only around digits, with `pieces` as tokens matched before the BPE splits
    anything: a world's fixed words stay whole wherever they stand, the rest is cut as warm_start cuts it."""
    from tokenizers import AddedToken

    tokenizer = _build_line_tokenizer(texts, vocab_size)
    tokenizer.add_tokens([AddedToken(p, normalized=False) for p in sorted(set(pieces))])
    return tokenizer


@contextmanager
def _tokenizer_with(pieces: Sequence[str], split_words: bool) -> Iterator[None]:
    """warm_start's tokenizer, for as long as this lasts, is `build_word_tokenizer` (or, without `split_words`,
    its own BPE) with `pieces`; the shared prompt pieces and masked-span edges it adds are added as before."""
    build = build_word_tokenizer if split_words else build_line_tokenizer_with_pieces
    line.build_line_tokenizer = lambda texts, vocab_size: build(texts, vocab_size, pieces)
    try:
        yield
    finally:
        line.build_line_tokenizer = _build_line_tokenizer


def train_tokenizer_with_pieces(
    rows: list[dict], config: line.WarmStartConfig, pieces: Sequence[str] = (), split_words: bool = True
):
    """`warm_start.train_tokenizer` with the merges kept inside words (unless not `split_words`) and `pieces` as
    tokens of their own."""
    with _tokenizer_with(pieces, split_words):
        return line.train_tokenizer(rows, config)


def warm_start_with_pieces(
    examples_path: Path,
    out_dir: Path,
    config: line.WarmStartConfig,
    validation_path: Path | None = None,
    pieces: Sequence[str] = (),
    split_words: bool = True,
) -> dict:
    """`warm_start.warm_start` with the word tokenizer, or without `split_words` warm_start's own with `pieces`
    (the model directory's tokenizer.json keeps its pre-tokenizer and pieces, so the kernel serves it as
    trained)."""
    with _tokenizer_with(pieces, split_words):
        return line.warm_start(examples_path, out_dir, config, validation_path)
