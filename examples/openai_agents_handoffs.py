"""An OpenAI Agents SDK app with a tool and handoffs, traced by orch-otel.

Needs:   pip install -e '.[openai-agents,cli]'
Run it:  python examples/openai_agents_handoffs.py   (then: orch-otel show orch-traces)

A triage agent hands off to billing, which looks the invoice up with a tool
and hands back to triage, which answers. The models are the SDK's own
offline ``ScriptedModel``, so it needs no keys and no network, and the SDK's
tracing is turned off (as its docs advise without an OpenAI key):
``orch_otel.instrument()`` records the run all the same, as one replayable
trace (one JSON line) under ``orch-traces/``.
"""

from __future__ import annotations

import asyncio
import sys

import orch_otel


async def main(trace_dir: str) -> None:
    setup = orch_otel.instrument(trace_dir=trace_dir)

    from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_tracing_disabled(True)

    @function_tool
    def lookup_invoice(number: str) -> str:
        """Look an invoice up."""
        return f"invoice {number}: paid"

    triage = Agent(name="triage", instructions="Route the customer.", model=ScriptedModel([
        {"output": [function_call("transfer_to_billing", {}, call_id="h1")]},
        {"output": [assistant_message("Your invoice is paid.")]},
    ]))
    billing = Agent(name="billing", handoff_description="invoices", tools=[lookup_invoice], model=ScriptedModel([
        {"output": [function_call("lookup_invoice", {"number": "42"}, call_id="t1")]},
        {"output": [function_call("transfer_to_triage", {}, call_id="h2")]},
    ]))
    triage.handoffs = [billing]
    billing.handoffs = [triage]

    result = await Runner.run(triage, "Is invoice 42 paid?", run_config=RunConfig(workflow_name="support"))
    print("answer:", result.final_output)

    orch_otel.flush()
    print("trace written to", setup.trace_dir)
    orch_otel.uninstrument()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "orch-traces"))
