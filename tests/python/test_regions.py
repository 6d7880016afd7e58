"""analysis/regions.py against Python itself: whenever `covers` says a set of slices covers an axis, it does.

Slices are drawn with constant bounds (either sign, beyond the axis too),
symbolic bounds `h` and `k` (one value per draw, negative included, as
Python would normalise them), integer indices and steps; each draw is then
evaluated on lists of many lengths. A known constant size is checked on
that length only.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from optpatch.analysis.regions import END, LAST, START, SYMBOL, ZERO, Axis, AxisSize, Bound, Region, covers

AXIS = Axis(False, 0)
SYMBOLS = ("h", "k")
bounds = st.one_of(
    st.none(),
    st.integers(-6, 8),
    st.sampled_from(SYMBOLS),
)
slices = st.tuples(bounds, bounds, st.sampled_from([None, 1, 2, 3]))
indices = st.integers(-6, 6)
writes = st.lists(st.one_of(slices, indices), min_size=1, max_size=4)
values = st.fixed_dictionaries({name: st.integers(-8, 8) for name in SYMBOLS})


def _bound(value, default: Bound) -> Bound:
    if value is None:
        return default
    if isinstance(value, str):
        return Bound(SYMBOL, symbol=value)
    return Bound(START, value) if value >= 0 else Bound(END, value)


def _region(write) -> Region:
    if isinstance(write, int):
        if write >= 0:
            return Region(AXIS, Bound(START, write), Bound(START, write + 1))
        return Region(AXIS, Bound(END, write), Bound(END, write + 1))
    lower, upper, step = write
    return Region(AXIS, _bound(lower, ZERO), _bound(upper, LAST), step or 1)


def _covered(writes, length: int, symbols: dict[str, int]) -> bool | None:
    """Every index of a list of `length` written by the writes; None when a write would raise (nothing to prove)."""
    written = [False] * length
    for write in writes:
        if isinstance(write, int):
            if not -length <= write < length:
                return None  # IndexError: the program stops before any read
            written[write] = True
            continue
        lower, upper, step = (symbols.get(part, part) if isinstance(part, str) else part for part in write)
        for index in range(length)[slice(lower, upper, step)]:
            written[index] = True
    return all(written)


@settings(max_examples=3000, deadline=None)
@given(writes, values)
def test_what_covers_accepts_is_covered_for_every_length(writes, symbols):
    if not covers([_region(write) for write in writes], AxisSize()):
        return
    for length in range(0, 12):
        assert _covered(writes, length, symbols) in (True, None), (writes, symbols, length)


@settings(max_examples=3000, deadline=None)
@given(writes, values, st.integers(0, 9))
def test_with_a_constant_size_it_holds_for_that_size(writes, symbols, length):
    if covers([_region(write) for write in writes], AxisSize(length)):
        assert _covered(writes, length, symbols) in (True, None), (writes, symbols, length)


def test_it_accepts_the_chains_real_code_writes():
    h, k = Bound(SYMBOL, symbol="h"), Bound(SYMBOL, symbol="k")
    assert covers([Region(AXIS, ZERO, h), Region(AXIS, h, LAST)], AxisSize())
    assert covers([Region(AXIS, h, k), Region(AXIS, k, LAST), Region(AXIS, ZERO, h)], AxisSize())
    assert covers([Region(AXIS, ZERO, LAST, 2), Region(AXIS, Bound(START, 1), LAST, 2)], AxisSize())
    assert covers([Region(AXIS, Bound(START, i), Bound(START, i + 1)) for i in range(3)], AxisSize(3))
    assert covers([Region(AXIS, ZERO, Bound(END, -1)), Region(AXIS, Bound(END, -1), LAST)], AxisSize())
    assert covers([Region(AXIS, ZERO, Bound(START, 3)), Region(AXIS, Bound(START, 2), LAST)], AxisSize())


def test_it_refuses_gaps_holes_and_offsets_on_symbols():
    h = Bound(SYMBOL, symbol="h")
    assert not covers([Region(AXIS, ZERO, h)], AxisSize())
    assert not covers([Region(AXIS, ZERO, Bound(START, 2)), Region(AXIS, Bound(START, 3), LAST)], AxisSize())
    assert not covers([Region(AXIS, ZERO, Bound(START, 2)), Region(AXIS, Bound(END, -2), LAST)], AxisSize())
    assert not covers([Region(AXIS, ZERO, LAST, 2)], AxisSize())
    assert not covers([Region(AXIS, Bound(START, i), Bound(START, i + 1)) for i in range(3)], AxisSize())
