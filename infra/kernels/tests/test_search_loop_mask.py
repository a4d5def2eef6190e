"""The trainer masks exactly the observations of a multi-turn search trajectory made by the TypeScript loop
(test/fixtures/search-loop/trajectory.json, kept equal to the loop's output by test/unit/tools/loop-fixture.test.ts)."""

import json
from pathlib import Path

import torch
from conftest import training_rows

from selfplay_kernel.encoding import encode_rows
from selfplay_kernel.micro_batch import micro_batch_loss
from selfplay_kernel.requests import LossSpec

FIXTURE = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "search-loop" / "trajectory.json"


def load() -> tuple[list[dict], dict]:
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data["messages"], data["trajectory"]


def observation_spans(trajectory: dict) -> list[list[int]]:
    """Where each turn's observation sits in the completion, found with Python's own string indices."""
    spans, at = [], 0
    for turn in trajectory["turns"]:
        at += len(turn["text"])
        if "observation" in turn:
            assert trajectory["completion"][at : at + len(turn["observation"])] == turn["observation"]
            spans.append([at, at + len(turn["observation"])])
            at += len(turn["observation"])
    return spans


def test_the_loops_spans_are_python_string_indices_of_the_observations():
    _, trajectory = load()
    assert any(ord(c) > 0xFFFF for c in trajectory["completion"])  # the fixture tests code points, not UTF-16
    assert trajectory["lossMaskSpans"] == observation_spans(trajectory)


def test_train_step_masks_exactly_the_observation_tokens(make_kernel):
    policy = make_kernel().policy
    messages, trajectory = load()
    completion, spans = trajectory["completion"], trajectory["lossMaskSpans"]
    row = {
        "messages": messages,
        "completion": completion,
        "role": "solver",
        "group": "solver/q-1",
        "reward": 1.0,
        "advantage": 1.0,
        "lossMaskSpans": spans,
    }
    (seq,) = encode_rows(policy, training_rows([row]))

    offsets = policy.tokenizer(completion, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    observed = [any(s < e2 and s2 < e for s2, e2 in spans) for s, e in offsets]
    # Out of the loss: exactly the tokens holding observation text (EOS, last, is always in).
    assert seq.in_loss == [not o for o in observed] + [True]
    masked_chars = {i for (s, e), o in zip(offsets, observed) if o for i in range(s, e)}
    assert all(i in masked_chars for s, e in spans for i in range(s, e))
    # Some tokens are masked, and the masked tokens decode to the fixture's observations: each run of masked
    # tokens holds one turn's <information> block, extended at most to the tokens straddling its ends.
    assert any(observed)
    observations = [turn["observation"] for turn in trajectory["turns"] if "observation" in turn]
    assert len(observations) == len(spans) and all("<information>" in o for o in observations)
    runs: list[list[int]] = []
    for k, o in enumerate(observed):
        if o:
            if runs and runs[-1][-1] == k - 1:
                runs[-1].append(k)
            else:
                runs.append([k])
    assert len(runs) == len(observations)
    for run, observation, (a, b) in zip(runs, observations, spans):
        text = policy.tokenizer.decode([seq.completion[k] for k in run])
        assert text == completion[offsets[run[0]][0] : offsets[run[-1]][1]]
        assert observation in text
        assert offsets[run[0]][0] <= a < offsets[run[0]][1] and offsets[run[-1]][0] < b <= offsets[run[-1]][1]

    spec = LossSpec(
        type="ppo_clip", normalization="token_mean", normalizerConstant=1, clipLow=0.2, clipHigh=0.2, klCoef=0.0
    )
    part = micro_batch_loss(policy, [seq], [1.0], spec)
    part.logp.retain_grad()
    part.loss.backward()
    grad, mask = part.logp.grad[0], part.mask[0]
    assert mask.tolist() == seq.in_loss
    assert torch.all(grad[~mask] == 0) and torch.all(grad[mask] != 0)
