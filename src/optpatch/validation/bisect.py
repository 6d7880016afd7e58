"""Which fix breaks the command: a binary search over prefixes of the candidate fixes.

It knows nothing of files or commands: `probe` runs a set of fixes and
says whether it passed, and on failure which run failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

from optpatch.validation.commands import CommandRun

T = TypeVar("T")


@dataclass(frozen=True)
class Probe:
    passed: bool
    failure: CommandRun | None = None


@dataclass
class Bisection(Generic[T]):
    kept: list[T]
    dropped: list[tuple[T, CommandRun | None]]
    probes: int
    last_probed: list[T] | None  # the set the last probe ran; the tree holds it now


def bisect_fixes(candidates: Sequence[T], probe: Callable[[list[T]], Probe]) -> Bisection[T]:
    """Split CANDIDATES into fixes that pass together and fixes that break the command.

    Requires that the empty set passes (the baseline). Each round runs all
    remaining fixes on top of those already kept; if that fails, a binary
    search over prefixes finds the first fix whose addition fails, which is
    dropped. Every kept prefix has passed as a whole, so interactions
    between fixes are caught too.
    """
    kept: list[T] = []
    dropped: list[tuple[T, CommandRun | None]] = []
    remaining = list(candidates)
    probes = 0
    last: list[T] | None = None
    while remaining:
        trial = kept + remaining
        outcome = probe(trial)
        probes, last = probes + 1, trial
        if outcome.passed:
            kept = trial
            break
        passing, failing, failure = 0, len(remaining), outcome.failure  # prefix lengths
        while failing - passing > 1:
            middle = (passing + failing) // 2
            trial = kept + remaining[:middle]
            outcome = probe(trial)
            probes, last = probes + 1, trial
            if outcome.passed:
                passing = middle
            else:
                failing, failure = middle, outcome.failure
        kept += remaining[:passing]
        dropped.append((remaining[passing], failure))
        remaining = remaining[failing:]
    return Bisection(kept, dropped, probes, last)
