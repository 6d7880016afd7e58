"""`--write` and `check --fix`: each file is replaced whole or not at all, and a file that cannot be written is named.

The real CLI runs in a subprocess with one function wrapped by a hook
(`conftest.run_cli_hooked`), so that a Ctrl-C, an edit by someone else or an
error of the file system arrives at an exact step of the write.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_cli_hooked

FIXABLE = "import torch\ndef f(y):\n    x = torch.zeros(3)\n    x.copy_(y)\n    return x\n"
FIXED = FIXABLE.replace("torch.zeros", "torch.empty")
NAMES = [f"m{index:03}.py" for index in range(5)]


def make_repo(root: Path) -> Path:
    root.mkdir()
    for index, name in enumerate(NAMES):
        (root / name).write_text(FIXABLE + f"# {index}\n")
    return root


# Sends SIGINT to this process when the write of m002.py reaches STEP (`fsync` receives a descriptor).
INTERRUPT_AT = """
import os, signal
_step = os.{step}
def _interrupt_at_m002(target, *args, **kwargs):
    name = os.readlink(f"/proc/self/fd/{{target}}") if isinstance(target, int) else os.fspath(target)
    if "m002.py" in name:
        os.kill(os.getpid(), signal.SIGINT)
    return _step(target, *args, **kwargs)
os.{step} = _interrupt_at_m002
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names a descriptor's file through /proc")
@pytest.mark.parametrize("step", ["open", "fsync", "chmod", "replace"])
def test_ctrl_c_at_any_step_of_a_write_finishes_that_file_stops_there_and_leaves_no_temporary(tmp_path, step):
    """The interrupt waits for the file being replaced (from the temporary file's creation, `open`, to its
    `replace`), then stops the run: that file and the earlier ones new, the later ones old."""
    repo = make_repo(tmp_path / "repo")
    patch = tmp_path / "p.diff"
    result = run_cli_hooked(INTERRUPT_AT.format(step=step), "apply", str(repo), "--write", "-o", str(patch), "-j", "1")
    assert result.returncode == 130, result.stdout + result.stderr
    assert "Interrupted" in result.stderr and "Traceback" not in result.stderr
    contents = [(repo / name).read_text() for name in NAMES]
    assert contents == [FIXED + f"# {index}\n" for index in (0, 1, 2)] + [FIXABLE + f"# {index}\n" for index in (3, 4)]
    assert sorted(os.listdir(repo)) == NAMES  # no temporary file
    assert patch.read_bytes().count(b"diff --git") == len(NAMES)  # the patch was complete before the first write


# Someone saves m002.py after optpatch read it and before optpatch writes the fixes.
EDIT_BEFORE_WRITING = """
import optpatch.writer as writer
from pathlib import Path
_write_fixes = writer.write_fixes
def _edit_then_write(root, changes):
    with open(Path(root) / "m002.py", "a") as stream:
        stream.write("# edited meanwhile\\n")
    return _write_fixes(root, changes)
writer.write_fixes = _edit_then_write
"""

# The directory of m002.py refuses new files, as a read-only mount or a full disk would.
UNWRITABLE_M002 = """
import errno, os, tempfile
_mkstemp = tempfile.mkstemp
def _refuse_m002(*args, **kwargs):
    if "m002.py" in kwargs.get("prefix", ""):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))
    return _mkstemp(*args, **kwargs)
tempfile.mkstemp = _refuse_m002
"""


@pytest.mark.parametrize(
    "hook, m002, why",
    [
        (EDIT_BEFORE_WRITING, FIXABLE + "# 2\n# edited meanwhile\n", "changed since optpatch read it; run optpatch again"),
        (UNWRITABLE_M002, FIXABLE + "# 2\n", "cannot be written: Read-only file system; the file is unchanged"),
    ],
    ids=["changed_after_reading", "unwritable"],
)
@pytest.mark.parametrize("command", [["apply", "--write"], ["check", "--fix"]], ids=["apply_write", "check_fix"])
def test_a_file_that_cannot_be_replaced_is_named_left_alone_and_the_others_are_written(tmp_path, hook, m002, why, command):
    repo = make_repo(tmp_path / "repo")
    args = [command[0], str(repo), command[1], "-j", "1"] + (["-o", str(tmp_path / "p.diff")] if command[0] == "apply" else [])
    result = run_cli_hooked(hook, *args)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert f"m002.py: error: not written: {why}" in " ".join(result.stderr.split())
    assert (repo / "m002.py").read_text() == m002
    for index in (0, 1, 3, 4):
        assert (repo / NAMES[index]).read_text() == FIXED + f"# {index}\n"
    assert sorted(os.listdir(repo)) == NAMES


@pytest.mark.parametrize("command", [["apply", "--write", "-o", "{patch}"], ["check", "--fix"]], ids=["apply_write", "check_fix"])
def test_a_hard_linked_file_is_refused_so_both_names_keep_the_same_text(tmp_path, command):
    repo = make_repo(tmp_path / "repo")
    os.link(repo / "m002.py", tmp_path / "elsewhere.py")
    patch = tmp_path / "p.diff"
    arguments = [part.format(patch=patch) for part in command]
    result = run_cli_hooked("", arguments[0], str(repo), *arguments[1:])
    assert result.returncode == 3, result.stdout + result.stderr
    assert "m002.py: error: not written: has 1 other hard link(s)" in " ".join(result.stderr.split())
    assert (tmp_path / "elsewhere.py").read_text() == (repo / "m002.py").read_text() == FIXABLE + "# 2\n"
    assert [(repo / name).read_text() for name in NAMES if name != "m002.py"] == [
        FIXED + f"# {index}\n" for index in (0, 1, 3, 4)
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root may give a file to another user")
def test_a_rewritten_file_keeps_its_owner_and_group(tmp_path):
    repo = make_repo(tmp_path / "repo")
    os.chown(repo / "m002.py", 12345, 23456)
    result = run_cli_hooked("", "apply", str(repo), "--write", "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 0, result.stdout + result.stderr
    status = (repo / "m002.py").stat()
    assert (status.st_uid, status.st_gid) == (12345, 23456)
    assert (repo / "m002.py").read_text() == FIXED + "# 2\n"
