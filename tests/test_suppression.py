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


# -- only real comments count (tokenize in Python, clang's comment tokens in C++) ----------------------


def test_the_marker_inside_a_python_string_silences_nothing():
    text = 'note = "# optpatch: ignore"; x = torch.zeros(3)\ny = torch.zeros(3)  # optpatch: ignore\n'
    assert _silenced(text, "python", [1, 2], "OPT101") == ([2], [])
    docstring = '"""\n# optpatch: ignore\n"""\nx = torch.zeros(3)\n'
    assert find_suppressions(docstring, "python") == []


def test_the_marker_inside_a_cpp_string_or_raw_string_silences_nothing():
    text = (
        'void f(int n) {\n  const char* s = "// optpatch: ignore"; int a[n];\n'
        '  auto r = R"x(\n// optpatch: ignore\n)x"; int b[n];\n'
        "  int c[n];  // optpatch: ignore[OPT201]\n}\n"
    )
    assert _silenced(text, "cpp", [2, 5, 6]) == ([6], [])


def test_a_python_file_that_does_not_tokenize_keeps_the_comments_before_the_error():
    text = "x = torch.zeros(3)  # optpatch: ignore\ny = (\n"
    assert _silenced(text, "python", [1], "OPT101") == ([1], [])


def test_a_file_without_the_marker_is_never_tokenized(monkeypatch):
    import tokenize

    def refuse(*args, **kwargs):
        raise AssertionError("tokenized a file that holds no suppression marker")

    monkeypatch.setattr(tokenize, "generate_tokens", refuse)
    assert find_suppressions("x = 1  # noqa: F401\ny = 'optpatch ignore'\n" * 100, "python") == []


# -- ruff's noqa ----------------------------------------------------------------------------------------


def test_noqa_with_an_optpatch_code_silences_that_code_on_its_own_line():
    text = "x = torch.zeros(3)  # noqa: OPT101\n# noqa: OPT101\ny = torch.zeros(3)\n"
    assert _silenced(text, "python", [1, 3], "OPT101") == ([1], [2])  # not the line below, as in ruff
    assert _silenced("x = torch.zeros(3)  # noqa: E501, OPT102\n", "python", [1], "OPT101") == ([], [1])
    assert _silenced("x = torch.zeros(3)  # NOQA:e501,opt101\n", "python", [1], "OPT101") == ([1], [])


def test_a_bare_noqa_or_one_for_other_tools_is_left_to_them():
    """Neither silences an optpatch finding, and neither is reported as an unused suppression."""
    for comment in ("# noqa", "# noqa: E501", "# noqa: F401, E501", "# noqa:E731"):
        assert _silenced(f"x = torch.zeros(3)  {comment}\n", "python", [1], "OPT101") == ([], []), comment
