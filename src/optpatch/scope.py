"""Narrowing a run to what the user asked about: changed files, changed lines, new findings.

`--changed-since REF` narrows the files analysed. `--changed-lines` and
`--baseline FILE` are screens: during analysis they mark the findings outside
the scope (off the changed lines, or already in the baseline), the fix policy
refuses to apply those, and the command line drops them before reporting. A
screened finding is therefore neither fixed nor reported, in every mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from optpatch.model import Finding

_SCREENED = "screened_out"


class Screen(Protocol):
    def screen(self, findings: list[Finding]) -> None:
        """Call `screen_out` on each finding outside the scope."""


class ScopeError(Exception):
    """A scope option that cannot be honoured: a usage error (exit status 2)."""


def screen_out(finding: Finding, why: str) -> None:
    finding.extra[_SCREENED] = why


def screened_out(finding: Finding) -> str | None:
    """Why the finding is outside the run's scope, or None."""
    return finding.extra.get(_SCREENED)


def drop_screened(result) -> int:
    """Remove screened findings from a RunResult before it is reported; returns how many."""
    dropped = 0
    for file_result in result.files:
        kept = [f for f in file_result.findings if screened_out(f) is None]
        dropped += len(file_result.findings) - len(kept)
        file_result.findings = kept
    return dropped


@dataclass(frozen=True)
class Scope:
    """The files to analyse (None: everything under the root) and the screens on findings."""

    paths: list[Path] | None
    screens: tuple[Screen, ...]
    described: str  # "outside the lines changed since main", for the note on hidden findings

    def note(self, hidden: int) -> str | None:
        return f"{hidden} finding(s) {self.described} not shown." if hidden else None


def narrow(root: Path, exclude: tuple[str, ...], paths: list[Path] | None, options: dict) -> Scope:
    """The scope the options `changed_since`, `changed_lines` and `baseline` ask for."""
    from optpatch.baseline import load_baseline
    from optpatch.changes import changes_since
    from optpatch.discovery import discover

    screens: list[Screen] = []
    described: list[str] = []
    ref, only_changed_lines, baseline_path = (
        options.get("changed_since"), options.get("changed_lines"), options.get("baseline")
    )
    if only_changed_lines and not ref:
        raise ScopeError("--changed-lines needs --changed-since REF")
    if ref:
        changes = changes_since(root, ref)
        candidates = discover(root, exclude, paths).files
        paths = [path for path, rel in candidates if rel in changes.files]
        if only_changed_lines:
            screens.append(changes.lines)
            described.append(f"outside the lines changed since {ref}")
    if baseline_path:
        screens.append(load_baseline(baseline_path))
        described.append(f"recorded in the baseline {baseline_path}")
    return Scope(paths, tuple(screens), " or ".join(described))
