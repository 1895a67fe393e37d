"""The app the zero-code OTLP tests run under ``opentelemetry-instrument``, the
spans it makes (counted by hand), and readers for what a run leaves on disk."""

from __future__ import annotations

from collections import Counter
from importlib.metadata import entry_points
from pathlib import Path

from orch_otel.exporters.spool import read_segment, spool_files
from orch_otel.tracefiles import read_lines, trace_files

# Three runs of a lead that spawns two researchers, each calling one tool.
APP = """
import orch_otel
for run in range(3):
    with orch_otel.workflow("research", task_id=f"zero-{run}"):
        with orch_otel.agent("lead"):
            orch_otel.spawn("web", "papers")
            for worker in ("web", "papers"):
                with orch_otel.agent(worker):
                    with orch_otel.tool("search"):
                        pass
print("app done")
"""

# Per run: the workflow, the lead, two workers, one tool call per worker.
APP_SPANS = Counter({
    "invoke_workflow research": 3,
    "invoke_agent lead": 3,
    "invoke_agent web": 3,
    "invoke_agent papers": 3,
    "execute_tool search": 6,
})
APP_TASK_IDS = ["zero-0", "zero-1", "zero-2"]


def written_task_ids(trace_dir: Path) -> list[str]:
    """Task ids of the traces written under ``trace_dir``, sorted."""
    return sorted(line.trace["task_id"] for path in trace_files([trace_dir]) for line in read_lines(path))


def spooled_names(spool_dir: Path) -> Counter:
    """Span names of every record left in the spool."""
    names: Counter = Counter()
    for path in spool_files(spool_dir):
        for record, problem in read_segment(path):
            assert problem is None, problem
            names[record.name] += 1
    return names


def assert_zero_code_installed() -> None:
    """The subprocesses find orch-otel's zero-code hooks through the installed
    metadata, not the source tree: fail clearly when it is older than pyproject.toml."""
    exporter = {ep.name: ep.value for ep in entry_points(group="opentelemetry_traces_exporter")}.get("orch_otel")
    hook = {ep.name: ep.value for ep in entry_points(group="opentelemetry_pre_instrument")}.get("orch_otel")
    assert (exporter, hook) == ("orch_otel._zero_code:ZeroCodeExporter", "orch_otel._zero_code:pre_instrument"), (
        "the installed orch-otel entry points are stale (pyproject.toml changed): pip install -e ."
    )
