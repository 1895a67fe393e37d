"""``orch-otel convert --engine ray``: the same read -> group -> convert -> write
on Ray Data, for inputs too large for one machine's core.

* read: one task per input file (:func:`~orch_otel.offline.readers.read_file`),
  emitting one row per span (span-dump JSON) or problem;
* group: ``groupby(trace_id)``, an exact shuffle, so there are no late spans
  and no open-trace bound: every span of a trace meets in one group;
* convert: per group, spans in input order, duplicates dropped (first copy
  wins, as in the local engine), then :func:`~orch_otel.offline.outputs.convert_one`;
* write: the driver streams the results into the same outputs as the local engine.

Ray is an optional extra (``pip install 'orch-otel[ray]'``); it is joined,
started and stopped by the one policy of :mod:`orch_otel._ray`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from .._jsonvalues import json_bytes
from .._ray import ray_session
from ..spans import SpanRecord, to_dump
from .outputs import Converted, ConvertSummary, Options, Outputs, convert_one, record_converted
from .readers import read_file
from .records import Problem, from_dump

_FILE_SHIFT = 40  # order = file index << 40 | record number within the file


def _read_rows(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    order = int(row["index"]) << _FILE_SHIFT
    for chunk in read_file(Path(row["path"])):
        for problem in chunk.problems:
            order += 1
            yield {"kind": "problem", "key": "", "order": order, "where": chunk.where, "is_span": problem.is_span,
                   "payload": problem.to_line()}
        for span in chunk.spans:
            order += 1
            yield {"kind": "span", "key": span.trace_id, "order": order, "where": chunk.where, "is_span": True,
                   "payload": json_bytes(to_dump(span))}


def _convert_group(options: Options) -> Callable[[Any], Any]:
    def run(batch: Any) -> Any:
        import pyarrow as pa

        rows = sorted(zip(batch["order"].to_pylist(), batch["where"].to_pylist(), batch["payload"].to_pylist()))
        spans: dict[str, SpanRecord] = {}
        conflict_problems: list[dict[str, Any]] = []
        duplicates = conflicts = 0
        for _, where, payload in rows:
            span = from_dump(orjson.loads(payload))
            known = spans.get(span.span_id)
            if known is None:
                spans[span.span_id] = span
            elif known == span:
                duplicates += 1
            else:
                conflicts += 1
                conflict_problems.append(Problem(where, f"duplicate span id {span.span_id} with different content "
                                                 "(first copy kept)", span=span, is_span=True).to_json())
        trace_id = next(iter(spans.values())).trace_id
        complete = any(s.parent_id is None or s.parent_is_remote for s in spans.values())
        result = convert_one(trace_id, spans, complete, options.check, options)
        return pa.table({
            "trace_id": [trace_id], "line": [result.line or b""], "contents": [orjson.dumps(result.contents)],
            "spans": [result.spans], "incomplete": [result.incomplete], "duplicates": [duplicates],
            "conflicts": [conflicts], "conflict_problems": [json_bytes(conflict_problems)],
            "failed": [json_bytes([p.to_json() for p in result.problems])],
            "warning": [result.warning or ""], "source": [result.source], "definition": [result.definition],
        })

    return run


def _quarantine(outputs: Outputs, summary: ConvertSummary, data: dict[str, Any]) -> None:
    is_span = data.get("kind") == "span"
    outputs.quarantine_line(json_bytes(data), is_span, summary)
    if outputs.on_problem is not None:
        outputs.on_problem(Problem(data["where"], data["reason"], is_span=is_span))


def run_ray(files: list[Path], outputs: Outputs, options: Options, summary: ConvertSummary, *, address: str | None = None) -> None:
    with ray_session(address) as ray:
        summary.files += len(files)
        if not files:
            return
        items = [{"path": str(p), "index": i} for i, p in enumerate(files)]
        rows = ray.data.from_items(items, override_num_blocks=len(items)).flat_map(_read_rows).materialize()
        bad = rows.filter(lambda r: r["kind"] == "problem")
        for row in sorted(bad.iter_rows(), key=lambda r: r["order"]):
            summary.spans += bool(row["is_span"])
            _quarantine(outputs, summary, orjson.loads(row["payload"]))
        spans = rows.filter(lambda r: r["kind"] == "span")
        count = spans.count()
        summary.spans += count
        if not count:
            return
        groups = spans.groupby("key", num_partitions=max(1, min(200, count // 50_000)))
        converted = groups.map_groups(_convert_group(options), batch_format="pyarrow")
        for row in converted.iter_rows():
            summary.duplicates += row["duplicates"]
            summary.conflicts += row["conflicts"]
            result = Converted(row["trace_id"], line=row["line"] or None, contents=orjson.loads(row["contents"]),
                               spans=row["spans"], incomplete=bool(row["incomplete"]), warning=row["warning"] or None,
                               source=row["source"], definition=bool(row["definition"]))
            for data in orjson.loads(row["conflict_problems"]):
                _quarantine(outputs, summary, data)
            result.problems = [Problem(d["where"], d["reason"], span=from_dump(d["span"]), is_span=True)
                               for d in orjson.loads(row["failed"])]
            record_converted(result, outputs, summary)
