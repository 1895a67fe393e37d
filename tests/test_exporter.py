"""The live trace-file exporter: write on root end, bounded memory, nothing lost at exit."""

from __future__ import annotations

import logging

from conftest import check_trace, decisions_of
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from orch_otel import Recorder
from orch_otel.exporters import TraceFileExporter
from orch_otel.tracefiles import read_lines


def setup(tmp_path, **limits):
    provider = TracerProvider()
    exporter = TraceFileExporter(tmp_path, **limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Recorder(tracer_provider=provider), exporter


def written(exporter: TraceFileExporter) -> list[dict]:
    path = exporter.writer.trace_path
    return [line.trace for line in read_lines(path)] if path.exists() else []


def test_trace_is_written_when_its_root_ends(tmp_path):
    recorder, exporter = setup(tmp_path)
    with recorder.agent("root"):
        with recorder.agent("child"):
            pass
        assert written(exporter) == []  # the root is still open
    (trace,) = written(exporter)
    check_trace(trace)
    assert [e["type"] for e in trace["events"]] == ["return", "orchestrator_decision"]


def test_oldest_open_trace_is_flushed_incomplete_past_the_bound(tmp_path):
    recorder, exporter = setup(tmp_path, max_open_traces=2)
    roots = [recorder.agent(f"run{i}").start(attach=False) for i in range(3)]
    for i, root in enumerate(roots):  # one finished child span per run keeps each trace open
        recorder.agent(f"child{i}").start(attach=False, parent=root.context).end()
    (flushed,) = written(exporter)
    check_trace(flushed)
    assert decisions_of(flushed, "stop")[0]["reason"] == "incomplete"
    assert exporter.assembler.open_traces == 2
    for root in roots:
        root.end()
    assert exporter.assembler.stats.late_spans == 1  # run0's root came after its trace was flushed
    assert len(written(exporter)) == 3


def test_oversized_trace_is_written_early(tmp_path):
    recorder, exporter = setup(tmp_path, max_spans_per_trace=3)
    with recorder.agent("big"):
        for i in range(3):
            with recorder.agent(f"c{i}"):
                pass
    traces = written(exporter)
    assert decisions_of(traces[0], "stop")[0]["reason"] == "incomplete"
    assert len(traces) == 1 and exporter.assembler.stats.late_spans == 1


def test_late_spans_are_counted_and_reported(tmp_path, caplog):
    recorder, exporter = setup(tmp_path)
    root = recorder.agent("root").start(attach=False)
    child = recorder.agent("straggler").start(attach=False, parent=root.context)
    root.end()
    with caplog.at_level(logging.WARNING):
        child.end()
    assert exporter.assembler.stats.late_spans == 1
    assert any("ended after their trace's root" in r.getMessage() for r in caplog.records)


def test_shutdown_writes_open_traces_as_incomplete(tmp_path):
    recorder, exporter = setup(tmp_path)
    root = recorder.agent("never_ends").start(attach=False)
    recorder.agent("done").start(attach=False, parent=root.context).end()
    exporter.shutdown()
    (trace,) = written(exporter)
    assert decisions_of(check_trace(trace), "stop")[0]["reason"] == "incomplete"


def test_nothing_lost_at_normal_interpreter_exit(run_python, tmp_path):
    out = tmp_path / "traces"
    result = run_python(
        "import asyncio, orch_otel\n"
        "from orch_otel import demo\n"
        f"orch_otel.instrument(trace_dir={str(out)!r})\n"
        "asyncio.run(demo.run())\n"  # no flush(): the atexit shutdown must write it
    )
    assert result.returncode == 0, result.stderr
    (path,) = out.glob("traces-*.jsonl")
    (line,) = list(read_lines(path))
    assert check_trace(line.trace)["task_id"] == "demo-task-1"


def test_exporter_rejects_spans_after_shutdown(tmp_path):
    _, exporter = setup(tmp_path)
    exporter.shutdown()
    assert exporter.export([]).name == "FAILURE"
