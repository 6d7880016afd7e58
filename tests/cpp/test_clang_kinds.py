"""Every cursor or type kind the C++ frontend and rules compare by name is a kind libclang's bindings have.

They compare `kind.name` strings (`"VAR_DECL"`, `"VARIABLEARRAY"`): a kind renamed or dropped in a new
libclang-ng would otherwise match nothing, silently, and change findings. libclang-ng is capped to the tested
major (pyproject.toml); this keeps a misspelt or vanished name from passing unnoticed within it.
"""

from __future__ import annotations

import re
from pathlib import Path

import clang.cindex as cindex

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "src" / "optpatch" / "cpp_frontend.py", *sorted((ROOT / "rules").glob("opt2*/*.py"))]
# A string literal of capitals on a line that speaks of a kind (`.kind ==`, `kind.name in`, `_KINDS = frozenset(`).
NAME = re.compile(r'"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)"')
KIND_LINE = re.compile(r"kind|KINDS|_ATTRIBUTES")


def _kind_names(path: Path) -> set[str]:
    names, inside = set(), False
    for line in path.read_text().splitlines():
        if KIND_LINE.search(line) or inside:
            names.update(NAME.findall(line))
        stripped = line.rstrip()
        if re.search(r"_(KINDS|ATTRIBUTES) = frozenset\(\{$", stripped):
            inside = True
        elif inside and stripped.endswith("})"):
            inside = False
    return names


def test_every_kind_compared_by_name_exists_in_the_bindings():
    known = {kind.name for kind in cindex.CursorKind} | {kind.name for kind in cindex.TypeKind}
    assert {path.parent.name for path in FILES if _kind_names(path)} >= {"optpatch", "opt201", "opt202", "opt203"}
    for path in FILES:
        names = _kind_names(path)
        assert names <= known, f"{path.name}: not a libclang cursor or type kind: {sorted(names - known)}"
