"""The one error type every route turns into a JSON answer `{"error": {"type", "message", "code"}}`, and the
answer for a stored object that does not decode."""

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


def corrupt_object(message: str) -> KernelError:
    """422 `corrupt_object`: a stored object is there but does not decode (bad gzip, truncated, not JSON, an
    unreadable safetensors or torch file, bytes other than the request's sha256). Neither a storage outage (5xx,
    worth retrying) nor a request the kernel refuses (4xx): a retry reads the same bytes, so the client fails at
    once (`CorruptData`). `message` names the object and what is wrong with it."""
    return KernelError(422, "corrupt_object", message)
