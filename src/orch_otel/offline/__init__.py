"""Production logs -> replayable traces: readers for OTLP JSON lines, length-
prefixed OTLP protobuf, zstd variants and span dumps; streaming assembly; the
local and Ray engines behind ``orch-otel convert``. See ``docs/offline.md``."""

from typing import Any

from .._assembly import Released, StreamAssembler
from .._renamed import deprecated
from .outputs import EXIT_NO_INPUT, EXIT_OK, EXIT_QUARANTINED, ConvertSummary, Options
from .pipeline import convert_inputs
from .readers import input_files, read_file

__all__ = [
    "EXIT_NO_INPUT",
    "EXIT_OK",
    "EXIT_QUARANTINED",
    "ConvertSummary",
    "Options",
    "Released",
    "StreamAssembler",
    "convert_inputs",
    "input_files",
    "read_file",
]


def __getattr__(name: str) -> Any:
    if name == "Summary":  # its name in 0.1, when orch_otel.datasets had another Summary
        deprecated("orch_otel.offline.Summary is now ConvertSummary")
        return ConvertSummary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
