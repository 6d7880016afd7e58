"""--changed-since REF and --changed-lines: only what a change touched is analysed, reported and fixed."""

import json

from conftest import run_cli
from git_repos import CLEAN, FIXABLE, FIXED, git, make_repo, write_files

MANY = {f"pkg/module_{index:02d}.py": FIXABLE for index in range(30)}


def report(*args: str, cwd=None) -> dict:
    result = run_cli(*args, "--format", "json", cwd=cwd)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_only_the_changed_file_is_analysed(tmp_path):
    repo = make_repo(tmp_path / "repo", MANY)
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "pkg" / "module_07.py").write_text(FIXABLE.replace("return out", "return out * 2"))
    document = report("apply", str(repo), "--changed-since", "main", "-o", str(tmp_path / "p.diff"))
    assert document["summary"]["files_analysed"] == 1
    assert {f["path"] for f in document["findings"]} == {"pkg/module_07.py"}
    assert (tmp_path / "p.diff").read_text().count("diff --git") == 1


def test_committed_staged_and_untracked_changes_count_deleted_files_do_not(tmp_path):
    repo = make_repo(tmp_path / "repo", MANY)
    git(repo, "switch", "-q", "-c", "feature")
    write_files(repo, {"pkg/committed.py": FIXABLE})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature work")
    write_files(repo, {"pkg/staged.py": FIXABLE, "pkg/untracked.py": FIXABLE, "ignored/new.py": FIXABLE})
    (repo / ".gitignore").write_text("ignored/\n")
    git(repo, "add", "pkg/staged.py")
    git(repo, "rm", "-q", "pkg/module_00.py")
    document = report("check", str(repo), "--changed-since", "main")
    assert {f["path"] for f in document["findings"]} == {"pkg/committed.py", "pkg/staged.py", "pkg/untracked.py"}


def test_changes_on_the_base_branch_after_branching_are_not_the_pull_requests(tmp_path):
    repo = make_repo(tmp_path / "repo", MANY)
    git(repo, "switch", "-q", "-c", "feature")
    write_files(repo, {"pkg/feature.py": FIXABLE})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    git(repo, "switch", "-q", "main")
    write_files(repo, {"pkg/main_only.py": FIXABLE})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main moves on")
    git(repo, "switch", "-q", "feature")
    document = report("check", str(repo), "--changed-since", "main")
    assert {f["path"] for f in document["findings"]} == {"pkg/feature.py"}


def test_check_paths_narrow_further_and_no_change_means_nothing_analysed(tmp_path):
    repo = make_repo(tmp_path / "repo", {**MANY, "other/a.py": CLEAN})
    (repo / "other" / "a.py").write_text(FIXABLE)
    document = report("check", "pkg", "--changed-since", "HEAD", cwd=repo)
    assert document["summary"]["files_analysed"] == 0 and document["findings"] == []
    assert run_cli("check", "pkg", "--changed-since", "HEAD", cwd=repo).returncode == 0


def test_changed_lines_reports_and_fixes_only_sites_on_changed_lines(tmp_path):
    two_sites = FIXABLE + "\n\ndef other(y):\n    buf = torch.zeros(y.shape)\n    buf.copy_(y)\n    return buf\n"
    repo = make_repo(tmp_path / "repo", {"model.py": two_sites})
    edited = two_sites.replace("buf = torch.zeros(y.shape)", "buf = torch.zeros(y.shape, dtype=y.dtype)")
    (repo / "model.py").write_text(edited)
    patch = tmp_path / "p.diff"
    document = report("apply", str(repo), "--changed-since", "HEAD", "--changed-lines", "-o", str(patch))
    assert [(f["path"], f["line"]) for f in document["findings"]] == [("model.py", 11)]
    git(repo, "apply", str(patch))
    assert (repo / "model.py").read_text() == edited.replace("buf = torch.zeros(", "buf = torch.empty(")
    assert FIXABLE in (repo / "model.py").read_text()  # the untouched function keeps its zeros


def test_write_with_changed_lines_leaves_other_lines_alone(tmp_path):
    repo = make_repo(tmp_path / "repo", {"old.py": FIXABLE})
    write_files(repo, {"new.py": FIXABLE})
    (repo / "old.py").write_text(FIXABLE + "\n")  # a change, but not on the site's line
    result = run_cli("check", str(repo), "--fix", "--changed-since", "HEAD", "--changed-lines")
    assert result.returncode == 0, result.stderr
    assert (repo / "new.py").read_text() == FIXED
    assert (repo / "old.py").read_text() == FIXABLE + "\n"


def test_bad_reference_and_lonely_changed_lines_are_usage_errors(tmp_path):
    repo = make_repo(tmp_path / "repo", {"a.py": FIXABLE})
    bad = run_cli("check", str(repo), "--changed-since", "no-such-branch")
    assert bad.returncode == 2 and "no-such-branch" in bad.stderr
    lonely = run_cli("check", str(repo), "--changed-lines")
    assert lonely.returncode == 2 and "--changed-lines needs --changed-since" in lonely.stderr
    not_git = tmp_path / "plain"
    write_files(not_git, {"a.py": FIXABLE})
    outside = run_cli("check", str(not_git), "--changed-since", "HEAD")
    assert outside.returncode == 2 and "git" in outside.stderr
