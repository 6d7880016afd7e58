"""Which fixes a validation run holds: every candidate first, then exactly the ones chosen."""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.model import Finding, Hold, Refusal, Tier
from optpatch.policy import FixPolicy, effective_tier, fix_id


@dataclass(frozen=True)
class CandidateFixes(FixPolicy):
    """Every fix a validation run may accept: the validate tier too, unsafe only with --unsafe-fixes."""

    def refuse(self, finding: Finding) -> Refusal | None:
        if effective_tier(finding, self.tiers) is Tier.VALIDATE and self.outside(finding) is None:
            return None
        return super().refuse(finding)


@dataclass(frozen=True)
class ChosenFixes(FixPolicy):
    """Exactly the fixes in `chosen`; `held` says why each fix validation set aside was refused."""

    chosen: frozenset[str] = frozenset()
    held: tuple[tuple[str, Refusal], ...] = ()

    def refuse(self, finding: Finding) -> Refusal | None:
        key = fix_id(finding)
        if key in self.chosen:
            return None
        return dict(self.held).get(key) or super().refuse(finding) or Refusal(Hold.NOT_CHOSEN)
