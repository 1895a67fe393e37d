"""Read span records from files, whatever their format.

Per file, after undoing whole-file zstd compression (magic bytes ``28 b5 2f fd``
or a ``.zst`` / ``.zstd`` suffix):

* a first byte of ``{`` or whitespace (after an optional UTF-8 byte order
  mark, which always means text) means **JSON lines**: each line is an
  OTLP ``TracesData`` object (Collector ``file`` exporter, ``format: json``) or
  a span-dump record (:mod:`orch_otel.offline.records`), told apart per line;
* anything else means **length-prefixed messages** (Collector ``format: proto``,
  or any format with ``compression: zstd``): a 4-byte big-endian length, then
  the message, itself zstd-compressed when it starts with the zstd magic, and
  then either OTLP protobuf or OTLP JSON.

Problems are located as ``file:line`` (JSON lines) or ``file@offset`` (byte
offset of a message's length prefix, in the decompressed stream for whole-file
zstd). A truncated message ends its file: nothing after it can be framed.
"""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import orjson

from .._env import ORCH_OTEL_MAX_LINE_BYTES, max_line_bytes
from .._inputs import BoundedStream, Inflated, TooLong, Unreadable, bounded_lines, decompress_bounded, open_regular, zstd_limit
from ..tracefiles import BOM, numbered_lines
from .columnar import BLOCK_BYTES, MIN_FILE_BYTES, available, block_chunks, parse_block
from .otlp_json import decode_traces_data
from .otlp_proto import decode_message
from .records import BadField, Chunk, Problem, from_dump

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZSTD_SUFFIXES = (".zst", ".zstd")
# ".spool": segments of the durable export spool (orch_otel.exporters.spool), span dumps one per line
INPUT_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".pb", ".binpb", ".proto", ".otlp", ".bin", ".spans", ".spool"})
FORMATS_READ = "OTLP JSON lines, length-prefixed OTLP protobuf (zstd or not), span dumps and spool segments"
MAX_MESSAGE_BYTES = 1 << 30  # a longer length prefix is no OTLP file's: the rest of the file is skipped
_MAX_UNDECODABLE = 16  # messages in a row that decode to nothing: past this, the file is not read on
_PROGRESS_EVERY = 512


def input_files(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Path]]:
    """(files to read, paths that do not exist). Directories are searched
    recursively for files with an input suffix (optionally + ``.zst``),
    skipping hidden files; named files are always read."""
    found: list[Path] = []
    missing: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for p in sorted(path.rglob("*")):
                rel = p.relative_to(path).parts
                if p.is_dir() or any(part.startswith(".") for part in rel):
                    continue  # not p.is_file(): a FIFO or a symlink loop is read as a problem, never silently left out
                name = p.name[: -len(p.suffix)] if p.suffix in ZSTD_SUFFIXES else p.name
                if Path(name).suffix in INPUT_SUFFIXES:
                    found.append(p)
        elif path.is_file():
            found.append(path)
        else:
            missing.append(path)
    return found, missing


def read_file(path: Path, on_bytes: Callable[[int], None] | None = None,
              keep: Callable[[str], bool] | None = None, *, columnar: bool = True) -> Iterator[Chunk]:
    """Every line or message of ``path`` as a chunk of spans and problems.
    ``on_bytes`` gets the number of (compressed) bytes read so far, now and then.
    ``keep``: a trace id filter (see :class:`~orch_otel.offline.records.Chunk`);
    the OTLP JSON decoder applies it before decoding a span, the others after.
    ``columnar``: read JSON lines of a large file in blocks through
    :mod:`.columnar` where it can (the same chunks; ``False``: line by line,
    the reference path)."""
    try:
        raw = open_regular(path)
    except Unreadable as exc:  # a FIFO, a symlink loop: never opened for reading, never waited on
        yield Chunk(str(path), problems=[Problem(str(path), exc.reason)])
        return
    with raw:
        stream: IO[bytes] = raw
        if raw.peek(4)[:4] == ZSTD_MAGIC or path.suffix in ZSTD_SUFFIXES:
            import zstandard

            inflated = BoundedStream(zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True),
                                     os.fstat(raw.fileno()).st_size)
            stream = io.BufferedReader(inflated, buffer_size=1 << 20)
        if skip_bom(stream) or _is_json(stream):  # a byte order mark: JSON lines, never length-prefixed
            columnar = columnar and os.fstat(raw.fileno()).st_size >= MIN_FILE_BYTES and available()
            chunks = _lines(path, stream, keep, columnar)
        else:
            chunks = _messages(path, stream, keep)
        n = 0
        try:
            for chunk in chunks:
                yield chunk
                n += 1
                if on_bytes is not None and n % _PROGRESS_EVERY == 0:
                    on_bytes(raw.tell())
        except Exception as exc:  # corrupt compressed stream, I/O error: report, keep what was read
            yield Chunk(str(path), problems=[Problem(f"{path}", f"stopped reading after {n} record(s): "
                                                     f"{type(exc).__name__}: {exc}")])
        if on_bytes is not None:
            on_bytes(os.fstat(raw.fileno()).st_size)


def is_json_lines(path: Path) -> bool:
    """True for an uncompressed JSON lines file, whose lines can be read from any
    line boundary on (``--engine ray`` splits such files into byte ranges)."""
    if path.suffix in ZSTD_SUFFIXES:
        return False
    try:
        with open_regular(path) as f:  # a FIFO is none: read whole by the line reader, which says why
            return f.peek(3)[:3] == BOM or (f.peek(1)[:1] != b"" and _is_json(f))
    except OSError:
        return False


def is_blank(line: bytes) -> bool:
    """A line the readers skip: empty, or only whitespace (a short test first: lines are long)."""
    return len(line) < 4 and not line.strip()


def skip_bom(stream: IO[bytes]) -> bool:
    """Consume a leading UTF-8 byte order mark; True when there was one."""
    try:
        if stream.peek(3)[:3] != BOM:  # type: ignore[attr-defined]
            return False
    except Exception:
        return False
    stream.read(3)
    return True


def _is_json(stream: IO[bytes]) -> bool:
    try:
        head = stream.peek(1)[:1]  # type: ignore[attr-defined]
    except Exception:
        return True  # let the line reader report the error
    return head in (b"{", b"[", b" ", b"\t", b"\n", b"\r", b"")


def decode_json(value: object, chunk: Chunk) -> None:
    """Dispatch one parsed JSON object: OTLP ``TracesData`` or a span-dump record."""
    if type(value) is not dict:
        chunk.problems.append(Problem(chunk.where, f"expected a JSON object, got {type(value).__name__}", value))
    elif "resourceSpans" in value:
        decode_traces_data(value, chunk)
    elif "acked" in value and len(value) == 1:
        pass  # a spool segment's note of spans the collector took: bookkeeping, not a span
    elif "span_id" in value:
        try:
            chunk.add(from_dump(value))
        except BadField as exc:
            chunk.problems.append(Problem(chunk.where, f"span dump: {exc}", value, is_span=True))
    else:
        what = not_spans(value)
        reason = (f"{what[0]}, not a span: {what[2]}" if what else
                  "neither an OTLP TracesData object (resourceSpans) nor a span dump record")
        chunk.problems.append(Problem(chunk.where, reason, value))


def not_spans(value: dict) -> tuple[str, str, str] | None:
    """(what one such record is, what a file of them is, what to do) for
    records that are another command's output, not span input."""
    if isinstance(value.get("events"), list) and "trace_id" in value and "task_id" in value:
        return ("a converted trace", "converted traces",
                "use `orch-otel validate`, `orch-otel show` or `orch-otel dataset` on it")
    if set(value) == {"ref", "text"}:
        return ("a content store record", "content store records (captured content)",
                "it is read with the trace file it belongs to (`orch-otel dataset`)")
    if {"where", "reason", "kind"} <= set(value):
        return ("a quarantine record", "quarantine records of an earlier convert",
                "each record's `raw` field holds the bad input; fix that and convert it again")
    return None


def malformed_line(where: str, line: bytes, exc: Exception) -> Problem:
    return Problem(where, f"malformed JSON: {exc}", line.decode("utf-8", "replace").rstrip("\n"))


def not_a_span_file(name: str, what: tuple[str, str, str]) -> Problem:
    return Problem(name, f"this is a file of {what[1]}, not spans; {what[2]}")


def _lines(path: Path, stream: IO[bytes], keep: Callable[[str], bool] | None, columnar: bool) -> Iterator[Chunk]:
    name = str(path)
    lines = ((lineno, line) for lineno, line in numbered_lines(bounded_lines(stream))
             if isinstance(line, TooLong) or not is_blank(line))  # type: Iterator[tuple[int, bytes | TooLong]]
    for lineno, line in lines:  # line by line up to the first JSON value: it may say the file is not spans
        chunk, parsed, other_output = _line(name, lineno, line, keep, first=True)
        yield chunk
        if other_output:
            return
        if parsed:
            break
    if not columnar:
        for lineno, line in lines:
            yield _line(name, lineno, line, keep)[0]
        return
    yield from _blocks(name, lines, keep)


def _line(name: str, lineno: int, line: bytes | TooLong, keep: Callable[[str], bool] | None,
          first: bool = False) -> tuple[Chunk, bool, bool]:
    """One JSON line through the row path: (its chunk, whether it parsed, whether
    it is another command's output). With ``first``, such a record gives the one
    problem for the whole file."""
    chunk = Chunk(f"{name}:{lineno}", keep=keep)
    if isinstance(line, TooLong):
        chunk.problems.append(Problem(chunk.where, line.reason))
        return chunk, False, False
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        chunk.problems.append(malformed_line(chunk.where, line, exc))
        return chunk, False, False
    what = not_spans(value) if first and type(value) is dict else None
    if what is not None:  # a whole file of another command's output: one problem, not one per line
        return Chunk(name, problems=[not_a_span_file(name, what)]), True, True
    decode_json(value, chunk)
    del value  # free the parsed line before the consumer runs: its objects would crowd the CPU cache
    return chunk, True, False


def _blocks(name: str, lines: Iterator[tuple[int, bytes | TooLong]], keep: Callable[[str], bool] | None) -> Iterator[Chunk]:
    """The lines in blocks through :mod:`.columnar`, each block parsed on a helper
    thread while the one before is decoded here; a block it cannot read goes line by line."""
    def blocks() -> Iterator[tuple[list[int], list[bytes | TooLong], bytes]]:
        numbers: list[int] = []
        raw: list[bytes | TooLong] = []
        size = 0
        for lineno, line in lines:
            if isinstance(line, TooLong):  # its problem, in a block of its own (the row path says it)
                if raw:
                    yield numbers, raw, _joined(raw)
                    numbers, raw, size = [], [], 0
                yield [lineno], [line], b""
                continue
            numbers.append(lineno)
            raw.append(line)
            size += len(line)
            if size >= BLOCK_BYTES:
                yield numbers, raw, _joined(raw)
                numbers, raw, size = [], [], 0
        if raw:
            yield numbers, raw, _joined(raw)

    with ThreadPoolExecutor(1, thread_name_prefix="orch-otel-json") as pool:
        todo = blocks()
        block = next(todo, None)
        parsing = pool.submit(_parse, block) if block else None
        while block is not None and parsing is not None:
            numbers, raw, _ = block
            parsed = parsing.result()
            block = next(todo, None)
            parsing = pool.submit(_parse, block) if block else None
            chunks = block_chunks(name, numbers, parsed, keep) if parsed is not None else None
            if chunks is not None:
                yield from chunks
            else:
                for lineno, line in zip(numbers, raw):
                    yield _line(name, lineno, line, keep)[0]


def _parse(block: tuple[list[int], list, bytes]) -> Any:
    return parse_block(block[2], len(block[0])) if block[2] else None


def _joined(lines: list[bytes | TooLong]) -> bytes:
    block = b"".join(line for line in lines if not isinstance(line, TooLong))
    return block if block.endswith(b"\n") else block + b"\n"


def _messages(path: Path, stream: IO[bytes], keep: Callable[[str], bool] | None) -> Iterator[Chunk]:
    offset = 0
    empty = 0  # messages in a row that held nothing (no span, no decodable message)
    limit = max_line_bytes()
    while True:
        head = stream.read(4)
        if not head:
            return
        where = f"{path}@{offset}"
        if len(head) < 4:
            yield Chunk(where, problems=[Problem(where, f"truncated length prefix ({len(head)} of 4 bytes)", _b64(head))])
            return
        size = int.from_bytes(head, "big")
        text = offset == 0 and _looks_like_text(head)  # a text file, most likely: say so, not "bad length"
        if text and size > MAX_MESSAGE_BYTES:
            yield _not_a_span_log(path, head)
            return
        if size > MAX_MESSAGE_BYTES or size == 0:
            what = "an empty message" if size == 0 else f"implausible message length {size}"
            yield Chunk(where, problems=[Problem(where, f"{what}: not a length-prefixed OTLP file, or corrupt; "
                                                 "the rest of the file is skipped", _b64(head))])
            return
        if size > limit:  # never held: skipped, and the next message read
            skipped = _skip(stream, size)
            if skipped < size:
                yield Chunk(where, problems=[Problem(where, f"truncated message: {skipped} of {size} bytes")])
                return
            offset += 4 + size
            yield Chunk(where, problems=[Problem(where, f"message of {size} bytes is longer than the limit of {limit} "
                                                 f"bytes ({ORCH_OTEL_MAX_LINE_BYTES}); skipped")])
            continue
        payload = stream.read(size)
        if text and len(payload) < size:
            yield _not_a_span_log(path, head)
            return
        if len(payload) < size:
            yield Chunk(where, problems=[Problem(where, f"truncated message: {len(payload)} of {size} bytes", _b64(payload))])
            return
        offset += 4 + size
        chunk = decode_payload(payload, where, keep)
        useful = chunk.spans or chunk.skipped or any(p.is_span for p in chunk.problems)
        empty = 0 if useful else empty + 1
        yield chunk
        if empty >= _MAX_UNDECODABLE:
            yield Chunk(str(path), problems=[Problem(str(path), f"{empty} messages in a row could not be decoded: "
                                                     "not a length-prefixed OTLP file, or corrupt; the rest is skipped")])
            return


def _skip(stream: IO[bytes], size: int) -> int:
    """Read past ``size`` bytes a chunk at a time; the bytes there were."""
    done = 0
    while done < size:
        data = stream.read(min(1 << 20, size - done))
        if not data:
            break
        done += len(data)
    return done


def _not_a_span_log(path: Path, head: bytes) -> Chunk:
    reason = (f"not a span log: neither JSON lines nor length-prefixed OTLP (it starts with {head!r}); "
              f"convert reads {FORMATS_READ}")
    return Chunk(str(path), problems=[Problem(str(path), reason, _b64(head))])


def _looks_like_text(head: bytes) -> bool:
    return all(32 <= b < 127 or b in (9, 10, 13) for b in head)


def decode_payload(payload: bytes, where: str, keep: Callable[[str], bool] | None = None) -> Chunk:
    """One length-prefixed message: optionally zstd, then OTLP JSON or OTLP protobuf."""
    chunk = Chunk(where, keep=keep)
    if payload[:4] == ZSTD_MAGIC:
        import zstandard

        try:
            payload = decompress_bounded(payload, min(zstd_limit(len(payload)), max_line_bytes()))
        except Inflated as exc:
            chunk.problems.append(Problem(where, str(exc)))
            return chunk
        except zstandard.ZstdError as exc:
            chunk.problems.append(Problem(where, f"corrupt zstd message: {exc}", _b64(payload)))
            return chunk
    if payload[:3] == BOM:
        payload = payload[3:]
    if payload[:1] == b"{":
        try:
            value = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            chunk.problems.append(Problem(where, f"malformed JSON message: {exc}", payload.decode("utf-8", "replace")))
            return chunk
        decode_json(value, chunk)
    else:
        decode_message(payload, chunk)
    return chunk


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
