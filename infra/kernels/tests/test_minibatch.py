"""Mini-batched updates: k mini-batches are k optimizer steps of one policy version, later steps are clipped
against the behaviour log-probs, roles in turn."""

import pytest
from conftest import row, step_request, token_logprobs, training_rows, write_batch

from selfplay_kernel.minibatch import UpdateSpec, plan_steps
from selfplay_kernel.encoding import encode_rows
from selfplay_kernel.requests import LossSpec, OptimizerSpec, TrainStepRequest
from selfplay_kernel.trainer import fill_behaviour, optimizer_step


def prompt_row(question: str, completion: str, advantage: float, **extra) -> dict:
    return {**row(completion, advantage, **extra), "messages": [{"role": "user", "content": question}]}


QUESTIONS = ["What is two plus two?", "What is one plus three?", "Name a river.", "Count to four."]


def test_plan_keeps_a_prompts_rows_together_and_orders_roles():
    prompts = ["a", "b", "a", "c", "d", "b", "e"]
    roles = ["solver", "solver", "solver", "proposer", "solver", "solver", "judge"]
    assert plan_steps(prompts, roles, UpdateSpec()) == [[0, 2, 1, 5, 3, 4, 6]]
    assert plan_steps(prompts, roles, UpdateSpec(miniBatchPrompts=2)) == [[0, 2, 1, 5], [3, 4], [6]]
    in_turn = UpdateSpec(miniBatchPrompts=2, roleOrder=["proposer", "solver"])
    # proposer first, then the solver's prompts a, b, d in mini-batches of 2, then the unlisted judge.
    assert plan_steps(prompts, roles, in_turn) == [[3], [0, 2, 1, 5], [4], [6]]
    twice = UpdateSpec(miniBatchPrompts=3, epochs=2, roleOrder=["proposer"])
    assert plan_steps(prompts, roles, twice) == [[3], [3], [0, 2, 1, 5, 4], [6], [0, 2, 1, 5, 4], [6]]


def test_k_mini_batches_are_k_optimizer_steps_of_one_version(make_kernel, tmp_path):
    kernel = make_kernel()
    rows = [prompt_row(q, c, a) for q in QUESTIONS for c, a in (("The answer is four.", 1.0), ("Seven", -1.0))]
    batch = write_batch(tmp_path / "b.jsonl", rows)
    request = {**step_request(batch), "update": {"miniBatchPrompts": 1}}
    body = kernel.client.post("/v1/train/step", json=request).json()
    assert body["policyVersion"] == 1 and body["applied"] is True
    metrics = body["metrics"]
    assert metrics["optimizerSteps"] == 4 and metrics["skippedSteps"] == 0
    assert metrics["tokens"] == sum(sum(s.in_loss) for s in encode_rows(kernel.policy, training_rows(rows)))
    adam_steps = {int(state["step"]) for state in kernel.policy.optimizer.state.values()}
    assert adam_steps == {4}


def test_without_update_the_batch_is_one_step(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [prompt_row(q, "four", 1.0) for q in QUESTIONS])
    metrics = kernel.client.post("/v1/train/step", json=step_request(batch)).json()["metrics"]
    assert metrics["optimizerSteps"] == 1
    assert {int(s["step"]) for s in kernel.policy.optimizer.state.values()} == {1}


@pytest.mark.parametrize("behaviour", ["sampler", "none"], ids=["given", "filled"])
def test_the_clip_engages_on_the_second_step(make_kernel, behaviour):
    """Step 1 raises the completion's probability under prompts 1-2; under prompts 3-4 (step 2) the ratio to
    the behaviour log-probs is then above 1 + clipHigh, so the clip acts, which it never does on step 1."""
    kernel = make_kernel()
    policy = kernel.policy
    completion = "The answer is four."
    rows = [prompt_row(q, completion, 1.0) for q in QUESTIONS]
    if behaviour == "sampler":
        for r in rows:
            r["behaviourLogprobs"] = token_logprobs(policy, completion, r["messages"]).tolist()
    seqs = encode_rows(policy, training_rows(rows))
    loss = LossSpec(
        type="ppo_clip", normalization="token_mean", normalizerConstant=1, clipLow=0.2, clipHigh=0.2, klCoef=0
    )
    optimizer = OptimizerSpec(learningRate=5e-2, schedule="constant", warmupSteps=0, maxGradNorm=1.0, weightDecay=0)
    request = TrainStepRequest.model_construct(loss=loss, optimizer=optimizer)
    plan = plan_steps([tuple(s.prompt) for s in seqs], [s.role for s in seqs], UpdateSpec(miniBatchPrompts=2))
    assert plan == [[0, 1], [2, 3]]
    fill_behaviour(policy, seqs, plan)
    first, second = (optimizer_step(policy, [seqs[i] for i in rows], request) for rows in plan)
    assert first.applied and second.applied
    assert first.clipFraction == 0.0
    assert second.clipFraction > 0.5


def two_role_rows() -> list[dict]:
    """A solver prompt, a proposer prompt, another solver prompt."""
    return [
        prompt_row(QUESTIONS[0], "four", 1.0, role="solver"),
        prompt_row(QUESTIONS[1], "Ask about four.", 0.5, role="proposer"),
        prompt_row(QUESTIONS[2], "Seven", -1.0, role="solver"),
    ]


def test_roles_in_turn_are_separate_steps(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", two_role_rows())
    request = {**step_request(batch), "update": {"roleOrder": ["proposer", "solver"]}}
    metrics = kernel.client.post("/v1/train/step", json=request).json()["metrics"]
    assert metrics["optimizerSteps"] == 2
    assert metrics["entropyByRole"].keys() == {"proposer", "solver"}
    assert metrics["stepsByRole"] == {"proposer": 1, "solver": 1}
    assert metrics["firstStepByRole"] == {"proposer": 1, "solver": 2}
    # Each role's own step: its tokens and the gradient norm of its mini-batch, which add up to the step's.
    assert sum(metrics["tokensByRole"].values()) == metrics["tokens"]
    assert min(metrics["tokensByRole"].values()) > 0
    assert metrics["gradNormByRole"].keys() == {"proposer", "solver"}
    assert min(metrics["gradNormByRole"].values()) > 0
    assert sum(metrics["gradNormByRole"].values()) / 2 == pytest.approx(metrics["gradNorm"])
    reversed_order = {
        **step_request(batch, key="run/iter-1/pol", base=1),
        "update": {"roleOrder": ["solver", "proposer"]},
    }
    metrics = kernel.client.post("/v1/train/step", json=reversed_order).json()["metrics"]
    assert metrics["firstStepByRole"] == {"solver": 1, "proposer": 2}


def test_a_mini_batch_of_both_roles_counts_for_each(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", two_role_rows())
    request = {**step_request(batch), "update": {"miniBatchPrompts": 2}}
    metrics = kernel.client.post("/v1/train/step", json=request).json()["metrics"]
    assert metrics["optimizerSteps"] == 2
    assert metrics["stepsByRole"] == {"solver": 2, "proposer": 1}
    assert metrics["firstStepByRole"] == {"solver": 1, "proposer": 1}


def test_a_role_listed_twice_is_refused(make_kernel, tmp_path):
    kernel = make_kernel()
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0)])
    request = {**step_request(batch), "update": {"roleOrder": ["solver", "solver"]}}
    response = kernel.client.post("/v1/train/step", json=request)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "update.roleOrder: Value error, roles may be listed once each; repeated: solver"
    )
