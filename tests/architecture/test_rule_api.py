"""A rule imports the documented rule API and nothing else of optpatch (optpatch/rule/__init__.py)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((REPO_ROOT / "rules").rglob("*.py"))

# The API: the base class and verdicts, each language's frontend, and the analyses rules share.
API = ("optpatch.rule", "optpatch.rule.python", "optpatch.rule.cpp")
SHARED_ANALYSES = "optpatch.analysis"
THIRD_PARTY = {"libcst", "clang"}  # the parsers a rule walks


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every absolute module an import in PATH names (relative imports stay in the rule's own package)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def outside_the_api(module: str) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in THIRD_PARTY:
        return False
    return module not in API and module != SHARED_ANALYSES and not module.startswith(SHARED_ANALYSES + ".")


@pytest.mark.parametrize("path", RULE_FILES, ids=[str(p.relative_to(REPO_ROOT)) for p in RULE_FILES])
def test_a_rule_imports_only_the_rule_api(path):
    stray = [f"L{line}: {module}" for line, module in imported_modules(path) if outside_the_api(module)]
    assert not stray, f"{path.name} imports outside the rule API: {stray}"


def test_the_check_catches_an_internal_import(tmp_path):
    rule = tmp_path / "rule.py"
    rule.write_text("import re\nfrom optpatch.rule import Rule\nfrom optpatch.python_frontend import walk\nfrom . import site\n")
    assert [m for _, m in imported_modules(rule) if outside_the_api(m)] == ["optpatch.python_frontend"]


VERDICT_NAMES = {"Proven", "Kept", "Advice", "Judgement", "Verdict"}


def classes_outside_the_vocabulary(path: Path) -> list[str]:
    """Classes in PATH that would be a second verdict vocabulary: a verdict's name, or an exception to unwind with."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ClassDef):
            continue
        bases = {base.id if isinstance(base, ast.Name) else getattr(base, "attr", "") for base in node.bases}
        if node.name.lstrip("_") in VERDICT_NAMES or any(base.endswith(("Exception", "Error")) for base in bases):
            found.append(f"L{node.lineno}: class {node.name}")
    return found


@pytest.mark.parametrize("path", RULE_FILES, ids=[str(p.relative_to(REPO_ROOT)) for p in RULE_FILES])
def test_verdicts_are_defined_only_in_the_rule_api(path):
    assert not classes_outside_the_vocabulary(path), f"{path.name}: {classes_outside_the_vocabulary(path)}"


def test_the_vocabulary_check_catches_a_private_verdict(tmp_path):
    rule = tmp_path / "rule.py"
    rule.write_text("class Kept:\n    pass\nclass NotRewritable(Exception):\n    pass\nclass Site:\n    pass\n")
    assert classes_outside_the_vocabulary(rule) == ["L1: class Kept", "L3: class NotRewritable"]


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "rules").glob("*/rule.py")), ids=lambda p: p.parent.name)
def test_a_rules_class_file_stays_small(path):
    """A rule's rule.py is its class: declarations, manual, examples and check. Its analyses sit beside it."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= 400, f"{path.relative_to(REPO_ROOT)} has {lines} lines: move an analysis into a module beside it"
