"""Versions of the OpenAI Agents SDK this instrumentation supports."""

_instruments = ("openai-agents >= 0.24, < 0.25",)
