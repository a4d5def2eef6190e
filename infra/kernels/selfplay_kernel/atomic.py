"""A train step is all or nothing. A request of several mini-batches takes one optimizer step per mini-batch and
becomes a new version only at the end; if mini-batch k >= 2 fails (a CUDA out-of-memory on the longest rows),
the earlier steps have already moved the weights and AdamW's state while the version has not, and the retry
of the same request would apply every mini-batch again on top of them.

So, just before the first optimizer step of a request (a step pre-hook: a request that fails earlier changed
nothing and costs nothing), the kernel copies to CPU memory everything an optimizer step changes: the
optimizer's parameters (the trainable ones), its per-parameter state and its groups' settings. On any failure
inside the step it copies them back, in place, and drops the state the failed step created, so the policy is
bit for bit what it was and the retry applies the request once. Under FSDP each rank copies and restores its
own shards; the ranks learn of a failure on any of them at the end of every optimizer step
(trainer._apply), so they roll back together.

The copy costs host memory: three times the trainable parameters' bytes (the parameters, and AdamW's two
moments of the same size), divided over the ranks. Above `--step-snapshot-max-gib` per rank (default 16: full
fine-tuning of a 1.4 B model in float32 or 2.8 B in bfloat16 on one rank, LoRA on any) no copy is taken; a
failure after the first optimizer step then marks the policy dirty, and every step, checkpoint and publish is
refused (409 `policy_dirty`, which the update activity answers with a restore of the committed checkpoint)
until a restore replaces the weights.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from .distributed import local
from .errors import KernelError

if TYPE_CHECKING:
    from .policy import Policy

GIB = 1 << 30
# AdamW keeps two tensors the size of each parameter (its moments): a copy of a step's changes is three times
# the parameters.
COPIES_PER_PARAMETER = 3


def _on_cpu(t: torch.Tensor) -> torch.Tensor:
    """A CPU copy of this rank's part of `t`."""
    return local(t).detach().to("cpu", copy=True)


@dataclass
class StepSnapshot:
    """What an optimizer's steps change, copied to CPU memory: its parameters (this rank's shards), each one's
    state (None where the optimizer has none yet) and each parameter group's settings."""

    params: list[torch.Tensor]
    state: list[dict[str, Any] | None]
    settings: list[dict[str, Any]]

    @classmethod
    def take(cls, optimizer: torch.optim.Optimizer) -> StepSnapshot:
        params = _parameters(optimizer)
        states = [optimizer.state.get(p) for p in params]
        return cls(
            params=[_on_cpu(p) for p in params],
            state=[
                None if s is None else {k: _on_cpu(v) if isinstance(v, torch.Tensor) else v for k, v in s.items()}
                for s in states
            ],
            settings=[{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups],
        )

    def restore(self, optimizer: torch.optim.Optimizer) -> None:
        """Copies everything back into the live tensors (no new device memory) and drops the state of the
        parameters that had none, and every gradient."""
        with torch.no_grad():
            for p, saved, state in zip(_parameters(optimizer), self.params, self.state):
                local(p).copy_(saved)
                p.grad = None
                if state is None:
                    optimizer.state.pop(p, None)
                    continue
                live = optimizer.state[p]
                for key, value in state.items():
                    if isinstance(value, torch.Tensor):
                        local(live[key]).copy_(value)
                    else:
                        live[key] = value
        for group, settings in zip(optimizer.param_groups, self.settings):
            group.update(settings)


def _parameters(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


def snapshot_bytes(policy: Policy) -> int:
    """The host memory one rank's snapshot takes: the same on every rank (computed from the whole parameters,
    which a DTensor's numel() gives), so every rank makes the same choice."""
    whole = sum(p.numel() * p.element_size() for p in _parameters(policy.optimizer))
    return COPIES_PER_PARAMETER * whole // policy.world.size


@contextmanager
def atomic_step(policy: Policy) -> Iterator[None]:
    """The block of a request's optimizer steps: on a failure after the first of them, the policy is rolled back
    to what it was before it (or, without a snapshot, marked dirty) and the failure raised as a KernelError that
    says which. The caller holds the weights' write lock."""
    optimizer = policy.optimizer
    limit = policy.config.step_snapshot_max_gib * GIB
    size = snapshot_bytes(policy)
    began: list[StepSnapshot | None] = []

    def before_first_step(*_) -> None:
        if not began:
            began.append(StepSnapshot.take(optimizer) if size <= limit else None)

    hook = optimizer.register_step_pre_hook(before_first_step)
    try:
        yield
    except Exception as err:
        if not began:
            raise
        failure = err if isinstance(err, KernelError) else KernelError(500, "internal", f"{type(err).__name__}: {err}")
        snapshot = began[0]
        if snapshot is not None:
            snapshot.restore(optimizer)
            outcome = f"rolled back: the policy is still at version {policy.version}, and the step can be retried"
        else:
            policy.dirty = (
                f"a step failed after moving the weights of version {policy.version} ({failure.message}), and no "
                f"snapshot could undo it (one takes {size / GIB:.1f} GiB per rank, over --step-snapshot-max-gib "
                f"{policy.config.step_snapshot_max_gib:g})"
            )
            outcome = "the policy is dirty until a checkpoint is restored"
        raise KernelError(failure.status, failure.type, f"{failure.message} ({outcome})", failure.code) from err
    finally:
        hook.remove()


def check_clean(policy: Policy) -> None:
    """409 `policy_dirty` while the weights are those of a failed step that could not be undone: training on
    them, or saving them as their version, would make them a version's weights."""
    if policy.dirty is not None:
        name = policy.config.policy
        raise KernelError(
            409,
            "policy_dirty",
            f"policy {name!r}: {policy.dirty}; restore a checkpoint (POST /v1/policies/{name}/restore) first",
        )
