"""Exporters: the live replayable-trace exporter (its assembler is ``orch_otel._assembly``)."""

from .trace_file import TraceFileExporter

__all__ = ["TraceFileExporter"]
