"""docs/architecture.md stays true: every file it names exists, and its steps name the files they touch."""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "architecture.md"
PACKAGE = REPO_ROOT / "src" / "optpatch"
# A file or folder the doc names in backquotes: `passes.py`, `rules/opt103/rule.py`, `reporters/`, `Makefile`.
NAMED = re.compile(r"`(\w[\w./*<>-]*(?:\.(?:py|md|h|json|toml|yml)|/))`")
# Placeholders a step fills in (`rules/<code>/rule.py`), and the files of the walk-through's new rule, OPT104,
# which the scaffold writes (tests/test_scaffold.py checks those).
PLACEHOLDER = re.compile(r"<\w+>|\*")
SCAFFOLDED = ("rules/opt104/", "tests/fixtures/python/opt104/", "tests/fixtures/cpp/opt104/", "docs/rules/OPT104.md")


def named_paths(text: str) -> list[str]:
    return [name for name in NAMED.findall(text) if not PLACEHOLDER.search(name) and not name.startswith(SCAFFOLDED)]


def exists(name: str) -> bool:
    """Relative to the checkout, to src/optpatch/, or (a bare file name) anywhere in the package, rules or tests."""
    name = name.rstrip("/")
    if (REPO_ROOT / name).exists() or (PACKAGE / name).exists():
        return True
    if "/" not in name:
        return any(any(folder.rglob(name)) for folder in (PACKAGE, REPO_ROOT / "rules", REPO_ROOT / "tests"))
    return any(any(folder.rglob(name)) for folder in (PACKAGE, REPO_ROOT / "rules"))


def test_every_file_the_architecture_names_exists():
    names = named_paths(DOC.read_text(encoding="utf-8"))
    assert len(names) > 40, "the doc should name the pipeline's files"
    missing = sorted({name for name in names if not exists(name)})
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"### {title}")
    end = text.find("\n### ", start + 1)
    return text[start:end if end != -1 else None]


def test_the_steps_for_a_new_rule_and_a_new_format_name_real_files():
    rule, output = _section("A new rule"), _section("A new output format")
    for step in ("make new-rule", "rules/opt104/rule.py", "tests/fixtures/python/opt104/", "make docs"):
        assert step in rule, step
    assert "reporters/__init__.py" in output
    for section in (rule, output):
        assert named_paths(section) and all(exists(name) for name in named_paths(section))


def test_the_check_catches_a_file_that_is_gone():
    assert not exists("no_such_stage.py") and exists("passes.py") and exists("rules/opt103/rule.py")
