"""The HTTP contract is defined once: contracts/kernel-api.schema.json is what the kernel's models export, and
the kernel's actual answers are what its response models say (strict: a field sent but not declared fails as
one declared but not sent)."""

from pathlib import Path

from conftest import POLICY, row, step_request, write_batch

from selfplay_kernel import responses
from selfplay_kernel.contract import contract_json, contract_schema

COMMITTED = Path(__file__).resolve().parents[3] / "contracts" / "kernel-api.schema.json"

# The step's metrics, in the order the kernel has always sent them (before the trainer was split in parts).
METRICS = [
    "loss",
    "kl",
    "clipFraction",
    "dualClipFraction",
    "importanceWeightMean",
    "importanceWeightMax",
    "importanceWeightTruncatedFraction",
    "entropy",
    "entropyByRole",
    "gradNorm",
    "optimizerSteps",
    "stepsByRole",
    "firstStepByRole",
    "tokensByRole",
    "gradNormByRole",
    "tokens",
    "skippedSteps",
    "rowsRetokenized",
    "tokenExactFraction",
    "maxRowStaleness",
    "seconds",
]


def test_the_committed_schema_is_what_the_models_export():
    """Fails after a change to a request or response model until `npm run gen:kernel-contract` is run (which
    also regenerates the TypeScript side)."""
    assert COMMITTED.read_text(encoding="utf-8") == contract_json()


def test_the_schema_carries_the_fields_docstrings_and_defaults():
    defs = contract_schema()["$defs"]
    assert "at most once" in defs["TrainStepRequest"]["properties"]["idempotencyKey"]["description"]
    assert defs["LossSpec"]["properties"]["importanceCap"]["default"] == 2.0
    assert "importanceCap" not in defs["LossSpec"]["required"]
    assert defs["TrainStepMetrics"]["required"] == ["loss", "kl", "clipFraction", "gradNorm", "tokens", "seconds"]


def test_the_kernels_answers_are_what_the_response_models_say(make_kernel, tmp_path):
    kernel = make_kernel()
    client = kernel.client
    assert responses.TrainProgress.model_validate(client.get("/v1/train/progress").json()).step is None
    batch = write_batch(tmp_path / "b.jsonl", [row("four", 1.0), row("five", -1.0, role="proposer")])
    request = step_request(batch, key="run/iter-0/pol")
    stepped = client.post("/v1/train/step", json=request).json()
    responses.TrainStepResponse.model_validate(stepped)
    assert list(stepped["metrics"]) == METRICS
    again = client.post("/v1/train/step", json=request).json()
    assert responses.TrainStepResponse.model_validate(again).applied is False
    assert responses.PolicyState.model_validate(client.get(f"/v1/policies/{POLICY}").json()).lineage == "run"
    uri = str(tmp_path / "ckpt")
    saved = client.post(f"/v1/policies/{POLICY}/checkpoint", json={"uri": uri}).json()
    responses.CheckpointResponse.model_validate(saved)
    responses.PolicyState.model_validate(client.post(f"/v1/policies/{POLICY}/restore", json={"uri": uri}).json())
    snapshot = {"uri": str(tmp_path / "snap"), "version": 1}
    responses.PublishResponse.model_validate(client.post(f"/v1/policies/{POLICY}/publish", json=snapshot).json())
    refused = client.post("/v1/policies/other/checkpoint", json={"uri": uri})
    assert refused.status_code == 404
    assert responses.TrainerError.model_validate(refused.json()).error.type == "policy_not_found"
