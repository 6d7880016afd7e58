"""Twin sites (issue 33, point 10): two allocations of the same size under one loop get one verdict.

Each case builds a function with two allocations of the same shape, one
after the other, and a loop that writes a row of each; the loop's bound is
spelled through the first (`len(a)`, `a.shape[0]`, `a.size(0)`) or as the
shared size. Both sites must get the same verdict: both fixed where the
loop covers the rows, both kept where it may not.
"""
import json
from pathlib import Path

import pytest

from annotated import analyse

_ALLOCATIONS = {
    "zeros": ("torch.zeros({size}, 3)", "torch.zeros({size}, 3)"),
    "moved": ("torch.zeros({size}, 3).to(x.device)", "torch.zeros({size}, 3).to(x.device)"),
    "new_zeros": ("x.new_zeros({size}, 3)", "x.new_zeros({size}, 3)"),
    "leading star": ("torch.zeros({size}, *x.shape[1:])", "torch.zeros({size}, *x.shape[1:])"),
}
_BOUNDS = ["len(a)", "a.shape[0]", "a.size(0)", "{size}"]
_WRITES = {"assigned": "{name}[i] = x[i]", "copied": "{name}[i].copy_(x[i])"}
_FULL = [(alloc, bound, write) for alloc in _ALLOCATIONS for bound in _BOUNDS for write in _WRITES]
# The same pairs where the loop may leave rows unwritten: a bound one short, a `break` before the writes.
_SHORT = [(alloc, bound) for alloc in ("zeros", "moved") for bound in ("len(a) - 1", "{size} - 1")]


def _twins(tmp_path: Path, allocation: str, bound: str, write: str, before_writes: str = "") -> tuple[str, str]:
    first, second = (spelling.format(size="n") for spelling in _ALLOCATIONS[allocation])
    writes = "".join(f"        {_WRITES[write].format(name=name)}\n" for name in ("a", "b"))
    guard = f"        {before_writes}\n" if before_writes else ""
    text = (
        "import torch\n\n\n"
        "def twins(x, n, stop):\n"
        f"    a = {first}\n"
        f"    b = {second}\n"
        f"    for i in range({bound.format(size='n')}):\n"
        f"{guard}{writes}"
        "    return a, b\n"
    )
    path = tmp_path / "twins.py"
    path.write_text(text, encoding="utf-8")
    verdicts = {f.line: (f.verdict.value, f.fix and f.fix.tier.value) for f in analyse(path, ("OPT101",)).findings}
    return verdicts[5], verdicts[6]


@pytest.mark.parametrize("allocation, bound, write", _FULL, ids=lambda v: v)
def test_twins_under_a_covering_loop_are_both_fixed(tmp_path, allocation, bound, write):
    assert _twins(tmp_path, allocation, bound, write) == (("fix", "safe"), ("fix", "safe"))


@pytest.mark.parametrize("allocation, bound", _SHORT, ids=lambda v: v)
def test_twins_under_a_short_loop_are_both_kept(tmp_path, allocation, bound):
    first, second = _twins(tmp_path, allocation, bound, "assigned")
    assert first == second == ("keep", None)


@pytest.mark.parametrize("allocation", ["zeros", "new_zeros"])
def test_twins_under_a_loop_that_may_break_are_both_kept(tmp_path, allocation):
    first, second = _twins(tmp_path, allocation, "len(a)", "assigned", before_writes="if i == stop:\n            break")
    assert first == second == ("keep", None)


def test_twins_get_one_verdict_through_the_cli(tmp_path):
    """The same, as a user runs it: `optpatch check --output-format json` on the twins of loop_coverage.py."""
    from conftest import run_cli

    fixture = Path(__file__).parents[1] / "fixtures" / "python" / "opt101" / "loop_coverage.py"
    lines = fixture.read_text(encoding="utf-8").splitlines()
    pairs = [(number, number + 1) for number, line in enumerate(lines, start=1)
             if line.startswith("def twins") for number in [number + 1]]
    assert len(pairs) == 2, pairs  # `twins` and `twins_by_shape`: two allocations each, on the lines after the def
    result = run_cli("check", str(fixture), "--select", "OPT101", "--output-format", "json", "--no-cache", "--exit-zero")
    assert result.returncode == 0, result.stderr
    verdicts = {f["line"]: (f["verdict"], f["tier"]) for f in json.loads(result.stdout)["findings"]}
    for first, second in pairs:
        assert verdicts[first] == verdicts[second] == ("fix", "safe"), (first, second, verdicts)
