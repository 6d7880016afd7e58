"""Which of the fixes found a run applies: tiers, --unsafe-fixes, validation, scope, areas.

The fix policy is applied after analysis, never inside it: an analysis (and
so the result cache) holds every fix found with its tier, and each run
decides what to apply. A decision therefore never carries from one kind of
run to another: a validate-tier fix is applied only by the run whose
validation accepted it (`validated`). Likewise a fix in an area outside
`fix-areas` (tests, benchmarks: areas.py) is found, cached and reported,
and held here (`Hold.AREA`) unless the run asks for its area.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from optpatch.model import CodeArea, Finding, Hold, Refusal, Tier

if TYPE_CHECKING:
    from optpatch.config import Settings


@dataclass(frozen=True)
class FixPolicy:
    """Which tiers and areas this run applies. `validated` holds the ids of fixes a validation run accepted."""

    unsafe_fixes: bool = False
    validated: frozenset[str] = frozenset()
    tiers: tuple[tuple[str, str], ...] = ()  # (code prefix, tier) from the `tiers` setting: stricter only
    fix_areas: frozenset[CodeArea] = frozenset({CodeArea.LIBRARY})  # the `fix-areas` setting

    @classmethod
    def of(cls, settings: "Settings", **more) -> "FixPolicy":
        """The policy the settings ask for (`unsafe-fixes`, `tiers`, `fix-areas`); MORE: a subclass's own fields."""
        return cls(unsafe_fixes=settings.unsafe_fixes, tiers=settings.tiers, fix_areas=frozenset(settings.fix_areas),
                   **more)

    def applied_tiers(self) -> frozenset[Tier]:
        """The tiers of the fixes this run may apply: safe; unsafe with `--unsafe-fixes`; validate in a validation
        run's final pass (its accepted fixes)."""
        return frozenset({Tier.SAFE} | ({Tier.UNSAFE} if self.unsafe_fixes else set())
                         | ({Tier.VALIDATE} if self.validated else set()))

    def refuse(self, finding: Finding) -> Refusal | None:
        """Why this run must not apply the fix, or None. (A fix outside the run's scope is refused before the
        policy is asked: planner.plan_edits.)

        The tier is asked before the area, so that a fix held by its area is
        one that `--fix-areas` alone would apply (what the summary counts).
        """
        return self._tier_refusal(finding) or self.outside(finding)

    def outside(self, finding: Finding) -> Refusal | None:
        """Why the fix is outside the areas this run fixes, whatever its tier."""
        if finding.area in self.fix_areas:
            return None
        wanted = ",".join(area.value for area in CodeArea if area in self.fix_areas or area is finding.area)
        return Refusal(Hold.AREA, f"in {finding.area.value}, outside fix-areas: include it with --fix-areas {wanted}")

    def _tier_refusal(self, finding: Finding) -> Refusal | None:
        tier = effective_tier(finding, self.tiers)
        if tier is Tier.SAFE:
            return None
        if tier is Tier.UNSAFE:
            return None if self.unsafe_fixes else Refusal(Hold.UNSAFE_TIER)
        if fix_id(finding) in self.validated:
            return None
        return Refusal(Hold.VALIDATE_TIER)


def effective_tier(finding: Finding, overrides: tuple[tuple[str, str], ...]) -> Tier:
    """The rule's tier, made stricter (never looser) by the `tiers` setting."""
    tier = finding.fix.tier if finding.fix is not None else Tier.SAFE
    for prefix, wanted in overrides:
        if finding.code.startswith(prefix) and Tier(wanted).strictness > tier.strictness:
            tier = Tier(wanted)
    return tier


def fix_id(finding: Finding) -> str:
    """A fix's name across runs of one tree: where it is in the file as the user has it, and which rule."""
    return f"{finding.path}:{finding.line}:{finding.col}:{finding.code}"
