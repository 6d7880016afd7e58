"""The data every stage passes on: edits, findings, and files that failed.

Offsets in an `Edit` are indices into the decoded text of one file (a `str`),
so Python and C++ frontends speak the same unit and the patch writer never
has to think about bytes until it encodes the result.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Tier(enum.StrEnum):
    """How much proof stands behind a fix (RULES.md, "Fix tiers")."""

    SAFE = "safe"  # proof obligations hold statically: applied by default
    VALIDATE = "validate"  # plausible: applied only after a passing validation run
    UNSAFE = "unsafe"  # a semantic change the user must accept: --unsafe-fixes


class Verdict(enum.StrEnum):
    """What the rule concluded about a site."""

    FIX = "fix"  # a replacement is offered, at some tier
    KEEP = "keep"  # the site was examined and is left alone, with the reason
    ADVICE = "advice"  # worth a human look, but no mechanical fix exists


class Context(enum.StrEnum):
    """Where a site runs: what a saving there is worth (RULES.md, principle 2)."""

    HOT = "hot"  # inside a loop, forward(), a per-step method
    CALL = "per-call"  # an ordinary function: runs as often as it is called
    ONCE = "one-time"  # __init__, module level, set-up code


class Impact(enum.StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    NONE = "none"


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] with `text`. An insertion has start == end."""

    start: int
    end: int
    text: str


@dataclass
class Finding:
    """One examined site: a fix with its proof, or a keep with its blocking use."""

    code: str
    name: str
    path: str  # relative to the scanned root, with forward slashes
    line: int  # 1-based
    col: int  # 1-based, in characters
    verdict: Verdict
    reason: str  # the one-line proof (fix) or blocking use (keep)
    context: Context
    impact: Impact
    impact_basis: str  # the measurement the impact class rests on
    tier: Tier | None = None  # set for verdict FIX
    edits: tuple[Edit, ...] = ()
    replacement: str = ""  # the rewritten source of the site, for humans
    proof: tuple[str, ...] = ()  # the full argument, step by step, for `explain`
    # Filled in by the planner:
    applied: bool = False
    not_applied_because: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def fixable(self) -> bool:
        return self.verdict is Verdict.FIX

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code)

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed; the rest of the run goes on."""

    path: str
    reason: str
    line: int | None = None

    def location(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path
