"""What a finding's fix became in this command: written, in the patch, fixable, or only proposed.

A fix the run's policy accepts (`Decision.accepted`) is not yet a changed
file: `apply` writes it into the patch, `--write` and `check --fix` into the
file, and `check` writes nothing. Reports say which, from these values:
"fixed" only where a file was written, and the JSON report's `written`
only for what this command wrote (`Status.written`).
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

from optpatch.model import CodeArea, Decided, Hold, Verdict


class Status(enum.StrEnum):
    FIXED = "fixed"  # this command rewrote the file with it (--write, check --fix)
    IN_PATCH = "in patch"  # in the patch this command wrote (apply)
    FIXABLE = "fixable"  # the policy accepts it, and this command writes nothing (check, check --diff, explain)
    PROPOSED = "proposed"  # held back: its tier, a failed validation, an overlap, the run's scope
    KEPT = "kept"
    ADVICE = "advice"

    @property
    def written(self) -> bool:
        return self in (Status.FIXED, Status.IN_PATCH)


@dataclass(frozen=True)
class Delivery:
    """Where this command put the fixes its policy accepted."""

    patch: bool = False  # a patch holding every accepted fix was written (apply)
    files: frozenset[str] = frozenset()  # files rewritten in place, relative to the root (--write, check --fix)


NOTHING_WRITTEN = Delivery()
PATCH_WRITTEN = Delivery(patch=True)


def status_of(decided: Decided, delivery: Delivery = NOTHING_WRITTEN) -> Status:
    finding, decision = decided
    if finding.verdict is Verdict.KEEP:
        return Status.KEPT
    if finding.verdict is Verdict.ADVICE:
        return Status.ADVICE
    if not decision.accepted:
        return Status.PROPOSED
    if finding.path in delivery.files:
        return Status.FIXED
    return Status.IN_PATCH if delivery.patch else Status.FIXABLE


def held_by_area(decided: list[Decided]) -> Counter[CodeArea]:
    """The fixes left out because their area is outside `fix-areas` (`Hold.AREA`), counted by area."""
    return Counter(f.area for f, decision in decided if decision.held is Hold.AREA)


def area_note(decided: list[Decided], fix_areas: tuple[CodeArea, ...]) -> str | None:
    """How many fixes `fix-areas` left out, by area, and the option that includes them; None when it left out none."""
    held = held_by_area(decided)
    if not held:
        return None
    counts = ", ".join(f"{count} in {area.value}" for area, count in sorted(held.items(), key=lambda item: (-item[1], item[0])))
    wanted = ",".join(area.value for area in CodeArea if area in fix_areas or area in held)
    fixed = ", ".join(area.value for area in fix_areas) or "no area"
    return (f"{sum(held.values())} fix(es) left out by area ({counts}): this run fixes {fixed} (fix-areas); include "
            f"them with --fix-areas {wanted}")
