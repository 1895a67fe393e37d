"""pytest plugin (``-p host_instrument``): orch-otel instrumented for the whole
session, as an app that calls ``orch_otel.instrument()`` first thing.

Plugins named with ``-p`` are imported before any conftest or test module, so
instrumenting at import time is the earliest an app could do it. Traces go to
``$ORCH_HOST_TRACE_DIR``; at the end the number of trace lines written is saved
to ``$ORCH_HOST_TRACE_COUNT`` so the report shows orch-otel really recorded.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import orch_otel

_TRACE_DIR = Path(os.environ["ORCH_HOST_TRACE_DIR"])
# The modules whose first import patches a framework (orch-otel instruments on
# first import). An app using LangGraph, AutoGen or the OpenAI Agents SDK imports them; most of
# langchain-core's and autogen-core's own tests never do, so without this the
# instrumented run would test nothing there.
_FRAMEWORK_ENTRIES = ("langgraph.pregel", "autogen_agentchat", "agents")

orch_otel.instrument(trace_dir=_TRACE_DIR)
for _module in _FRAMEWORK_ENTRIES:
    try:
        importlib.import_module(_module)
    except ImportError:  # a suite's venv without that framework: nothing to patch
        pass


def pytest_unconfigure(config) -> None:
    orch_otel.flush(10_000)
    count_path = os.environ.get("ORCH_HOST_TRACE_COUNT")
    if count_path:
        lines = sum(path.read_bytes().count(b"\n") for path in _TRACE_DIR.glob("traces-*.jsonl"))
        Path(count_path).write_text(str(lines), encoding="utf-8")
