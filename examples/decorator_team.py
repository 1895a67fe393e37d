"""A planner / executor / critic team written with orch-otel's decorators.

Run it:  python examples/decorator_team.py   (then: orch-otel show orch-traces)

The planner delegates work to the executor, which uses a calculator tool; the
critic rejects the first answer and approves the second; the planner stops
when the critic approves or after three rounds. No model or network is needed:
`reply()` stands in for an LLM.
"""

from __future__ import annotations

import orch_otel

MAX_ROUNDS = 3
CALCULATOR = {"type": "function", "function": {
    "name": "calculator", "description": "Multiply two numbers written as 'a*b'.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
}}


def reply(agent: str, prompt: str, tools: list[dict] | None = None) -> str:
    """A stand-in for an LLM call, traced as one (``tools``: what the model is offered)."""
    messages = [{"role": "system", "content": f"You are the {agent}."}, {"role": "user", "content": prompt}]
    with orch_otel.llm_call("offline-model", provider="offline", input_messages=messages, tools=tools) as call:
        text = f"{agent} on: {prompt}"
        call.set_response({"role": "assistant", "content": text}, input_tokens=len(prompt.split()),
                          output_tokens=len(text.split()))
    return text


@orch_otel.tool
def calculator(expression: str) -> float:
    left, _, right = expression.partition("*")
    return float(left) * float(right)


@orch_otel.agent(role="executor")
def executor(task: str, attempt: int) -> float:
    reply("executor", task, tools=[CALCULATOR])
    return calculator("6*7" if attempt > 1 else "6*6")


@orch_otel.agent(role="critic")
def critic(answer: float) -> bool:
    verdict = answer == 42.0
    orch_otel.message({"approved": verdict}, recipients="planner", message_type="review")
    return verdict


@orch_otel.agent(role="planner")
def planner(task: str, max_rounds: int = MAX_ROUNDS) -> float | None:
    reply("planner", task)
    for attempt in range(1, max_rounds + 1):
        orch_otel.delegate("executor", options=["executor", "critic"])
        answer = executor(task, attempt)
        orch_otel.delegate("critic", options=["executor", "critic"])
        if critic(answer):
            orch_otel.reward(1.0, name="team", unit="team")
            orch_otel.stop("end")
            return answer
    orch_otel.reward(0.0, name="team", unit="team")
    orch_otel.stop("max_turns")
    return None


def run(task_id: str = "multiply-6-7", max_rounds: int = MAX_ROUNDS) -> float | None:
    with orch_otel.workflow("calc_team", task_id=task_id, topology="planner_executor_critic"):
        return planner("what is 6 times 7?", max_rounds)


def main() -> None:
    orch_otel.instrument()
    print("answer:", run())
    orch_otel.flush()


if __name__ == "__main__":
    main()
