"""The raw results of one ``python -m benchmarks`` run: saved as JSON so
that the report can be re-rendered without re-measuring (``--render``), and
the smoke checks, which look at what ran, never at timings.
"""

from __future__ import annotations

from typing import Any

from .capture import CaptureResult, Series
from .suites import SUITES, UNTRACED

CAPTURE_SUITES = tuple(SUITES)


def dump_results(results: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": meta}
    for key, value in results.items():
        if isinstance(value, CaptureResult):
            out[key] = {"suite": value.suite, "configs": list(value.configs), "apps": list(value.apps),
                        "rounds": value.rounds, "runs": value.runs, "floor": value.floor,
                        "recorder": value.recorder, "versions": value.versions,
                        "series": [[app, config, s.batches] for (app, config), s in value.series.items()]}
        elif key == "breakdown":
            out[key] = [[suite, app, data] for (suite, app), data in value.items()]
        else:
            out[key] = value
    return out


def load_results(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    results: dict[str, Any] = {}
    for key, value in data.items():
        if key in CAPTURE_SUITES:
            res = CaptureResult(value["suite"], tuple(value["configs"]), tuple(value["apps"]), value["rounds"],
                                value["runs"], floor=value["floor"], recorder=value["recorder"],
                                versions=value["versions"])
            for app, config, batches in value["series"]:
                res.series[(app, config)] = Series(batches)
            results[key] = res
        elif key == "breakdown":
            results[key] = {(suite, app): d for suite, app, d in value}
        elif key != "meta":
            results[key] = value
    return results, data.get("meta", {})



def smoke_check(results: dict[str, Any]) -> list[str]:
    """Problems: a configuration that did not run or produced no spans (never timings)."""
    problems = []
    for suite in CAPTURE_SUITES:
        res: CaptureResult | None = results.get(suite)
        if res is None:
            continue
        for app in res.apps:
            for config in res.configs:
                s = res.series.get((app, config))
                if not s or not s.batches:
                    problems.append(f"{suite}/{app}/{config}: did not run")
                    continue
                traced = config not in UNTRACED
                if traced and s.per_run("spans") <= 0:
                    problems.append(f"{suite}/{app}/{config}: produced no spans")
                if traced and s.per_run("bytes") <= 0:
                    problems.append(f"{suite}/{app}/{config}: produced no trace bytes")
                if not traced and s.per_run("spans") > 0:
                    problems.append(f"{suite}/{app}/{config}: recorded spans while uninstrumented")
        if suite == "langgraph" and (not res.floor or not res.recorder or res.recorder[-1]["spans"] <= 0):
            problems.append("floor: the bare SDK or recorder measurement did not run")
    mem = results.get("memory")
    if mem is not None and any(len(mem[c]["checkpoints"]) < 2 for c in ("none", "orch_otel")):
        problems.append("memory: no checkpoints")
    conv = results.get("convert")
    if conv is not None and not conv.get("missing") and not ((conv.get("figures") or {}).get("summary") or {}).get("traces"):
        problems.append("convert: no trace was converted")
    foreign = results.get("foreign")
    if foreign is not None and not (foreign.get("figures") or {}).get("rows"):
        problems.append("foreign: no foreign input was converted")
    bd = results.get("breakdown")
    if bd is not None and not all(d["rows"] for d in bd.values()):
        problems.append("breakdown: no orch-otel function was timed")
    return problems

