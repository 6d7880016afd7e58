"""optpatch's edits pass the project's formatter check: black 24, ruff 0.11 and 0.12, with their settings.

Each directory under tests/fixtures/formatting is a small project: a
formatter configuration (pyproject.toml, ruff.toml, or a pre-commit hook
with arguments) and `shapes.py`, formatted by that formatter, holding the
shapes an edit meets: a call that stays on one line, one that grows past the
limit, calls exploded with and without a trailing comma, comments inside a
call, nested calls, chained moves, the two-statement form, a call in an
expression, a `.cuda()` that becomes a string literal, and a bare `zeros`
whose import gains `empty`. For each project and each formatter it uses:

- the formatter accepts `shapes.py` as it is;
- optpatch (the engine, as `apply` runs it) applies every fix;
- the formatter accepts the rewritten file;
- every `case_*` gives the same results before and after, under poisoned memory;
- the string literal the edit wrote has the quotes the project asks for.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from annotated import assert_same_behaviour
from cuda_on_cpu import CudaOnCpu
from formatters import Check
from optpatch.config import Settings
from optpatch.engine import run
from optpatch.policy import FixPolicy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formatting"
BLACK, RUFF = Check("black"), [Check("ruff 0.11"), Check("ruff 0.12")]
# Each project, the checks its configuration implies (a hook's arguments repeated, as pre-commit passes them),
# and the quote an edit's string literal must take.
PROJECTS = {
    "black_default": ([BLACK], '"'),
    "black_hook_arguments": ([Check("black", ("--line-length=72", "--skip-magic-trailing-comma"))], '"'),
    "black_preserved_quotes": ([BLACK], "'"),
    "quote_fixer": ([Check("black", ("--skip-string-normalization",))], "'"),
    "ruff_toml": (RUFF, '"'),
    "ruff_single_quotes": (RUFF, "'"),
    "ruff_hook_arguments": ([Check(c.name, ("--line-length=64",)) for c in RUFF], '"'),
}
FIXES = 12  # the sites of shapes.py: 11 OPT102 fixes and one OPT101
CASES = [(name, check) for name, (checks, _) in PROJECTS.items() for check in checks]


def test_every_project_is_checked():
    assert sorted(PROJECTS) == sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """(before, after) of shapes.py for each project, rewritten by the engine in a copy."""
    found = {}
    for name in PROJECTS:
        copy = tmp_path_factory.mktemp(name) / name
        shutil.copytree(FIXTURES / name, copy)
        result = run(copy, Settings(), FixPolicy(), jobs=1, use_cache=False)
        applied = [f for f, decision in result.decided if decision.accepted]
        assert len(applied) == FIXES, (name, [f"{f.location()} {f.code}" for f in applied])
        (file,) = result.changes
        found[name] = (file.old.decode(), file.new.decode())
    return found


@pytest.mark.parametrize("name, check", CASES, ids=[f"{n}-{c}" for n, c in CASES])
def test_the_formatter_accepts_the_file_before_and_after(name, check, rewritten, tmp_path):
    before, after = rewritten[name]
    copy = tmp_path / name
    shutil.copytree(FIXTURES / name, copy)
    assert check.passes(copy / "shapes.py"), f"{check} rejects the fixture itself: reformat it"
    (copy / "shapes.py").write_text(after, encoding="utf-8")
    assert check.passes(copy / "shapes.py"), f"{check} rejects the rewrite:\n{after}"


@pytest.mark.parametrize("name", PROJECTS)
def test_the_rewrite_behaves_as_the_original(name, rewritten):
    before, after = rewritten[name]
    assert_same_behaviour(before, after, f"formatting-{name}", environment=CudaOnCpu)


@pytest.mark.parametrize("name", PROJECTS)
def test_the_literal_takes_the_projects_quotes(name, rewritten):
    _, after = rewritten[name]
    quote = PROJECTS[name][1]
    assert f"device={quote}cuda{quote}" in after


@pytest.mark.parametrize("name", PROJECTS)
def test_a_second_run_changes_nothing(name, rewritten, tmp_path):
    copy = tmp_path / name
    shutil.copytree(FIXTURES / name, copy)
    (copy / "shapes.py").write_text(rewritten[name][1], encoding="utf-8")
    assert run(copy, Settings(), FixPolicy(), jobs=1, use_cache=False).changes == []
