"""The warm start's opt-in word tokenizer (word_tokenizer.py): a name is cut the same wherever it stands,
seen or not, and a world's fixed words are tokens of their own; the default tokenizer is left as it was."""

from __future__ import annotations

import json
import random
from pathlib import Path

from transformers import AutoTokenizer

from selfplay_kernel import cli
from selfplay_kernel import warm_start as line
from selfplay_kernel.chat import encode_completion
from selfplay_kernel.warm_start import WarmStartConfig, build_line_tokenizer, read_examples, train_tokenizer
from selfplay_kernel.word_tokenizer import train_tokenizer_with_pieces, warm_start_with_pieces

ONSETS = ["Al", "Bel", "Cor", "Dun", "Kel", "Lor", "Mar", "Ros"]
MIDDLES = ["a", "u", "an", "or"]
PIECES = ["<search> ", " </search>", "<answer> ", " </answer>", " was founded by "]
HELD_OUT = "Lorustad"  # in no example


def _names(coda: str) -> list[str]:
    return [f"{o}{m}{coda}" for o in ONSETS for m in MIDDLES if f"{o}{m}{coda}" != HELD_OUT]


def _rows() -> list[dict]:
    """Search trajectories of a toy world of towns and founders, as SSP's world renders them."""
    rng = random.Random(0)
    rows = []
    for town, founder in zip(_names("stad") + _names("wick"), rng.sample(_names("tor") * 2, 64)):
        block = f'\n<information>\nDoc 1 (Title: "{town}") {town} was founded by {founder}.\n</information>\n\n'
        completion = f"<search> {town} </search>{block}<answer> {founder} </answer>"
        start = completion.index(block)
        question = f"Question: Which person is named as the founder of the town of {town}?"
        rows.append(
            {
                "messages": [{"role": "user", "content": question}],
                "completion": completion,
                "role": "solver",
                "lossMaskSpans": [[start, start + len(block)]],
            }
        )
    return rows * 4


def _name_tokens(tokenizer, text: str, name: str) -> list[str]:
    """The tokens of `text` that cover `name` (which must start and end on token boundaries)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    start = text.index(name)
    spans, pos = [], 0
    for i in ids:
        piece = tokenizer.decode([i])
        spans.append((pos, pos + len(piece), i))
        pos += len(piece)
    covering = [(a, b, i) for a, b, i in spans if a < start + len(name) and b > start]
    assert covering[0][0] == start and covering[-1][1] == start + len(name), f"{name} shares a token in {text!r}"
    return tokenizer.convert_ids_to_tokens([i for _, _, i in covering])


def test_a_name_is_cut_the_same_wherever_it_stands_seen_or_not() -> None:
    tokenizer = train_tokenizer_with_pieces(_rows(), WarmStartConfig(vocab_size=512), PIECES)
    for name in (HELD_OUT, "Belawick", "Kelutor"):
        alone = tokenizer.tokenize(name)
        for text in (
            f"<search> {name} </search>",
            f"<answer> {name} </answer>",
            f"{name} was founded by Kelutor.",
            f"Belawick was founded by {name}.",
            f'Doc 1 (Title: "{name}") {name}',
            f"the founder of the town of {name}?",
        ):
            assert _name_tokens(tokenizer, text, name) == alone, text
    # A held-out name is cut as a training name of its shape is: syllables the BPE learned from others.
    assert len(tokenizer.tokenize(HELD_OUT)) <= 3


def test_the_default_tokenizer_merges_across_words() -> None:
    # What the option is for: the line tokenizer trained on the same rows lets a merge take in a space or a
    # tag, so the name above is cut differently after `<search> ` than alone (no word tokenizer asked for).
    tokenizer = train_tokenizer(_rows(), WarmStartConfig(vocab_size=512))
    assert line.build_line_tokenizer is build_line_tokenizer
    cut = [t for t in tokenizer.tokenize("<search> Belawick </search>") if "Bel" in t or "wick" in t]
    assert cut != tokenizer.tokenize("Belawick")


def test_the_worlds_fixed_words_are_tokens_of_their_own() -> None:
    tokenizer = train_tokenizer_with_pieces(_rows(), WarmStartConfig(vocab_size=512), PIECES)
    for piece in PIECES:
        assert len(tokenizer.tokenize(piece)) == 1, piece
    # The masked spans' edges are still tokens of their own, so the loss mask lands on token boundaries.
    completion = _rows()[0]["completion"]
    start, end = _rows()[0]["lossMaskSpans"][0]
    encoded = encode_completion(tokenizer, completion, [(start, end)])
    assert tokenizer.decode([i for i, keep in zip(encoded.ids, encoded.in_loss) if not keep]) == completion[start:end]


def test_pieces_on_the_line_tokenizer_are_whole_and_the_rest_is_cut_as_before() -> None:
    rows = _rows()
    with_pieces = train_tokenizer_with_pieces(rows, WarmStartConfig(vocab_size=512), PIECES, split_words=False)
    assert line.build_line_tokenizer is build_line_tokenizer
    for piece in PIECES:
        assert len(with_pieces.tokenize(piece)) == 1, piece
    plain = train_tokenizer(rows, WarmStartConfig(vocab_size=512))
    assert with_pieces.tokenize("Belawick 47") == plain.tokenize("Belawick 47")


def test_the_word_warm_start_writes_a_tokenizer_the_kernel_loads_and_restores_the_default(tmp_path: Path) -> None:
    examples = tmp_path / "ex.jsonl"
    examples.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    config = WarmStartConfig(steps=2, batch_size=4, hidden_size=16, layers=1, heads=2, vocab_size=512)
    warm_start_with_pieces(examples, tmp_path / "model", config, pieces=PIECES)
    assert line.build_line_tokenizer is build_line_tokenizer
    loaded = AutoTokenizer.from_pretrained(tmp_path / "model")
    trained = train_tokenizer_with_pieces(read_examples(examples), config, PIECES)
    text = f"<search> {HELD_OUT} </search>"
    assert loaded(text)["input_ids"] == trained(text)["input_ids"]
    assert _name_tokens(loaded, text, HELD_OUT) == loaded.tokenize(HELD_OUT)


def test_the_cli_warm_starts_with_the_word_tokenizer_only_when_asked(tmp_path: Path) -> None:
    examples = tmp_path / "ex.jsonl"
    examples.write_text("".join(json.dumps(r) + "\n" for r in _rows()), encoding="utf-8")
    base = ["warm-start", str(examples), "--steps", "2", "--batch-size", "4", "--hidden-size", "16", "--layers", "1"]
    pieces = [arg for p in PIECES for arg in ("--piece", p)]
    words_dir = str(tmp_path / "words")
    assert cli.main([*base[:2], words_dir, *base[2:], "--split-words", "--vocab-size", "512", *pieces]) == 0
    words = AutoTokenizer.from_pretrained(words_dir)
    assert _name_tokens(words, f"<search> {HELD_OUT} </search>", HELD_OUT) == words.tokenize(HELD_OUT)
    assert all(len(words.tokenize(p)) == 1 for p in PIECES)

    assert cli.main([*base[:2], str(tmp_path / "line"), *base[2:], "--vocab-size", "512"]) == 0
    assert AutoTokenizer.from_pretrained(tmp_path / "line").tokenize(HELD_OUT) != words.tokenize(HELD_OUT)

    # Pieces without --split-words: warm_start's own BPE, the pieces whole in it.
    assert cli.main([*base[:2], str(tmp_path / "pieces"), *base[2:], "--vocab-size", "512", *pieces]) == 0
    with_pieces = AutoTokenizer.from_pretrained(tmp_path / "pieces")
    assert all(len(with_pieces.tokenize(p)) == 1 for p in PIECES)
    assert AutoTokenizer.from_pretrained(tmp_path / "line").tokenize(" was founded by ") != [" was founded by "]
