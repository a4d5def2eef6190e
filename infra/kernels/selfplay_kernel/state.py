"""Checkpoint, restore and publish of the policy, and loading a published snapshot for the sampler.

A checkpoint or snapshot is a directory-like location that counts only once its `COMPLETE` marker exists.
Saving removes an old marker first and writes the new one last, so a crash mid-save never leaves something
loadable that is half old, half new. The marker names the version, the run lineage and a hash of the weights;
a checkpoint's also the sha256 of each of its files, which a restore checks before it decodes anything: bytes
that rotted or were overwritten keep decoding (a safetensors file's tensor data is read as it is), and would
be restored as weights without it.
Both saves are idempotent: a complete one of the same version, lineage and weights is described again, not
rewritten. One of another version or another run's lineage is refused (409 `checkpoint_conflict`): its
location belongs to something else. One of the same version and lineage with other weights is the leftover of a
step applied again after its commit failed (never committed, since a committed iteration is not trained again):
it is rewritten, so the checkpoint a commit names always holds the weights the kernel holds.

Checkpoint layout: trainable.safetensors (trainable parameters: all of them, or the LoRA adapter's),
optimizer.pt, rng.pt, state.json (version, configuration, applied idempotency keys with first responses).
Under FSDP rank 0 writes the same files from gathered whole tensors, and every rank restores by reading them
all and keeping its shard (see `write_checkpoint`): one format for every world size.
Snapshot layout: a Hugging Face model directory with tokenizer (full fine-tuning) or a PEFT adapter directory
(LoRA, loadable by vLLM), plus selfplay_snapshot.json.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch
from safetensors.torch import load_file, save_file

from .atomic import check_clean
from .distributed import collective, everywhere, full, like
from .errors import KernelError, corrupt_object
from .lineage import check_restore
from .policy import Policy, load_base_model
from .storage import Location, ObjectNotFound, parse

log = logging.getLogger(__name__)

MARKER = "COMPLETE"
CHECKPOINT_FORMAT = "selfplay-kernel-checkpoint/1"
SNAPSHOT_META = "selfplay_snapshot.json"

T = TypeVar("T")


@contextmanager
def _staging(loc: Location) -> Iterator[Path]:
    """Where to write the files of `loc` (all but the marker): the directory itself when local, else a temp
    directory that is uploaded when the block ends without error."""
    if loc.path is not None:
        loc.path.mkdir(parents=True, exist_ok=True)
        yield loc.path
        return
    with tempfile.TemporaryDirectory(prefix="selfplay-kernel-") as tmp:
        yield Path(tmp)
        loc.upload_dir(Path(tmp), skip=frozenset({MARKER}))


def _size(stage: Path) -> int:
    return sum(f.stat().st_size for f in stage.rglob("*") if f.is_file() and f.name != MARKER)


def _file_digests(stage: Path) -> dict[str, str]:
    """sha256 of each file of a save (by its name relative to `stage`), for its marker."""
    return {
        f.relative_to(stage).as_posix(): _sha256(f) for f in sorted(stage.rglob("*")) if f.is_file() and f.name != MARKER
    }


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with file.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _check_digests(uri: str, files: Path, marker: dict) -> None:
    """422 for the first fetched file whose bytes are not those the marker names (a marker written before it named
    any has nothing to compare)."""
    for name, expected in sorted((marker.get("files") or {}).items()):
        path = files / name
        found = _sha256(path) if path.is_file() else "missing"
        if found != expected:
            raise corrupt_object(
                f"{uri}/{name} is corrupt: its sha256 is {found[:12]}, not the one its {MARKER} marker names "
                f"({expected[:12]}); delete or restore it"
            )


@contextmanager
def _fetched(loc: Location, what: str) -> Iterator[Path]:
    """The files of a complete checkpoint/snapshot as a local directory; 404 when it is not complete."""
    if not loc.exists(MARKER):
        raise KernelError(404, f"{what}_not_found", f"uri: no complete {what} at {loc.uri} (no {MARKER} marker)")
    with tempfile.TemporaryDirectory(prefix="selfplay-kernel-") as tmp:
        try:
            yield loc.download_dir(Path(tmp))
        except ObjectNotFound as err:
            raise KernelError(404, f"{what}_not_found", f"uri: {err}") from None


def _marker(loc: Location) -> dict | None:
    try:
        return json.loads(loc.read(MARKER))
    except ObjectNotFound:
        return None
    except ValueError:
        return {}


def weights_digest(policy: Policy) -> str:
    """sha256 of the trainable parameters (names, then raw bytes), what makes two saves of a version alike.
    Read from the serving model: the trained one in one process, rank 0's unsharded replica under FSDP (which
    every step and restore refresh), so no rank has to gather anything. Kept until the weights' next write
    (every step and restore writes under `policy.weights.write()`), so a publish and the sampler's load of
    the same version hash a large model once."""
    generation = policy.weights.generation
    if policy.digest is not None and policy.digest[0] == generation:
        return policy.digest[1]
    served = dict(policy.serving_model.named_parameters())
    digest = hashlib.sha256()
    for name in policy.trainable():
        digest.update(name.encode())
        digest.update(served[name].detach().to("cpu").contiguous().view(torch.uint8).numpy().tobytes())
    policy.digest = (generation, digest.hexdigest())
    return policy.digest[1]


def _existing(policy: Policy, loc: Location, what: str, version: int, digest: str) -> dict | None:
    """The marker of a complete save of exactly these weights (reuse it); None when there is none or it is
    a leftover of this lineage with other weights (rewrite it); 409 when it belongs to something else."""
    done = _marker(loc)
    if done is None:
        return None
    if done.get("policy") != policy.config.policy or done.get("policyVersion") != version or (
        done.get("lineage") != policy.lineage and done.get("lineage") is not None
    ):
        raise KernelError(
            409,
            "checkpoint_conflict",
            f"uri: {loc.uri} already holds a {what} of policy {done.get('policy')!r} version "
            f"{done.get('policyVersion')} of run {done.get('lineage')!r}, not version {version} of run "
            f"{policy.lineage!r}; it is left as it is",
        )
    if done.get("sha256") == digest:
        return done
    log.warning("%s at %s holds other weights of version %d: rewriting it", what, loc.uri, version)
    return None


def _check_version(policy: Policy, version: int | None, what: str) -> None:
    if version is not None and version != policy.version:
        raise KernelError(
            409,
            "version_conflict",
            f"version: policy {policy.config.policy!r} is at version {policy.version}, not {version} "
            f"(the {what} expected)",
        )


def checkpoint(policy: Policy, uri: str, version: int | None = None) -> dict:
    loc = parse(uri)
    with policy.ops:
        check_clean(policy)
        _check_version(policy, version, "checkpoint")
        with policy.weights.read():
            digest = weights_digest(policy)
        done = _existing(policy, loc, "checkpoint", policy.version, digest)
        if done is not None:
            return {"uri": uri, "policyVersion": policy.version, "bytes": done.get("bytes", 0)}
        return everywhere(policy, write_checkpoint, (uri, digest))


@collective
def write_checkpoint(policy: Policy, payload: tuple[str, str]) -> dict:
    """Every rank gathers the whole trainable parameters and optimizer state (under FSDP, one tensor at a time);
    rank 0 writes them, so a checkpoint is the same files whatever the world size and restores on any."""
    uri, digest = payload
    leader = policy.world.leader
    with policy.weights.read():
        tensors = {}
        for name, p in policy.trainable().items():
            whole = full(p.detach())
            if leader:
                tensors[name] = whole.to("cpu").contiguous()
        optimizer_state = _gathered(policy.optimizer.state_dict(), leader)
    if not leader:
        return {}
    loc = parse(uri)
    if _marker(loc) is not None:
        loc.delete(MARKER)
    with _staging(loc) as stage:
        save_file(tensors, str(stage / "trainable.safetensors"))
        torch.save(optimizer_state, stage / "optimizer.pt")
        torch.save(
            {
                "torch": torch.get_rng_state(),
                "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
                "python": random.getstate(),
            },
            stage / "rng.pt",
        )
        cfg = policy.config
        state = {
            "format": CHECKPOINT_FORMAT,
            "policy": cfg.policy,
            "policyVersion": policy.version,
            "lineage": policy.lineage,
            "step": policy.version,
            "model": cfg.model,
            "loraRank": cfg.lora_rank,
            "loraAlpha": cfg.lora_alpha,
            "loraTargetModules": list(cfg.lora_target_modules),
            "dtype": cfg.dtype,
            "responses": policy.responses,
        }
        (stage / "state.json").write_text(json.dumps(state))
        size = _size(stage)
        files = _file_digests(stage)
    marker = {
        "policy": cfg.policy,
        "policyVersion": policy.version,
        "lineage": policy.lineage,
        "sha256": digest,
        "bytes": size,
        "files": files,
    }
    loc.write(MARKER, json.dumps(marker).encode())
    log.info("checkpoint of version %d at %s (%d bytes)", policy.version, uri, size)
    return {"uri": uri, "policyVersion": policy.version, "bytes": size}


def _gathered(value, keep: bool):
    """An optimizer state dict with every sharded tensor made whole (on CPU; None where not `keep`)."""
    if isinstance(value, dict):
        return {k: _gathered(v, keep) for k, v in value.items()}
    if isinstance(value, list):
        return [_gathered(v, keep) for v in value]
    if isinstance(value, torch.Tensor):
        whole = full(value)
        return whole.to("cpu") if keep else None
    return value


def restore(policy: Policy, uri: str, lineage: str | None = None) -> dict:
    """Loads a complete checkpoint for the run `lineage` (default: the checkpoint's own), which takes the
    weights (lineage.check_restore)."""
    with policy.ops:
        return everywhere(policy, load_checkpoint, (uri, lineage))


@dataclass
class _Checkpoint:
    state: dict
    tensors: dict[str, torch.Tensor]
    optimizer: dict
    rng: dict


def _read_checkpoint(policy: Policy, uri: str) -> _Checkpoint:
    """A complete checkpoint of this kernel's policy and model, read and checked; KernelError when not."""
    loc = parse(uri)
    with _fetched(loc, "checkpoint") as files:
        _check_digests(uri, files, _marker(loc) or {})
        state = _decoded(uri, "state.json", lambda: json.loads((files / "state.json").read_text()))
        _check_compatible(policy, state, uri)
        tensors = _decoded(uri, "trainable.safetensors", lambda: load_file(str(files / "trainable.safetensors")))
        params = policy.trainable()
        if set(tensors) != set(params) or any(tensors[n].shape != p.shape for n, p in params.items()):
            raise KernelError(
                400, "checkpoint_invalid", f"uri: the parameters in {uri} do not match this kernel's model"
            )
        optimizer_state = _decoded(
            uri, "optimizer.pt", lambda: torch.load(files / "optimizer.pt", map_location="cpu", weights_only=True)
        )
        rng = _decoded(uri, "rng.pt", lambda: torch.load(files / "rng.pt", map_location="cpu", weights_only=True))
    return _Checkpoint(state, tensors, optimizer_state, rng)


def _decoded(uri: str, name: str, read: Callable[[], T]) -> T:
    """`read()` of the file `name` of the complete save at `uri`, already fetched: a file that does not decode
    (or is missing although the marker says the save is complete) is corrupt (422), not an outage; running out
    of memory is neither."""
    try:
        return read()
    except (MemoryError, torch.OutOfMemoryError):
        raise
    except Exception as err:
        raise corrupt_object(f"{uri}/{name} is corrupt: {type(err).__name__}: {err}; delete or restore it") from err


def _read_owned_checkpoint(policy: Policy, uri: str, lineage: str | None) -> tuple[_Checkpoint, str | None]:
    """The checkpoint and the run that takes the weights with it; 409 when that run may not (check_restore)."""
    ckpt = _read_checkpoint(policy, uri)
    owner = lineage or ckpt.state.get("lineage")
    if owner is not None:
        check_restore(policy, owner)
    return ckpt, owner


@collective
def load_checkpoint(policy: Policy, payload: tuple[str, str | None]) -> dict:
    """Every rank reads the whole checkpoint (whatever world size wrote it) and keeps its shard of each
    tensor; rank 0 then refreshes its replica."""
    uri, lineage = payload
    with policy.weights.write():
        ckpt, owner = policy.world.agree(lambda: _read_owned_checkpoint(policy, uri, lineage))
        params = policy.trainable()
        ordered = list(params.values())  # the optimizer's order: its state is keyed by these indices
        for index, entry in ckpt.optimizer.get("state", {}).items():
            for key, value in entry.items():
                if isinstance(value, torch.Tensor):
                    entry[key] = like(value, ordered[int(index)])
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(like(ckpt.tensors[name].to(p.dtype), p))
        policy.optimizer.load_state_dict(ckpt.optimizer)
        torch.set_rng_state(ckpt.rng["torch"])
        if ckpt.rng["cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(ckpt.rng["cuda"])
        random.setstate(_as_tuple(ckpt.rng["python"]))
        policy.version = int(ckpt.state["policyVersion"])
        policy.responses = dict(ckpt.state.get("responses", {}))
        policy.lineage = owner
        policy.dirty = None
        policy.refresh_replica()
    log.info("restored version %d from %s for run %s", policy.version, uri, owner)
    return {"policy": policy.config.policy, "policyVersion": policy.version, "lineage": owner}


def _as_tuple(value):
    """random.setstate wants the tuples that serialisation may have turned into lists."""
    return tuple(_as_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value


def _check_compatible(policy: Policy, state: dict, uri: str) -> None:
    cfg = policy.config
    if state.get("format") != CHECKPOINT_FORMAT:
        raise KernelError(400, "checkpoint_invalid", f"uri: {uri} is not a {CHECKPOINT_FORMAT} checkpoint")
    if state.get("policy") != cfg.policy:
        raise KernelError(
            400, "checkpoint_invalid", f"uri: {uri} holds policy {state.get('policy')!r}, not {cfg.policy!r}"
        )
    if state.get("loraRank") != cfg.lora_rank:
        raise KernelError(
            400,
            "checkpoint_invalid",
            f"uri: {uri} was written with LoRA rank {state.get('loraRank')}; this kernel runs rank {cfg.lora_rank}",
        )


def publish(policy: Policy, uri: str, version: int) -> dict:
    loc = parse(uri)
    fmt = "lora" if policy.is_lora else "full"
    with policy.ops, policy.weights.read():
        check_clean(policy)
        _check_version(policy, version, "snapshot")
        digest = weights_digest(policy)
        done = _existing(policy, loc, "snapshot", version, digest)
        if done is not None:
            return {"uri": uri, "policyVersion": version, "format": done.get("format", fmt), "sha256": digest}
        if _marker(loc) is not None:
            loc.delete(MARKER)
        with _staging(loc) as stage:
            policy.serving_model.save_pretrained(stage)
            if not policy.is_lora:
                policy.tokenizer.save_pretrained(stage)
            meta = {
                "policy": policy.config.policy,
                "policyVersion": version,
                "lineage": policy.lineage,
                "sha256": digest,
                "format": fmt,
                "baseModel": policy.config.model,
            }
            (stage / SNAPSHOT_META).write_text(json.dumps(meta))
        loc.write(MARKER, json.dumps(meta).encode())
        log.info("published version %d at %s (%s)", version, uri, fmt)
        return {"uri": uri, "policyVersion": version, "format": fmt, "sha256": digest}


@dataclass
class Snapshot:
    """A published snapshot loaded for sampling, with the digest of its weights (None: published before
    digests, so only its version says which weights it holds)."""

    model: torch.nn.Module
    sha256: str | None


def load_snapshot(policy: Policy, uri: str, version: int, sha256: str | None = None) -> Snapshot:
    """A published snapshot as a ready-to-sample model; 409 when it is not of `version`, or not of the
    weights `sha256` (rewritten since that publish: a step applied again). A snapshot from before digests
    has none to compare, and loads as before."""
    loc = parse(uri)
    with _fetched(loc, "snapshot") as files:
        meta = _decoded(uri, SNAPSHOT_META, lambda: json.loads((files / SNAPSHOT_META).read_text()))
        if meta.get("policyVersion") != version:
            raise KernelError(
                409,
                "version_conflict",
                f"version: the snapshot at {uri} is version {meta.get('policyVersion')}, not {version}",
            )
        held = meta.get("sha256")
        if sha256 is not None and held is not None and held != sha256:
            raise KernelError(
                409,
                "snapshot_changed",
                f"sha256: the snapshot at {uri} holds version {version}'s weights {held[:12]}, not {sha256[:12]}: "
                "it was published again with other weights (a step applied again) since the publish that named them",
            )
        if (files / "adapter_config.json").exists():
            from peft import PeftModel

            base = load_base_model(policy.config.model, policy.device, policy.dtype)
            model = _decoded(uri, "adapter", lambda: PeftModel.from_pretrained(base, str(files)).merge_and_unload())
        elif (files / "config.json").exists():
            model = _decoded(uri, "model", lambda: load_base_model(str(files), policy.device, policy.dtype))
        else:
            raise KernelError(400, "snapshot_invalid", f"uri: {uri} holds neither a model nor a LoRA adapter")
    model.eval()
    model.requires_grad_(False)
    return Snapshot(model, held)
