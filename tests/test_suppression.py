"""Which findings an `optpatch: ignore` comment silences, and which comments silence nothing."""

from __future__ import annotations

from optpatch.model import Context, Finding, Impact, Verdict
from optpatch.suppression import apply_suppressions, find_suppressions


def _finding(line: int, code: str = "OPT201") -> Finding:
    return Finding(code=code, name="rule", path="f.cpp", line=line, col=3, verdict=Verdict.KEEP, reason="why",
                   context=Context.CALL, impact=Impact.NONE, impact_basis="basis")


def _silenced(text: str, language: str, lines: list[int], code: str = "OPT201") -> tuple[list[int], list[int]]:
    """(lines whose finding is silenced, lines of the comments that silenced nothing)."""
    suppressions = find_suppressions(text, language)
    kept, _ = apply_suppressions([_finding(line, code) for line in lines], suppressions)
    silenced = sorted(set(lines) - {finding.line for finding in kept})
    return silenced, [s.line for s in suppressions if not s.used]


def test_a_comment_alone_on_its_line_covers_the_line_below():
    text = "void f(int n) {\n  // optpatch: ignore[OPT201]\n  int a[n];\n  int b[n];\n}\n"
    assert _silenced(text, "cpp", [3, 4]) == ([3], [])


def test_a_comment_after_code_covers_only_its_own_line():
    text = "void f(int n) {\n  int a[n];  // optpatch: ignore[OPT201]\n  int b[n];\n}\n"
    assert _silenced(text, "cpp", [2, 3]) == ([2], [])


def test_a_comment_for_another_rule_silences_nothing():
    text = "x = torch.zeros(3)  # optpatch: ignore[OPT102]\n"
    assert _silenced(text, "python", [1], "OPT101") == ([], [1])


def test_lines_are_counted_as_the_source_counts_them():
    # A form feed is not a line break to Python or to optpatch's positions.
    text = "a = 1\x0c\nx = torch.zeros(3)  # optpatch: ignore\n"
    assert _silenced(text, "python", [2], "OPT101") == ([2], [])
