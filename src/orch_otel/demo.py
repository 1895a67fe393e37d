"""The bundled offline demo: a research team written with orch-otel's decorators.

A lead agent plans, spawns three researchers in parallel (each searches with a
tool and summarises with a model), aggregates their notes, delegates the draft
to a writer, gets a critic's review, and stops. Models are a deterministic
fake, so it runs with no network and no keys.
"""

from __future__ import annotations

import asyncio

from . import _decorators as oo

__all__ = ["run"]

TOPICS = ("web", "papers", "code")


def fake_model(agent_name: str, prompt: str) -> tuple[str, int, int]:
    """A deterministic stand-in for an LLM: (reply, input tokens, output tokens)."""
    reply = f"{agent_name}: notes on {prompt[:40]}"
    return reply, len(prompt.split()), len(reply.split())


def _chat(agent_name: str, prompt: str) -> str:
    with oo.llm_call("fake-chat-1", provider="offline", input_messages=[{"role": "user", "content": prompt}]) as call:
        reply, tokens_in, tokens_out = fake_model(agent_name, prompt)
        call.set_response([{"role": "assistant", "content": reply}], input_tokens=tokens_in, output_tokens=tokens_out)
    return reply


@oo.tool
def search(query: str) -> list[str]:
    return [f"result {i} for {query}" for i in range(3)]


def make_researcher(topic: str):
    @oo.agent(f"researcher_{topic}", role="researcher")
    async def researcher(question: str) -> str:
        hits = search(f"{question} ({topic})")
        await asyncio.sleep(0.01)  # the three researchers overlap in time
        return _chat(f"researcher_{topic}", " ".join(hits))

    return researcher


@oo.agent("writer", role="writer")
def writer(notes: str) -> str:
    return _chat("writer", f"write a report from: {notes}")


@oo.agent("critic", role="critic")
def critic(draft: str) -> bool:
    _chat("critic", f"review: {draft}")
    oo.message("approved", recipients="lead", message_type="review")
    return True


@oo.agent("lead", role="orchestrator")
async def lead(question: str) -> str:
    _chat("lead", f"plan research for: {question}")
    names = [f"researcher_{t}" for t in TOPICS]
    oo.spawn(names, options=names)
    notes = await asyncio.gather(*(make_researcher(t)(question) for t in TOPICS))
    oo.aggregate("\n".join(notes), sources=names)
    oo.delegate("writer", options=["writer", "critic"])
    oo.message("draft the report", recipients="writer", message_type="task")
    draft = writer("\n".join(notes))
    oo.delegate("critic", options=["writer", "critic"])
    approved = critic(draft)
    oo.reward(1.0 if approved else 0.0, name="team", unit="team")
    oo.stop("end" if approved else "max_turns")
    return draft


async def run(question: str = "how do agent teams decide when to stop?", task_id: str = "demo-task-1") -> str:
    with oo.workflow("research_team", task_id=task_id, topology="hierarchical"):
        return await lead(question)
