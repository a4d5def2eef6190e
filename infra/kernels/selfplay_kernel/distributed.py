"""Training on several GPUs (or CPU processes) under `torchrun`: FSDP2 over the policy, and the control protocol
by which rank 0, the only rank serving HTTP, has every rank run the same operation.

Without torchrun (WORLD_SIZE unset or 1) the kernel is one process and every helper here is the identity: the
single-process kernel runs exactly the code it ran before.

Sharding: `fully_shard` (FSDP2) over every transformer block (`_no_split_modules` of the Hugging Face model)
and then the root, so parameters, gradients and AdamW state are split over the ranks (LoRA: the adapters'
and the frozen base weights alike). Every rank computes its rows' terms of the batch objective with the
batch-wide sequence weights (losses.py), so the SUM over ranks of their gradients is the single-process
gradient; FSDP averages what it reduce-scatters, so each rank back-propagates its terms times the world size
(`gradient_scale`). (A divide factor of 1 would say the same, but needs a PREMUL_SUM that gloo lacks.)

Control protocol (a gloo group of its own, whose timeout is long because followers wait on it between
requests for as long as rollouts take): rank 0 broadcasts one `[operation, payload]` pair with
`broadcast_object_list` and then runs the operation itself; every other rank loops on receiving a pair and
running it (`follow`). Operations are the functions registered with `@collective` (the train step, checkpoint,
restore); the pair names one by its qualified name and carries a JSON-able payload. `STOP` ends the loop. An
operation's preparation (reading a batch or checkpoint) ends with `agree`, so a failure on any rank fails the
operation on all of them before any collective of the model, and no rank is left waiting.
"""

from __future__ import annotations

import datetime
import logging
import math
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager as ContextManager
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from .errors import KernelError

if TYPE_CHECKING:
    from .policy import Policy

log = logging.getLogger(__name__)

STOP = "stop"
# How long a follower waits for rank 0's next operation (a rollout phase can take hours).
CONTROL_TIMEOUT = datetime.timedelta(days=365)

T = TypeVar("T")


@dataclass(frozen=True)
class World:
    """This process's place among the ranks; World() is the single-process kernel."""

    rank: int = 0
    size: int = 1
    control: Any = None  # the gloo process group of the control protocol and the metrics

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def leader(self) -> bool:
        return self.rank == 0

    def passes(self, counts: Sequence[int], micro_batch_size: int) -> int:
        """Forward (and backward) passes every rank runs when rank r has counts[r] items: the most any rank
        needs. FSDP's collectives run once per pass, so a rank with fewer items runs padding passes."""
        return max(math.ceil(c / micro_batch_size) for c in counts)

    @property
    def gradient_scale(self) -> float:
        """What a rank's loss terms are multiplied by before backward: FSDP's reduce-scatter averages over the
        ranks, and the batch's gradient is their sum."""
        return float(self.size)

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sums over the ranks (float64 on the control group)."""
        if not self.distributed:
            return list(values)
        t = torch.tensor(list(values), dtype=torch.float64)
        torch.distributed.all_reduce(t, group=self.control)
        return t.tolist()

    def max(self, values: Sequence[float]) -> list[float]:
        """Element-wise maxima over the ranks."""
        if not self.distributed:
            return list(values)
        t = torch.tensor(list(values), dtype=torch.float64)
        torch.distributed.all_reduce(t, op=torch.distributed.ReduceOp.MAX, group=self.control)
        return t.tolist()

    def agree(self, fn: Callable[[], T]) -> T:
        """Runs `fn` on this rank; if it failed on any rank, raises that failure (the lowest rank's) on every
        rank, as a KernelError, so no rank goes on into a collective the others never reach."""
        try:
            result, failure = fn(), None
        except KernelError as err:
            result, failure = None, (err.status, err.type, err.message, err.code)
        except Exception as err:
            log.exception("rank %d failed", self.rank)  # the traceback, which the KernelError below loses
            result, failure = None, (500, "internal", f"{type(err).__name__}: {err}", None)
        if self.distributed:
            failures: list[Any] = [None] * self.size
            torch.distributed.all_gather_object(failures, failure, group=self.control)
            failure = next((f for f in failures if f is not None), None)
        if failure is not None:
            raise KernelError(*failure)
        return result  # type: ignore[return-value]


def init_world(device: str) -> World:
    """Joins the process group that torchrun (or any launcher setting RANK, WORLD_SIZE, MASTER_ADDR,
    MASTER_PORT) describes; World() without one. NCCL for CUDA tensors and gloo for CPU ones."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size <= 1:
        return World()
    cuda = device == "cuda" or (device == "auto" and torch.cuda.is_available())
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    torch.distributed.init_process_group(backend="cpu:gloo,cuda:nccl" if cuda else "gloo")
    control = torch.distributed.new_group(backend="gloo", timeout=CONTROL_TIMEOUT)
    world = World(rank=torch.distributed.get_rank(), size=torch.distributed.get_world_size(), control=control)
    log.info("rank %d of %d (%s)", world.rank, world.size, "nccl" if cuda else "gloo")
    return world


def device_of(world: World, device: torch.device) -> torch.device:
    """This rank's device: its own GPU (LOCAL_RANK) under torchrun."""
    if world.distributed and device.type == "cuda":
        return torch.device("cuda", torch.cuda.current_device())
    return device


def shard(model: torch.nn.Module, device: torch.device) -> None:
    """FSDP2 over `model` in place: each transformer block its own unit (gathered for its forward and freed
    after), the rest (embeddings, final norm, head, tied or not) in the root unit."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (torch.distributed.get_world_size(),))
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    blocks = set(getattr(base, "_no_split_modules", None) or [])
    for module in list(model.modules()):
        if type(module).__name__ in blocks:
            fully_shard(module, mesh=mesh)
    fully_shard(model, mesh=mesh)


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a (possibly) sharded one; a collective on every rank for a DTensor."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def local(t: torch.Tensor) -> torch.Tensor:
    """This rank's part of a (possibly) sharded tensor, sharing its memory: a DTensor's local shard, else `t`."""
    from torch.distributed.tensor import DTensor

    return t.to_local() if isinstance(t, DTensor) else t


def like(whole: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """`whole` laid out as `target` is: this rank's shard for a DTensor target (sliced locally, every rank holds
    `whole`), else `whole` itself."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(target, DTensor) and whole.shape == target.shape:
        return distribute_tensor(
            whole.to(target.device), target.device_mesh, target.placements, src_data_rank=None
        )
    return whole


def scalar(t: torch.Tensor) -> float:
    """A float of a 0-d tensor that may be a replicated DTensor (clip_grad_norm_'s answer under FSDP)."""
    return float(full(t))


_OPERATIONS: dict[str, Callable[[Policy, Any], Any]] = {}


def collective(fn: Callable[[Policy, Any], T]) -> Callable[[Policy, Any], T]:
    """Registers `fn(policy, payload)` as an operation every rank runs (see `everywhere`)."""
    _OPERATIONS[f"{fn.__module__}.{fn.__qualname__}"] = fn
    return fn


def everywhere(policy: Policy, fn: Callable[[Policy, Any], T], payload: Any) -> T:
    """Rank 0: has every rank run the @collective `fn` on `payload`, runs it here and returns its result. The
    caller holds `policy.ops`, so operations reach the followers one at a time, in order."""
    name = f"{fn.__module__}.{fn.__qualname__}"
    if name not in _OPERATIONS:
        raise RuntimeError(f"{name} is not a @collective operation")
    if policy.world.distributed:
        torch.distributed.broadcast_object_list([name, payload], src=0, group=policy.world.control)
    return fn(policy, payload)


def follow(policy: Policy, serving: Callable[[str], ContextManager[None]] = lambda _: nullcontext()) -> None:
    """A rank other than 0: runs rank 0's operations until it says STOP. A failed operation failed on every
    rank alike (`agree`), and rank 0 answers it; this rank logs it and waits for the next. Each runs holding
    this rank's `policy.ops` inside `serving(name)`, as rank 0's do, so this rank's watchdog sees one that
    hangs here (a NCCL call stuck on this rank) and its liveness probe fails."""
    while True:
        message: list[Any] = [None, None]
        torch.distributed.broadcast_object_list(message, src=0, group=policy.world.control)
        name, payload = message
        if name == STOP:
            log.info("rank %d: stopped by rank 0", policy.world.rank)
            return
        try:
            with serving(name), policy.ops:
                _OPERATIONS[name](policy, payload)
        except KernelError as err:
            log.warning("rank %d: %s failed: %s", policy.world.rank, name, err.message)


def stop_followers(world: World) -> None:
    """Rank 0, on shutdown: ends the followers' loops."""
    if world.distributed and world.leader:
        torch.distributed.broadcast_object_list([STOP, None], src=0, group=world.control)
