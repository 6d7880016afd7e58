"""Which elements of a tensor a set of writes covers, along one dimension (OPT101's complementary writes).

A write `x[:, a:b] = v` covers the slice `a:b` of dimension 1 and all of the
others. Several such writes along the same dimension cover it all when their
slices chain from the start to the end: `[:a]`, `[a:b]`, `[b:]` in any order,
overlapping or not. The bounds are compared as Python normalises them (a
negative bound counts from the end, and any bound is clamped to the
dimension), which is what makes the comparison sound:

- the same expression, evaluated to the same value, normalises to the same
  index, whatever its sign: `x[:h]` and `x[h:]` cover `x` for any integer `h`;
- constants are compared by value when both count from the start (`2`, `3`)
  or both from the end (`-2`, `-1`), since normalising is monotone on each
  side; a dimension of known constant size puts both on one side;
- `x[r::k]` for every `r` in `0..k-1` covers `x` (`[0::2]` and `[1::2]`).

An offset on a symbol (`h + 1`) is not comparable with `h`: with `h = -1`,
`x[:h + 1]` is empty while `x[h:]` is the last element. The caller maps
expressions to `Bound`s, and proves that a symbol means the same value in
every write that uses it.
"""

from __future__ import annotations

from dataclasses import dataclass

START, END, SYMBOL = "start", "end", "symbol"


@dataclass(frozen=True)
class Bound:
    """A slice bound: `offset` from the start (>= 0), `offset` from the end (<= 0), or a symbol's value."""

    anchor: str
    offset: int = 0
    symbol: str = ""


ZERO = Bound(START)
LAST = Bound(END)


@dataclass(frozen=True)
class Axis:
    """A dimension counted from the left (`x[:, k]`: 1) or from the right (`x[..., k]`: 1 is the last)."""

    from_right: bool
    index: int


@dataclass(frozen=True)
class Region:
    """The elements `lower:upper:step` of one dimension, and all of every other dimension."""

    axis: Axis
    lower: Bound
    upper: Bound
    step: int = 1


@dataclass(frozen=True)
class AxisSize:
    """What is known of a dimension's size: its value when constant."""

    constant: int | None = None


def covers(regions: list[Region], size: AxisSize) -> bool:
    """True when `regions` (all on one axis) together cover every index of an axis of `size`."""
    regions = [_normalised(region, size) for region in regions]
    return _chain_covers([r for r in regions if r.step == 1], size) or _residues_cover([r for r in regions if r.step > 1], size)


def _normalised(region: Region, size: AxisSize) -> Region:
    """With a constant size, every constant bound counts from the start (clamped as Python clamps)."""
    if size.constant is None:
        return region
    return Region(region.axis, _from_start(region.lower, size.constant), _from_start(region.upper, size.constant), region.step)


def _from_start(bound: Bound, length: int) -> Bound:
    if bound.anchor == END:
        return Bound(START, max(length + bound.offset, 0))
    if bound.anchor == START:
        return Bound(START, min(bound.offset, length))
    return bound


def _at_most(a: Bound, b: Bound) -> bool:
    """a <= b once both are normalised, provably."""
    if a == b or a == ZERO or b == LAST:
        return True
    return a.anchor == b.anchor and a.anchor != SYMBOL and a.offset <= b.offset


def _reaches_end(bound: Bound, size: AxisSize) -> bool:
    return bound == LAST or (size.constant is not None and bound.anchor == START and bound.offset >= size.constant)


def _chain_covers(regions: list[Region], size: AxisSize) -> bool:
    """[0, f) is covered for every reached f; a region whose lower bound is at most f extends it to its upper."""
    reached = {ZERO}
    changed = True
    while changed:
        changed = False
        for region in regions:
            if region.upper not in reached and any(_at_most(region.lower, f) for f in reached):
                reached.add(region.upper)
                changed = True
    return any(_reaches_end(bound, size) for bound in reached)


def _residues_cover(regions: list[Region], size: AxisSize) -> bool:
    """`x[r::k]` for every r in 0..k-1, each to the end of the axis."""
    residues: dict[int, set[int]] = {}
    for region in regions:
        if region.lower.anchor == START and 0 <= region.lower.offset < region.step and _reaches_end(region.upper, size):
            residues.setdefault(region.step, set()).add(region.lower.offset)
    return any(len(found) == step for step, found in residues.items())
