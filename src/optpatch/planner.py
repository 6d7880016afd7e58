"""Choosing which fixes to apply, and applying them to a file's text.

A fix is all of its edits or none of them. Fixes are taken in a fixed order
(position, then rule code), so the outcome never depends on the order rules
ran in or on --jobs; a fix that overlaps one already taken waits for the next
round, when it is re-derived from the rewritten text (see engine).
"""

from __future__ import annotations

from typing import Callable, Iterable

from optpatch.model import Edit, Finding


def plan_edits(findings: Iterable[Finding], refuse: Callable[[Finding], str | None]) -> list[Edit]:
    """Mark each fix applied or not (with why), and return the accepted edits in order.

    `refuse(finding)` returns the reason a fix must not be applied in this
    run (its tier, a flag), or None.
    """
    taken: list[Edit] = []
    for finding in sorted((f for f in findings if f.fixable), key=_fix_order):
        reason = refuse(finding)
        if reason is None and any(_conflicts(edit, other) for edit in finding.edits for other in taken):
            reason = "overlaps another fix; re-examined on the next pass"
        finding.applied = reason is None
        finding.not_applied_because = reason or ""
        if finding.applied:
            taken.extend(e for e in finding.edits if e not in taken)
    return sorted(taken)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits; offsets refer to the original text."""
    pieces, cursor = [], 0
    for edit in sorted(edits):
        pieces.append(text[cursor : edit.start])
        pieces.append(edit.text)
        cursor = edit.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def _fix_order(finding: Finding) -> tuple:
    first = min((e.start for e in finding.edits), default=0)
    return (first, finding.code, finding.line, finding.col)


def _conflicts(a: Edit, b: Edit) -> bool:
    if a == b:
        return False  # the same edit offered twice (an import two fixes need) is one edit
    if a.start == a.end and b.start == b.end:
        return a.start == b.start  # two insertions at one point: their order would be a guess
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def preview(text: str, start: int, end: int, edits: list[Edit]) -> str:
    """text[start:end] with the edits inside it applied, on one line: a finding's `replacement`."""
    inside = [Edit(e.start - start, e.end - start, e.text) for e in edits if start <= e.start and e.end <= end]
    return " ".join(apply_edits(text[start:end], inside).split())
