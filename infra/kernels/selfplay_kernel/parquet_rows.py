"""Parquet files (the format of Hugging Face datasets) as JSON Lines, for the orchestrator's input reader
(activities/lib/input-records.ts): corpora, benchmarks, seed questions and answer sets given as `.parquet`.

    python -m selfplay_kernel.parquet_rows read FILE
        prints `{"columns": [...]}` (the file's schema), then one JSON object per row, row group by row group:
        memory holds one row group, and the pipe's back-pressure keeps the reader from running ahead.
    python -m selfplay_kernel.parquet_rows write FILE [--row-group-rows N] < rows.jsonl
        writes JSON Lines from stdin as a Parquet file, N rows (default 10,000) a row group, the schema taken
        from the first rows: to convert a JSONL corpus or benchmark.

A file that is not Parquet, or breaks part way, exits with status 2 and one line on stderr saying what is wrong.
"""

from __future__ import annotations

import json
import math
import sys
from typing import IO, Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

#: Rows decoded at a time within a row group, and the read buffer of a column chunk: pages are read as they are
#: decoded rather than a row group's column chunks at once (on the corpus benchmark's 10,000-document row groups,
#: 157 MB peak instead of 239 MB, of which 72 MB is Python with pyarrow loaded).
BATCH_ROWS = 128
READ_BUFFER_BYTES = 1 << 20
BAD_FILE = 2


class BadFile(Exception):
    """The file is not readable Parquet; the message says where."""


def rows(path: str) -> tuple[list[str], Iterator[dict[str, Any]]]:
    """The file's column names, and its rows one row group at a time."""
    try:
        parquet = pq.ParquetFile(path, pre_buffer=False, buffer_size=READ_BUFFER_BYTES)
    except (pa.ArrowInvalid, OSError) as err:
        raise BadFile(f"not a Parquet file ({err})") from err

    def each() -> Iterator[dict[str, Any]]:
        for group in range(parquet.num_row_groups):
            try:
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[group]):
                    yield from batch.to_pylist()
            except (pa.ArrowException, OSError) as err:
                raise BadFile(f"row group {group} of {parquet.num_row_groups} is unreadable ({err})") from err

    return parquet.schema_arrow.names, each()


def to_json(row: dict[str, Any]) -> str:
    """One row as JSON: NaN and infinities (which JSON lacks) as null, bytes as UTF-8 text, dates as ISO text."""
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except ValueError:
        return json.dumps(_finite(row), ensure_ascii=False, allow_nan=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def read(path: str, out: IO[str]) -> None:
    names, each = rows(path)
    out.write(json.dumps({"columns": names}) + "\n")
    for row in each:
        out.write(to_json(row) + "\n")


def write(path: str, lines: IO[str], row_group_rows: int = 10_000) -> int:
    """Writes the JSON Lines as Parquet; returns the rows written."""
    writer: pq.ParquetWriter | None = None
    pending: list[dict[str, Any]] = []
    written = 0

    def flush() -> None:
        nonlocal writer
        table = pa.Table.from_pylist(pending, schema=writer.schema if writer else None)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=row_group_rows)
        pending.clear()

    for line in lines:
        if line.strip():
            pending.append(json.loads(line))
            written += 1
        if len(pending) >= row_group_rows:
            flush()
    if pending or writer is None:
        flush()
    assert writer is not None
    writer.close()
    return written


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "read":
        try:
            read(argv[1], sys.stdout)
        except BadFile as err:
            print(err, file=sys.stderr)
            return BAD_FILE
        return 0
    if len(argv) in (2, 4) and argv[0] == "write" and argv[2:3] in ([], ["--row-group-rows"]):
        write(argv[1], sys.stdin, int(argv[3]) if len(argv) == 4 else 10_000)
        return 0
    print(__doc__, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
