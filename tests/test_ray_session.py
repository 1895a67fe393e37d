"""``--engine ray`` joins Ray by one policy for both batch commands: a Ray
started for the run is shut down after it, a Ray the caller started is left
running; without Ray, both name the extra to install."""

from __future__ import annotations

import sys

import pytest
from fixtures.dataset_runs import record, standard_runs
from offline_support import demo_logs

from orch_otel.cli import main
from orch_otel.datasets import Config, build
from orch_otel.offline import convert_inputs


@pytest.fixture(params=["ray", "pyarrow"])
def no_ray(request, monkeypatch):
    monkeypatch.setitem(sys.modules, request.param, None)  # its import now fails as if it were not installed


def test_without_ray_both_commands_name_the_extra(no_ray, tmp_path, capsys):
    record(tmp_path / "traces", standard_runs()[:1], capture=False)
    logs = demo_logs(tmp_path, runs=1, seed=1, batch=2)
    with pytest.raises(ImportError, match=r"pip install 'orch-otel\[ray\]'"):
        build([tmp_path / "traces"], tmp_path / "out", Config(view="decisions"), engine="ray")
    assert not (tmp_path / "out").exists()  # nothing written
    with pytest.raises(ImportError, match=r"pip install 'orch-otel\[ray\]'"):
        convert_inputs([logs], tmp_path / "converted.jsonl", engine="ray")
    assert not (tmp_path / "converted.jsonl").exists()

    assert main(["dataset", str(tmp_path / "traces"), "-o", str(tmp_path / "out"), "--view", "decisions",
                 "--engine", "ray"]) == 2
    assert "pip install 'orch-otel[ray]'" in capsys.readouterr().err
    assert main(["convert", str(logs), "-o", str(tmp_path / "converted.jsonl"), "--engine", "ray"]) == 2
    assert "pip install 'orch-otel[ray]'" in capsys.readouterr().err


def test_a_ray_started_for_the_run_is_shut_down_and_one_the_caller_started_is_left(tmp_path):
    ray = pytest.importorskip("ray", reason="needs orch-otel[ray]")
    pytest.importorskip("pyarrow", reason="needs orch-otel[ray]")
    # a runtime an earlier test left running would make this test's first half meaningless
    assert not ray.is_initialized(), "a Ray runtime from an earlier test is still running"
    record(tmp_path / "traces", standard_runs()[:1], capture=False)
    logs = demo_logs(tmp_path, runs=1, seed=1, batch=2)

    summary = build([tmp_path / "traces"], tmp_path / "out", Config(view="decisions"), engine="ray")
    assert summary.rows_written > 0
    assert not ray.is_initialized()  # the dataset command started it, so it stopped it
    assert convert_inputs([logs], tmp_path / "converted.jsonl", engine="ray").traces == 1
    assert not ray.is_initialized()

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        build([tmp_path / "traces"], tmp_path / "out2", Config(view="decisions"), engine="ray")
        assert ray.is_initialized()  # the caller's Ray: left running
        convert_inputs([logs], tmp_path / "converted2.jsonl", engine="ray")
        assert ray.is_initialized()
    finally:
        ray.shutdown()
