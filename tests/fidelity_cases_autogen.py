"""AutoGen agentchat app shapes of the fidelity suite, each with its truth
written by hand from the app's code (see tests/fidelity.py)."""

from __future__ import annotations

from fidelity import Case

CASES: list[Case] = []
