"""discovery.GitIgnore: one search of all a .gitignore's patterns before pathspec, and always pathspec's answer."""

from __future__ import annotations

import random

import pathspec

from optpatch.discovery import GitIgnore, discover

PATTERNS = [
    "*.pyc", "__pycache__/", "/build", "docs/_build/", "**/logs/**", "!keep.log", "*.log", "data/*.bin",
    "!data/important.bin", "foo/**/bar", "[abc]*.tmp", "weird\\ name.py", "/ckpt*/", "*.egg-info/", "tmp?",
    "nested/dir/", "a/b/c.py", "**/x_*", "!x_keep", "secret/", "!secret/open.py", "#not a pattern", "",
]
WORDS = ["a", "b", "c", "foo", "bar", "data", "docs", "_build", "logs", "keep.log", "x.log", "important.bin",
         "other.bin", "build", "ckpt1", "tmp1", "tmp", "atmp.tmp", "d.tmp", "nested", "dir", "c.py", "x_y.py",
         "x_keep", "secret", "open.py", "weird name.py", "model.py", "kernel.cu", "m.egg-info", "__pycache__"]


def _paths(rng: random.Random, count: int) -> list[str]:
    paths = []
    for _ in range(count):
        parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 5))]
        path = "/".join(parts)
        paths.append(path + "/" if rng.random() < 0.3 else path)
    return paths


def test_the_union_answers_as_pathspec_on_every_path():
    rng = random.Random(30)
    for trial in range(40):
        lines = rng.sample(PATTERNS, rng.randint(1, len(PATTERNS)))
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        ignore = GitIgnore(spec)
        assert ignore._any is not None  # joined: the search in front is there
        for path in _paths(rng, 300):
            assert ignore.match_file(path) == spec.match_file(path), (lines, path)


def test_a_gitignore_without_deciding_patterns_ignores_nothing():
    ignore = GitIgnore(pathspec.GitIgnoreSpec.from_lines(["# only a comment", ""]))
    assert not ignore.match_file("anything.py") and not ignore.match_file("dir/")


def test_discovery_leaves_out_what_the_gitignore_does(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n!keep.py\nbuild_out/\n")
    for rel in ("a.py", "keep.py", "k.cu", "build_out/b.cu", "src/keep.py", "src/c.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    assert [rel for _, rel in discover(tmp_path).files] == ["k.cu", "keep.py", "src/keep.py"]
