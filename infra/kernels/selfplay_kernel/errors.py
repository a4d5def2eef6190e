"""The one error type every route turns into a JSON answer `{"error": {"type", "message", "code"}}`."""

from __future__ import annotations


class KernelError(Exception):
    """A request that failed for a reason the caller should read: `status` 4xx when retrying cannot help
    (malformed batch, unknown policy, version conflict), 5xx when it might."""

    def __init__(self, status: int, type: str, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.code = code or type

    def body(self) -> dict:
        return {"error": {"type": self.type, "message": self.message, "code": self.code}}
