"""The package's import graph: no circles, and the engine never reaches a rule (docs/architecture.md).

Every import counts, wherever it is written: at module level, inside a
function (imported on first use) or under `TYPE_CHECKING`. A circle that
only a late import keeps from failing today is still a circle: the two
modules cannot be read, tested or moved apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "src" / "optpatch"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports, by any statement anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_package_has_no_import_circle():
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle():
    """The check above can fail: a planted circle, direct or through a third module, is found."""
    assert circles({"a": {"b"}, "b": {"a"}}) == [["a", "b"]]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_late_and_type_checking_imports_count(tmp_path):
    source = tmp_path / "x.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from optpatch.engine import run\n"
        "def f():\n    from optpatch.reporters import text\n    import optpatch.cache\n"
    )
    known = {"optpatch.engine", "optpatch.reporters", "optpatch.reporters.text", "optpatch.cache"}
    assert imports_of("optpatch.x", source, known) == {"optpatch.engine", "optpatch.reporters", "optpatch.reporters.text", "optpatch.cache"}


def test_no_module_of_the_pipeline_imports_a_rule():
    """Rules are found by discovery (rule.load_rules); no module names one."""
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        assert "optpatch_rules" not in text or name == "optpatch.rule", name
        assert "builtin_rules." not in text, name
