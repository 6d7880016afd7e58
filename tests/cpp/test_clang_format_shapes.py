"""OPT201's and OPT202's rewrites stay clean under the project's clang-format, and compile to the same program.

Each directory under tests/fixtures/formatting_cpp holds a `.clang-format`
(Google at 80 columns; LLVM at 100 with four-space indents and one argument
per line; Google with `AlignAfterOpenBracket: AlwaysBreak`) and copies.cpp
formatted by it, with short and long OPT202 copies, one under a device
guard, and an OPT201 array. For each: clang-format accepts the file before
and after optpatch's rewrite, every fix applies, and the rewrite, compiled
against the torch stand-in (tests/fixtures/cpp/stubs), prints what the
original prints.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cpp_fixtures import build_and_run
from formatters import clang_format
from optpatch.config import Settings
from optpatch.engine import run
from optpatch.policy import FixPolicy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "formatting_cpp"
STYLES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
FIXES = 4  # three OPT202 copies and one OPT201 array


def _clean(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(clang_format()), "--dry-run", "-Werror", path.name], cwd=path.parent,
                          capture_output=True, text=True)


@pytest.mark.parametrize("style", STYLES)
def test_the_rewrite_stays_clean_and_behaves_the_same(style, tmp_path):
    copy = tmp_path / style
    shutil.copytree(FIXTURES / style, copy)
    source = copy / "copies.cpp"
    checked = _clean(source)
    assert checked.returncode == 0, f"clang-format rejects the fixture itself: reformat it\n{checked.stderr}"
    result = run(copy, Settings(), FixPolicy(), jobs=1, use_cache=False)
    accepted = [f.location() for f, decision in result.decided if decision.accepted]
    assert len(accepted) == FIXES, accepted
    (change,) = result.changes
    source.write_bytes(change.new)
    checked = _clean(source)
    assert checked.returncode == 0, f"clang-format rejects the rewrite:\n{checked.stderr}"
    before = build_and_run(FIXTURES / style / "copies.cpp", change.old, tmp_path, "before")
    after = build_and_run(FIXTURES / style / "copies.cpp", change.new, tmp_path, "after")
    assert before.output and after.output == before.output
