"""The public API is the documented one: each public module's ``__all__`` names
exactly what docs/api.md lists for it, every name there exists, and every
``from orch_otel... import`` / ``import orch_otel...`` in the README's and the
docs' code runs."""

from __future__ import annotations

import importlib
import importlib.util
import re

import pytest
from conftest import REPO

API_DOC = REPO / "docs" / "api.md"
PUBLIC_MODULES = [
    "orch_otel",
    "orch_otel.recorder",
    "orch_otel.content",
    "orch_otel.redaction",
    "orch_otel.testing",
    "orch_otel.converter",
    "orch_otel.spans",
    "orch_otel.models",
    "orch_otel.tracefiles",
    "orch_otel.offline",
    "orch_otel.datasets",
    "orch_otel.replaying",
    "orch_otel.exporters",
    "orch_otel.exporters.span_dump",
    "orch_otel.vocabulary",
    "orch_otel.demo",
    "orch_otel.timeline",
    "orch_otel.integrations.langgraph",
    "orch_otel.integrations.langgraph.testing",
    "orch_otel.integrations.autogen",
    "orch_otel.integrations.autogen.testing",
    "orch_otel.integrations.openai_sdk",
    "orch_otel.integrations.agent_framework",
]
# `orch_otel.a.b.Name` in backquotes, up to the first character that cannot be part of a dotted name
DOTTED = re.compile(r"`(orch_otel(?:\.\w+)+)")


def is_module(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ImportError:  # a name inside a module, not a submodule
        return False


def documented() -> dict[str, set[str]]:
    """Public module -> the names docs/api.md lists for it (modules named on the page are not names)."""
    names: dict[str, set[str]] = {module: set() for module in PUBLIC_MODULES}
    for dotted in set(DOTTED.findall(API_DOC.read_text())):
        module, _, name = dotted.rpartition(".")
        if module in names and not is_module(dotted):
            names[module].add(name)
    return names


@pytest.mark.parametrize("module", PUBLIC_MODULES)
def test_all_lists_exactly_the_documented_names(module):
    imported = importlib.import_module(module)
    exported = getattr(imported, "__all__", None)
    assert exported is not None, f"{module} has no __all__"
    assert len(exported) == len(set(exported)), f"{module}.__all__ repeats a name"
    missing = [name for name in exported if not hasattr(imported, name)]
    assert missing == [], f"{module}.__all__ names what {module} does not define"
    assert set(exported) - documented()[module] == set(), f"in {module}.__all__, not in docs/api.md"
    assert documented()[module] - set(exported) == set(), f"in docs/api.md, not in {module}.__all__"


def test_every_dotted_name_in_the_api_page_resolves():
    unresolved = []
    for dotted in sorted(set(DOTTED.findall(API_DOC.read_text()))):
        module, _, name = dotted.rpartition(".")
        if not (is_module(dotted) or hasattr(importlib.import_module(module), name)):
            unresolved.append(dotted)
    assert unresolved == []


def internal_modules_named() -> set[str]:
    intro = API_DOC.read_text().split("\n## ", 1)[0]
    return set(DOTTED.findall(intro))


def test_the_modules_the_page_calls_internal_exist_and_are_not_public():
    named = internal_modules_named()
    assert named, "the page says which modules are internal"
    assert sorted(m for m in named if not is_module(m)) == []
    assert named & set(PUBLIC_MODULES) == set()


def test_every_top_level_module_is_public_private_or_named_internal():
    package = REPO / "src" / "orch_otel"
    modules = {p.stem for p in package.glob("*.py")} | {p.parent.name for p in package.glob("*/__init__.py")}
    public_or_parent = {m.split(".")[1] for m in PUBLIC_MODULES if "." in m}
    internal = {m.split(".")[1] for m in internal_modules_named()}
    unclassified = sorted(m for m in modules if not m.startswith("_") and m not in public_or_parent | internal)
    assert unclassified == [], "add these to docs/api.md (public, with their names) or to its internal list"


def code_blocks(text: str) -> list[str]:
    return re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.S | re.M)


IMPORT = re.compile(r"^\s*(from\s+(orch_otel[\w.]*)\s+import\s+(\([^)]*\)|[^\n#]+)|import\s+(orch_otel[\w.]*))", re.M)


def documented_imports() -> list[tuple[str, str, list[str]]]:
    """(file, module, names) of every orch_otel import in the code blocks of README.md and docs/*.md."""
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for block in code_blocks(path.read_text()):
            for match in IMPORT.finditer(block):
                if match.group(4):
                    found.append((path.name, match.group(4), []))
                    continue
                names = [n.strip().split(" as ")[0] for n in match.group(3).strip("() \n").split(",") if n.strip()]
                found.append((path.name, match.group(2), names))
    return found


def test_the_docs_import_orch_otel_somewhere():
    modules = {module for _, module, _ in documented_imports()}
    assert "orch_otel" in modules and "orch_otel.integrations.autogen" in modules  # the parser sees the known ones


@pytest.mark.parametrize("where, module, names", documented_imports(), ids=lambda v: v if isinstance(v, str) else None)
def test_every_import_in_the_docs_resolves(where, module, names):
    imported = importlib.import_module(module)
    public = getattr(imported, "__all__", None)
    for name in names:
        if is_module(f"{module}.{name}"):
            continue
        assert hasattr(imported, name), f"{where}: {module} has no {name}"
        assert public is None or name in public, f"{where} imports {module}.{name}, which is not in {module}.__all__"
