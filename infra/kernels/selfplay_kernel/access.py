"""Who may drive a kernel and where it may read and write.

Every route but `GET /health` and `GET /health/live` (left open for readiness and liveness probes; they tell
nothing but "up" and, when the kernel is wedged, which operation holds it and for how long: watchdog.py) needs
`Authorization: Bearer <token>`, the token coming from `SELFPLAY_KERNEL_TOKEN`. Every URI a request names
(batch, checkpoint, snapshot) must lie under one of the configured storage roots (`--root`, or
`SELFPLAY_KERNEL_ROOTS`, comma-separated). A kernel without a token or without roots accepts anything, so it
starts that way only on a loopback address (a developer's machine); `check_exposure` refuses the rest.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .errors import KernelError
from .storage import Location, parse

TOKEN_ENV = "SELFPLAY_KERNEL_TOKEN"
ROOTS_ENV = "SELFPLAY_KERNEL_ROOTS"
MIN_TOKEN_LENGTH = 16
OPEN_PATHS = frozenset({"/health", "/health/live"})


class Roots:
    """Storage roots: local directories (resolved, symlinks followed) and S3 bucket/prefix pairs. A URI is
    inside a root when it is the root or below it at a path-segment boundary."""

    def __init__(self, uris: list[str]) -> None:
        self.uris = tuple(uris)
        self._locations = [parse(uri, "root") for uri in uris]

    def check(self, uri: str, field: str) -> None:
        """Raises 403 `uri_outside_roots` naming `field` when `uri` is outside every root."""
        loc = parse(uri, field)
        if not any(_inside(loc, root) for root in self._locations):
            raise KernelError(
                403,
                "uri_outside_roots",
                f"{field}: {uri!r} is outside this kernel's storage roots ({', '.join(self.uris)}); "
                "add its root with --root or SELFPLAY_KERNEL_ROOTS",
            )


def _inside(loc: Location, root: Location) -> bool:
    if root.path is not None:
        if loc.path is None:
            return False
        return loc.path.resolve().is_relative_to(root.path.resolve())
    if loc.path is not None or loc.bucket != root.bucket:
        return False
    parts = loc.prefix.split("/") if loc.prefix else []
    if any(part in ("..", ".") for part in parts):
        return False
    base = root.prefix.split("/") if root.prefix else []
    return parts[: len(base)] == base


@dataclass(frozen=True)
class Access:
    """The token every protected route needs (None: none) and the storage roots (None: anywhere)."""

    token: str | None = None
    roots: Roots | None = None

    def check_uri(self, uri: str, field: str = "uri") -> None:
        if self.roots is not None:
            self.roots.check(uri, field)


def access_from_env(roots: list[str] | None = None, env: dict[str, str] | None = None) -> Access:
    """The token from SELFPLAY_KERNEL_TOKEN and the roots from `roots` (the --root flags) or
    SELFPLAY_KERNEL_ROOTS; a token shorter than 16 characters is a start-up error."""
    env = dict(os.environ) if env is None else env
    token = env.get(TOKEN_ENV) or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise SystemExit(f"{TOKEN_ENV}: the token has {len(token)} characters; use at least {MIN_TOKEN_LENGTH}")
    listed = roots or [r.strip() for r in env.get(ROOTS_ENV, "").split(",") if r.strip()]
    try:
        confined = Roots(listed) if listed else None
    except KernelError as err:
        raise SystemExit(f"--root / {ROOTS_ENV}: {err.message}") from None
    return Access(token=token, roots=confined)


def check_exposure(host: str, access: Access, needs_roots: bool) -> None:
    """Refuses to serve beyond loopback without a token (and, for a kernel that touches storage, roots)."""
    if _loopback(host):
        return
    if access.token is None:
        raise SystemExit(
            f"--host {host}: refusing to listen beyond loopback without a token; set {TOKEN_ENV} "
            "(every client sends it as a bearer token)"
        )
    if needs_roots and access.roots is None:
        raise SystemExit(
            f"--host {host}: refusing to listen beyond loopback without storage roots; pass --root "
            f"(or {ROOTS_ENV}) with the s3:// prefixes and directories the kernel may read and write"
        )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def install_token_check(app: FastAPI, token: str | None) -> None:
    """401 for a request without the bearer token (every route but OPEN_PATHS); nothing when no token."""
    if token is None:
        return
    expected = f"Bearer {token}".encode()

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        if request.url.path in OPEN_PATHS:
            return await call_next(request)
        given = request.headers.get("authorization", "").encode()
        if hmac.compare_digest(given, expected):
            return await call_next(request)
        why = "has no Authorization header" if not given else "carries a wrong bearer token"
        error = KernelError(
            401,
            "unauthorized",
            f"the request {why}: this kernel needs 'Authorization: Bearer <token>' with the token in "
            f"its {TOKEN_ENV}",
        )
        return JSONResponse(error.body(), status_code=401, headers={"WWW-Authenticate": "Bearer"})


def add_health_route(app: FastAPI) -> None:
    """`GET /health`, answered on the event loop: it never waits for a worker thread (see app.py)."""

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

