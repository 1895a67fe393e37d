"""A conversion called from a host's code leaves the host's garbage collector alone."""

from __future__ import annotations

import gc

from offline_support import otlp_line

from orch_otel.cli import main
from orch_otel.offline import convert_inputs
from orch_otel.spans import SpanRecord


def _log(tmp_path):
    span = SpanRecord("ab" * 16, "cd" * 8, None, "invoke_workflow w", 1, 2,
                      attributes={"gen_ai.operation.name": "invoke_workflow", "orch.task.id": "t"})
    path = tmp_path / "spans.json"
    path.write_bytes(otlp_line([span]) + b"not json\n")
    return path


def test_convert_inputs_never_changes_the_gc_threshold(tmp_path):
    before = gc.get_threshold()
    seen = []  # the threshold while the run is under way: on_problem fires mid-run, for the bad line
    summary = convert_inputs([_log(tmp_path)], tmp_path / "out.jsonl", on_problem=lambda p: seen.append(gc.get_threshold()))
    assert summary.traces == 1 and summary.bad_records == 1
    assert seen == [before]
    assert gc.get_threshold() == before


def test_the_command_restores_the_gc_threshold_after_its_run(tmp_path):
    before = gc.get_threshold()
    assert main(["convert", str(_log(tmp_path)), "-o", str(tmp_path / "out.jsonl")]) == 1
    assert gc.get_threshold() == before
