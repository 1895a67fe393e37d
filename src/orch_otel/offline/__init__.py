"""Production logs -> replayable traces: readers for OTLP JSON lines, length-
prefixed OTLP protobuf, zstd variants and span dumps; streaming assembly; the
local and Ray engines behind ``orch-otel convert``. See ``docs/offline.md``."""

from ..assembly import Released, StreamAssembler
from .pipeline import EXIT_NO_INPUT, EXIT_OK, EXIT_QUARANTINED, Options, Summary, convert_inputs
from .readers import input_files, read_file

__all__ = [
    "EXIT_NO_INPUT",
    "EXIT_OK",
    "EXIT_QUARANTINED",
    "Options",
    "Released",
    "StreamAssembler",
    "Summary",
    "convert_inputs",
    "input_files",
    "read_file",
]
