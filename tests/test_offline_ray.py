"""``--engine ray`` gives the same traces, contents and counts as the local engine."""

from __future__ import annotations

import orjson
import pytest
from offline_support import demo_logs, otlp_line

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
    logs = demo_logs(tmp_path, runs=2, seed=5, batch=3)
    with open(logs / "a.json", "ab") as f:
        f.write(b"{broken\n")
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
