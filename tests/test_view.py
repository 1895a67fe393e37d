"""The HTML timeline (orch_otel.view, orch-otel view) read as HTML, without a
browser: lanes, rows and labels for real runs of the test apps, decisions
with options, the stop, errors, the compare and index pages, size, privacy.
In a real browser: tests/test_view_browser.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest
import view_support
from conftest import instrumentor_fixture

import orch_otel
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.timeline import View
from orch_otel.timeline._compare import align
from orch_otel.tracefiles import read_lines, trace_files

instrumented = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return view_support.record(tmp_path_factory.mktemp("runs"), list(view_support.APPS))


@pytest.fixture(scope="module")
def captured_runs(tmp_path_factory):
    return view_support.record(tmp_path_factory.mktemp("captured"), ["supervisor"], capture_content=True)


def traces_in(folder) -> list[dict]:
    return [line.trace for path in trace_files([folder]) for line in read_lines(path)]


class Page(HTMLParser):
    """The parts of a page the tests look at: lane labels, event rows (with their text), scripts, links."""

    def __init__(self, html: str):
        super().__init__()
        self.lanes: list[str] = []
        self.rows: list[dict] = []
        self.external: list[str] = []
        self.links: list[str] = []
        self._in: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag in ("script", "aside"):  # past the rows
            self._in = None
        if "lane-label" in classes:
            self._in = "lane"
            self.lanes.append("")
        elif "ev" in classes:
            self._in = "row"
            self.rows.append({"id": a["data-id"], "classes": classes, "text": ""})
        for key in ("src", "href"):
            if a.get(key) and re.match(r"(https?:)?//", a[key]):
                self.external.append(a[key])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag in ("link",):
            self.external.append(str(a))

    def handle_endtag(self, tag):
        if tag == "div" and self._in == "lane":
            self._in = None

    def handle_data(self, data):
        if self._in == "lane":
            self.lanes[-1] += data
        elif self._in == "row":
            self.rows[-1]["text"] += data


def row(page: Page, predicate) -> dict:
    (found,) = [r for r in page.rows if predicate(r["text"])]
    return found


def test_fanout_has_one_lane_per_worker_instance_and_one_row_per_event(runs):
    (trace,) = traces_in(runs["fanout"])
    page = Page(orch_otel.view(trace))
    assert page.lanes == ["fanout#1", "worker#1", "worker#2", "worker#3"]  # the graph, then its three Send branches
    assert [r["id"] for r in page.rows] == [e["id"] for e in trace["events"]]
    spawn_rows = [r for r in page.rows if "k-spawn" in r["classes"]]
    assert [r["text"].split("spawn \u2192 ")[1].split()[0] for r in spawn_rows] == ["worker#1", "worker#2", "worker#3"]
    assert "fan-out \u00d73" in row(page, lambda t: "decide spawn" in t)["text"]
    assert "fan-in \u00d73 worker#1, worker#2, worker#3" in row(page, lambda t: "aggregate" in t)["text"]


def test_supervisor_decisions_show_their_options_with_the_chosen_one_marked(runs):
    (trace,) = traces_in(runs["supervisor"])
    html = orch_otel.view(trace)
    page = Page(html)
    assert page.lanes == ["supervision#1", "supervisor#1", "math_expert#1", "supervisor#2", "research_expert#1", "supervisor#3"]
    delegations = [r for r in page.rows if "decide delegate" in r["text"]]
    assert [r["text"].split("\u2192 ")[1].split()[0] for r in delegations] == ["math_expert", "research_expert"]
    chosen = re.findall(r'<span class="opt chosen" title="chosen">(\w+)', html)
    others = re.findall(r'<span class="opt">(\w+)', html)
    assert chosen == ["math_expert", "research_expert"]
    assert others == ["research_expert", "math_expert"]  # the option not taken, each time
    assert "Stopped: " in html and "end</a> chosen by supervision#1" in html


def test_a_forced_stop_and_an_error_are_marked(runs):
    (trace,) = traces_in(runs["failing"])
    html = orch_otel.view(trace)
    page = Page(html)
    stop = row(page, lambda t: "stop:" in t)
    assert "err" in stop["classes"] and "error" in stop["text"] and "(forced)" in stop["text"]
    assert "Errors: " in html


def test_a_team_limit_is_a_forced_stop_with_its_text(runs):
    (trace,) = traces_in(runs["nested"])
    page = Page(orch_otel.view(trace))
    assert page.lanes[:2] == ["outer#1", "sub_team#1"]  # the nested team under the team that runs it
    stops = [r["text"] for r in page.rows if "stop:" in r["text"]]
    assert stops and all("Maximum number of turns 2 reached." in s and "(forced)" in s for s in stops)


def test_the_resumed_run_shows_the_human_input(runs):
    interrupted, resumed = traces_in(runs["interrupt"])
    assert "interrupt" in Page(orch_otel.view(interrupted)).rows[-1]["text"]
    page = Page(orch_otel.view(resumed))
    human = row(page, lambda t: "human input" in t)
    assert f"resume of {interrupted['trace_id']}" in human["text"]


def test_the_page_needs_no_network(runs):
    for name in ("supervisor", "graphflow"):
        (trace,) = traces_in(runs[name])
        html = orch_otel.view(trace)
        page = Page(html)
        assert page.external == []
        assert "<script src" not in html and "@import" not in html and "url(http" not in html


def _chain(n: int) -> dict:
    """A synthetic trace of n events: one agent spawning workers that each call a model and return."""
    events, edges = [], []
    for i in range(n):
        k = i // 3 + 1
        kind = ("spawn", "message", "return")[i % 3]
        event = {"id": f"e{i + 1}", "t": i * 0.01, "type": kind, "agent": "lead" if kind == "spawn" else "worker",
                 "span_id": f"s{i}", "status": "ok", "instance": "lead#1" if kind == "spawn" else f"worker#{k}"}
        if kind == "spawn":
            event |= {"to": "worker", "to_instance": f"worker#{k}"}
        elif kind == "message":
            event |= {"channel": "llm", "model": "m", "input_tokens": 3, "output_tokens": 4}
        else:
            event |= {"to": "lead", "to_instance": "lead#1"}
        events.append(event)
        if i:
            edges.append({"src": f"e{i}", "dst": f"e{i + 1}", "type": "spawn" if kind == "message" else "return"})
    return {"trace_id": "t", "task_id": "chain", "events": events, "edges": edges, "rewards": {}, "costs": {"tokens": 7 * n / 3,
                                                                                                      "wall_clock_s": n * 0.01}}


def test_the_page_grows_linearly_with_the_events():
    sizes = {n: len(orch_otel.view(_chain(n)).encode()) for n in (600, 1200, 2400)}
    first, second = sizes[1200] - sizes[600], sizes[2400] - sizes[1200]
    assert 1.8 < second / first < 2.2  # twice the events added: twice the bytes added
    assert first / 600 < 3000  # bytes per event: a row, its share of arrows, its JSON


def test_content_appears_only_when_it_was_captured(runs, captured_runs):
    app_texts = ["what is 1+2?", "otel is a standard", "1 + 2 = 3", "all done"]  # the user's input, the fakes' replies
    plain = orch_otel.view(runs["supervisor"])
    assert [t for t in app_texts if t in plain] == []
    assert page_data(plain)["contents"] == {}  # the refs are there, no text behind them
    with_content = orch_otel.view(captured_runs["supervisor"])
    assert [t for t in app_texts if t not in with_content] == []
    (trace,) = traces_in(captured_runs["supervisor"])
    assert [t for t in app_texts if t in orch_otel.view(trace)] == []  # a bare dict: no content store given


def page_data(html: str, pane: str = "a") -> dict:
    return json.loads(re.search(rf'class="orch-data" data-pane="{pane}">(.*?)</script>', html).group(1))


def test_trace_text_is_escaped():
    trace = _chain(3)
    trace["events"][0]["agent"] = "<script>alert(1)</script>"
    trace["task_id"] = "</script><b>x"
    html = orch_otel.view(trace)
    assert "<script>alert(1)" not in html and "</script><b>x" not in html


def test_bad_input_names_what_is_wrong(tmp_path):
    with pytest.raises(ValueError, match="'events' is missing or not a list"):
        orch_otel.view({"trace_id": "x", "events": "none"})
    with pytest.raises(ValueError, match=r"events\[1\]: expected an object"):
        orch_otel.view({"events": [{"id": "e1"}, 3]})
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_chain(3)) + "\n{oops\n")
    result = cli("view", str(bad), "-o", str(tmp_path / "out.html"))
    assert result.returncode == 0 and f"{bad}:2: skipped: malformed JSON" in result.stderr


def test_repr_html_is_the_page_in_a_frame():
    page = orch_otel.view(_chain(3))
    assert isinstance(page, View) and page.startswith("<!DOCTYPE html>")
    frame = page._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "&lt;!DOCTYPE html&gt;" in frame and "<script>" not in frame


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orch_otel.cli", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def many(runs, tmp_path_factory):
    """One file holding three runs: fan-out, supervisor, swarm."""
    path = tmp_path_factory.mktemp("many") / "traces.jsonl"
    traces = [t for name in ("fanout", "supervisor", "swarm") for t in traces_in(runs[name])]
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    return path, traces


def test_view_of_many_traces_writes_an_index_linking_to_each_run(many, tmp_path):
    path, traces = many
    out = tmp_path / "runs.html"
    result = cli("view", str(path), "-o", str(out))
    assert result.returncode == 0, result.stderr
    index = out.read_text()
    assert index.count('class="run-row"') == 3
    links = [href for href in Page(index).links]
    assert links == [f"runs-runs/{t['trace_id']}.html" for t in traces]
    for href, trace in zip(links, traces):
        run_page = Page((tmp_path / href).read_text())
        assert [r["id"] for r in run_page.rows] == [e["id"] for e in trace["events"]]
    assert "swarm" in index and "end" in index  # topology and stop reason columns


def test_view_and_show_pick_a_trace_by_id(many, tmp_path):
    path, traces = many
    swarm = traces[2]["trace_id"]
    out = tmp_path / "one.html"
    assert cli("view", str(path), "--trace-id", swarm, "-o", str(out)).returncode == 0
    assert f"trace {swarm}" in out.read_text()
    shown = cli("show", str(path), "--trace-id", swarm)
    assert shown.returncode == 0 and "Alice" in shown.stdout and "worker" not in shown.stdout
    listed = cli("show", str(path), "--list")
    assert listed.returncode == 0
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()[1:]] == [t["trace_id"] for t in traces]
    missing = cli("view", str(path), "--trace-id", "nope", "-o", str(out))
    assert missing.returncode == 2 and "no trace with id nope" in missing.stderr and swarm in missing.stderr


def test_compare_aligns_at_the_fork_and_marks_the_first_difference(runs, tmp_path):
    (billing,) = traces_in(runs["route_billing"])
    (tech,) = traces_in(runs["route_tech"])
    decision = next(e for e in billing["events"] if e.get("decision") == "delegate")  # triage routes: billing or tech
    branch = view_support.fork_of(billing, tech, decision["id"])
    html = orch_otel.view(billing, compare=branch)
    marked = re.findall(r'class="ev [^"]*first-diff[^"]*" id="(\w)-(\w+)"', html)
    assert marked == [("a", decision["id"]), ("b", decision["id"])]
    assert f"Aligned at the fork: event {decision['id']}" in html and "forked: recorded billing, forced tech" in html
    other = tmp_path / "branch.jsonl"
    other.write_text(json.dumps(branch) + "\n")
    out = tmp_path / "compare.html"
    result = cli("view", str(runs["route_billing"]), "--compare", str(other), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert re.findall(r'class="ev [^"]*first-diff[^"]*" id="(\w)-(\w+)"', out.read_text()) == marked


def test_compare_draws_a_named_branch_beside_its_source(runs, tmp_path):
    # replay --choose-each writes every branch to one folder, and --compare takes no trace id: naming the
    # branch with --trace-id (branches first, sources in --compare) draws that branch beside its source
    (billing,) = traces_in(runs["route_billing"])
    (tech,) = traces_in(runs["route_tech"])
    decision = next(e for e in billing["events"] if e.get("decision") == "delegate")
    branch = view_support.fork_of(billing, tech, decision["id"])
    same = {**view_support.fork_of(billing, json.loads(json.dumps(billing)), decision["id"]), "trace_id": "f" * 32}
    (tmp_path / "branches.jsonl").write_text(json.dumps(same) + "\n" + json.dumps(branch) + "\n")
    sources = tmp_path / "sources.jsonl"
    sources.write_text(json.dumps(billing) + "\n" + json.dumps(tech) + "\n")
    out = tmp_path / "compare.html"
    result = cli("view", str(tmp_path / "branches.jsonl"), "--trace-id", branch["trace_id"], "--compare", str(sources),
                 "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert f"{billing['trace_id']} and {branch['trace_id']} side by side" in result.stdout  # the source drawn first
    assert "forked: recorded billing, forced tech" in out.read_text()
    several = cli("view", str(sources), "--compare", str(tmp_path / "branches.jsonl"), "-o", str(out))
    assert several.returncode == 2
    assert f"name it: orch-otel view {tmp_path / 'branches.jsonl'} --trace-id BRANCH_ID --compare {sources}" in several.stderr


def _steps(*names: str) -> list[dict]:
    return [{"id": f"e{i + 1}", "type": "message", "agent": n, "instance": f"{n}#1"} for i, n in enumerate(names)]


def test_alignment_without_a_fork_is_at_the_first_differing_step():
    how = align(_steps("a", "b", "c"), _steps("a", "b", "d", "e"))
    assert (how.offset_a, how.offset_b, how.diff_a, how.diff_b) == (0, 0, 2, 2)
    same = align(_steps("a", "b"), _steps("a", "b"))
    assert (same.diff_a, same.diff_b) == (None, None)


def test_alignment_shifts_rows_so_the_fork_lines_up():
    original = _steps("a", "b", "c", "d")  # the fork was at e3 ("c")
    branch = _steps("c", "x")  # the branch starts at the forced decision
    branch[0]["fork"] = {"source_trace_id": "t", "event_id": "e3", "decision": "delegate", "recorded": ["c"], "forced": ["c"]}
    how = align(original, branch)
    assert (how.offset_a, how.offset_b) == (0, 2)  # the branch's first row sits beside the original's third
    assert (how.diff_a, how.diff_b) == (3, 1)  # "d" against "x"
