"""Who may drive a kernel and where it may read and write.

Every route but `GET /health` and `GET /health/live` (left open for readiness and liveness probes; they tell
nothing but "up" and, when the kernel is wedged, which operation holds it and for how long: watchdog.py) needs
`Authorization: Bearer <token>`, the token coming from `SELFPLAY_KERNEL_TOKEN`, or any of the tokens in the
file `SELFPLAY_KERNEL_TOKEN_FILE` names (one per line, re-read when it changes, so a token rotates while the
kernel runs: docs/security.md). Every URI a request names
(batch, checkpoint, snapshot) must lie under one of the configured storage roots (`--root`, or
`SELFPLAY_KERNEL_ROOTS`, comma-separated). A kernel without a token accepts anything from every process that
can reach it, loopback included (any local user, any container sharing the network namespace), so it starts
that way only when the operator says so (`--insecure-no-token`) and only on a loopback address; a kernel
without roots starts only on loopback. `check_exposure` refuses the rest.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from .errors import KernelError
from .storage import Location, parse

log = logging.getLogger(__name__)

TOKEN_ENV = "SELFPLAY_KERNEL_TOKEN"
TOKEN_FILE_ENV = "SELFPLAY_KERNEL_TOKEN_FILE"
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


class TokenFile:
    """The tokens of a file, one per line, each accepted. Re-read when its modification time or size changes
    (a Kubernetes Secret volume swaps the file in place); a change that leaves no valid token (a half-written
    edit, a line under 16 characters) is logged and ignored, so the kernel keeps the tokens it had."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._tokens: tuple[str, ...] = ()
        problem = self._reload()
        if problem:
            raise SystemExit(f"{TOKEN_FILE_ENV}: {problem}")

    def tokens(self) -> tuple[str, ...]:
        problem = self._reload()
        if problem:
            log.warning("%s: %s; the kernel keeps accepting its previous tokens", TOKEN_FILE_ENV, problem)
        return self._tokens

    def _reload(self) -> str | None:
        try:
            stat = self.path.stat()
            if (stat.st_mtime_ns, stat.st_size) == self._stamp:
                return None
            lines = [line.strip() for line in self.path.read_text().splitlines() if line.strip()]
        except OSError as err:
            return f"cannot read {self.path}: {err.strerror}"
        if not lines:
            return f"{self.path} holds no token"
        short = [i + 1 for i, line in enumerate(lines) if len(line) < MIN_TOKEN_LENGTH]
        if short:
            return f"{self.path}: the token on line {short[0]} has under {MIN_TOKEN_LENGTH} characters"
        self._stamp, self._tokens = (stat.st_mtime_ns, stat.st_size), tuple(lines)
        return None


@dataclass(frozen=True)
class Access:
    """The token every protected route needs (None: none; `token_file` instead: any of its tokens) and the
    storage roots (None: anywhere)."""

    token: str | None = None
    roots: Roots | None = None
    token_file: TokenFile | None = None

    @property
    def protected(self) -> bool:
        return self.token is not None or self.token_file is not None

    def tokens(self) -> tuple[str, ...]:
        if self.token_file is not None:
            return self.token_file.tokens()
        return () if self.token is None else (self.token,)

    def check_uri(self, uri: str, field: str = "uri") -> None:
        if self.roots is not None:
            self.roots.check(uri, field)


def access_from_env(roots: list[str] | None = None, env: dict[str, str] | None = None) -> Access:
    """The token from SELFPLAY_KERNEL_TOKEN and the roots from `roots` (the --root flags) or
    SELFPLAY_KERNEL_ROOTS; a token shorter than 16 characters is a start-up error."""
    env = dict(os.environ) if env is None else env
    token = env.get(TOKEN_ENV) or None
    if token is not None and env.get(TOKEN_FILE_ENV):
        raise SystemExit(f"{TOKEN_ENV} and {TOKEN_FILE_ENV} are both set; keep one (the file lists several tokens)")
    token_file = TokenFile(Path(env[TOKEN_FILE_ENV])) if env.get(TOKEN_FILE_ENV) else None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise SystemExit(f"{TOKEN_ENV}: the token has {len(token)} characters; use at least {MIN_TOKEN_LENGTH}")
    listed = roots or [r.strip() for r in env.get(ROOTS_ENV, "").split(",") if r.strip()]
    try:
        confined = Roots(listed) if listed else None
    except KernelError as err:
        raise SystemExit(f"--root / {ROOTS_ENV}: {err.message}") from None
    return Access(token=token, roots=confined, token_file=token_file)


def check_exposure(host: str, access: Access, needs_roots: bool, insecure_no_token: bool = False) -> None:
    """Refuses to serve without a token unless `insecure_no_token` (the operator's explicit
    `--insecure-no-token`) and the host is loopback; refuses no roots beyond loopback."""
    if access.protected and insecure_no_token:
        raise SystemExit(
            f"--insecure-no-token: {TOKEN_ENV} is set, so the kernel would check it anyway; drop the flag "
            f"(or unset {TOKEN_ENV} to run open on loopback)"
        )
    if not access.protected and not _loopback(host):
        raise SystemExit(
            f"--host {host}: refusing to listen beyond loopback without a token; set {TOKEN_ENV} "
            "(every client sends it as a bearer token)"
        )
    if not access.protected and not insecure_no_token:
        raise SystemExit(
            f"refusing to start without a token: every process that reaches {host} could train, checkpoint, "
            f"restore and publish this kernel; set {TOKEN_ENV} (at least {MIN_TOKEN_LENGTH} characters, e.g. "
            "`openssl rand -hex 24`; clients send it as a bearer token), or on a machine of your own pass "
            "--insecure-no-token"
        )
    if _loopback(host):
        return
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


def install_token_check(app: FastAPI, access: Access) -> None:
    """401 for a request without a bearer token `access` accepts (every route but OPEN_PATHS); nothing when
    the kernel has no token."""
    if not access.protected:
        return

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        if request.url.path in OPEN_PATHS:
            return await call_next(request)
        given = request.headers.get("authorization", "").encode()
        # Every token compared, in constant time each: which one matched is not timed either.
        matched = [hmac.compare_digest(given, f"Bearer {token}".encode()) for token in access.tokens()]
        if any(matched):
            return await call_next(request)
        why = "has no Authorization header" if not given else "carries a wrong bearer token"
        error = KernelError(
            401,
            "unauthorized",
            f"the request {why}: this kernel needs 'Authorization: Bearer <token>' with the token in "
            f"its {TOKEN_ENV} (or one of the tokens in its {TOKEN_FILE_ENV})",
        )
        return JSONResponse(error.body(), status_code=401, headers={"WWW-Authenticate": "Bearer"})


def add_health_route(app: FastAPI) -> None:
    """`GET /health`, answered on the event loop: it never waits for a worker thread (see app.py)."""

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

