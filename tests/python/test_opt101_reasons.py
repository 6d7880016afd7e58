"""A kept site says which use blocked it, and along which path that use is reached."""
from pathlib import Path

import pytest

from annotated import analyse

CONTROL_FLOW = Path(__file__).parents[1] / "fixtures" / "python" / "opt101" / "control_flow.py"


def _reason(function: str) -> str:
    lines = CONTROL_FLOW.read_text(encoding="utf-8").splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"def {function}(")))
    site = next(number for number in range(start, len(lines)) if "# expect: OPT101" in lines[number]) + 1
    return next(f.reason for f in analyse(CONTROL_FLOW, ("OPT101",)).findings if f.line == site)


@pytest.mark.parametrize(
    "function, path",
    [
        ("elif_without_else", "reached when the condition at L"),
        ("with_that_may_suppress", "reached when the context manager at L"),
        ("try_handler_falls_through", "reached when an exception raised before the write is caught at L"),
        ("allocated_in_try_handler_falls_through", "reached when an exception raised before the write is caught at L"),
        ("for_else_skipped_by_break", "reached when `break` skips the `else` of the loop at L"),
        ("break_before_write", "reached when `break` or `continue` leaves the loop at L"),
        ("while_test_reads_next_iteration", "the loop header uses `x` before the next iteration re-allocates it"),
        ("allocation_reads_previous_iteration", "the next iteration's allocation reads the old `x`"),
    ],
)
def test_kept_reason_names_the_path(function, path):
    assert path in _reason(function)


def test_a_plain_read_names_no_special_path():
    assert ", reached" not in _reason("closure_reads_it")
