"""How often python_layout lays real statements out as black or ruff does, before and after a keyword is added.

Takes the simple statements holding a call from the Python files of a tree
(a field repository), lets the formatter lay them out at a given depth and
line length, and counts, per formatter:

- reproduced: python_layout gives the formatter's layout of the statement
  (python_edits then lays the edited statement out; otherwise it keeps the
  statement's own layout);
- differs: python_layout gives another layout (the same fallback; a black
  statement here would be a bug);
- refused: outside python_layout's subset (`Unsupported`);
- edits right / wrong: a keyword added to one of the reproduced statement's
  calls, laid out by python_layout, against the formatter's layout of the
  edited statement. Every wrong edit is a formatter regression optpatch
  would cause.

    python benchmarks/layout_agreement.py /work/field/NeMo --formatter black --line-length 119
    python benchmarks/layout_agreement.py /work/field/ao --formatter ruff --ruff /path/to/ruff

black is imported from this environment; ruff is the executable given.
"""

from __future__ import annotations

import argparse
import ast
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from optpatch.python_layout import Dialect, LayoutStyle, Unsupported, layout_statement  # noqa: E402

STATEMENTS = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--formatter", choices=("black", "black-22", "ruff"), default="black")
    parser.add_argument("--ruff", default="ruff", help="the ruff executable")
    parser.add_argument("--line-length", type=int, default=88)
    parser.add_argument("--skip-magic-trailing-comma", action="store_true")
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--limit", type=int, default=3000, help="statements to take")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=0, help="print this many wrong edits")
    args = parser.parse_args()
    chooser = random.Random(args.seed)
    paths = sorted(args.tree.rglob("*.py"))
    chooser.shuffle(paths)
    statements = _statements(paths, args.limit)
    magic = not args.skip_magic_trailing_comma
    style = LayoutStyle(Dialect(args.formatter), args.line_length, magic)

    def formatted(texts: list[str]) -> list[str | None]:
        return _split(_format(_module(texts, args.depth), args), args.depth, len(texts))

    counts = dict.fromkeys(("statements", "reproduced", "differs", "refused", "edits right", "edits wrong"), 0)
    edited, wrong = [], []
    for statement in formatted(statements):
        if statement is None:
            continue
        counts["statements"] += 1
        try:
            laid_out = layout_statement(statement, args.depth, style)
        except Unsupported:
            counts["refused"] += 1
            continue
        if laid_out != statement:
            counts["differs"] += 1
            continue
        counts["reproduced"] += 1
        added = _added_keyword(statement, chooser)
        if added is not None:
            edited.append(added)
    for statement, wanted in zip(edited, formatted(edited)):
        try:
            got = layout_statement(statement, args.depth, style)
        except Unsupported:
            continue
        key = "edits right" if got == wanted else "edits wrong"
        counts[key] += 1
        if got != wanted:
            wrong.append((statement, got, wanted))
    print(f"| {args.tree.name} | {args.formatter} | {args.line_length} | "
          + " | ".join(str(value) for value in counts.values()) + " |")
    for statement, got, wanted in wrong[: args.show]:
        print(f"\n{statement}\n-- python_layout --\n{got}\n-- {args.formatter} --\n{wanted}")
    return 0


def _statements(paths: list[Path], limit: int) -> list[str]:
    found = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, STATEMENTS) and any(isinstance(n, ast.Call) for n in ast.walk(node)):
                segment = ast.get_source_segment(text, node)
                if segment:
                    found.append(segment)
                    if len(found) >= limit:
                        return found
    return found


def _module(statements: list[str], depth: int) -> str:
    parts = []
    for index, statement in enumerate(statements):
        header = f"def case_{index}():\n" + "".join("    " * level + "if x:\n" for level in range(1, depth))
        parts.append(header + textwrap.indent(statement, "    " * depth) + "\n")
    return "\n\n".join(parts)


def _split(module: str, depth: int, count: int) -> list[str | None]:
    found: list[str | None] = [None] * count
    for chunk in re.split(r"^def case_", module, flags=re.M)[1:]:
        number, _, rest = chunk.partition("(")
        body = "\n".join(rest.split("\n")[depth:]).rstrip("\n").split("\n\n")[0]
        if body.startswith(" " * 4 * depth):
            found[int(number)] = body[4 * depth :]
    return found


def _format(module: str, args) -> str:
    if args.formatter.startswith("black"):
        import black

        mode = black.Mode(line_length=args.line_length, magic_trailing_comma=not args.skip_magic_trailing_comma,
                          string_normalization=False, target_versions={black.TargetVersion.PY310})
        return black.format_str(module, mode=mode)
    command = [args.ruff, "format", "--no-cache", "--line-length", str(args.line_length), "--target-version", "py310",
               "--config", "format.quote-style='preserve'", "-"]
    if args.skip_magic_trailing_comma:
        command[-1:-1] = ["--config", "format.skip-magic-trailing-comma=true"]
    return subprocess.run(command, input=module, capture_output=True, text=True, check=True).stdout


def _added_keyword(statement: str, chooser: random.Random) -> str | None:
    """The statement with `optpatch_added=self.device` after the last argument of one of its calls."""
    try:
        tree = ast.parse(statement)
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
    edited = "\n".join(lines)
    try:
        ast.parse(edited)
    except SyntaxError:
        return None
    return edited


if __name__ == "__main__":
    sys.exit(main())
