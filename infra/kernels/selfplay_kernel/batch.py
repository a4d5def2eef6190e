"""Loading a training batch by reference and checking it before any weight is touched.

The batch is untrusted: its bytes must hash to the sha256 the request names, it must decode (gzip when the
URI ends in `.gz`, with a cap on the decompressed size), and every JSONL line must be a valid TrainingRow
(contract.py): its sampled ids, when it carries them, non-negative integers with one behaviour log-prob
each (whether they are in the model's vocabulary is checked against the tokenizer, encoding.encode_exact); for a
`tis` loss, every row with behaviour log-probs. Every refusal names what is wrong: `batch line N: field: problem`;
bytes that do not decode (or hash to another sha256) are a corrupt object (422), rows that decode but break the
contract a refused request (400).
"""

from __future__ import annotations

import hashlib
import zlib
from typing import Annotated, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from .errors import KernelError, corrupt_object
from .storage import ObjectNotFound, read_object
from .strict import STRICT

MAX_BATCH_BYTES = 1 << 30

Finite = Annotated[float, Field(allow_inf_nan=False)]
Sha256Hex = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class ChatMessage(BaseModel):
    model_config = STRICT
    role: Literal["system", "user", "assistant"]
    content: str


class SampledTokens(BaseModel):
    """Token ids the model sampled, exactly as the engine returned them: trained on as they are."""

    model_config = STRICT
    ids: Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]


class InsertedText(BaseModel):
    """Text the environment wrote between sampled turns (a tool's observation): tokenized by the kernel and
    left out of the loss."""

    model_config = STRICT
    text: Annotated[str, Field(min_length=1)]


class TrainingRow(BaseModel):
    """One trajectory of a training batch: a JSONL line of the batch object.

    Token in, token out: when the engine returned the sampled token ids, `completionTokens` carries them and
    the kernel trains on exactly those tokens (the prompt is the chat template's rendering of `messages`, as the
    engine's was); `completion` is then for people and logs. Without it the kernel tokenizes `completion` (the
    fallback for engines that return no ids), which can give other tokens than were sampled (merges across
    the prompt boundary, non-canonical splits), and the step's `rowsRetokenized` counts it."""

    model_config = STRICT
    messages: Annotated[list[ChatMessage], Field(min_length=1)]
    completion: str
    role: Annotated[str, Field(min_length=1)]
    """The recipe role that produced the completion, e.g. `challenger` or `reasoner`."""
    group: Annotated[str, Field(min_length=1)]
    """The advantage group, e.g. `challenger/doc-0017`."""
    reward: Finite
    advantage: Finite
    behaviourLogprobs: list[Annotated[float, Field(allow_inf_nan=False, le=0)]] | None = None
    """Behaviour-policy log-probabilities of the completion's tokens, when the sampler returned them. With
    `completionTokens`: exactly one per sampled id, in order; without: one per token of the kernel's
    tokenization of `completion`, with or without the EOS token's."""
    lossMaskSpans: list[tuple[Annotated[int, Field(ge=0)], Annotated[int, Field(ge=0)]]] | None = None
    """Spans of the completion excluded from the loss (e.g. retrieved text), [start, end), counted in Unicode
    code points (Python string indices, not JavaScript's UTF-16 units: use `[...text]` to count). Used only
    without `completionTokens`, whose inserted segments are the masked part."""
    completionTokens: Annotated[list[SampledTokens | InsertedText], Field(min_length=1)] | None = None
    """The completion as sampled, in order: the model's turns as token ids (in the loss), the environment's text
    between them (out of the loss). The kernel appends EOS unless the last sampled id is an end-of-sequence
    id. Ids must be of the kernel's tokenizer: one outside its vocabulary is refused (400)."""
    # Default 1: a batch written before the fields trained at temperature 1, against behaviour log-probs the
    # samplers of that time reported at temperature 1, and still does.
    temperature: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0
    """The temperature (> 0) the completion was sampled at. The kernel takes every log-prob of the row of
    softmax(logits / temperature), the distribution it was drawn from, as verl does and as the samplers report
    `behaviourLogprobs` (the kernel's and SGLang's by default, vLLM's with `--logprobs-mode processed_logprobs`),
    so the PPO ratio is 1 on policy. Absent: 1, which is also how a greedy sample (temperature 0) is scored,
    since every engine reports its log-probs at 1. Sent only when not 1, so a kernel from before the field still
    takes the batches of runs sampled at 1."""
    topP: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 1.0
    """The top-p (0 < topP ≤ 1) it was sampled with; absent: 1, and sent only when not 1. Recorded, not
    applied: the log-probs are of the tempered distribution before the nucleus truncation, as verl's are
    (sampler.py)."""
    behaviourVersion: Annotated[int, Field(ge=0)] | None = None
    """The policy version that sampled the completion: with `pipeline.maxStaleness` k ≥ 1 a row may be sampled
    up to k versions before the one it trains (the step's `baseVersion`). The kernel reports how far behind its
    oldest row is (`maxRowStaleness`) and refuses a row past the step's `maxStaleness` (staleness.py). Absent
    (batches from before the field): taken as sampled by `baseVersion`, on policy."""

    @property
    def sampled_ids(self) -> int:
        """How many token ids the row's `completionTokens` hold (0 without them)."""
        return sum(len(s.ids) for s in self.completionTokens or [] if isinstance(s, SampledTokens))

    @model_validator(mode="after")
    def _consistent(self) -> TrainingRow:
        if self.completionTokens is not None:
            if self.sampled_ids == 0:
                raise ValueError("completionTokens: no segment holds sampled ids")
            if self.behaviourLogprobs is not None and len(self.behaviourLogprobs) != self.sampled_ids:
                raise ValueError(
                    f"behaviourLogprobs: {len(self.behaviourLogprobs)} values, but completionTokens hold "
                    f"{self.sampled_ids} sampled ids (one log-prob per sampled id)"
                )
        for i, (start, end) in enumerate(self.lossMaskSpans or []):
            if start > end or end > len(self.completion):
                raise ValueError(
                    f"lossMaskSpans.{i}: span [{start}, {end}) is not inside the completion "
                    f"({len(self.completion)} chars)"
                )
        return self


class BatchRef(BaseModel):
    """The batch object: its URI, its number of rows (JSONL lines) and the sha256 of its bytes."""

    model_config = STRICT
    uri: Annotated[str, Field(min_length=1)]
    rows: Annotated[int, Field(ge=1)]
    sha256: Sha256Hex


def load_batch(ref: BatchRef, off_policy: str = "ppo_ratio", max_bytes: int = MAX_BATCH_BYTES) -> list[TrainingRow]:
    """Reads, verifies and parses the batch for a loss with correction `off_policy` (`require_behaviour`);
    raises KernelError (400 batch_*, 422 corrupt_object, 503 batch_unreadable)."""
    try:
        raw = read_object(ref.uri, "batch.uri")
    except ObjectNotFound:
        raise KernelError(400, "batch_not_found", f"batch.uri: no object at {ref.uri}") from None
    except KernelError:
        raise
    except Exception as err:  # a storage outage: worth retrying
        raise KernelError(503, "batch_unreadable", f"batch.uri: reading {ref.uri} failed: {err}") from err
    digest = hashlib.sha256(raw).hexdigest()
    if digest != ref.sha256:
        raise corrupt_object(f"batch.sha256: the object's sha256 is {digest}, not {ref.sha256}")
    text = _decode(raw, gzipped=ref.uri.endswith(".gz"), max_bytes=max_bytes)
    rows = [parse_row(line, number) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if len(rows) != ref.rows:
        raise KernelError(400, "batch_invalid", f"batch.rows: the batch holds {len(rows)} rows, not {ref.rows}")
    if off_policy == "tis":
        require_behaviour(rows)
    return rows


def require_behaviour(rows: list[TrainingRow]) -> None:
    """A `tis` step weighs each token by pi_old/mu, mu its log-prob under the policy that sampled it. A row
    without mu would weigh 1: trained as if the current policy had sampled it, which for a row sampled versions
    ago (a one-step-off run) is silently wrong. Refused (400), naming the first such row and its role."""
    missing = [number for number, r in enumerate(rows, start=1) if r.behaviourLogprobs is None]
    if missing:
        first = rows[missing[0] - 1]
        raise KernelError(
            400,
            "batch_invalid",
            f"batch row {missing[0]} (role {first.role!r}): behaviourLogprobs: none, but loss.offPolicy \"tis\" "
            f"weighs each token by pi_old/mu, mu the log-prob it was sampled with ({len(missing)} of {len(rows)} "
            "rows have none)",
        )


def _decode(raw: bytes, gzipped: bool, max_bytes: int) -> str:
    if gzipped:
        inflater = zlib.decompressobj(wbits=31)
        try:
            data = inflater.decompress(raw, max_bytes + 1)
        except zlib.error as err:
            raise corrupt_object(f"batch.uri: not a gzip object: {err}") from None
        if len(data) > max_bytes or inflater.unconsumed_tail:
            raise KernelError(400, "batch_invalid", f"batch.uri: decompresses to more than {max_bytes} bytes")
        if not inflater.eof:
            raise corrupt_object("batch.uri: truncated gzip object")
    else:
        data = raw
    if len(data) > max_bytes:
        raise KernelError(400, "batch_invalid", f"batch.uri: the batch is larger than {max_bytes} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise corrupt_object(f"batch.uri: not UTF-8 text: {err}") from None


def parse_row(line: str, number: int) -> TrainingRow:
    """One JSONL line as a TrainingRow; the error names the physical line number and the field."""
    try:
        return TrainingRow.model_validate_json(line)
    except ValidationError as err:
        if err.errors()[0]["type"] == "json_invalid":
            raise corrupt_object(f"batch line {number}: not JSON") from None
        raise KernelError(400, "batch_invalid", f"batch line {number}: {describe(err)}") from None


def describe(err: ValidationError) -> str:
    """The first problem of a pydantic error as `field.path: message`."""
    first = err.errors()[0]
    path = ".".join(str(part) for part in first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    if message.startswith(("lossMaskSpans.", "completionTokens:", "behaviourLogprobs:")):
        return message
    return f"{path}: {message}" if path else message
