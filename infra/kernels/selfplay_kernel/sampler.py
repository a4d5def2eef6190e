"""OpenAI-compatible chat completions, batched across samples and concurrent requests.

Every sample is one row of a left-padded `model.generate` batch. Requests that arrive while a batch runs are
queued and go together into the next one, whatever their sampling settings: each row carries its own
temperature, top_p, max_tokens, stop strings and random generator. That is why the token choice lives in a
logits processor (`RowSampler`) and `generate` runs in greedy mode: the processor draws each row's token
with the Gumbel-max trick from that row's own `torch.Generator` (seeded with `seed + sample index`), so a
seeded request gives the same answer whatever else shares its batch, and `n` samples with seed s equal n
requests with seeds s..s+n-1. temperature 0 is plain greedy decoding.

Reported log-probs mu are those of the row's tempered distribution, log softmax(logits / temperature), before
top_p (a greedy row's at temperature 1, as vLLM and SGLang report them). The trainer scores a row that carries
its temperature the same way (losses.token_scores), as verl does, so the PPO ratio is exactly 1 on policy. Not
after top_p: the trainer, like verl, scores the tempered distribution without the nucleus (renormalising over a
set that jumps with the logits is not what verl differentiates), and mu must be the same function for the ratio
to be 1. What that leaves out is small and one-sided: the sampled token lies in the nucleus, whose mass Z is at
least top_p, so the probability it was drawn with, p / Z (p = exp(mu)), is at most p / top_p (5 % more at 0.95),
well inside the clip. SGLang reports the same by default; vLLM needs `--logprobs-mode processed_logprobs` (tempered, but
renormalised over the nucleus: the same at top_p 1, log Z higher otherwise), as its default raw_logprobs are at
temperature 1.

Token in, token out: with vLLM's and SGLang's `return_token_ids` a choice carries `token_ids`, every id the
row sampled (the stop token or the tokens of a matched stop string included, as vLLM returns them; the content
leaves them out), and with `return_tokens_as_token_ids` each log-prob entry's token reads `token_id:{id}`
(vLLM's form). When either is asked, the log-probs cover exactly those sampled ids, so a training row can
carry them as its `completionTokens` and `behaviourLogprobs`.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Annotated, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from .chat import encode_prompt, eos_ids
from .errors import KernelError
from .policy import Policy

log = logging.getLogger(__name__)

MAX_N = 128


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant"]
    content: str


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's request the kernel honours; other OpenAI fields are accepted and ignored.
    max_tokens (or max_completion_tokens) defaults to, and is capped at, what is left of the model's context.
    `continue_final_message` and `add_generation_prompt` are vLLM's and SGLang's chat-template switches: the
    answer continues the last (assistant) message, and its content is only the new text."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: Annotated[list[Message], Field(min_length=1)]
    n: Annotated[int, Field(ge=1, le=MAX_N)] = 1
    temperature: Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    max_completion_tokens: Annotated[int, Field(ge=1)] | None = None
    stop: (
        Annotated[str, Field(min_length=1)]
        | Annotated[list[Annotated[str, Field(min_length=1)]], Field(max_length=16)]
        | None
    ) = None
    seed: int | None = None
    logprobs: bool = False
    return_token_ids: bool = False
    return_tokens_as_token_ids: bool = False
    stream: Literal[False] = False
    add_generation_prompt: bool = True
    continue_final_message: bool = False

    @model_validator(mode="after")
    def _continuation(self) -> "ChatCompletionRequest":
        if self.continue_final_message and self.add_generation_prompt:
            raise ValueError("continue_final_message and add_generation_prompt cannot both be true")
        if self.continue_final_message and self.messages[-1].role != "assistant":
            raise ValueError("continue_final_message needs an assistant message last")
        return self


@dataclass
class Row:
    """One sample to generate."""

    prompt: list[int]
    temperature: float
    top_p: float
    max_new: int
    stops: list[str]
    seed: int


@dataclass
class Sample:
    """`tokens`: those of the returned text; `sampled`: every id the row sampled up to its stop (EOS, the
    tokens that completed a stop string), with `sampled_logprobs` one per id."""

    text: str
    tokens: list[int]
    logprobs: list[float]
    finish_reason: str
    sampled: list[int]
    sampled_logprobs: list[float]


class RowSampler(LogitsProcessor):
    """Chooses each row's next token itself and returns scores that make greedy search pick exactly it,
    recording the chosen token's log-prob under the row's tempered distribution on the way (the module's
    doc says why before top_p)."""

    def __init__(self, rows: list[Row], device: torch.device) -> None:
        self.temperature = torch.tensor([r.temperature for r in rows], device=device).unsqueeze(1)
        self.top_p = torch.tensor([r.top_p for r in rows], device=device).unsqueeze(1)
        self.greedy = torch.tensor([r.temperature == 0 for r in rows], device=device)
        self.generators = [torch.Generator(device=device).manual_seed(r.seed) for r in rows]
        self.chosen_logprobs: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores = scores.float()
        z = scores / torch.where(self.greedy.unsqueeze(1), 1.0, self.temperature)
        logp = torch.log_softmax(z, dim=-1)
        z = _top_p_filter(z, self.top_p)
        uniform = torch.stack([torch.rand(z.shape[1], generator=g, device=z.device) for g in self.generators]).clamp_(
            min=1e-20, max=1.0 - 1e-7
        )
        gumbel = -torch.log(-torch.log(uniform))
        noisy = torch.where(self.greedy.unsqueeze(1), scores, z + gumbel)
        choice = noisy.argmax(dim=-1, keepdim=True)
        self.chosen_logprobs.append(logp.gather(1, choice).squeeze(1))
        forced = torch.full_like(scores, float("-inf"))
        return forced.scatter_(1, choice, 0.0)


def _top_p_filter(z: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Keeps, per row, the smallest set of most likely tokens whose probability reaches top_p."""
    if bool((top_p >= 1.0).all()):
        return z
    sorted_z, order = z.sort(dim=-1, descending=True)
    probs = sorted_z.softmax(dim=-1)
    before = probs.cumsum(dim=-1) - probs  # mass strictly above each token
    drop_sorted = before >= top_p
    drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
    return z.masked_fill(drop, float("-inf"))


class RowStopper(StoppingCriteria):
    """Per-row stop: the row's own max_tokens, or one of its stop strings in the recent generated text."""

    def __init__(self, rows: list[Row], prompt_width: int, tokenizer) -> None:
        self.rows = rows
        self.prompt_width = prompt_width
        self.tokenizer = tokenizer
        # A stop string of L characters spans at most 4L byte-level tokens.
        self.windows = [4 * max((len(s) for s in r.stops), default=0) + 4 for r in rows]

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        generated = input_ids.shape[1] - self.prompt_width
        done = []
        for i, row in enumerate(self.rows):
            stop = generated >= row.max_new
            if not stop and row.stops:
                tail = self.tokenizer.decode(input_ids[i, -min(generated, self.windows[i]) :].tolist())
                stop = any(s in tail for s in row.stops)
            done.append(stop)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def generate(model: torch.nn.Module, tokenizer, rows: list[Row], device: torch.device) -> list[Sample]:
    """Generates all rows in one left-padded batch."""
    width = max(len(r.prompt) for r in rows)
    pad = tokenizer.pad_token_id
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, width - len(r.prompt) :] = torch.tensor(r.prompt)
        attention[i, width - len(r.prompt) :] = 1
    eos = eos_ids(model, tokenizer)
    sampler = RowSampler(rows, device)
    config = GenerationConfig(
        max_new_tokens=max(r.max_new for r in rows),
        do_sample=False,
        num_beams=1,
        eos_token_id=eos,
        pad_token_id=pad,
        # Explicit neutral values: generate() fills unset fields from the model's generation_config.json,
        # which for instruct models often carries repetition penalties and the like.
        temperature=1.0,
        top_p=1.0,
        repetition_penalty=1.0,
        no_repeat_ngram_size=0,
        min_length=0,
        return_dict_in_generate=True,
    )
    with torch.no_grad():
        out = model.generate(
            input_ids=ids.to(device),
            attention_mask=attention.to(device),
            generation_config=config,
            logits_processor=LogitsProcessorList([sampler]),
            stopping_criteria=StoppingCriteriaList([RowStopper(rows, width, tokenizer)]),
        )
    generated = out.sequences[:, width:].tolist()
    chosen = torch.stack(sampler.chosen_logprobs, dim=1).tolist()  # one entry per step, max_new >= 1
    return [_finish(tokenizer, row, generated[i], chosen[i], set(eos)) for i, row in enumerate(rows)]


def _finish(tokenizer, row: Row, tokens: list[int], logprobs: list[float], eos: set[int]) -> Sample:
    """Cuts a row's output at EOS, its max_tokens or the first stop string (which is not returned)."""
    reason = "length"
    for j, t in enumerate(tokens[: row.max_new]):
        if t in eos:
            tokens, reason, sampled = tokens[:j], "stop", tokens[: j + 1]
            break
    else:
        tokens = sampled = tokens[: row.max_new]
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    hits = [(p, len(s)) for p, s in ((text.find(s), s) for s in row.stops) if p >= 0]
    if hits:
        cut, stop_len = min(hits)
        text, reason = text[:cut], "stop"
        keep = 0
        while keep < len(tokens) and len(tokenizer.decode(tokens[: keep + 1], skip_special_tokens=True)) <= cut:
            keep += 1
        # The sampled ids run through the token that completed the stop string (vLLM's token_ids do too).
        through = keep
        while through < len(tokens) and len(tokenizer.decode(tokens[:through], skip_special_tokens=True)) < (
            cut + stop_len
        ):
            through += 1
        tokens, sampled = tokens[:keep], tokens[:through]
    return Sample(
        text=text,
        tokens=tokens,
        logprobs=logprobs[: len(tokens)],
        finish_reason=reason,
        sampled=sampled,
        sampled_logprobs=logprobs[: len(sampled)],
    )


@dataclass
class _Job:
    rows: list[Row]
    future: Future = field(default_factory=Future)


class Sampler:
    """Serves the live policy, or a published snapshot loaded with `/v1/sampler/load`, from one batching thread."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.snapshot: torch.nn.Module | None = None
        self.snapshot_version = 0
        # The run that loaded the snapshot (lineage.py); None: a client from before run lineages.
        self.snapshot_lineage: str | None = None
        # The digest of the snapshot's weights (state.weights_digest); None: a snapshot from before digests.
        self.snapshot_digest: str | None = None
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="sampler", daemon=True)
        self._thread.start()

    @property
    def version(self) -> int:
        return self.snapshot_version if self.snapshot is not None else self.policy.version

    @property
    def lineage(self) -> str | None:
        """The run whose weights it serves: the snapshot's loader, or the live policy's (None: no one's)."""
        return self.snapshot_lineage if self.snapshot is not None else self.policy.lineage

    def use_live(self) -> None:
        self.snapshot = None

    @property
    def digest(self) -> str | None:
        """The digest of the snapshot it serves; None for the live weights (no copy) or a snapshot without one."""
        return self.snapshot_digest if self.snapshot is not None else None

    @property
    def weight_tag(self) -> str:
        """`{run}@{N}` (`{N}` for weights no run claims), with `-{first 12 hex digits}` of the digest of a copy that
        has one: the tag a weight sync gives SGLang's weights (activities/clients/weight-tag.ts)."""
        label = f"{self.version}-{self.digest[:12]}" if self.digest else str(self.version)
        return f"{self.lineage}@{label}" if self.lineage else label

    def use_snapshot(
        self, model: torch.nn.Module, version: int, lineage: str | None = None, digest: str | None = None
    ) -> None:
        self.snapshot, self.snapshot_version, self.snapshot_lineage = model, version, lineage
        self.snapshot_digest = digest

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def complete(self, request: ChatCompletionRequest) -> dict:
        """Answers one chat completion request (blocking until its batch ran)."""
        name = self.policy.config.policy
        if request.model != name:
            raise KernelError(
                404,
                "invalid_request_error",
                f"The model {request.model!r} does not exist; this kernel serves {name!r}",
                code="model_not_found",
            )
        tokenizer = self.policy.tokenizer
        prompt = encode_prompt(
            tokenizer,
            [m.model_dump() for m in request.messages],
            add_generation_prompt=request.add_generation_prompt,
            continue_final_message=request.continue_final_message,
        )
        room = self.policy.context_length - len(prompt)
        if room < 1:
            raise KernelError(
                400,
                "invalid_request_error",
                f"messages: the prompt is {len(prompt)} tokens; the model's context is {self.policy.context_length}",
                code="context_length_exceeded",
            )
        wanted = request.max_completion_tokens or request.max_tokens or room
        stops = [request.stop] if isinstance(request.stop, str) else list(request.stop or [])
        seed = request.seed if request.seed is not None else secrets.randbits(63)
        rows = [
            Row(prompt, request.temperature, request.top_p, min(wanted, room), stops, (seed + i) % (1 << 63))
            for i in range(request.n)
        ]
        job = _Job(rows)
        self._queue.put(job)
        samples, version, tag = job.future.result()
        return _response(request, name, prompt, samples, version, tag, tokenizer)

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs, rows = [job], len(job.rows)
            while rows < self.policy.config.max_batch_rows:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                jobs.append(nxt)
                rows += len(nxt.rows)
            self._run(jobs)

    def _run(self, jobs: list[_Job]) -> None:
        rows = [r for j in jobs for r in j.rows]
        try:
            with self.policy.weights.read():
                model = self.snapshot if self.snapshot is not None else self.policy.serving_model
                version, tag = self.version, self.weight_tag
                started = time.perf_counter()
                samples = generate(model, self.policy.tokenizer, rows, self.policy.device)
            log.info(
                "sampled %d rows (%d requests, %d tokens) in %.2fs",
                len(rows),
                len(jobs),
                sum(len(s.tokens) for s in samples),
                time.perf_counter() - started,
            )
        except Exception as err:  # answer every waiting request rather than leave it hanging
            log.exception("generation failed")
            for j in jobs:
                j.future.set_exception(err)
            return
        start = 0
        for j in jobs:
            j.future.set_result((samples[start : start + len(j.rows)], version, tag))
            start += len(j.rows)


def _response(
    request: ChatCompletionRequest,
    name: str,
    prompt: list[int],
    samples: list[Sample],
    version: int,
    tag: str,
    tokenizer,
) -> dict:
    choices = []
    exact = request.return_token_ids or request.return_tokens_as_token_ids
    for i, s in enumerate(samples):
        choice = {
            "index": i,
            "message": {"role": "assistant", "content": s.text},
            "finish_reason": s.finish_reason,
            "logprobs": None,
        }
        if request.return_token_ids:
            choice["token_ids"] = s.sampled
        if request.logprobs:
            tokens, lps = (s.sampled, s.sampled_logprobs) if exact else (s.tokens, s.logprobs)
            as_ids = request.return_tokens_as_token_ids
            choice["logprobs"] = {
                "content": [
                    {
                        "token": f"token_id:{t}" if as_ids else tokenizer.decode([t]),
                        "logprob": lp,
                        "bytes": None,
                        "top_logprobs": [],
                    }
                    for t, lp in zip(tokens, lps)
                ]
            }
        choices.append(choice)
    completion_tokens = sum(len(s.tokens) for s in samples)
    prompt_ids = {"prompt_token_ids": prompt} if request.return_token_ids else {}
    return {
        **prompt_ids,
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "system_fingerprint": f"weights-v{version}",
        # SGLang's field for the same fact, tagged as a sync tags SGLang's weights (Sampler.weight_tag): the run's
        # client checks every answer against the weights it synced.
        "metadata": {"weight_version": tag},
        "choices": choices,
        "usage": {
            "prompt_tokens": len(prompt),
            "completion_tokens": completion_tokens,
            "total_tokens": len(prompt) + completion_tokens,
        },
    }
