"""Exporters: the live replayable-trace exporter and its span assembler."""

from .assembler import TraceAssembler
from .trace_file import TraceFileExporter

__all__ = ["TraceAssembler", "TraceFileExporter"]
