"""The Parquet side of the input reader: rows out as JSON Lines in file order, row group by row group, values JSON
lacks made readable, and a file that is not Parquet refused with status 2 and a one-line reason."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from selfplay_kernel.parquet_rows import BAD_FILE, read, write

KERNELS = Path(__file__).resolve().parents[1]


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(KERNELS)}
    return subprocess.run(
        [sys.executable, "-m", "selfplay_kernel.parquet_rows", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
    )


def test_rows_come_out_in_order_with_the_schema_first(tmp_path):
    path = tmp_path / "corpus.parquet"
    rows = [{"id": f"d{i}", "text": f"text {i} é", "n": i} for i in range(25)]
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    assert write(str(path), io.StringIO(lines), row_group_rows=10) == 25
    assert pq.ParquetFile(path).num_row_groups == 3

    done = run("read", str(path))
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert json.loads(out[0]) == {"columns": ["id", "text", "n"]}
    assert [json.loads(line) for line in out[1:]] == rows


def test_values_json_lacks_are_made_readable(tmp_path):
    path = tmp_path / "odd.parquet"
    table = pa.table({"x": [float("nan"), 1.5], "b": [b"bytes", b"\xff"], "l": [[1.0, float("inf")], []]})
    pq.write_table(table, path)
    out = io.StringIO()
    read(str(path), out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()[1:]]
    assert rows == [{"x": None, "b": "bytes", "l": [1.0, None]}, {"x": 1.5, "b": "\ufffd", "l": []}]


def test_a_file_that_is_not_parquet_is_refused_in_one_line(tmp_path):
    path = tmp_path / "corpus.parquet"
    path.write_text('{"id": "a", "text": "JSONL misnamed"}\n')
    done = run("read", str(path))
    assert done.returncode == BAD_FILE
    assert done.stdout == ""
    assert done.stderr.startswith("not a Parquet file (")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_truncated_file_is_refused(tmp_path):
    path = tmp_path / "cut.parquet"
    write(str(path), io.StringIO("".join(json.dumps({"t": "x" * 100}) + "\n" for _ in range(100))))
    path.write_bytes(path.read_bytes()[:-40])
    assert run("read", str(path)).returncode == BAD_FILE


def test_write_converts_stdin(tmp_path):
    path = tmp_path / "w.parquet"
    done = run("write", str(path), "--row-group-rows", "2", stdin='{"q": "a"}\n\n{"q": "b"}\n{"q": "c"}\n')
    assert done.returncode == 0, done.stderr
    assert pq.read_table(path).to_pylist() == [{"q": "a"}, {"q": "b"}, {"q": "c"}]
    assert pq.ParquetFile(path).num_row_groups == 2
