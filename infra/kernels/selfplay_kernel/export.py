"""A committed checkpoint as a standard Hugging Face model directory (`selfplay export`).

The checkpoint holds the trainable parameters only (all of them, or a LoRA adapter's) and names its base model
and LoRA settings (state.py). The policy is rebuilt as the kernel builds it (`Policy.load`), the parameters
loaded, and written with `save_pretrained`: config.json, model.safetensors, generation_config.json and the
tokenizer, which transformers and vLLM load as they are. A LoRA policy is written as a PEFT adapter (with the
tokenizer and the base model's generation config) or, with `merge_lora`, merged into the base weights.
`selfplay_export.json` says where it came from.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import load_file

from .policy import KernelConfig, Policy
from .state import CHECKPOINT_FORMAT, _fetched, _staging
from .storage import parse

EXPORT_META = "selfplay_export.json"


class ExportError(Exception):
    """The checkpoint cannot be exported as asked; the message says why and what to do."""


def load_checkpoint_policy(checkpoint_uri: str, model: str | None = None) -> tuple[Policy, dict]:
    """The policy a checkpoint holds, on CPU, and its state.json. `model` replaces the base model the
    checkpoint names (the same model elsewhere: another path, a mirror)."""
    with _fetched(parse(checkpoint_uri), "checkpoint") as files:
        try:
            state = json.loads((files / "state.json").read_text())
        except (OSError, ValueError) as err:
            raise ExportError(f"--checkpoint {checkpoint_uri}: state.json is unreadable ({err})") from None
        if state.get("format") != CHECKPOINT_FORMAT:
            raise ExportError(f"--checkpoint {checkpoint_uri}: not a {CHECKPOINT_FORMAT} checkpoint")
        tensors = load_file(str(files / "trainable.safetensors"))
    config = KernelConfig(
        model=model or state["model"],
        policy=state["policy"],
        device="cpu",
        dtype=state.get("dtype", "float32"),
        lora_rank=int(state.get("loraRank", 0)),
        lora_alpha=float(state.get("loraAlpha", 16.0)),
        lora_target_modules=tuple(state.get("loraTargetModules", ("all-linear",))),
    )
    policy = Policy.load(config)
    params = policy.trainable()
    if set(tensors) != set(params) or any(tensors[n].shape != p.shape for n, p in params.items()):
        raise ExportError(
            f"--checkpoint {checkpoint_uri}: its parameters do not match the model {config.model}; "
            "pass --model with the base model the run trained"
        )
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(tensors[name].to(p.dtype))
    policy.version = int(state["policyVersion"])
    return policy, state


def export(checkpoint_uri: str, out_uri: str, merge_lora: bool = False, model: str | None = None, meta: dict | None = None) -> dict:
    """Writes the checkpoint's policy to `out_uri` (a directory or s3://) and says what it wrote."""
    policy, state = load_checkpoint_policy(checkpoint_uri, model)
    net = policy.model
    if policy.is_lora and merge_lora:
        net = net.merge_and_unload()
    fmt = "lora-adapter" if policy.is_lora and not merge_lora else "full"
    described = {
        **(meta or {}),
        "policy": policy.config.policy,
        "policyVersion": policy.version,
        "lineage": state.get("lineage"),
        "checkpoint": checkpoint_uri,
        "baseModel": policy.config.model,
        "format": fmt,
    }
    with _staging(parse(out_uri)) as stage:
        net.save_pretrained(stage)
        policy.tokenizer.save_pretrained(stage)
        generation = getattr(net.get_base_model() if fmt == "lora-adapter" else net, "generation_config", None)
        if generation is not None:
            generation.save_pretrained(stage)
        (stage / EXPORT_META).write_text(json.dumps(described, indent=2))
        files = sorted(str(f.relative_to(stage)) for f in Path(stage).rglob("*") if f.is_file())
    return {**described, "out": out_uri, "files": files}
