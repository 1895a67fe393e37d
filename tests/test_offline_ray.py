"""``--engine ray`` gives the same traces, contents and counts as the local engine."""

from __future__ import annotations

import random

import orjson
import pytest
from offline_support import json_lines, otlp_line, proto_file, record_demo_runs

from orch_otel.offline import convert_inputs
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import load_contents

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'orch-otel[ray]'")
pytest.importorskip("ray.data", reason="Ray Data is in the optional extra: pip install 'orch-otel[ray]'")

T0 = 1_700_000_000_000_000_000


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_output_equals_local_output(tmp_path):
    _, _, spans = record_demo_runs(tmp_path / "live", runs=2)
    shuffled = list(spans)
    random.Random(5).shuffle(shuffled)
    batches = [shuffled[i:i + 3] for i in range(0, len(shuffled), 3)]
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.json").write_bytes(json_lines(batches[::2]) + b"{broken\n")
    (logs / "b.pb").write_bytes(proto_file(batches[1::2]))
    tid = "0af7651916cd43dd8448eb211c80319c"
    child = SpanRecord(tid, "1000000000000002", "1000000000000001", "c", T0, T0 + 1)
    changed = SpanRecord(tid, "1000000000000002", "1000000000000001", "other", T0, T0 + 1)
    (logs / "c.json").write_bytes(otlp_line([child, child, changed]))  # no root; one duplicate, one conflict

    local = convert_inputs([logs], tmp_path / "local" / "out.jsonl")
    remote = convert_inputs([logs], tmp_path / "ray" / "out.jsonl", engine="ray")

    def lines(path):
        return sorted(path.read_bytes().splitlines(), key=lambda line: orjson.loads(line).get("trace_id", ""))

    assert lines(tmp_path / "ray" / "out.jsonl") == lines(tmp_path / "local" / "out.jsonl")
    assert len(lines(tmp_path / "local" / "out.jsonl")) == 3
    assert load_contents(tmp_path / "ray") == load_contents(tmp_path / "local")
    assert remote.as_dict() == local.as_dict()
    assert (local.duplicates, local.conflicts, local.bad_records, local.incomplete) == (1, 1, 1, 1)
    assert sorted((tmp_path / "ray" / "out.jsonl.quarantine").read_bytes().splitlines()) == sorted(
        (tmp_path / "local" / "out.jsonl.quarantine").read_bytes().splitlines())
