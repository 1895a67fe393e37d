"""Benchmark ``orch-otel convert`` on generated OTLP JSON (not a pass/fail test).

    python -m benchmarks.bench_convert [--spans 1000000] [--rss-spans 100000] [--open-traces 100]

Reports, as a markdown table:

* spans per CPU-second and per wall-clock second of the local engine converting a
  ``--spans`` file (read, assemble, convert, write; with and without per-trace
  validation; and with ``--jobs`` one per core), and of ``--engine ray`` with
  one worker per core, against parsing the same file with ``orjson`` alone
  (targets: 0.5 of the parse-only rate per CPU-second, 0.8 in wall clock with
  ``--jobs``, and Ray 1.5x one local process), and against the least any
  converter does: group the parsed span objects by trace id and write them
  back out, with no decoding or conversion;
* peak RSS of a conversion of ``--rss-spans`` and 10x that many spans with the
  same number of traces open at once, by the local engine and on Ray (target:
  flat, 10x within 1.25x of 1x). Each measurement runs in its own subprocess.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson

T0 = 1_700_000_000_000_000_000


def _kv(key, value):
    if isinstance(value, bool):
        v = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, list):
        v = {"arrayValue": {"values": [{"stringValue": x} for x in value]}}
    else:
        v = {"stringValue": value}
    return {"key": key, "value": v}


class _Trace:
    """One generated run: workflow -> lead agent -> workers with LLM and tool calls.
    ``spans`` are in end order (children first, root last), as a collector sees them."""

    def __init__(self, rng: random.Random, n: int, start: int, workers: int = 3):
        self.trace_id = rng.getrandbits(128).to_bytes(16, "big").hex()
        self.spans: list[dict] = []
        ids = iter(range(1, 1 << 30))
        sid = lambda: f"{n:08x}{next(ids):08x}"  # noqa: E731
        t = start
        root, lead = sid(), sid()
        lead_events = []
        children = []
        for w in range(workers):
            agent = sid()
            name = f"worker{w}"
            a0 = t + 1000 + w * 100
            inner = []
            for k in range(2):
                c = sid()
                inner.append(self._span(c, agent, f"chat model-{k}", a0 + k * 400, a0 + k * 400 + 150, [
                    _kv("gen_ai.operation.name", "chat"), _kv("gen_ai.request.model", f"model-{k}"),
                    _kv("gen_ai.provider.name", "openai"), _kv("gen_ai.usage.input_tokens", 120 + k),
                    _kv("gen_ai.usage.output_tokens", 40 + k)]))
                tl = sid()
                inner.append(self._span(tl, agent, "execute_tool search", a0 + k * 400 + 200, a0 + k * 400 + 350, [
                    _kv("gen_ai.operation.name", "execute_tool"), _kv("gen_ai.tool.name", "search"),
                    _kv("gen_ai.tool.call.id", f"call-{n}-{w}-{k}"), _kv("orch.input.ref", f"b2:{n:x}{w}{k}")]))
            children.extend(inner)
            children.append(self._span(agent, lead, f"invoke_agent {name}", a0, a0 + 900, [
                _kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", name),
                _kv("orch.agent.spawned", True), _kv("orch.agent.role", "worker")]))
            lead_events.append({"timeUnixNano": str(a0 - 10), "name": "orch.decision", "attributes": [
                _kv("orch.decision", "delegate"), _kv("orch.targets", [name]), _kv("orch.options", ["worker0", "worker1", "worker2"])]})
        end = t + 1000 + workers * 100 + 1000
        lead_events.append({"timeUnixNano": str(end - 50), "name": "orch.decision",
                            "attributes": [_kv("orch.decision", "stop"), _kv("orch.stop.reason", "end")]})
        self.spans = children
        self.spans.append(self._span(lead, root, "invoke_agent lead", t + 10, end - 10, [
            _kv("gen_ai.operation.name", "invoke_agent"), _kv("gen_ai.agent.name", "lead")], lead_events))
        self.spans.append(self._span(root, None, "invoke_workflow bench", t, end, [
            _kv("gen_ai.operation.name", "invoke_workflow"), _kv("gen_ai.workflow.name", "bench"),
            _kv("orch.task.id", f"task-{n}"), _kv("orch.system", "custom")]))

    def _span(self, span_id, parent, name, start, end, attrs, events=()):
        s = {"traceId": self.trace_id, "spanId": span_id, "name": name, "kind": 1,
             "startTimeUnixNano": str(T0 + start), "endTimeUnixNano": str(T0 + end), "attributes": attrs,
             "status": {}, "flags": 256}
        if parent:
            s["parentSpanId"] = parent
        if events:
            s["events"] = list(events)
        return s


def _traces_data(resource: dict, scope: dict, spans: list[dict]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}]}) + b"\n"


def generate(path: Path, spans: int, open_traces: int = 100, batch: int = 512, seed: int = 1) -> int:
    """Write about ``spans`` spans of interleaved traces (``open_traces`` at once) as
    OTLP JSON lines; returns the number of spans written."""
    rng = random.Random(seed)
    resource_ = {"attributes": [_kv("service.name", "bench"), _kv("telemetry.sdk.language", "python")]}
    scope = {"name": "orch_otel", "version": "0.1.0"}
    active: list[list] = []
    n = written = 0
    clock = 0
    with open(path, "wb") as out:
        line: list[dict] = []
        while written < spans:
            while len(active) < open_traces:
                n += 1
                clock += 500
                active.append([_Trace(rng, n, clock).spans, 0])
            k = rng.randrange(len(active))
            trace = active[k]
            line.append(trace[0][trace[1]])
            trace[1] += 1
            written += 1
            if trace[1] == len(trace[0]):
                active[k] = active[-1]
                active.pop()
            if len(line) == batch:
                out.write(_traces_data(resource_, scope, line))
                line = []
        for trace in active:  # finish every started trace, so each has its root
            line.extend(trace[0][trace[1]:])
            written += len(trace[0]) - trace[1]
        if line:
            out.write(_traces_data(resource_, scope, line))
    return written


def parse_only(path: Path, out: Path) -> dict:
    """Read and parse every line with orjson."""
    with open(path, "rb") as f:
        for line in f:
            orjson.loads(line)
    return {}


def arrow_only(path: Path, out: Path) -> dict:
    """Read every line with pyarrow's JSON reader, in the columnar reader's blocks and schema
    (one thread, as the reader runs it): the least the columnar reader costs."""
    import pyarrow as pa
    import pyarrow.json as pj

    from orch_otel.offline import columnar

    columnar.available()  # imports pyarrow and makes the schema
    with open(path, "rb") as f:
        while block := f.read(columnar.BLOCK_BYTES) + f.readline():
            pj.read_json(pa.BufferReader(block), parse_options=columnar._PARSE,
                         read_options=pj.ReadOptions(use_threads=False, block_size=len(block) + 1))
    return {}


def group_only(path: Path, out: Path) -> dict:
    """The least any converter does: parse each line, hold each span object under
    its trace id, and write a trace's span objects as one JSON line when its root
    arrives. No decoding, checks, deduplication or conversion."""
    open_traces: dict[str, list] = {}
    traces = 0
    with open(path, "rb") as f, open(out, "wb") as sink:
        for line in f:
            for rs in orjson.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        spans = open_traces.setdefault(span["traceId"], [])
                        spans.append(span)
                        if not span.get("parentSpanId"):
                            sink.write(orjson.dumps(open_traces.pop(span["traceId"])) + b"\n")
                            traces += 1
    return {"traces": traces}


def convert(path: Path, out: Path, engine: str = "local", **options: Any) -> dict:
    """As ``orch-otel convert`` runs it: the command tunes its own process's GC (the library does not)."""
    from orch_otel.offline import Options, convert_inputs
    from orch_otel.offline.local import rare_collections

    with rare_collections():
        return convert_inputs([path], out, engine=engine, options=Options(**options)).as_dict()


JOBS = os.cpu_count() or 1
RUNS: dict[str, tuple[str, Callable[[Path, Path], dict]]] = {
    "parse": ("orjson parse only", parse_only),
    "arrow": ("pyarrow JSON reader only (the columnar reader's schema and blocks)", arrow_only),
    "group": ("group by trace id and re-serialise (no conversion)", group_only),
    "convert": ("convert, local engine", convert),
    "rows": ("convert, local engine, row-by-row reader (`Options(columnar=False)`)", partial(convert, columnar=False)),
    "check": ("convert, local engine + validation (`--check`)", partial(convert, check=True)),
    "jobs": (f"convert, local engine, `--jobs {JOBS}`", partial(convert, jobs=JOBS)),
    "ray": (f"convert, `--engine ray`, {JOBS} workers (Ray started before the clock)", partial(convert, engine="ray")),
}
RSS_RUNS = ("convert", "ray")  # the flat-memory runs: 1x and 10x input, same traces open


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the ``--jobs`` workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _child(argv: list[str]) -> None:
    """Subprocess: one run of one kind; print CPU and wall seconds, details and peak RSS (KiB)."""
    kind, path, out = argv[0], Path(argv[1]), Path(argv[2])
    if kind in ("arrow", "convert", "rows", "check", "jobs", "ray"):
        import orch_otel.offline  # noqa: F401  (imports are not part of the run)
    if kind == "ray":  # as on a running cluster: Ray is up, its worker processes start on demand (in the clock)
        import ray

        ray.init(num_cpus=JOBS, include_dashboard=False, log_to_driver=False, configure_logging=False)
    sampler = _RaySampler() if kind == "ray" else None  # Ray's processes are not waited-for children
    cpu, wall = _cpu_seconds(), time.perf_counter()
    details = RUNS[kind][1](path, out)
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    figures = {"seconds": cpu, "wall": wall, "details": details, "rss_kib": rss}
    if sampler is not None:
        sampler.stop()
        figures.update(rss_kib=sampler.driver_kib, ray_rss_kib=sampler.private_kib, ray_shared_kib=sampler.shared_kib)
    print(orjson.dumps(figures).decode())


class _RaySampler:
    """Samples the memory of this process (Ray's driver) and its descendants (Ray's raylet and
    workers) four times a second, from Linux /proc: the driver's own memory and the largest Ray
    process's (RSS less shared memory), and the most shared memory any of them maps (the object
    store, which Ray bounds by ``object_store_memory`` and spills to disk beyond it; a process's
    RSS counts the store's pages it has touched, so ``ru_maxrss`` overstates a Ray driver)."""

    def __init__(self) -> None:
        import threading

        self.driver_kib = self.private_kib = self.shared_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._sample()

    def _sample(self) -> None:
        me = os.getpid()
        for pid in [me, *_descendants()]:
            try:
                fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
                rss, shared = (int(fields[k].split()[0]) for k in ("VmRSS", "RssShmem"))
            except (OSError, KeyError, ValueError):
                continue
            if pid == me:
                self.driver_kib = max(self.driver_kib, rss - shared)
            else:
                self.private_kib = max(self.private_kib, rss - shared)
            self.shared_kib = max(self.shared_kib, shared)


def _descendants() -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    me, found = os.getpid(), []
    for pid in parents:
        ancestor = parents[pid]
        while ancestor not in (me, 0, 1) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == me:
            found.append(pid)
    return found


def _measure(kind: str, path: Path, out: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_convert", "--child", kind, str(path), str(out)],
                          capture_output=True, text=True, check=True)
    return orjson.loads(proc.stdout.strip().splitlines()[-1])


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _spread(values: list[float], fmt: str) -> str:
    text = format(_median(values), fmt)
    return text if len(values) < 2 else f"{text} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def measure(src: Path, work: Path, spans: int, rounds: int) -> dict:
    """Alternate the runs round by round (parse, group, convert, ..., parse, ...):
    the machine's speed drifts, so each ratio compares runs of the same round."""
    seconds: dict[str, list[float]] = {kind: [] for kind in RUNS}
    wall: dict[str, list[float]] = {kind: [] for kind in RUNS}
    rss: dict[str, list[int]] = {kind: [] for kind in RUNS}
    summary: dict = {}
    for r in range(rounds):
        for kind in RUNS:
            m = _measure(kind, src, work / f"out-{kind}.jsonl")
            seconds[kind].append(m["seconds"])
            wall[kind].append(m["wall"])
            rss[kind].append(m["rss_kib"])
            if kind == "convert":
                summary = m["details"]
            elif kind in ("rows", "jobs", "ray") and m["details"] != summary:
                raise RuntimeError(f"{RUNS[kind][0]} counted differently: {m['details']} vs {summary}")
        # compared in chunks: reading the files whole would raise this process's peak RSS, which the runs
        # started after it inherit (Linux keeps a process's ru_maxrss across the fork and exec of a child)
        if r == 0 and not filecmp.cmp(work / "out-rows.jsonl", work / "out-convert.jsonl", shallow=False):
            raise RuntimeError("the columnar and the row-by-row reader wrote different traces")
        print(f"round {r + 1}/{rounds}: " + ", ".join(f"{k} {v[-1]:.1f}s" for k, v in wall.items()), file=sys.stderr)
    ratios = {kind: [p / s for p, s in zip(seconds["parse"], seconds[kind])] for kind in RUNS}
    wall_ratios = {kind: [p / s for p, s in zip(wall["parse"], wall[kind])] for kind in RUNS}
    ray_over_local = [c / r for c, r in zip(wall["convert"], wall["ray"])]
    return {"spans": spans, "jobs": JOBS, "seconds": seconds, "wall": wall, "rss_kib": rss, "ratios": ratios,
            "wall_ratios": wall_ratios, "ray_over_local": ray_over_local, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=1_000_000, help="spans in the throughput file (default 1,000,000)")
    parser.add_argument("--rss-spans", type=int, default=100_000, help="spans in the 1x RSS file (10x is ten times that)")
    parser.add_argument("--open-traces", type=int, default=100, help="traces open at once in the generated logs")
    parser.add_argument("--rounds", type=int, default=3, help="alternation rounds of the throughput runs (default 3)")
    parser.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    parser.add_argument("--json", default=None, help="also write the raw figures to this JSON file")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        src = work / "spans.json"
        t = time.perf_counter()
        n = generate(src, args.spans, args.open_traces)
        size = src.stat().st_size
        print(f"generated {n:,} spans ({size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        result = measure(src, work, n, args.rounds)
        src.unlink()
        result["rss"] = []
        for factor in (1, 10):
            path = work / f"rss{factor}.json"
            t = time.perf_counter()
            k = generate(path, args.rss_spans * factor, args.open_traces, seed=factor)
            print(f"generated {k:,} spans ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s",
                  file=sys.stderr)
            for kind in RSS_RUNS:
                m = _measure(kind, path, work / f"rss{factor}-{kind}.jsonl")
                result["rss"].append({"factor": factor, "kind": kind, "spans": k, "bytes": path.stat().st_size,
                                      "wall": m["wall"], "rss_kib": m["rss_kib"], "ray_rss_kib": m.get("ray_rss_kib"),
                                      "ray_shared_kib": m.get("ray_shared_kib"), "traces": m["details"]["traces"]})
                (work / f"rss{factor}-{kind}.jsonl").unlink(missing_ok=True)
            path.unlink()
    result.update(bytes=size, open_traces=args.open_traces, rounds=args.rounds)
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(result))
    print(f"\nInput: {n:,} spans, {size / 1e6:.0f} MB of OTLP JSON, {args.open_traces} traces open at once; "
          f"{os.cpu_count()} CPU(s), Python {sys.version.split()[0]}. {args.rounds} round(s), runs alternated; "
          "medians (min–max); each ratio is against the parse-only run of the same round.\n")
    print("| run | spans per CPU-second | ratio to parse-only (CPU) | spans per second (wall) | ratio to parse-only (wall) "
          "| peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, (label, _) in RUNS.items():
        cpu_rates = [n / s for s in result["seconds"][kind]]
        wall_rates = [n / s for s in result["wall"][kind]]
        rss_mib = _median(result["rss_kib"][kind]) / 1024
        cpu_ratio, wall_ratio = (("1.00", "1.00") if kind == "parse" else
                                 (_spread(result["ratios"][kind], ".2f"), _spread(result["wall_ratios"][kind], ".2f")))
        cpu_rate = _spread(cpu_rates, ',.0f')
        if kind == "ray":  # the driver's CPU only: the work is in Ray's worker processes
            cpu_rate = cpu_ratio = "—"
        print(f"| {label} | {cpu_rate} | {cpu_ratio} | {_spread(wall_rates, ',.0f')} | {wall_ratio} "
              f"| {rss_mib:.0f} MiB |")
    print(f"\nRay ({JOBS} workers) ÷ one local process, wall clock, same round: "
          f"**{_spread(result['ray_over_local'], '.2f')}**. Ray's CPU is spent in its own worker processes, which "
          "the CPU columns cannot count; its peak RSS is the driver's own memory (less the object store's "
          "shared pages).")
    print("\n| run | input | spans | size | traces | wall clock | spans per second | peak RSS (Ray: the driver's own) | "
          "largest Ray process, own memory | Ray object store, mapped |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in result["rss"]:
        ray = [f"{row[k] / 1024:.0f} MiB" if row.get(k) else "—" for k in ("ray_rss_kib", "ray_shared_kib")]
        print(f"| {RUNS[row['kind']][0]} | {row['factor']}x | {row['spans']:,} | {row['bytes'] / 1e6:.0f} MB | "
              f"{row['traces']:,} | {row['wall']:.1f} s | {row['spans'] / row['wall']:,.0f} | "
              f"{row['rss_kib'] / 1024:.0f} MiB | {' | '.join(ray)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
