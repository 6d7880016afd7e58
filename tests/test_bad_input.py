"""CONTRACT.md "Bad input": each bad file is named with its reason and skipped; nothing else is lost."""

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli, run_cli_hooked
from optpatch.config import Settings
from optpatch.engine import run
from optpatch.policy import FixPolicy
from optpatch.source import read_source
from optpatch.writer import write_fixes

FIXABLE = "import torch\ndef f(y):\n    x = torch.zeros(3)\n    x.copy_(y)\n    return x\n"
FIXED = FIXABLE.replace("torch.zeros", "torch.empty")


def assert_named_and_the_rest_patched(result, patch: Path, message: str) -> None:
    """Exit status 3, no traceback, the bad file named in the report, and a patch of ok.py alone."""
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert message in " ".join(result.stdout.split())  # the report wraps long lines at the width
    data = patch.read_bytes()
    assert data.count(b"diff --git") == 1 and b"/ok.py" in data


def git_apply(repo: Path, patch: Path, check: bool = True) -> None:
    args = ["git", "apply"] + (["--check"] if check else []) + [str(patch)]
    completed = subprocess.run(args, cwd=repo, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


@pytest.mark.parametrize(
    "name, data",
    [
        ("crlf.py", FIXABLE.replace("\n", "\r\n").encode()),
        ("bom.py", b"\xef\xbb\xbf" + FIXABLE.encode()),
        ("no_final_newline.py", FIXABLE.rstrip("\n").encode()),
        ("tabs.py", FIXABLE.replace("    ", "\t").encode()),
        ("latin1.py", ("# -*- coding: latin-1 -*-\nname = 'été'\n" + FIXABLE).encode("latin-1")),
        ("dir with spaces/file name.py", FIXABLE.encode()),
        ("ünïcödé/naïve.py", FIXABLE.encode()),
    ],
)
def test_file_formats_are_kept_byte_for_byte_and_git_applies_the_patch(tmp_path, name, data):
    repo = tmp_path / "repo"
    path = repo / name
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    patch = tmp_path / "p.diff"
    result = run_cli("apply", str(repo), "-o", str(patch))
    assert result.returncode == 0, result.stdout + result.stderr
    git_apply(repo, patch, check=False)
    expected = data.replace(b"torch.zeros", b"torch.empty")
    assert path.read_bytes() == expected


def test_empty_file_and_a_tree_that_is_not_a_git_repository(tmp_path):
    (tmp_path / "empty.py").write_bytes(b"")
    (tmp_path / "code.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert result.returncode == 0
    assert b"torch.empty" in patch.read_bytes()


def test_too_large_binary_and_outside_symlink_are_reported(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "big.py").write_bytes(b"x = 1\n" * (10 * 1024 * 1024 // 6 + 1))
    (repo / "blob.cu").write_bytes(b"\x7fELF\x00\x00zeros")
    (repo / "late_nul.py").write_bytes(FIXABLE.encode() + b"#" * 10_000 + b"\x00\n")  # Python refuses to compile it
    (tmp_path / "secret.py").write_text(FIXABLE)
    (repo / "link.py").symlink_to(tmp_path / "secret.py")
    (repo / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "p.diff"
    result = run_cli("apply", str(repo), "-o", str(patch))
    assert result.returncode == 3
    out = result.stdout
    assert "warning: big.py: skipped: larger than max-file-size" in result.stderr
    assert "blob.cu: error: binary file" in out
    assert "late_nul.py: error: binary file" in out
    assert "link.py: error: symbolic link leading outside the tree" in out
    assert patch.read_bytes().count(b"diff --git") == 1  # only ok.py
    assert (tmp_path / "secret.py").read_text() == FIXABLE


def test_unreadable_and_vanished_files_are_errors_not_crashes(tmp_path, monkeypatch):
    (tmp_path / "gone.py").write_text(FIXABLE)
    (tmp_path / "locked.py").write_text(FIXABLE)
    (tmp_path / "ok.py").write_text(FIXABLE)
    real_read_bytes = Path.read_bytes

    def read_bytes(self):
        if self.name == "locked.py":
            raise PermissionError(13, "Permission denied")
        return real_read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    (tmp_path / "gone.py").unlink()  # discovered below only by a stale listing: read it directly
    assert "disappeared" in read_source(tmp_path / "gone.py", "gone.py").reason
    result = run(tmp_path, Settings(), FixPolicy(), jobs=1)
    errors = {e.path: e.reason for e in result.errors}
    assert errors == {"locked.py": "cannot be read: Permission denied"}
    assert [change.rel for change in result.changes] == ["ok.py"]


# gone.py is listed, then deleted before optpatch reads it (a checkout or a build step running meanwhile).
DELETE_AFTER_LISTING = """
import optpatch.engine as engine
from pathlib import Path
_discover = engine.discover
def _discover_then_delete(root, *args, **kwargs):
    found = _discover(root, *args, **kwargs)
    (Path(root) / "gone.py").unlink()
    return found
engine.discover = _discover_then_delete
"""


def test_a_file_deleted_during_the_run_is_named_and_the_rest_is_patched(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "gone.py").write_text(FIXABLE)
    (repo / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "p.diff"
    result = run_cli_hooked(DELETE_AFTER_LISTING, "apply", str(repo), "-o", str(patch))
    assert_named_and_the_rest_patched(result, patch, "gone.py: error: disappeared while optpatch was running")


def test_write_refuses_a_file_changed_after_it_was_read(tmp_path):
    (tmp_path / "a.py").write_text(FIXABLE)
    (tmp_path / "b.py").write_text(FIXABLE)
    result = run(tmp_path, Settings(), FixPolicy(), jobs=1)
    (tmp_path / "a.py").write_text(FIXABLE + "# edited meanwhile\n")
    report = write_fixes(tmp_path, result.changes)
    assert report.refused == [("a.py", "changed since optpatch read it; run optpatch again")]
    assert report.written == ["b.py"]
    assert (tmp_path / "a.py").read_text().endswith("# edited meanwhile\n")
    assert (tmp_path / "b.py").read_text() == FIXED


def test_interrupted_write_leaves_every_file_old_or_new(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for index in range(400):
        (repo / f"m{index:03}.py").write_text(FIXABLE + f"# {index}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "optpatch", "apply", str(repo), "--write", "-o", str(tmp_path / "p.diff"), "-j", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode in (0, 130), stderr  # 0 only if it finished first
    if process.returncode == 130:
        assert "Interrupted" in stderr and "Traceback" not in stderr
    for index in range(400):
        text = (repo / f"m{index:03}.py").read_text()
        assert text in (FIXABLE + f"# {index}\n", FIXED + f"# {index}\n")
    assert not [p for p in os.listdir(repo) if p.endswith(".optpatch-tmp")]


def test_symbolic_link_loops_and_dangling_links_are_reported_not_crashes(tmp_path):
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    (tmp_path / "self.py").symlink_to("self.py")
    (tmp_path / "dangling.py").symlink_to("nowhere.py")
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for name in ("a.py", "b.py", "self.py"):
        assert f"{name}: error: symbolic link that loops" in result.stdout
    assert "dangling.py" not in result.stdout  # a link to nothing holds no code: skipped, not an error
    assert patch.read_bytes().count(b"diff --git") == 1  # ok.py
    checked = run_cli("check", str(tmp_path / "a.py"))
    assert checked.returncode == 3 and "a.py: error: symbolic link that loops" in checked.stdout


def test_a_fifo_named_like_source_is_reported_instead_of_read_forever(tmp_path):
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    command = [sys.executable, "-m", "optpatch", "apply", str(tmp_path), "-o", str(patch)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "pipe.py: error: not a regular file" in result.stdout
    assert "dir.py" not in result.stdout
    assert patch.read_bytes().count(b"diff --git") == 1  # ok.py
    checked = subprocess.run([*command[:3], "check", str(tmp_path / "pipe.py")], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 3 and "pipe.py: error: not a regular file" in checked.stdout


@pytest.mark.parametrize(
    "pyproject, message",
    [
        ("[tool]\noptpatch = 3\n", "`tool.optpatch` must be a table"),
        ("[tool.optpatch]\nmax-file-size = true\n", "max-file-size must be a positive number of bytes"),
    ],
)
def test_a_malformed_tool_table_is_a_usage_error(tmp_path, pyproject, message):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "p.diff"
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not patch.exists()


def test_a_pyproject_whose_tool_key_is_not_a_table_is_not_optpatch_s_business(tmp_path):
    (tmp_path / "pyproject.toml").write_text('tool = "none"\n')
    (tmp_path / "ok.py").write_text(FIXABLE)
    result = run_cli("apply", str(tmp_path), "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 0, result.stderr


def test_a_file_name_that_is_not_utf8_is_patched_and_reported_in_every_format(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    name = os.fsdecode(b"caf\xe9.py")  # latin-1 bytes in a name, as old archives leave them
    (repo / name).write_bytes(FIXABLE.encode())
    patch = tmp_path / "p.diff"
    for output_format in ("text", "json", "sarif", "github", "markdown", "github-annotations"):
        command = [sys.executable, "-m", "optpatch", "apply", str(repo), "-o", str(patch), "--format", output_format]
        result = subprocess.run(command, capture_output=True, timeout=120)  # bytes: the name is printed as it is
        assert result.returncode == 0, (output_format, result.stderr)
    assert b'diff --git "a/caf\\351.py" "b/caf\\351.py"' in patch.read_bytes()
    git_apply(repo, patch, check=False)
    assert (repo / name).read_bytes() == FIXED.encode()


def test_an_output_that_is_not_a_regular_file_is_written_into_not_replaced(tmp_path):
    """`-o /dev/null` run as root must not turn /dev/null into a file: a FIFO stands in for the device."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "code.py").write_text(FIXABLE)
    fifo = tmp_path / "patch.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = run_cli("apply", str(repo), "-o", str(fifo))
        assert result.returncode == 0, result.stderr
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)
        assert os.read(reader, 1 << 16).startswith(b"diff --git a/code.py b/code.py\n")
    finally:
        os.close(reader)


@pytest.mark.parametrize("option", ["-o", "--write-baseline"])
def test_an_output_in_a_missing_directory_is_a_usage_error_before_any_work(tmp_path, option):
    (tmp_path / "code.py").write_text(FIXABLE)
    command = "apply" if option == "-o" else "check"
    result = run_cli(command, str(tmp_path), option, str(tmp_path / "missing" / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "missing" in result.stderr and "does not exist" in result.stderr
    assert not (tmp_path / "missing").exists()


def test_a_gitignore_pattern_git_cannot_read_is_skipped_as_git_skips_it(tmp_path):
    (tmp_path / ".gitignore").write_text("[z-a]\n\\\n!\nignored.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_bytes(b"\xff\xfe[\n")
    (tmp_path / "ignored.py").write_text(FIXABLE)
    (tmp_path / "sub" / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert result.returncode == 0, result.stdout + result.stderr
    assert patch.read_bytes().count(b"diff --git") == 1 and b"sub/ok.py" in patch.read_bytes()


@pytest.mark.parametrize(
    "setting", ['exclude = ["[z-a]"]', 'per-file-ignores = { "!" = ["OPT101"] }'],
)
def test_a_configured_pattern_that_cannot_be_read_is_a_usage_error(tmp_path, setting):
    (tmp_path / "pyproject.toml").write_text(f"[tool.optpatch]\n{setting}\n")
    (tmp_path / "ok.py").write_text(FIXABLE)
    result = run_cli("apply", str(tmp_path), "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a valid gitignore pattern" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "p.diff").exists()


def snapshot(root: Path) -> dict[str, bytes]:
    """Every regular file under ROOT (links not followed), by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()
    }


def test_write_touches_nothing_outside_the_tree_and_the_patch_path(tmp_path):
    outside = tmp_path / "outside"
    (outside / "pkg").mkdir(parents=True)
    (outside / "secret.py").write_text(FIXABLE)
    (outside / "pkg" / "module.py").write_text(FIXABLE)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "link.py").symlink_to(outside / "secret.py")
    (repo / "linked_pkg").symlink_to(outside / "pkg", target_is_directory=True)
    (repo / "own.py").write_text(FIXABLE)
    before = snapshot(tmp_path)
    result = run_cli("apply", str(repo), "--write", "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 3, result.stdout + result.stderr  # link.py leads outside: reported
    after = snapshot(tmp_path)
    changed = {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}
    assert changed == {"repo/own.py", "p.diff"}


@pytest.mark.parametrize("name,data,message", [
    ("latin.cu", b"// caf\xe9\nvoid f(int n) { float buf[n]; buf[0] = 1; }\n", "latin.cu:1: error: not valid utf-8 text (re-encode as UTF-8)"),
    ("latin.py", b"x = '\xe9'\n" + FIXABLE.encode(), "latin.py:1: error: not valid utf-8 text (add a coding cookie or re-encode as UTF-8)"),
    ("cookie.py", b"# -*- coding: nonsense -*-\n" + FIXABLE.encode(), "cookie.py: error: bad encoding declaration: unknown encoding: nonsense"),
])
def test_a_file_that_is_not_utf8_is_named_with_why_and_the_rest_is_patched(tmp_path, name, data, message):
    (tmp_path / name).write_bytes(data)
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert_named_and_the_rest_patched(result, patch, message)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_named_through_the_cli_with_exit_status_3(tmp_path):
    (tmp_path / "locked.py").write_text(FIXABLE)
    (tmp_path / "locked.py").chmod(0)
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch))
    assert_named_and_the_rest_patched(result, patch, "locked.py: error: cannot be read: Permission denied")


# locked.py cannot be read, as for a user without the permission (root reads any file, so chmod cannot show it).
UNREADABLE_LOCKED = """
import pathlib
_read_bytes = pathlib.Path.read_bytes
def _refuse_locked(self):
    if self.name == "locked.py":
        raise PermissionError(13, "Permission denied")
    return _read_bytes(self)
pathlib.Path.read_bytes = _refuse_locked
"""


def test_an_unreadable_file_is_named_through_the_cli_whoever_runs_it(tmp_path):
    (tmp_path / "locked.py").write_text(FIXABLE)
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli_hooked(UNREADABLE_LOCKED, "apply", str(tmp_path), "-o", str(patch))
    assert_named_and_the_rest_patched(result, patch, "locked.py: error: cannot be read: Permission denied")


def test_a_syntax_error_is_reported_without_python_warnings_about_other_lines(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\nx = 1if True else 2\ny = torch.zeros(3)\ndef f(:\n    pass\n")
    (tmp_path / "ok.py").write_text(FIXABLE)
    patch = tmp_path / "out" / "p.diff"
    patch.parent.mkdir()
    result = run_cli("apply", str(tmp_path), "-o", str(patch), "--format", "json")
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr == ""  # CPython's "invalid decimal literal" warning for line 2 was printed here
    assert "syntax error" in result.stdout and patch.read_bytes().count(b"diff --git") == 1
