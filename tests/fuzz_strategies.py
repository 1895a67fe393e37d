"""Hypothesis strategies for span logs with faults in them, shared by the fuzz,
Ray and columnar-reader tests: span records with few ids (so duplicates,
conflicts and cycles happen often), and OTLP JSON lines with wrong-typed
fields and truncations."""

from __future__ import annotations

import orjson
from hypothesis import strategies as st
from offline_support import otlp_span

from orch_otel.spans import EventRecord, SpanRecord

T0 = 1_700_000_000_000_000_000
TRACES = [f"{n:032x}" for n in range(1, 4)]
SPAN_IDS = [f"{n:016x}" for n in range(1, 7)]  # few ids: duplicates, conflicts and cycles happen often
OPS = ["invoke_agent", "invoke_workflow", "execute_tool", "chat", "other"]


@st.composite
def span_records(draw) -> SpanRecord:
    start = T0 + draw(st.integers(0, 10**6))
    op = draw(st.sampled_from(OPS))
    attrs = {"gen_ai.operation.name": op, "gen_ai.agent.name": draw(st.sampled_from(["a", "b", "lead"])),
             "gen_ai.tool.name": "t", "gen_ai.usage.input_tokens": draw(st.sampled_from([1, 2, "x"]))}
    events = ()
    if draw(st.booleans()):
        events = (EventRecord("orch.decision", start, {"orch.decision": draw(st.sampled_from(["stop", "delegate", "spawn"])),
                                                       "orch.targets": ("a",), "orch.stop.reason": "end"}),)
    return SpanRecord(draw(st.sampled_from(TRACES)), draw(st.sampled_from(SPAN_IDS)),
                      draw(st.one_of(st.none(), st.sampled_from(SPAN_IDS))), op, start, start + draw(st.integers(0, 10**6)),
                      status=draw(st.sampled_from(["unset", "ok", "error"])), attributes=attrs, events=events)


WRONG = {"traceId": [st.just("zz" * 16), st.just("0" * 32), st.just(12), st.just("abc")],
         "spanId": [st.just("0" * 16), st.just(None), st.just("g" * 16)],
         "parentSpanId": [st.just(7), st.just("1234")],
         "startTimeUnixNano": [st.just("-5"), st.just(1.5), st.just("12a"), st.just(True)],
         "endTimeUnixNano": [st.just("1")],  # before the start
         "name": [st.just(3), st.just({"x": 1})],
         "status": [st.just({"code": 9}), st.just("ok")],
         "attributes": [st.just({"key": "v"}), st.just([{"key": 1, "value": {"stringValue": "x"}}]),
                        st.just([{"key": "k", "value": {"intValue": "1.5"}}])],
         "events": [st.just([{"timeUnixNano": "x"}]), st.just(5)],
         "kind": [st.just(17)],
         "flags": [st.just("1")]}


@st.composite
def lines(draw) -> tuple[bytes, int, bool]:
    """One input line: (bytes, span objects in it, malformed?)."""
    spans = [otlp_span(s) for s in draw(st.lists(span_records(), min_size=1, max_size=5))]
    for span in spans:
        if draw(st.integers(0, 4)) == 0:
            field = draw(st.sampled_from(sorted(WRONG)))
            span[field] = draw(st.one_of(WRONG[field]))
    text = orjson.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": spans}]}]})
    if draw(st.integers(0, 5)) == 0:
        cut = draw(st.integers(1, len(text) - 1))
        return text[:cut].replace(b"\n", b" ") + b"\n", 0, True
    return text + b"\n", len(spans), False
