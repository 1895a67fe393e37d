"""Streaming assembly rules: grouping in any order, duplicates, late spans,
roots that never ended, bounded memory."""

from __future__ import annotations

import random

from orch_otel._assembly import ADDED, CONFLICT, DUPLICATE, LATE, StreamAssembler
from orch_otel.spans import SpanRecord

T0 = 1_700_000_000_000_000_000


def tid(n: int) -> str:
    return f"{n + 1:032x}"


def sid(n: int, k: int) -> str:
    return f"{n + 1:08x}{k + 1:08x}"


def run_spans(n: int, children: int = 3) -> list[SpanRecord]:
    """Trace n: a root and ``children`` child spans (children end first)."""
    root = SpanRecord(tid(n), sid(n, 0), None, "root", T0, T0 + 100)
    kids = [SpanRecord(tid(n), sid(n, k), sid(n, 0), f"c{k}", T0 + k, T0 + k + 1) for k in range(1, children + 1)]
    return kids + [root]


def test_spans_are_grouped_by_trace_in_any_order():
    spans = [s for n in range(5) for s in run_spans(n)]
    random.Random(3).shuffle(spans)
    asm = StreamAssembler(linger=1_000)
    assert [asm.add(s) for s in spans] == [ADDED] * len(spans)
    assert asm.released == []  # roots arrived, but within the linger window
    asm.drain()
    assert sorted(r.trace_id for r in asm.released) == [tid(n) for n in range(5)]
    for r in asm.released:
        assert r.complete and set(r.spans) == {s.span_id for s in run_spans(int(r.trace_id, 16) - 1)}


def test_linger_zero_releases_at_the_root_like_the_live_exporter():
    root, *_ = reversed(run_spans(0))
    child = run_spans(0)[0]
    asm = StreamAssembler(linger=0)
    assert asm.add(root) == ADDED
    assert [(r.trace_id, list(r.spans), r.complete) for r in asm.released] == [(tid(0), [root.span_id], True)]
    assert asm.add(child) == LATE  # its trace was already released
    assert asm.add(root) == DUPLICATE  # known span of a released trace


def test_a_trace_is_released_after_linger_spans_without_news():
    asm = StreamAssembler(linger=2)
    for s in run_spans(0):
        asm.add(s)
    assert asm.released == []
    asm.add(run_spans(1)[0])
    assert asm.released == []
    asm.add(run_spans(1)[1])  # two spans since trace 0's last one
    assert [r.trace_id for r in asm.released] == [tid(0)]


def test_duplicates_are_dropped_and_conflicts_flagged():
    a, b, root = run_spans(0, children=2)
    changed = SpanRecord(a.trace_id, a.span_id, a.parent_id, "other name", a.start_ns, a.end_ns)
    asm = StreamAssembler()
    assert [asm.add(s) for s in (a, a, changed, b, root)] == [ADDED, DUPLICATE, CONFLICT, ADDED, ADDED]
    asm.drain()
    (released,) = asm.released
    assert released.spans[a.span_id].name == "c1"  # the first copy wins
    assert len(released.spans) == 3


def test_a_trace_whose_root_never_arrived_is_released_incomplete():
    asm = StreamAssembler()
    for s in run_spans(0)[:-1]:
        asm.add(s)
    asm.drain()
    (released,) = asm.released
    assert released.complete is False and len(released.spans) == 3


def test_remote_parent_counts_as_root():
    span = SpanRecord(tid(0), sid(0, 1), sid(9, 9), "server", T0, T0 + 1, parent_is_remote=True)
    asm = StreamAssembler(linger=0)
    asm.add(span)
    assert [r.complete for r in asm.released] == [True]


def test_open_traces_stay_bounded_while_streaming_many():
    """1,000 traces, 8 in flight at a time: never more than 20 open, all complete."""
    rng = random.Random(5)
    pending = [run_spans(n, children=rng.randrange(1, 6)) for n in range(1000)]
    active: list[list[SpanRecord]] = []
    asm = StreamAssembler(max_open_traces=20, linger=100)
    total = 0
    while pending or active:
        while pending and len(active) < 8:
            active.append(pending.pop())
        trace = rng.choice(active)
        assert asm.add(trace.pop(0)) == ADDED
        total += 1
        assert asm.open_traces <= 20
        if not trace:
            active.remove(trace)
    asm.drain()
    assert asm.peak_open <= 20
    assert len(asm.released) == 1000 and all(r.complete for r in asm.released)
    assert sum(len(r.spans) for r in asm.released) == total


def test_past_the_bound_the_least_recently_active_trace_goes_first():
    asm = StreamAssembler(max_open_traces=2, linger=10**6)
    a, b, c = (run_spans(n)[0] for n in range(3))  # children only: no roots
    for s in (a, b, c):
        asm.add(s)
    assert [(r.trace_id, r.complete) for r in asm.released] == [(tid(0), False)]
    assert asm.open_traces == 2


def test_oversized_trace_is_released_early_incomplete():
    asm = StreamAssembler(max_spans_per_trace=2)
    spans = run_spans(0)
    outcomes = [asm.add(s) for s in spans]
    assert outcomes == [ADDED, ADDED, LATE, LATE]
    assert [(len(r.spans), r.complete) for r in asm.released] == [(2, False)]


def test_without_span_ids_a_closed_trace_is_known_by_its_id_alone():
    """The live exporter's setting: the SDK never exports a span twice, so a
    span of a released trace is late even when its id was seen."""
    *kids, root = run_spans(0)
    asm = StreamAssembler(linger=0, remember_span_ids=False)
    for s in (*kids, root):
        assert asm.add(s) == ADDED
    assert [r.complete for r in asm.released] == [True]
    assert asm.add(root) == LATE  # with span ids it would be a duplicate (see above)
    assert asm.add(kids[0]) == LATE
    assert asm.stats.late_spans == 2


def test_stats_count_released_incomplete_and_late():
    asm = StreamAssembler(linger=0, max_spans_per_trace=2)
    for s in run_spans(0, children=1):  # a child then its root: complete
        asm.add(s)
    for s in run_spans(1):  # three children, a root: released at two spans, then late
        asm.add(s)
    assert (asm.stats.traces, asm.stats.incomplete, asm.stats.late_spans) == (2, 1, 2)
