"""The proof of a copy: each obligation's step, and what the obligations hand to the edits.

Each obligation that holds gives a `Step`: the tier it allows and why it
holds, in one line. The fix's tier is the strictest of its steps, and its
reason lists them in order (obligations.py). An obligation that fails gives
a `Kept` (or an `Advice`) instead, from `optpatch.rule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from optpatch.rule import Tier

from .host_data import HostData


class Step(NamedTuple):
    """One obligation that holds: the tier it allows, and why it holds."""

    tier: Tier
    text: str


@dataclass(frozen=True)
class Proof:
    """Every obligation held: the fix's tier, the steps in order, and what they showed of the data (for the impact)."""

    tier: Tier
    steps: tuple[str, ...]
    data: HostData | None
