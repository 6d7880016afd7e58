"""Writing `model_patch.diff`: a unified diff that `git apply` takes, byte for byte.

Hunks carry each file's own bytes: its line endings, encoding, BOM and
missing final newline are kept. Only headers are optpatch's own (UTF-8, LF).
Files come in sorted order and hunks in line order, so the same changes
always give the same bytes.

The hunks are those of a unified diff by `difflib` with three lines of
context, but found from the lines the edits touched (`FileChange.blocks`,
aligned by line_diff.py): the cost is the file's length plus the changes,
never a search through the whole file.
"""

from __future__ import annotations

import re
from typing import Iterable

from optpatch.line_diff import Opcode, Tag, opcodes
from optpatch.results import FileChange

CONTEXT_LINES = 3
_LINE = re.compile(rb"[^\n]*\n|[^\n]+\Z")  # git's notion of a line: ends at LF only
_NO_NEWLINE = b"\\ No newline at end of file\n"


def write_patch(changes: Iterable[FileChange], folder: str = "") -> bytes:
    """One patch for many files, in path order; each path under FOLDER ("server": `a/server/pkg/m.py`) when given."""
    ordered = sorted(changes, key=lambda change: change.rel)
    return b"".join(file_diff(change, folder) for change in ordered if change.old != change.new)


def file_diff(change: FileChange, folder: str = "") -> bytes:
    a, b = _LINE.findall(change.old), _LINE.findall(change.new)
    path = f"{folder}/{change.rel}" if folder else change.rel
    old_name, new_name = _quote("a/" + path), _quote("b/" + path)
    out = [b"diff --git %s %s\n--- %s\n+++ %s\n" % (old_name, new_name, old_name, new_name)]
    for hunk in hunks(opcodes(a, b, change.blocks), CONTEXT_LINES):
        first, last = hunk[0], hunk[-1]
        out.append(b"@@ -%s +%s @@\n" % (_range(first.old_start, last.old_end), _range(first.new_start, last.new_end)))
        for tag, i1, i2, j1, j2 in hunk:
            if tag is Tag.EQUAL:
                out.extend(_lines(b" ", a[i1:i2]))
                continue
            out.extend(_lines(b"-", a[i1:i2]))
            out.extend(_lines(b"+", b[j1:j2]))
    return b"".join(out)


def hunks(codes: list[Opcode], context: int) -> list[list[Opcode]]:
    """The opcodes grouped into hunks: each change with up to CONTEXT equal lines either side.

    Two changes share a hunk when at most 2 * CONTEXT equal lines lie
    between them, as in `difflib.SequenceMatcher.get_grouped_opcodes`.
    """
    result: list[list[Opcode]] = []
    current: list[Opcode] = []
    for index, code in enumerate(codes):
        if code.tag is not Tag.EQUAL:
            current.append(code)
            continue
        size = code.old_end - code.old_start
        if current and index < len(codes) - 1 and size <= 2 * context:
            current.append(code)  # joins the changes on either side
            continue
        if current:  # the context after the hunk's last change closes it
            tail = min(size, context)
            current.append(code._replace(old_end=code.old_start + tail, new_end=code.new_start + tail))
            result.append(current)
        if index < len(codes) - 1:  # the context before the next change opens a hunk
            lead = min(size, context)
            current = [code._replace(old_start=code.old_end - lead, new_start=code.new_end - lead)]
        else:
            current = []
    if any(code.tag is not Tag.EQUAL for code in current):
        result.append(current)
    return result


def _lines(prefix: bytes, lines: list[bytes]) -> list[bytes]:
    return [prefix + line if line.endswith(b"\n") else prefix + line + b"\n" + _NO_NEWLINE for line in lines]


def _range(start: int, stop: int) -> bytes:
    """The `start,length` of a hunk header, as `diff -u` and git write it."""
    length = stop - start
    if length == 1:
        return b"%d" % (start + 1)
    return b"%d,%d" % (start + 1 if length else start, length)


def _quote(name: str) -> bytes:
    """Quote a path the way git does when it holds bytes git would not print raw."""
    raw = name.encode("utf-8", "surrogateescape")  # a name that is not UTF-8 keeps its own bytes, as git does
    if not any(byte < 0x20 or byte >= 0x7F or byte in b'"\\' for byte in raw):
        return raw
    escapes = {0x07: b"\\a", 0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0B: b"\\v",
               0x0C: b"\\f", 0x0D: b"\\r", 0x22: b'\\"', 0x5C: b"\\\\"}
    body = b"".join(
        escapes.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte >= 0x7F else bytes([byte])) for byte in raw
    )
    return b'"' + body + b'"'
