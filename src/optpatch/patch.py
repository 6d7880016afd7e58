"""Writing `model_patch.diff`: a unified diff that `git apply` takes, byte for byte.

Hunks carry each file's own bytes: its line endings, encoding, BOM and
missing final newline are kept. Only headers are optpatch's own (UTF-8, LF).
Files come in sorted order and hunks in line order, so the same changes
always give the same bytes.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable

CONTEXT_LINES = 3
_LINE = re.compile(rb"[^\n]*\n|[^\n]+\Z")  # git's notion of a line: ends at LF only
_NO_NEWLINE = b"\\ No newline at end of file\n"


def write_patch(changes: Iterable[tuple[str, bytes, bytes]]) -> bytes:
    """One patch for many files: `changes` holds (relative path, old bytes, new bytes)."""
    return b"".join(file_diff(rel, old, new) for rel, old, new in sorted(changes) if old != new)


def file_diff(rel: str, old: bytes, new: bytes) -> bytes:
    a, b = _LINE.findall(old), _LINE.findall(new)
    old_name, new_name = _quote("a/" + rel), _quote("b/" + rel)
    out = [b"diff --git %s %s\n--- %s\n+++ %s\n" % (old_name, new_name, old_name, new_name)]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        out.append(b"@@ -%s +%s @@\n" % (_range(first[1], last[2]), _range(first[3], last[4])))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_lines(b" ", a[i1:i2]))
                continue
            out.extend(_lines(b"-", a[i1:i2]))
            out.extend(_lines(b"+", b[j1:j2]))
    return b"".join(out)


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
