"""Damaged copies of the repository's own fixtures and example: optpatch refuses them or rewrites them soundly.

A seeded campaign (the same mutants every run) over every Python and
C++/CUDA file of tests/fixtures and examples/minivllm. `benchmarks/mutate_inputs.py`
runs the same campaign on any tree, at any size.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO_ROOT
from mutants.campaign import run_campaign
from mutants.mutations import MUTATIONS, mutate
from mutants.oracle import check_file
from optpatch.results import FileResult
from optpatch.model import FileError
from optpatch.source import language_of

CI_MUTANTS = 500
CI_SEED = 0


def repository_originals() -> list[tuple[str, bytes]]:
    roots = (FIXTURES, REPO_ROOT / "examples" / "minivllm")
    paths = sorted(p for root in roots for p in root.rglob("*") if p.is_file() and language_of(p))
    return [(p.relative_to(REPO_ROOT).as_posix(), p.read_bytes()) for p in paths]


def test_every_mutant_is_refused_with_a_reason_or_rewritten_soundly(tmp_path):
    tally = run_campaign(repository_originals(), CI_MUTANTS, CI_SEED, tmp_path)
    assert not tally.failures, "\n\n".join(failure.describe() for failure in tally.failures)
    # The campaign reaches every way a file can end, or it proves little.
    for kind in ("rewritten", "unchanged", "refused: syntax error", "refused: binary file", "refused: not valid utf-8 text"):
        assert tally.outcomes[kind] >= 5, tally.outcomes
    assert set(tally.mutations) == set(MUTATIONS)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_each_mutation_is_reproducible_and_changes_real_files(name):
    originals = repository_originals()
    changed = 0
    for index in range(20):
        rel, data = originals[index % len(originals)]
        first = MUTATIONS[name](data, random.Random(index))
        assert first == MUTATIONS[name](data, random.Random(index))
        changed += first != data
    assert changed >= 10


def test_mutate_chains_mutations_reproducibly():
    data = (REPO_ROOT / "examples" / "minivllm" / "minivllm" / "kv_cache.py").read_bytes()
    assert mutate(data, random.Random("s")) == mutate(data, random.Random("s"))
    assert len({mutate(data, random.Random(seed))[0] for seed in range(20)}) > 15


FIXABLE = b"import torch\ndef f(y):\n    x = torch.zeros(3)\n    x.copy_(y)\n    return x\n"
VALID_CPP = b"int twice(int n) {\n  return 2 * n;\n}\n"


@pytest.mark.parametrize(
    "name, original, planted, problem",
    [
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=b"def f(:\n"), "does not parse"),
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=FIXABLE.replace(b"torch.zeros", b"torchemptys")), "torchemptys"),
        ("m.cu", VALID_CPP, FileResult("m.cu", old=VALID_CPP, new=b"int twice(int n {\n"), "adds clang errors"),
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=FIXABLE + b"# again\n"), "not idempotent"),
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=FIXABLE.replace(b"\n", b"\r\n")), "adds CRLF"),
        ("m.py", FIXABLE.replace(b"\n", b"\r\n"), FileResult("m.py", new=FIXABLE), "adds LF"),
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=b"\xef\xbb\xbf" + FIXABLE), "BOM"),
        ("m.py", FIXABLE, FileResult("m.py", old=FIXABLE, new=FIXABLE.rstrip()), "ends with a newline"),
        ("m.py", FIXABLE, FileResult("m.py", error=FileError("m.py", "internal error in OPT101: KeyError: 1")), "internal error"),
        ("m.py", FIXABLE, FileResult("m.py", error=FileError("m.py", " ")), "without a reason"),
    ],
)
def test_the_oracle_reports_each_broken_promise(tmp_path, monkeypatch, name, original, planted, problem):
    path = tmp_path / name
    path.write_bytes(original)
    monkeypatch.setattr("mutants.oracle.analyse_file", lambda *args: planted)
    outcome = check_file(path, name)
    assert any(problem in text for text in outcome.problems), outcome


def test_the_oracle_reports_an_exception(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_bytes(FIXABLE)

    def explode(*args):
        raise IndexError("list index out of range")

    monkeypatch.setattr("mutants.oracle.analyse_file", explode)
    outcome = check_file(path, "m.py")
    assert outcome.kind == "raised"
    assert "IndexError" in outcome.problems[0]
