"""OPT201's fast path (clang's VLA warning plus a `cursor_at` look at each `name[`)
must give the verdicts of the plain walk over every node, and must skip the walk
where it can: that is all it is for.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from optpatch.config import Settings
from optpatch.cpp_frontend import CppUnit
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile

from cpp_fixtures import corpus

RULE = select_rules(load_rules(), ["OPT201"])[0]
CANDIDATES = sys.modules[RULE.__module__.rsplit(".", 1)[0] + ".candidates"]

# Template-dependent bounds: the cases the fast path judges on a detached subtree.
DEPENDENT = {
    "constant-per-instantiation.cu": (
        "template <typename T> void f(T* out) {\n"
        "  constexpr int per_load = 16 / sizeof(T);\n"
        "  T buffer[per_load * 2];\n"
        "  buffer[0] = out[0];\n"
        "  out[1] = buffer[0];\n"
        "}\n"
    ),
    "template-parameter.cu": "template <int N> void f(int* out) {\n  int a[N];\n  a[0] = 1;\n  out[0] = a[0];\n}\n",
    "runtime-in-template.cu": (
        "template <typename V> void f(const V& v, int* out) {\n"
        "  int a[v.size()];\n"
        "  a[0] = 1;\n"
        "  out[0] = a[0];\n"
        "}\n"
    ),
    "runtime-parameter-in-template.cu": (
        "template <typename T> void f(T n, int* out) {\n  int a[n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "runtime-plus-template-parameter.cu": (
        "template <int N> void f(int n, int* out) {\n  int a[n + N];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "dependent-element-type.cu": (
        "template <typename T> void f(int n, T* out) {\n  T a[n];\n  a[0] = out[0];\n  out[1] = a[0];\n}\n"
    ),
    "macro-in-template.cu": (
        "#define BUFFER(n) int buffer[n]\n"
        "template <int N> void f(int n, int* out) {\n  BUFFER(n + N);\n  buffer[0] = 1;\n  out[0] = buffer[0];\n}\n"
    ),
    "silenced.cpp": (
        "#pragma clang diagnostic ignored \"-Wvla-cxx-extension\"\n"
        "void f(int n, int* out) {\n  int a[n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    # Silenced warnings, each with a declarator after `}` that `_never_declared_here` skips: only the walk sees it.
    "silenced-by-line-marker.cpp": (
        '# 1 "vendor.h" 3\nvoid f(int n, int* out) {\n  struct { int x; } a[n];\n  a[0].x = 1;\n  out[0] = a[0].x;\n}\n'
    ),
    "silenced-by-pragma-macro.cpp": (
        "#define QUIET(x) _Pragma(#x)\nQUIET(clang diagnostic ignored \"-Wvla-cxx-extension\")\n"
        "void f(int n, int* out) {\n  struct { int x; } a[n];\n  a[0].x = 1;\n  out[0] = a[0].x;\n}\n"
    ),
    "silenced-by-digraph.cpp": (
        "%:pragma clang diagnostic ignored \"-Wvla-cxx-extension\"\n"
        "void f(int n, int* out) {\n  struct { int x; } a[n];\n  a[0].x = 1;\n  out[0] = a[0].x;\n}\n"
    ),
    "silenced-on-a-continued-line.cpp": (
        "#pragma clang \\\n  diagnostic ignored \"-Wvla-cxx-extension\"\n"
        "void f(int n, int* out) {\n  struct { int x; } a[n];\n  a[0].x = 1;\n  out[0] = a[0].x;\n}\n"
    ),
    "a-word-not-a-pragma.cu": (
        "#pragma unroll\nvoid f(int* a, bool diagnostics) {\n  if (diagnostics) a[0] = a[1];\n}\n"
    ),
    # Integer-literal bounds are never looked up: in a macro body, in a template, beside a dependent one.
    "literal-bound-in-a-macro.cu": (
        "#define HOST char hostname[1024]; int ports[0x10u]\n"
        "template <int N> void f(int n, int* out) {\n  HOST;\n  int a[n + N];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "literal-bounds-only.cu": (
        "#define HOST char hostname[1024]\n"
        "template <typename T> void f(T* out) {\n  HOST;\n  T b[16];\n  T c[4][2];\n  b[0] = out[0];\n  out[1] = b[0] + c[0][1];\n}\n"
    ),
    # Variable-length arrays no `name[` of the text shows as declared (after `}`, `)`, comments, a line
    # continuation, in a macro, with digraphs): clang's warning must send them to the walk.
    "after-an-anonymous-struct.cpp": (
        "void f(int n, int* out) {\n  struct { int x; } a[n];\n  a[0].x = 1;\n  out[0] = a[0].x;\n}\n"
    ),
    "parenthesised-name.cpp": "void f(int n, int* out) {\n  int (a)[n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n",
    "after-a-line-comment.cpp": (
        "void f(int n, int* out) {\n  int  // the bound;\n    a[n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "after-a-block-comment.cpp": "void f(int n, int* out) {\n  int a /* n */ [n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n",
    "over-a-line-continuation.cpp": "void f(int n, int* out) {\n  int a \\\n[n];\n  a[0] = 1;\n  out[0] = a[0];\n}\n",
    "declared-by-a-macro.cpp": (
        "#define BUFFER(name, size) int name[size]\n"
        "void f(int n, int* out) {\n  BUFFER(a, n);\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "spelled-with-digraphs.cpp": "void f(int n, int* out) {\n  int a<:n:>;\n  a[0] = 1;\n  out[0] = a[0];\n}\n",
    # Subscripts, lambdas, attributes, literal and empty bounds, `operator[]`: nothing to find.
    "nothing-but-expressions.cu": (
        "struct V { int& operator[](int i); };\n[[nodiscard]] int g(int* p, V& v, int n);\n"
        "void f(int* p, V& v, int n) {\n  int b[4];\n  int c[] = {1, 2};\n  p[n] = b[0] + c[1];\n"
        "  auto h = [&](int i) { return p[i]; };\n  v[n] = h(n) + g(p, v, p[n - 1]);\n  delete[] p;\n}\n"
    ),
    "subscripts-only.cu": "void f(int* a, int n) {\n  for (int i = 0; i < n; ++i) a[i] = a[n - i];\n}\n",
    "two-declarators.cpp": "void f(int n, int* out) {\n  int x = 0, a[n];\n  a[0] = x;\n  out[0] = a[0];\n}\n",
    # Declarators after `,`, `::` and `(`, and a macro body of expressions: `_never_declared_here` must not skip them.
    "dependent-after-comma-and-scope.cu": (
        "template <int N> struct S { static int arr[N]; };\ntemplate <int N> int S<N>::arr[N];\n"
        "template <int N> void f(int n, int* out) {\n  int x = 0, a[n + N];\n  a[0] = x;\n  out[0] = a[0];\n}\n"
    ),
    "declarator-after-a-line-comment.cu": (
        "template <int N> void f(int n, int* out) {\n  int  // the bound: n + N;\n    a[n + N];\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    "parenthesised-declarator.cpp": (
        "template <int N> void f(int n, int* out) {\n  int (a[n + N]);\n  a[0] = 1;\n  out[0] = a[0];\n}\n"
    ),
    # A macro whose body only reads arrays (mmcv's filtered_lrelu.cu): an expression in every expansion.
    "macro-of-reads.cu": (
        "#define STEP(PX) \\\n  v += b * (float)c_fu[(PX) * up + k]; \\\n  b = s_tile[src + (PX)];\n"
        "template <int N> void f(const float* c_fu, const float* s_tile, int src, int up, int k, float* out) {\n"
        "  float v = 0, b = 0;\n  STEP(0)\n  STEP(1)\n  out[0] = v + b;\n}\n"
    ),
    "macro-of-expressions.cu": (
        "#define AT(p, i) = p[i]\n#define DECL(n) int buf[n]\n"
        "template <int N> void f(int n, int* out) {\n  DECL(n + N);\n  int y AT(out, 0);\n  out[1] = y + buf[0];\n}\n"
    ),
}


def _sources() -> list[tuple[str, str]]:
    return corpus(RULE) + sorted(DEPENDENT.items())


def _source(name: str, text: str) -> SourceFile:
    return SourceFile(name, Path(name), text.encode(), text, "utf-8", False, "cpp")


def _verdicts(name: str, text: str) -> list[tuple]:
    source = _source(name, text)
    result = analyse_file(source, [RULE], Settings(), FixPolicy())
    assert result.error is None, result.error
    return [(f.line, f.col, f.verdict, f.fix, f.reason, f.proof) for f in result.findings]


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_fast_path_agrees_with_the_walk_over_every_node(name, text, monkeypatch):
    fast = _verdicts(name, text)
    monkeypatch.setattr(CANDIDATES, "array_declarations", CANDIDATES.all_array_declarations)
    assert _verdicts(name, text) == fast


@pytest.mark.parametrize("name", [
    "constant-per-instantiation.cu", "template-parameter.cu", "subscripts-only.cu", "a-word-not-a-pragma.cu",
    "literal-bounds-only.cu", "nothing-but-expressions.cu", "macro-of-reads.cu",
])
def test_files_without_a_candidate_are_judged_without_the_tree(name):
    unit = CppUnit(_source(name, DEPENDENT[name]))
    assert list(RULE().check(unit)) == []
    assert not unit.has_tree


@pytest.mark.parametrize("name", [
    "runtime-plus-template-parameter.cu", "macro-in-template.cu", "silenced.cpp", "two-declarators.cpp",
    "silenced-by-line-marker.cpp", "silenced-by-pragma-macro.cpp", "silenced-by-digraph.cpp",
    "silenced-on-a-continued-line.cpp", "literal-bound-in-a-macro.cu", "declarator-after-a-line-comment.cu",
    "after-an-anonymous-struct.cpp", "parenthesised-name.cpp", "after-a-line-comment.cpp", "after-a-block-comment.cpp",
    "over-a-line-continuation.cpp", "declared-by-a-macro.cpp", "spelled-with-digraphs.cpp",
    "dependent-after-comma-and-scope.cu", "parenthesised-declarator.cpp", "macro-of-expressions.cu",
])
def test_candidates_still_get_the_whole_tree(name):
    unit = CppUnit(_source(name, DEPENDENT[name]))
    list(RULE().check(unit))
    assert unit.has_tree


def test_a_name_that_only_an_expression_can_precede_is_not_looked_up(monkeypatch):
    """`x = a[i]`, `; a[i]`, `-b[i]`, `p->c[i]`, `s.d[i]`: no declaration, so no clang lookup; `int e[K]` is one.
    Nor is a name whose bound is an integer literal (`g(a[1])`, `int h[4]`): constant size, whatever it is."""
    text = (
        "template <int K> void f(int* a, int* b, S* p, S s, int k) {\n  a[k] = b[1];\n  a[1] = -b[k] + b[2];\n"
        "  p->c[k] = s.d[1];\n  int e[K];\n  g(a[1], b [ 0x2u ]);\n  int h[4];\n}\n"
    )
    looked_up = []
    cursor_at = CppUnit.cursor_at
    monkeypatch.setattr(CppUnit, "cursor_at", lambda unit, offset: looked_up.append(offset) or cursor_at(unit, offset))
    list(RULE().check(CppUnit(_source("m.cu", text))))
    assert looked_up == [text.index("e[K]")]


FORWARD = __import__("re").compile(r"\b([A-Za-z_]\w*)\s*\[")  # how the `name[` were found before: every word tried


def test_the_names_before_brackets_read_backwards_are_the_forward_regex_matches():
    import random

    texts = [text for _, text in corpus(RULE)]
    generator = random.Random(7)
    alphabet = "ab_Z9 \t\n[]é(*"
    texts += ["".join(generator.choice(alphabet) for _ in range(generator.randint(0, 24))) for _ in range(5000)]
    for text in texts:
        expected = [(m.start(1), m.end(1), m.end()) for m in FORWARD.finditer(text)]
        assert CANDIDATES._names_before_brackets(text) == expected, text


def test_pragma_lines_are_found_as_a_backtracking_search_finds_them_and_in_linear_time():
    """`_PRAGMA_LINE` takes a line's first `#` and the first `pragma` after it: the lines (with their continuations)
    that the plain pattern, which tried every `#` of a line, finds; a line of 300,000 `#` once took it seconds."""
    import random
    import re
    import signal

    plain = re.compile(r"^[^\n]*#[^\n]*pragma(?:[^\n]*\\\r?\n)*[^\n]*", re.M)
    pieces = ["#", "pragma", " ", "x", "\\\n", "\\\r\n", "\n", "/*", "diagnostic", "%:"]
    generator = random.Random(11)
    for _ in range(20000):
        text = "".join(generator.choice(pieces) for _ in range(generator.randint(0, 30)))
        assert CANDIDATES._PRAGMA_LINE.findall(text) == plain.findall(text), repr(text)

    def hung(*_):
        raise TimeoutError("the pragma pattern is not linear")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        assert not CANDIDATES._may_silence_the_vla_warning("// diagnostic\n" + "#" * 300_000 + "\n")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
