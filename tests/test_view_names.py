"""Names in traces and on the HTML view (issue 31, item 20): a bidi override
(U+202E) or another control character in a name is shown escaped, never
applied; names, reasons and ids are capped at ``MAX_NAME_CHARS``, by the
converter and by the view, so a 1 MB agent name makes neither a 12 MB trace
line nor a 27 MB page."""

from __future__ import annotations

import orjson

import orch_otel
from orch_otel.timeline import view
from orch_otel.vocabulary import MAX_NAME_CHARS

HUGE = "planner-" + "x" * (1 << 20)
SPOOFED = "summary\u202egpj.exe"  # displays as "summaryexe.jpg"


def test_a_1_mb_agent_name_is_capped_by_the_converter(captured):
    with orch_otel.workflow("team", task_id="t-" + "9" * 100_000):
        with orch_otel.agent(HUGE):
            orch_otel.stop("done-" + "r" * 100_000)
    (trace,) = captured.traces()
    line = orjson.dumps(trace)
    assert len(line) < 40_000, len(line)  # 1 MB in each of several events before
    names = {e["agent"] for e in trace["events"]}
    assert HUGE[: MAX_NAME_CHARS - 1] + "\u2026" in names
    assert all(len(n) <= MAX_NAME_CHARS for n in names)
    assert len(trace["task_id"]) == MAX_NAME_CHARS and trace["task_id"].endswith("\u2026")
    (stop,) = [e for e in trace["events"] if e.get("decision") == "stop"]
    assert len(stop["reason"]) == MAX_NAME_CHARS


def _trace(agent: str, task_id: str = "t1") -> dict:
    return {"trace_id": "ab" * 16, "task_id": task_id, "topology": "hierarchical",
            "events": [{"id": "e1", "t": 0.0, "type": "orchestrator_decision", "agent": agent, "decision": "stop",
                        "reason": agent, "status": "ok"},
                       {"id": "e2", "t": 0.1, "type": "tool_call", "agent": agent, "tool": agent, "status": "ok"}],
           "edges": []}


def test_the_view_escapes_bidi_overrides_and_control_characters_in_names():
    page = str(view(_trace(SPOOFED, task_id="task\x1b[2J\u2066")))
    assert "\u202e" not in page and "\u2066" not in page and "\x1b" not in page
    assert "summary\\u202egpj.exe" in page and "task\\x1b[2J\\u2066" in page


def test_the_view_caps_names_of_a_trace_written_elsewhere():
    page = str(view(_trace(HUGE, task_id="9" * 100_000)))
    assert len(page) < 200_000, len(page)  # the name appears in a dozen places: 12 MB before
    assert HUGE[: MAX_NAME_CHARS - 1] + "\u2026" in page
