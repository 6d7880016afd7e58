"""OPT203's screen (a call-shaped `zeros(` in the text, or a macro) may skip a file only where the full check finds
nothing, and must spare the parse where it can: that is all it is for.
"""

from __future__ import annotations

import sys

import pytest

from optpatch import passes
from optpatch.rule import load_rules, select_rules

from cpp_fixtures import cases_without_findings, screen_corpus, screened_findings, unscreened_findings

RULE = select_rules(load_rules(), ["OPT203"])[0]
SITES = sys.modules[RULE.__module__.rsplit(".", 1)[0] + ".sites"]

FILLED = "  t.fill_(1);\n  return t;\n}\n"
CASES = {
    # Skipped: the word, but no call of it.
    "in-a-comment.cpp": "// the accumulator starts at zeros, as cute::clear leaves it\nvoid f(int n) { }\n",
    "a-variable.cpp": "void f(int n) {\n  int zeros = 0;\n  zeros += n;\n}\n",
    # Checked in full: a call, possibly spelt apart or through a macro.
    "called.cpp": "torch::Tensor f(int n) {\n  auto t = torch::zeros({n}, torch::kFloat);\n" + FILLED,
    "comment-before-the-arguments.cpp": "torch::Tensor f(int n) {\n  auto t = at::zeros /* sizes */ ({n}, torch::kFloat);\n" + FILLED,
    "arguments-on-the-next-line.cpp": "torch::Tensor f(int n) {\n  auto t = at::zeros_like  // same shape\n    (x);\n" + FILLED,
    "named-by-a-macro.cpp": (
        "#define ZEROS \\\n  torch::zeros\ntorch::Tensor f(int n) {\n  auto t = ZEROS({n}, torch::kFloat);\n" + FILLED
    ),
    "unparsed.cpp": "torch::Tensor f(int n) {\n  Unknown u;\n  auto t = torch::zeros({u.n}, torch::kFloat);\n" + FILLED,
}
SKIPPED = ("in-a-comment.cpp", "a-variable.cpp")


SOURCES = screen_corpus(RULE, "zeros", CASES)


@pytest.mark.parametrize("name,text", SOURCES, ids=[name for name, _ in SOURCES])
def test_the_screen_changes_no_finding(name, text, monkeypatch):
    screened = screened_findings(RULE, name, text)
    assert unscreened_findings(RULE, name, text, monkeypatch) == screened


def test_every_checked_case_has_a_finding():
    assert cases_without_findings(RULE, CASES, SKIPPED) == []


@pytest.mark.parametrize("name", SKIPPED)
def test_files_that_never_call_the_factory_are_not_parsed(name, monkeypatch):
    monkeypatch.setattr(passes, "parse", lambda *args: pytest.fail("parsed"))
    assert not SITES.may_call_a_factory(CASES[name])
    assert screened_findings(RULE, name, CASES[name]) == []
