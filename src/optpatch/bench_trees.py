"""The trees `optpatch bench` runs the user's command in: the original, and each patched version.

In a git repository, every tree is a fresh clone of it in one temporary
folder (`git clone --shared`: REPO's objects are read, never copied or
written), checked out at REPO's HEAD, with the working tree's state laid
over it: files changed, added (untracked, not ignored) or deleted since
HEAD are copied or deleted alike, so every tree holds what `optpatch apply`
read. A patched tree then gets the bytes `apply` would write. The original
is a clone too, not REPO itself: both trees are equally fresh (no build
outputs, no bytecode caches, the same depth of path), and REPO is never
written, not even by a build.

Files git ignores (build outputs, data, virtual environments) are not in
the trees: `--build CMD` builds each tree, and CMD reads data from where it
lies. Submodules are not checked out. A folder with no commit to clone (not
in a repository, a repository without a commit, or no git) is copied whole
instead, as `--validate` copies it.

`BenchTrees` is a context manager: the temporary folder goes on any exit,
Ctrl-C and SIGTERM included (the command line turns SIGTERM into
KeyboardInterrupt).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from optpatch.results import FileChange
from optpatch.validation.workspace import ValidationSetupError, copy_tree, remove_tree

GIT_TIMEOUT_S = 600


class TreeSetupError(Exception):
    """The trees could not be made; the message says what to do."""


class BenchTrees:
    """A temporary folder of clones (or copies) of REPO; `add` makes one tree, `close` removes them all."""

    def __init__(self, repo: Path):
        self.repo = repo.resolve()
        self.top, self.head = _git_head(self.repo) or (self.repo, None)  # no commit to clone: copy REPO whole
        self.offset = self.repo.relative_to(self.top)  # REPO within its repository: where CMD starts in a tree
        self.overlay = _working_tree_changes(self.top) if self.head else []
        temporary = Path(tempfile.gettempdir()).resolve()
        if temporary == self.top or self.top in temporary.parents:
            raise TreeSetupError(f"the temporary directory {temporary} is inside {self.top}, which optpatch must not "
                                 "write to; set TMPDIR to a directory outside it")
        self.base = Path(tempfile.mkdtemp(prefix="optpatch-bench-"))
        self.logs = self.base / "logs"
        self.logs.mkdir()

    def __enter__(self) -> "BenchTrees":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if self.base.exists():
            remove_tree(self.base)

    def add(self, name: str, changes: list[FileChange]) -> Path:
        """A tree named NAME holding REPO's working state with CHANGES written; the folder CMD starts in."""
        tree = self.base / name
        if self.head is None:
            _copy_whole(self.top, tree)
        else:
            self._clone(tree)
        folder = tree / self.offset
        for change in changes:
            (folder / change.rel).write_bytes(change.new)
        return folder

    def _clone(self, tree: Path) -> None:
        _git(self.base, "clone", "--quiet", "--shared", "--no-checkout", "--", str(self.top), str(tree),
             what=f"clone {self.top}")
        _git(tree, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", self.head,
             what=f"check out {self.head[:12]}")
        for rel in self.overlay:
            _copy_entry(self.top / rel, tree / rel)

    def rewrite_path(self, value: str, tree_folder: Path) -> str:
        """A PATH-like variable's entries inside REPO pointed at the tree, so that CMD imports the tree's code."""
        tree_top = self.base / tree_folder.relative_to(self.base).parts[0]
        entries = []
        for entry in value.split(os.pathsep):
            path = Path(entry).resolve() if entry else None
            if path is not None and (path == self.top or self.top in path.parents):
                entry = str(tree_top / path.relative_to(self.top))
            entries.append(entry)
        return os.pathsep.join(entries)


def _git(cwd: Path, *arguments: str, what: str, hint: str = "") -> str:
    try:
        completed = subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True,
                                   timeout=GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise TreeSetupError("optpatch bench needs git, which is not on PATH") from None
    if completed.returncode != 0:
        detail = (completed.stderr or completed.stdout).strip().splitlines()
        raise TreeSetupError(f"cannot {what}: {detail[-1] if detail else f'git exited {completed.returncode}'}"
                             + (f"; {hint}" if hint else ""))
    return completed.stdout


def _git_head(repo: Path) -> tuple[Path, str] | None:
    """REPO's repository folder and HEAD commit; None when there is none (not a repository, no commit, no git)."""
    try:
        top = _git(repo, "rev-parse", "--show-toplevel", what="find REPO's repository")
        head = _git(repo, "rev-parse", "--verify", "-q", "HEAD", what="find REPO's HEAD commit")
    except TreeSetupError:
        return None
    return Path(top.strip()).resolve(), head.strip()


def _copy_whole(source: Path, target: Path) -> None:
    """Outside git: the whole folder, as --validate copies it (links into it pointed at the copy)."""
    try:
        copy_tree(source, target)
    except ValidationSetupError as error:
        raise TreeSetupError(str(error)) from None


def _working_tree_changes(top: Path) -> list[str]:
    """Paths (relative to TOP) where the working tree differs from HEAD: modified, deleted, untracked and not ignored."""
    listed = _git(top, "ls-files", "-z", "--modified", "--deleted", "--others", "--exclude-standard",
                  what="list the working tree's changes")
    return sorted({path for path in listed.split("\0") if path})


def _copy_entry(source: Path, target: Path) -> None:
    """SOURCE's state at TARGET: a file or link copied (links as links), or TARGET removed when SOURCE is gone."""
    if not source.exists() and not source.is_symlink():
        if target.is_symlink() or target.is_file():
            target.unlink()
        return
    if source.is_dir() and not source.is_symlink():
        return  # a nested repository or submodule: not checked out, as git would not
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    shutil.copy2(source, target, follow_symlinks=False)
