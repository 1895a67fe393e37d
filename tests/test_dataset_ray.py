"""``engine="ray"`` runs the same per-record code in Ray tasks, one per byte
range of a trace file, and writes byte-identical output to the local engine:
on a local Ray cluster of two nodes (conftest.py's ``ray_cluster``), with
files cut into ranges of about 512 bytes (``small_ranges``) so that lines,
the byte order mark and bad lines cross range edges; small data."""

from __future__ import annotations

import json

import orjson
import pytest
from fixtures.dataset_runs import record, standard_runs

from orch_otel.datasets import VIEWS, Config, ContentMissing, Outcomes, build
from orch_otel.datasets import ray_engine as dataset_ray
from orch_otel.datasets.analysis import GROUP_VIEWS
from orch_otel.datasets.reader import raw_lines
from orch_otel.offline.ranges import Range, count_range, split
from orch_otel.tracefiles import BOM, content_dirs

ray = pytest.importorskip("ray", reason="needs orch-otel[ray]")
pa = pytest.importorskip("pyarrow", reason="needs orch-otel[ray]")

TRACE_VIEWS = [v for v in VIEWS if v not in GROUP_VIEWS]


def _edges_file(folder, traces) -> tuple:
    """``folder/traces-zz-edges.jsonl``: the traces three times again under new ids,
    after a byte order mark, with a blank line, a line of spaces, CRLF line ends,
    and bad lines among them. Returns the path and the numbers of the bad lines."""
    lines = [orjson.dumps({**t, "trace_id": f"{k + 1:032x}", "task_id": f"edges-{k}"}) for k, t in enumerate(traces * 3)]
    half = len(lines) // 2
    body = [BOM + lines[0] + b"\n", b"\n", b"        \n", b"{broken\n", lines[1] + b"\r\n", b"[1, 2]\n",
            *(line + b"\n" for line in lines[2:half]), b'{"trace_id": "t", "task_id": "t"}\n',
            *(line + b"\n" for line in lines[half:])]
    path = folder / "traces-zz-edges.jsonl"
    path.write_bytes(b"".join(body))
    return path, [4, 6, 5 + half]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ray_inputs")
    traces = record(base / "a", standard_runs(), capture=True)
    edges, bad = _edges_file(base / "a", traces)  # beside a's content store: its traces' content is found
    record(base / "b", standard_runs()[:2], capture=True)  # two folders: order across files matters
    with open(next((base / "b").glob("traces-*.jsonl")), "a") as handle:
        handle.write("not json\n")
    outcomes = base / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"task_id": "calc-ok", "success": 1}) + "\n")
    return base, Outcomes.load(outcomes), edges, bad


def _cut(path) -> list[Range]:
    return split([path], 2, lambda rs: [count_range(r, False) for r in rs], lambda _: True)


def _rejects(folder, view) -> list[str]:
    path = folder / f"{view}.rejects.jsonl"
    return [orjson.loads(x)["where"] for x in path.read_bytes().splitlines()] if path.exists() else []


@pytest.mark.parametrize("view", TRACE_VIEWS)
def test_ray_output_is_identical_to_local(ray_cluster, small_ranges, inputs, tmp_path, view, request):
    base, outcomes, edges, _ = inputs
    # triplets are token ids: none were captured in these runs, a tokenizer made in the tests makes them
    tokenizer = request.getfixturevalue("local_tokenizer") if view == "triplets" else None
    config = Config(view=view, outcomes=outcomes, tokenizer=tokenizer)
    local = build([base / "a", base / "b"], tmp_path / "local", config)
    remote = build([base / "a", base / "b"], tmp_path / "ray", config, engine="ray")
    assert local.rows_written > 0 and local.rejects == 4
    for name in (f"{view}.jsonl", f"{view}.rejects.jsonl"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    if view == "traces":
        name = "content/content-traces.jsonl"
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert {**remote.to_dict(), "engine": "local", "output": "", "rejects_path": ""} == {
        **local.to_dict(), "output": "", "rejects_path": ""}


def test_rejects_name_their_file_and_line_across_range_cuts(ray_cluster, small_ranges, inputs, tmp_path):
    base, _, edges, bad = inputs
    data = edges.read_bytes()
    starts = [0] + [k + 1 for k, byte in enumerate(data) if byte == ord("\n")]  # byte offset of each line
    ranges = _cut(edges)
    assert len(ranges) > dataset_ray._AHEAD * 2  # more ranges than the driver keeps in flight on two CPUs
    assert all(starts[r.first_line - 1] == r.start for r in ranges)  # each range knows its first line's number
    assert [r.start for r in ranges[1:]] == [r.end for r in ranges[:-1]] and ranges[-1].end == len(data)

    remote = build([edges], tmp_path / "ray", Config(view="decisions"), engine="ray")
    local = build([edges], tmp_path / "local", Config(view="decisions"))
    assert _rejects(tmp_path / "ray", "decisions") == [f"{edges}:{n}" for n in bad]
    assert (tmp_path / "ray" / "decisions.rejects.jsonl").read_bytes() == (
        tmp_path / "local" / "decisions.rejects.jsonl").read_bytes()
    assert remote.traces_read == local.traces_read == len(starts) - 1 - 2 - len(bad)  # less the blank and the bad lines


@pytest.fixture
def indexes(monkeypatch):
    """The map tasks' content index cache, here in this process: closed after the test."""
    cache: dict = {}
    monkeypatch.setattr(dataset_ray, "_indexes", cache)
    yield cache
    for store in cache.values():
        store.close()


def test_a_range_gives_one_table_holding_each_of_its_lines(small_ranges, inputs, indexes):
    """No Ray needed: the map task's function, run here on every range of a cut file."""
    base, _, edges, bad = inputs
    config = Config(view="decisions")
    dirs = tuple(content_dirs([edges.parent]))
    wheres = []
    for r in _cut(edges):
        table = dataset_ray.map_range(r, config, dirs)
        assert isinstance(table, pa.Table) and table.column_names == ["payload"]
        results = [orjson.loads(x) for x in table.column("payload").to_pylist()]
        assert len(results) == table.num_rows == len(list(raw_lines(edges, r.start, r.end, r.first_line)))
        wheres += [x["where"] for x in results]
        assert all(("reject" in x) == (int(x["where"].rpartition(":")[2]) in bad) for x in results)
    assert wheres == [line.where for line in raw_lines(edges)]  # every line once, in order, numbered as locally
    assert len(indexes) == 1  # one content index for all the ranges


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    from fixtures.branches import make_branches

    base = tmp_path_factory.mktemp("ray_branches")
    make_branches(base)
    return base / "captured"


@pytest.mark.parametrize("view", GROUP_VIEWS)
def test_ray_groups_and_pairs_are_identical_to_local(ray_cluster, small_ranges, branches, tmp_path, view):
    """The cross-trace views: branch rows come back to the driver and are grouped there, as in the local engine."""
    local = build([branches], tmp_path / "local", Config(view=view))
    remote = build([branches], tmp_path / "ray", Config(view=view), engine="ray")
    assert local.rows_written > 0 and local.groups == 3 and local.traces_not_branches == 1
    assert (tmp_path / "ray" / f"{view}.jsonl").read_bytes() == (tmp_path / "local" / f"{view}.jsonl").read_bytes()
    assert {**remote.to_dict(), "engine": "local", "output": ""} == {**local.to_dict(), "output": ""}


def test_ray_parquet_is_identical_to_local(ray_cluster, inputs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    base, *_ = inputs
    build([base / "a"], tmp_path / "local", Config(view="decisions"), fmt="parquet")
    build([base / "a"], tmp_path / "ray", Config(view="decisions"), fmt="parquet", engine="ray")
    assert pq.read_table(tmp_path / "ray" / "decisions.parquet").equals(
        pq.read_table(tmp_path / "local" / "decisions.parquet"))


def test_ray_content_errors_reach_the_driver(ray_cluster, tmp_path):
    record(tmp_path / "refs", standard_runs()[:1], capture=False)
    with pytest.raises(ContentMissing, match="needs captured content"):
        build([tmp_path / "refs"], tmp_path / "out", Config(view="chat"), engine="ray", strict=True)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray_bad") / "traces"
    return folder, record(folder, standard_runs()[:2], capture=True)


@pytest.mark.parametrize("case", ["duplicates", "deep content", "bad field"])
def test_ray_drops_duplicates_and_rejects_bad_traces_as_local_does(ray_cluster, small_ranges, two_runs, tmp_path, case):
    from test_bad_input import deep_content_inputs, duplicated_inputs

    src, traces = two_runs
    folder = tmp_path / "in"
    if case == "duplicates":
        duplicated_inputs(src, traces, folder)
    elif case == "deep content":
        deep_content_inputs(src, traces, folder)
    else:
        folder.mkdir()
        bad = {**traces[0], "events": [{**traces[0]["events"][0], "options": 7}, *traces[0]["events"][1:]]}
        (folder / "traces-x.jsonl").write_text(json.dumps(bad) + "\n" + json.dumps(traces[1]) + "\n")
    local = build([folder], tmp_path / "local", Config(view="decisions"))
    remote = build([folder], tmp_path / "ray", Config(view="decisions"), engine="ray")
    assert local.rejects >= 1 and local.rows_written > 0
    if case == "duplicates":
        assert (local.duplicates, local.conflicting_duplicates) == (2, 1)
    for name in ("decisions.jsonl", "decisions.rejects.jsonl"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert {**remote.to_dict(), "engine": "local", "output": "", "rejects_path": ""} == {
        **local.to_dict(), "output": "", "rejects_path": ""}


def test_ray_reads_the_runs_of_a_session_together_across_files(ray_cluster, small_ranges, tmp_path):
    """The first pass runs in Ray tasks too: two runs of one SDK session, a
    trace file each (run 2's given first), make the rows the local engine
    makes, in which run 2's billing row holds billing's run-1 turns as its own."""
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai_agents_apps as apps
    from fixtures.dataset_runs import record_instrumented
    from test_openai_agents_views import BILLING_RUN_2, _split_by_trace

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    _, second = record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), apps.handoffs_in_one_session)
    one, two = _split_by_trace(tmp_path / "traces", tmp_path / "split")
    build([two, one], tmp_path / "local", Config(view="chat"))
    build([two, one], tmp_path / "ray", Config(view="chat"), engine="ray")
    written = (tmp_path / "ray" / "chat.jsonl").read_bytes()
    assert written == (tmp_path / "local" / "chat.jsonl").read_bytes()
    rows = [json.loads(line) for line in written.splitlines()]
    (billing,) = [r for r in rows if r["trace_id"] == second["trace_id"] and r["agent"] == "billing"]
    assert billing["messages"] == BILLING_RUN_2
