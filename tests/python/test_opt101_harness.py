"""The fixture harness fails when it should: wrong verdicts, wrong goldens, missing cases, a kept line changed."""

import pytest

from annotated import check_fixture, forced_rewrite, sites

SITE = """import torch


def f(src):
    x = torch.zeros(3)  # expect: OPT101 {verdict}
    x.copy_(src)
    return x


def case_f():
    return f(torch.ones(3))
"""


def _write(tmp_path, text, golden=None):
    path = tmp_path / "fixture.py"
    path.write_text(text)
    if golden is not None:
        path.with_suffix(".fixed.py").write_text(golden)
    return path


def _golden(text):
    return text.replace("torch.zeros(3)", "torch.empty(3)")


def test_a_correct_fixture_passes(tmp_path):
    text = SITE.format(verdict="fix")
    check_fixture(_write(tmp_path, text, _golden(text)), ("OPT101",))


@pytest.mark.parametrize("verdict", ["keep", "validate", "none"])
def test_a_wrong_verdict_fails(tmp_path, verdict):
    text = SITE.format(verdict=verdict)
    with pytest.raises(AssertionError):
        check_fixture(_write(tmp_path, text, _golden(text)), ("OPT101",))


def test_a_missing_golden_fails(tmp_path):
    with pytest.raises(AssertionError, match="has no fixture.fixed.py"):
        check_fixture(_write(tmp_path, SITE.format(verdict="fix")), ("OPT101",))


def test_a_wrong_golden_fails(tmp_path):
    text = SITE.format(verdict="fix")
    with pytest.raises(AssertionError):
        check_fixture(_write(tmp_path, text, _golden(text).replace("copy_", "copy_ ")), ("OPT101",))


def test_a_fixture_without_cases_fails(tmp_path):
    text = SITE.format(verdict="fix").split("def case_f")[0]
    with pytest.raises(AssertionError, match="no case_"):
        check_fixture(_write(tmp_path, text, _golden(text)), ("OPT101",))


def test_a_case_that_raises_in_the_original_fails(tmp_path):
    text = SITE.format(verdict="fix").replace("torch.ones(3)", "torch.ones(4)")
    with pytest.raises(AssertionError, match="cases of the original raise"):
        check_fixture(_write(tmp_path, text, _golden(text)), ("OPT101",))


def test_annotations_are_read_with_their_forced_marker():
    text = "x = torch.zeros(3)  # expect: OPT101 keep; forced: fails\ny = torch.zeros(2)  # expect: OPT101 fix\n"
    assert [(s.line, s.verdict, s.forced_fails) for s in sites(text)] == [(1, "keep", True), (2, "fix", False)]
    assert forced_rewrite(text, 1).splitlines()[0] == "x = torch.empty(3)  # expect: OPT101 keep; forced: fails"
    with pytest.raises(AssertionError, match="no zeros allocation"):
        forced_rewrite("x = 1\n", 1)
