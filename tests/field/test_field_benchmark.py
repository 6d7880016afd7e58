"""benchmarks/field.py on a tiny synthetic repository: what it counts, and the failures it must report.

The repository pins black in its pre-commit configuration (with a hook
argument that sets the line length), holds a Python file with a safe OPT101
fix and a validate-tier OPT102 proposal, a test file, and a C++ file with a
safe OPT201 fix. Planted patches check that the benchmark reports a patch
that breaks black's check, a patch that does not apply, and patched files
that no longer compile. Black is installed from PyPI by the benchmark's own
cached installer, once per session (slow: about 10 s).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from benchmarks import field
from benchmarks.field import ProjectTests

BLACK = "24.10.0"
PRE_COMMIT = f"""\
exclude: '^vendored/'
repos:
-   repo: https://github.com/psf/black-pre-commit-mirror
    rev: {BLACK}
    hooks:
    -   id: black
        args: [--line-length, "60"]
"""
BUFFERS = '''\
import torch


def filled(n):
    out = torch.zeros(n)
    out.fill_(3.0)
    return out


def ones_on(device):
    return torch.ones(4).to(device)


def exploded(n, device):
    return torch.arange(
        n,
        dtype=torch.int64,
    )
'''
TEST_BUFFERS = '''\
from pkg.buffers import filled


def test_filled():
    assert filled(2).tolist() == [3.0, 3.0]
'''
OPS = """\
#include <cstring>

int total(const int* values, int n) {
  int copy[n];
  std::memcpy(copy, values, n * sizeof(int));
  int sum = 0;
  for (int i = 0; i < n; ++i) sum += copy[i];
  return sum;
}
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(root: Path) -> Path:
    files = {
        ".pre-commit-config.yaml": PRE_COMMIT,
        "pkg/__init__.py": "",
        "pkg/buffers.py": BUFFERS,
        "tests/test_buffers.py": TEST_BUFFERS,
        "csrc/ops.cpp": OPS,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "synthetic")
    return root


@pytest.fixture(scope="session")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("field-cache")


@pytest.fixture(scope="session")
def black(cache) -> field.InstalledFormatter:
    (formatter,) = field.formatters_of(make_repo(cache.parent / "black-pin"))
    installed = field.InstalledFormatter.install(formatter, cache)
    assert installed.folder is not None, installed.problem
    return installed


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "synthetic")


def planted(tmp_path: Path, repo: Path, rel: str, old: str, new: str) -> Path:
    """A git patch that replaces OLD with NEW in REL, made by git itself on a scratch copy."""
    scratch = tmp_path / "planting"
    shutil.copytree(repo, scratch)
    path = scratch / rel
    assert old in path.read_text()
    path.write_text(path.read_text().replace(old, new, 1))
    diff = subprocess.run(["git", "-C", str(scratch), "diff"], capture_output=True, text=True, check=True).stdout
    shutil.rmtree(scratch)
    patch = tmp_path / "planted.diff"
    patch.write_text(diff)
    return patch


def check(repo: Path, patch: Path, black: field.InstalledFormatter, tmp_path: Path) -> field.PatchCheck:
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    return field.check_patch(repo, patch, [black], field.CppToolchain.find(), scratch, jobs=1)


@pytest.mark.slow
def test_the_whole_run_counts_fixes_and_checks_the_patch(repo, cache, black, tmp_path, capsys):
    report_path = tmp_path / "field.json"
    status = field.main([str(repo), "--json", str(report_path), "--cache", str(cache), "--jobs", "1", "--review-list"])
    printed = capsys.readouterr().out

    assert status == 0, printed
    (tree,) = json.loads(report_path.read_text())["trees"]
    assert tree["applied"] == {"OPT101 safe library": 1, "OPT201 safe library": 1}
    assert tree["proposed"] == {"OPT102 validate validate-tier": 1}
    assert tree["python_files"] == 3 and tree["cpp_files"] == 1
    assert [(i["path"], i["line"], i["code"]) for i in tree["review"]] == [
        ("csrc/ops.cpp", 4, "OPT201"), ("pkg/buffers.py", 5, "OPT101"),
    ]
    check = tree["patch"]
    assert check["applies"] and check["patched_files"] == ["csrc/ops.cpp", "pkg/buffers.py"]
    compiled = {c["path"]: c for c in check["compiles"]}
    assert compiled["pkg/buffers.py"]["compiles"] is True
    if shutil.which("g++"):
        assert compiled["csrc/ops.cpp"]["compiles"] is True and "g++" in compiled["csrc/ops.cpp"]["how"]
    assert [(c["path"], c["tool"], c["before"], c["after"]) for c in check["formatting"]] == [
        ("pkg/buffers.py", "black", "pass", "pass"),
    ]
    assert check["unformatted_scope"] == ["csrc/ops.cpp"]
    assert "| synthetic |" in printed and "pkg/buffers.py:5" in printed
    # A second run answers the formatter checks from the verdicts kept in the cache, with the same outcome.
    assert any((cache / "verdicts").rglob("*.json"))
    assert field.main([str(repo), "--json", str(report_path), "--cache", str(cache), "--jobs", "1"]) == 0
    assert json.loads(report_path.read_text())["trees"][0]["patch"] == check


@pytest.mark.slow
def test_a_patch_that_breaks_black_is_a_regression(repo, black, tmp_path):
    # The pinned hook passes --line-length 60: this line is 66 characters long.
    patch = planted(tmp_path, repo, "pkg/buffers.py", "out = torch.zeros(n)",
                    "out = torch.zeros(n, dtype=torch.float32, device='cpu')")
    outcome = check(repo, patch, black, tmp_path)

    assert outcome.applies
    (formatting,) = outcome.formatting
    assert (formatting.before, formatting.after) == (field.Verdict.PASS, field.Verdict.FAIL)
    assert outcome.regressions == [formatting]
    assert "device='cpu'" in formatting.output  # black's diff of what it would change
    assert [c.compiles for c in outcome.compiles] == [True]


@pytest.mark.slow
def test_a_keyword_glued_onto_an_exploded_call_is_a_regression(repo, black, tmp_path):
    patch = planted(tmp_path, repo, "pkg/buffers.py", "dtype=torch.int64,\n", "dtype=torch.int64, device=device,\n")
    assert check(repo, patch, black, tmp_path).regressions


@pytest.mark.slow
def test_a_patch_that_keeps_the_format_is_not_a_regression(repo, black, tmp_path):
    patch = planted(tmp_path, repo, "pkg/buffers.py", "dtype=torch.int64,\n", "dtype=torch.int64,\n        device=device,\n")
    outcome = check(repo, patch, black, tmp_path)
    assert [(c.before, c.after) for c in outcome.formatting] == [(field.Verdict.PASS, field.Verdict.PASS)]
    assert not outcome.regressions


@pytest.mark.slow
def test_a_file_that_failed_black_before_is_no_regression(tmp_path, black):
    repo = tmp_path / "unformatted"
    repo.mkdir()
    make_repo(repo)
    (repo / "pkg" / "buffers.py").write_text(BUFFERS.replace("def filled(n):", "def filled( n ):"))
    git(repo, "commit", "-qam", "unformatted")
    patch = planted(tmp_path, repo, "pkg/buffers.py", "torch.zeros(n)", "torch.empty(n)")
    outcome = check(repo, patch, black, tmp_path)
    assert [(c.before, c.after) for c in outcome.formatting] == [(field.Verdict.FAIL, field.Verdict.FAIL)]
    assert not outcome.regressions


@pytest.mark.slow
def test_a_patch_that_does_not_apply_is_reported_and_nothing_else_runs(repo, black, tmp_path):
    patch = planted(tmp_path, repo, "pkg/buffers.py", "out = torch.zeros(n)", "out = torch.empty(n)")
    patch.write_text(patch.read_text().replace("out.fill_(3.0)", "out.fill_(4.0)"))  # context the tree does not have
    outcome = check(repo, patch, black, tmp_path)

    assert not outcome.applies
    assert "pkg/buffers.py" in outcome.apply_error
    assert outcome.formatting == [] and outcome.compiles == []
    report = field.TreeReport("synthetic", str(repo), "abc", patch=outcome)
    assert report.failed


@pytest.mark.slow
def test_patched_files_that_no_longer_compile_are_reported(repo, black, tmp_path):
    python = planted(tmp_path, repo, "pkg/buffers.py", "return out", "return out)")
    outcome = check(repo, python, black, tmp_path)
    assert [c.compiles for c in outcome.compiles] == [False]
    assert outcome.compile_failures and "unmatched" in outcome.compile_failures[0].detail

    cpp = planted(tmp_path, repo, "csrc/ops.cpp", "int sum = 0;", "int sum = undeclared;")
    (failure,) = check(repo, cpp, black, tmp_path).compiles
    assert failure.compiles is False and "undeclared" in failure.detail


def test_formatters_are_read_from_hooks_with_their_pins_arguments_and_scope(tmp_path):
    (tmp_path / ".pre-commit-config.yaml").write_text(textwrap.dedent("""\
        exclude: 'build|stubs'
        repos:
        - repo: https://github.com/astral-sh/ruff-pre-commit
          rev: v0.11.6
          hooks:
          - id: ruff
            args: [--fix]
          - id: ruff-format
            args: [--line-length, "100"]
            exclude: examples
        - repo: https://github.com/omnilib/ufmt
          rev: v2.8.0
          hooks:
          - id: ufmt
            additional_dependencies: [black == 22.12.0, usort == 1.0.5]
        - repo: https://github.com/google/yapf
          rev: v0.40.0
          hooks:
          - id: yapf
            args: [-i, --style, .style.yapf]
        - repo: https://github.com/pre-commit/mirrors-clang-format
          rev: v22.1.5
          hooks:
          - id: clang-format
            files: \\.(cpp|cu)$
        """))
    formatters = field.formatters_of(tmp_path)

    assert [(f.tool, f.requirements, f.args, f.files, f.exclude) for f in formatters] == [
        (field.Tool.RUFF, ("ruff==0.11.6",), ("--line-length", "100"), None, ("build|stubs", "examples")),
        (field.Tool.UFMT, ("ufmt==2.8.0", "black == 22.12.0", "usort == 1.0.5"), (), None, ("build|stubs",)),
        (field.Tool.YAPF, ("yapf==0.40.0",), ("--style", ".style.yapf"), None, ("build|stubs",)),
        (field.Tool.CLANG_FORMAT, ("clang-format==22.1.5",), (), "\\.(cpp|cu)$", ("build|stubs",)),
    ]
    ruff, _, _, clang = formatters
    assert ruff.covers("pkg/a.py") and not ruff.covers("examples/a.py") and not ruff.covers("stubs/a.py")
    assert not ruff.covers("csrc/a.cpp") and clang.covers("csrc/a.cpp") and not clang.covers("csrc/a.h")


def test_formatters_without_hooks_come_from_requirement_pins(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 119\n")
    (tmp_path / "setup.py").write_text('deps = ["black==24.1.0", "ruff==0.9.10"]\n')
    (tmp_path / ".clang-format").write_text("BasedOnStyle: Google\n")
    (tmp_path / "requirements").mkdir()
    (tmp_path / "requirements" / "requirements-dev.txt").write_text("clang-format==18.1.3\n")
    ruff, clang = field.formatters_of(tmp_path)
    assert (ruff.tool, ruff.requirements, ruff.pinned_by) == (
        field.Tool.RUFF, ("ruff==0.9.10",), "setup.py (no pre-commit hook)")
    assert clang.requirements == ("clang-format==18.1.3",)

    (tmp_path / "requirements" / "requirements-dev.txt").unlink()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # nothing configures a Python formatter
    (clang,) = field.formatters_of(tmp_path)
    assert clang.requirements == (f"clang-format=={field.UNPINNED_CLANG_FORMAT}",)


def test_tests_are_selected_by_the_patched_library_modules_they_use(repo):
    suite = field.ProjectTests(("tests",), ())
    (repo / "tests" / "test_other.py").write_text("def test_nothing():\n    pass\n")
    (repo / "tests" / "test_dotted.py").write_text("import pkg.buffers\n")
    (repo / "pkg" / "model.py").write_text("class LinearModel:\n    pass\n")
    (repo / "tests" / "test_model.py").write_text("from pkg import LinearModel\n")
    (repo / "examples").mkdir()
    (repo / "examples" / "demo.py").write_text("class LinearModel:\n    pass\n")

    def select(patched: list[str], library: list[str], chosen: ProjectTests = suite) -> list[str]:
        return field.select_tests(repo, chosen, patched, library)

    assert select(["pkg/buffers.py"], ["pkg/buffers.py"]) == ["tests/test_buffers.py", "tests/test_dotted.py"]
    assert select(["pkg/model.py"], ["pkg/model.py"]) == ["tests/test_model.py"]
    assert select(["examples/demo.py"], []) == []  # an example's class names select nothing
    assert select(["tests/test_other.py"], []) == ["tests/test_other.py"]
    gpu_only = field.ProjectTests(("tests",), (), not_here=(("tests/test_model.py", "needs a GPU"),))
    assert select(["pkg/model.py"], ["pkg/model.py"], gpu_only) == []


def test_verdicts_are_kept_only_for_a_clean_git_tree(repo, cache):
    store = field.VerdictStore.for_tree(repo, cache)
    assert store is not None
    formatter = field.Formatter(field.Tool.BLACK, ("black==1.0",), "test")
    assert store.get(formatter, "pkg/buffers.py", b"x = 1\n") is None
    store.put(formatter, "pkg/buffers.py", b"x = 1\n", (field.Verdict.FAIL, "diff"))
    assert store.get(formatter, "pkg/buffers.py", b"x = 1\n") == (field.Verdict.FAIL, "diff")
    assert store.get(formatter, "pkg/buffers.py", b"x = 2\n") is None

    (repo / "pkg" / "buffers.py").write_text("changed = True\n")
    assert field.VerdictStore.for_tree(repo, cache) is None
    shutil.rmtree(repo / ".git")
    assert field.VerdictStore.for_tree(repo, cache) is None


@pytest.mark.slow
def test_the_tests_touching_patched_files_run_before_and_after(repo, cache, tmp_path):
    suite = ProjectTests(("tests",), ("iniconfig==2.1.0",))  # a requirement, to exercise the cached install
    report = field.TreeReport("synthetic", str(repo), "abc", patch=field.PatchCheck(
        patched_files=["csrc/ops.cpp", "pkg/buffers.py"]), library_files=["csrc/ops.cpp", "pkg/buffers.py"])

    outcome = field.validate_tree(repo, suite, report, cache, jobs=1)

    assert outcome["selection"] == ["tests/test_buffers.py"]
    assert outcome["status"] == "passed", outcome
    validation = outcome["validation"]
    assert validation["dropped"] == [] and validation["baseline_failure"] is None
    assert "pkg/buffers.py:5:11:OPT101" in validation["kept"]
    assert outcome["passed_unexercised"] == []


def test_lines_the_patch_writes_past_the_limit_are_failures(repo, tmp_path):
    """black's --line-length 60 from the hook: a patched line of 61 columns is past it, one that shrinks is not."""
    long_line = "out = torch.zeros(n, dtype=torch.float32, device='cpu:0')"
    patch = planted(tmp_path, repo, "pkg/buffers.py", "out = torch.zeros(n)", long_line)
    outcome = field.PatchCheck()
    field.check_line_limits(repo, patch.read_text(), outcome)
    assert outcome.lines_written == 1
    assert [(o["path"], o["near_line"], o["width"], o["limit"]) for o in outcome.overlong] == [
        ("pkg/buffers.py", 5, 4 + len(long_line), 60)]
    shorter = planted(tmp_path, repo, "pkg/buffers.py", "out = torch.zeros(n)", "out = torch.empty(n)")
    outcome = field.PatchCheck()
    field.check_line_limits(repo, shorter.read_text(), outcome)
    assert (outcome.lines_written, outcome.overlong) == (1, [])


def test_the_library_fraction_is_of_the_patchs_default_tier_fixes():
    report = field.TreeReport("t", "t", "c", applied={"OPT101 safe library": 9, "OPT102 safe tests": 1,
                                                      "OPT102 validate tests": 5})
    assert (report.library_fixes, report.library_fraction, report.failed) == (9, 0.9, False)
    report.applied["OPT103 safe benchmarks"] = 1
    assert report.library_fraction < field.MIN_LIBRARY_FRACTION and report.failed


def test_findings_are_counted_once_each_by_verdict():
    def finding(verdict, tier=None, applied=False, held=None, area="library"):
        return {"verdict": verdict, "tier": tier, "written": applied, "held": held, "area": area, "code": "OPT101",
                "path": "m.py", "line": 1, "reason": "why", "replacement": None}

    report = field.TreeReport("t", "t", "c")
    field.count_findings(report, [finding("fix", "safe", applied=True), finding("fix", "safe", held="area", area="tests"),
                                  finding("fix", "validate", held="validate-tier"), finding("keep"), finding("advice")])
    assert (sum(report.applied.values()), sum(report.proposed.values()), report.kept, report.advice) == (
        1, 2, {"OPT101": 1}, {"OPT101": 1})
    assert report.safe_found == {"library": 1, "tests": 1}
