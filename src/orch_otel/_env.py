"""Environment variables read by orch-otel, all parsed here.

A bad value logs a warning and falls back to the default: telemetry settings
never crash the host application.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger(__name__)

ORCH_OTEL_TRACE_DIR = "ORCH_OTEL_TRACE_DIR"
"""Directory for replayable trace files. Default: ``./orch-traces``."""

OTEL_SEMCONV_STABILITY_OPT_IN = "OTEL_SEMCONV_STABILITY_OPT_IN"
"""OTel transition rule: a comma-separated list of opt-ins. ``gen_ai_latest_experimental``
adds what only the newest, unreleased GenAI conventions define (docs/otlp.md,
"GenAI conventions"). Default: the conventions orch-otel has always emitted."""

GENAI_LATEST_EXPERIMENTAL = "gen_ai_latest_experimental"

CAPTURE_MESSAGE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""OTel GenAI convention: capture message and tool content (``true``, or one of
``span_only`` / ``span_and_event``). Default: off."""

ORCH_OTEL_CONTENT_HASH_KEY = "ORCH_OTEL_CONTENT_HASH_KEY"
"""Optional secret. When set, content refs are keyed hashes (HMAC), so short
contents cannot be guessed from their refs."""

ORCH_OTEL_MAX_CONTENT_CHARS = "ORCH_OTEL_MAX_CONTENT_CHARS"
"""Longest piece of content (its JSON text, in characters) captured when
capture is on; a longer one is recorded as a note of its size, so redaction
on the app's thread stays bounded. Default: 1048576."""

DEFAULT_MAX_CONTENT_CHARS = 1 << 20

ORCH_OTEL_RECORD_FOR_REPLAY = "ORCH_OTEL_RECORD_FOR_REPLAY"
"""Record for replay: keep the content a replay needs (the run's input, every
prompt, reply and tool result), redacted, in the local content store beside
the trace files only, never in span attributes or OTLP exports. Default: off."""

ORCH_OTEL_REPLAY_CONTENT_MAX_BYTES = "ORCH_OTEL_REPLAY_CONTENT_MAX_BYTES"
"""Most bytes of replay content held in memory until its trace is written
(recording for replay without content capture). Default: 67108864."""

ORCH_OTEL_CAPTURE_TOKENS = "ORCH_OTEL_CAPTURE_TOKENS"
"""Capture the token ids and logprobs of model calls made through the openai
SDK (prompt ids, completion ids, one logprob per completion id), when the
server returns them (vLLM, SGLang: ``docs/tokens.md``). They go to the local
content store beside the trace files only, never to spans or OTLP exports.
Default: off."""

ORCH_OTEL_REQUEST_TOKENS = "ORCH_OTEL_REQUEST_TOKENS"
"""With token capture on, also ask the server for them in every recorded
model call that does not already: ``vllm`` (or ``true``) adds ``logprobs`` and
``return_token_ids`` (vLLM's request fields); ``sglang`` adds ``logprobs``,
``return_prompt_token_ids`` and ``return_token_ids`` (non-streaming) or the
``sglext`` id fields (streaming). For servers you run yourself. Default: off."""

ORCH_OTEL_TOKEN_CONTENT_MAX_BYTES = "ORCH_OTEL_TOKEN_CONTENT_MAX_BYTES"
"""Most bytes of token records held in memory until their trace is written.
Default: 67108864."""

ORCH_OTEL_MAX_OPEN_TRACES = "ORCH_OTEL_MAX_OPEN_TRACES"
"""Traces the live exporter holds open at once. When exceeded, the oldest is
written with stop reason ``incomplete``. Default: 10000."""

ORCH_OTEL_MAX_SPANS_PER_TRACE = "ORCH_OTEL_MAX_SPANS_PER_TRACE"
"""Spans held for one open trace. When exceeded, the trace is written early
with stop reason ``incomplete``. Default: 100000."""

ORCH_OTEL_STRICT = "ORCH_OTEL_STRICT"
"""``1``: a wrong argument to a public helper, or a fault inside orch-otel,
raises (for tests). Default: off, the fault is logged once and the call does
nothing, so it never reaches the app."""

ORCH_OTEL_QUEUE_SIZE = "ORCH_OTEL_QUEUE_SIZE"
"""Spans the trace-file exporter's batch queue holds before it must drop.
Default: 65536 (the SDK's 2048 is small for bursts of concurrent runs)."""

ORCH_OTEL_SPOOL_DIR = "ORCH_OTEL_SPOOL_DIR"
"""Durable spool for OTLP export (spans wait there while the collector is
unreachable). Default: ``./orch-spool``."""

ORCH_OTEL_SPOOL_MAX_BYTES = "ORCH_OTEL_SPOOL_MAX_BYTES"
"""Bound of the spool on disk. Past it, spans whose export fails are lost and
counted. Default: 268435456 (256 MiB)."""

ORCH_OTEL_SHUTDOWN_TIMEOUT_MS = "ORCH_OTEL_SHUTDOWN_TIMEOUT_MS"
"""How long exit (or ``uninstrument()``) waits, in all, for the collector to
take the spans still unsent. Past it, they stay in the spool for the next
process or ``orch-otel spool replay``. Default: 2000."""

ORCH_OTEL_FLUSH_TIMEOUT_MS = "ORCH_OTEL_FLUSH_TIMEOUT_MS"
"""How long ``flush()`` waits for the collector (a shorter ``timeout_millis``
wins). Past it, flush returns False and the spans stay in the spool; the
export goes on in the background. Default: 2000."""

DEFAULT_EXPORT_WAIT_MS = 2_000

ORCH_OTEL_MAX_LINE_BYTES = "ORCH_OTEL_MAX_LINE_BYTES"
"""Longest line the commands read from an input file (a trace line, an OTLP
JSON line, a content-store line); a longer one is skipped, whole, as a problem
(``file:line: reason``), and reading goes on, so memory stays near this bound.
Default: 67108864 (64 MiB)."""

ORCH_OTEL_MAX_ZSTD_RATIO = "ORCH_OTEL_MAX_ZSTD_RATIO"
"""Most a zstd input (a file, or one message) may decompress to, as a multiple
of its compressed size (and at least 1 MiB); past it the rest is skipped as a
likely decompression bomb. Default: 1000."""

OTEL_EXPORTER_OTLP_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
OTEL_EXPORTER_OTLP_PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"

_TRUE = {"1", "true", "yes", "on", "span_only", "span_and_event", "event_only"}
_FALSE = {"", "0", "false", "no", "off", "no_content"}


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    _log.warning("orch-otel: ignoring %s=%r (expected true or false)", name, raw)
    return default


def _positive_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value > 0:
        return value
    _log.warning("orch-otel: ignoring %s=%r (expected a positive integer)", name, raw)
    return default


def strict() -> bool:
    return _flag(ORCH_OTEL_STRICT, False)


def genai_latest_experimental() -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` lists ``gen_ai_latest_experimental``."""
    values = os.environ.get(OTEL_SEMCONV_STABILITY_OPT_IN, "")
    return GENAI_LATEST_EXPERIMENTAL in {v.strip().lower() for v in values.split(",")}


def capture_content() -> bool:
    return _flag(CAPTURE_MESSAGE_CONTENT, False)


def record_for_replay() -> bool:
    return _flag(ORCH_OTEL_RECORD_FOR_REPLAY, False)


def capture_tokens() -> bool:
    return _flag(ORCH_OTEL_CAPTURE_TOKENS, False)


REQUEST_TOKEN_SERVERS = ("vllm", "sglang")


def request_tokens() -> str | None:
    """The server whose request fields to add (``vllm`` / ``sglang``), or None."""
    raw = os.environ.get(ORCH_OTEL_REQUEST_TOKENS)
    value = (raw or "").strip().lower()
    if value in REQUEST_TOKEN_SERVERS:
        return value
    if value in _TRUE:
        return "vllm"
    if value in _FALSE:
        return None
    _log.warning("orch-otel: ignoring %s=%r (expected vllm, sglang, true or false)", ORCH_OTEL_REQUEST_TOKENS, raw)
    return None


def token_content_max_bytes() -> int:
    return _positive_int(ORCH_OTEL_TOKEN_CONTENT_MAX_BYTES, 64 << 20)


def replay_content_max_bytes() -> int:
    return _positive_int(ORCH_OTEL_REPLAY_CONTENT_MAX_BYTES, 64 << 20)


def trace_dir() -> Path:
    return Path(os.environ.get(ORCH_OTEL_TRACE_DIR) or "orch-traces")


def content_hash_key() -> bytes | None:
    raw = os.environ.get(ORCH_OTEL_CONTENT_HASH_KEY)
    return raw.encode() if raw else None


def max_line_bytes() -> int:
    return _positive_int(ORCH_OTEL_MAX_LINE_BYTES, 64 << 20)


def max_zstd_ratio() -> int:
    return _positive_int(ORCH_OTEL_MAX_ZSTD_RATIO, 1000)


def max_content_chars() -> int:
    return _positive_int(ORCH_OTEL_MAX_CONTENT_CHARS, DEFAULT_MAX_CONTENT_CHARS)


@dataclass(frozen=True)
class Limits:
    max_open_traces: int
    max_spans_per_trace: int


def limits() -> Limits:
    return Limits(
        max_open_traces=_positive_int(ORCH_OTEL_MAX_OPEN_TRACES, 10_000),
        max_spans_per_trace=_positive_int(ORCH_OTEL_MAX_SPANS_PER_TRACE, 100_000),
    )


def spool_dir() -> Path:
    return Path(os.environ.get(ORCH_OTEL_SPOOL_DIR) or "orch-spool")


def spool_max_bytes() -> int:
    return _positive_int(ORCH_OTEL_SPOOL_MAX_BYTES, 256 * 1024 * 1024)


def queue_size() -> int:
    return _positive_int(ORCH_OTEL_QUEUE_SIZE, 65_536)


def otlp_endpoint_set() -> bool:
    return bool(os.environ.get(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or os.environ.get(OTEL_EXPORTER_OTLP_ENDPOINT))


def otlp_protocol_setting(environ: Mapping[str, str] | None = None) -> str:
    """The OTLP protocol ``environ`` (default: the process environment) asks
    for: ``grpc`` or ``http/protobuf`` (the default, as OTLP specifies)."""
    environ = os.environ if environ is None else environ
    raw = (
        environ.get(OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)
        or environ.get(OTEL_EXPORTER_OTLP_PROTOCOL)
        or "http/protobuf"
    ).strip().lower()
    if raw in {"grpc", "http/protobuf"}:
        return raw
    _log.warning("orch-otel: unsupported OTLP protocol %r; using http/protobuf", raw)
    return "http/protobuf"


def otlp_protocol() -> str | None:
    """The OTLP protocol to export with, or None when no OTLP endpoint is set."""
    return otlp_protocol_setting() if otlp_endpoint_set() else None


def shutdown_timeout_s() -> float:
    return _positive_int(ORCH_OTEL_SHUTDOWN_TIMEOUT_MS, DEFAULT_EXPORT_WAIT_MS) / 1000


def flush_timeout_s() -> float:
    return _positive_int(ORCH_OTEL_FLUSH_TIMEOUT_MS, DEFAULT_EXPORT_WAIT_MS) / 1000
