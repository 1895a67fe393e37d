"""Runs an app again on a recorded run and compares the orchestration.

Steps: index the recording (:mod:`._script`); make sure the app's framework
is instrumented; switch the content policy to local capture for the replay
(the replayed run's content goes to the new trace's content store and to no
exporter); patch the framework's seams (the adapter in ``integrations/``);
feed each recorded run input to the app with the script's server active;
convert the spans the replay made; compare; undo everything.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import orjson

from .. import _configure
from .._serving import ACTIVE, NotRecorded
from ..content import LocalContents
from ..converter import content_refs, convert
from ..integrations._patch import Patches
from ..recorder import get_recorder
from ..testing import capture, ensure_sdk_provider
from . import _functions
from ._compare import Divergence, first_divergence, orchestration
from ._fork import CONTINUE, ForcedRoute, ForkPlan, Termination, plan
from ._script import MissingContent, Script, ScriptServer, Then

# (module prefix of the app's class, the integration's replay adapter)
_ADAPTERS = (
    ("langgraph.", "orch_otel.integrations.langgraph._replay"),
    ("autogen_agentchat.", "orch_otel.integrations.autogen._replay"),
    ("agent_framework.", "orch_otel.integrations.agent_framework._replay"),
    ("agents.", "orch_otel.integrations.openai_agents._replay"),
)


class ReplayError(ValueError):
    """The replay cannot start: an app it does not know, or a recording it cannot use."""


@dataclass
class ReplayResult:
    """What a replay did. ``traces``: the new trace of each replayed run (a
    chain of runs: an interrupted run and its resumes); ``equal``: the
    orchestration is the recorded one (for a fork: up to the fork);
    ``divergence``: the first difference; ``fork``: where a branch came from."""

    traces: list[dict[str, Any]]
    contents: dict[str, str]
    equal: bool
    divergence: Divergence | None
    served: int = 0
    live: int = 0
    notes: list[str] = field(default_factory=list)
    fork: dict[str, Any] | None = None
    app_errors: list[str | None] = field(default_factory=list)  # the exception type each run ended with, if any

    @property
    def trace(self) -> dict[str, Any]:
        return self.traces[-1]


def adapter_for(app: Any) -> ModuleType:
    if _functions.accepts(app):
        return _functions
    where = type(app).__module__ + "."
    for prefix, module in _ADAPTERS:
        if where.startswith(prefix):
            adapter = importlib.import_module(module)
            if adapter.accepts(app):
                return adapter
    raise ReplayError(f"cannot replay a {type(app).__module__}.{type(app).__qualname__}: the factory must return "
                      "a compiled LangGraph graph, an AutoGen agentchat team or agent, an Agent Framework workflow "
                      "or agent, an OpenAI Agents SDK agent, or a function decorated "
                      "with @orch_otel.workflow or @orch_otel.agent")


def _same_framework(trace: dict[str, Any], adapter: ModuleType) -> None:
    """A run recorded from one framework's app cannot be served to the other's (a folder of
    traces often holds several apps' runs): say so, instead of what the wrong app then does."""
    frameworks = {"langgraph": "a LangGraph", "autogen": "an AutoGen"}
    given = next((name for name in frameworks if f".{name}." in adapter.__name__), None)
    recorded = trace.get("system")
    if given is not None and recorded in frameworks and recorded != given:
        raise ReplayError(f"trace {trace.get('trace_id')} is a run of {frameworks[recorded]} app, and the app given "
                          f"is {frameworks[given]} one: replay each app's runs with its own factory (--trace-id ID "
                          "picks one run; `orch-otel show PATH --list` lists them)")


def _as_dict(trace: Any) -> dict[str, Any]:
    dump = getattr(trace, "model_dump", None)
    return dump(by_alias=True, exclude_none=True) if callable(dump) else trace


def run_input(script: Script) -> Any:
    ref = script.trace["events"][0].get("run_input_ref")
    text = script.contents.get(ref) if ref else None
    if text is None:
        raise MissingContent(f"trace {script.trace['trace_id']} has no recorded run input (record with "
                             "ORCH_OTEL_RECORD_FOR_REPLAY=true or content capture on, and keep content/ beside "
                             "the traces)")
    return orjson.loads(text)


def _prepare(trace: Any, app: Any, contents: Mapping[str, str] | None, fork: str | None, choose: str | None
             ) -> tuple[list[dict[str, Any]], dict[str, str], ModuleType, list[Script], list[Any], ForkPlan | None]:
    """Everything checked before the app runs: the runs, their answers and inputs, the fork."""
    runs = [_as_dict(trace)] if isinstance(trace, dict) or hasattr(trace, "model_dump") else \
        [_as_dict(t) for t in trace]
    if not runs:
        raise ReplayError("nothing to replay: no trace given")
    contents = dict(contents or {})
    adapter = adapter_for(app)
    _same_framework(runs[-1], adapter)
    scripts = [Script.of(t, contents) for t in runs]
    for script in scripts:
        lacking = script.missing()
        if lacking:
            raise MissingContent(f"trace {script.trace['trace_id']} lacks the content of {len(lacking)} "
                                 f"event(s) a replay serves: {', '.join(lacking[:20])}"
                                 f"{' ...' if len(lacking) > 20 else ''} (record with ORCH_OTEL_RECORD_FOR_REPLAY"
                                 "=true or content capture on, and keep content/ beside the traces)")
    inputs = [run_input(s) for s in scripts]
    check = getattr(adapter, "check_inputs", None)  # what only the framework knows makes a chain unplayable
    if check is not None:
        try:
            check(inputs)
        except ValueError as exc:
            raise ReplayError(str(exc)) from exc
    if (fork is None) != (choose is None):
        raise ReplayError("a fork needs both the event (fork=) and the option (choose=)")
    fork_plan = plan(runs[-1], contents, fork, choose) if fork is not None and choose is not None else None
    return runs, contents, adapter, scripts, inputs, fork_plan


Steps = Generator[Any, "str | None", ReplayResult]


def _steps(runs: list[dict[str, Any]], adapter: ModuleType, scripts: list[Script], inputs: list[Any],
           fork_plan: ForkPlan | None, then: Then | None, serve_tools: bool) -> Steps:
    """The replay around the app's runs: yields each run's input with its
    server active, gets back how the run ended (None, or the exception's
    type name), and returns the result. The caller runs the app, sync or async."""
    termination = fork_plan.termination if fork_plan is not None else None
    route = fork_plan.route if fork_plan is not None else None
    with _replay_session(adapter, termination, route) as policy_store, capture(_provider()) as captured:
        new_traces: list[dict[str, Any]] = []
        errors: list[str | None] = []
        seen: set[str] = set()
        for i, (script, recorded_input) in enumerate(zip(scripts, inputs)):
            forking = fork_plan is not None and i == len(scripts) - 1
            rewrite = (fork_plan.model_index, fork_plan.rewrite) if forking and fork_plan.rewrite else None  # type: ignore[union-attr]
            server = ScriptServer(script, lambda ref: policy_store.texts((ref,)).get(ref), rewrite, then, serve_tools)
            token = ACTIVE.set(server)
            try:
                errors.append((yield recorded_input))
            finally:
                ACTIVE.reset(token)
            new_traces.append(_new_trace(captured, seen, script))
        new_contents = policy_store.texts(set().union(*(content_refs(t) for t in new_traces)))
    return _result(runs, scripts, new_traces, new_contents, errors, fork_plan)


def _ended(error: BaseException | None) -> str | None:
    if error is None:
        return None
    return NotRecorded.__name__ if isinstance(error, NotRecorded) else type(error).__qualname__


async def areplay(trace: Any, app: Any, *, contents: Mapping[str, str] | None = None, fork: str | None = None,
                  choose: str | None = None, then: Then | None = None, serve_tools: bool = True) -> ReplayResult:
    """:func:`replay` inside a running event loop."""
    runs, contents, adapter, scripts, inputs, fork_plan = _prepare(trace, app, contents, fork, choose)
    steps = _steps(runs, adapter, scripts, inputs, fork_plan, then, serve_tools)
    try:
        recorded_input = next(steps)
        while True:
            try:
                await adapter.run(app, recorded_input)
                error = None
            except Exception as exc:  # the app failed: as it may have when it was recorded
                error = exc
            try:
                recorded_input = steps.send(_ended(error))
            except StopIteration as done:
                return done.value
    finally:
        steps.close()  # interrupted (cancelled, Ctrl-C): the patches and the content policy are put back


def replay(trace: Any, app: Any, *, contents: Mapping[str, str] | None = None, fork: str | None = None,
           choose: str | None = None, then: Then | None = None, serve_tools: bool = True) -> ReplayResult:
    """Run ``app`` again on the recorded run ``trace`` (a trace dict, or a
    chain: an interrupted run and its resumes) with every model and tool call
    answered from the recording (``contents``: its content store, ref ->
    text), and compare the orchestration. ``fork=EVENT_ID, choose=OPTION``
    changes that decision, serves what came before it, and lets the app's
    own models and tools (or ``then``) make the rest. ``serve_tools=False``
    runs the tools themselves and compares their results with the recorded
    ones (a regression check of the tools)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ReplayError("replay() was called inside a running event loop: use `await orch_otel.areplay(...)`")
    runs, contents, adapter, scripts, inputs, fork_plan = _prepare(trace, app, contents, fork, choose)
    run_sync = getattr(adapter, "run_sync", None)  # the app's own sync entry point, when it has one
    steps = _steps(runs, adapter, scripts, inputs, fork_plan, then, serve_tools)
    try:
        recorded_input = next(steps)
        while True:
            try:
                if run_sync is not None:
                    run_sync(app, recorded_input)
                else:
                    asyncio.run(adapter.run(app, recorded_input))
                error = None
            except Exception as exc:  # the app failed: as it may have when it was recorded
                error = exc
            try:
                recorded_input = steps.send(_ended(error))
            except StopIteration as done:
                return done.value
    finally:
        steps.close()  # interrupted (Ctrl-C): the patches and the content policy are put back


def _provider() -> Any:
    state = _configure.current()
    return state.tracer_provider if state is not None else ensure_sdk_provider()


class _replay_session:
    """Instrumentation, local content capture and the adapter's patches, for
    the length of a replay; everything is put back after it."""

    def __init__(self, adapter: ModuleType, termination: Termination | None, route: ForcedRoute | None = None) -> None:
        self.adapter = adapter
        self.termination = termination
        self.route = route
        self.patches = Patches()
        self.instrumentor: Any = None

    def __enter__(self) -> LocalContents:
        _provider()
        instrumentor = self.adapter.instrumentor()
        if instrumentor is not None and not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()
            self.instrumentor = instrumentor
        self.policy = policy = get_recorder().content
        self.saved = (policy.capture, policy.local)
        store = LocalContents(max_bytes=1 << 40)  # one replay's content, in full
        policy.capture, policy.local = True, store
        if self.termination is not None and not hasattr(self.adapter, "force_termination"):
            raise ReplayError("this app's framework has no termination check a fork can force")
        if self.route is not None and not hasattr(self.adapter, "force_route"):
            raise ReplayError("this app's framework has no routing function a fork can force")
        self.adapter.install(self.patches)
        if self.termination is not None:
            self.adapter.force_termination(self.patches, self.termination)
        if self.route is not None:
            self.adapter.force_route(self.patches, self.route)
        return store

    def __exit__(self, *exc: Any) -> None:
        self.patches.remove()
        self.policy.capture, self.policy.local = self.saved
        if self.instrumentor is not None:
            self.instrumentor.uninstrument()


def _new_trace(captured: Any, seen: set[str], script: Script) -> dict[str, Any]:
    """The trace the last run made (the earliest new trace with a root)."""
    groups = [spans for trace_id, spans in captured.by_trace().items() if trace_id not in seen]
    seen.update(spans[0].trace_id for spans in groups)
    rooted = [spans for spans in groups if any(s.is_local_root for s in spans)] or groups
    if not rooted:
        raise ReplayError(f"the replay of trace {script.trace['trace_id']} recorded no spans: is the app "
                          "instrumented by another tool that suppresses orch-otel?")
    spans = min(rooted, key=lambda group: min(s.start_ns for s in group))
    return convert(spans, complete=any(s.is_local_root for s in spans)).trace


def _result(runs: Sequence[dict[str, Any]], scripts: Sequence[Script], new: list[dict[str, Any]],
            contents: dict[str, str], errors: list[str | None], fork_plan: ForkPlan | None) -> ReplayResult:
    divergence = None
    for i, (old, got, script) in enumerate(zip(runs, new, scripts)):
        stop = fork_plan.model_index if fork_plan is not None and i == len(runs) - 1 else None
        found = first_divergence(old["events"], got["events"], stop=stop)
        if found is None and script.misses and stop is None:
            found = Divergence(len(got["events"]), None, None, note=script.misses[0])
        if found is not None:
            divergence = Divergence(found.index, found.expected, found.got, i,
                                    script.misses[0] if script.misses else None)
            break
    provenance = None
    if fork_plan is not None:
        source = runs[-1]
        provenance = fork_plan.provenance(source["trace_id"])
        branch = new[-1]
        branch["task_id"] = source["task_id"]
        marked = _mark_fork(branch, fork_plan.model_index, provenance)
        took = marked is not None and (not fork_plan.forced or fork_plan.forced == [CONTINUE]
                                       or marked.get("targets") == fork_plan.forced)
        if fork_plan.route is not None and not fork_plan.forced:  # a forced stop: the router must have ended
            took = marked is not None and marked.get("decision") == "stop"
        if divergence is None and not took:
            index = branch["events"].index(marked) if marked is not None else fork_plan.model_index
            raised = errors[-1] if errors and (marked is None or marked.get("reason") == "error") else None
            why = (f"the app's run raised {raised} there (a model or tool it called after the fork failed)"
                   if raised is not None else
                   f"the routing function {fork_plan.route.router!r} declares no route to "
                   f"{fork_plan.route.target!r} (its path map has no label for it)" if fork_plan.route is not None
                   else "the app decided otherwise after the served reply (its routing does not follow the "
                        "model's answer)")
            divergence = Divergence(index, {"targets": fork_plan.forced}, orchestration(marked) if marked else None,
                                    len(runs) - 1, f"the forced option did not take: {why}")
    return ReplayResult(new, contents, divergence is None, divergence,
                        served=sum(s.served for s in scripts), live=sum(s.live for s in scripts),
                        notes=[n for s in scripts for n in s.notes], fork=provenance, app_errors=errors)


def _mark_fork(branch: dict[str, Any], index: int, provenance: dict[str, Any]) -> dict[str, Any] | None:
    """Put the provenance on the branch's decision at the fork (the first
    orchestrator decision from there on); that event, or None."""
    for event in branch["events"][index:]:
        if event["type"] == "orchestrator_decision" and not event.get("implied"):
            event["fork"] = provenance
            return event
    return None
