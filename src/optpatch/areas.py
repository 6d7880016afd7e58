"""Which part of a project a path belongs to: the library, its tests, or the code around it.

A saving in library code reaches every user; one in a test, a benchmark or
an example script reaches nobody's production run. The report says which
is which (findings, summary, JSON, PR body), and rules use it to judge
value: code in tests is never on a model's per-step path.

The area is read from the path alone, the way projects lay themselves out:
the first directory or file name that says "tests" or "benchmarks/examples"
decides, so `benchmarks/test_utils.py` counts as a benchmark and
`tests/benchmarks/x.py` as a test. The `areas` setting overrides it for
the paths its gitignore-style patterns match (`{"mypkg/testing/**" =
"tests"}`); where several match, the last one written wins, as in a
`.gitignore`.

Inside a library file, a module's self-test is test code too
(`self_test_lines`): its `if __name__ == "__main__":` block and its
module-level `def test*()` functions, which inference engines keep beside
their kernels (lightllm's Triton kernels each end in a `test()` and a
`__main__` block that runs it). A site there is in `tests`, read from the
text alone, so the analysis cache keeps it.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

import pathspec

from optpatch.model import CodeArea

_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "unit_tests", "test_utils", "testutils"})
_AROUND_DIRS = frozenset({
    "benchmark", "benchmarks", "bench", "benches", "example", "examples", "scripts", "script", "tools",
    "tool", "docs", "doc", "tutorial", "tutorials", "notebooks", "demo", "demos", "profiling", "profiler",
    "samples", "sample", "recipes", "playground",
    # Code kept for reference, which the package no longer imports (ktransformers keeps its old framework in
    # `archive/`: every default fix of a run landed there). Not `legacy/`: Megatron-LM still runs `megatron/legacy`.
    "archive", "archived", "attic",
})
_TEST_FILE = re.compile(r"^(test_.*|.*_test|.*_tests|conftest)\.[A-Za-z]+$")
_AROUND_FILE = re.compile(r"^(bench_.*|benchmark_.*|.*_benchmark|.*_bench|profile_.*|.*_profile|.*_profiler)\.[A-Za-z]+$")


@lru_cache(maxsize=4096)
def area_of(rel: str, overrides: tuple[tuple[str, CodeArea], ...] = (), pattern_rel: str | None = None) -> CodeArea:
    """The area of a path relative to the scanned root, with forward slashes; OVERRIDES: the `areas` setting, whose
    patterns see the path as PATTERN_REL (relative to their configuration's folder; None: REL)."""
    for pattern, area in reversed(overrides):
        if _spec(pattern).match_file(rel if pattern_rel is None else pattern_rel):
            return area
    return _area_by_name(rel)


@lru_cache(maxsize=256)
def _spec(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _area_by_name(rel: str) -> CodeArea:
    """The path heuristic: the first directory or file name that says tests or benchmarks decides."""
    parts = rel.lower().split("/")
    for part in parts[:-1]:
        if part in _TEST_DIRS or part.startswith("test_"):
            return CodeArea.TESTS
        if part in _AROUND_DIRS:
            return CodeArea.BENCHMARKS
    name = parts[-1]
    if _TEST_FILE.match(name):
        return CodeArea.TESTS
    if _AROUND_FILE.match(name):
        return CodeArea.BENCHMARKS
    return CodeArea.LIBRARY


def self_test_lines(tree: ast.Module) -> tuple[tuple[int, int], ...]:
    """The first and last lines of a module's self-test: its `if __name__ == "__main__":` blocks and its module-level
    functions named `test*` (as frequency.py names a test's function)."""
    found = []
    for statement in tree.body:
        kind = type(statement)
        if (kind is ast.FunctionDef or kind is ast.AsyncFunctionDef) and statement.name.startswith("test") \
                or kind is ast.If and _runs_as_a_script(statement.test):
            first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])
            found.append((first, statement.end_lineno or statement.lineno))
    return tuple(found)


def _runs_as_a_script(test: ast.expr) -> bool:
    """`__name__ == "__main__"`, either way round."""
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = (test.left, test.comparators[0])
    names = {side.id for side in sides if type(side) is ast.Name}
    values = {side.value for side in sides if type(side) is ast.Constant}
    return names == {"__name__"} and values == {"__main__"}
