"""The default patch is library code: `fix-areas` and `--fix-areas`, the `areas` overrides, and what the run says.

A fix in tests, benchmarks or examples is found, reported with its area and
held (`Hold.AREA`) unless the run asks for its area; it then counts as a
fix the run would not apply: `check` exits 0 for it, `--write` leaves its
file alone, and the summary says how many were left out and how to include
them (CONTRACT.md, "The default patch holds the fixes in library code").
"""

import json

import pytest

from conftest import run_cli

from optpatch.config import ConfigError, Settings, settings_from_table
from optpatch.engine import run
from optpatch.model import CodeArea, Hold
from optpatch.policy import FixPolicy

LIBRARY, TEST, BENCH = "pkg/model.py", "tests/test_model.py", "benchmarks/bench_model.py"
FIXABLE = "import torch\n\n\ndef step(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"
FIXED = FIXABLE.replace("torch.zeros(", "torch.empty(")


def _tree(tmp_path, files=(LIBRARY, TEST, BENCH), config: str = ""):
    root = tmp_path / "repo"
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(FIXABLE)
    if config:
        (root / "optpatch.toml").write_text(config)
    return root


def _by_path(document: dict) -> dict:
    return {f["path"]: f for f in document["findings"]}


def test_the_default_patch_holds_library_fixes_and_reports_the_rest_by_area(tmp_path):
    root = _tree(tmp_path)
    patch = tmp_path / "p.diff"
    result = run_cli("apply", str(root), "-o", str(patch), "--format", "json", "--no-cache")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    found = _by_path(document)
    assert found[LIBRARY]["accepted"] and found[LIBRARY]["held"] is None
    for rel, area in ((TEST, "tests"), (BENCH, "benchmarks")):
        assert (found[rel]["area"], found[rel]["held"], found[rel]["accepted"]) == (area, "area", False)
        assert f"--fix-areas library,{area}" in found[rel]["refused_because"]
    assert document["summary"]["held_by_area"] == {"benchmarks": 1, "tests": 1}
    diff = patch.read_text()
    assert f"a/{LIBRARY}" in diff and "tests/" not in diff and "benchmarks/" not in diff

    text = run_cli("apply", str(root), "-o", str(patch), "--no-cache")
    assert "2 fix(es) left out by area (1 in benchmarks, 1 in tests)" in " ".join(text.stdout.split())
    assert "--fix-areas library,tests,benchmarks" in text.stdout


def test_check_exits_one_only_for_fixes_the_run_would_apply(tmp_path):
    root = _tree(tmp_path, files=(TEST,))
    held = run_cli("check", str(root), "--no-cache", "--format", "github")
    assert held.returncode == 0, held.stdout + held.stderr  # a test fix held by its area is not fixable here
    assert "left out by area (1 in tests)" in held.stdout and "--fix-areas library,tests" in held.stdout
    assert run_cli("check", str(root), "--no-cache", "--fix-areas", "library,tests").returncode == 1


def test_write_leaves_files_outside_the_fix_areas_alone(tmp_path):
    root = _tree(tmp_path, files=(LIBRARY, TEST))
    result = run_cli("apply", str(root), "--write", "-o", str(tmp_path / "p.diff"), "--no-cache")
    assert result.returncode == 0, result.stderr
    assert (root / LIBRARY).read_text() == FIXED
    assert (root / TEST).read_text() == FIXABLE


def test_markdown_says_what_was_left_out_and_how_to_include_it(tmp_path):
    root = _tree(tmp_path, files=(LIBRARY, TEST))
    body = run_cli("check", str(root), "--no-cache", "--format", "markdown").stdout
    assert "1 fix(es) left out by area (1 in tests)" in body
    assert "`--fix-areas library,tests`" in body


def test_the_setting_widens_the_patch_and_areas_override_the_path_heuristic(tmp_path):
    config = 'fix-areas = ["library", "tests"]\n[areas]\n"pkg/testing/**" = "tests"\n"tests/helpers/**" = "library"\n'
    root = _tree(tmp_path, files=(LIBRARY, TEST, BENCH, "pkg/testing/fake.py", "tests/helpers/lib.py"), config=config)
    result = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "json", "--no-cache")
    found = _by_path(json.loads(result.stdout))
    assert {rel: (f["area"], f["accepted"]) for rel, f in found.items()} == {
        LIBRARY: ("library", True), TEST: ("tests", True), BENCH: ("benchmarks", False),
        "pkg/testing/fake.py": ("tests", True), "tests/helpers/lib.py": ("library", True),
    }
    only_library = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "json", "--no-cache",
                           "--fix-areas", "library")
    assert {rel for rel, f in _by_path(json.loads(only_library.stdout)).items() if f["accepted"]} == {
        LIBRARY, "tests/helpers/lib.py"}


def test_an_unknown_area_is_a_usage_error(tmp_path):
    root = _tree(tmp_path, files=(LIBRARY,))
    result = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--fix-areas", "library,exampels")
    assert result.returncode == 2 and "unknown area `exampels`" in result.stderr
    assert not (tmp_path / "p.diff").exists()
    for table in ({"fix-areas": ["docs"]}, {"areas": {"x/**": "test"}}, {"areas": {"x/**": ["tests"]}}):
        try:
            settings_from_table(table, "optpatch.toml", trust_config=False)
        except ConfigError:
            continue
        raise AssertionError(f"{table} was accepted")


def test_the_area_is_policy_applied_after_the_cache(tmp_path, monkeypatch):
    """A warm run with other fix areas analyses nothing again and applies what it asks for."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = _tree(tmp_path, files=(LIBRARY, TEST))
    cold = run(root, Settings(), FixPolicy(), jobs=1)
    assert [decision.held for _, decision in cold.decided if decision.refusal] == [Hold.AREA]
    warm = run(root, Settings(), FixPolicy(fix_areas=frozenset({CodeArea.LIBRARY, CodeArea.TESTS})), jobs=1)
    assert all(decision.accepted for _, decision in warm.decided) and len(warm.changes) == 2


def test_a_fix_its_tier_holds_is_not_counted_as_held_by_its_area(tmp_path):
    """`held_by_area` counts what --fix-areas alone would apply: a validate-tier test fix is held by its tier."""
    root = _tree(tmp_path, files=(TEST,))
    run_validate = "import torch\n\n\nclass M:\n    def __init__(self, n):\n        self.buf = torch.zeros(n)\n\n" \
                   "    def fill(self, x):\n        self.buf[: x.numel()].copy_(x)\n"
    (root / "tests" / "test_module.py").write_text(run_validate)
    result = run(root, Settings(), FixPolicy(), jobs=1, use_cache=False)
    holds = {f.path: decision.held for f, decision in result.decided if decision.refusal}
    assert holds == {TEST: Hold.AREA, "tests/test_module.py": Hold.VALIDATE_TIER}


def test_a_nested_configuration_gives_its_files_its_own_fix_areas_and_areas(tmp_path):
    """Each file's nearest configuration decides (config.ConfigResolver): its `fix-areas` builds that group's policy,
    and its `areas` patterns are relative to its own folder, as `exclude` is."""
    root = _tree(tmp_path, files=(TEST, "sub/tests/test_model.py", "sub/pkg/model.py", "sub/slow/model.py"),
                 config='fix-areas = ["library"]\n')
    (root / "sub" / "optpatch.toml").write_text('fix-areas = ["library", "tests"]\nareas = {"slow/**" = "benchmarks"}\n')
    result = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "json", "--no-cache")
    assert result.returncode == 0, result.stderr
    found = _by_path(json.loads(result.stdout))
    assert (found[TEST]["held"], found["sub/tests/test_model.py"]["held"]) == ("area", None)
    assert found["sub/slow/model.py"]["area"] == "benchmarks" and found["sub/slow/model.py"]["held"] == "area"
    assert found["sub/pkg/model.py"]["area"] == "library" and found["sub/pkg/model.py"]["held"] is None


SELF_TESTED = """\
import torch


def pack(x):
    out = torch.zeros(x.shape[0], 4)
    out.copy_(x.repeat(1, 4))
    return out


def test_pack():
    ref = torch.zeros(8, 4)
    ref.copy_(torch.ones(8, 4))
    return ref


class Packer:
    def test(self, x):  # a method named so is the library's: only a module's own functions are its self-test
        kept = torch.zeros(x.shape)
        kept.copy_(x)
        return kept


if "__main__" == __name__:
    data = torch.arange(8).cuda()
    print(pack(data), test_pack())
"""


def test_a_library_files_self_test_is_in_tests(tmp_path):
    # lightllm's Triton kernels end in a `test()` and an `if __name__ == "__main__":` block that runs it: fixes
    # there reach no user of the library.
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/kernel.py").write_text(SELF_TESTED)
    result = run(root, Settings(), FixPolicy(), use_cache=False)
    areas = {(f.line, f.code): f.area for f in result.findings}
    assert areas == {(5, "OPT101"): CodeArea.LIBRARY, (11, "OPT101"): CodeArea.TESTS,
                     (18, "OPT101"): CodeArea.LIBRARY, (24, "OPT102"): CodeArea.TESTS}, areas
    held = {(f.line, decision.held) for f, decision in result.decided if not decision.accepted}
    assert held == {(11, Hold.AREA), (24, Hold.AREA)}, held
    widened = run(root, Settings(), FixPolicy(fix_areas=frozenset({CodeArea.LIBRARY, CodeArea.TESTS})), use_cache=False)
    assert all(decision.accepted for _, decision in widened.decided)


@pytest.mark.parametrize(("rel", "area"), [
    ("archive/ktransformers/models/custom_cache.py", "benchmarks"),
    ("src/pkg/attic/old_kernel.py", "benchmarks"),
    ("megatron/legacy/model/transformer.py", "library"),  # still run by Megatron-LM's legacy models
    ("pkg/archiver.py", "library"),
])
def test_code_kept_in_an_archive_is_not_library_code(rel, area):
    from optpatch.areas import area_of

    assert area_of(rel).value == area
