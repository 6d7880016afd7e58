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
"""

from __future__ import annotations

import re
from functools import lru_cache

import pathspec

from optpatch.model import CodeArea

_TEST_DIRS = frozenset({"test", "tests", "testing", "unittest", "unittests", "unit_tests", "test_utils", "testutils"})
_AROUND_DIRS = frozenset({
    "benchmark", "benchmarks", "bench", "benches", "example", "examples", "scripts", "script", "tools",
    "tool", "docs", "doc", "tutorial", "tutorials", "notebooks", "demo", "demos", "profiling", "profiler",
    "samples", "sample", "recipes", "playground",
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
