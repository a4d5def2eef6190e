"""Noticing a wedged kernel. A train step, checkpoint, restore, publish or sampler load holds the policy's lock
(`Policy.ops`); one that holds it past `--op-deadline-seconds` is stuck in a call that will not return (a hung
CUDA or NCCL call), and every later operation waits behind it forever. No request can undo that; a restart can:
the restarted kernel starts from its base weights and the trainer activity, finding it at another version,
restores the run's last committed checkpoint (activities/stages/update.ts), then resends its step.

- `GET /health/live` answers 503 naming the operation and how long it has held the lock: the chart's liveness
  probe, so Kubernetes restarts the pod. (`GET /health`, readiness, stays 200: the kernel is up.)
- `serve --restart-when-wedged` (the local stack, where nothing probes) re-executes the same command in place,
  on the same port, once the deadline has passed. Only for one process: under torchrun the pod restarts.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .policy import Policy

log = logging.getLogger(__name__)


class Watchdog:
    """Which route each worker thread serves, and whether the policy's lock is held past `deadline_s`."""

    def __init__(self, policy: Policy, deadline_s: float) -> None:
        self.policy = policy
        self.deadline_s = deadline_s
        self._routes: dict[int, str] = {}
        self._stop = threading.Event()

    @contextmanager
    def serving(self, route: str) -> Iterator[None]:
        """Marks the calling thread as serving `route` (what `wedged` names)."""
        ident = threading.get_ident()
        self._routes[ident] = route
        try:
            yield
        finally:
            self._routes.pop(ident, None)

    def wedged(self) -> str | None:
        """Why the kernel is wedged, or None when it is not."""
        held = self.policy.ops.held_for()
        if held is None or held <= self.deadline_s:
            return None
        holder = self.policy.ops.holder
        route = self._routes.get(holder, "an operation") if holder is not None else "an operation"
        return (
            f"{route} has held the policy for {held:.0f} s, past its deadline of {self.deadline_s:g} s "
            "(--op-deadline-seconds): the kernel is wedged and must be restarted"
        )

    def restart_when_wedged(self, argv: list[str], port: int) -> None:
        """From a daemon thread: re-executes `argv` with `--port port` once the kernel is wedged."""

        def watch() -> None:
            while not self._stop.wait(min(max(self.deadline_s / 4, 0.05), 10.0)):
                reason = self.wedged()
                if reason:
                    log.error("%s: restarting in place on port %d", reason, port)
                    for handler in logging.getLogger().handlers:
                        handler.flush()
                    sys.stdout.flush()
                    os.execv(sys.executable, restart_args(argv, port))

        threading.Thread(target=watch, name="watchdog", daemon=True).start()

    def close(self) -> None:
        self._stop.set()


def restart_args(argv: list[str], port: int) -> list[str]:
    """The interpreter's command line `argv` (sys.orig_argv) with its `--port` set to `port`, the one it bound:
    with `--port 0` a restart would move to another port, where no client looks."""
    args, out, skip = list(argv), [], False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--port" and i + 1 < len(args):
            skip = True
            continue
        if arg.startswith("--port="):
            continue
        out.append(arg)
    return [*out, "--port", str(port)]
