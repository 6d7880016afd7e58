"""bisect_fixes with a fake fix set and a fake runner: which fixes are dropped, and how many runs it takes."""

import math

import pytest

from optpatch.validation.bisect import Probe, bisect_fixes
from optpatch.validation.commands import CommandRun


class FakeRunner:
    """Fails whenever the tree holds a bad fix, or all fixes of a bad combination; counts its runs."""

    def __init__(self, bad=(), bad_together=()):
        self.bad = set(bad)
        self.bad_together = [set(group) for group in bad_together]
        self.runs: list[list[int]] = []

    def __call__(self, chosen: list[int]) -> Probe:
        self.runs.append(list(chosen))
        applied = set(chosen)
        if applied & self.bad or any(group <= applied for group in self.bad_together):
            return Probe(False, CommandRun(f"{len(chosen)} fixes", "nan", 1, False, 0.1, 60, f"failed with {sorted(applied)}"))
        return Probe(True)


@pytest.mark.parametrize("bad", [0, 13, 31])
def test_one_bad_fix_among_32_costs_about_log2_runs(bad):
    runner = FakeRunner(bad=[bad])
    result = bisect_fixes(list(range(32)), runner)
    assert [fix for fix, _ in result.dropped] == [bad]
    assert result.kept == [fix for fix in range(32) if fix != bad]
    # One run of everything, log2(32) = 5 halvings, at most one run of the rest.
    assert len(runner.runs) == result.probes <= 1 + 5 + 1
    assert runner.runs[-1] == result.kept == result.last_probed  # the final set ran as a whole


def test_runs_grow_with_the_logarithm_of_the_number_of_fixes():
    counts = {}
    for size in (8, 32, 128, 512):
        runner = FakeRunner(bad=[size // 3])
        bisect_fixes(list(range(size)), runner)
        counts[size] = len(runner.runs)
        assert counts[size] <= math.log2(size) + 2
    assert counts[512] - counts[8] <= math.log2(512 // 8) + 1  # 64 times the fixes, a handful more runs


def test_the_failure_kept_for_a_dropped_fix_is_the_run_that_isolated_it():
    runner = FakeRunner(bad=[5])
    result = bisect_fixes(list(range(8)), runner)
    (fix, failure), = result.dropped
    assert fix == 5
    assert failure.tail == "failed with [0, 1, 2, 3, 4, 5]"


def test_several_bad_fixes_are_all_dropped_and_the_rest_kept():
    runner = FakeRunner(bad=[2, 9, 30])
    result = bisect_fixes(list(range(32)), runner)
    assert [fix for fix, _ in result.dropped] == [2, 9, 30]
    assert result.kept == [fix for fix in range(32) if fix not in (2, 9, 30)]
    assert runner(result.kept).passed


def test_fixes_that_fail_only_together_lose_the_later_one():
    runner = FakeRunner(bad_together=[(3, 20)])
    result = bisect_fixes(list(range(32)), runner)
    assert [fix for fix, _ in result.dropped] == [20]
    assert runner(result.kept).passed


def test_all_good_is_one_run_and_all_bad_keeps_nothing():
    runner = FakeRunner()
    result = bisect_fixes(list(range(16)), runner)
    assert result.kept == list(range(16)) and not result.dropped and len(runner.runs) == 1
    runner = FakeRunner(bad=range(4))
    result = bisect_fixes(list(range(4)), runner)
    assert result.kept == [] and [fix for fix, _ in result.dropped] == [0, 1, 2, 3]


def test_no_candidates_runs_nothing():
    runner = FakeRunner()
    result = bisect_fixes([], runner)
    assert result.kept == [] and result.probes == 0 and runner.runs == []
