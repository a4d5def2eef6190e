"""The bodies of the kernel's HTTP responses on the trainer's routes (the sampler's are OpenAI's). The kernel
builds them as dicts; these models are their contract (contract.py), and test_contract.py holds the kernel's
actual responses to them, so neither can change without the other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .batch import Sha256Hex
from .requests import NonNegInt
from .step_metrics import TrainStepMetrics
from .strict import STRICT


class TrainStepResponse(BaseModel):
    model_config = STRICT
    idempotencyKey: str
    applied: bool
    """False when the key had been applied before and this is the first result again."""
    policyVersion: NonNegInt
    """The policy version after the step."""
    metrics: TrainStepMetrics


class PolicyState(BaseModel):
    """GET /v1/policies/{policy}, and a restore's answer."""

    model_config = STRICT
    policy: str
    policyVersion: NonNegInt
    lineage: str | None = None
    """The run lineage whose weights the kernel holds; null for base weights (kernels before lineages: absent)."""


class StepProgress(BaseModel):
    model_config = STRICT
    idempotencyKey: str
    miniBatches: NonNegInt
    miniBatchesDone: NonNegInt
    rows: NonNegInt
    rowsTrained: NonNegInt


class TrainProgress(BaseModel):
    """GET /v1/train/progress: how far the running step has got (answered beside it, never behind it). Rows
    count once per mini-batch they are trained in, so `rowsTrained` ends at `rows` (the batch's rows times the
    epochs); both counts are 0 until the kernel has read the batch."""

    model_config = STRICT
    object: Literal["train.progress"]
    policy: str
    step: StepProgress | None
    """null while no step runs."""


class CheckpointResponse(BaseModel):
    model_config = STRICT
    uri: str
    policyVersion: NonNegInt
    bytes: NonNegInt


class PublishResponse(BaseModel):
    model_config = STRICT
    uri: str
    policyVersion: NonNegInt
    format: Literal["lora", "full"]
    sha256: Sha256Hex | None = None
    """The digest of the snapshot's weights (state.weights_digest, also in its `COMPLETE` marker): a weight
    sync keys copies and adapter names by it, so weights rewritten at the same URI are never served as the
    old ones. Always sent; optional for kernels from before it."""


class ErrorDetail(BaseModel):
    model_config = STRICT
    type: str
    message: str
    code: str | None = None


class TrainerError(BaseModel):
    """Every failure's body: 4xx for requests that cannot succeed, 5xx for failures worth retrying."""

    model_config = STRICT
    error: ErrorDetail
