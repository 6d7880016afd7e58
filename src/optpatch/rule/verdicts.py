"""What a rule concludes about a site: the one vocabulary every rule speaks.

A rule's `check` yields a `Judgement` for every site it examined: where the
site is, how often it runs, and one verdict:

- `Proven`: a rewrite, with its tier, its edits and the proof of each
  obligation;
- `Kept`: left alone, with the use that blocked the rewrite and its
  `KeepCategory`;
- `Advice`: worth a human look, with no mechanical fix.

A rule's own analyses return these too (`Kept | Proven`, `Kept | None`),
so a blocked obligation travels up as a value, never as an exception. The
engine (passes.py) turns judgements into findings; rules never build a
`Finding`.
"""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.model import Context, Edit, Impact, KeepCategory, Tier

# The basis of every keep's impact: nothing is rewritten.
KEPT_BASIS = "kept: no rewrite, no change"


@dataclass(frozen=True)
class Kept:
    """The site is left alone: `reason` names the blocking use, `category` is what the summary counts."""

    reason: str
    category: KeepCategory
    proof: tuple[str, ...] = ()


@dataclass(frozen=True)
class Advice:
    """Worth a human look, with no mechanical fix; `category`, when set, says which kind (e.g. `DISCARDED`)."""

    reason: str
    basis: str  # the measurement `impact` rests on
    impact: Impact = Impact.NONE
    category: KeepCategory | None = None


@dataclass(frozen=True)
class Proven:
    """A rewrite: its tier, its edits, the proof (`reason` in one line, `proof` step by step) and what it buys.

    A fix whose edits would write a line past the file's line limit is
    kept instead, by the engine (line_limits.py).
    """

    reason: str
    tier: Tier
    edits: tuple[Edit, ...]
    impact: Impact
    basis: str  # the measurement `impact` rests on
    replacement: str = ""  # the rewritten source of the site, for humans
    proof: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "edits", tuple(self.edits))
        object.__setattr__(self, "proof", tuple(self.proof))


Verdict = Proven | Kept | Advice


@dataclass(frozen=True)
class Judgement:
    """One examined site: its 1-based (line, column) in the parsed text, where it runs, and the verdict."""

    at: tuple[int, int]
    context: Context
    verdict: Verdict

