import pytest

from cpp_fixtures import check_fixture, expectations, fixture_paths


@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path, tmp_path):
    check_fixture(path, tmp_path)


def test_fixtures_cover_every_cpp_rule_with_fixes_and_keeps():
    verdicts = [v for path in fixture_paths() for v in expectations(path.read_text(encoding="utf-8")).verdicts]
    for code in ("OPT201", "OPT202", "OPT203"):
        kinds = {verdict for _, c, verdict in verdicts if c == code}
        assert {"safe", "validate", "keep"} <= kinds, (code, kinds)
