"""Zero-code setup: what ``OTEL_TRACES_EXPORTER=orch_otel`` turns on under
``opentelemetry-instrument``.

The SDK configurator builds the tracer provider from ``OTEL_TRACES_EXPORTER``;
the ``orch_otel`` entry is :class:`ZeroCodeExporter`. It writes trace files and,
when OTLP export is asked for (an ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` is
set, or ``OTEL_TRACES_EXPORTER`` also names an OTLP exporter), adds the same
durable, spooled OTLP export as ``instrument()``. orch-otel then owns OTLP
export: the SDK's own OTLP exporters in the same list are taken off the provider
(one warning), so every span is sent once, through the spool.

The protocol is the one the user set (``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``,
``OTEL_EXPORTER_OTLP_PROTOCOL``, or the exporter named: ``otlp_proto_grpc``,
``otlp_proto_http``), else ``http/protobuf`` as OTLP specifies.
opentelemetry-distro sets ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc`` in the process
when the user did not; that default is ignored where the environment the process
started with can be read (Linux), since it sent gRPC to the HTTP port 4318.

Something must build that provider: opentelemetry-distro's configurator
(``orch-otel[zero-code]``) or another distro's. Without one,
``opentelemetry-instrument`` configures nothing and :func:`pre_instrument` says so.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

from . import _env as env
from ._configure import otlp_exporter
from ._faults import log_fault
from .exporters.spool_setup import spooled_export
from .exporters.trace_file import TraceFileExporter
from .recorder import get_recorder

_log = logging.getLogger(__name__)

# OTEL_TRACES_EXPORTER names of the SDK's OTLP exporters, and the protocol each fixes
_OTLP_NAMES = {"otlp": None, "otlp_proto_http": "http/protobuf", "otlp_proto_grpc": "grpc"}
_OTLP_EXPORTER_MODULES = (
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
)

_lock = threading.Lock()
_attached: tuple[TracerProvider, SpanProcessor] | None = None
_warned_sdk_otlp = False


class ZeroCodeExporter(TraceFileExporter):
    """The ``orch_otel`` traces exporter: trace files under
    ``$ORCH_OTEL_TRACE_DIR``, plus spooled OTLP export when asked for (see
    module doc). The SDK configurator creates it after setting the provider."""

    def __init__(self) -> None:
        policy = get_recorder().content
        # ORCH_OTEL_RECORD_FOR_REPLAY, ORCH_OTEL_CAPTURE_TOKENS
        super().__init__(local_contents=policy.local, token_contents=policy.tokens)
        try:
            attach_otlp_export(trace.get_tracer_provider())
        except RuntimeError as exc:  # the OTLP exporter is not installed
            _log.warning("orch-otel: no OTLP export: %s", exc)
        except Exception:  # telemetry setup never breaks the app
            log_fault(_log, logging.WARNING, "orch-otel: could not set up OTLP export; trace files are still written")


def attach_otlp_export(provider: Any) -> SpanProcessor | None:
    """Add spooled OTLP export to ``provider`` if OTLP export is asked for
    (once per process); retire the SDK's OTLP exporters already on it."""
    global _attached
    with _lock:
        if _attached is not None or not isinstance(provider, TracerProvider):
            return None
        protocol = requested_protocol(traces_exporter_names())
        if protocol is None:
            return None
        processor = spooled_export(
            otlp_exporter(protocol),
            env.spool_dir(),
            max_spool_bytes=env.spool_max_bytes(),
            max_queue_size=env.queue_size(),
            rebuild=lambda: otlp_exporter(protocol),
        )
        provider.add_span_processor(processor)
        _attached = (provider, processor)
    retire_sdk_otlp_exporters()
    return processor


def pre_instrument() -> None:
    """The ``opentelemetry_pre_instrument`` hook (after the distro and configurators
    ran): warns when ``OTEL_TRACES_EXPORTER`` names orch_otel but nothing built an
    SDK provider, since no trace would be written; then retires the SDK's OTLP exporters."""
    try:
        if "orch_otel" in traces_exporter_names() and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            _log.warning("orch-otel: OTEL_TRACES_EXPORTER names orch_otel but no OpenTelemetry distro configured the "
                         "SDK, so no trace is written: pip install 'orch-otel[zero-code]' (opentelemetry-distro)")
    except Exception:
        log_fault(_log, logging.DEBUG, "orch-otel: could not check the zero-code setup")
    retire_sdk_otlp_exporters()


def retire_sdk_otlp_exporters() -> None:
    """Take the SDK's OTLP span processors off the provider orch-otel exports
    OTLP from (``OTEL_TRACES_EXPORTER=otlp,orch_otel``): they would send every
    span a second time, unspooled. Also run by :func:`pre_instrument`, for
    exporters listed after ``orch_otel``. It also moves the OTLP
    export after the trace files, so that flush and exit write trace files
    before waiting (bounded) for the collector."""
    global _warned_sdk_otlp
    try:
        if _attached is None:
            return
        provider, ours = _attached
        retired = _remove_processors(provider, lambda p: p is not ours and _is_sdk_otlp(p))
        _move_last(provider, ours)
        if retired and not _warned_sdk_otlp:
            _warned_sdk_otlp = True
            listed = ",".join(n for n in traces_exporter_names() if n in _OTLP_NAMES)
            _log.warning(
                "orch-otel: OTEL_TRACES_EXPORTER lists %s and orch_otel; orch-otel sends OTLP itself, once and "
                "through its spool, so the SDK's OTLP exporter is off (OTEL_TRACES_EXPORTER=orch_otel with an "
                "OTLP endpoint does the same)",
                listed,
            )
    except Exception:
        log_fault(_log, logging.WARNING, "orch-otel: could not inspect the SDK's span processors")


def traces_exporter_names() -> list[str]:
    raw = os.environ.get("OTEL_TRACES_EXPORTER", "")
    return [name.strip() for name in raw.split(",") if name.strip()]


def requested_protocol(names: list[str]) -> str | None:
    """The OTLP protocol to send with, or None when no OTLP export is asked for."""
    named = [_OTLP_NAMES[name] for name in names if name in _OTLP_NAMES]
    if not named and not env.otlp_endpoint_set():
        return None
    fixed = {protocol for protocol in named if protocol}
    if len(fixed) == 1:
        return fixed.pop()
    if len(fixed) > 1:
        _log.warning("orch-otel: OTEL_TRACES_EXPORTER names both otlp_proto_grpc and otlp_proto_http; "
                     "sending once, with the protocol the OTEL_EXPORTER_OTLP_*PROTOCOL variables give")
    return env.otlp_protocol_setting(user_environ())


def user_environ() -> Mapping[str, str]:
    """The environment without opentelemetry-distro's in-process
    ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc`` default (when it can tell)."""
    if not _distro_defaulted_protocol():
        return os.environ
    return {k: v for k, v in os.environ.items() if k != env.OTEL_EXPORTER_OTLP_PROTOCOL}


def _distro_defaulted_protocol() -> bool:
    distro = sys.modules.get("opentelemetry.distro")
    distro_class = getattr(distro, "OpenTelemetryDistro", None)
    if distro_class is None or getattr(distro_class, "_instance", None) is None:
        return False  # opentelemetry-distro did not configure this process
    if os.environ.get(env.OTEL_EXPORTER_OTLP_PROTOCOL, "").strip() != "grpc":
        return False
    started_with = _launch_environment_names()
    return started_with is not None and env.OTEL_EXPORTER_OTLP_PROTOCOL not in started_with


def _launch_environment_names() -> set[str] | None:
    """Names of the variables this process was started with, before any
    in-process change (Linux keeps them in /proc); None where unknown."""
    try:
        raw = Path("/proc/self/environ").read_bytes()
    except OSError:
        return None
    return {entry.split(b"=", 1)[0].decode(errors="replace") for entry in raw.split(b"\0") if entry}


def _is_sdk_otlp(processor: Any) -> bool:
    exporter = getattr(processor, "span_exporter", None)
    return exporter is not None and type(exporter).__module__ in _OTLP_EXPORTER_MODULES


def _move_last(provider: TracerProvider, processor: Any) -> None:
    """Make ``processor`` the provider's last span processor (flushed and shut down last)."""
    multi = getattr(provider, "_active_span_processor", None)
    lock = getattr(multi, "_lock", None)
    if multi is None or lock is None or not isinstance(getattr(multi, "_span_processors", None), tuple):
        return  # an SDK that hides them: the order stays, every wait is bounded all the same
    with lock:
        if processor in multi._span_processors:
            multi._span_processors = tuple(p for p in multi._span_processors if p is not processor) + (processor,)


def _remove_processors(provider: TracerProvider, doomed) -> list[Any]:
    """Remove (and shut down) the provider's span processors ``doomed`` picks.
    The SDK has no public removal; without the expected internals, nothing is
    removed and a warning says spans may be sent twice."""
    multi = getattr(provider, "_active_span_processor", None)
    lock = getattr(multi, "_lock", None)
    if multi is None or lock is None or not isinstance(getattr(multi, "_span_processors", None), tuple):
        if any(doomed(p) for p in getattr(multi, "_span_processors", ()) or ()):
            _log.warning("orch-otel: this SDK version hides its span processors; the SDK's OTLP exporter stays on "
                         "and spans are sent twice: set OTEL_TRACES_EXPORTER=orch_otel")
        return []
    kept: list[Any] = []
    removed: list[Any] = []
    with lock:
        for processor in multi._span_processors:
            (removed if doomed(processor) else kept).append(processor)
        multi._span_processors = tuple(kept)
    for processor in removed:
        try:
            processor.shutdown()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: shutting down a retired processor failed")
    return removed
