"""Replay against the original run, with the same fake models: ms per run.

    python -m benchmarks.bench_replay [--runs N]

For each app (LangGraph supervisor and Send fan-out, AutoGen selector team),
one run is recorded with content, then original runs (instrumented, fresh
app each time) and replays of the recording (fresh app, every call served)
alternate, so both see the same machine load. Both sides include making the
run's trace (a replay also indexes the recording and patches the seams; the
original captures content, as it did when it was recorded). Not a test: it prints a table
(median and quartiles, ms per run) and writes the figures as JSON with --json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from orch_otel import testing  # noqa: E402
from orch_otel.integrations.autogen import AutoGenInstrumentor  # noqa: E402
from orch_otel.integrations.langgraph import LangGraphInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402


def _apps() -> dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]]:
    import autogen_apps
    import langgraph_apps

    return {
        "langgraph supervisor": (langgraph_apps.build_supervisor,
                                 lambda app: app.invoke(langgraph_apps.user_input("what is 1+2?"))),
        "langgraph fanout (8 Send branches)": (lambda: langgraph_apps.build_fanout(8), lambda app: app.invoke({})),
        "autogen selector": (autogen_apps.selector_team, lambda app: asyncio.run(app.run(task="go"))),
    }


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return q[0], statistics.median(values), q[-1]


def measure(runs: int) -> dict[str, Any]:
    testing.ensure_sdk_provider()
    instrumentors = [LangGraphInstrumentor(), AutoGenInstrumentor()]
    for instrumentor in instrumentors:
        instrumentor.instrument()
    policy = get_recorder().content
    figures: dict[str, Any] = {}
    try:
        for name, (build, run) in _apps().items():
            policy.capture = True
            with testing.capture() as spans:
                run(build())
            policy.capture = False
            (conversion,) = spans.conversions()
            original, replayed = [], []
            for _ in range(runs):
                policy.capture = True  # the original as it was recorded: content captured, its trace made
                t0 = time.perf_counter()
                with testing.capture() as spans:
                    run(build())
                spans.conversions()
                original.append((time.perf_counter() - t0) * 1000)
                policy.capture = False
                app = build()
                t0 = time.perf_counter()
                result = replay(conversion.trace, app, contents=conversion.contents)
                replayed.append((time.perf_counter() - t0) * 1000)
                if not result.equal:
                    raise RuntimeError(f"{name}: the replay diverged: {result.divergence.describe()}")
            figures[name] = {"original_ms": original, "replay_ms": replayed}
    finally:
        for instrumentor in instrumentors:
            instrumentor.uninstrument()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", default=None, help="write the figures here")
    parser.add_argument("--dir", default=None, help="(unused; the runner passes it to every part)")
    args = parser.parse_args(argv)
    figures = measure(args.runs)
    print(f"{args.runs} alternating runs per app, ms per run (q1 / median / q3), each with its trace made")
    print(f"{'app':38} {'original':>22} {'replay':>22} {'replay / original':>18}")
    for name, f in figures.items():
        o, r = _quartiles(f["original_ms"]), _quartiles(f["replay_ms"])
        print(f"{name:38} {o[0]:6.1f} / {o[1]:6.1f} / {o[2]:6.1f} {r[0]:6.1f} / {r[1]:6.1f} / {r[2]:6.1f} "
              f"{r[1] / o[1]:18.2f}")
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
