"""python_layout lays statements out as black 24 and ruff 0.11 / 0.12 do, checked against the formatters themselves.

A seeded generator writes statements of the shapes optpatch's edits land
in: assignments, returns, calls with positional and keyword arguments,
nested calls, subscripts, tuples and lists, method chains, arithmetic,
conditional expressions, trailing commas and trailing comments, at several
depths and line lengths. Each formatter lays them out (one run for a batch);
then, for every statement:

- python_layout reproduces black's layout exactly or refuses the statement
  (`Unsupported`), never a third answer; ruff's it reproduces nearly always,
  and where it does not, python_edits keeps the statement's own layout;
- a keyword added to one of its calls (what OPT102 and OPT103 do) and laid
  out by python_layout is exactly what the formatter makes of the edited
  statement, wherever python_layout reproduced the original.

Most statements must be reproduced, so that the checks are not vacuous.
"""

from __future__ import annotations

import ast
import keyword
import random
import re
import subprocess
import textwrap

import black as black_module
import pytest

from formatters import ruff
from optpatch.python_layout import Dialect, LayoutStyle, Unsupported, layout_statement

STATEMENTS = 300
SUPPORTED_AT_LEAST = 0.7


class _Generator:
    """Random statements, one line each, of the shapes optpatch edits."""

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def name(self) -> str:
        text = "".join(self.random.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(self.random.randint(1, 24)))
        text = text.strip("_") or "x"
        return text + "_" if keyword.iskeyword(text) else text

    def atom(self, depth: int) -> str:
        choice = self.random.random()
        if depth > 1 or choice < 0.35:
            return self.random.choice([self.name(), str(self.random.randint(0, 9999)), f'"{self.name()}"',
                                       f"{self.name()}.{self.name()}", "None", f"-{self.random.randint(1, 99)}"])
        if choice < 0.6:
            return self.call(depth + 1)
        if choice < 0.7:
            return f"{self.name()}[{self.atom(depth + 1)}]"
        if choice < 0.8:
            return "(" + ", ".join(self.atom(depth + 1) for _ in range(self.random.randint(2, 4))) + ")"
        if choice < 0.9:
            return "[" + ", ".join(self.atom(depth + 1) for _ in range(self.random.randint(1, 4))) + "]"
        return f"{self.atom(depth + 1)} {self.random.choice(['+', '*', '-', '//'])} {self.atom(depth + 1)}"

    def call(self, depth: int) -> str:
        callee = self.random.choice([self.name(), f"torch.{self.name()}", f"{self.name()}.{self.name()}.{self.name()}"])
        arguments = [self.atom(depth) for _ in range(self.random.randint(0, 3))]
        arguments += [f"{self.name()}={self.atom(depth)}" for _ in range(self.random.randint(0, 2))]
        comma = "," if arguments and self.random.random() < 0.15 else ""
        text = f"{callee}({', '.join(arguments)}{comma})"
        if self.random.random() < 0.25:
            text += f".{self.random.choice(['to', 'view', 'cuda'])}({self.atom(depth + 1) if self.random.random() < 0.7 else ''})"
        return text

    def value(self) -> str:
        choice = self.random.random()
        if choice < 0.1:
            return f"{self.call(0)} if {self.name()} else {self.atom(1)}"
        if choice < 0.2:
            return f"{self.call(0)} * {self.atom(1)}"
        return self.call(0)

    def statement(self) -> str:
        choice = self.random.random()
        if choice < 0.45:
            text = f"{self.random.choice([self.name(), f'self.{self.name()}', f'{self.name()}[{self.name()}]'])} = {self.value()}"
        elif choice < 0.6:
            text = f"return {self.value()}"
        elif choice < 0.7:
            text = f"{self.name()}: torch.Tensor = {self.value()}"
        elif choice < 0.75:
            text = f"{self.name()}, {self.name()} = {self.call(0)}, {self.call(0)}"
        else:
            text = self.call(0)
        if self.random.random() < 0.1:
            text += "  # " + self.name()
        return text


def _batch(statements: list[str], depth: int) -> str:
    """A module holding each statement `depth` levels deep in a function of its own."""
    parts = []
    for index, statement in enumerate(statements):
        header = f"def case_{index}():\n" + "".join("    " * level + "if x:\n" for level in range(1, depth))
        parts.append(header + textwrap.indent(statement, "    " * depth) + "\n")
    return "\n\n".join(parts)


def _statements_of(module: str, depth: int) -> list[str]:
    """Each function's statement back from the formatted module, its first line without indentation."""
    found = []
    for chunk in re.split(r"^def case_\d+\(\):\n", module, flags=re.M)[1:]:
        body = "\n".join(chunk.split("\n")[depth - 1 :]).strip("\n")
        found.append(body[4 * depth :])
    return found


def _added_keyword(statement: str, chooser: random.Random) -> str | None:
    """The statement with `optpatch_added=value` after the last argument of one of its calls."""
    try:
        tree = ast.parse(textwrap.dedent(statement) if "\n" not in statement else statement)
    except SyntaxError:
        return None
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and (node.args or node.keywords)
             and not any(isinstance(arg, ast.GeneratorExp) for arg in node.args)]
    if not calls:
        return None
    call = chooser.choice(calls)
    last = max(call.args + call.keywords, key=lambda node: (node.end_lineno, node.end_col_offset))
    lines = statement.split("\n")
    line = lines[last.end_lineno - 1]
    column = len(line.encode()[: last.end_col_offset].decode())
    lines[last.end_lineno - 1] = line[:column] + ", optpatch_added=self.device" + line[column:]
    return "\n".join(lines)


class _Formatter:
    def __init__(self, name: str, line_length: int, magic_trailing_comma: bool):
        self.name, self.line_length, self.magic = name, line_length, magic_trailing_comma

    @property
    def style(self) -> LayoutStyle:
        return LayoutStyle(Dialect.BLACK if self.name == "black" else Dialect.RUFF, self.line_length, self.magic)

    def format(self, module: str) -> str:
        if self.name == "black":
            mode = black_module.Mode(line_length=self.line_length, magic_trailing_comma=self.magic,
                                     string_normalization=False, target_versions={black_module.TargetVersion.PY310})
            return black_module.format_str(module, mode=mode)
        command = [str(ruff(self.name.split()[1])), "format", "--no-cache", "--line-length", str(self.line_length),
                   "--target-version", "py310", "--config", "format.quote-style='preserve'", "-"]
        if not self.magic:
            command[-1:-1] = ["--config", "format.skip-magic-trailing-comma=true"]
        run = subprocess.run(command, input=module, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout


CONFIGURATIONS = [
    ("black", 88, True, 1, 1), ("black", 60, True, 2, 2), ("black", 100, False, 2, 3), ("black", 40, True, 3, 4),
    ("ruff 0.12", 88, True, 1, 5), ("ruff 0.12", 80, True, 2, 6), ("ruff 0.12", 100, False, 2, 7),
    ("ruff 0.11", 88, True, 2, 8), ("ruff 0.11", 80, True, 1, 9),
]


@pytest.mark.parametrize("formatter, line_length, magic, depth, seed", CONFIGURATIONS,
                         ids=[f"{c[0]}-{c[1]}{'' if c[2] else '-skip-magic'}-depth{c[3]}" for c in CONFIGURATIONS])
def test_layout_matches_the_formatter(formatter, line_length, magic, depth, seed):
    generator = _Generator(seed)
    tool = _Formatter(formatter, line_length, magic)
    originals = _statements_of(tool.format(_batch([generator.statement() for _ in range(STATEMENTS)], depth)), depth)
    wrong, reproduced, edited = [], [], []
    chooser = random.Random(seed)
    for statement in originals:
        try:
            laid_out = layout_statement(statement, depth, tool.style)
        except Unsupported:
            continue
        if laid_out != statement:
            # python_edits keeps such a statement's own layout; black's are all reproduced, ruff's nearly all
            if formatter == "black":
                wrong.append(f"reproducing:\n{statement}\n-- laid out as --\n{laid_out}")
            continue
        reproduced.append(statement)
        added = _added_keyword(statement, chooser)
        if added is not None:
            edited.append(added)
    expected = _statements_of(tool.format(_batch(edited, depth)), depth)
    for statement, wanted in zip(edited, expected):
        try:
            got = layout_statement(statement, depth, tool.style)
        except Unsupported:
            continue
        if got != wanted:
            wrong.append(f"edited:\n{statement}\n-- laid out as --\n{got}\n-- {formatter} --\n{wanted}")
    assert not wrong, f"{len(wrong)} statement(s) laid out otherwise than {formatter}:\n\n" + "\n\n".join(wrong[:40])
    assert len(reproduced) >= SUPPORTED_AT_LEAST * len(originals), (len(reproduced), len(originals))
    assert len(edited) >= len(reproduced) // 2
