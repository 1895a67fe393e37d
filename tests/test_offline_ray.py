"""``--engine ray`` gives the same traces, contents, quarantine and counts as the
local engine, on a local Ray cluster of two nodes (``ray.cluster_utils.Cluster``),
with files cut into byte ranges and spans shuffled between partitions."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from fuzz_strategies import lines as fuzzed_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offline_support import demo_logs, otlp_line, zstd

from orch_otel.offline import Options, convert_inputs, ranges, ray_engine
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import BOM, load_contents

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'orch-otel[ray]'")

T0 = 1_700_000_000_000_000_000
EXACT = Options(linger=10**9, max_open_traces=10**9)  # the local engine holding every trace to the end: exact grouping


RUN = {"gen_ai.operation.name": "invoke_workflow"}  # orch-otel's: a run (spans with none are not written)


def _sorted_lines(path) -> list[bytes]:
    return sorted(path.read_bytes().splitlines()) if path.exists() else []


def _same_outputs(tmp_path, inputs, options=EXACT):
    local = convert_inputs(inputs, tmp_path / "local" / "out.jsonl", options=options)
    remote = convert_inputs(inputs, tmp_path / "ray" / "out.jsonl", engine="ray", options=options)
    for name in ("out.jsonl", "out.jsonl.quarantine"):
        assert _sorted_lines(tmp_path / "ray" / name) == _sorted_lines(tmp_path / "local" / name), name
    assert load_contents(tmp_path / "ray") == load_contents(tmp_path / "local")
    assert remote.as_dict() == local.as_dict()
    return local


def test_the_cluster_has_two_nodes(ray_cluster):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    assert ray.cluster_resources()["CPU"] == 2


def test_ray_output_equals_local_output(ray_cluster, tmp_path, small_ranges):
    logs = demo_logs(tmp_path, runs=2, seed=5, batch=3)
    with open(logs / "a.json", "ab") as f:
        f.write(b"{broken\n")
    tid = "0af7651916cd43dd8448eb211c80319c"
    child = SpanRecord(tid, "1000000000000002", "1000000000000001", "c", T0, T0 + 1, attributes=RUN)
    changed = SpanRecord(tid, "1000000000000002", "1000000000000001", "other", T0, T0 + 1, attributes=RUN)
    (logs / "c.json").write_bytes(otlp_line([child, child, changed]))  # no root; one duplicate, one conflict
    (logs / "d.json.zst").write_bytes(zstd((logs / "a.json").read_bytes()))  # read whole: every span a duplicate

    local = _same_outputs(tmp_path, [logs], Options())
    assert len(_sorted_lines(tmp_path / "local" / "out.jsonl")) == 3
    assert local.duplicates > 1 and local.conflicts == 1 and local.bad_records == 2 and local.incomplete == 1


def test_problems_keep_their_file_and_line_across_byte_ranges(ray_cluster, tmp_path, small_ranges):
    tid = "1" * 32
    spans = [SpanRecord(tid, f"{n:016x}", None if n == 1 else "0000000000000001", f"s{n}", T0, T0 + n, attributes=RUN)
             for n in range(1, 30)]
    good = [otlp_line([s]) for s in spans]
    bad_span = orjson.loads(otlp_line([spans[0]]))
    bad_span["resourceSpans"][0]["scopeSpans"][0]["spans"].insert(0, {"traceId": tid, "spanId": "2" * 16,
                                                                     "startTimeUnixNano": "soon"})
    lines = [*good[:2], b"\n", *good[2:6], b"{broken\n", *good[6:11], orjson.dumps(bad_span) + b"\n", *good[11:]]
    src = tmp_path / "in.json"
    src.write_bytes(BOM + b"".join(lines))
    assert len(ranges.split([src], 2, lambda rs: [ranges.count_range(r) for r in rs])) > 5

    _same_outputs(tmp_path, [src])
    rows = [orjson.loads(x) for x in _sorted_lines(tmp_path / "ray" / "out.jsonl.quarantine")]
    assert sorted((r["where"], r["reason"].split(":")[0]) for r in rows) == [
        (f"{src}:14", "resourceSpans[0].scopeSpans[0].spans[0]"), (f"{src}:8", "malformed JSON")]
    (trace,) = [orjson.loads(x) for x in _sorted_lines(tmp_path / "ray" / "out.jsonl")]
    assert trace["trace_id"] == tid


def test_a_file_of_another_commands_output_is_one_problem(ray_cluster, tmp_path, small_ranges):
    logs = demo_logs(tmp_path, runs=3, seed=1, batch=2)
    convert_inputs([logs], tmp_path / "first" / "traces.jsonl")
    assert len(_sorted_lines(tmp_path / "first" / "traces.jsonl")) == 3

    local = _same_outputs(tmp_path, [tmp_path / "first" / "traces.jsonl", logs / "a.json"])
    (row,) = [orjson.loads(x) for x in _sorted_lines(tmp_path / "ray" / "out.jsonl.quarantine")]
    assert "this is a file of converted traces" in row["reason"] and local.bad_records == 1


def test_lines_nested_deeper_than_orjson_writes_are_shipped_whole(ray_cluster, tmp_path, small_ranges):
    value = b'{"stringValue":"x"}'
    for _ in range(70):  # about 280 levels: orjson reads it, but writes at most 254
        value = b'{"kvlistValue":{"values":[{"key":"k","value":' + value + b"}]}}"
    tids = ["00000001" + "a" * 24, "00000002" + "b" * 24]  # one trace per partition (two partitions)
    line = orjson.loads(otlp_line([SpanRecord(t, "3" * 16, None, "root", T0, T0 + 1) for t in tids]))
    line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [{"key": "deep", "value": "DEEP"}]
    line["resourceSpans"][0]["scopeSpans"][0]["spans"].append({"traceId": "zz", "spanId": "4" * 16})
    text = orjson.dumps(line).replace(b'"DEEP"', value)
    with pytest.raises(TypeError):
        orjson.dumps(orjson.loads(text))
    src = tmp_path / "in.json"
    src.write_bytes(b"".join([text + b"\n", *(otlp_line([SpanRecord(t, "5" * 16, "3" * 16, "c", T0, T0 + 1)])
                                              for t in tids)]))

    first = ranges.split([src], 1, lambda rs: [ranges.count_range(x) for x in rs])[0]
    *parts, _ = ray_engine.map_range(first, 2)  # the range holding the deep line
    assert [t.column("kind").to_pylist()[0] for t in parts] == [ray_engine._LINE] * 2

    local = _same_outputs(tmp_path, [src])
    assert local.spans == 5 and local.quarantined_spans >= 1  # the bad id, reported once


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(fuzzed_lines(), min_size=1, max_size=10), st.integers(1, 3), st.randoms(use_true_random=False))
def test_ray_equals_local_on_fuzzed_logs_split_across_files(ray_cluster, tmp_path_factory, small_ranges, data, files, rng):
    tmp = tmp_path_factory.mktemp("fuzz")
    rng.shuffle(data)
    inputs = [tmp / f"in{k}.json" for k in range(files)]
    for k, path in enumerate(inputs):
        path.write_bytes(b"".join(line for n, (line, _, _) in enumerate(data) if n % files == k))
    _same_outputs(tmp, inputs)


def test_convert_joins_a_cluster_by_address_from_the_command_line(ray_cluster, tmp_path):
    logs = demo_logs(tmp_path, runs=2, seed=3, batch=3)
    local = convert_inputs([logs], tmp_path / "local" / "out.jsonl")
    proc = subprocess.run([sys.executable, "-m", "orch_otel", "convert", str(logs), "-o", str(tmp_path / "ray" / "out.jsonl"),
                           "--engine", "ray", "--address", ray_cluster.address], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert _sorted_lines(tmp_path / "ray" / "out.jsonl") == _sorted_lines(tmp_path / "local" / "out.jsonl")
    assert local.traces == 2
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2  # the cluster keeps running


def test_one_span_per_partition_table_row_is_never_shipped(tmp_path):
    """Spans travel in blocks: one map task's table per partition holds a row per
    input line, whatever the number of spans in the line."""
    spans = [SpanRecord(f"{n:08x}" + "c" * 24, "6" * 16, None, "root", T0, T0 + 1) for n in range(1, 201)]
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line(spans[:100]) + otlp_line(spans[100:]))
    (r,) = ranges.split([src], 1, lambda rs: [ranges.count_range(x) for x in rs])
    *parts, problems = ray_engine.map_range(r, 2)
    assert [t.num_rows for t in parts] == [2, 2] and problems.num_rows == 0


def test_partitions_grouped_into_fewer_tables_give_the_same_output(ray_cluster, tmp_path, small_ranges, monkeypatch):
    """Past a few tables per CPU, a map task ships one table per group of partitions
    (Ray's driver keeps some kilobytes per object); each reduce keeps its own rows."""
    monkeypatch.setattr(ray_engine, "_partitions", lambda files, cpus: 5)
    monkeypatch.setattr(ray_engine, "_group_size", lambda partitions, cpus: 3)
    logs = demo_logs(tmp_path, runs=3, seed=5, batch=2)
    assert _same_outputs(tmp_path, [logs]).traces == 3
    src = next(logs.glob("*.json"))
    (r, *_) = ranges.split([src], 1, lambda rs: [ranges.count_range(x) for x in rs])
    *groups, _ = ray_engine.map_range(r, 5, 3)
    assert len(groups) == 2 and sum(t.num_rows for t in groups) > 0
    assert [set(t.column("partition").to_pylist()) <= ps for t, ps in zip(groups, ({0, 1, 2}, {3, 4}))] == [True, True]
