"""Production logs -> replayable traces: readers for OTLP JSON lines, length-
prefixed OTLP protobuf, zstd variants and span dumps; streaming assembly; the
local and Ray engines behind ``orch-otel convert``. See ``docs/offline.md``."""

from ..assembly import Released, StreamAssembler
from ..spans import to_dump
from .pipeline import EXIT_NO_INPUT, EXIT_OK, EXIT_QUARANTINED, Options, Summary, convert_inputs
from .readers import input_files, read_file
from .records import Chunk, Problem, from_dump

__all__ = [
    "EXIT_NO_INPUT",
    "EXIT_OK",
    "EXIT_QUARANTINED",
    "Chunk",
    "Options",
    "Problem",
    "Released",
    "StreamAssembler",
    "Summary",
    "convert_inputs",
    "from_dump",
    "input_files",
    "read_file",
    "to_dump",
]
