"""How one train step's rows become optimizer steps: the request's `update` (the run config's
`training.update`).

The rows are cut into mini-batches of `miniBatchPrompts` prompts, each prompt with all its rows (verl's
`ppo_mini_batch_size`, counted in prompts and multiplied by the rollouts per prompt), in batch order; each
mini-batch is one optimizer step, and the whole is repeated `epochs` times. With `roleOrder` the roles are
updated in turn: first every step of the first role's rows, then the next role's (SSP's proposer, then solver),
then the rows of roles not listed, together. Without `update` the whole batch is one step, as before the
field existed.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Annotated

from pydantic import BaseModel, Field, field_validator

from .strict import STRICT


class UpdateSpec(BaseModel):
    """How the batch becomes optimizer steps, all of one policy version. Absent: one step over the whole
    batch."""

    model_config = STRICT
    miniBatchPrompts: Annotated[int, Field(ge=1)] | None = None
    """Prompts per optimizer step, each with all its rows; absent: every prompt (of a role phase) in one step."""
    epochs: Annotated[int, Field(ge=1, le=100)] = 1
    """Passes over the batch."""
    roleOrder: list[Annotated[str, Field(min_length=1)]] = []
    """Roles updated in turn, each its own steps; the unlisted roles' rows last, together."""

    @field_validator("roleOrder")
    @classmethod
    def _distinct(cls, roles: list[str]) -> list[str]:
        repeated = sorted({r for r in roles if roles.count(r) > 1})
        if repeated:
            raise ValueError(f"roles may be listed once each; repeated: {', '.join(repeated)}")
        return roles


def plan_steps(prompts: Sequence[Hashable], roles: Sequence[str], spec: UpdateSpec) -> list[list[int]]:
    """The row indices of each optimizer step, in the order the steps are taken. `prompts[i]` identifies row
    i's prompt (rows with equal prompts are one prompt's rollouts and stay in one mini-batch); `roles[i]` is
    its role."""
    steps: list[list[int]] = []
    for phase in _role_phases(roles, spec.roleOrder):
        by_prompt: dict[Hashable, list[int]] = {}
        for i in phase:
            by_prompt.setdefault(prompts[i], []).append(i)
        groups = list(by_prompt.values())
        size = spec.miniBatchPrompts or len(groups)
        chunks = [sum(groups[start : start + size], []) for start in range(0, len(groups), size)]
        for _ in range(spec.epochs):
            steps.extend(chunks)
    return steps


def _role_phases(roles: Sequence[str], order: Sequence[str]) -> list[list[int]]:
    """Row indices per role in `order`, then the unlisted roles' rows together; empty phases are left out."""
    phases = [[i for i, r in enumerate(roles) if r == role] for role in order]
    phases.append([i for i, r in enumerate(roles) if r not in order])
    return [p for p in phases if p]
