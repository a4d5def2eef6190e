"""Warm start: a small model built from scratch and taught by supervised training to play a world's roles,
deliberately short of mastery, so that self-play has something to learn.

The examples (`{"messages", "completion", "role"}` per JSONL line) are rendered by the recipe's own prompt
code, and are tokenized here exactly as the trainer tokenizes a training row (`chat.encode_prompt` and
`chat.encode_completion`), so the warm start, the sampler and the RL steps all see the same token ids.

The tokenizer is trained on the examples' own text, split only around single digits (a BPE may then merge
whole runs of a prompt template into one token), and the text that every prompt of a role shares before and
after what varies (a template around its document or question) is one token of its own, digits and all. The
recipes' long prompt templates shrink to a few tokens, which is what makes a CPU run affordable, while
numbers stay digit by digit, as arithmetic needs. The result is an ordinary Hugging Face model directory that
`serve --model` loads.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from dataclasses import asdict, dataclass
from collections.abc import Iterator
from pathlib import Path

import torch

from .chat import encode_completion, encode_prompt
from .encoding import Trajectory
from .sampler import Row, generate
from .scoring import completion_scores
from .tiny import SPECIAL_TOKENS, build_model, chat_tokenizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WarmStartConfig:
    steps: int = 5000
    batch_size: int = 32
    # Not on a knife's edge: the Reasoner's arithmetic on facts it never saw is learned smoothly at 1e-3 to
    # 2.5e-3 and not at all in 2,500 batches at 5e-3, where the toy world's first warm start sat and its
    # starting point depended on the CPU and thread count that ran it (docs/learning.md).
    learning_rate: float = 2e-3
    warmup_steps: int = 50
    hidden_size: int = 64
    layers: int = 2
    heads: int = 4
    vocab_size: int = 8192
    # The share of steps each role's batches take: the Reasoner's 2,750 batches take it past the point where
    # its greedy answers are right on held-out facts (about 2,000, measured), the Challenger's 2,000 teach it to
    # write its document's sum or difference in half its samples.
    role_weights: tuple[tuple[str, float], ...] = (("challenger", 0.4), ("reasoner", 0.55), ("type_selection", 0.05))
    # A multiplier of the learning rate for the steps of a role's batches (roles not named: 1). Each batch is
    # of one role, so a role can take larger steps than another on the shared weights: copying from the
    # document needs larger ones than arithmetic tolerates (at 2e-3 alone the Challenger copied nothing in
    # 2,750 batches; measured).
    role_learning_rates: tuple[tuple[str, float], ...] = (("challenger", 2.5),)
    seed: int = 0
    # Every this many steps the validation examples (if any) are scored; 0 scores them only at the end.
    validate_every: int = 1000
    validation_samples: int = 2
    # Trained to a target, not for a fixed number of steps: the step at which a small model's arithmetic
    # clicks varies by thousands between seeds (and, where the reduction order differs, between machines and
    # thread counts: the first toy world's start moved from 22 % to 45 % with them), and a longer
    # schedule does not help a late seed without hurting an early one (measured on the toy world: 8,000 steps
    # fixed seed 2 and broke seed 0). So the first cosine cycle is `steps` long; when it ends with a role's
    # greedy validation accuracy below its target (`targets`: role, accuracy), another cycle of
    # `restart_steps` at `restart_learning_rate` × the peak follows (a warm restart), up to `max_cycles`. A
    # first cycle that ends on target stops there, so a seed that converges trains exactly as a fixed schedule
    # would. No targets (or no validation examples): one cycle.
    targets: tuple[tuple[str, float], ...] = ()
    restart_steps: int = 2500
    restart_learning_rate: float = 0.5
    # Seed 2 of the toy world needed 4 (12,500 steps) on the development machine; another machine's reduction
    # order may need one more.
    max_cycles: int = 6


def read_validation(path: Path) -> list[dict]:
    """Validation examples: `{"messages", "role", "kind", "accept"}` per JSONL line, `accept` the completions
    that count as right; every bad line is named."""
    return _jsonl_rows(path, "accept", list, '"messages" (a list) and "accept" (a list of completions)')


def validation_accuracy(model, tokenizer, rows: list[dict], samples: int, seed: int) -> dict[str, dict[str, float]]:
    """Per `role/kind` (and per role): the greedy completion's accuracy and the mean accuracy of `samples`
    samples at temperature 1, a completion being right when it is one of the example's `accept`. Sampling is
    seeded per example, so two models are compared on the same random numbers."""
    max_new = max(len(tokenizer(a)["input_ids"]) for r in rows for a in r["accept"]) + 2
    prompts = [encode_prompt(tokenizer, r["messages"]) for r in rows]
    jobs = [Row(p, 0.0, 1.0, max_new, [], 0) for p in prompts]
    jobs += [Row(p, 1.0, 1.0, max_new, [], seed + i * samples + k) for i, p in enumerate(prompts) for k in range(samples)]
    was_training = model.training
    model.eval()
    out = []
    for start in range(0, len(jobs), 256):
        out += generate(model, tokenizer, jobs[start : start + 256], torch.device("cpu"))
    model.train(was_training)
    tallies: dict[str, list[list[float]]] = {}
    for i, row in enumerate(rows):
        accept = {a.strip() for a in row["accept"]}
        greedy = float(out[i].text.strip() in accept)
        drawn = out[len(rows) + i * samples : len(rows) + (i + 1) * samples]
        sampled = sum(s.text.strip() in accept for s in drawn) / samples
        for key in (str(row.get("role", "")), f'{row.get("role", "")}/{row.get("kind", "")}'):
            tallies.setdefault(key, []).append([greedy, sampled])
    return {
        key: {"greedy": sum(g for g, _ in v) / len(v), "sampled": sum(s for _, s in v) / len(v)}
        for key, v in sorted(tallies.items())
    }


def read_examples(path: Path) -> list[dict]:
    """The JSONL examples; every bad line is named. An example may carry `lossMaskSpans`, `[start, end)`
    code-point ranges of its completion that are the environment's text (a search agent's `<information>`
    blocks), left out of the loss as the trainer leaves them out of a training row."""
    rows = _jsonl_rows(path, "completion", str, '"messages" (a list) and "completion" (a string)')
    for number, row in enumerate(rows, start=1):
        spans = row.get("lossMaskSpans", [])
        length = len(row["completion"])
        if not isinstance(spans, list) or not all(
            isinstance(s, list) and len(s) == 2 and all(type(v) is int for v in s) and 0 <= s[0] <= s[1] <= length
            for s in spans
        ):
            raise ValueError(
                f"{path}: example {number}: lossMaskSpans must be [start, end] pairs of code points within its "
                f"completion ({length} long)"
            )
    return rows


def _jsonl_rows(path: Path, field: str, kind: type, needs: str) -> list[dict]:
    """The objects of a JSONL file, each with a "messages" list and `field` of type `kind`; at least one."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}:{number}: not JSON") from None
        if not isinstance(row, dict) or not isinstance(row.get("messages"), list) or not isinstance(row.get(field), kind):
            raise ValueError(f"{path}:{number}: needs {needs}")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no examples")
    return rows


def build_line_tokenizer(texts: list[str], vocab_size: int):
    """A byte-level BPE whose pieces are the text between single digits, with the Qwen-style chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return chat_tokenizer(tok)


def shared_prompt_pieces(rows: list[dict], min_chars: int = 8) -> list[str]:
    """The longest prefix and the longest suffix that all the messages at one place of one role's prompts share
    (a recipe's template before and after its document), each at least `min_chars` long.

    As tokens of their own they keep a template's digits ("Step 1:", "answer: 42") from splitting it into
    hundreds of pieces: SPICE's Challenger prompt goes from about 270 tokens to about 60. Beyond the cost, that
    brings the document a few tokens before the completion, where a two-layer model learns to copy from it
    (measured: a whole row copied in a third of the samples after 2,000 Challenger batches, against a few per
    cent at 270 tokens; docs/learning.md)."""
    by_place: dict[tuple[str, int], list[str]] = {}
    for row in rows:
        for i, message in enumerate(row["messages"]):
            by_place.setdefault((str(row.get("role", "")), i), []).append(message["content"])
    pieces = set()
    for texts in by_place.values():
        if len(texts) < 2:
            continue
        prefix = os.path.commonprefix(texts)
        suffix = os.path.commonprefix([t[::-1] for t in texts])[::-1]
        pieces.update(p for p in (prefix, suffix) if len(p) >= min_chars)
    return sorted(pieces)


def masked_span_edges(rows: list[dict], min_chars: int = 8) -> list[str]:
    """The longest prefix and the longest suffix that all the examples' masked spans share (a search loop's
    `\n<information>\n` and `</information>\n\n`), each at least `min_chars` long.

    As tokens of their own they keep the BPE from merging the model's text with the environment's across a
    span's edge (`>` of `</search>` with the `\n` after it): a token that straddles an edge is out of the loss,
    so the model would never be taught the end of its own call."""
    texts = [row["completion"][start:end] for row in rows for start, end in row.get("lossMaskSpans", [])]
    if not texts:
        return []
    prefix = os.path.commonprefix(texts)
    suffix = os.path.commonprefix([t[::-1] for t in texts])[::-1]
    return sorted({p for p in (prefix, suffix) if len(p) >= min_chars})


def train_tokenizer(rows: list[dict], config: WarmStartConfig):
    """The warm start's tokenizer for these examples: a BPE trained on a sample of the texts (the templates
    repeat in every example, so a sample trains the same merges, much faster), plus each role's shared prompt
    pieces (`shared_prompt_pieces`) and the edges of the masked spans (`masked_span_edges`) as tokens that are
    matched before the BPE splits anything."""
    from tokenizers import AddedToken

    sample = random.Random(config.seed).sample(rows, min(len(rows), 2000))
    texts = [t for r in sample for t in (*(m["content"] for m in r["messages"]), r["completion"])]
    tokenizer = build_line_tokenizer(texts, config.vocab_size)
    pieces = sorted({*shared_prompt_pieces(rows), *masked_span_edges(rows)})
    tokenizer.add_tokens([AddedToken(p, normalized=False) for p in pieces])
    return tokenizer


def encode_examples(tokenizer, rows: list[dict]) -> list[Trajectory]:
    """Each example as the trainer encodes a training row (every completion token in the loss but those of its
    `lossMaskSpans`)."""
    out = []
    for row in rows:
        completion = encode_completion(tokenizer, row["completion"], [tuple(s) for s in row.get("lossMaskSpans", [])])
        prompt = encode_prompt(tokenizer, row["messages"])
        out.append(Trajectory(prompt, completion.ids, completion.in_loss, None, 0.0, str(row.get("role", ""))))
    return out


def role_batches(
    data: list[Trajectory], size: int, weights: dict[str, float], rng: random.Random
) -> Iterator[list[Trajectory]]:
    """Endless batches, each of one role: a role's examples have similar lengths, so a batch pads little (a
    Challenger prompt is ten times a Reasoner's). Roles take turns by `weights` (roles it does not name get
    weight 1); each role's examples are shuffled and seen once per pass over that role."""
    by_role: dict[str, list[Trajectory]] = {}
    for t in data:
        by_role.setdefault(t.role, []).append(t)
    roles = sorted(by_role)
    passes = {role: iter(()) for role in roles}
    while True:
        role = rng.choices(roles, weights=[weights.get(r, 1.0) for r in roles])[0]
        batch = []
        while len(batch) < size:
            example = next(passes[role], None)
            if example is None:
                passes[role] = iter(rng.sample(by_role[role], len(by_role[role])))
                continue
            batch.append(example)
        yield batch


def sft_loss(model: torch.nn.Module, batch: list[Trajectory], pad_id: int) -> tuple[torch.Tensor, list[float]]:
    """Mean negative log-likelihood of the batch's completion tokens in the loss (EOS included), scored by the
    trainer's own `completion_scores` (left padding, logits only at completion positions); also each example's
    mean."""
    logp, _ = completion_scores(model, batch, torch.device("cpu"), pad_id)
    mask = torch.zeros_like(logp, dtype=torch.bool)
    for i, t in enumerate(batch):
        mask[i, logp.shape[1] - len(t.completion) :] = torch.tensor(t.in_loss, dtype=torch.bool)
    nll = torch.where(mask, -logp, 0.0)
    per_example = (nll.sum(-1) / mask.sum(-1)).detach().tolist()
    return nll.sum() / mask.sum(), per_example


def cosine_learning_rate(peak: float, step: int, length: int, warmup_steps: int) -> float:
    """A cycle's learning rate at `step`: linear warmup to `peak`, then a cosine decay to 0 at `length`."""
    return peak * min(1.0, (step + 1) / max(1, warmup_steps)) * (0.5 * (1 + math.cos(math.pi * step / length)))


def sft_step(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: list[Trajectory], lr: float, pad_id: int
) -> tuple[float, list[float]]:
    """One AdamW step on the batch's negative log-likelihood at `lr`, gradients clipped to norm 1; returns the
    loss and each example's mean loss."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss, per_example = sft_loss(model, batch, pad_id)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return float(loss.detach()), per_example


def cycles(config: WarmStartConfig) -> Iterator[tuple[int, float]]:
    """The cosine cycles' lengths and peak learning rates, first to last."""
    yield config.steps, config.learning_rate
    for _ in range(config.max_cycles - 1):
        yield config.restart_steps, config.learning_rate * config.restart_learning_rate


def missed_targets(accuracy: dict[str, dict[str, float]], targets: tuple[tuple[str, float], ...]) -> list[str]:
    """The roles whose greedy validation accuracy is below their target (a role not validated counts as
    missed, so a target that names no validated role never passes silently)."""
    return [role for role, target in targets if accuracy.get(role, {}).get("greedy", -1.0) < target]


def warm_start(
    examples_path: Path, out_dir: Path, config: WarmStartConfig, validation_path: Path | None = None
) -> dict:
    """Builds the tokenizer and model, trains cosine cycles until the validation targets are met (or
    `max_cycles` have run), writes the model directory and a `warm-start.json` summary (config, cycles, final
    losses per role, validations, seconds); returns the summary."""
    started = time.perf_counter()
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    rows = read_examples(examples_path)
    tokenizer = train_tokenizer(rows, config)
    data = encode_examples(tokenizer, rows)
    model = build_model(
        tokenizer,
        hidden_size=config.hidden_size,
        layers=config.layers,
        heads=config.heads,
        # Rotary positions cost no parameters: room for prompts longer than any example.
        max_positions=max(4096, 2 * max(e.length for e in data)),
        seed=config.seed,
    )
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.0)
    batches = role_batches(data, config.batch_size, dict(config.role_weights), random.Random(config.seed))
    validation = read_validation(validation_path) if validation_path else []
    validations = []

    def validate(step: int) -> None:
        scores = validation_accuracy(model, tokenizer, validation, config.validation_samples, config.seed)
        validations.append({"step": step, "accuracy": scores})
        log.info("warm start step %d validation %s", step, json.dumps(scores))

    recent: dict[str, list[float]] = {}
    role_scale = dict(config.role_learning_rates)
    done = 0
    ran: list[dict] = []
    for length, peak in cycles(config):
        for step in range(length):
            batch = next(batches)
            lr = cosine_learning_rate(peak * role_scale.get(batch[0].role, 1.0), step, length, config.warmup_steps)
            loss, per_example = sft_step(model, optimizer, batch, lr, tokenizer.pad_token_id)
            for e, value in zip(batch, per_example):
                recent.setdefault(e.role, []).append(value)
                del recent[e.role][:-200]
            done += 1
            if step % 50 == 0 or step == length - 1:
                cycle = f"cycle {len(ran) + 1}: {step}/{length}"
                log.info("warm start step %d (%s) loss %.4f lr %.2e", done, cycle, loss, lr)
            if validation and config.validate_every and (step + 1) % config.validate_every == 0 and step + 1 < length:
                validate(done)
        missed: list[str] = []
        if validation:
            validate(done)
            missed = missed_targets(validations[-1]["accuracy"], config.targets)
        ran.append({"steps": length, "learningRate": peak, "missedTargets": missed})
        if not missed:
            break
        log.info("warm start cycle %d ended below target for %s", len(ran), ", ".join(missed))
    else:
        log.warning("warm start: after %d cycles %s stayed below target", len(ran), ", ".join(missed))
    model.eval()
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    summary = {
        "config": asdict(config),
        "examples": len(data),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocabulary": len(tokenizer),
        "meanTokensByRole": {
            role: sum(e.length for e in data if e.role == role) / sum(e.role == role for e in data)
            for role in sorted({e.role for e in data})
        },
        "finalLossByRole": {role: sum(v) / len(v) for role, v in sorted(recent.items())},
        "cycles": ran,
        "steps": done,
        "validation": validations,
        "seconds": time.perf_counter() - started,
    }
    (out_dir / "warm-start.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
