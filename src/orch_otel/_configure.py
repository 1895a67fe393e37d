"""One-line setup: ``orch_otel.instrument()``, ``flush()`` and ``uninstrument()``."""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter

from . import _env as env
from . import _signals
from ._faults import log_fault
from .content import ContentPolicy, Redactor
from .exporters.spool_setup import spooled_export
from .exporters.trace_file import TraceFileExporter, TraceFileProcessor
from .recorder import Recorder, set_recorder

_log = logging.getLogger(__name__)
_INSTRUMENTOR_GROUP = "opentelemetry_instrumentor"


@dataclass
class Instrumentation:
    """What ``instrument()`` set up."""

    tracer_provider: Any
    recorder: Recorder
    trace_exporter: TraceFileExporter | None
    processors: list[SpanProcessor] = field(default_factory=list)
    instrumentors: list[Any] = field(default_factory=list)

    @property
    def trace_dir(self) -> Path | None:
        return self.trace_exporter.trace_dir if self.trace_exporter else None


_state: Instrumentation | None = None
_lock = threading.Lock()


def instrument(
    trace_dir: str | os.PathLike[str] | None = None,
    tracer_provider: Any = None,
    capture_content: bool | None = None,
    redactors: Iterable[Redactor] | None = None,
    runtime_spans: bool | None = None,
    record_for_replay: bool | None = None,
    capture_tokens: bool | None = None,
) -> Instrumentation:
    """Instrument every supported framework that is installed and write
    replayable traces under ``trace_dir`` (else ``$ORCH_OTEL_TRACE_DIR``, else
    ``./orch-traces``). Idempotent: later calls return the first setup.

    - ``tracer_provider``: an SDK ``TracerProvider`` to use; default the global
      one, or a new one (set as global) if none is set.
    - ``capture_content``: keep message and tool content (default: the
      ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` variable, else off).
    - ``redactors``: replace the default secret redactor (used when capturing).
    - ``runtime_spans``: keep AutoGen's runtime messaging spans, and Agent
      Framework's own spans, inside the run's trace instead of suppressing
      them (``docs/autogen.md``, ``docs/agent-framework.md``).
    - ``record_for_replay``: keep what ``orch-otel replay`` needs (the run's
      input, prompts, replies, tool results), redacted, in the local content
      store only; spans and OTLP exports carry refs alone (default: the
      ``ORCH_OTEL_RECORD_FOR_REPLAY`` variable, else off; ``docs/replay.md``).
    - ``capture_tokens``: keep the token ids and logprobs of model calls made
      through the openai SDK, when the server returns them, in the local content
      store only (default: the ``ORCH_OTEL_CAPTURE_TOKENS`` variable, else off;
      ``docs/tokens.md``).

    OTLP export is added when ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` is set
    and orch-otel created the provider (a provider you configured keeps its own
    exporters). It goes through a durable spool (``$ORCH_OTEL_SPOOL_DIR``; one
    under the system temp directory if that cannot be written), so nothing is
    lost while the collector is down. Without the ``[otlp]`` extra, one warning
    says so and trace files are written all the same.

    Where nothing in the process handles SIGTERM, a handler is installed that
    does what exit would, then ends the process with SIGTERM's default action
    (``docs/deploy.md``). Forked children (gunicorn ``--preload``, Celery,
    ``multiprocessing``) write files and spool segments of their own, and get
    SIGTERM's default action back.
    """
    global _state
    with _lock:
        if _state is not None:
            if any(arg is not None for arg in (trace_dir, tracer_provider, capture_content, redactors, runtime_spans,
                                               record_for_replay, capture_tokens)):
                _log.warning("orch-otel: already instrumented; the new arguments are ignored (call uninstrument() first)")
            return _state
        provider, created = (tracer_provider, False) if tracer_provider is not None else global_provider()
        policy = ContentPolicy.from_env(capture_content, redactors, record_for_replay, capture_tokens)
        recorder = Recorder(tracer_provider=provider, content=policy)
        set_recorder(recorder)
        state = Instrumentation(tracer_provider=provider, recorder=recorder, trace_exporter=None)
        if isinstance(provider, TracerProvider):
            state.trace_exporter = TraceFileExporter(trace_dir, local_contents=policy.local, token_contents=policy.tokens)
            state.processors.append(TraceFileProcessor(state.trace_exporter, max_queue_size=env.queue_size()))
            if created and env.otlp_protocol():
                otlp = _otlp_export(env.otlp_protocol())
                if otlp is not None:
                    state.processors.append(otlp)
            for processor in state.processors:
                provider.add_span_processor(processor)
            if not created:
                atexit.register(_shutdown_processors, state.processors)
            _signals.install(provider.shutdown if created else lambda: _shutdown_processors(state.processors),
                             env.shutdown_timeout_s() + 1.0)
        else:
            _log.warning("orch-otel: the tracer provider is not an SDK TracerProvider; no trace files are written")
        options = {"runtime_spans": runtime_spans} if runtime_spans is not None else {}
        state.instrumentors = _instrument_frameworks(provider, options)
        _state = state
        return state


def flush(timeout_millis: int | None = None) -> bool:
    """Write every completed trace and export every finished span now.

    Trace files never wait for the collector. OTLP export waits at most
    ``$ORCH_OTEL_FLUSH_TIMEOUT_MS`` (default 2000), or ``timeout_millis`` if
    shorter; past that flush returns False, the spans are safe in the spool and
    their export goes on in the background."""
    state = _state
    if state is None:
        provider = trace.get_tracer_provider()
        force_flush = getattr(provider, "force_flush", None)
        return bool(force_flush(30_000 if timeout_millis is None else timeout_millis)) if force_flush else True
    # each one, trace files first; no timeout: each processor's own bound (both take None)
    return all([p.force_flush() if timeout_millis is None else p.force_flush(timeout_millis) for p in state.processors])


def uninstrument() -> None:
    """Remove the framework instrumentation and close orch-otel's exporters
    (open traces are written, marked incomplete)."""
    global _state
    with _lock:
        state, _state = _state, None
        if state is None:
            return
        for instrumentor in state.instrumentors:
            instrumentor.uninstrument()
        _signals.uninstall()
        _shutdown_processors(state.processors)
        set_recorder(Recorder())


def current() -> Instrumentation | None:
    return _state


def _shutdown_processors(processors: list[SpanProcessor]) -> None:
    for processor in processors:
        try:
            processor.shutdown()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: processor shutdown failed")


def _otlp_export(protocol: str | None) -> SpanProcessor | None:
    """Spooled OTLP export, or None (one warning) when the OTLP exporter is not installed."""
    try:
        exporter = otlp_exporter(protocol)
    except RuntimeError as exc:  # the [otlp] extra is missing: trace files go on
        _log.warning("orch-otel: no OTLP export: %s", exc)
        return None
    except Exception:  # a bad OTEL_EXPORTER_OTLP_* value, say: never into the app
        log_fault(_log, logging.WARNING, "orch-otel: could not set up OTLP export; trace files are still written")
        return None
    return spooled_export(exporter, env.spool_dir(), max_spool_bytes=env.spool_max_bytes(),
                          max_queue_size=env.queue_size(), rebuild=lambda: otlp_exporter(protocol))


def global_provider() -> tuple[Any, bool]:
    """The global tracer provider, and whether it was created here: when none
    is set yet, a new SDK ``TracerProvider`` is made and set as the global one."""
    current_provider = trace.get_tracer_provider()
    if isinstance(current_provider, trace.ProxyTracerProvider):
        provider = TracerProvider(resource=Resource.create())
        trace.set_tracer_provider(provider)
        return provider, True
    return current_provider, False


def otlp_exporter(protocol: str | None, endpoint: str | None = None) -> Any:
    """The standard OTLP span exporter for ``protocol``, configured by the
    ``OTEL_EXPORTER_OTLP_*`` variables (``endpoint`` overrides them)."""
    OTLPSpanExporter: Callable[..., SpanExporter]  # the gRPC or the HTTP one: the same calls here
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise RuntimeError(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but the OTLP exporter is not installed: pip install 'orch-otel[otlp]'"
        ) from exc
    from .exporters import rejections

    kwargs: dict[str, Any] = {"endpoint": endpoint} if endpoint else {}
    if protocol != "grpc" and not any(os.environ.get(name) for name in _HTTP_SESSION_PROVIDERS):
        kwargs["session"] = rejections.observed_http_session()  # lets the spool tell a 413 from a 503
    if protocol == "grpc" and not os.environ.get("OTEL_PYTHON_EXPORTER_OTLP_GRPC_RETRYABLE_ERROR_CODES"):
        kwargs["retryable_error_codes"] = rejections.grpc_retryable_codes()  # a too-large message fails at once
    try:
        return OTLPSpanExporter(**kwargs)
    except TypeError:  # an SDK without these arguments: its defaults (the spool then probes and waits more)
        kwargs.pop("session", None)
        kwargs.pop("retryable_error_codes", None)
        return OTLPSpanExporter(**kwargs)


# Variables naming a requests.Session provider for the OTLP/HTTP exporter: when one
# is set, its session is used as it is (the spool then classifies failures by probing).
_HTTP_SESSION_PROVIDERS = ("OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER",
                           "OTEL_PYTHON_EXPORTER_OTLP_HTTP_CREDENTIAL_PROVIDER")


def _instrument_frameworks(provider: Any, options: dict[str, Any] | None = None) -> list[Any]:
    """Instrument each orch-otel instrumentor whose framework is installed;
    ``options`` go to every instrumentor (each reads only its own)."""
    done = []
    for entry_point in entry_points(group=_INSTRUMENTOR_GROUP):
        if not entry_point.value.startswith("orch_otel."):
            continue
        try:
            instrumentor = entry_point.load()()
            if instrumentor._check_dependency_conflicts() is not None:
                continue  # framework absent or unsupported version
            if not instrumentor.is_instrumented_by_opentelemetry:
                instrumentor.instrument(tracer_provider=provider, **(options or {}))
            done.append(instrumentor)
        except Exception:
            log_fault(_log, logging.WARNING, "orch-otel: could not instrument %s", entry_point.name)
    return done
