"""Object storage behind the kernel's URIs: `file:///abs/path`, a plain absolute path, or `s3://bucket/key`.

Batches are single objects; checkpoints and snapshots are directory-like prefixes (a `Location`). S3 uses
boto3 with `S3_ENDPOINT` (path-style addressing, as MinIO needs) and the usual `AWS_*` variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from .errors import KernelError


class ObjectNotFound(Exception):
    """The URI names no object. Retrying cannot help, unlike other storage failures."""


@dataclass(frozen=True)
class Location:
    """A local directory (`path`) or an S3 prefix (`bucket`, `prefix`); objects inside are named relatively."""

    uri: str
    path: Path | None = None
    bucket: str = ""
    prefix: str = ""

    def child(self, name: str) -> str:
        """The URI-free key or path of the object `name` inside this location."""
        if self.path is not None:
            return str(inside(self.path, name, self.uri))
        return f"{self.prefix}/{name}" if self.prefix else name

    def read(self, name: str) -> bytes:
        return _read(self, self.child(name))

    def exists(self, name: str) -> bool:
        try:
            self.read(name)
        except ObjectNotFound:
            return False
        return True

    def write(self, name: str, data: bytes) -> None:
        if self.path is not None:
            target = inside(self.path, name, self.uri)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, target)
        else:
            _s3().put_object(Bucket=self.bucket, Key=self.child(name), Body=data)

    def delete(self, name: str) -> None:
        if self.path is not None:
            inside(self.path, name, self.uri).unlink(missing_ok=True)
        else:
            _s3().delete_object(Bucket=self.bucket, Key=self.child(name))

    def upload_dir(self, local: Path, skip: frozenset[str] = frozenset()) -> None:
        """Copies every file under the local staging directory `local` to this S3 prefix (except `skip`)."""
        client = _s3()
        for file in sorted(p for p in local.rglob("*") if p.is_file()):
            name = file.relative_to(local).as_posix()
            if name not in skip:
                client.upload_file(str(file), self.bucket, self.child(name))

    def download_dir(self, local: Path) -> Path:
        """Makes the objects of this location available as files; a local location is used in place."""
        if self.path is not None:
            if not self.path.is_dir():
                raise ObjectNotFound(f"no directory at {self.uri}")
            return self.path
        client = _s3()
        start = f"{self.prefix}/" if self.prefix else ""
        found = False
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            for item in page.get("Contents", []):
                rel = item["Key"][len(start) :]
                if not rel or rel.endswith("/"):
                    continue  # the prefix itself, or a "directory" placeholder: no file to write
                target = inside(local, rel, f"s3://{self.bucket}/{item['Key']}")
                target.parent.mkdir(parents=True, exist_ok=True)
                client.download_file(self.bucket, item["Key"], str(target))
                found = True
        if not found:
            raise ObjectNotFound(f"no objects under {self.uri}")
        return local


def inside(base: Path, name: str, source: str) -> Path:
    """`base / name`, refused unless `name` is a relative path of plain segments: no empty, `.` or `..`
    segment (an S3 key `ckpt//tmp/x` would otherwise name the absolute `/tmp/x`), and no symlink in `base`
    leading out of it. A stored checkpoint is data anyone with write access to the bucket may have shaped."""
    segments = name.split("/")
    if any(segment in ("", ".", "..") for segment in segments):
        raise KernelError(
            400,
            "unsafe_path",
            f"{source}: the name {name!r} has an empty, '.' or '..' segment; the kernel writes only below "
            f"{base}, so remove or rename that object",
        )
    target = base.joinpath(*segments)
    if not target.resolve().is_relative_to(base.resolve()):
        raise KernelError(400, "unsafe_path", f"{source}: {name!r} leads outside {base} (through a symlink)")
    return target


def parse(uri: str, field: str = "uri") -> Location:
    """Parses a URI into a Location; a 400 names `field` when the URI is of no supported kind."""
    if uri.startswith("s3://"):
        parsed = urlparse(uri)
        if not parsed.netloc:
            raise KernelError(400, "invalid_request", f"{field}: {uri!r} names no bucket")
        return Location(uri=uri, bucket=parsed.netloc, prefix=parsed.path.strip("/"))
    if uri.startswith("file://"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            raise KernelError(400, "invalid_request", f"{field}: file URI {uri!r} names a remote host")
        path = unquote(parsed.path)
    else:
        path = uri
    if not os.path.isabs(path):
        raise KernelError(
            400,
            "invalid_request",
            f"{field}: {uri!r} is not file:///abs/path, an absolute path or s3://bucket/key",
        )
    return Location(uri=uri, path=Path(os.path.normpath(path)))


def read_object(uri: str, field: str = "uri") -> bytes:
    """Reads one whole object; ObjectNotFound when it does not exist."""
    loc = parse(uri, field)
    if loc.path is not None:
        return _read(loc, str(loc.path))
    if not loc.prefix:
        raise KernelError(400, "invalid_request", f"{field}: {uri!r} names a bucket but no object key")
    return _read(loc, loc.prefix)


def _read(loc: Location, key: str) -> bytes:
    if loc.path is not None:
        try:
            return Path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as err:
            raise ObjectNotFound(f"no object at {key}") from err
    from botocore.exceptions import ClientError

    try:
        return _s3().get_object(Bucket=loc.bucket, Key=key)["Body"].read()
    except ClientError as err:
        code = err.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchKey", "404", "NotFound", "NoSuchBucket"):
            raise ObjectNotFound(f"no object at s3://{loc.bucket}/{key}") from err
        raise


def _s3():
    """An S3 client from the environment; path-style so MinIO-like endpoints work without DNS tricks."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=os.environ.get("S3_ENDPOINT") or None,
        region_name=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3, "mode": "standard"}),
    )
