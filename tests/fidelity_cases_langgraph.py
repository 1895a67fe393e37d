"""LangGraph app shapes of the fidelity suite, each with its truth written by
hand from the app's code (see tests/fidelity.py for what each field means)."""

from __future__ import annotations

import langgraph_apps as apps
from fidelity import Case, Delegation, Stop, Truth


def _supervisor() -> None:
    apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))


SUPERVISOR_WORKERS = frozenset({"math_expert", "research_expert"})

CASES: list[Case] = [
    Case(
        framework="langgraph",
        run=_supervisor,
        truth=Truth(
            app="langgraph-supervisor: supervisor -> math_expert -> supervisor -> research_expert -> supervisor ends",
            instances={"supervisor": 3, "math_expert": 1, "research_expert": 1},
            delegations=(
                Delegation("supervisor", "math_expert", SUPERVISOR_WORKERS),
                Delegation("supervisor", "research_expert", SUPERVISOR_WORKERS),
            ),
            tool_calls=(
                ("supervisor", "transfer_to_math_expert", "call_to_math"),
                ("math_expert", "add", "call_add"),
                ("supervisor", "transfer_to_research_expert", "call_to_research"),
                ("research_expert", "lookup", "call_lookup"),
            ),
            # its last turn answers with no handoff: the supervisor itself ends the run
            stop=Stop("supervisor", reason="", forced=False),
            topology="centralized",
        ),
    ),
]
