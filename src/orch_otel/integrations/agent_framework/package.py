"""Versions of Microsoft Agent Framework this instrumentation supports (it needs Python >= 3.11)."""

_instruments = ("agent-framework-core >= 1.26, < 2",)
