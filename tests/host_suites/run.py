"""Run the frameworks' own test suites twice, plain and with orch-otel
instrumented, and fail if any test's outcome differs (issue 14: orch-otel must
never change what the app sees).

    python3 tests/host_suites/run.py --setup      # CI: creates .venv-hosts, then runs
    python3 tests/host_suites/run.py --suite langchain-core

Each suite comes from the sdist (``pip download --no-binary :all:``) of the
framework at the version installed in the project's venv (``.venv``). The
suites run in their own venv, ``.venv-hosts``: the project's ``[all]`` extras
plus the suites' test dependencies (requirements.txt), pinned to ``.venv``'s
versions. Tests that fail or skip without orch-otel are fine as long as they do
the same with it. See docs/host-suites.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from compare import RunResult, describe_difference, differing, named_problems, not_passing, run_problem  # noqa: E402
from suites import SUITES, VENVS, Suite  # noqa: E402

# the user's own telemetry settings must not reach either run
_DROPPED_ENV_PREFIXES = ("OTEL_", "ORCH_OTEL_", "PYTEST_ADDOPTS", "ORCH_HOST_")
_ALSO_PINNED = ("langgraph", "langchain", "autogen-ext", "opentelemetry-api", "opentelemetry-sdk")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    project_python = _venv_python(args.project_venv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    suites = [s for s in SUITES if not args.suite or s.name in args.suite]
    unknown = set(args.suite or ()) - {s.name for s in SUITES}
    if unknown:
        print(f"unknown suite(s): {', '.join(sorted(unknown))}; known: {', '.join(s.name for s in SUITES)}")
        return 2
    venvs = {s.venv: _suite_venv(s, args.hosts_venv) for s in suites}  # each venv the chosen suites run in
    if args.setup:
        for key, venv in venvs.items():
            try:
                if key is None:
                    _setup_hosts_venv(args.project_venv, venv, work)
                else:
                    _setup_own_venv(args.project_venv, venv, VENVS[key].extras, HERE / VENVS[key].requirements, work)
            except subprocess.CalledProcessError as error:
                print(f"FAILED: could not set up {venv}: {' '.join(map(str, error.cmd))} exited {error.returncode}")
                return 1
    # the suites' own versions, and the libraries their tests run on
    failures = []
    versions: dict[str, str] = {}
    for key, venv in venvs.items():
        dists = sorted({s.dist for s in suites if s.venv == key} | set(_ALSO_PINNED if key is None else ()))
        versions.update(_installed_versions(project_python, dists))
        host_versions = _installed_versions(_venv_python(venv), dists)
        failures += [f"{dist}: {venv.name} has {host_versions[dist]}, the project's venv {versions[dist]} "
                     "(rerun with --setup)" for dist in dists if host_versions[dist] != versions[dist]]
    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    print("versions (the same in the project's and the suites' venvs): "
          + ", ".join(f"{dist} {versions[dist]}" for dist in sorted(versions)))
    started = time.monotonic()
    for suite in suites:
        version = versions[suite.dist]
        suite_start = time.monotonic()
        problems = _run_suite(suite, version, _venv_python(venvs[suite.venv]), work, args.per_test_timeout)
        print(f"   ({time.monotonic() - suite_start:.0f} s)")
        failures.extend(f"{suite.name}: {problem}" for problem in problems)
    print(f"\n== host suites: {len(suites)} suite(s) in {time.monotonic() - started:.0f} s")
    if failures:
        print("FAILED: orch-otel changed what these suites see (or a suite could not run):")
        for failure in failures:
            print(f"  - {failure}")
        return 1
    print("OK: every test has the same outcome with orch-otel instrumented as without it")
    return 0


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project-venv", type=Path, default=REPO / ".venv",
                        help="venv whose framework versions are tested (default .venv)")
    parser.add_argument("--hosts-venv", type=Path, default=REPO / ".venv-hosts", help="venv the suites run in (default .venv-hosts)")
    parser.add_argument("--work", type=Path, default=REPO / ".host-suites", help="sdists, sources and results (default .host-suites)")
    parser.add_argument("--setup", action="store_true", help="create or update the hosts venv first")
    parser.add_argument("--suite", action="append", help="run only this suite (repeatable)")
    parser.add_argument("--per-test-timeout", type=int, default=120, help="seconds before pytest-timeout stops one test")
    return parser.parse_args(argv)


def _venv_python(venv: Path) -> Path:
    return venv.resolve() / "bin" / "python"


# The OpenAI Agents SDK needs openai 3 and mcp 2; autogen's own tests need openai < 2 and
# mcp < 2 (requirements.txt). So .venv-hosts takes every extra of [all] but the SDK's, and
# leaves those distributions unpinned by .venv, with langchain-openai (the dev extra's: its
# newest needs openai >= 2.45, an older one takes openai 1.x).
_NOT_HOSTED_EXTRAS = ("openai-agents",)
_NOT_PINNED = ("openai", "mcp", "langchain-openai")


def _host_extras() -> str:
    import tomllib

    (spec,) = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["all"]
    extras = spec[spec.index("[") + 1:spec.index("]")].split(",")
    return ",".join(e for e in extras if e not in _NOT_HOSTED_EXTRAS)


def _pins(frozen: str) -> str:
    return "".join(line for line in frozen.splitlines(keepends=True)
                   if line.split("==")[0].strip().lower() not in _NOT_PINNED)


def _suite_venv(suite: Suite, hosts_venv: Path) -> Path:
    return hosts_venv if suite.venv is None else REPO / VENVS[suite.venv].path


def _setup_own_venv(project_venv: Path, venv: Path, extras: str, requirements: Path, work: Path) -> None:
    """A suite's own venv: the project with ``extras`` and the suite's test
    dependencies, pinned to the versions in the project's venv."""
    print(f"== setting up {venv}")
    if not _venv_python(venv).exists():
        _check([sys.executable, "-m", "venv", str(venv)])
    pip = [str(_venv_python(venv)), "-m", "pip"]
    _check([*pip, "install", "-q", "--upgrade", "pip"])
    frozen = subprocess.run([str(_venv_python(project_venv)), "-m", "pip", "freeze", "--exclude-editable"],
                            check=True, capture_output=True, text=True).stdout
    constraints = work / f"constraints-{venv.name}.txt"
    constraints.write_text(frozen, encoding="utf-8")
    _check([*pip, "install", "-q", "-c", str(constraints), "-e", f"{REPO}[{extras}]", "-r", str(requirements)])


def _setup_hosts_venv(project_venv: Path, hosts_venv: Path, work: Path) -> None:
    """The project's [all] extras (but the OpenAI Agents SDK's) and the suites'
    test dependencies, pinned to the versions in the project's venv."""
    print(f"== setting up {hosts_venv}")
    if not _venv_python(hosts_venv).exists():
        _check([sys.executable, "-m", "venv", str(hosts_venv)])
    hosts_pip = [str(_venv_python(hosts_venv)), "-m", "pip"]
    _check([*hosts_pip, "install", "-q", "--upgrade", "pip"])
    frozen = subprocess.run([str(_venv_python(project_venv)), "-m", "pip", "freeze", "--exclude-editable"],
                            check=True, capture_output=True, text=True).stdout
    constraints = work / "constraints.txt"
    constraints.write_text(_pins(frozen), encoding="utf-8")
    _check([*hosts_pip, "install", "-q", "-c", str(constraints), "-e", f"{REPO}[{_host_extras()}]",
            "-r", str(HERE / "requirements.txt")])


def _installed_versions(python: Path, dists: list[str]) -> dict[str, str]:
    code = "import sys\nfrom importlib.metadata import version\nfor d in sys.argv[1:]: print(version(d))"
    out = subprocess.run([str(python), "-c", code, *dists], check=True, capture_output=True, text=True).stdout.split()
    return dict(zip(dists, out))


def _sources(suite: Suite, version: str, hosts_python: Path, work: Path) -> Path:
    """The sdist of ``suite.dist`` at ``version``, downloaded once and extracted."""
    sdists = work / "sdists"
    stem = f"{suite.dist.replace('-', '_')}-{version}"
    archive = sdists / f"{stem}.tar.gz"
    if not archive.exists():
        download = subprocess.run([str(hosts_python), "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                                   f"{suite.dist}=={version}", "-d", str(sdists)], capture_output=True, text=True)
        if download.returncode != 0 or not archive.exists():
            raise SystemExit(f"{suite.name}: could not download the sdist of {suite.dist}=={version}:\n{download.stdout}{download.stderr}")
    source = work / "src" / stem
    if not source.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(work / "src", filter="data")
    missing = [t for t in suite.targets if not (source / t.split("::")[0]).exists()]
    if missing:
        raise SystemExit(f"{suite.name}: the sdist {archive.name} has no {', '.join(missing)} (tests left out of the sdist?)")
    return source


def _run_suite(suite: Suite, version: str, hosts_python: Path, work: Path, per_test_timeout: int) -> list[str]:
    print(f"\n== {suite.name} {version}")
    source = _sources(suite, version, hosts_python, work)
    results = work / "results" / suite.name
    shutil.rmtree(results, ignore_errors=True)
    results.mkdir(parents=True)
    for nodeid, reason in suite.deselect:
        print(f"   deselected {nodeid}: {reason}")
    plain = _pytest(suite, source, hosts_python, results / "plain", list(suite.targets), per_test_timeout)
    instrumented = _pytest(suite, source, hosts_python, results / "instrumented", list(suite.targets), per_test_timeout)
    print(f"   plain:        {plain.counts()}")
    print(f"   instrumented: {instrumented.counts()}  ({instrumented.traces} traces written by orch-otel)")
    problems = [f"{run.mode} run: {problem}" for run in (plain, instrumented) if (problem := run_problem(run))]
    if problems:
        return problems
    failing = not_passing(plain)
    if failing:
        print(f"   not passing without orch-otel ({len(failing)}; fine if the same with it):")
        for line in failing:
            print(f"      {line}")
    problems = named_problems(suite.named, plain, instrumented)
    suspects = differing(plain, instrumented)
    if not suspects:
        print("   same outcomes")
        return problems
    # Rerun only the differing tests, both ways, so one flaky test on a loaded
    # machine is told apart from a difference orch-otel makes.
    rerun_ids = [nodeid for nodeid in suspects if nodeid != "<collection>"] or list(suite.targets)
    plain2 = _pytest(suite, source, hosts_python, results / "plain-rerun", rerun_ids, per_test_timeout)
    instrumented2 = _pytest(suite, source, hosts_python, results / "instrumented-rerun", rerun_ids, per_test_timeout)
    for nodeid in suspects:
        confirmed = plain2.outcome(nodeid) == plain.outcome(nodeid) and instrumented2.outcome(nodeid) == instrumented.outcome(nodeid)
        if confirmed:
            print(f"   DIFFERS {describe_difference(nodeid, plain, instrumented)}")
            problems.append(f"{nodeid}: plain {plain.outcome(nodeid)}, instrumented {instrumented.outcome(nodeid)}")
        else:
            print(f"   not reproduced on rerun (flaky, not counted): {describe_difference(nodeid, plain, instrumented)}")
    return problems


def _pytest(suite: Suite, source: Path, hosts_python: Path, out: Path, targets: list[str], per_test_timeout: int) -> RunResult:
    out.mkdir(parents=True)
    mode = out.name
    instrumented = mode.startswith("instrumented")
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_ENV_PREFIXES)}
    # orch-otel from this checkout, whatever the hosts venv's editable install points at
    paths = [str(REPO / "src"), str(HERE / "plugins")]
    if suite.stand_ins:
        paths.append(str(HERE / "stand_ins"))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["ORCH_HOST_OUTCOMES"] = str(out / "outcomes.json")
    # the sdist's own pytest configuration; a module that cannot be collected
    # is recorded (host_outcomes) and the rest still runs
    command = [str(hosts_python), "-m", "pytest", "-c", "pyproject.toml", "--rootdir", ".", "-p", "no:cacheprovider",
               "-p", "host_outcomes", "--timeout", str(per_test_timeout), "--continue-on-collection-errors",
               "-q", "--no-header", "-rN", "--tb=short"]
    if suite.hide_dists:  # before host_instrument, which imports the frameworks
        env["ORCH_HOST_HIDE_DISTS"] = ",".join(suite.hide_dists)
        command += ["-p", "host_hide_dists"]
    if instrumented:
        env["ORCH_HOST_TRACE_DIR"] = str(out / "traces")
        env["ORCH_HOST_TRACE_COUNT"] = str(out / "trace-count")
        command += ["-p", "host_instrument"]
    for nodeid, _reason in suite.deselect:
        command += ["--deselect", nodeid]
    command += targets
    broken = None
    with open(out / "pytest.log", "wb") as log:
        process = subprocess.Popen(command, cwd=source, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout=suite.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            broken = f"timed out after {suite.timeout_s} s (log: {out / 'pytest.log'})"
    result = RunResult.load(mode, out / "outcomes.json", broken)
    if result.broken and not broken:
        result.broken += f" (log: {out / 'pytest.log'})"
    count_file = out / "trace-count"
    if count_file.exists():
        result.traces = int(count_file.read_text(encoding="utf-8"))
    return result


def _check(command: list[str]) -> None:
    subprocess.run(command, check=True)


if __name__ == "__main__":
    sys.exit(main())
