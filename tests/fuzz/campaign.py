"""A fuzzing campaign: generate programs, check each with the oracle, count what was exercised.

Shared by the CI test (a fixed, derandomised set of programs) and by
`benchmarks/fuzz_rules.py` (any number, any seed). On a failure hypothesis
shrinks the program and re-raises the oracle's `DifferentialFailure` for
the minimal one, whose message holds the program, the rewrite and the
first difference.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from hypothesis import HealthCheck, given, seed, settings

from fuzz.oracle import check_program
from fuzz.programs import programs

# The Python rules under differential test. A rule joins by adding its code here and its Factory rows.
RULE_CODES = ("OPT101", "OPT102")


def run_campaign(
    count: int,
    random_seed: int | None = None,
    codes: tuple[str, ...] = RULE_CODES,
    progress: Callable[[Counter], None] | None = None,
    sources: list[str] | None = None,
) -> Counter:
    """Check `count` programs; derandomised (the same programs every time) when `random_seed` is None.

    `sources`, when given, collects every program checked.
    """
    tally: Counter = Counter()

    @settings(
        max_examples=count,
        derandomize=random_seed is None,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(programs(codes))
    def differential(source):
        if sources is not None:
            sources.append(source)
        checked = check_program(source, codes)
        tally["programs"] += 1
        tally["sites"] += checked.sites
        tally["applied"] += checked.applied
        tally["kept"] += checked.kept
        tally["rewritten"] += checked.applied > 0
        if progress:
            progress(tally)

    test = seed(random_seed)(differential) if random_seed is not None else differential
    test()
    return tally
