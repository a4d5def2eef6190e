"""HTTP routes. Sampling and the operations on the policy (a train step, checkpoint, restore, publish, sampler
load) block for seconds to hours, so they run on worker threads of their own (`SAMPLING` and `OPERATIONS`,
each with its own limit); the routes that only read (health, liveness, the policy's state, the running step's
progress, models) answer on the event loop. So no number of sampling requests in flight makes a probe or
`GET /v1/policies` wait (they shared one thread pool: under sampling load the readiness probe timed out and the
kernel left its Service).
The policy's locks (see policy.py) order training, state operations and sampling. Every error is JSON
`{"error": {"type", "message", "code"}}` naming the problem (OpenAI-style on the `/v1/chat` and `/v1/models`
routes, trainer-contract style elsewhere)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import anyio

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from . import state
from .access import Access, add_health_route, install_token_check
from .embeddings import Embedder, add_embedding_routes
from .errors import KernelError, storage_full
from .lineage import check_sampler_load
from .policy import Policy
from .requests import CheckpointRequest, PublishRequest, RestoreRequest, SamplerLoadRequest, TrainStepRequest
from .sampler import ChatCompletionRequest, Sampler
from .trainer import train_step
from .watchdog import Watchdog

log = logging.getLogger(__name__)

T = TypeVar("T")

# Requests waiting for their sampling batch each hold a thread (cheap: they wait on a future), up to this many.
SAMPLING_THREADS = 256
# Operations run one at a time under `Policy.ops`; a few more may wait for it.
OPERATION_THREADS = 8

def _openai_route(path: str) -> bool:
    return path.startswith(("/v1/chat", "/v1/models", "/v1/embeddings"))


def install_error_handlers(app: FastAPI) -> None:
    """Every failure as `{"error": {"type", "message", "code"}}`, OpenAI-style on the OpenAI routes."""

    @app.exception_handler(KernelError)
    def kernel_error(request: Request, err: KernelError) -> JSONResponse:
        if err.status >= 500:
            log.error("%s %s: %s", request.method, request.url.path, err.message)
        return JSONResponse(err.body(), status_code=err.status)

    @app.exception_handler(RequestValidationError)
    def invalid_body(request: Request, err: RequestValidationError) -> JSONResponse:
        first = err.errors()[0]
        loc = [str(part) for part in first.get("loc", ()) if part != "body"]
        if first.get("type") == "json_invalid":
            message = "the body is not valid JSON"
        else:
            message = f"{'.'.join(loc) or '(body)'}: {first.get('msg', 'invalid')}"
        kind = "invalid_request_error" if _openai_route(request.url.path) else "invalid_request"
        return JSONResponse(KernelError(400, kind, message, code="invalid_request").body(), status_code=400)

    @app.exception_handler(HTTPException)
    def http_error(request: Request, err: HTTPException) -> JSONResponse:
        kind = {404: "not_found", 405: "method_not_allowed"}.get(err.status_code, "http_error")
        message = (
            f"no route for {request.method} {request.url.path}" if err.status_code in (404, 405) else str(err.detail)
        )
        return JSONResponse(KernelError(err.status_code, kind, message).body(), status_code=err.status_code)

    @app.exception_handler(Exception)
    def internal(request: Request, err: Exception) -> JSONResponse:
        full = storage_full(err)
        if full is not None:
            return kernel_error(request, full)
        log.exception("%s %s failed", request.method, request.url.path)
        return JSONResponse(KernelError(500, "internal", f"{type(err).__name__}: {err}").body(), status_code=500)


def create_app(policy: Policy, sampler: Sampler, access: Access, watchdog: Watchdog | None = None) -> FastAPI:
    """The kernel's routes behind `access`: its bearer token, and its storage roots for every URI. `watchdog`
    (default: the deadline of `policy.config.op_deadline_seconds`) answers `GET /health/live`."""
    app = FastAPI(title="selfplay-kernel", docs_url=None, redoc_url=None, openapi_url=None)
    name = policy.config.policy
    watchdog = watchdog or Watchdog(policy, policy.config.op_deadline_seconds)
    sampling = anyio.CapacityLimiter(SAMPLING_THREADS)
    operations = anyio.CapacityLimiter(OPERATION_THREADS)
    install_error_handlers(app)
    install_token_check(app, access)
    add_health_route(app)

    async def blocking(limiter: anyio.CapacityLimiter, route: str, work: Callable[[], T]) -> T:
        """`work()` on a worker thread of `limiter`'s, marked as serving `route` for the watchdog."""

        def run() -> T:
            with watchdog.serving(route):
                return work()

        return await anyio.to_thread.run_sync(run, limiter=limiter)

    @app.get("/health/live")
    async def live() -> JSONResponse:
        reason = watchdog.wedged()
        if reason is not None:
            log.error("liveness: %s", reason)
            return JSONResponse(KernelError(503, "wedged", reason).body(), status_code=503)
        return JSONResponse({"status": "ok"})

    def known(policy_name: str) -> None:
        if policy_name != name:
            raise KernelError(
                404, "policy_not_found", f"policy: this kernel holds policy {name!r}, not {policy_name!r}"
            )

    @app.get("/v1/models")
    async def models() -> dict:
        return {
            "object": "list",
            "data": [
                {
                    "id": name,
                    "object": "model",
                    "owned_by": "selfplay-kernel",
                    "weight_version": sampler.version,
                    "lineage": sampler.lineage,
                    # A copy of a snapshot, which no train step changes; false: the trainer's live weights.
                    "pinned": sampler.snapshot is not None,
                    # The digest of that copy's weights (null: the live weights, or a snapshot without one).
                    "weight_digest": sampler.digest,
                }
            ],
        }

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest) -> dict:
        return await blocking(sampling, "POST /v1/chat/completions", lambda: sampler.complete(body))

    @app.post("/v1/sampler/load")
    async def sampler_load(body: SamplerLoadRequest) -> dict:
        access.check_uri(body.uri)
        return await blocking(operations, "POST /v1/sampler/load", lambda: load_sampler(body))

    def load_sampler(body: SamplerLoadRequest) -> dict:
        with policy.ops:
            check_sampler_load(policy, sampler.lineage, body.lineage)
            check_sampler_load(policy, policy.lineage, body.lineage)
            held = sampler.digest
            # The live weights only when they are the ones asked for: after a step applied again they are
            # this version with other weights, and the snapshot named (or a 409) is served instead.
            live = body.version == policy.version and (body.sha256 is None or body.sha256 == state.weights_digest(policy))
            if live and not body.pin:
                with policy.weights.write():
                    sampler.use_live()
                loaded = False
            elif sampler.snapshot is not None and sampler.version == body.version and body.sha256 in (None, held):
                loaded = False
            else:
                # A copy of this version with other weights (published again since) is replaced, not kept.
                snapshot = state.load_snapshot(policy, body.uri, body.version, body.sha256)
                with policy.weights.write():
                    sampler.use_snapshot(snapshot.model, body.version, body.lineage, snapshot.sha256)
                loaded = True
        return {"object": "sampler.load", "model": name, "weight_version": sampler.version, "loaded": loaded}

    @app.post("/v1/train/step")
    async def step(body: TrainStepRequest) -> dict:
        access.check_uri(body.batch.uri, "batch.uri")
        return await blocking(operations, "POST /v1/train/step", lambda: train_step(policy, body))

    @app.get("/v1/train/progress")
    async def train_progress() -> dict:
        # On the event loop, beside the step it reports on (which holds an operations thread and the policy).
        return {"object": "train.progress", "policy": name, "step": policy.progress.snapshot()}

    @app.get("/v1/policies/{policy_name}")
    async def policy_state(policy_name: str) -> dict:
        known(policy_name)
        return {"policy": name, "policyVersion": policy.version, "lineage": policy.lineage}

    @app.post("/v1/policies/{policy_name}/checkpoint")
    async def checkpoint(policy_name: str, body: CheckpointRequest) -> dict:
        known(policy_name)
        access.check_uri(body.uri)
        route = "POST /v1/policies/{policy}/checkpoint"
        return await blocking(operations, route, lambda: state.checkpoint(policy, body.uri, body.version))

    @app.post("/v1/policies/{policy_name}/restore")
    async def restore(policy_name: str, body: RestoreRequest) -> dict:
        known(policy_name)
        access.check_uri(body.uri)
        route = "POST /v1/policies/{policy}/restore"
        return await blocking(operations, route, lambda: state.restore(policy, body.uri, body.lineage))

    @app.post("/v1/policies/{policy_name}/publish")
    async def publish(policy_name: str, body: PublishRequest) -> dict:
        known(policy_name)
        access.check_uri(body.uri)
        route = "POST /v1/policies/{policy}/publish"
        return await blocking(operations, route, lambda: state.publish(policy, body.uri, body.version))

    return app


def create_embedding_app(embedder: Embedder, access: Access) -> FastAPI:
    """The embedding server (`embed`): no policy, only `/v1/embeddings` and `/v1/models`, behind `token`."""
    app = FastAPI(title="selfplay-kernel-embeddings", docs_url=None, redoc_url=None, openapi_url=None)
    install_error_handlers(app)
    install_token_check(app, access)
    add_health_route(app)
    add_embedding_routes(app, embedder)
    return app
