"""``engine="ray"`` runs the same per-record code on Ray Data and writes
byte-identical output to the local engine (small data; one Ray runtime for
the module, 2 CPUs)."""

from __future__ import annotations

import json

import pytest
from fixtures.dataset_runs import record, standard_runs

from orch_otel.datasets import Config, ContentMissing, Outcomes, build

ray = pytest.importorskip("ray", reason="needs orch-otel[ray]")


@pytest.fixture(scope="module")
def ray_runtime():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    base = tmp_path_factory.mktemp("ray_inputs")
    record(base / "a", standard_runs(), capture=True)
    record(base / "b", standard_runs()[:2], capture=True)  # two files: order across files matters
    with open(next((base / "b").glob("traces-*.jsonl")), "a") as handle:
        handle.write("not json\n")
    outcomes = base / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"task_id": "calc-ok", "success": 1}) + "\n")
    return base, Outcomes.load(outcomes)


@pytest.mark.parametrize("view", ["traces", "decisions", "turns", "chat", "triplets"])
def test_ray_output_is_identical_to_local(ray_runtime, inputs, tmp_path, view):
    base, outcomes = inputs
    config = Config(view=view, outcomes=outcomes)
    local = build([base / "a", base / "b"], tmp_path / "local", config)
    remote = build([base / "a", base / "b"], tmp_path / "ray", config, engine="ray")
    assert local.rows_written > 0 and local.rejects == 1
    for name in (f"{view}.jsonl", f"{view}.rejects.jsonl"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    assert {**remote.to_dict(), "engine": "local", "output": "", "rejects_path": ""} == {
        **local.to_dict(), "output": "", "rejects_path": ""}


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    from fixtures.branches import make_branches

    base = tmp_path_factory.mktemp("ray_branches")
    make_branches(base)
    return base / "captured"


@pytest.mark.parametrize("view", ["groups", "preferences"])
def test_ray_groups_and_pairs_are_identical_to_local(ray_runtime, branches, tmp_path, view):
    """The cross-trace views: branch rows come back to the driver and are grouped there, as in the local engine."""
    local = build([branches], tmp_path / "local", Config(view=view))
    remote = build([branches], tmp_path / "ray", Config(view=view), engine="ray")
    assert local.rows_written > 0 and local.groups == 3 and local.traces_not_branches == 1
    assert (tmp_path / "ray" / f"{view}.jsonl").read_bytes() == (tmp_path / "local" / f"{view}.jsonl").read_bytes()
    assert {**remote.to_dict(), "engine": "local", "output": ""} == {**local.to_dict(), "output": ""}


def test_ray_parquet_is_identical_to_local(ray_runtime, inputs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = inputs
    build([base / "a"], tmp_path / "local", Config(view="decisions"), fmt="parquet")
    build([base / "a"], tmp_path / "ray", Config(view="decisions"), fmt="parquet", engine="ray")
    assert pq.read_table(tmp_path / "ray" / "decisions.parquet").equals(
        pq.read_table(tmp_path / "local" / "decisions.parquet"))


def test_ray_content_errors_reach_the_driver(ray_runtime, tmp_path):
    record(tmp_path / "refs", standard_runs()[:1], capture=False)
    with pytest.raises(ContentMissing, match="needs captured content"):
        build([tmp_path / "refs"], tmp_path / "out", Config(view="chat"), engine="ray", strict=True)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray_bad") / "traces"
    return folder, record(folder, standard_runs()[:2], capture=True)


@pytest.mark.parametrize("case", ["duplicates", "deep content", "bad field"])
def test_ray_drops_duplicates_and_rejects_bad_traces_as_local_does(ray_runtime, two_runs, tmp_path, case):
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
