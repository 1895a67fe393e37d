"""Trace files under a full disk: whole lines or nothing, and the content
store only counts a ref as written once it is on disk. The disk limit is real:
the kernel's file size limit (RLIMIT_FSIZE) in a child process."""

from __future__ import annotations

import sys

import orjson
import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics checked on Linux only")

CHILD = r"""
import json, resource, signal
from pathlib import Path
from orch_otel.tracefiles import TraceWriter

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead of killing us
out = Path(OUT)
writer = TraceWriter(out)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)

def trace(i):
    return {"trace_id": f"t{i}", "events": [{"id": "e1", "pad": "x" * 300}]}

writer.write(trace(1), {"b2:one": '"first"'})
size = writer.trace_path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 100, hard))  # room for a third of the next line
failures = []
for i in (2, 3):
    try:
        writer.write(trace(i), {f"b2:{i}": '"' + "y" * 400 + '"'})
    except OSError as exc:
        failures.append(exc.errno)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space again
writer.write(trace(4), {"b2:2": '"' + "y" * 400 + '"'})  # a ref whose earlier write failed
writer.close()
print(json.dumps({"failures": failures, "traces": str(writer.trace_path), "contents": str(writer.content_path)}))
"""


def test_a_full_disk_leaves_whole_lines_and_the_next_write_lands_cleanly(run_python, tmp_path):
    done = run_python(CHILD.replace("OUT", repr(str(tmp_path / "traces"))))
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout.splitlines()[-1])
    assert len(report["failures"]) == 2  # both writes past the limit failed...
    raw = open(report["traces"], "rb").read()
    assert raw.endswith(b"\n")
    ids = [orjson.loads(line)["trace_id"] for line in raw.splitlines()]
    assert ids == ["t1", "t4"]  # ...and left nothing behind: no torn line, nothing glued onto it
    refs = [orjson.loads(line)["ref"] for line in open(report["contents"], "rb").read().splitlines()]
    assert refs == ["b2:one", "b2:2"]  # b2:2 was written when space came back, not skipped as "already written"


def test_a_torn_tail_left_by_a_crash_is_cut_before_the_next_line(tmp_path):
    from orch_otel.tracefiles import LineFile

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"trace_id": "a"}\n{"trace_id": "b", "ev')  # killed mid-line
    log = LineFile(path, append=True)
    log.write(b'{"trace_id": "c"}\n')
    log.close()
    assert path.read_bytes() == b'{"trace_id": "a"}\n{"trace_id": "c"}\n'
