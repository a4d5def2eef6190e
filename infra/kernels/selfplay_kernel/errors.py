"""The one error type every route turns into a JSON answer `{"error": {"type", "message", "code"}}`, and the
answers for a stored object that does not decode and for storage that is full."""

from __future__ import annotations

import errno


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


# A full disk and a used-up quota, from a local write or a local staging directory.
_FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def storage_full(err: BaseException) -> KernelError | None:
    """507 `storage_full` when `err`, or what it was raised from or during, says storage is full: ENOSPC or EDQUOT
    from a write (a checkpoint's staging directory, a local save), or S3's answer to a put on a full drive (MinIO's
    `XMinioStorageFull`, "Storage backend has reached its minimum free drive threshold", HTTP 507; boto3's upload
    wraps it in S3UploadFailedError). No retry frees space, so the client fails at once (`StorageFull`) and the
    run waits for its operator; None for anything else."""
    seen: BaseException | None = err
    for _ in range(8):
        if seen is None:
            return None
        answer = getattr(seen, "response", None)
        s3 = answer if isinstance(answer, dict) else {}
        if (
            (isinstance(seen, OSError) and seen.errno in _FULL_DISK_ERRNOS)
            or s3.get("Error", {}).get("Code") == "XMinioStorageFull"
            or s3.get("ResponseMetadata", {}).get("HTTPStatusCode") == 507
        ):
            return KernelError(
                507,
                "storage_full",
                "storage full: free space or raise the retention, then `selfplay retry RUN` "
                f"({type(err).__name__}: {err})",
            )
        seen = seen.__cause__ or seen.__context__
    return None
