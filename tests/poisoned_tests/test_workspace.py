"""The temporary copy, and one validation run driven through a fake fix set with real (shell) commands."""

import os
import subprocess
import sys

import pytest

from optpatch.model import Context, Finding, Fix, Impact, Tier, Verdict
from optpatch.policy import fix_id
from optpatch.validation.tests import ValidationRun
from optpatch.validation.workspace import ValidationSetupError, Workspace

# The poison oracle is checked by looking for processes that reported being poisoned; these
# fake test commands report themselves instead of importing torch, which keeps them fast.
# What a poisoned Python test process records (poison.py): that it was poisoned, and the tree's files it imported.
REPORT_POISON = (
    'printf "$$ %s\\n" "$OPTPATCH_POISON" >> "$OPTPATCH_POISON_LOG"; '
    'find . -name "*.py" | sed "s|^\\./||" >> "$OPTPATCH_IMPORT_LOG"'
)


def test_the_copy_points_absolute_links_at_itself_and_skips_fifos(tmp_path):
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "weights.txt").write_text("original\n")
    (repo / "absolute").symlink_to(repo / "data" / "weights.txt")
    (repo / "relative").symlink_to("data/weights.txt")
    os.mkfifo(repo / "pipe")
    workspace = Workspace(repo)
    try:
        (workspace.tree / "absolute").write_text("written by a test\n")
        assert (repo / "data" / "weights.txt").read_text() == "original\n"
        assert (workspace.tree / "relative").read_text() == "written by a test\n"
        assert not (workspace.tree / "pipe").exists()
    finally:
        workspace.remove()
    assert not workspace.base.exists()


def test_removal_survives_read_only_trees_left_by_tests(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("")
    workspace = Workspace(repo)
    locked = workspace.tree / "locked"
    locked.mkdir()
    (locked / "file").write_text("x")
    locked.chmod(0o500)
    workspace.remove()
    assert not workspace.base.exists()


def test_a_rewrite_of_equal_size_is_never_run_from_a_stale_pyc(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text('VALUE = "zeros"\n')
    workspace = Workspace(repo)
    try:
        writes_bytecode = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        def value() -> str:
            probe = subprocess.run([sys.executable, "-c", "import mod; print(mod.VALUE)"], cwd=workspace.tree,
                                   env=writes_bytecode, capture_output=True, text=True, check=True)
            return probe.stdout.strip()

        seconds = set()
        for text in ("zeros", "empty", "zeros", "empty"):
            workspace.write("mod.py", f'VALUE = "{text}"\n'.encode())
            seconds.add(int((workspace.tree / "mod.py").stat().st_mtime))
            assert value() == text  # each import also leaves a .pyc that the next write must invalidate
        assert len(seconds) == 4
        assert list((workspace.tree / "__pycache__").glob("mod.*.pyc"))
    finally:
        workspace.remove()


# -- a validation run over a fake fix set ----------------------------------------------------


def fix(path: str, line: int) -> Finding:
    return Finding(code="OPT999", name="fake", path=path, line=line, col=1, verdict=Verdict.FIX, reason="fake fix",
                   context=Context.CALL, impact=Impact.LOW, impact_basis="none", fix=Fix(tier=Tier.VALIDATE, edits=()))


class FakeRenderer:
    """Each file holds the names of the fixes applied to it, one per line."""

    def __init__(self, fixes: list[Finding], cpp: set[str]):
        self.fixes = fixes
        self.cpp = cpp

    @property
    def files(self) -> list[str]:
        return sorted({f.path for f in self.fixes})

    def file_bytes(self, rel: str, chosen: frozenset[str]) -> bytes:
        lines = [f"{rel}:{f.line}" for f in self.fixes if f.path == rel and fix_id(f) in chosen]
        return ("original\n" + "".join(line + "\n" for line in lines)).encode()

    def is_cpp(self, rel: str) -> bool:
        return rel in self.cpp


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("kernel.cu", "model.py"):
        (root / name).write_text("original\n")
    return root


def validation_run(repo, fixes, command, build=None, timeout_s=60.0):
    workspace = Workspace(repo)
    return workspace, ValidationRun(workspace, FakeRenderer(fixes, {"kernel.cu"}), command, build, timeout_s, None)


def test_build_runs_before_the_baseline_and_again_only_when_cpp_changed(repo, tmp_path):
    log = tmp_path / "log"
    fixes = [fix("kernel.cu", 1), fix("model.py", 1)]
    test = f'{REPORT_POISON}; echo "test $OPTPATCH_POISON" >> {log}; ! grep -q model.py:1 model.py'
    workspace, run = validation_run(repo, fixes, test, build=f"echo build >> {log}")
    try:
        outcome = run.validate(fixes)
    finally:
        workspace.remove()
    assert outcome.status == "passed"
    assert [f.path for f in outcome.kept] == ["kernel.cu"]
    assert [f.path for f, _ in outcome.dropped] == ["model.py"]
    assert log.read_text().split("\n")[:-1] == [
        "build", "test nan", "test pattern",  # the original tree
        "build", "test nan",  # both fixes: the C++ file changed; the tests fail
        "test nan", "test pattern",  # the C++ fix alone: already built
    ]
    assert (repo / "model.py").read_text() == "original\n"


def test_a_fix_that_breaks_the_build_is_dropped_with_the_build_output(repo):
    fixes = [fix("kernel.cu", 1), fix("model.py", 1)]
    build = 'grep -q kernel.cu:1 kernel.cu && echo "kernel.cu:1: error: no matching function" && exit 1 || true'
    workspace, run = validation_run(repo, fixes, REPORT_POISON, build=build)
    try:
        outcome = run.validate(fixes)
    finally:
        workspace.remove()
    (dropped, failure), = outcome.dropped
    assert dropped.path == "kernel.cu" and failure.mode is None
    assert "no matching function" in failure.tail
    assert [f.path for f in outcome.kept] == ["model.py"]


def test_a_command_that_poisons_no_process_is_refused(repo):
    fixes = [fix("model.py", 1)]
    workspace, run = validation_run(repo, fixes, "true")
    try:
        outcome = run.validate(fixes)
    finally:
        workspace.remove()
    assert outcome.status == "baseline failed" and outcome.failed
    assert "started no Python process that imported torch" in outcome.message


def test_the_pass_that_failed_last_runs_first(repo, tmp_path):
    # The pattern pass catches the bad fix (as it does for bool and integer buffers).
    log = tmp_path / "log"
    fixes = [fix("model.py", line) for line in range(1, 9)]
    test = f'{REPORT_POISON}; echo "$OPTPATCH_POISON" >> {log}; ! {{ [ "$OPTPATCH_POISON" = pattern ] && grep -q model.py:6 model.py; }}'
    workspace, run = validation_run(repo, fixes, test)
    try:
        outcome = run.validate(fixes)
    finally:
        workspace.remove()
    assert [f.line for f, _ in outcome.dropped] == [6]
    passes = log.read_text().split()
    assert passes[:4] == ["nan", "pattern", "nan", "pattern"]  # baseline, then all fixes: pattern fails
    assert passes[4] == "pattern"  # from then on the pattern pass goes first


def test_the_kept_fixes_are_run_once_more_when_the_last_run_held_others(repo, tmp_path):
    # Fixes 2 and 3 are bad; the last probe holds fixes 1 and 3, so fix 1 alone is confirmed,
    # and a suite that fails on that confirming run (a flaky one) leaves no fix standing.
    counter = tmp_path / "count"
    fixes = [fix("model.py", line) for line in (1, 2, 3)]
    test = (
        f"{REPORT_POISON}; n=$(($(cat {counter} 2>/dev/null || echo 0) + 1)); echo $n > {counter}; "
        "[ $n -ne 8 ] && ! grep -qE 'model.py:(2|3)' model.py"
    )
    workspace, run = validation_run(repo, fixes, test)
    try:
        outcome = run.validate(fixes)
    finally:
        workspace.remove()
    assert [item.label for item in outcome.runs][-1] == "confirming 1 of 3 fixes"
    assert outcome.status == "not confirmed" and outcome.failed
    assert "may be flaky" in outcome.message


def test_a_read_only_source_file_can_be_rewritten_in_the_copy(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "mod.py").write_text("x = 1\n")
    (repo / "mod.py").chmod(0o444)
    workspace = Workspace(repo)
    try:
        workspace.write("mod.py", b"x = 2\n")
        assert (workspace.tree / "mod.py").read_text() == "x = 2\n"
        assert (repo / "mod.py").read_text() == "x = 1\n"
    finally:
        workspace.remove()


def test_a_temporary_directory_inside_the_repository_is_refused(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / "tmp").mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(repo / "tmp"))
    with pytest.raises(ValidationSetupError, match="set TMPDIR to a directory outside it"):
        Workspace(repo)
    assert list((repo / "tmp").iterdir()) == []
