"""agent-lightning 1.0.2 and OpenPipe ART 0.5.23 read the rows with their own
code: the ``triplets`` view (agent-lightning's ``Triplet`` and its trainer's
``RolloutAdapter.get_train_data_batch``, per call and at its ``trajectory``
level) and the ``art`` format (ART's JSONL loader, its RL token assembly and
its SFT labels). Both trainers need Python 3.12: they run in
``.venv-trainers312`` (.ci/run makes it) through tests/trainer_checks/art_lightning.py.
Rows come from real instrumented LangGraph, AutoGen and OpenAI Agents SDK runs and from the
forked branches of tests/fixtures/branches.py; token ids from ``--tokenizer``
with a tokenizer made here (tests/tokenizer_support.py). What trains is
compared with each agent's replies written by hand from the apps' code, and
nothing may train twice."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import textwrap
from collections import Counter
from pathlib import Path

import orjson
import pytest
from fixtures.branches import make_branches
from fixtures.dataset_runs import record_instrumented

from orch_otel.cli import main
from orch_otel.datasets import Config, TokensMissing, build
from orch_otel.datasets.art import _choice, group_line
from orch_otel.datasets.lightning import _Sample
from orch_otel.datasets.tokenize import CallTokens, captured

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv-trainers312" / "bin" / "python"
CHECK = REPO / "tests" / "trainer_checks" / "art_lightning.py"


def _venv() -> str:
    """The 3.12 venv's python: skip locally without it, fail in CI."""
    if not PYTHON.exists():
        message = ("no .venv-trainers312 (agent-lightning and ART need Python 3.12): make it as .ci/run does "
                   "(PYENV_VERSION=3.12.1 python3.12 -m venv .venv-trainers312, then the block `trainers-art`)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(PYTHON)


def trainer(*args: str) -> dict:
    """tests/trainer_checks/art_lightning.py in the 3.12 venv; what it printed."""
    done = subprocess.run([_venv(), str(CHECK), *args], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


# -- each agent's replies, by hand from the apps' code: (text, [(tool, arguments)]) -------------------

def call(name: str, **arguments) -> tuple[str, list]:
    return ("", [(name, arguments)])


def say(text: str) -> tuple[str, list]:
    return (text, [])


SUPERVISOR = {  # tests/langgraph_apps.py build_supervisor
    "supervisor": [call("transfer_to_math_expert"), call("transfer_to_research_expert"), say("all done")],
    "math_expert": [call("add", a=1, b=2), say("1 + 2 = 3")],
    "research_expert": [call("lookup", query="otel"), say("otel is a standard")],
}
SUPERVISOR_TOOLS = {"supervisor": ["transfer_to_math_expert", "transfer_to_research_expert"],
                    "math_expert": ["add"], "research_expert": ["lookup"]}
SELECTOR = {  # tests/autogen_apps.py selector_team: the selector picks planner, then coder; reviewer never speaks
    "SelectorGroupChat": [say("planner"), say("coder")],
    "planner": [say("Plan: write code")],
    "coder": [say("print(1) TERMINATE")],
}
WEATHER = {  # orch_otel.integrations.autogen.testing weather_round_robin: a calls get_weather, answers; b thanks
    "a": [call("get_weather", city="Paris"), say("It is sunny")],
    "b": [say("Thanks TERMINATE")],
}
WEATHER_TOOLS = {"a": ["get_weather"], "b": []}


def rendered(reply: tuple[str, list]) -> str:
    """A reply as the test tokenizer's chat template renders it (arguments as a dict), end of turn included."""
    text, calls = reply
    return text + "".join("<tool_call>" + json.dumps({"name": n, "arguments": a}) + "</tool_call>" for n, a in calls) \
        + "<|im_end|>\n"


def parsed(text: str) -> tuple[str, list]:
    """A rendered reply back as (text, [(tool, arguments)]), arguments parsed wherever the template left them as text."""
    calls = []
    for raw in re.findall(r"<tool_call>(.*?)</tool_call>", text):
        data = json.loads(raw)
        arguments = json.loads(data["arguments"]) if isinstance(data["arguments"], str) else data["arguments"]
        calls.append((data["name"], arguments))
    return (re.sub(r"<tool_call>.*?</tool_call>", "", text).removesuffix("<|im_end|>\n"), calls)


def _hashable(reply: tuple[str, list]) -> tuple[str, str]:
    return (reply[0], json.dumps(reply[1], sort_keys=True))


# -- recorded runs ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    base = tmp_path_factory.mktemp("branches")
    return base, make_branches(base)


def _autogen(directory: Path, team: str) -> Path:
    pytest.importorskip("autogen_agentchat", reason="needs the optional extra: pip install 'orch-otel[autogen]'")
    import autogen_apps as apps

    from orch_otel.integrations.autogen import AutoGenInstrumentor

    record_instrumented(directory, AutoGenInstrumentor(),
                        lambda: asyncio.run(asyncio.wait_for(getattr(apps, team)().run(task="go"), 20)))
    return directory


def _trimming(directory: Path) -> Path:
    """A create_react_agent whose pre_model_hook keeps the first message and the last two: its model
    calls add(1, 2), then add(3, 4), then answers; the third call's prompt lacks the first call and its result."""
    import warnings

    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def trim(state):
        messages = state["messages"]
        return {"llm_input_messages": messages if len(messages) <= 3 else [messages[0], *messages[-2:]]}

    model = FakeToolCallingModel(model_name="trimmer-llm", responses=[
        ai(tool_calls=[tool_call("add", {"a": 1, "b": 2}, "call_1")]),
        ai(tool_calls=[tool_call("add", {"a": 3, "b": 4}, "call_2")]), ai("3 and 7")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        agent = create_react_agent(model, [add], name="trimmer", pre_model_hook=trim)
    record_instrumented(directory, LangGraphInstrumentor(),
                        lambda: agent.invoke({"messages": [HumanMessage("add 1 and 2, then 3 and 4")]}))
    return directory


TRIMMING = {"trimmer": [call("add", a=1, b=2), call("add", a=3, b=4), say("3 and 7")]}
SESSION = {  # tests/openai_agents_apps.py handoffs_in_one_session: two runs of triage -> billing in one SDK session
    "triage": [call("transfer_to_billing"), call("transfer_to_billing")],
    "billing": [call("lookup_invoice", number="42"), say("Invoice 42 is paid."), say("Invoice 43 is open.")],
}


def _session(directory: Path) -> Path:
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai_agents_apps as apps

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    record_instrumented(directory, OpenAIAgentsInstrumentor(), apps.handoffs_in_one_session)
    return directory


@pytest.fixture(scope="module")
def runs(branches, tmp_path_factory):
    """app name -> (trace folder, truth, tools offered)."""
    base = tmp_path_factory.mktemp("autogen")
    return {
        "langgraph-supervisor": (branches[0] / "recorded", SUPERVISOR, SUPERVISOR_TOOLS),
        "langgraph-trimming": (_trimming(base / "trimming"), TRIMMING, {"trimmer": ["add"]}),
        "autogen-selector": (_autogen(base / "selector", "selector_team"), SELECTOR, None),
        "autogen-weather": (_autogen(base / "weather", "weather_round_robin"), WEATHER, WEATHER_TOOLS),
        "openai-agents-session": (_session(base / "session"), SESSION,
                                  {"triage": ["transfer_to_billing"], "billing": ["lookup_invoice"]}),
    }


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _decode(tokenizer_dir: str, ids: list[int]) -> str:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tokenizer_dir).decode(ids)


APPS = ["langgraph-supervisor", "langgraph-trimming", "autogen-selector", "autogen-weather", "openai-agents-session"]


# -- agent-lightning ----------------------------------------------------------------------------

@pytest.mark.parametrize("app", APPS)
def test_agent_lightning_trains_each_reply_of_each_agent_once(runs, app, tmp_path, local_tokenizer):
    directory, truth, tools = runs[app]
    build([directory], tmp_path, Config(view="triplets", tokenizer=local_tokenizer))
    rows = _lines(tmp_path / "triplets.jsonl")
    batch = trainer("lightning", str(tmp_path / "triplets.jsonl"), "transition")
    assert batch["n_sample"] == len(rows)  # the trainer took every triplet
    trained = Counter()
    for row, sample in zip(sorted(rows, key=lambda r: r["metadata"]["rollout_id"]),
                           sorted(batch["samples"], key=lambda s: s["rollout_id"])):
        assert sample["prompt_ids"] == row["prompt"]["token_ids"]
        assert sample["response_ids"] == row["response"]["token_ids"]
        assert row["metadata"]["token_source"] == "retokenized" and row["response"]["log_probs"] is None
        trained[row["metadata"]["agent_name"], _decode(local_tokenizer, sample["response_ids"])] += 1
    want = Counter((agent, rendered(r)) for agent, replies in truth.items() for r in replies)
    assert trained == want  # every reply of its own agent, and none twice
    if tools is not None:  # per call (AutoGen's reflection on a tool result is offered none): per agent, all calls
        offered: dict[str, set[str]] = {}
        for r in rows:
            offered.setdefault(r["metadata"]["agent_name"], set()).update(t["function"]["name"] for t in r["metadata"]["tools"])
        assert offered == {a: set(t) for a, t in tools.items() if a in truth}


# agents whose calls extend each other within an episode: the LangGraph workers' second call reads their tool's
# result; AutoGen's reflection on a tool result is offered no tools, so its prompt renders otherwise from the start
MERGED = {"langgraph-supervisor": {"math_expert", "research_expert"}, "autogen-weather": set(),
          "langgraph-trimming": {"trimmer"}}


@pytest.mark.parametrize("app", ["langgraph-supervisor", "langgraph-trimming", "autogen-weather"])
def test_agent_lightning_trajectory_level_merges_as_trajectories_does(runs, app, tmp_path, local_tokenizer):
    """agent-lightning's own exact-prefix merge of the per-call triplets equals ``--trajectories``;
    the masked-in tokens are the agent's replies, the masked-out ones what came between them."""
    directory, truth, _ = runs[app]
    build([directory], tmp_path / "calls", Config(view="triplets", tokenizer=local_tokenizer))
    build([directory], tmp_path / "merged", Config(view="triplets", tokenizer=local_tokenizer, trajectories=True))
    theirs = trainer("lightning", str(tmp_path / "calls" / "triplets.jsonl"), "trajectory")["samples"]
    ours = _lines(tmp_path / "merged" / "triplets.jsonl")
    assert sorted((s["rollout_id"], s["prompt_ids"], s["response_ids"], s["response_mask"]) for s in theirs) == \
        sorted((r["metadata"]["rollout_id"], r["prompt_ids"], r["response_ids"], r["response_mask"]) for r in ours)
    trained = Counter()
    for row in ours:
        masked = "".join("1" if m else "0" for m in row["response_mask"])
        for span in re.finditer("1+", masked):
            trained[row["metadata"]["agent_name"], _decode(local_tokenizer, row["response_ids"][span.start():span.end()])] += 1
    assert trained == Counter((a, rendered(r)) for a, replies in truth.items() for r in replies)
    merged = [r for r in ours if len(r["metadata"]["event_ids"]) > 1]
    assert {r["metadata"]["agent_name"] for r in merged} == MERGED[app]
    for row in merged:  # what was inserted between its replies: the tool's result and the next generation prompt
        inserted = _decode(local_tokenizer, [t for t, m in zip(row["response_ids"], row["response_mask"]) if not m])
        assert inserted.startswith("<|im_start|>user\n<tool_response>") and inserted.endswith("<|im_start|>assistant\n")


def test_trajectories_put_zero_logprobs_on_inserted_context():
    """Captured ids and logprobs, by hand: the second call extends the first (7, 8 inserted), the third does not."""
    first = CallTokens([1, 2], [3, 4], [-0.5, -0.25], "captured")
    second = CallTokens([1, 2, 3, 4, 7, 8], [9], [-1.0], "captured")
    third = CallTokens([1, 5], [6], [-2.0], "captured")
    sample = _Sample({"event_id": "e1"}, [], first)
    assert sample.extend({"event_id": "e2"}, second)
    assert (sample.prompt, sample.response, sample.mask, sample.log_probs) == (
        [1, 2], [3, 4, 7, 8, 9], [1, 1, 0, 0, 1], [-0.5, -0.25, 0.0, 0.0, -1.0])
    assert not sample.extend({"event_id": "e3"}, third) and sample.event_ids == ["e1", "e2"]


def test_captured_ids_are_taken_as_the_server_sent_them():
    """The turns row keys the token capture fills; logprobs that do not match the ids are dropped, as
    agent-lightning's trainer drops them (rollout_adapter: a wrong length becomes None)."""
    row = {"prompt_token_ids": [1, 2], "response_token_ids": [3, 4], "response_logprobs": [-0.5, -0.25]}
    assert captured(row) == CallTokens([1, 2], [3, 4], [-0.5, -0.25], "captured")
    assert captured({**row, "response_logprobs": [-0.5]}).log_probs is None
    assert captured({**row, "prompt_token_ids": None}) is None  # no ids: retokenize or refuse


def test_triplets_are_refused_without_token_ids(runs, tmp_path, capsys):
    """No ids captured, no --tokenizer: nothing is written, and the message says how to get ids."""
    directory = runs["langgraph-supervisor"][0]
    with pytest.raises(TokensMissing, match="no trace read has token ids") as caught:
        build([directory], tmp_path / "out", Config(view="triplets"))
    assert "return_token_ids" in str(caught.value) and "--tokenizer" in str(caught.value)
    assert not (tmp_path / "out" / "triplets.jsonl").exists()
    assert main(["dataset", str(directory), "-o", str(tmp_path / "cli"), "--view", "triplets"]) == 1
    assert "--tokenizer PATH_OR_NAME" in capsys.readouterr().err


def test_a_tokenizer_that_cannot_load_is_a_usage_error(runs, tmp_path, capsys):
    pytest.importorskip("transformers", reason="--tokenizer needs the optional extra: pip install 'orch-otel[tokenize]'")
    directory = runs["langgraph-supervisor"][0]
    code = main(["dataset", str(directory), "-o", str(tmp_path / "out"), "--view", "triplets",
                 "--tokenizer", str(tmp_path / "no-such-tokenizer")])
    assert code == 2 and "cannot load a tokenizer there" in capsys.readouterr().err


# -- OpenPipe ART -------------------------------------------------------------------------------

_LOADED: dict[tuple[str, str | None], dict] = {}  # ART's view of one folder's rows: several tests read it


def _art(directory: Path, tmp_path: Path, tokenizer: str | None = None) -> dict:
    key = (str(directory), tokenizer)
    if key not in _LOADED:
        build([directory], tmp_path, Config(view="chat", tokenizer=tokenizer), fmt="art")
        _LOADED[key] = trainer("art", str(tmp_path / "chat.art.jsonl"), *([tokenizer] if tokenizer else []))
    return _LOADED[key]


def _choices(trajectory: dict) -> list[tuple[str, list]]:
    return [(i["content"] or "", i["tool_calls"]) for i in trajectory["items"] if i["choice"]]


@pytest.mark.parametrize("app", APPS)
def test_art_loader_gives_one_choice_per_reply_in_the_main_history(runs, app, tmp_path, local_tokenizer):
    directory, truth, tools = runs[app]
    loaded = _art(directory, tmp_path, local_tokenizer)
    (group,) = loaded["groups"]  # one group: the task (both runs of the session are one task)
    trained: Counter = Counter()
    for t in group["trajectories"]:
        agent = t["metadata"]["agent"]
        assert t["additional_histories"] == 0  # ART's SFT reads the main history only
        assert all(i["token_ids"] for i in t["items"] if i["choice"])
        trained.update((agent, text, tuple(names)) for text, names in _choices(t))
        if tools is not None:
            assert set(t["tools"]) == set(tools[agent])
    want = Counter((a, text, tuple(n for n, _ in calls)) for a, replies in truth.items() for text, calls in replies)
    assert trained == want


@pytest.mark.parametrize(("app", "agent", "want"), [
    # the third call's prompt was trimmed: it does not extend the first two
    ("langgraph-trimming", "trimmer", [[("", ["add"]), ("", ["add"])], [("3 and 7", [])]]),
    # each selection sends one fresh system message: a trajectory per selection
    ("autogen-selector", "SelectorGroupChat", [[("planner", [])], [("coder", [])]]),
    # the supervisor's later episodes continue its conversation
    ("langgraph-supervisor", "supervisor", [[("", ["transfer_to_math_expert"]), ("", ["transfer_to_research_expert"]),
                                             ("all done", [])]]),
])
def test_art_starts_a_trajectory_where_the_prompt_does_not_extend(runs, app, agent, want, tmp_path, local_tokenizer):
    loaded = _art(runs[app][0], tmp_path, local_tokenizer)
    got = [_choices(t) for t in loaded["groups"][0]["trajectories"] if t["metadata"]["agent"] == agent]
    assert got == want


# ART's SFT trains every assistant message of a trajectory: a prompt that starts with the agent's earlier reply
# (the trimmer's third call reads its second reply, not its first) trains that reply again. ART has no
# per-message mask; metadata.context_assistant_messages counts them (docs/datasets.md, the art format).
# Likewise a session's second run reads the first run's replies (each its own agent's turn there).
SFT_AGAIN = {"langgraph-trimming": [("trimmer", call("add", a=3, b=4))],
             "openai-agents-session": [("triage", call("transfer_to_billing")),
                                       ("billing", call("lookup_invoice", number="42")),
                                       ("billing", say("Invoice 42 is paid."))]}


@pytest.mark.parametrize("app", APPS)
def test_art_rl_and_sft_train_exactly_the_replies(runs, app, tmp_path, local_tokenizer):
    """ART RL (``assemble_vllm_training_sequences``) trains the Choices' token ids, with
    ``allow_training_without_logprobs`` since retokenized ids have no logprobs (and
    the rows say so); ART SFT (``tokenize_sft_batch``) trains the same replies,
    and again those the rows flag."""
    directory, truth, _ = runs[app]
    loaded = _art(directory, tmp_path, local_tokenizer)
    sft: Counter = Counter()
    flagged = 0
    for t in loaded["groups"][0]["trajectories"]:
        agent = t["metadata"]["agent"]
        choice_ids = [i["token_ids"] for i in t["items"] if i["choice"]]
        # ART's own prefix rule may split a trajectory into sequences (AutoGen's reflection is offered no
        # tools, so its prompt ids do not extend the first call's): each Choice's ids train once either way
        assert [x for seq in t["rl"]["True"] for x in seq] == [x for ids in choice_ids for x in ids]
        assert t["rl"]["False"] == [] and t["metadata"]["art_rl"] is False
        assert "allow_training_without_logprobs=True" in t["logs"][0]
        flagged += t["metadata"]["context_assistant_messages"]
        for reply in t["sft_trained_text"].split("<|im_end|>\n")[:-1]:
            sft[agent, _hashable(parsed(reply + "<|im_end|>\n"))] += 1
    want = Counter((a, _hashable(r)) for a, replies in truth.items() for r in replies)
    again = Counter((a, _hashable(r)) for a, r in SFT_AGAIN.get(app, []))
    assert sft == want + again and flagged == sum(again.values())


def test_art_trains_no_reply_of_hosted_calls_only_and_keeps_one_trajectory_per_agent(tmp_path, local_tokenizer):
    """tests/openai_agents_apps.py search_between_calls (researcher: lookup, a reply that is only a web search,
    the answer) and hosted_mcp_approval (librarian: a reply that is only the MCP listing and approval request,
    then the answer): such a reply is no Choice and does not split the agent's trajectory; ART RL and SFT
    train each real reply once."""
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai_agents_apps as apps

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    record_instrumented(tmp_path / "runs", OpenAIAgentsInstrumentor(), apps.search_between_calls)
    record_instrumented(tmp_path / "runs", OpenAIAgentsInstrumentor(), lambda: apps.hosted_mcp_approval(True))
    loaded = _art(tmp_path / "runs", tmp_path / "art", local_tokenizer)
    trajectories = {t["metadata"]["agent"]: t for g in loaded["groups"] for t in g["trajectories"]}
    assert len(trajectories) == sum(len(g["trajectories"]) for g in loaded["groups"])  # one per agent
    want = {"researcher": [call("lookup_invoice", number="42"), say("Refunds within 30 days; invoice 42 is paid.")],
            "librarian": [say("Deleted.")]}
    assert {agent: _choices(t) for agent, t in trajectories.items()} == {
        agent: [(text, [name for name, _ in calls]) for text, calls in replies] for agent, replies in want.items()}
    for agent, t in trajectories.items():
        trained = [parsed(r + "<|im_end|>\n") for r in t["sft_trained_text"].split("<|im_end|>\n")[:-1]]
        assert trained == want[agent]
        assert [x for seq in t["rl"]["True"] for x in seq] == [x for i in t["items"] if i["choice"] for x in i["token_ids"]]
        assert (len(t["metadata"]["event_ids"]), t["metadata"]["replies_not_shown"]) == (len(want[agent]) + 1, 1)


def test_art_without_token_ids_is_for_sft_only(runs, tmp_path):
    loaded = _art(runs["langgraph-supervisor"][0], tmp_path)
    for t in loaded["groups"][0]["trajectories"]:
        assert t["metadata"]["art_rl"] is False and t["metadata"]["token_source"] == "absent"
        assert "for ART SFT only" in t["logs"][0]
        assert t["rl"]["False"] == []  # ART RL takes no Choice without logprobs...
        assert "missing vLLM prompt_token_ids/token_ids" in t["rl"]["True"]  # ... and refuses it when told to


def test_art_rl_takes_captured_ids_and_logprobs(tmp_path):
    """Choices as written from captured ids and logprobs (by hand here: the capture is
    tested where it is made): ART RL takes them without allow_training_without_logprobs,
    one logprob per completion id, the second call appended to the first's sequence."""
    first = CallTokens([1, 2, 3], [4, 5], [-0.5, -0.25], "captured")
    second = CallTokens([1, 2, 3, 4, 5, 6], [7], [-1.0], "captured")
    trajectory = {
        "messages_and_choices": [{"role": "user", "content": "q"}, _choice({"role": "assistant", "content": "a1"}, first),
                                 {"role": "user", "content": "more"}, _choice({"role": "assistant", "content": "a2"}, second)],
        "tools": None, "additional_histories": [], "reward": 1.0, "metrics": {}, "metadata": {"agent": "a"}, "logs": [],
    }
    (tmp_path / "chat.art.jsonl").write_bytes(group_line("g", [orjson.dumps(trajectory)]))
    (group,) = trainer("art", str(tmp_path / "chat.art.jsonl"))["groups"]
    (t,) = group["trajectories"]
    assert t["rl"]["False"] == [[4, 5, 7]] and t["rl"]["False_logprobs"] == [[-0.5, -0.25, -1.0]]


def test_art_groups_are_the_branches_of_a_fork(branches, tmp_path, local_tokenizer):
    """Branches of one fork are one group; in a branch only the calls from the fork on are Choices."""
    base, info = branches
    loaded = _art(base / "captured", tmp_path, local_tokenizer)
    groups = {g["metadata"]["art_group"]: g for g in loaded["groups"]}
    source = info["source"]["trace_id"]
    assert set(groups) == {f"task:{source}", *info["groups"].values()}
    members = {key: {t["metadata"]["trace_id"] for t in g["trajectories"]} for key, g in groups.items()}
    assert members[info["groups"]["delegate"]] == {"b-math", "b-research"}
    assert members[info["groups"]["spawn"]] == {"b-spawn-supervisor", "b-spawn-math", "b-spawn-research"}
    (stop,) = groups[info["groups"]["stop"]]["trajectories"]  # forked at the supervisor's stop (e32)
    assert _choices(stop) == [("all done", [])] and stop["metadata"]["context_assistant_messages"] == 2
    research = [t for t in groups[info["groups"]["delegate"]]["trajectories"]
                if t["metadata"]["trace_id"] == "b-research" and t["metadata"]["agent"] == "supervisor"]
    # its first reply differs from the recording, so the later calls' prompts do not extend it
    assert [_choices(t) for t in research] == [[("", ["transfer_to_research_expert"])],
                                               [("", ["transfer_to_research_expert"]), ("all done", [])]]
    assert {t["reward"] for t in groups[info["groups"]["delegate"]]["trajectories"]} == {0.0, 1.0}


# -- the snippets of docs/datasets.md ------------------------------------------------------------

def _snippet(name: str) -> str:
    text = (REPO / "docs" / "datasets.md").read_text()
    found = re.search(rf"<!-- snippet: {name} -->\s*```python\n(.*?)```", text, re.S)
    assert found, f"docs/datasets.md has no {name} snippet"
    return textwrap.dedent(found.group(1))


def _run_snippet(code: str) -> list[str]:
    done = subprocess.run([_venv(), "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.split()


def test_docs_snippets_load_the_rows_with_the_trainers_code(runs, tmp_path, local_tokenizer):
    directory = runs["langgraph-supervisor"][0]
    triplets = build([directory], tmp_path, Config(view="triplets", tokenizer=local_tokenizer))
    code = _snippet("agent-lightning").replace("OUTDIR", str(tmp_path))
    rollouts, loaded = _run_snippet(code + "\nprint(len(completed), sum(len(c.triplets) for c in completed))")
    # the supervisor's 3 episodes and one each of the two experts; every triplet
    assert (int(rollouts), int(loaded)) == (5, triplets.rows_written)
    trajectories = build([directory], tmp_path, Config(view="chat"), fmt="art")
    code = _snippet("art").replace("OUTDIR", str(tmp_path))
    (count,) = _run_snippet(code + "\nfrom art.types import Choice\n"
                            "print(sum(isinstance(i, Choice) for g in groups for t in g.trajectories "
                            "for i in t.messages_and_choices))")
    assert trajectories.rows_written == 3 and int(count) == 7  # 3 + 2 + 2 replies
