"""``orch-otel convert --engine ray``: the local engine's read -> group ->
convert -> write as Ray tasks that ship blocks of spans, never one span at a time.

1. **split**: each uncompressed JSON lines file is cut into byte ranges on
   line boundaries; a zstd or length-prefixed file is one range. Small tasks
   count each range's lines first, so every problem keeps its ``file:line``.
2. **map**: one task per range parses its lines and sends each span to a
   partition by its trace id (the ``--jobs`` hash). What it sends is an Arrow
   table per partition: per input line, the raw JSON of that partition's
   spans with their resource and scope (a fragment of the line's
   ``TracesData``), decoded only once, in the reduce.
3. **reduce**: one task per partition takes its tables from every range in
   input order, decodes them with the local engine's decoder, groups the
   spans by trace exactly (no late spans, no open-trace bound), drops
   duplicates (first copy wins) and converts each trace with ``convert_one``.
4. **write**: the driver writes the partitions' results, in partition order,
   to the same outputs as the local engine.

Ray is an optional extra (``pip install 'orch-otel[ray]'``); it is joined,
started and stopped by the one policy of :mod:`orch_otel._ray`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .._inputs import TooLong, bounded_lines, open_regular
from .._jsonvalues import json_bytes
from .._ray import ray_session
from ..spans import SpanRecord, to_dump
from ..tracefiles import BOM, lines_within
from .local import conflicting_copy, owner
from .otlp_json import decode_fragment, scope_spans
from .outputs import Converted, ConvertSummary, Options, Outputs, convert_one, record_converted
from .ranges import Range, count_range, split
from .ranges import file_size as _size
from .ranges import worker_task as _task
from .readers import decode_json, is_blank, malformed_line, not_a_span_file, not_spans, read_file, skip_bom
from .records import BadField, Chunk, Problem, from_dump, trace_id_of

_FILE_SHIFT = 40  # order = file index << 40 | line (or record) number within the file
_PARTITION_BYTES = 32 << 20  # input bytes per partition: bounds one reduce task's memory
_MAX_PARTITIONS = 512
_GROUPS_PER_CPU = 4
_FRAGMENT, _RECORD, _LINE = 0, 1, 2  # what a payload is: a TracesData fragment, one JSON record, a whole line


class _Blocks:
    """One map task's output: its rows for each partition, and the problems it found."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.rows: list[tuple[list[int], list[str], list[int], list[bytes]]] = [([], [], [], []) for _ in range(partitions)]
        self.problems: tuple[list[int], list[bool], list[bytes]] = ([], [], [])

    def send(self, p: int, order: int, where: str, kind: int, payload: bytes) -> None:
        orders, wheres, kinds, payloads = self.rows[p]
        orders.append(order)
        wheres.append(where)
        kinds.append(kind)
        payloads.append(payload)

    def problem(self, order: int, problem: Problem) -> None:
        self.problems[0].append(order)
        self.problems[1].append(problem.is_span)
        self.problems[2].append(problem.to_line())

    def tables(self, size: int = 1) -> list[Any]:
        """One table per group of ``size`` partitions (each row names its partition), then the problems table."""
        import pyarrow as pa

        out = []
        for first in range(0, self.partitions, size):
            rows = self.rows[first:first + size]
            out.append(pa.table({
                "partition": pa.array([p for p, r in enumerate(rows, start=first) for _ in r[0]], pa.int32()),
                **{name: pa.array([x for r in rows for x in r[i]], t) for i, (name, t) in enumerate(
                    (("order", pa.int64()), ("where", pa.string()), ("kind", pa.int8()), ("payload", pa.binary())))}}))
        out.append(self.problem_table())
        return out

    def problem_table(self) -> Any:
        import pyarrow as pa

        o, s, b = self.problems
        return pa.table({"order": pa.array(o, pa.int64()), "is_span": pa.array(s, pa.bool_()),
                         "payload": pa.array(b, pa.binary())})


def map_range(r: Range, partitions: int, group_size: int = 1) -> list[Any]:
    """Read one range; a table for each group of ``group_size`` partitions
    (:func:`_group_size`), then the problems table."""
    with _task():
        return _map_range(r, partitions).tables(group_size)


def _map_range(r: Range, partitions: int) -> _Blocks:
    blocks = _Blocks(partitions)
    base = r.index << _FILE_SHIFT
    if r.end < 0:
        _map_whole(r, base, blocks)
    else:
        try:
            _map_lines(r, base, blocks)
        except Exception as exc:  # an I/O error: report it, keep what was read
            blocks.problem(base + r.first_line, Problem(r.path, f"stopped reading at byte {r.start} or after: "
                                                        f"{type(exc).__name__}: {exc}"))
    return blocks


def _map_whole(r: Range, base: int, blocks: _Blocks) -> None:
    order = base
    for chunk in read_file(Path(r.path)):
        order += 1
        for problem in chunk.problems:
            blocks.problem(order, problem)
        for span in chunk.spans:
            order += 1
            blocks.send(owner(span.trace_id, blocks.partitions), order, chunk.where, _RECORD, json_bytes(to_dump(span)))


def _map_lines(r: Range, base: int, blocks: _Blocks) -> None:
    partitions, partition_of = blocks.partitions, dict[str, int]()
    check_first = r.start == 0
    with open_regular(r.path) as f:
        f.seek(r.start)
        left = r.end - r.start
        if r.start == 0 and skip_bom(f):  # a text editor's UTF-8 byte order mark, as the local reader skips it
            left -= len(BOM)
        for lineno, line in enumerate(lines_within(bounded_lines(f), left), start=r.first_line):
            where = f"{r.path}:{lineno}"
            if isinstance(line, TooLong):
                blocks.problem(base + lineno, Problem(where, line.reason))
                continue
            if is_blank(line):
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                blocks.problem(base + lineno, malformed_line(where, line, exc))
                continue
            if check_first:
                what = not_spans(value) if type(value) is dict else None
                if what is not None:
                    blocks.problem(base + lineno, not_a_span_file(r.path, what))
                    return
                check_first = False
            _map_value(value, line, base + lineno, where, blocks, partitions, partition_of)


def _map_value(value: Any, line: bytes, order: int, where: str, blocks: _Blocks, partitions: int,
               partition_of: dict[str, int]) -> None:
    if type(value) is dict and "resourceSpans" in value:
        chunk = Chunk(where)
        fragments: dict[int, list] = {}
        for spath, raw_resource, _, scope_name, scope_version, items in scope_spans(value, chunk):
            parts: dict[int, list] = {}
            for k, s in enumerate(items):
                raw = s.get("traceId") if type(s) is dict else None
                if not isinstance(raw, str):
                    p = 0  # a bad id: partition 0 decodes and reports it
                elif (cached := partition_of.get(raw)) is not None:
                    p = cached
                else:
                    try:
                        p = owner(trace_id_of(raw), partitions)
                    except BadField:
                        p = 0
                    partition_of[raw] = p
                parts.setdefault(p, []).append((k, s))
            for p, some in parts.items():
                fragments.setdefault(p, []).append((spath, raw_resource, scope_name, scope_version, some))
        try:
            payloads = {p: orjson.dumps(fragment) for p, fragment in fragments.items()}
        except TypeError:  # nested deeper than orjson writes: each partition decodes the whole line, keeping its own
            for p in fragments.keys() | {0}:
                blocks.send(p, order, where, _LINE, line)
            return
        for problem in chunk.problems:
            blocks.problem(order, problem)
        for p, payload in payloads.items():
            blocks.send(p, order, where, _FRAGMENT, payload)
    elif type(value) is dict and "span_id" in value:
        try:
            p = owner(from_dump(value).trace_id, partitions)
        except BadField:
            p = 0
        blocks.send(p, order, where, _RECORD, line)
    else:
        chunk = Chunk(where)
        decode_json(value, chunk)
        for problem in chunk.problems:
            blocks.problem(order, problem)


def reduce_partition(p: int, partitions: int, options: Options, *tables: Any) -> tuple[Any, Any, dict[str, int]]:
    """Decode, group and convert one partition: (converted traces, problems, counts)."""
    with _task():
        return _reduce_partition(p, partitions, options, tables)


def _reduce_partition(p: int, partitions: int, options: Options, tables: tuple[Any, ...]) -> tuple[Any, Any, dict[str, int]]:
    import pyarrow as pa
    import pyarrow.compute as pc

    table = pa.concat_tables(tables)
    table = table.filter(pc.equal(table.column("partition"), p))  # its group's other partitions are theirs
    table = table.take(table.column("order").to_numpy().argsort(kind="stable"))
    problems = _Blocks(0)
    traces: dict[str, dict[str, SpanRecord]] = {}
    counts = {"spans": 0, "duplicates": 0, "conflicts": 0}

    def mine(trace_id: str) -> bool:
        return owner(trace_id, partitions) == p

    for order, where, kind, payload in zip(table.column("order").to_pylist(), table.column("where").to_pylist(),
                                           table.column("kind").to_pylist(), table.column("payload").to_pylist()):
        chunk = Chunk(where, keep=mine if kind == _LINE else None)
        value = orjson.loads(payload)
        if kind == _FRAGMENT:
            decode_fragment(value, chunk)
        else:
            decode_json(value, chunk)
        for problem in chunk.problems:
            if kind != _LINE or (owner(problem.trace_id, partitions) if problem.trace_id else 0) == p:
                problems.problem(order, problem)
                counts["spans"] += problem.is_span  # a span read, though not used (a conflict below is counted already)
        counts["spans"] += len(chunk.spans)
        for span in chunk.spans:
            spans = traces.setdefault(span.trace_id, {})
            known = spans.get(span.span_id)
            if known is None:
                spans[span.span_id] = span
            elif known == span:
                counts["duplicates"] += 1
            else:
                counts["conflicts"] += 1
                problems.problem(order, conflicting_copy(where, span))
    return _converted(traces, options), problems.problem_table(), counts


def _converted(traces: dict[str, dict[str, SpanRecord]], options: Options) -> Any:
    import pyarrow as pa

    columns: dict[str, list] = {k: [] for k in ("trace_id", "line", "contents", "spans", "incomplete", "failed",
                                                "warning", "source", "definition", "not_run")}
    for trace_id, spans in traces.items():
        complete = any(s.parent_id is None or s.parent_is_remote for s in spans.values())
        result = convert_one(trace_id, spans, complete, options.check, options)
        for key, value in (("trace_id", trace_id), ("line", result.line or b""), ("contents", orjson.dumps(result.contents)),
                           ("spans", result.spans), ("incomplete", result.incomplete),
                           ("failed", json_bytes([p.to_json() for p in result.problems])),
                           ("warning", result.warning or ""), ("source", result.source), ("definition", result.definition),
                           ("not_run", result.not_run)):
            columns[key].append(value)
    types = {"trace_id": pa.string(), "line": pa.binary(), "contents": pa.binary(), "spans": pa.int64(),
             "incomplete": pa.bool_(), "failed": pa.binary(), "warning": pa.string(), "source": pa.string(),
             "definition": pa.bool_(), "not_run": pa.bool_()}
    return pa.table({k: pa.array(v, types[k]) for k, v in columns.items()})


def _group_size(partitions: int, cpus: int) -> int:
    """How many partitions share a map task's table: Ray's driver keeps some
    kilobytes for each object, and a table per partition and range grows with
    the square of the input. Past ``_GROUPS_PER_CPU`` tables per CPU,
    partitions share them: each reduce then reads its group's tables and
    keeps its own rows."""
    return -(-partitions // min(partitions, _GROUPS_PER_CPU * cpus))


def _partitions(files: list[Path], cpus: int) -> int:
    """Enough partitions to bound a reduce task's memory, in whole waves of
    ``cpus`` tasks (a last wave with fewer tasks than CPUs leaves cores idle)."""
    waves = -(-sum(map(_size, files)) // (_PARTITION_BYTES * cpus))
    return min(_MAX_PARTITIONS, cpus * max(1, waves))


def _quarantine(outputs: Outputs, summary: ConvertSummary, line: bytes, is_span: bool) -> None:
    outputs.quarantine_line(line, is_span, summary)
    if outputs.on_problem is not None:
        data = orjson.loads(line)
        outputs.on_problem(Problem(data["where"], data["reason"], is_span=is_span))


def _write_problems(tables: list[Any], outputs: Outputs, summary: ConvertSummary, *, read: bool = False) -> None:
    """Quarantine problem tables in input order; ``read``: found by the map tasks,
    whose bad spans still count as spans read (the reduce counts its own)."""
    import pyarrow as pa

    table = pa.concat_tables(tables)
    table = table.take(table.column("order").to_numpy().argsort(kind="stable"))
    for is_span, line in zip(table.column("is_span").to_pylist(), table.column("payload").to_pylist()):
        summary.spans += read and is_span
        _quarantine(outputs, summary, line, is_span)


def run_ray(files: list[Path], outputs: Outputs, options: Options, summary: ConvertSummary, *, address: str | None = None,
            on_bytes: Callable[[Path, int], None] | None = None) -> None:
    with ray_session(address) as ray:
        summary.files += len(files)
        if not files:
            return
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = ray.remote(count_range)
        ranges = split(files, cpus, lambda rs: ray.get([count.remote(r) for r in rs]))
        partitions = _partitions(files, cpus)
        size = _group_size(partitions, cpus)
        groups = -(-partitions // size)
        mapper = ray.remote(map_range).options(num_returns=groups + 1)
        blocks = [mapper.remote(r, partitions, size) for r in ranges]
        options_ref = ray.put(options)
        reducer = ray.remote(reduce_partition).options(num_returns=3)
        reduced = [reducer.remote(p, partitions, options_ref, *[b[p // size] for b in blocks]) for p in range(partitions)]
        read_problems = [b[groups] for b in blocks]
        del blocks  # the reduce tasks hold the tables they need; Ray frees them after
        _progress(ray, read_problems, ranges, files, on_bytes)
        _write_problems(ray.get(read_problems), outputs, summary, read=True)
        del read_problems
        for p in range(partitions):
            converted_ref, problems_ref, counts_ref = reduced[p]
            reduced[p] = ()  # once written, the partition's results leave the object store (and this process's memory)
            counts = ray.get(counts_ref)
            summary.spans += counts["spans"]
            summary.duplicates += counts["duplicates"]
            summary.conflicts += counts["conflicts"]
            _write_problems([ray.get(problems_ref)], outputs, summary)
            _write_converted(ray.get(converted_ref), outputs, summary)
            del converted_ref, problems_ref, counts_ref


def _progress(ray: Any, refs: list[Any], ranges: list[Range], files: list[Path],
              on_bytes: Callable[[Path, int], None] | None) -> None:
    """Report each range as read once its map task is done."""
    if on_bytes is None:
        return
    pending = dict(zip(refs, ranges))
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            r = pending.pop(ref)
            on_bytes(files[r.index], r.end if r.end >= 0 else _size(files[r.index]))


def _write_converted(table: Any, outputs: Outputs, summary: ConvertSummary) -> None:
    for row in table.to_pylist():
        result = Converted(row["trace_id"], line=row["line"] or None, contents=orjson.loads(row["contents"]),
                           spans=row["spans"], incomplete=row["incomplete"], warning=row["warning"] or None,
                           source=row["source"], definition=row["definition"],
                           not_run=row["not_run"])
        result.problems = [Problem(d["where"], d["reason"], span=from_dump(d["span"]), is_span=True)
                           for d in orjson.loads(row["failed"])]
        record_converted(result, outputs, summary)
