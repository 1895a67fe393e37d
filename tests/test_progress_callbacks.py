"""One progress style for both commands: ``convert_inputs`` and ``datasets.build``
take the same ``on_files(files)``, ``on_bytes(path, bytes read so far of it)``
and ``on_problem(problem)`` callbacks, the problem an
``orch_otel.tracefiles.Problem`` (``where``, ``reason``); ``build``'s 0.1
``progress=`` still works for one release, with a ``DeprecationWarning``."""

from __future__ import annotations

import orjson
import pytest
from fixtures.dataset_runs import record, supervisor_run
from offline_support import otlp_line
from test_bad_input import run_spans

from orch_otel import _renamed
from orch_otel.cli import main
from orch_otel.datasets import Config, build
from orch_otel.offline import convert_inputs
from orch_otel.tracefiles import Problem


class Calls:
    """What the three callbacks were called with, in order."""

    def __init__(self) -> None:
        self.files: list | None = None
        self.bytes: list = []
        self.problems: list = []

    def callbacks(self) -> dict:
        return {"on_files": self.on_files, "on_bytes": self.on_bytes, "on_problem": self.on_problem}

    def on_files(self, files) -> None:
        self.files = list(files)

    def on_bytes(self, path, n) -> None:
        self.bytes.append((path, n))

    def on_problem(self, problem) -> None:
        self.problems.append(problem)

    def of(self, path) -> list[int]:
        return [n for p, n in self.bytes if p == path]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return record(tmp_path_factory.mktemp("runs"), [lambda: supervisor_run("calc-ok", 2),
                                                     lambda: supervisor_run("calc-budget", 1)], capture=False)


def test_convert_reports_files_bytes_and_problems_through_the_shared_callbacks(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    first, second, empty = logs / "a.json", logs / "b.json", logs / "c.json"
    first.write_bytes(otlp_line(run_spans(0)) + b"{not json\n" + otlp_line(run_spans(1)))
    second.write_bytes(otlp_line(run_spans(2)))
    empty.write_bytes(b"")
    calls = Calls()
    summary = convert_inputs([first, second, empty], tmp_path / "out.jsonl", **calls.callbacks())
    assert summary.traces == 3
    assert calls.files == [first, second, empty]
    for path in (first, second, empty):  # so far, never back; the last report is the whole file
        assert calls.of(path) == sorted(calls.of(path)) and calls.of(path)[-1] == path.stat().st_size
    assert [(p.where, p.reason.split(":")[0]) for p in calls.problems] == [(f"{first}:2", "malformed JSON")]
    assert isinstance(calls.problems[0], Problem)


def test_build_reports_files_bytes_and_problems_through_the_same_callbacks(traces, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    first, second, empty = src / "traces-a.jsonl", src / "traces-b.jsonl", src / "traces-c.jsonl"
    lines = [orjson.dumps(traces[0]), b"[1, 2]", orjson.dumps(traces[1])]
    first.write_bytes(b"\n".join(lines) + b"\n")
    changed = {**traces[0], "task_id": "another task"}  # the first trace's id again, other content
    second.write_bytes(orjson.dumps(changed) + b"\n")
    empty.write_bytes(b"")
    calls = Calls()
    summary = build([src], tmp_path / "out", Config(view="decisions"), **calls.callbacks())
    assert (summary.traces_used, summary.rejects) == (2, 2)
    assert calls.files == [first, second, empty]
    sizes = [len(line) + 1 for line in lines]  # after each line, then the whole file (the same here)
    assert calls.of(first) == [sizes[0], sizes[0] + sizes[1], sum(sizes), first.stat().st_size]
    assert calls.of(second)[-1] == second.stat().st_size and calls.of(empty) == [0]
    assert all(type(p) is Problem for p in calls.problems)
    assert [p.where for p in calls.problems] == [f"{first}:2", f"{second}:1"]
    assert calls.problems[0].reason == "expected a JSON object (one trace per line), got list"
    assert calls.problems[1].reason.startswith(f"trace {traces[0]['trace_id']} again, with different content")


def test_build_progress_keyword_warns_and_still_gets_each_line_result(traces, tmp_path):
    path = tmp_path / "traces-in.jsonl"
    good = orjson.dumps(traces[0])
    path.write_bytes(good + b"\n[1]\n")
    _renamed._warned.discard(("orch_otel.datasets.build", "progress"))  # it warns once per process
    results: list[dict] = []
    with pytest.warns(DeprecationWarning, match=r"build\(progress=\) is deprecated.*on_problem="):
        summary = build([path], tmp_path / "out", Config(view="decisions"), progress=results.append)
    assert summary.rejects == 1
    assert [r["where"] for r in results] == [f"{path}:1", f"{path}:2"]
    assert [r["size"] for r in results] == [len(good) + 1, len(b"[1]") + 1]
    assert "reject" not in results[0] and results[1]["reject"] == "expected a JSON object (one trace per line), got list"


def test_build_with_an_unknown_keyword_is_a_type_error(traces, tmp_path):
    path = tmp_path / "traces-in.jsonl"
    path.write_bytes(orjson.dumps(traces[0]) + b"\n")
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_line'"):
        build([path], tmp_path / "out", Config(view="decisions"), on_line=print)


def test_dataset_command_prints_each_rejected_line_from_on_problem(traces, tmp_path, capsys):
    path = tmp_path / "traces-in.jsonl"
    path.write_bytes(orjson.dumps(traces[0]) + b"\n[1]\n")
    assert main(["dataset", str(path), "-o", str(tmp_path / "out"), "--view", "decisions"]) == 1
    err = " ".join(capsys.readouterr().err.split())  # rich may wrap a long path
    assert f"rejected {path}:2: expected a JSON object (one trace per line), got list" in err
