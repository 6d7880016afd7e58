"""OPT202's screen (tokens just after each `from_blob`) may skip a file only where the full check finds nothing,
and must skip the tree where it can: that is all it is for.
"""

from __future__ import annotations

import sys

import pytest

from optpatch.cpp_frontend import CppUnit
from optpatch.rule import load_rules, select_rules

from cpp_fixtures import cases_without_findings, screen_corpus, screened_findings, text_source

RULE = select_rules(load_rules(), ["OPT202"])[0]
MODULE = sys.modules[RULE.__module__]
SCREEN = sys.modules[RULE.__module__.rsplit(".", 1)[0] + ".screen"]

SITE = "  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n}, torch::kFloat32).to(torch::kCUDA);\n"
CASES = {
    # Skipped: no call of from_blob is followed by a move.
    "named-only.cpp": "using torch::from_blob;\nvoid f(int n) { }\n",
    "not-chained.cpp": "void f(int n) {\n  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n}, torch::kFloat32);\n  t.add_(1);\n}\n",
    "in-a-comment.cpp": "// from_blob is zero-copy\nvoid f(int n) { }\n",
    "commented-out.cpp": (
        "void f(int n) {\n  std::vector<float> v(n);\n"
        "  // auto t = torch::from_blob(v.data(), {n,\n  // n}, torch::kFloat32).to(torch::kCUDA);\n}\n"
    ),
    # Checked in full: a move follows, possibly out of sight.
    "chained.cpp": "void f(int n) {\n" + SITE + "}\n",
    "chained-after-a-comment.cpp": (
        "void f(int n) {\n  std::vector<float> v(n);\n"
        "  auto t = torch::from_blob(v.data(), {n}, torch::kFloat32) /* host */ .to(torch::kCUDA);\n}\n"
    ),
    "move-in-a-macro.cpp": (
        "#define ON_GPU(x) x.to(torch::kCUDA)\n"
        "void f(int n) {\n  std::vector<float> v(n);\n  auto t = ON_GPU(torch::from_blob(v.data(), {n}, torch::kFloat32));\n}\n"
    ),
    "from-blob-in-a-macro.cpp": (
        "#define WRAP(p, n) \\\n  torch::from_blob(p, {n}, torch::kFloat32)\n"
        "void f(int n) {\n  std::vector<float> v(n);\n  auto t = WRAP(v.data(), n).to(torch::kCUDA);\n}\n"
    ),
    "after-a-url-in-a-string.cpp": (
        "void f(int n) {\n  std::vector<float> v(n);\n"
        "  log(\"http://x\"); auto t = torch::from_blob(v.data(), {n}, torch::kFloat32).to(torch::kCUDA);\n}\n"
    ),
    "unparsed.cpp": "void f(int n) {\n  UnknownType v(n);\n  auto t = torch::from_blob(v.data(), {n}, torch::kFloat32).to(torch::kCUDA);\n}\n",
}
SKIPPED = ("named-only.cpp", "not-chained.cpp", "in-a-comment.cpp", "commented-out.cpp")


def _cut_inside_cuda() -> str:
    """A call that closes just before the first window's end, which falls inside `cuda`: the screen relies on
    clang handing out the whole token that starts in the window (`cuda`, not `cu`) to judge the move at once."""
    head = "void f(int n) {\n  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n"
    tail = "}, torch::kFloat32).cuda();\n}\n"
    window_end = head.index("from_blob") + len("from_blob") + SCREEN._FIRST_WINDOW
    padding = window_end - 2 - len(head) - tail.index("cuda")
    assert padding > 0
    return head + " " * padding + tail


CASES["cut-inside-cuda.cpp"] = _cut_inside_cuda()
CASES["long-call.cpp"] = (
    "void f(int n) {\n  std::vector<float> v(n);\n  auto t = torch::from_blob(v.data(), {n"
    + " + 0" * 400 + "}, torch::kFloat32).to(torch::kCUDA);\n}\n"
)


SOURCES = screen_corpus(RULE, "from_blob", CASES)


@pytest.mark.parametrize("name,text", SOURCES, ids=[name for name, _ in SOURCES])
def test_the_screen_changes_no_finding(name, text, monkeypatch):
    screened = screened_findings(RULE, name, text)
    monkeypatch.setattr(MODULE, "may_chain_a_copy", lambda unit: True)
    assert screened_findings(RULE, name, text) == screened


def test_every_checked_case_has_a_finding():
    assert cases_without_findings(RULE, CASES, SKIPPED) == []


@pytest.mark.parametrize("name", SKIPPED)
def test_files_that_never_chain_a_copy_are_skipped_without_the_tree(name):
    unit = CppUnit(text_source(name, CASES[name]))
    assert list(RULE().check(unit)) == []
    assert not unit.has_tree and "tokens" not in unit.__dict__
