"""What changed since a git revision: the files, and the lines of each, for `--changed-since`.

"Changed since REF" means what a pull request against REF changes: the
difference between the merge base of REF and HEAD and the working tree
(committed, staged and unstaged edits), plus untracked files that are not
ignored. Deleted files are not listed; a renamed file is listed under its
new name, with only its edited lines changed.
"""

from __future__ import annotations

import codecs
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from optpatch.model import Finding

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


class ChangesError(Exception):
    """What changed cannot be told: not a git tree, an unknown revision, no git."""


@dataclass(frozen=True)
class ChangedLines:
    """A filter: findings on lines the change did not touch are out of scope."""

    lines: frozenset[tuple[str, int]]  # (path relative to the root, 1-based line)
    whole_files: frozenset[str]  # untracked files: every line is new

    def touches(self, path: str, line: int) -> bool:
        return path in self.whole_files or (path, line) in self.lines

    def out_of_scope(self, findings: Sequence[Finding]) -> list[str | None]:
        return [None if self.touches(f.path, f.line) else "not on a changed line (--changed-lines)" for f in findings]


@dataclass(frozen=True)
class Changes:
    files: frozenset[str]  # paths relative to the root, forward slashes
    lines: ChangedLines


def changes_since(root: Path, ref: str) -> Changes:
    """Files and lines under ROOT changed since REF (see the module docstring)."""
    if ref.startswith("-"):
        raise ChangesError(f"--changed-since {ref}: not a git revision")
    _git(root, "rev-parse", "--is-inside-work-tree", what=f"{root} is not inside a git work tree")
    branched = f"--changed-since {ref}: cannot find where HEAD branched from it"
    base = _git(root, "merge-base", ref, "HEAD", what=branched).strip()
    compared = ("--relative", "--find-renames", "--no-ext-diff", "--no-color", base, "--")
    changed = _git(root, "diff", "--name-only", "-z", "--diff-filter=d", *compared, what=f"git diff {ref}")
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", what="git ls-files")
    new_files = frozenset(p for p in untracked.split("\0") if p)
    files = frozenset(p for p in changed.split("\0") if p) | new_files
    patch = _git(
        root, "-c", "core.quotePath=false", "diff", "--unified=0", "--src-prefix=a/", "--dst-prefix=b/", *compared,
        what=f"git diff {ref}",
    )
    return Changes(files, ChangedLines(frozenset(added_lines(patch)), new_files))


def added_lines(patch: str) -> set[tuple[str, int]]:
    """(path, line) of every line a zero-context unified diff adds or rewrites, on the new side."""
    lines: set[tuple[str, int]] = set()
    path = None
    for row in patch.splitlines():
        if row.startswith("+++ "):
            path = _diff_path(row[4:])
            continue
        match = _HUNK.match(row)
        if match and path is not None:
            start, count = int(match.group(1)), int(match.group(2) or 1)
            lines.update((path, number) for number in range(start, start + count))
    return lines


def _diff_path(name: str) -> str | None:
    """`b/dir/file.py` or a C-quoted `"b/dir/\\303\\251.py"` -> `dir/file.py`; None for /dev/null."""
    if name.startswith('"'):
        name = codecs.escape_decode(name[1:-1].encode())[0].decode("utf-8")
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith("b/") else name


def _git(root: Path, *args: str, what: str) -> str:
    try:
        completed = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, encoding="utf-8", errors="replace"
        )
    except FileNotFoundError:
        raise ChangesError("--changed-since needs git, which is not installed") from None
    if completed.returncode != 0:
        detail = completed.stderr.strip().splitlines()
        raise ChangesError(f"{what}: {detail[-1] if detail else 'git failed'}")
    return completed.stdout
