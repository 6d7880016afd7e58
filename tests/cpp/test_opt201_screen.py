"""OPT201's screen (whether the text may declare an array of non-literal size) may skip a file only where the full
check on its parse finds nothing, and must spare the parse where it can: that is all it is for.
"""

from __future__ import annotations

import sys

import pytest

from optpatch import passes
from optpatch.rule import load_rules, select_rules

from cpp_fixtures import cases_without_findings, screen_corpus, screened_findings, unscreened_findings

RULE = select_rules(load_rules(), ["OPT201"])[0]
SCREEN = sys.modules[RULE.__module__.rsplit(".", 1)[0] + ".screen"]

USED = "  consume(a, n);\n}\n"  # no `a[i]`: each case below is found by its own spelling alone
CASES = {
    # Skipped: no `[` opens a declarator of non-literal size.
    "subscripts-only.cpp": "void f(float* a, int i) {\n  a[i] = a[i + 1];\n  g(a[0]);\n  return a[i];\n}\n",
    "literal-bounds.cpp": "void f() {\n  float a[16][0x4];\n  a[1][2] = 0;\n}\n",
    "operator.cpp": "struct S {\n  float& operator[](int i);\n};\n",
    "new-array.cpp": "void f(int n) {\n  float* p = new float[n];\n  delete[] p;\n}\n",
    "lambda-and-attribute.cpp": "void f(int n) {\n  [[maybe_unused]] int k = n;\n  auto g = [&](int i) { return i; };\n}\n",
    "reads.cpp": (
        "void f(int n, float* a, int* s) {\n  auto [x, y] = pair(n);\n  std::cout << a[n] << &a[n];\n  if (n < a[n]) g();\n"
        "  int b[] = {1, 2};\n  extern float c[];\n}\nstruct [[nodiscard]] S {};\n"
    ),
    "in-comments.cpp": (
        "// a[n] is the row\n/*\n * A[i] is compatible with B[i]\n */\nvoid f(float* a, int n) {\n"
        "  g(a); /* b[n] */\n  g(a); // c[n]\n}\n"
    ),
    "expressions.cpp": (
        "struct S {\n  float* q;\n};\nvoid f(float* m, float* p, int j, float b1, S* s, bool c) {\n"
        "  m[j] = b1 * m[j];\n  float x = s->q[0] * p[j];\n  float y = c ? p[j] : 0;\n  if (j > 0) p[j] = 0;\n"
        "  float z = x + (b1 * p[j]);\n  if ((int)p[j] > 0) z = -m[j];\n  y = z + static_cast<const float*>(p)[j];\n"
        "  {  // L2\n    p[j] = 0;\n    // note\n    m[j] = x + y;\n  }\n}\n"
    ),
    "arguments.cpp": (
        "#include <cstdio>\nvoid g(int a, float b);\nvoid h(const int* a);\n"
        "#define CHECK(x) g(0, x)\n#define CHECK_BOTH(x) CHECK(x); CHECK(x)\n"
        "void f(float* a, int i) {\n  g(i, a[i]);\n  g(-1, a[i + 1]);\n  printf(\"%d [%f]\\n\", i, a[i]);\n"
        "  printf(\"\\e[1m%f\\e[0m\\n\", a[i]);\n  CHECK_BOTH(a[i]);\n}\n"
    ),
    "constant-bounds.cu": (
        "#define ILP 4\n#define ROWS (8)\ntemplate <int N>\n__global__ void k(float* out) {\n"
        "  float r[ILP];\n  float q[ROWS / 2][ILP * 2];\n  __shared__ float s[N];\n"
        "  r[0] = q[0][0] = s[0] = out[0];\n  out[1] = r[0];\n}\n"
    ),
    # Checked in full: a declarator of non-literal size, however spelt.
    "after-an-initialised-declarator.cpp": "void f(int n) {\n  int k = n * 2, a[n];\n  consume(a, k);\n}\n",
    "pointer-after-an-initialised-declarator.cpp": (
        "void f(int n) {\n  float* k = nullptr, *a[n];\n  consume(a, n);\n  consume(k, n);\n}\n"
    ),
    "for-initialiser.cpp": "void f(int n) {\n  for (int i = 0, a[n]; i < n; ++i) consume(a, i);\n}\n",
    "macro-argument.cpp": "#define DECL(d) float d\nvoid f(int n) {\n  DECL(a[n]);\n" + USED,
    "macro-argument-through-a-macro.cpp": (
        "#define DECL(d) float d\n#define AGAIN(d) DECL(d)\nvoid f(int n) {\n  AGAIN(a[n]);\n" + USED
    ),
    "macro-typed-argument.cpp": "#define DECL(t, d) t d\nvoid f(int n) {\n  DECL(float, a[n]);\n" + USED,
    "parenthesised-whole.cpp": "void f(int n) {\n  float (a[n]);\n" + USED,
    "bound-undefined.cpp": "#define N 4\n#undef N\nvoid f(int N) {\n  float a[N];\n  consume(a, N);\n}\n",
    "bound-defined-after.cpp": "void f(int ILP) {\n  float a[ILP];\n  consume(a, ILP);\n}\n#define ILP 4\n",
    "bound-defined-where-not-compiled.cpp": (
        "#if 0\n#define ILP 4\n#endif\nvoid f(int ILP) {\n  float a[ILP];\n  consume(a, ILP);\n}\n"
    ),
    "bound-defined-as-a-name.cpp": "#define ROWS n\nvoid f(int n) {\n  float a[ROWS];\n" + USED,
    "shared-redefined.cu": "#define __shared__\nvoid f(int n) {\n  __shared__ float a[n];\n" + USED,
    "after-a-trailing-comment.cpp": "void f(int n) {\n  g(n);  // x =\n  float a[n];\n" + USED,
    "plain.cpp": "void f(int n) {\n  float a[n];\n" + USED,
    "comment-before-the-bracket.cpp": "void f(int n) {\n  float a /* rows */ [n];\n" + USED,
    "comment-line-before-the-bracket.cpp": "void f(int n) {\n  float a  // = b\n    [n];\n" + USED,
    "continued-line.cpp": "void f(int n) {\n  float a \\\n    [n];\n" + USED,
    "second-dimension.cpp": "void f(int n) {\n  float a[4][n];\n" + USED,
    "parenthesised.cpp": "void f(int n) {\n  float (a)[n];\n" + USED,
    # (A file with no `[` at all is not OPT201's: its trigger word. This one has a subscript the screen skips.)
    "digraph.cpp": "void f(int n, float* x) {\n  float a<:n:>;\n  consume(a, x[0]);\n}\n",
    "pasted.cpp": "#define CAT(x, y) x##y\nvoid f(int n) {\n  float CAT(a, b)[n];\n  consume(ab, n);\n}\n",
    "macro-body.cpp": "#define BUFFER(n) float a[n]\nvoid f(int n) {\n  BUFFER(n);\n" + USED,
    "after-a-call.cpp": "void f(int n) {\n  g(n); float a[n];\n" + USED,
    "after-a-url.cpp": 'void f(int n) {\n  log("http://x"); float a[n];\n' + USED,
    "after-a-closed-comment.cpp": "void f(int n) {\n  /* // */ float a[n];\n" + USED,
    "after-a-string-that-opens-no-comment.cpp": 'const char* open = "/*";\nvoid f(int n) {\n  float a[n];\n' + USED,
}
SKIPPED = ("subscripts-only.cpp", "literal-bounds.cpp", "operator.cpp", "new-array.cpp", "lambda-and-attribute.cpp",
           "reads.cpp", "in-comments.cpp", "expressions.cpp", "arguments.cpp", "constant-bounds.cu")


SOURCES = screen_corpus(RULE, "[", CASES)


@pytest.mark.parametrize("name,text", SOURCES, ids=[name for name, _ in SOURCES])
def test_the_screen_changes_no_finding(name, text, monkeypatch):
    screened = screened_findings(RULE, name, text)
    assert unscreened_findings(RULE, name, text, monkeypatch) == screened


def test_every_checked_case_has_a_finding():
    assert [name for name in CASES if name not in SKIPPED and not SCREEN.may_declare_an_array(CASES[name])] == []
    assert cases_without_findings(RULE, CASES, SKIPPED) == []


@pytest.mark.parametrize("name", SKIPPED)
def test_files_that_declare_no_such_array_are_not_parsed(name, monkeypatch):
    monkeypatch.setattr(passes, "parse", lambda *args: pytest.fail("parsed"))
    assert not SCREEN.may_declare_an_array(CASES[name])
    assert screened_findings(RULE, name, CASES[name]) == []


def test_block_comments_are_found_as_a_scan_back_would():
    # `_in_a_comment` asks where the last `/*` before each `[` is, and whether a `*/` follows it: from positions
    # found once per file, where it scanned back from each `[` (quadratic in a file with a licence header).
    import random

    rng = random.Random(7)
    text = "".join(rng.choice(["/*", "*/", "/", "*", "a", "\n", " "]) for _ in range(3000))
    comments = SCREEN.TextMarks(text)
    for at in range(len(text) + 1):
        assert comments.last_open_before(at) == text.rfind("/*", 0, at)
        for start in (at // 2, max(0, at - 5)):
            assert comments.closed_between(start, at) == (text.find("*/", start, at) >= 0)


def test_a_file_with_a_very_long_line_is_parsed_not_screened():
    # Each look at a `name[` reads its line: a generated or minified line of thousands of subscripts would make the
    # screen quadratic, so such a file goes to the parse, whose check judges it from the tree.
    long_line = "float f(float* x) { return " + " + ".join(f"x[{i}]" for i in range(1000)) + "; }\n"
    assert SCREEN.may_declare_an_array(long_line)
    assert not SCREEN.may_declare_an_array(long_line.replace(" + ", " +\n"))
