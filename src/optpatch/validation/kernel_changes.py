"""Which bundled kernels the rewrite changed: `optpatch validate` marks the others unchanged.

A kernel's timing runs its binding's host function and whatever that calls,
so a kernel counts as changed when any function it reaches, by name, reads
differently in the two trees' C++/CUDA sources. The sources are split into
their top-level definitions (a line at column 0 naming a function, up to
its closing brace); text outside them (includes, declarations) that differs
other than by an `#include` makes every kernel changed, and so does a kernel
whose definition cannot be found: "unchanged" is claimed only where it is
shown.
"""

from __future__ import annotations

import re
from pathlib import Path

SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp")
_DEFINITION = re.compile(r"^(?!(?:namespace|struct|class|enum|union|if|for|while|switch|return)\b)"
                         r"[A-Za-z_][^;{}()#=]*?\b([A-Za-z_]\w*)\s*\(", re.MULTILINE)
_NAME = re.compile(r"[A-Za-z_]\w*")
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*(?:\n|$)", re.MULTILINE)


def definitions(text: str) -> tuple[dict[str, str], str]:
    """(name -> the text of its definitions, the text outside every definition) of one source."""
    found: dict[str, str] = {}
    outside, position = [], 0
    for match in _DEFINITION.finditer(text):
        if match.start() < position:
            continue  # inside the definition before
        end = _definition_end(text, match.end())
        if end is None:
            continue  # a declaration
        outside.append(text[position:match.start()])
        found[match.group(1)] = found.get(match.group(1), "") + text[match.start():end]
        position = end
    outside.append(text[position:])
    return found, "".join(outside)


def _definition_end(text: str, after_name: int) -> int | None:
    """The end of the body whose `{` comes before any `;` after the name, or None for a declaration."""
    body = re.compile(r"[{;]").search(text, after_name)
    if body is None or body.group() == ";":
        return None
    depth = 0
    for index in range(body.start(), len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


def _sources(tree: Path) -> dict[str, str]:
    return {str(path.relative_to(tree)): path.read_text(encoding="utf-8", errors="replace")
            for path in sorted(tree.rglob("*")) if path.suffix in SOURCE_SUFFIXES and path.is_file()}


def _read(tree: Path) -> tuple[dict[str, str], dict[str, str]]:
    functions: dict[str, str] = {}
    outside: dict[str, str] = {}
    for rel, text in _sources(tree).items():
        found, rest = definitions(text)
        for name, body in found.items():
            functions[name] = functions.get(name, "") + body
        outside[rel] = _INCLUDE.sub("", rest)
    return functions, outside


def changed_kernels(original: Path, patched: Path, kernels: set[str]) -> dict[str, bool]:
    """Each kernel name -> whether the rewrite changed host code it runs (ORIGINAL and PATCHED: the csrc folders)."""
    before, outside_before = _read(original)
    after, outside_after = _read(patched)
    if outside_before != outside_after:
        return {kernel: True for kernel in kernels}
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    return {kernel: kernel not in before or bool(_reached(kernel, before) & changed) for kernel in kernels}


def _reached(kernel: str, functions: dict[str, str]) -> set[str]:
    """KERNEL and every function its definition names, and theirs in turn."""
    reached, frontier = {kernel}, [kernel]
    while frontier:
        for name in set(_NAME.findall(functions.get(frontier.pop(), ""))) & functions.keys():
            if name not in reached:
                reached.add(name)
                frontier.append(name)
    return reached
