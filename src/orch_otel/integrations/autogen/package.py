"""Versions of AutoGen this instrumentation supports."""

_instruments = (
    "autogen-agentchat >= 0.7.5, < 0.8",
    "autogen-core >= 0.7.5, < 0.8",
)
