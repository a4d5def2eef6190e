"""Weights with an identity: a kernel's weights belong to the run lineage that trained them.

Version numbers alone cannot tell two runs apart: a fork pointed at its parent's kernel would restore its own
checkpoint over the parent's weights (the parent then trains on the fork's), or, once the version numbers
coincide, train on the parent's weights and commit them as its own. So the kernel records whose weights it
holds (`Policy.lineage`, the `runId` of the steps that made them) and refuses, with 409 `lineage_conflict`:
  - a step of another run than the one whose weights it holds;
  - a restore for another run (a rollback lineage `{run}.r{n}` is the same run: it may take its own weights
    back to an earlier checkpoint);
  - a sampler load for another run than the one whose weights the sampler serves: it serves one model, so two
    runs cannot share it (the weight sync reads `lineage` in `/v1/models` and refuses before loading).
Fresh base weights belong to no one: the first run to step or restore takes them; a kernel started with
`--run RUN` holds them as RUN's from the start (the local stack starts one per run it runs or resumes).
"""

from __future__ import annotations

import re

from .errors import KernelError
from .policy import Policy

_ROLLBACK = re.compile(r"\.r\d+$")


def run_of(lineage: str) -> str:
    """The run a lineage belongs to: `{run}.r{n}` (a rollback's lineage) is `{run}`."""
    return _ROLLBACK.sub("", lineage)


def check_step(policy: Policy, run_id: str) -> None:
    if policy.lineage is not None and policy.lineage != run_id:
        raise KernelError(
            409,
            "lineage_conflict",
            f"runId: this kernel holds run {policy.lineage!r}'s weights of policy {policy.config.policy!r} "
            f"(version {policy.version}); run {run_id!r} may not train on them: give each run its own kernel",
        )


def check_restore(policy: Policy, lineage: str) -> None:
    if policy.lineage is not None and run_of(policy.lineage) != run_of(lineage):
        raise KernelError(
            409,
            "lineage_conflict",
            f"lineage: this kernel holds run {policy.lineage!r}'s weights of policy {policy.config.policy!r} "
            f"(version {policy.version}); restoring run {lineage!r}'s checkpoint would take them from it: give "
            "each run its own kernel, or restart this one once that run is over",
        )


def check_sampler_load(policy: Policy, held: str | None, lineage: str | None) -> None:
    """`held`: the run whose weights the sampler serves; `lineage`: the run loading (None: an older client)."""
    if lineage is not None and held is not None and run_of(held) != run_of(lineage):
        raise KernelError(
            409,
            "lineage_conflict",
            f"lineage: this sampler serves run {held!r}'s weights of policy {policy.config.policy!r}; loading run "
            f"{lineage!r}'s snapshot would take them from it: give each run its own sampler",
        )
