"""OPT101's fixtures beyond what tests/test_fixtures.py checks of every rule's: forced sites, always-keep labels, validation."""
from pathlib import Path

import pytest

from annotated import GOLDEN_SUFFIXES, analyse, assert_same_behaviour, forced_rewrite, sites

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "python" / "opt101"
FIXTURES = sorted(p for p in FIXTURE_DIR.glob("*.py") if not p.name.endswith(GOLDEN_SUFFIXES))
FORCED = [
    pytest.param(path, site.line, id=f"{path.stem}:{site.line}")
    for path in FIXTURES
    for site in sites(path.read_text(encoding="utf-8"))
    if site.forced_fails
]


def test_fixtures_cover_at_least_fifty_sites():
    count = sum(len(sites(p.read_text(encoding="utf-8"))) for p in FIXTURES)
    assert count >= 50, count


@pytest.mark.parametrize("path, line", FORCED)
def test_forcing_a_kept_site_is_caught_by_the_poisoned_run(path, line):
    """The harness can fail: `empty` forced on a site the rule keeps changes a case's result."""
    text = path.read_text(encoding="utf-8")
    with pytest.raises(AssertionError):
        assert_same_behaviour(text, forced_rewrite(text, line), f"{path.stem}_forced_{line}")


ALWAYS_KEEP_LABELS = ("padded or tiled", "index or id tensor", "dummy input", "test fixture")


def test_always_keep_sites_say_which_case_they_are():
    """RULES.md: the always-keep cases are kept *and say so when asked why*."""
    path = FIXTURE_DIR / "always_keep.py"
    reasons = {f.line: f.reason for f in analyse(path, ("OPT101",)).findings}
    for site in sites(path.read_text(encoding="utf-8")):
        assert any(label in reasons[site.line] for label in ALWAYS_KEEP_LABELS), (site.line, reasons[site.line])


VALIDATE_THAT_HOLDS = [
    pytest.param(path, site.line, id=f"{path.stem}:{site.line}")
    for path in FIXTURES
    for site in sites(path.read_text(encoding="utf-8"))
    if site.verdict == "validate" and not site.forced_fails
]


@pytest.mark.parametrize("path, line", VALIDATE_THAT_HOLDS)
def test_a_validation_run_accepts_the_validate_sites_that_hold(path, line):
    """The other half of the validate tier: applied where the poisoned run passes."""
    text = path.read_text(encoding="utf-8")
    assert_same_behaviour(text, forced_rewrite(text, line), f"{path.stem}_validated_{line}")
