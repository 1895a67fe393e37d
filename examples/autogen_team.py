"""An AutoGen (autogen-agentchat 0.7) swarm with a tool and handoffs, traced by orch-otel.

Needs:   pip install -e '.[autogen,cli]'
Run it:  python examples/autogen_team.py   (then: orch-otel show orch-traces)

A triage agent looks up the order with a tool and hands off to billing in the
same turn; billing hands the case back to the user, which ends the run. The
models are AutoGen's offline ReplayChatCompletionClient, so it needs no keys
and no network. ``orch_otel.instrument()`` finds AutoGen and instruments it:
the run becomes one replayable trace (one JSON line) under ``orch-traces/``.
"""

from __future__ import annotations

import asyncio
import sys

import orch_otel


async def lookup_order(order_id: str) -> str:
    """Find an order (a tool)."""
    return f"order {order_id}: charged twice"


async def main(trace_dir: str) -> None:
    setup = orch_otel.instrument(trace_dir=trace_dir)  # instrument before building and running teams

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import HandoffTermination, MaxMessageTermination
    from autogen_agentchat.teams import Swarm

    from orch_otel.integrations.autogen.testing import handoff, replay, tool_calls

    triage = AssistantAgent(
        "triage", description="first line support", tools=[lookup_order], handoffs=["billing"],
        model_client=replay(tool_calls(("lookup_order", {"order_id": "A17"}, "call_1"),
                                       ("transfer_to_billing", None, "call_2"))),
    )
    billing = AssistantAgent(
        "billing", description="refunds and invoices", handoffs=["user"],
        model_client=replay(handoff("user", "call_3")),
    )
    team = Swarm([triage, billing],
                 termination_condition=HandoffTermination(target="user") | MaxMessageTermination(10))

    result = await team.run(task="I was charged twice for order A17")
    print("stop reason:", result.stop_reason)
    for message in result.messages:
        print(f"  {message.source:>8} {type(message).__name__}")

    orch_otel.flush()
    print("trace written to", setup.trace_dir)
    orch_otel.uninstrument()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "orch-traces"))
