"""Cursors and types are told apart by libclang's enums, never by the names of their kinds.

`Node.kind` is a `CursorKind` and `Node.type_kind` a `TypeKind`; the frontend and the rules compare them by
member (`node.kind is CursorKind.CALL_EXPR`, frozensets of members), which the rule API re-exports. A kind
renamed or dropped in a new libclang-ng then fails at import (an AttributeError), where a name string would
have matched nothing, silently, and changed findings.
"""

from __future__ import annotations

import ast
from pathlib import Path

import clang.cindex as cindex

import optpatch.rule.cpp as rule_cpp
from optpatch.cpp_frontend import CppUnit
from optpatch.source import SourceFile

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    *sorted((ROOT / "src" / "optpatch").glob("cpp_*.py")), *sorted((ROOT / "src" / "optpatch" / "rule").glob("*.py")),
    *sorted((ROOT / "rules").glob("opt2*/*.py")), *sorted((ROOT / "benchmarks").glob("*.py")),
]
KIND_NAMES = {kind.name for kind in cindex.CursorKind} | {kind.name for kind in cindex.TypeKind}
KIND_ATTRIBUTES = {"kind", "type_kind"}


def _is_kind(node: ast.expr) -> bool:
    """`x.kind` or `x.type_kind`: a cursor's, a type's or a node's kind."""
    return isinstance(node, ast.Attribute) and node.attr in KIND_ATTRIBUTES


def _name_of_kind(node: ast.expr) -> bool:
    """`x.kind.name`, or a string method called on a kind (`x.kind.endswith`)."""
    return isinstance(node, ast.Attribute) and _is_kind(node.value) and (
        node.attr == "name" or hasattr(str, node.attr)
    )


def _kinds_by_name(name: str, code: str) -> list[str]:
    """Where `code` names a kind in a string or compares a kind's name: `"CALL_EXPR"`, `kind.name == ...`."""
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Constant) and node.value in KIND_NAMES:
            found.append(f"{name}:{node.lineno}: the string {node.value!r}")
        elif isinstance(node, ast.Compare) and any(_name_of_kind(side) for side in (node.left, *node.comparators)):
            found.append(f"{name}:{node.lineno}: a kind compared by its name")
        elif isinstance(node, ast.Call) and _name_of_kind(node.func) and node.func.attr != "name":
            found.append(f"{name}:{node.lineno}: `.{node.func.attr}` of a kind")
    return found


def test_no_kind_is_named_by_a_string_in_the_frontend_the_rules_or_the_benchmarks():
    assert {path.parent.name for path in FILES} >= {"optpatch", "rule", "opt201", "opt202", "opt203", "benchmarks"}
    found = [where for path in FILES for where in _kinds_by_name(path.name, path.read_text())]
    assert not found, "compare kinds by CursorKind/TypeKind member:\n" + "\n".join(found)


def test_the_check_sees_each_way_a_kind_was_named():
    source = """
LOOPS = frozenset({"FOR_STMT"})
def f(node, cursor):
    return (node.kind == "CALL_EXPR" or cursor.type.kind.name in LOOPS or node.type_kind != "POINTER"
            or node.kind.endswith("_ATTR"))
"""
    found = sorted(where.split(": ", 1)[1] for where in _kinds_by_name("old.py", source))
    assert found == [
        "`.endswith` of a kind", "a kind compared by its name", "the string 'CALL_EXPR'", "the string 'FOR_STMT'",
        "the string 'POINTER'",
    ]


def test_a_node_kind_is_a_cursor_kind_and_its_type_kind_a_type_kind():
    code = "int f(int n) { float a[n]; return sizeof(a) > 0; }\n"
    unit = CppUnit(SourceFile("k.cpp", Path("k.cpp"), code.encode(), code, "utf-8", False, "cpp"))
    (array,) = [node for node in unit.nodes if node.kind is rule_cpp.CursorKind.VAR_DECL]
    assert array.type_kind is rule_cpp.TypeKind.VARIABLEARRAY
    assert all(isinstance(node.kind, cindex.CursorKind) for node in unit.nodes)
    assert all(isinstance(node.type_kind, cindex.TypeKind) for node in unit.nodes)
    assert (rule_cpp.CursorKind, rule_cpp.TypeKind) == (cindex.CursorKind, cindex.TypeKind)
