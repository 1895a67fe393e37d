"""Shared fixtures: one global SDK provider, span capture, and trace checks
against both orch-otel's own schema and the paper's seed schema."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from orch_otel import testing
from orch_otel._validation import trace_errors
from orch_otel.content import ContentPolicy
from orch_otel.recorder import get_recorder

REPO = Path(__file__).resolve().parents[1]
SEED_DIR = Path(os.environ.get("ORCH_OTEL_SEED_DIR", REPO.parent / "shared" / "reference"))
SEED_SCHEMA = SEED_DIR / "trace_schema.json"
SEED_MISSING = (
    f"the paper's seed schema is not at {SEED_SCHEMA}: put trace_schema.json there (a shared/reference folder "
    "beside this checkout) or set ORCH_OTEL_SEED_DIR to the folder that holds it"
)

_seed_validator = Draft202012Validator(json.loads(SEED_SCHEMA.read_text())) if SEED_SCHEMA.is_file() else None


def check_trace(trace: dict) -> dict:
    """Assert a trace meets orch-otel's schema and contract, and the seed schema when present."""
    errors = trace_errors(trace)
    assert not errors, "\n".join(errors)
    if _seed_validator is not None:
        seed_errors = [f"{list(e.absolute_path)}: {e.message}" for e in _seed_validator.iter_errors(trace)]
        assert not seed_errors, "seed schema: " + "\n".join(seed_errors)
    return trace


@contextmanager
def recording(capture: bool) -> Iterator[None]:
    """The process recorder (the one the instrumentors hold) with capture on or off and the default redactor."""
    recorder = get_recorder()
    saved, recorder.content = recorder.content, ContentPolicy(capture=capture)
    try:
        yield
    finally:
        recorder.content = saved


def recorded_with_content(run, captured, monkeypatch) -> tuple[dict, dict[str, str]]:
    """Run ``run()`` with content capture on (the process recorder's policy
    otherwise as it is): its one trace, checked, and the contents a replay reads."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        run()
    (conversion,) = captured.conversions()
    return check_trace(conversion.trace), conversion.contents


def events_of(trace: dict, kind: str, **match) -> list[dict]:
    return [e for e in trace["events"] if e["type"] == kind and all(e.get(k) == v for k, v in match.items())]


def decisions_of(trace: dict, decision: str) -> list[dict]:
    return [e for e in trace["events"] if e.get("decision") == decision]


def span_tree(spans) -> list[tuple]:
    """The spans as ``(name, [children])`` from the roots down, children in start order."""
    children: dict = {}
    for span in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(span.parent_id, []).append(span)

    def node(span) -> tuple:
        return span.name, [node(child) for child in children.get(span.span_id, [])]

    return [node(root) for root in children.get(None, [])]


def instrumentor_fixture(*instrumentor_classes):
    """A module-scoped autouse fixture: instrument with each of
    ``instrumentor_classes`` for the module's tests, uninstrument after. Use as
    ``instrumented = instrumentor_fixture(LangGraphInstrumentor)``; it yields the
    instrumentor (the list of them when given several)."""

    @pytest.fixture(scope="module", autouse=True)
    def instrumented():
        instrumentors = [cls() for cls in instrumentor_classes]
        for instrumentor in instrumentors:
            instrumentor.instrument()
        yield instrumentors[0] if len(instrumentors) == 1 else instrumentors
        for instrumentor in reversed(instrumentors):
            instrumentor.uninstrument()

    return instrumented


@pytest.fixture(scope="session")
def seed_schema() -> dict:
    if not SEED_SCHEMA.is_file():
        pytest.skip(SEED_MISSING)
    return json.loads(SEED_SCHEMA.read_text())


@pytest.fixture(scope="session", autouse=True)
def sdk_provider():
    return testing.ensure_sdk_provider()


@pytest.fixture
def captured():
    with testing.capture() as spans:
        yield spans


@pytest.fixture
def run_python(tmp_path):
    """Run a Python snippet in a fresh interpreter (for global OTel state)."""
    import subprocess

    def run(code: str, env: dict | None = None, args: list[str] | None = None, timeout: float = 120):
        script = tmp_path / "snippet.py"
        script.write_text(code)
        full_env = {**os.environ, **(env or {})}
        cmd = (args or [sys.executable]) + [str(script)]
        return subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=tmp_path)

    return run


@pytest.fixture
def run_zero_code(run_python):
    """Run a snippet under ``opentelemetry-instrument`` with only orch-otel's
    trace-file exporter, writing traces to ``trace_dir``; ``env`` adds or
    overrides variables (an OTLP endpoint, say)."""
    import shutil

    launcher = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    assert launcher, "opentelemetry-instrument must be installed next to this Python"

    def run(code: str, trace_dir: Path, env: dict | None = None):
        full_env = {
            "OTEL_TRACES_EXPORTER": "orch_otel",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "ORCH_OTEL_TRACE_DIR": str(trace_dir),
            **(env or {}),
        }
        return run_python(code, env=full_env, args=[launcher, sys.executable])

    return run


@pytest.fixture(scope="module")
def ray_cluster():
    """A local Ray cluster of two nodes of one CPU each, joined for the module's
    ``--engine ray`` tests (both engines' tasks land on both nodes), left after them."""
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'orch-otel[ray]'")
    pytest.importorskip("pyarrow", reason="pyarrow comes with the optional extra: pip install 'orch-otel[ray]'")
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes.add_node(num_cpus=1)
    ray.init(address=nodes.address, log_to_driver=False)
    yield nodes
    ray.shutdown()
    nodes.shutdown()


@pytest.fixture
def small_ranges(monkeypatch):
    """``--engine ray`` cuts every file it can into ranges of about 512 bytes (the driver
    cuts them), so that lines, byte order marks and problems cross range edges."""
    from orch_otel.offline import ranges

    monkeypatch.setattr(ranges, "_RANGE_BYTES", (512, 512))


@pytest.fixture
def columnar_everywhere(monkeypatch):
    """The columnar reader takes files of any size (by default only large ones, which
    pay back pyarrow's import), so that the tests' small logs go through it."""
    from orch_otel.offline import readers

    monkeypatch.setattr(readers, "MIN_FILE_BYTES", 0)


@pytest.fixture(scope="session")
def local_tokenizer(tmp_path_factory) -> str:
    """A tokenizer folder made here (tests/tokenizer_support.py), for ``--tokenizer``: no hub download."""
    pytest.importorskip("transformers", reason="--tokenizer needs the optional extra: pip install 'orch-otel[tokenize]'")
    from tokenizer_support import build_tokenizer

    return str(build_tokenizer(tmp_path_factory.mktemp("tokenizer")))


AGENT_FRAMEWORK_MISSING = ("needs Microsoft Agent Framework, which needs Python >= 3.11: "
                           "pip install 'orch-otel[agent-framework]'")


def need_agent_framework() -> None:
    """Skip a test module without Microsoft Agent Framework (on Python 3.10 it
    cannot be installed); under ``CI=true`` on 3.11+ its absence fails."""
    if sys.version_info >= (3, 11) and os.environ.get("CI"):
        import agent_framework  # noqa: F401  # CI installs .[all]: missing is a failure, not a skip
        import agent_framework_orchestrations  # noqa: F401
    pytest.importorskip("agent_framework", reason=AGENT_FRAMEWORK_MISSING)
    pytest.importorskip("agent_framework_orchestrations", reason=AGENT_FRAMEWORK_MISSING)
