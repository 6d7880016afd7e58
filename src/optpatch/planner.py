"""Choosing which fixes to apply, and applying them to a file's text.

A fix is all of its edits or none of them. Fixes are taken in a fixed order
(position, then rule code), so the outcome never depends on the order rules
ran in or on --jobs; a fix that overlaps one already taken is held back
(`Hold.OVERLAP`) and re-derived from the rewritten text on the next pass
(passes.py).

Edits already taken are kept sorted, so a new edit is compared only with
its neighbours: planning costs O(n log n) in the number of edits, not a
comparison of every pair.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Callable, Sequence

from optpatch.model import Decided, Decision, Edit, Finding, Hold, Refusal

# Decisions are values: the common two are shared, not built once per finding.
_IN_SCOPE = Decision()
_ACCEPTED = Decision(accepted=True)


def plan_edits(findings: Sequence[Finding], out_of_scope: Sequence[str | None],
               refuse: Callable[[Finding], Refusal | None]) -> tuple[list[Decided], list[Edit]]:
    """Each finding with this run's decision (its fix accepted, or refused and why), and the accepted edits in order.

    `out_of_scope[i]` says why narrowing leaves `findings[i]` out, or is None;
    such a fix is refused (`Hold.OUT_OF_SCOPE`). `refuse(finding)` returns why
    the policy must not apply a fix in this run (its tier, its area), or None.
    """
    decisions = [_IN_SCOPE if why is None else Decision(out_of_scope=why) for why in out_of_scope]
    taken = _TakenEdits()
    for index in sorted((i for i, f in enumerate(findings) if f.fix is not None), key=lambda i: _fix_order(findings[i])):
        finding, why = findings[index], out_of_scope[index]
        refusal = Refusal(Hold.OUT_OF_SCOPE, why) if why is not None else refuse(finding)
        if refusal is None and any(taken.conflicts(edit) for edit in finding.fix.edits):
            refusal = Refusal(Hold.OVERLAP)
        if refusal is not None:
            decisions[index] = Decision(out_of_scope=why, refusal=refusal)
            continue
        decisions[index] = _ACCEPTED
        for edit in finding.fix.edits:
            taken.add(edit)
    return list(map(Decided, findings, decisions)), taken.edits



class _TakenEdits:
    """Edits accepted so far, sorted; none conflicts with another."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []

    def add(self, edit: Edit) -> None:
        index = bisect_left(self.edits, edit)
        if index == len(self.edits) or self.edits[index] != edit:  # the same edit offered twice is one edit
            insort(self.edits, edit)

    def conflicts(self, edit: Edit) -> bool:
        """Whether `edit` conflicts with a taken one: only neighbours by position can.

        Taken edits are disjoint, so at most the two that start before
        `edit.start` can reach into it, and every one that starts inside it
        conflicts, ending the scan at once.
        """
        index = bisect_left(self.edits, Edit(edit.start, edit.start, ""))
        for other in self.edits[max(0, index - 2):]:
            if other.start > edit.end:
                return False
            if _conflicts(edit, other):
                return True
        return False


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
    first = min((e.start for e in finding.fix.edits), default=0)
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
    """text[start:end] with the edits that touch it applied, on one line: a finding's `replacement`.

    An edit that reaches past the window (a statement laid out again over
    whole lines, python_edits.py) widens it; what the edit keeps of the text
    on either side of the window is then left out again.
    """
    touching = [e for e in edits if start <= e.start and e.end <= end or e.start < end and e.end > start]
    low, high = min([start, *(e.start for e in touching)]), max([end, *(e.end for e in touching)])
    rebased = [Edit(e.start - low, e.end - low, e.text) for e in touching]
    result = _one_line(apply_edits(text[low:high], rebased))
    before, after = _one_line(text[low:start]), _one_line(text[end:high])
    if before and result.startswith(before):
        result = result[len(before) :].lstrip()
    if after and result.endswith(after):
        result = result[: len(result) - len(after)].rstrip()
    return result


def _one_line(text: str) -> str:
    return " ".join(text.split())
