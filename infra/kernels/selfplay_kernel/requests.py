"""The bodies of the kernel's HTTP requests that are not the batch's rows (batch.py) or the update plan
(minibatch.py): a train step's request and the policy operations'. They are part of the contract's source
(contract.py, strict.py), so each field's docstring is what the TypeScript side reads about it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, model_validator

from .batch import BatchRef, Sha256Hex
from .minibatch import UpdateSpec
from .strict import STRICT

NonNegInt = Annotated[int, Field(ge=0)]
NonEmpty = Annotated[str, Field(min_length=1)]


class LossSpec(BaseModel):
    model_config = STRICT
    type: Literal["ppo_clip", "reinforce"]
    """PPO-clip surrogate on the ratio to behaviour log-probs, or plain REINFORCE."""
    normalization: Literal["dr_grpo", "token_mean", "sequence_mean"]
    """dr_grpo: token sum / constant; token_mean: GRPO's mean over tokens; sequence_mean: mean per sequence."""
    normalizerConstant: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    """Dr.GRPO's constant (the generation length budget)."""
    clipLow: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    clipHigh: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    klCoef: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    # A default, unlike the rest: clients of the contract before the entropy term send none.
    entropyCoef: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    """Weight of the entropy bonus: the loss subtracts entropyCoef times each loss token's next-token entropy.
    Absent or 0 turns it off (the entropy is still measured). Sent only when positive, so a kernel from before
    the field still takes every other run's steps."""
    # The off-policy options (losses.py), defaults off: clients before them send none.
    dualClip: Annotated[float, Field(gt=1, allow_inf_nan=False)] | None = None
    """Dual-clip (verl's `clip_ratio_c`, > 1, ppo_clip only): for a negative advantage the token's loss is capped
    at -dualClip × A, so a stale row's huge ratio cannot dominate. Absent: off."""
    k3Clamp: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    """An upper bound on each token's k3 KL value (verl clamps to 10), with no gradient beyond. Absent: none."""
    offPolicy: Literal["ppo_ratio", "tis"] = "ppo_ratio"
    """The off-policy correction. `ppo_ratio` (absent): the PPO ratio to the behaviour log-probs. `tis`: the
    ratio to the kernel's own log-probs of the batch at the step's start (π_old), each token weighted by the
    truncated importance weight min(π_old / μ, importanceCap), μ the behaviour log-prob."""
    importanceCap: Annotated[float, Field(ge=1, allow_inf_nan=False)] = 2.0
    """C of `tis` (≥ 1)."""

    @model_validator(mode="after")
    def _dual_clip_needs_ppo(self) -> LossSpec:
        if self.dualClip is not None and self.type != "ppo_clip":
            raise ValueError("dualClip: dual-clip caps the PPO surrogate; it needs type ppo_clip")
        return self


class OptimizerSpec(BaseModel):
    model_config = STRICT
    learningRate: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    """0 is a negative control (a run that must not learn), not a mistake."""
    schedule: Literal["constant", "warmup_constant"]
    warmupSteps: NonNegInt
    maxGradNorm: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    weightDecay: Annotated[float, Field(ge=0, allow_inf_nan=False)]


class TrainStepRequest(BaseModel):
    """POST /v1/train/step: the optimizer steps of a batch given by reference, applied at most once per key."""

    model_config = STRICT
    idempotencyKey: NonEmpty
    """`{runId}/iter-{n}/{policy}`: the kernel applies it at most once."""
    runId: NonEmpty
    iteration: NonNegInt
    policy: NonEmpty
    baseVersion: NonNegInt
    """The policy version the batch was sampled from; the kernel refuses a batch for another version (409)."""
    batch: BatchRef
    loss: LossSpec
    optimizer: OptimizerSpec
    update: UpdateSpec | None = None
    """Absent: the whole batch in one optimizer step (clients from before mini-batches send none)."""
    maxStaleness: NonNegInt | None = None
    """The run's staleness bound (`pipeline.maxStaleness`): a row whose `behaviourVersion` is more than this many
    versions below `baseVersion` is refused (400, staleness.py). Absent (clients before it): not checked, only
    reported (`maxRowStaleness`)."""


class UriRequest(BaseModel):
    model_config = STRICT
    uri: NonEmpty


class VersionedUriRequest(UriRequest):
    version: NonNegInt


class PublishRequest(VersionedUriRequest):
    """Writes a sampler snapshot of the CURRENT weights, which must be at `version` (else 409): a PEFT adapter
    directory for LoRA policies (loadable by vLLM `/v1/load_lora_adapter`), or a full Hugging Face model
    directory with tokenizer (loadable by SGLang `/update_weights_from_disk` and the kernel's sampler).
    Idempotent like checkpoints."""


class SamplerLoadRequest(VersionedUriRequest):
    """POST /v1/sampler/load: the kernel's sampler serves a published snapshot (or the live weights)."""

    pin: bool = False
    """Serve a copy of the snapshot even when the live policy is at its version: the live weights change with
    the next train step, and a run sampling while it trains (pipeline.maxStaleness >= 1) must keep this version."""
    lineage: NonEmpty | None = None
    """The run loading (lineage.py): refused while the sampler serves another run's weights. Absent: older
    clients."""
    sha256: Sha256Hex | None = None
    """The digest of the weights wanted (the one their publish answered): a snapshot at `uri` with other
    weights (rewritten since) is refused (409 `snapshot_changed`), and a copy of this version held with
    other weights is reloaded. Absent (older clients, snapshots committed before digests): the version alone
    says which weights, as before."""


class RestoreRequest(UriRequest):
    """Loads a complete checkpoint: afterwards the kernel is exactly at the checkpoint's version."""

    lineage: NonEmpty | None = None
    """The run lineage taking the weights; default: the checkpoint's own (clients before lineages send none)."""


class CheckpointRequest(UriRequest):
    """Saves weights, optimizer state, step, version and RNG state. Idempotent: a complete checkpoint at `uri`
    for the same version is left as it is and described again."""

    version: NonNegInt | None = None
    """The version the caller expects to save (409 when the kernel is at another); a complete checkpoint at
    `uri` of another version or another run's lineage is refused (409 `checkpoint_conflict`). Absent (clients
    before it): whatever the kernel holds."""
