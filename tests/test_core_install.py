"""A bare ``pip install orch-otel`` carries only what capture needs: the core
dependencies leave out the command's packages, ``instrument()`` runs when
orch-otel's own code can import nothing beyond the core dependencies, and the
``orch-otel`` command names the extra to install when the [cli] packages are
missing. Each check runs in a fresh interpreter with a meta-path finder that
refuses the imports a bare install could not make."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib", reason="tomllib (reading pyproject.toml) is in the standard library from Python 3.11")

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
# The packages only the command, validation, offline reading or zero-code use (issue 15).
NOT_CAPTURE = {"rich", "pydantic", "jsonschema", "jsonschema-rs", "zstandard", "opentelemetry-distro"}


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def _core_closure() -> set[str]:
    """The core dependencies (from pyproject.toml) and what they need in turn, as installed here."""
    todo, seen = list(_names(PROJECT["dependencies"])), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return seen


def _core_modules() -> set[str]:
    closure = _core_closure()
    return {module for module, dists in packages_distributions().items()
            if any(canonicalize_name(d) in closure for d in dists)}


# Installed first in the child: a finder that refuses a top-level module (outside the
# standard library) that ``refused`` names or ``allowed`` (when given) leaves out; with
# ``only_from``, only to importers under its first prefix and none of the others.
_BLOCKER = textwrap.dedent('''
    import importlib.abc, sys

    class Refuse(importlib.abc.MetaPathFinder):
        def __init__(self, refused, allowed, only_from):
            self.refused, self.allowed, self.only_from = refused, allowed, only_from

        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in sys.stdlib_module_names:
                return None
            if top not in self.refused and (self.allowed is None or top in self.allowed):
                return None
            if self.only_from and not _imported_by(self.only_from):
                return None
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)", name=name)

    def _imported_by(prefixes):
        frame = sys._getframe(2)
        while frame is not None and frame.f_globals.get("__name__", "").startswith(("importlib", "_frozen_importlib")):
            frame = frame.f_back
        importer = frame.f_globals.get("__name__", "") if frame is not None else ""
        return importer.startswith(prefixes[0]) and not importer.startswith(prefixes[1:])
''')


def _run(code: str, *, refused: set[str] = frozenset(), allowed: set[str] | None = None,
         only_from: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    child = _BLOCKER + f"sys.meta_path.insert(0, Refuse({set(refused)!r}, {allowed!r}, {only_from!r}))\n" + code
    return subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, cwd=REPO)


def test_core_dependencies_leave_out_the_command_and_zero_code_packages() -> None:
    core = _names(PROJECT["dependencies"])
    assert not core & NOT_CAPTURE, core & NOT_CAPTURE
    extras = PROJECT["optional-dependencies"]
    assert _names(extras["cli"]) == NOT_CAPTURE - {"opentelemetry-distro"}
    assert _names(extras["zero-code"]) == {"opentelemetry-distro"}
    assert {"orch-otel[cli", "zero-code"} <= set(extras["all"][0].replace("]", "").split(","))


def test_instrument_writes_a_trace_when_orch_otel_can_import_only_the_core_dependencies(tmp_path: Path) -> None:
    # Everything but the standard library and the core closure is refused to orch-otel's own
    # modules; its integrations may import their framework (installed here, absent in a bare install).
    allowed = _core_modules() | {"orch_otel"}
    assert not allowed & {"rich", "pydantic", "jsonschema", "jsonschema_rs", "zstandard"}
    code = textwrap.dedent(f'''
        import orch_otel
        orch_otel.instrument(trace_dir={str(tmp_path)!r})

        @orch_otel.agent("planner", role="planner")
        def planner(task):
            return task

        @orch_otel.workflow("plan")
        def run():
            return planner("x")

        run()
        assert orch_otel.flush()
    ''')
    result = _run(code, allowed=allowed, only_from=("orch_otel", "orch_otel.integrations"))
    assert result.returncode == 0, result.stderr
    assert "refused by the test" not in result.stderr
    (trace_file,) = tmp_path.glob("*.jsonl")
    assert '"agent":"planner"' in trace_file.read_text()


@pytest.mark.parametrize("argv", [["--help"], ["convert", "missing.json"], ["validate", "missing.jsonl"]])
def test_the_command_names_the_cli_extra_when_its_packages_are_missing(argv: list[str]) -> None:
    refused = {"rich", "pydantic", "pydantic_core", "jsonschema", "jsonschema_rs", "zstandard"}
    result = _run(f"from orch_otel.cli import main\nsys.exit(main({argv!r}))", refused=refused)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "orch-otel: the command needs the [cli] extra (rich is not installed): pip install 'orch-otel[cli]'"]


def _pre_instrument(tmp_path: Path, *, sdk_configured: bool) -> subprocess.CompletedProcess:
    """orch-otel's ``opentelemetry_pre_instrument`` hook as ``opentelemetry-instrument`` runs it
    (after the distro and configurators), with or without an SDK provider built by then."""
    setup = ("from opentelemetry import trace\nfrom opentelemetry.sdk.trace import TracerProvider\n"
             "trace.set_tracer_provider(TracerProvider())\n") if sdk_configured else ""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ORCH_OTEL_"))}
    env.update(OTEL_TRACES_EXPORTER="orch_otel", ORCH_OTEL_TRACE_DIR=str(tmp_path))
    code = setup + "from orch_otel._zero_code import pre_instrument\npre_instrument()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)


def test_zero_code_without_a_distro_says_which_extra_to_install(tmp_path: Path) -> None:
    bare = _pre_instrument(tmp_path, sdk_configured=False)
    assert bare.returncode == 0, bare.stderr
    assert "no OpenTelemetry distro configured the SDK" in bare.stderr
    assert "pip install 'orch-otel[zero-code]'" in bare.stderr
    configured = _pre_instrument(tmp_path, sdk_configured=True)
    assert configured.returncode == 0, configured.stderr
    assert "distro" not in configured.stderr
