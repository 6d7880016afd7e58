"""Narrowing a run to what the user asked about: changed files, changed lines, new findings.

`--changed-since REF` narrows the files analysed. `--changed-lines` and
`--baseline FILE` are filters on findings, and so is `--min-impact LEVEL`
(the impact weighed by the run's call graph or profile, frequency.py):
during the run each says why a finding is outside the scope
(`Decision.out_of_scope`: off the changed lines, already in the baseline;
the first filter's reason is kept), the fix policy refuses to apply those,
and the command line drops them before reporting. A filtered finding is
therefore neither fixed nor reported, in every mode.

changes.py and baseline.py hold the two filters; this module puts a request
together from them, and they import nothing from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from optpatch.model import Finding, Impact
from optpatch.passes import FindingFilter
from optpatch.results import RunResult


class NarrowingError(Exception):
    """A narrowing that cannot be honoured: a usage error (exit status 2)."""


@dataclass(frozen=True)
class NarrowingRequest:
    """What the command line asked for."""

    changed_since: str | None = None
    changed_lines: bool = False
    baseline: Path | None = None
    min_impact: Impact | None = None  # --min-impact: findings whose impact is lower are neither fixed nor shown


@dataclass(frozen=True)
class Narrowing:
    """The files to analyse (None: everything under the root) and the filters on findings."""

    paths: list[Path] | None
    filters: tuple[FindingFilter, ...]
    described: str  # "outside the lines changed since main", for the note on hidden findings

    def note(self, hidden: int) -> str | None:
        return f"{hidden} finding(s) {self.described} not shown." if hidden else None


def narrow(root: Path, exclude, paths: list[Path] | None, request: NarrowingRequest) -> Narrowing:
    """The files and filters REQUEST asks for, under ROOT (or PATHS inside it)."""
    from optpatch.baseline import BaselineError, load_baseline
    from optpatch.changes import ChangesError, changes_since
    from optpatch.discovery import discover

    filters: list[FindingFilter] = []
    described: list[str] = []
    if request.changed_lines and not request.changed_since:
        raise NarrowingError("--changed-lines needs --changed-since REF")
    try:
        if request.changed_since:
            changes = changes_since(root, request.changed_since)
            candidates = discover(root, exclude, paths).files
            paths = [path for path, rel in candidates if rel in changes.files]
            if request.changed_lines:
                filters.append(changes.lines)
                described.append(f"outside the lines changed since {request.changed_since}")
        if request.baseline:
            filters.append(load_baseline(request.baseline))
            described.append(f"recorded in the baseline {request.baseline}")
    except (ChangesError, BaselineError) as error:
        raise NarrowingError(str(error)) from None
    if request.min_impact is not None:
        filters.append(MinImpact(request.min_impact))
        described.append(f"of an impact below {request.min_impact.value} (--min-impact)")
    return Narrowing(paths, tuple(filters), " or ".join(described))


@dataclass(frozen=True)
class MinImpact:
    """--min-impact: the findings whose impact, weighed by their frequency (frequency.py), is below the level."""

    level: Impact

    def out_of_scope(self, findings: Sequence[Finding]) -> list[str | None]:
        below = f"below --min-impact {self.level.value}"
        return [f"impact {f.impact.value}, {below}" if f.impact.rank < self.level.rank else None for f in findings]


def drop_out_of_scope(result: RunResult) -> int:
    """Remove the findings outside the run's scope from a RunResult before it is reported; returns how many."""
    dropped = 0
    for file_result in result.files:
        kept = [decided for decided in file_result.decided if decided.decision.out_of_scope is None]
        dropped += len(file_result.decided) - len(kept)
        file_result.decided = kept
    return dropped
