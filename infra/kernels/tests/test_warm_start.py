"""The warm start: examples tokenized as the trainer tokenizes rows, a model that learns them, a directory the
kernel serves, and clear errors for bad example files."""

from __future__ import annotations

import json
import random
from itertools import accumulate
from pathlib import Path

import pytest
import torch

from selfplay_kernel.chat import encode_completion, encode_prompt
from selfplay_kernel.policy import KernelConfig, Policy
from selfplay_kernel.sampler import ChatCompletionRequest, Sampler
from selfplay_kernel.scoring import completion_scores
from selfplay_kernel.tiny import build_model
from selfplay_kernel.warm_start import (
    WarmStartConfig,
    build_line_tokenizer,
    encode_examples,
    missed_targets,
    shared_prompt_pieces,
    train_tokenizer,
    read_examples,
    read_validation,
    sft_loss,
    warm_start,
)

TEMPLATE = "Answer the question.\nPut the answer in \\boxed{}.\nQuestion: "


def _examples(path: Path, n: int = 64) -> Path:
    rng = random.Random(0)
    rows = []
    for _ in range(n):
        a, b = rng.randint(1, 4), rng.randint(1, 4)
        rows.append(
            {
                "messages": [{"role": "user", "content": f"{TEMPLATE}What is {a} + {b}?"}],
                "completion": f"\\boxed{{{a + b}}}",
                "role": "reasoner",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_tokenizer_keeps_digits_apart_and_merges_the_template(tmp_path: Path) -> None:
    rows = read_examples(_examples(tmp_path / "ex.jsonl"))
    tok = build_line_tokenizer([r["messages"][0]["content"] for r in rows] * 4, vocab_size=2048)
    assert tok.tokenize("1234") == ["1", "2", "3", "4"]
    # A template repeated in every example becomes a few tokens, not one per character.
    assert len(tok.tokenize(TEMPLATE)) < len(TEMPLATE) / 8
    assert tok.decode(tok(TEMPLATE + "What is 12 + 3?")["input_ids"]) == TEMPLATE + "What is 12 + 3?"


def test_a_template_shared_by_every_prompt_of_a_role_is_one_token_digits_and_all(tmp_path: Path) -> None:
    before, after = "Step 1: read the log.\nLog: ", "\nStep 2: answer in 3 words, e.g. 42."
    rows = [
        {"messages": [{"role": "user", "content": f"{before}{a} + {b}{after}"}], "completion": str(a + b), "role": "r"}
        for a, b in [(11, 22), (35, 4), (7, 81)]
    ]
    rows.append({"messages": [{"role": "user", "content": "Other role 5"}], "completion": "5", "role": "alone"})
    # A role's lone prompt shares nothing with anything: it is left to the BPE.
    assert shared_prompt_pieces(rows) == sorted([before, after])

    path = tmp_path / "ex.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows * 8), encoding="utf-8")
    tok = train_tokenizer(read_examples(path), WarmStartConfig(vocab_size=512))
    pieces = [tok.decode([i]) for i in tok(f"{before}58 + 9{after}")["input_ids"]]
    assert pieces == [before, "5", "8", " + ", "9", after]


def test_warm_start_learns_the_examples_and_the_kernel_serves_the_result(tmp_path: Path) -> None:
    examples = _examples(tmp_path / "ex.jsonl")
    config = WarmStartConfig(steps=60, batch_size=16, learning_rate=1e-2, warmup_steps=5, vocab_size=1024)
    summary = warm_start(examples, tmp_path / "model", config)
    assert summary["examples"] == 64
    assert summary["finalLossByRole"]["reasoner"] < 2.0  # from ~7 (uniform over the vocabulary)
    saved = json.loads((tmp_path / "model" / "warm-start.json").read_text())
    assert saved["config"]["steps"] == 60

    policy = Policy.load(KernelConfig(model=str(tmp_path / "model"), policy="toy", device="cpu"))
    # The trainer encodes a row exactly as the warm start did.
    messages = [{"role": "user", "content": f"{TEMPLATE}What is 1 + 2?"}]
    assert encode_prompt(policy.tokenizer, messages)[-1] != policy.tokenizer.eos_token_id
    assert encode_completion(policy.tokenizer, "\\boxed{3}").ids[-1] == policy.tokenizer.eos_token_id
    sampler = Sampler(policy)
    try:
        answer = sampler.complete(
            ChatCompletionRequest(model="toy", messages=messages, temperature=0, max_tokens=8)
        )
    finally:
        sampler.close()
    assert answer["choices"][0]["message"]["content"].startswith("\\boxed{")
    # The kernel loads the tokenizer the warm start trained with (not the architecture's own class, which
    # splits text its own way): the sampler sees the prompt tokens the model learned from.
    trained = train_tokenizer(read_examples(examples), config)
    assert answer["usage"]["prompt_tokens"] == len(encode_prompt(trained, messages))


def test_the_validation_examples_are_scored_per_role_and_kind_as_training_goes(tmp_path: Path) -> None:
    examples = _examples(tmp_path / "ex.jsonl")
    rows = read_examples(examples)
    # Every example as a validation item, and one whose only accepted answer the model was never taught.
    validation = [
        {"messages": r["messages"], "role": "reasoner", "kind": "sum", "accept": [r["completion"]]} for r in rows
    ]
    validation.append({**validation[0], "kind": "never", "accept": ["\\boxed{forty}"]})
    path = tmp_path / "validation.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in validation), encoding="utf-8")
    config = WarmStartConfig(
        steps=60, batch_size=16, learning_rate=1e-2, warmup_steps=5, vocab_size=1024, validate_every=30, max_cycles=1
    )
    summary = warm_start(examples, tmp_path / "model", config, path)
    assert [v["step"] for v in summary["validation"]] == [30, 60]
    final = summary["validation"][-1]["accuracy"]
    assert final.keys() == {"reasoner", "reasoner/sum", "reasoner/never"}
    assert final["reasoner/never"] == {"greedy": 0.0, "sampled": 0.0}
    # 60 steps on 64 sums of digits from 1 to 4 teach some of them (a third, measured): the taught answers count.
    assert final["reasoner/sum"]["greedy"] > 0.0
    assert 0.0 < final["reasoner/sum"]["sampled"] <= 1.0


@pytest.mark.parametrize(
    ("target", "cycles"),
    [(0.0, [(40, 1e-2, [])]), (1.01, [(40, 1e-2, ["reasoner"]), (20, 5e-3, ["reasoner"]), (20, 5e-3, ["reasoner"])])],
)
def test_cycles_run_until_the_validation_targets_are_met(
    tmp_path: Path, target: float, cycles: list[tuple[int, float, list[str]]]
) -> None:
    """A target met at the end of the first cycle stops the training there; one never met runs every cycle,
    the later ones shorter and at the restart's peak; each cycle's missed targets are in the summary."""
    examples = _examples(tmp_path / "examples.jsonl")
    validation = tmp_path / "validation.jsonl"
    rows = read_examples(examples)[:8]
    items = [{"messages": r["messages"], "role": "reasoner", "accept": [r["completion"]]} for r in rows]
    validation.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    config = WarmStartConfig(
        steps=40,
        batch_size=8,
        learning_rate=1e-2,
        warmup_steps=5,
        vocab_size=1024,
        validate_every=0,
        targets=(("reasoner", target),),
        restart_steps=20,
        restart_learning_rate=0.5,
        max_cycles=3,
    )
    summary = warm_start(examples, tmp_path / "model", config, validation)
    assert [(c["steps"], c["learningRate"], c["missedTargets"]) for c in summary["cycles"]] == cycles
    assert summary["steps"] == sum(c[0] for c in cycles)
    assert [v["step"] for v in summary["validation"]] == list(accumulate(c[0] for c in cycles))


def test_a_target_for_a_role_not_validated_is_missed() -> None:
    accuracy = {"reasoner": {"greedy": 0.95, "sampled": 0.6}}
    assert missed_targets(accuracy, (("reasoner", 0.9), ("challenger", 0.5))) == ["challenger"]
    assert missed_targets(accuracy, (("reasoner", 0.96),)) == ["reasoner"]


def test_bad_validation_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [], "accept": ["x"]}\n{"messages": []}\n', encoding="utf-8")
    with pytest.raises(ValueError, match='bad.jsonl:2: needs "messages"'):
        read_validation(bad)


def test_bad_example_files_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [], "completion": "x"}\nnot json\n', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:2: not JSON"):
        read_examples(bad)
    bad.write_text('{"completion": "x"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match='bad.jsonl:1: needs "messages"'):
        read_examples(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no examples"):
        read_examples(empty)


def test_an_examples_loss_mask_spans_leave_the_environments_text_out_of_the_loss(tmp_path: Path) -> None:
    # Search agents' trajectories: the calls and the answer are the model's, the <information> blocks the
    # retriever's.
    rows, blocks = [], []
    for town, founder in [("Belawick", "Toric"), ("Osuford", "Kelandan"), ("Marby", "Aluvin")]:
        block = f"\n<information>\nDoc 1 {town} was founded by {founder}.\n</information>\n\n"
        completion = f"<search> {town} </search>{block}<answer> {founder} </answer>"
        start = completion.index(block)
        messages = [{"role": "user", "content": f"Who founded {town}?"}]
        rows.append({"messages": messages, "completion": completion, "lossMaskSpans": [[start, start + len(block)]]})
        blocks.append(block)
    path = tmp_path / "ex.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows * 8) + json.dumps({**rows[0], "lossMaskSpans": []}))
    examples = read_examples(path)
    tokenizer = train_tokenizer(examples, WarmStartConfig(vocab_size=512))
    encoded = encode_examples(tokenizer, examples)
    # Exactly the block is out of the loss: no token straddles its edges, however the BPE merged.
    for block, e in zip(blocks, encoded):
        assert tokenizer.decode([i for i, keep in zip(e.completion, e.in_loss) if not keep]) == block
        assert tokenizer.decode([i for i, keep in zip(e.completion, e.in_loss) if keep][:-1]).startswith("<search>")
    assert all(encoded[-1].in_loss) and encoded[-1].completion == encoded[0].completion

    # The loss is the mean over the tokens in the loss only.
    masked = encoded[0]
    model = build_model(tokenizer, hidden_size=32, layers=1, heads=2, max_positions=256, seed=0)
    loss, (per_example,) = sft_loss(model, [masked], tokenizer.pad_token_id)
    logp, _ = completion_scores(model, [masked], torch.device("cpu"), tokenizer.pad_token_id)
    kept = logp[0, -len(masked.completion) :][torch.tensor(masked.in_loss)]
    assert loss.item() == pytest.approx(-kept.mean().item(), rel=1e-5)
    assert per_example == pytest.approx(-kept.mean().item(), rel=1e-5)


def test_loss_mask_spans_outside_the_completion_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": [], "completion": "abc", "lossMaskSpans": [[1, 9]]}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl: example 1: lossMaskSpans must be"):
        read_examples(bad)
