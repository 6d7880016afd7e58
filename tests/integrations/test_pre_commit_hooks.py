"""The real pre-commit runs this repository's hooks (`try-repo`) on a throwaway git repository.

pre-commit builds the hooks' environment by pip-installing a snapshot of
this checkout (its working tree, uncommitted changes included), as a user's
pre-commit would install a tagged release; that needs PyPI or a wheel cache.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from git_repos import CLEAN, FIXABLE, FIXED, git, make_repo
from test_cli_config import MONOREPO, VERDICTS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory) -> Path:
    """This checkout's tracked and untracked-but-not-ignored files, committed in a fresh repository."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT, capture_output=True, text=True,
    )
    if listed.returncode != 0:
        pytest.skip("the project is not a git checkout, so there is no repository for pre-commit to install")
    snapshot = tmp_path_factory.mktemp("hooks") / "optpatch"
    for rel in filter(None, listed.stdout.split("\0")):
        source = REPO_ROOT / rel
        if source.is_file():
            (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / rel)
    git(snapshot, "init", "-q")
    git(snapshot, "add", "-A")
    git(snapshot, "commit", "-q", "-m", "snapshot for pre-commit try-repo")
    return snapshot


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    """One PRE_COMMIT_HOME for the module: pre-commit builds the hooks' environment once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def pre_commit(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    # The hooks must run the installed copy of optpatch, not whatever PYTHONPATH points at.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args, "--color", "never"], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=600,
    )


def try_repo(hooks: Path, hook: str, target: Path, home: Path) -> subprocess.CompletedProcess:
    return pre_commit("try-repo", str(hooks), hook, "--all-files", cwd=target, home=home)


def test_check_fails_fix_fixes_then_check_passes(hooks_repo, tmp_path, home):
    excluded = {"pyproject.toml": '[tool.optpatch]\nexclude = ["vendor/"]\n', "vendor/model.py": FIXABLE}
    # Enough files that pre-commit would split them into one batch per core, were the hooks not serial.
    many = {f"pkg/module_{index}.py": CLEAN for index in range(8)}
    target = make_repo(tmp_path / "project", {"model.py": FIXABLE, "clean.py": CLEAN, "notes.txt": "zeros\n", **excluded, **many})

    check = try_repo(hooks_repo, "optpatch-check", target, home)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "optpatch check" in check.stdout and "Failed" in check.stdout
    assert "model.py:5:11" in check.stdout and "OPT101" in check.stdout
    assert check.stdout.count("Summary:") == 1  # require_serial: one optpatch run for all 11 files
    assert (target / "model.py").read_text() == FIXABLE

    fix = try_repo(hooks_repo, "optpatch-fix", target, home)
    assert fix.returncode == 1, fix.stdout + fix.stderr  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in fix.stdout
    assert (target / "model.py").read_text() == FIXED
    assert (target / "clean.py").read_text() == CLEAN
    assert (target / "vendor" / "model.py").read_text() == FIXABLE  # excluded by the project, though pre-commit named it
    assert "vendor" not in check.stdout

    git(target, "add", "-A")
    again = try_repo(hooks_repo, "optpatch-check", target, home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout


def test_a_monorepo_with_nested_configurations_gets_each_files_own_verdict(hooks_repo, tmp_path, home):
    """`pre-commit run --files`, as a commit runs it, on tests/fixtures/monorepo (tests/test_cli_config.py says what each
    configuration does): each file named gets its nearest configuration's verdict, patterns relative to its folder."""
    files = {str(path.relative_to(MONOREPO)): path.read_text() for path in sorted(MONOREPO.rglob("*")) if path.is_file()}
    rev = git(hooks_repo, "rev-parse", "HEAD").strip()
    config = f"repos:\n  - repo: {hooks_repo}\n    rev: {rev}\n    hooks:\n      - id: optpatch-check\n"
    target = make_repo(tmp_path / "monorepo", {**files, ".pre-commit-config.yaml": config})

    every = pre_commit("run", "optpatch-check", "--files", *sorted(VERDICTS), cwd=target, home=home)
    assert every.returncode == 1, every.stdout + every.stderr
    flagged = {rel for rel in VERDICTS if f"{rel}:5:11: OPT101" in every.stdout}
    assert flagged == {rel for rel, fixed in VERDICTS.items() if fixed}, every.stdout

    held_back = [rel for rel, fixed in VERDICTS.items() if not fixed]
    quiet = pre_commit("run", "optpatch-check", "--files", *held_back, cwd=target, home=home)
    assert quiet.returncode == 0 and "Passed" in quiet.stdout, quiet.stdout + quiet.stderr
