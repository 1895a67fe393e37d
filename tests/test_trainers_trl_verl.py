"""TRL and verl train on exactly the right tokens: rows made by orch-otel from
real instrumented runs (the LangGraph supervisor, a ReAct agent whose
pre_model_hook trims its history, an agent run twice on one thread, AutoGen's SelectorGroupChat and a
tool-using RoundRobinGroupChat, MagenticOne, two runs of an OpenAI Agents SDK handoff
app in one session, two SDK agents with a reply of hosted calls only, all on scripted models, content capture
on; and the supervisor's branches) are fed to the trainers' own code in
``.venv-trainers`` (TRL 1.16 ``SFTTrainer`` and ``DPOTrainer``, 2 steps each on a
2-layer random Qwen2; verl 0.9.1 ``RLHFDataset`` and ``MultiTurnSFTDataset``),
by tests/trainers_venv/trl_verl_check.py. The text of the tokens each trainer
puts loss on is compared with the replies written in the apps' code.

The venv (see .ci/run): python3.11 -m venv .venv-trainers, then torch==2.13.0
(the CPU wheel), then TRL, transformers 5.10, verl --no-deps and the few
modules its dataset code imports."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from fixtures.branches import make_branches
from fixtures.dataset_runs import record_instrumented

from orch_otel.datasets import Config, build
from orch_otel.integrations.autogen.testing import ledger

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv-trainers" / "bin" / "python"
SCRIPT = Path(__file__).parent / "trainers_venv" / "trl_verl_check.py"
MISSING = (f"the trainers venv is absent ({PYTHON}); create it as .ci/run does: python3.11 -m venv .venv-trainers "
           "&& .venv-trainers/bin/pip install torch==2.13.0 && ... (see the block of .ci/run)")
END = "<|im_end|>\n"  # inside the template's generation marks: trained with the reply


def _call(name: str, arguments: dict, text: bool = False) -> str:
    """A tool call as the template renders it: arguments given as a dict
    through ``tojson``, given as JSON text (verl's rows) as they are."""
    rendered = json.dumps(arguments, separators=(",", ":")) if text else json.dumps(arguments)
    return f'<tool_call>{{"name": "{name}", "arguments": {rendered}}}</tool_call>'


def _replies(text: bool = False) -> Counter:
    """Every reply each agent's scripted model gives in the apps
    (tests/langgraph_apps.py build_supervisor, tests/autogen_apps.py
    selector_team and magentic_one, orch_otel.integrations.autogen.testing.weather_round_robin),
    rendered as the test's chat template renders an assistant turn."""
    return Counter({
        ("supervisor", _call("transfer_to_math_expert", {}, text) + END): 1,
        ("supervisor", _call("transfer_to_research_expert", {}, text) + END): 1,
        ("supervisor", "all done" + END): 1,
        ("math_expert", _call("add", {"a": 1, "b": 2}, text) + END): 1,
        ("math_expert", "1 + 2 = 3" + END): 1,
        ("research_expert", _call("lookup", {"query": "otel"}, text) + END): 1,
        ("research_expert", "otel is a standard" + END): 1,
        ("SelectorGroupChat", "planner" + END): 1,  # the selector's model names the next speaker
        ("SelectorGroupChat", "coder" + END): 1,
        ("planner", "Plan: write code" + END): 1,
        ("coder", "print(1) TERMINATE" + END): 1,
        ("a", _call("get_weather", {"city": "Paris"}, text) + END): 1,
        ("a", "It is sunny" + END): 1,
        ("b", "Thanks TERMINATE" + END): 1,
        ("calc", _call("add", {"a": 1, "b": 2}, text) + END): 1,  # langgraph_apps.build_trimming_agent
        ("calc", _call("add", {"a": 3, "b": 4}, text) + END): 1,
        ("calc", "3 and 7" + END): 1,
        ("chat_agent", "hello there" + END): 1,  # langgraph_apps.build_resumable_chat, two runs on one thread
        ("chat_agent", "second answer" + END): 1,
        # openai_agents_apps.handoffs_in_one_session: two runs of triage -> billing in one SDK session
        ("triage", _call("transfer_to_billing", {}, text) + END): 2,  # h1, then h2 (the template renders no id)
        ("billing", _call("lookup_invoice", {"number": "42"}, text) + END): 1,
        ("billing", "Invoice 42 is paid." + END): 1,
        ("billing", "Invoice 43 is open." + END): 1,
        # openai_agents_apps.search_between_calls and hosted_mcp_approval(True): a reply of hosted calls only
        # (a web search; an MCP listing and approval request) is no turn: nothing empty is trained
        ("researcher", _call("lookup_invoice", {"number": "42"}, text) + END): 1,
        ("researcher", "Refunds within 30 days; invoice 42 is paid." + END): 1,
        ("librarian", "Deleted." + END): 1,
        # autogen_apps.magentic_one: the orchestrator's model (each ledger call a fresh prompt), then coder's
        ("MagenticOneGroupChat", "FACTS..." + END): 1,
        ("MagenticOneGroupChat", "PLAN..." + END): 1,
        ("MagenticOneGroupChat", ledger(False, "coder", "write code", reason="go on") + END): 1,
        ("MagenticOneGroupChat", ledger(True, "coder", "n/a", reason="task done") + END): 1,
        ("MagenticOneGroupChat", "FINAL ANSWER: 1" + END): 1,
        ("coder", "def f(): return 1" + END): 1,
    })


def _venv() -> None:
    if not PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail(MISSING)
        pytest.skip(MISSING)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    _venv()
    pytest.importorskip("langgraph_supervisor", reason="the supervisor app needs langgraph-supervisor (orch-otel[dev])")
    pytest.importorskip("autogen_agentchat", reason="needs the optional extra: pip install 'orch-otel[autogen]'")
    import autogen_apps as apps

    from orch_otel.integrations.autogen import AutoGenInstrumentor

    base = tmp_path_factory.mktemp("trainers")
    info = make_branches(base / "supervisor")  # supervisor/recorded: the run; supervisor/captured: its branches

    def team(build_team):
        return lambda: asyncio.run(asyncio.wait_for(build_team().run(task="go"), 30))

    record_instrumented(base / "selector", AutoGenInstrumentor(), team(apps.selector_team))
    record_instrumented(base / "weather", AutoGenInstrumentor(), team(apps.weather_round_robin))
    record_instrumented(base / "magentic", AutoGenInstrumentor(), team(apps.magentic_one))
    import langgraph_apps

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    record_instrumented(base / "trim", LangGraphInstrumentor(),
                        lambda: langgraph_apps.build_trimming_agent().invoke(langgraph_apps.user_input("add")))
    resumable, thread = langgraph_apps.build_resumable_chat(), {"configurable": {"thread_id": "thread-1"}}

    def two_runs() -> None:
        resumable.invoke(langgraph_apps.user_input("hi"), thread)
        resumable.invoke(langgraph_apps.user_input("again"), thread)

    record_instrumented(base / "resume", LangGraphInstrumentor(), two_runs)
    pytest.importorskip("agents", reason="the session app needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai_agents_apps

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    record_instrumented(base / "session", OpenAIAgentsInstrumentor(), openai_agents_apps.handoffs_in_one_session)
    record_instrumented(base / "search", OpenAIAgentsInstrumentor(), openai_agents_apps.search_between_calls)
    record_instrumented(base / "approval", OpenAIAgentsInstrumentor(),
                        lambda: openai_agents_apps.hosted_mcp_approval(True))
    runs = [base / "supervisor" / "recorded", base / "selector", base / "weather", base / "trim", base / "resume",
            base / "magentic", base / "session", base / "search", base / "approval"]
    data = base / "data"
    build(runs, data, Config(view="chat"), fmt="parquet")
    build(runs, data, Config(view="chat"), fmt="verl")
    build(runs, data, Config(view="turns"), fmt="verl")
    replayed = _replay_branches(info["source"], base / "supervisor" / "recorded", base / "replayed")
    branches = [base / "supervisor" / "captured", base / "replayed"]
    build(branches, data, Config(view="preferences"), fmt="parquet")
    build(branches, data, Config(view="groups"), fmt="verl")
    command = [str(PYTHON), str(SCRIPT), str(data), str(base / "work"), str(REPO / "docs" / "datasets.md")]
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_DISABLED": "true"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env={**os.environ, **offline})
    line = next((x for x in done.stdout.splitlines() if x.startswith("REPORT ")), None)
    assert done.returncode == 0 and line, f"the trainers' run failed:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    return json.loads(line[len("REPORT "):]), {**info, "replayed": replayed}


def _replay_branches(source: dict, recorded: Path, out: Path) -> str:
    """The supervisor run replayed from its first delegation once per option
    (as ``orch-otel replay --fork --choose-each``), rewards by hand: the math
    branch solved the task. Returns the group id."""
    from langgraph_apps import build_supervisor

    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.replaying import options_at, replay
    from orch_otel.tracefiles import TraceWriter, load_contents

    contents = load_contents(recorded)
    fork = next(e for e in source["events"] if e.get("decision") == "delegate" and not e.get("implied"))
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    writer = TraceWriter(out)
    try:
        for option in options_at(source, contents, fork["id"]):
            result = replay(source, build_supervisor(), contents=contents, fork=fork["id"], choose=option)
            result.trace["rewards"] = {"success": 1.0 if option == "math_expert" else 0.0}
            writer.write(result.trace, result.contents)
    finally:
        instrumentor.uninstrument()
        writer.close()
    return f"{source['trace_id']}/{fork['id']}"


def _trained(rows) -> Counter:
    return Counter((row["agent"], text) for row in rows for text in row["trained"])


def test_trl_sft_trains_each_reply_once_for_its_own_agent(report):
    got, _ = report
    steps, *rows = got["trl_sft"]
    assert steps == {"steps": 2}
    # every reply of every run, each exactly once, in the row of the agent that gave it
    assert _trained(rows) == _replies()


def test_trl_on_the_messages_column_alone_would_train_earlier_replies_again(report):
    """Why the rows are split: on ``messages`` alone TRL's
    ``assistant_only_loss`` trains every assistant message, so each reply that
    reappears in a later row's prompt (``trainable: false``) is trained again:
    the supervisor's first handoff in its 2nd and 3rd episodes, its second in
    the 3rd, the trimmed agent's add(3, 4) in its second row, the resumed
    agent's first answer in the second run, and in the SDK session's second
    run triage's first handoff and billing's first lookup and answer."""
    got, _ = report
    again = Counter({
        ("supervisor", _call("transfer_to_math_expert", {}) + END): 2,
        ("supervisor", _call("transfer_to_research_expert", {}) + END): 1,
        ("calc", _call("add", {"a": 3, "b": 4}) + END): 1,
        ("chat_agent", "hello there" + END): 1,
        ("triage", _call("transfer_to_billing", {}) + END): 1,
        ("billing", _call("lookup_invoice", {"number": "42"}) + END): 1,
        ("billing", "Invoice 42 is paid." + END): 1,
    })
    assert _trained(got["trl_sft_messages"]) == _replies() + again


def test_verl_multiturn_sft_trains_each_reply_once_for_its_own_agent(report):
    got, _ = report
    assert _trained(got["verl_sft"]) == _replies(text=True)  # arguments as JSON text: see datasets/verl.py
    tools = {(r["agent"], tuple(r["tools"])) for r in got["verl_sft"]}
    assert ("math_expert", ("add",)) in tools and ("research_expert", ("lookup",)) in tools
    assert ("a", ("get_weather",)) in tools and ("b", ()) in tools
    # the schema the app declared (tests/langgraph_apps.py add), less the nulls Parquet adds (datasets/verl.py)
    add = next(r["tool_dicts"][0] for r in got["verl_sft"] if r["agent"] == "math_expert")
    assert add == {"type": "function", "function": {"name": "add", "description": "Add two numbers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}


def test_trl_sft_row_sees_the_supervisors_earlier_reply_as_its_own_turn(report):
    """The supervisor's second and third calls read its first reply; that reply
    is in their prompt as an assistant turn, and trained only in its own row."""
    got, _ = report
    supervisor = [r for r in got["trl_sft"][1:] if r["agent"] == "supervisor"]
    assert [r["trained"] for r in supervisor] == [
        [_call("transfer_to_math_expert", {}) + END],
        [_call("transfer_to_research_expert", {}) + END],
        ["all done" + END]]


def test_a_sessions_earlier_run_is_each_agents_own_context_in_the_later_run(report):
    """The SDK session's second run (openai_agents_apps.handoffs_in_one_session),
    as verl's RLHFDataset renders its prompts: billing's first-run lookup and
    answer are billing's own assistant turns in its prompt, and another
    speaker's named message in triage's; TRL trains each of them only in the
    first run's row."""
    got, _ = report
    (billing,) = [r for r in got["verl_rl_chat"] if r["agent"] == "billing" and "And invoice 43?" in r["prompt"]]
    assert "<|im_start|>assistant\nInvoice 42 is paid.<|im_end|>" in billing["prompt"]
    lookup = _call("lookup_invoice", {"number": "42"}, text=True)  # verl's rows carry arguments as JSON text
    assert "<|im_start|>assistant\n" + lookup + "<|im_end|>" in billing["prompt"]
    (triage,) = [r for r in got["verl_rl_chat"] if r["agent"] == "triage" and "And invoice 43?" in r["prompt"]]
    assert "<|im_start|>user\nbilling: Invoice 42 is paid.<|im_end|>" in triage["prompt"]
    assert "<|im_start|>assistant\n" + _call("transfer_to_billing", {}) + "<|im_end|>" in triage["prompt"]
    rows = [r for r in got["trl_sft"][1:] if r["agent"] == "billing"]
    assert [r["trained"] for r in rows] == [
        [_call("lookup_invoice", {"number": "42"}) + END, "Invoice 42 is paid." + END], ["Invoice 43 is open." + END]]


def test_selector_calls_are_rows_of_their_own(report):
    """SelectorGroupChat's selector sends one fresh system message per selection:
    each selection is its own row, holding exactly that prompt and reply."""
    got, _ = report
    selections = [r for r in got["verl_rl_chat"] if r["agent"] == "SelectorGroupChat"]
    assert len(selections) == 2
    for row in selections:
        assert row["prompt"].count("<|im_start|>system") == 1


def test_trl_dpo_trains_the_choice_with_the_deciders_tools(report):
    got, info = report
    steps, *rows = got["trl_dpo"]
    assert steps == {"steps": 2}
    # the hand-made branches (tests/fixtures/branches.py) and the replayed ones fork at the same decision
    # of the same run: one group of 4 branches, 2 solved it (math) and 2 did not (research): 4 pairs
    assert info["groups"]["delegate"] == info["replayed"]
    delegates = [r for r in rows if r["group_id"] == info["replayed"]]
    assert len(delegates) == 4
    for delegate in delegates:
        assert delegate["chosen"] == _call("transfer_to_math_expert", {}) + END
        assert delegate["rejected"] == _call("transfer_to_research_expert", {}) + END
        # the handoff tools are in the rendered prompt: the model sees what it chooses between
        assert '"name": "transfer_to_math_expert"' in delegate["prompt"]
        assert '"name": "transfer_to_research_expert"' in delegate["prompt"]


@pytest.mark.parametrize("view", ["chat", "turns", "groups"])  # triplets are token ids: not a verl view
def test_verl_rlhf_dataset_loads_every_row(report, view):
    got, _ = report
    rows = got[f"verl_rl_{view}"]
    assert rows
    assert sorted(r["index"] for r in rows) == list(range(len(rows)))  # unique
    by_agent: dict[str, set[str]] = {}
    for row in rows:
        by_agent.setdefault(row["agent"], set()).update(row["tool_selection"])
    if view != "groups":
        assert by_agent["math_expert"] == {"add"} and by_agent["a"] == {"get_weather"}
    assert by_agent["supervisor"] == {"transfer_to_math_expert", "transfer_to_research_expert"}


def test_another_agents_turn_keeps_its_speaker_in_a_template_that_drops_name(report):
    """The test's template, as Qwen's, renders no ``name``: the coder's prompt
    still says that the plan came from the planner."""
    got, _ = report
    (coder,) = [r for r in got["verl_rl_chat"] if r["agent"] == "coder" and "Plan: write code" in r["prompt"]]
    assert "<|im_start|>user\nplanner: Plan: write code<|im_end|>" in coder["prompt"]


def test_a_trimmed_prompt_is_trained_in_the_context_it_was_sent(report):
    """build_trimming_agent's third call read [human, the add(3, 4) call, its
    result]: its row is that prompt (the add(3, 4) call in it is context, not
    trained again) and its reply; the first two calls make the other row."""
    got, _ = report
    rows = [r for r in got["trl_sft"][1:] if r["agent"] == "calc"]
    assert [r["trained"] for r in rows] == [
        [_call("add", {"a": 1, "b": 2}) + END, _call("add", {"a": 3, "b": 4}) + END], ["3 and 7" + END]]
    (rl,) = [r for r in got["verl_rl_chat"] if r["agent"] == "calc" and "<tool_response>7" in r["prompt"]]
    assert "<tool_response>3" not in rl["prompt"]  # the trimmed-away call is not in the context


def test_magentic_one_ledger_calls_are_rows_of_their_own(report):
    """The orchestrator sends each progress-ledger call a prompt of its own
    (the task, the team, the ledger question): each is a row holding that
    prompt and its reply, trained once."""
    got, _ = report
    rows = [r for r in got["trl_sft"][1:] if r["agent"] == "MagenticOneGroupChat"]
    assert [r["trained"] for r in rows] == [
        ["FACTS..." + END, "PLAN..." + END],
        [ledger(False, "coder", "write code", reason="go on") + END],
        [ledger(True, "coder", "n/a", reason="task done") + END],
        ["FINAL ANSWER: 1" + END]]


def test_the_docs_snippets_run_as_written(report):
    """docs/datasets.md's TRL and verl snippets, run as written on these rows."""
    got, _ = report
    assert got["doc_snippets"]["blocks"] == 3
    assert got["doc_snippets"]["trained_steps"] > 0
    assert got["doc_snippets"]["sft_rows"] == got["doc_snippets"]["rl_rows"] == len(got["verl_rl_chat"])
