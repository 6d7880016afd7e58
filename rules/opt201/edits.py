"""The rewrite's edits: the declaration becomes `std::vector<T> name(bound);` (laid out within a
`.clang-format`'s column limit), each decayed use `name.data()`, and `#include <vector>` is added once.
"""

from __future__ import annotations

from optpatch.rule import Edit
from optpatch.rule.cpp import CppUnit, Node, statement_lines

from .uses import Use


def rewrite(unit: CppUnit, declaration: Node, element: str, bound_text: str, uses: list[Use]) -> tuple[list[Edit], str]:
    """The edits of the rewrite (the declaration, each decayed use, the include) and the new declaration's text."""
    replacement = f"std::vector<{element}> {declaration.spelling}({bound_text})"
    edits = [_declaration_edit(unit, declaration, replacement)]
    edits += [use.edit for use in uses if use.edit is not None]
    include = unit.include_edit("vector")
    if include is not None:
        edits.append(include)
    return edits, replacement + ";"


def _declaration_edit(unit: CppUnit, declaration: Node, replacement: str) -> Edit:
    """The declaration rewritten; with a .clang-format, its statement kept within the column limit."""
    text = unit.source.text
    line_start = text.rfind("\n", 0, declaration.start) + 1
    indentation = text[line_start : declaration.start]
    if not unit.style.column_limit or indentation.strip() or text[declaration.end : declaration.end + 1] != ";":
        return Edit(declaration.start, declaration.end, replacement)
    line_end = text.find("\n", declaration.end)
    trailing = text[declaration.end + 1 : len(text) if line_end < 0 else line_end].rstrip("\r")
    laid_out = statement_lines(replacement + ";", indentation, unit.style, unit.newline(), trailing)
    return Edit(declaration.start, declaration.end + 1, laid_out)
