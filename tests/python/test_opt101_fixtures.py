from pathlib import Path

import pytest

from annotated import check_fixture, expectations

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "python" / "opt101").glob("*.py"))
FIXTURES = [f for f in FIXTURES if not f.name.endswith(".fixed.py")]


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture(path):
    check_fixture(path, ("OPT101",))


def test_fixtures_cover_at_least_forty_sites():
    sites = sum(len(expectations(p.read_text())) for p in FIXTURES)
    assert sites >= 40, sites
