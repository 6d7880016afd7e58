"""No decision carries from one kind of run to another (CONTRACT.md, "Bad input": the result cache holds analysis only).

Each test reproduces, end to end through the command line, a hole a new
user found: a fix that `--validate` backed out was applied by the next plain
run from the cache; a plain run first made `--validate` offer fewer
candidates; `--validate` wrote the cache under `--no-cache`; a C++ fix was
counted as validated by tests that never built it.
"""

import json
import os
from pathlib import Path

import pytest

from decode_inputs_repo import write_decode_inputs
from validation_helpers import optpatch

# Reports itself poisoned (as the sitecustomize would), and fails when the prefix-write fix of line 10 is in.
BREAKS_ON_LINE_10 = (
    'printf "$$ %s\\n" "$OPTPATCH_POISON" >> "$OPTPATCH_POISON_LOG"; '
    "if grep -qF 'self.seq_lens = torch.empty' decoding/inputs.py; then echo 'FAILED tests/test_x.py::t'; exit 1; fi"
)
PASSES = 'printf "$$ %s\\n" "$OPTPATCH_POISON" >> "$OPTPATCH_POISON_LOG"'


@pytest.fixture
def repo(tmp_path) -> Path:
    return write_decode_inputs(tmp_path / "decode_inputs")


@pytest.fixture
def cache(tmp_path) -> dict[str, str]:
    return {"OPTPATCH_CACHE_DIR": str(tmp_path / "cache")}


def _patch_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_a_fix_validation_backed_out_is_not_applied_by_the_next_plain_run(repo, tmp_path, cache):
    validated = optpatch("apply", repo, "-o", tmp_path / "validated.diff", "--validate", BREAKS_ON_LINE_10, **cache)
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert "self.seq_lens = torch.empty" not in (tmp_path / "validated.diff").read_text()
    plain = optpatch("apply", repo, "-o", tmp_path / "plain.diff", "--format", "json", **cache)
    assert plain.returncode == 0, plain.stderr
    assert _patch_lines(tmp_path / "plain.diff") == [], "a plain run applied a validate-tier fix"
    findings = json.loads(plain.stdout)["findings"]
    validate_tier = [f for f in findings if f["tier"] == "validate"]
    assert validate_tier and all(not f["written"] and f["held"] == "validate-tier" for f in validate_tier)


def test_a_plain_run_first_leaves_validate_all_its_candidates(repo, tmp_path, cache):
    fresh = optpatch("check", repo, "--validate", PASSES, "--format", "json", "--no-cache")
    assert optpatch("apply", repo, "-o", tmp_path / "plain.diff", **cache).returncode == 0
    after_plain = optpatch("check", repo, "--validate", PASSES, "--format", "json", **cache)
    counts = [json.loads(run.stdout)["validation"]["candidates"] for run in (fresh, after_plain)]
    assert counts[0] == counts[1] and counts[0] >= 2, counts


def test_validate_with_no_cache_neither_reads_nor_writes_the_cache(repo, tmp_path, cache):
    result = optpatch("apply", repo, "-o", tmp_path / "p.diff", "--validate", PASSES, "--no-cache", **cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not Path(cache["OPTPATCH_CACHE_DIR"]).exists()


def _cpp_repo(root: Path) -> Path:
    """A validate-tier C++ fix (the `tiers` setting makes OPT201 validate) beside nothing to test in Python."""
    (root / "csrc").mkdir(parents=True)
    (root / "csrc" / "pack.cpp").write_text(
        "#include <cstring>\n\nvoid pack(const float* src, int n, float* out) {\n"
        "    float tmp[n];\n    std::memcpy(tmp, src, n * sizeof(float));\n    std::memcpy(out, tmp, n * sizeof(float));\n}\n"
    )
    (root / "pyproject.toml").write_text('[tool.optpatch]\ntiers = { OPT201 = "validate" }\n')
    return root


def test_a_cpp_fix_is_not_validated_without_a_build(tmp_path, cache):
    repo = _cpp_repo(tmp_path / "cpp")
    result = optpatch("apply", repo, "-o", tmp_path / "p.diff", "--validate", PASSES, "--format", "json", **cache)
    assert result.returncode == 0, result.stdout + result.stderr
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "OPT201"]
    assert not finding["written"] and finding["held"] == "not-built"
    assert finding["refused_because"].startswith("not validated: no --build")
    assert _patch_lines(tmp_path / "p.diff") == []


def test_a_cpp_fix_rebuilt_by_build_is_validated(tmp_path, cache):
    repo = _cpp_repo(tmp_path / "cpp")
    built = tmp_path / "built.txt"
    result = optpatch("apply", repo, "-o", tmp_path / "p.diff", "--validate", PASSES, "--build", f"echo built >> {built}",
                      "--format", "json", **cache)
    assert result.returncode == 0, result.stdout + result.stderr
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "OPT201"]
    assert finding["written"], finding
    assert built.read_text().split() == ["built", "built"]  # the original tree, then the tree with the fix
    assert any("std::vector<float> tmp(n)" in line for line in _patch_lines(tmp_path / "p.diff"))


def test_a_validate_tier_fix_no_test_imported_is_not_validated(repo, tmp_path, cache):
    """Passing tests that never import a fixed module prove nothing about it: the fix is held, not applied."""
    imports_nothing = PASSES  # poisoned, passing, and importing no file of the tree
    result = optpatch("apply", repo, "-o", tmp_path / "p.diff", "--validate", imports_nothing, "--format", "json", **cache)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    validate_tier = [f for f in document["findings"] if f["tier"] == "validate"]
    assert validate_tier and all(f["held"] == "not-exercised" and not f["written"] for f in validate_tier)
    assert len(document["validation"]["not_exercised"]) == len(validate_tier)
    assert _patch_lines(tmp_path / "p.diff") == []


def test_a_real_python_test_run_records_what_it_imported(repo, tmp_path, cache):
    """The sitecustomize records the tree's files a real interpreter imported (poison.record_imports_at_exit)."""
    imports_inputs = f"{os.environ.get('PYTHON', 'python')} -c 'import decoding.inputs'"
    result = optpatch("apply", repo, "-o", tmp_path / "p.diff", "--validate", imports_inputs, "--format", "json", **cache)
    assert result.returncode == 0, result.stdout + result.stderr
    validation = json.loads(result.stdout)["validation"]
    assert validation["not_exercised"] == [] and validation["validate_tier_passed"], validation
