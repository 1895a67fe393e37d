"""The columnar fast path for OTLP JSON lines: a block of lines is parsed by
pyarrow's JSON reader (C++) against a fixed schema, flattened resource ->
scope -> span in Arrow, checked in Arrow compute, and turned into span
records column by column.

It reads only the canonical shape that exporters write: the fields of the
schema below and no others, lowercase hex ids, integer enums, decimal-string
times and ``intValue``s, one value per ``AnyValue``, arrays and kvlists of scalars, no
JSON ``null`` (Arrow cannot tell ``null`` from absent; the row path treats
them differently). Any other block is given back (``None``) and the row path
(:mod:`.otlp_json`) reads it, with its exact problems and ``file:line``s, so
both paths give the same chunks on every input (``tests/test_offline_columnar.py``).
The fixed schema also bounds nesting: Arrow's reader is quadratic in depth,
and crashes the process on very deep input, when it has to infer the schema.

pyarrow comes with the ``datasets`` and ``ray`` extras; without it every
block takes the row path, as do files smaller than :data:`MIN_FILE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import islice, repeat
from typing import Any

from ..spans import EventRecord, LinkRecord, SpanRecord
from .otlp_json import _KIND, _STATUS, any_value
from .records import REMOTE_PARENT, BadField, Chunk, span_id_of, trace_id_of

pa: Any = None  # pyarrow and its modules, imported by the first available()
pc: Any = None
pj: Any = None
_PARSE: Any = None
_loaded: bool | None = None

MIN_FILE_BYTES = 32 << 20  # smaller files: the row path (no pyarrow import to pay back)
BLOCK_BYTES = 2 << 20  # input per block: enough rows for Arrow to pay, few spans held at once
_SCALARS = ("stringValue", "intValue", "boolValue", "doubleValue")
_NO_RESOURCE: dict[str, Any] = {}
_HEX32, _HEX16, _DIGITS, _INT = "^[0-9a-f]{32}$", "^[0-9a-f]{16}$", "^[0-9]+$", "^-?[0-9]+$"


def _schema() -> Any:
    s, i = pa.string(), pa.int64()
    scalars = [("stringValue", s), ("intValue", s), ("boolValue", pa.bool_()), ("doubleValue", pa.float64()),
               ("bytesValue", s)]
    inner = pa.struct(scalars)
    any_value = pa.struct([*scalars, ("arrayValue", pa.struct([("values", pa.list_(inner))])),
                           ("kvlistValue", pa.struct([("values", pa.list_(pa.struct([("key", s), ("value", inner)])))]))])
    attrs = [("attributes", pa.list_(pa.struct([("key", s), ("value", any_value)]))), ("droppedAttributesCount", i)]
    event = pa.struct([("timeUnixNano", s), ("name", s), *attrs])
    link = pa.struct([("traceId", s), ("spanId", s), ("traceState", s), ("flags", i), *attrs])
    span = pa.struct([("traceId", s), ("spanId", s), ("parentSpanId", s), ("traceState", s), ("flags", i), ("name", s),
                      ("kind", i), ("startTimeUnixNano", s), ("endTimeUnixNano", s), *attrs,
                      ("events", pa.list_(event)), ("droppedEventsCount", i), ("links", pa.list_(link)),
                      ("droppedLinksCount", i), ("status", pa.struct([("code", i), ("message", s)]))])
    scope = pa.struct([("name", s), ("version", s), *attrs])
    scope_spans = pa.struct([("scope", scope), ("spans", pa.list_(span)), ("schemaUrl", s)])
    resource = pa.struct(attrs)
    resource_spans = pa.struct([("resource", resource), ("scopeSpans", pa.list_(scope_spans)), ("schemaUrl", s)])
    return pa.schema([("resourceSpans", pa.list_(resource_spans))])


class _Row(Exception):
    """This block is not in the canonical shape: the row path reads it."""


def available() -> bool:
    """Whether pyarrow is installed; it is imported on the first call, so that a
    command that reads no large file does not pay for the import (0.2 s, 60 MiB)."""
    global pa, pc, pj, _PARSE, _loaded
    if _loaded is None:
        try:
            import pyarrow
            import pyarrow.compute
            import pyarrow.json
        except ImportError:  # the core install
            _loaded = False
        else:
            pa, pc, pj = pyarrow, pyarrow.compute, pyarrow.json
            _PARSE = pj.ParseOptions(explicit_schema=_schema(), unexpected_field_behavior="error")
            _loaded = True
    return _loaded


def parse_block(block: bytes, lines: int) -> Any:
    """``block`` (``lines`` JSON lines) parsed against the schema, or ``None`` when the
    row path must read it. Arrow parses in C++ without the GIL, so this can run on
    another thread while the caller converts the block before."""
    if not available() or b"null" in block:
        return None
    if not block.isascii():
        if b"\xef\xbb\xbf" in block:  # a byte order mark inside the file: orjson refuses it
            return None
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            return None
    try:
        table = pj.read_json(pa.BufferReader(block), parse_options=_PARSE,
                             read_options=pj.ReadOptions(use_threads=False, block_size=len(block) + 1))
    except pa.ArrowException:
        return None
    if table.num_rows != lines:  # a line that holds two objects: orjson refuses it
        return None
    return table.column(0).combine_chunks()


def block_chunks(name: str, linenos: list[int], parsed: Any,
                 keep: Callable[[str], bool] | None = None) -> list[Chunk] | None:
    """The chunks of a block :func:`parse_block` read (one per line, numbered ``linenos``,
    as the row path makes them), or ``None`` when the row path must read it."""
    try:
        return _chunks(name, linenos, parsed, keep)
    except (_Row, BadField, pa.ArrowException, AttributeError, TypeError, ValueError):
        return None


def decode_block(name: str, linenos: list[int], block: bytes,
                 keep: Callable[[str], bool] | None = None) -> list[Chunk] | None:
    """:func:`parse_block` then :func:`block_chunks`."""
    parsed = parse_block(block, len(linenos))
    return None if parsed is None else block_chunks(name, linenos, parsed, keep)


def _lists(array: Any) -> tuple[Any, list[int]]:
    """A list array's values, and each row's number of them."""
    return array.flatten(), pc.fill_null(pc.list_value_length(array), 0).to_pylist()


def _grouped(items: Any, lengths: list[int], group: Callable = tuple) -> list[Any]:
    """``items`` in consecutive groups of ``lengths``, each made by ``group``."""
    it = iter(items)
    return [group(islice(it, n)) for n in lengths]


def _strings(array: Any) -> list[str]:
    return pc.fill_null(array, "").to_pylist()


def _all_match(array: Any, pattern: str) -> bool:
    """Every present value matches (none present: true)."""
    return pc.all(pc.match_substring_regex(array, pattern)).as_py() is not False


def _check_ids(array: Any, pattern: str, zero: str) -> None:
    if not _all_match(array, pattern) or pc.any(pc.equal(array, zero)).as_py():
        raise _Row


def _uints(array: Any) -> Any:
    """Decimal strings as uint64; an absent or out-of-range one is the row path's."""
    if array.null_count or not _all_match(array, _DIGITS):
        raise _Row
    return pc.cast(array, pa.uint64())  # raises beyond 64 bits


def _enum(array: Any, names: dict) -> list[str]:
    """An enum column as the row path's names (absent: 0's name)."""
    try:
        return [names[v] for v in pc.fill_null(array, 0).to_pylist()]
    except KeyError:
        raise _Row from None


def _attributes(array: Any) -> list[dict[str, Any]]:
    """A column of OTLP attribute lists as one dict per row, as :func:`.otlp_json.attributes` makes them."""
    kvs, lengths = _lists(array)
    pairs = zip(_strings(pc.struct_field(kvs, "key")), _values(pc.struct_field(kvs, "value")))
    return _grouped(pairs, lengths, dict)  # a repeated key: the last one wins, as in the row path


def _values(value: Any) -> list[Any]:
    """A column of ``AnyValue`` structs as Python values."""
    kinds = [value.type.field(i).name for i in range(value.type.num_fields)]
    present = [pc.is_valid(pc.struct_field(value, k)) for k in kinds]
    count = pc.add(present[0].cast(pa.int8()), present[1].cast(pa.int8()))
    for p in present[2:]:
        count = pc.add(count, p.cast(pa.int8()))
    if pc.any(pc.greater(count, 1)).as_py() or pc.any(pc.equal(count, 0)).as_py():  # two kinds, or none
        raise _Row
    out = pc.struct_field(value, "stringValue").to_pylist()  # the most common kind first, then the others over it
    for kind, p in zip(kinds, present):
        if kind == "stringValue" or not pc.any(p).as_py():
            continue
        rows = pc.indices_nonzero(p)
        found = pc.take(pc.struct_field(value, kind), rows)
        nested: list[Any]
        if kind in _SCALARS:
            nested = _scalar(kind, found).to_pylist()
        elif kind == "arrayValue":
            items, lengths = _lists(pc.struct_field(found, "values"))
            nested = _grouped(_values(items) if len(items) else (), lengths)
        elif kind == "kvlistValue":
            nested = _attributes(pc.struct_field(found, "values"))
        else:  # bytesValue: rare, through the row path's own check
            nested = [any_value({kind: raw}) for raw in found.to_pylist()]
        for i, item in zip(rows.to_pylist(), nested):
            out[i] = item
    return out


def _scalar(kind: str, col: Any) -> Any:
    if kind == "intValue":
        if not _all_match(col, _INT):
            raise _Row
        return pc.cast(col, pa.int64())  # raises beyond int64, which the row path refuses too
    if kind == "doubleValue" and (pc.any(pc.is_nan(col)).as_py() or pc.any(pc.is_inf(col)).as_py()):
        raise _Row  # NaN and Infinity literals: Arrow reads them, orjson refuses them
    return col


def _chunks(name: str, linenos: list[int], lines: Any, keep: Callable[[str], bool] | None) -> list[Chunk]:
    chunks = [Chunk(f"{name}:{n}", keep=keep) for n in linenos]
    if lines.null_count:
        raise _Row
    rs = lines.flatten()
    scope_spans = pc.struct_field(rs, "scopeSpans")
    ss = scope_spans.flatten()
    spans_lists = pc.struct_field(ss, "spans")
    spans = spans_lists.flatten()
    if not len(spans):
        return chunks
    trace_ids = pc.struct_field(spans, "traceId")
    if trace_ids.null_count:
        raise _Row
    _check_ids(trace_ids, _HEX32, "0" * 32)
    span_ss = pc.list_parent_indices(spans_lists)
    span_rs = pc.take(pc.list_parent_indices(scope_spans), span_ss)
    span_line = pc.take(pc.list_parent_indices(lines), span_rs)
    if keep is not None:  # another job's spans are counted, not decoded
        kept = pa.array([keep(t) for t in trace_ids.to_pylist()], pa.bool_())
        for line in pc.filter(span_line, pc.invert(kept)).to_pylist():
            chunks[line].skipped += 1
        spans, span_ss, span_rs, span_line = (pc.filter(x, kept) for x in (spans, span_ss, span_rs, span_line))
    resources = _attributes(pc.struct_field(pc.struct_field(rs, "resource"), "attributes"))
    scope = pc.struct_field(ss, "scope")
    scope_names, versions = _strings(pc.struct_field(scope, "name")), _strings(pc.struct_field(scope, "version"))
    scoped = ([resources[r], scope_names[s], versions[s], chunks[n].spans]
              for r, s, n in zip(span_rs.to_pylist(), span_ss.to_pylist(), span_line.to_pylist()))
    for record, (resource, scope_name, version, out) in zip(_records(spans), scoped):
        record.resource, record.scope, record.scope_version = resource, scope_name, version
        out.append(record)
    return chunks


def _records(spans: Any) -> list[SpanRecord]:
    """The spans as records, their resource and scope left to the caller."""
    field = lambda key: pc.struct_field(spans, key)  # noqa: E731
    span_ids, parents = field("spanId"), field("parentSpanId")
    if span_ids.null_count:
        raise _Row
    _check_ids(span_ids, _HEX16, "0" * 16)
    parents = pc.if_else(pc.equal(parents, ""), pa.scalar(None, pa.string()), parents)  # "" is no parent
    _check_ids(parents, _HEX16, "0" * 16)
    start = _uints(field("startTimeUnixNano"))
    end = _uints(field("endTimeUnixNano"))
    end = pc.if_else(pc.equal(end, 0), start, end)
    status = field("status")
    codes, messages = _enum(pc.struct_field(status, "code"), _STATUS), _strings(pc.struct_field(status, "message"))
    remote_bit = pc.not_equal(pc.bit_wise_and(pc.fill_null(field("flags"), 0), REMOTE_PARENT), 0)
    remote = pc.and_(pc.is_valid(parents), remote_bit).to_pylist()
    return list(map(SpanRecord, field("traceId").to_pylist(), span_ids.to_pylist(), parents.to_pylist(),
                    _strings(field("name")), start.to_pylist(), end.to_pylist(), codes, messages,
                    _attributes(field("attributes")), _events(field("events")), _links(field("links")),
                    repeat(_NO_RESOURCE), remote, _enum(field("kind"), _KIND)))


def _events(array: Any) -> list[tuple]:
    events, lengths = _lists(array)
    if not len(events):
        return [()] * len(lengths)
    times = pc.struct_field(events, "timeUnixNano")
    if times.null_count:  # the row path reads an absent time as 0; keep that rare case there
        raise _Row
    records = list(map(EventRecord, _strings(pc.struct_field(events, "name")), _uints(times).to_pylist(),
                       _attributes(pc.struct_field(events, "attributes"))))
    return _grouped(records, lengths)


def _links(array: Any) -> list[tuple]:
    links, lengths = _lists(array)
    if not len(links):
        return [()] * len(lengths)
    field = lambda key: pc.struct_field(links, key)  # noqa: E731
    records = [LinkRecord(trace_id_of(t, "links.traceId"), span_id_of(s, "links.spanId"), attrs)  # rare: row checks
               for t, s, attrs in zip(field("traceId").to_pylist(), field("spanId").to_pylist(),
                                      _attributes(field("attributes")))]
    return _grouped(records, lengths)
