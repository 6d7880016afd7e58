"""cli.py hands typed values on: it reads a format's capabilities, never its name, and options by field, never by key."""

from __future__ import annotations

import ast

from conftest import REPO_ROOT

from optpatch.command_options import CommandOptions
from optpatch.model import CodeArea, Impact
from optpatch.reporters import ALIASES, FORMATS, output_format

CLI = REPO_ROOT / "src" / "optpatch" / "cli.py"
FORMAT_NAMES = set(FORMATS) | set(ALIASES)


def strings_in(node: ast.AST) -> set[str]:
    return {each.value for each in ast.walk(node) if isinstance(each, ast.Constant) and isinstance(each.value, str)}


def test_cli_compares_no_format_name():
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    compared = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare) and strings_in(node) & FORMAT_NAMES
    ]
    assert not compared, "cli.py checks a format's name; give the format a capability in reporters/__init__.py instead"


def test_cli_looks_no_option_up_by_key():
    tree = ast.parse(CLI.read_text(encoding="utf-8"))
    lookups = [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
            and "options" in ast.unparse(node.value))
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and "options" in ast.unparse(node.func.value))
    ]
    assert not lookups, "cli.py reads an option by key; read the CommandOptions field"


def test_options_are_typed_once():
    options = CommandOptions.from_click({
        "select": ("OPT101, OPT102", "OPT2"), "fix_areas": "library,tests", "min_impact": "high",
        "output_format": "text", "unsafe_fixes": None, "show": ("fixes",),
    })
    assert options.select == ("OPT101", "OPT102", "OPT2")
    assert options.fix_areas == (CodeArea.LIBRARY, CodeArea.TESTS)
    assert options.min_impact is Impact.HIGH
    assert options.output_format is output_format("full") and options.format_name == "text"
    assert options.unsafe_fixes is False and options.show == frozenset({"fixes"})
    assert CommandOptions.from_click({}) == CommandOptions()  # a command without an option gets its one default
