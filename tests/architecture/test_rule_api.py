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
