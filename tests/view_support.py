"""Real traces for the timeline tests (test_view.py, test_view_browser.py):
the test apps run under capture and written as trace files, each app in its
own folder, with its content store when content capture is on."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import autogen_apps
import langgraph_apps as apps
from langgraph.types import Command

from orch_otel import testing
from orch_otel.content import ContentPolicy
from orch_otel.recorder import Recorder, get_recorder, set_recorder
from orch_otel.tracefiles import TraceWriter


def _interrupt_and_resume() -> None:
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "view-interrupt"}}
    app.invoke(apps.user_input("write a post"), config)
    app.invoke(Command(resume="yes, publish"), config)


def _failing() -> None:
    try:
        apps.build_failing().invoke(apps.user_input("go"))
    except apps.BrokenNode:
        pass  # the app's caller sees the error; the trace must show it


def _autogen(build: Callable[[], Any]) -> Callable[[], None]:
    return lambda: asyncio.run(asyncio.wait_for(build().run(task="go"), 30))


APPS: dict[str, Callable[[], None]] = {
    "supervisor": lambda: apps.build_supervisor().invoke(apps.user_input("what is 1+2?")),
    "fanout": lambda: apps.build_fanout(3).invoke({}),
    "swarm": lambda: apps.build_swarm().invoke(apps.user_input("what is 2+2?"), {"configurable": {"thread_id": "view-swarm"}}),
    "interrupt": _interrupt_and_resume,  # two traces: the interrupted run and its resume
    "failing": _failing,
    "selector": _autogen(autogen_apps.selector_team),
    "nested": _autogen(autogen_apps.team_as_participant),
    "graphflow": _autogen(autogen_apps.graph_flow),
    "route_billing": lambda: apps.build_router("billing").invoke(apps.user_input("my bill")),
    "route_tech": lambda: apps.build_router("tech").invoke(apps.user_input("my bill")),
}


def record(directory: Path, names: list[str], capture_content: bool = False) -> dict[str, Path]:
    """Run each app once; its traces go to ``directory/<name>/``. Returns name -> folder."""
    folders = {}
    previous = get_recorder()
    set_recorder(Recorder(content=ContentPolicy(capture=capture_content)))
    try:
        for name in names:
            with testing.capture() as captured:
                APPS[name]()
            folder = directory / name
            writer = TraceWriter(folder)
            for conversion in captured.conversions():
                writer.write(conversion.trace, conversion.contents)
            writer.close()
            folders[name] = folder
    finally:
        set_recorder(previous)
    return folders


def fork_of(original: dict[str, Any], branch: dict[str, Any], decision_id: str) -> dict[str, Any]:
    """``branch`` marked as a replay fork of ``original`` at the decision ``decision_id``
    (the field a replay writes on the forced decision: docs/view.md)."""
    recorded = next(e for e in original["events"] if e["id"] == decision_id)
    forced = next(e for e in branch["events"] if e["id"] == decision_id)
    forced["fork"] = {"source_trace_id": original["trace_id"], "event_id": decision_id, "decision": recorded["decision"],
                      "recorded": list(recorded["targets"]), "forced": list(forced["targets"])}
    return branch
