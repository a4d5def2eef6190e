"""The one policy a kernel process holds: model, tokenizer, optimizer, version and applied step keys.

Training steps and state operations (checkpoint, restore, publish, sampler load) run one at a time under
`ops`; the weights themselves sit behind a read/write lock so sampling (readers) never sees a half-applied
step (writer), while several sampling batches and a checkpoint may read together.

Under torchrun (distributed.py) the trained model is sharded with FSDP2 over the ranks, and rank 0 also keeps
an unsharded replica of it, updated after every step and restore, from which it samples and publishes: sampling
then needs no other rank, and a publish no gathering.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from .distributed import World, device_of, full, shard
from .progress import StepProgress

log = logging.getLogger(__name__)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class KernelConfig:
    """What `serve` was started with."""

    model: str
    policy: str
    device: str = "auto"
    dtype: str = "float32"
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_target_modules: tuple[str, ...] = ("all-linear",)
    micro_batch_size: int = 8
    seed: int = 0
    max_batch_rows: int = 64
    # The largest CPU copy of a step's changes one rank takes to undo a failed step (atomic.py).
    step_snapshot_max_gib: float = 16.0
    # How long one operation (a train step, checkpoint, restore, publish, sampler load) may hold the policy before
    # the kernel counts as wedged (watchdog.py): the trainer activity's deadline, timeouts.trainStepMinutes.
    op_deadline_seconds: float = 7200.0
    # The run this kernel was started for: its base weights are that run's from the start (lineage.py), so a
    # run that wakes up beside it (another unfinished run on the same workers) cannot take them first.
    run: str | None = None


def resolve_device(name: str) -> torch.device:
    """`auto` is CUDA when present, else CPU; asking for CUDA without one is a start-up error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device is available")
    if name not in ("cpu", "cuda"):
        raise SystemExit(f"--device {name}: expected auto, cpu or cuda")
    return torch.device(name)


class OpsLock:
    """The lock of `Policy.ops` that knows since when and by which thread it is held: an operation that holds it
    past its deadline (a hung CUDA or NCCL call) is what the watchdog reports as wedged (watchdog.py)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.since: float | None = None
        self.holder: int | None = None

    def __enter__(self) -> OpsLock:
        self._lock.acquire()
        self.since, self.holder = time.monotonic(), threading.get_ident()
        return self

    def __exit__(self, *exc: object) -> None:
        self.since = self.holder = None
        self._lock.release()

    def held_for(self) -> float | None:
        """Seconds the lock has been held, None when it is free."""
        since = self.since
        return None if since is None else time.monotonic() - since


class RWLock:
    """Many readers or one writer; a waiting writer blocks new readers so steps are not starved by sampling.
    `generation` counts the writes done, so what was computed from the weights can be kept until the next."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0
        self.generation = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._writer and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            self._cond.wait_for(lambda: not self._writer and self._readers == 0)
            self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self.generation += 1
                self._cond.notify_all()


def load_base_model(model: str, device: torch.device, dtype: torch.dtype):
    """The pretrained causal LM by name or local path, in eval mode: no dropout, so the function that sampled
    a completion is the one the trainer differentiates."""
    from transformers import AutoModelForCausalLM

    net = AutoModelForCausalLM.from_pretrained(model, dtype=dtype).to(device)
    net.eval()
    return net


def load_tokenizer(model: str):
    """The model's tokenizer, splitting text exactly as its files say. transformers picks the tokenizer class
    from the architecture (a Qwen2 model gets Qwen2Tokenizer), and such a class rebuilds its own pre-tokenizer
    from code; a tokenizer saved as the generic `TokenizersBackend` (one trained for its model, like the warm
    start's) would then split prompts differently from how the model was trained. So a directory whose
    tokenizer_config.json names that class is loaded with it; every other model goes through AutoTokenizer."""
    from transformers import AutoTokenizer

    local_config = Path(model) / "tokenizer_config.json"
    if local_config.is_file() and json.loads(local_config.read_text()).get("tokenizer_class") == "TokenizersBackend":
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        return TokenizersBackend.from_pretrained(model)
    return AutoTokenizer.from_pretrained(model)


@dataclass
class Policy:
    """Live training state. `version` counts applied steps (it is also the optimizer's step count, which
    the warm-up schedule reads); `responses` maps each applied idempotency key to its first response;
    `lineage` is the run whose weights these are (None: the base weights, nobody's yet; see lineage.py);
    `dirty` says why the weights are a failed step's that could not be undone (None: they are not; atomic.py);
    `progress` how far the running step has got (progress.py)."""

    config: KernelConfig
    device: torch.device
    dtype: torch.dtype
    tokenizer: object
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    version: int = 0
    responses: dict[str, dict] = field(default_factory=dict)
    lineage: str | None = None
    dirty: str | None = None
    ops: OpsLock = field(default_factory=OpsLock)
    weights: RWLock = field(default_factory=RWLock)
    world: World = field(default_factory=World)
    progress: StepProgress = field(default_factory=StepProgress)
    replica: torch.nn.Module | None = None  # rank 0's unsharded copy under FSDP
    digest: tuple[int, str] | None = None  # (weights.generation, its weights_digest): state.py
    _reference: torch.nn.Module | None = None

    @classmethod
    def load(cls, config: KernelConfig, world: World | None = None) -> Policy:
        """The policy as `serve` starts it; with a distributed `world`, this rank's FSDP shard of it (every
        rank reads the whole model into host memory once, then keeps its shard on its device)."""
        world = world or World()
        torch.manual_seed(config.seed)
        device = device_of(world, resolve_device(config.device))
        dtype = DTYPES[config.dtype]
        tokenizer = load_tokenizer(config.model)
        if tokenizer.eos_token_id is None:
            raise SystemExit(f"--model {config.model}: the tokenizer has no EOS token")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if tokenizer.chat_template is None:
            raise SystemExit(f"--model {config.model}: the tokenizer has no chat template")
        model = load_base_model(config.model, torch.device("cpu") if world.distributed else device, dtype)
        if config.lora_rank > 0:
            from peft import LoraConfig, get_peft_model

            targets = config.lora_target_modules
            model = get_peft_model(
                model,
                LoraConfig(
                    r=config.lora_rank,
                    lora_alpha=config.lora_alpha,
                    lora_dropout=0.0,
                    target_modules=targets[0] if targets == ("all-linear",) else list(targets),
                    task_type="CAUSAL_LM",
                ),
            )
            model.eval()
        replica = None
        if world.distributed:
            if world.leader:
                replica = copy.deepcopy(model).to(device)
                replica.requires_grad_(False)
            shard(model, device)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=1e-6, weight_decay=0.0)
        log.info(
            "loaded %s on %s as %s (%s, %d trainable parameters%s)",
            config.model,
            device,
            config.policy,
            f"LoRA rank {config.lora_rank}" if config.lora_rank else "full fine-tuning",
            sum(p.numel() for p in params),  # a DTensor's numel() is its whole size
            f", FSDP rank {world.rank} of {world.size}" if world.distributed else "",
        )
        return cls(
            config=config,
            device=device,
            dtype=dtype,
            tokenizer=tokenizer,
            model=model,
            optimizer=optimizer,
            world=world,
            replica=replica,
            lineage=config.run,
        )

    @property
    def is_lora(self) -> bool:
        return self.config.lora_rank > 0

    @property
    def context_length(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 0) or 1 << 30)

    @property
    def serving_model(self) -> torch.nn.Module:
        """The unsharded model that samples and publishes: the trained model itself in one process, rank 0's
        replica under FSDP."""
        return self.replica if self.replica is not None else self.model

    def trainable(self) -> dict[str, torch.Tensor]:
        """Trainable parameters by name, in the optimizer's order (what a checkpoint must hold); this rank's
        shards (DTensors) under FSDP."""
        return {name: p for name, p in self.model.named_parameters() if p.requires_grad}

    def refresh_replica(self) -> None:
        """After the trained weights changed (a step, a restore): every rank gathers each trainable parameter
        in turn and rank 0 copies it into its replica. Nothing to do in one process."""
        if not self.world.distributed:
            return
        mine = dict(self.replica.named_parameters()) if self.replica is not None else {}
        with torch.no_grad():
            for name, p in self.trainable().items():
                whole = full(p.detach())
                if name in mine:
                    mine[name].copy_(whole)

    @contextmanager
    def reference(self) -> Iterator[torch.nn.Module]:
        """The frozen reference for the KL term: the base model with the adapter switched off for LoRA, else
        a copy of the pretrained weights loaded on first use (never when klCoef is 0)."""
        if self.is_lora:
            with self.model.disable_adapter():
                yield self.model
            return
        if self._reference is None:
            log.info("loading the frozen reference model for the KL term")
            if self.world.distributed:
                self._reference = load_base_model(self.config.model, torch.device("cpu"), self.dtype)
                self._reference.requires_grad_(False)
                shard(self._reference, self.device)
            else:
                self._reference = load_base_model(self.config.model, self.device, self.dtype)
                self._reference.requires_grad_(False)
        yield self._reference
