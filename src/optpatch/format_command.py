"""`--format-command CMD`: the user's own formatter, run on the rewritten files in a temporary copy of REPO.

Only on request. optpatch never runs a formatter by default: it may not be
installed, and a scan must not run anything the scanned repository names,
so a repository's own `format-command` is honoured only with
`--trust-config` (config.py). Without it, edits are shaped by optpatch
itself (python_edits.py, cpp_edits.py).

The copy holds REPO as it is (less `.git`, with an empty `.git` in its
place so that black finds the same project root), and is removed after. CMD
runs in the copy's root with the changed files' relative paths appended,
twice: on their original bytes, then on the rewritten ones. A file the
command leaves as it was takes the command's version of its rewrite; a file
the command would reformat anyway keeps optpatch's own text, so that the
patch holds only the changes optpatch made. A Python file the command turns
into something CPython refuses keeps optpatch's text too.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.line_diff import LineBlock
from optpatch.model import Language
from optpatch.results import RunResult
from optpatch.source import language_of

TIMEOUT_S = 600


@dataclass
class FormatOutcome:
    """What the command did to each changed file."""

    formatted: list[str] = field(default_factory=list)  # took the command's version
    unformatted: list[str] = field(default_factory=list)  # not clean under the command before: optpatch's text kept
    refused: list[str] = field(default_factory=list)  # the command's version does not parse: optpatch's text kept
    error: str | None = None  # the command failed or could not run: nothing taken from it


def format_changes(root: Path, result: RunResult, command: str) -> FormatOutcome:
    """Run `command` on the changed files in a copy of `root`; the rewritten bytes in `result` take its output."""
    outcome = FormatOutcome()
    changed = [file for file in result.files if file.new is not None and file.old != file.new]
    if not changed:
        return outcome
    base = Path(tempfile.mkdtemp(prefix="optpatch-format-"))
    try:
        tree = base / (root.name or "repo")
        shutil.copytree(root, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        (tree / ".git").mkdir(exist_ok=True)
        outside = [file.rel for file in changed if tree.resolve() not in (tree / file.rel).resolve().parents]
        if outside:
            outcome.error = f"{outside[0]} leads outside the copy (a symbolic link): the command is not run"
            return outcome
        before = _formatted(tree, command, {file.rel: file.old for file in changed}, outcome)
        after = _formatted(tree, command, {file.rel: file.new for file in changed}, outcome) if before else None
        if before is None or after is None:
            return outcome
        for file in changed:
            if before[file.rel] != file.old:
                outcome.unformatted.append(file.rel)
            elif language_of(file.rel) is Language.PYTHON and not _parses(after[file.rel]):
                outcome.refused.append(file.rel)
            else:
                file.new = after[file.rel]
                file.blocks = (_whole_file(file.old, file.new),)  # the formatter's changes are not the edits'
                outcome.formatted.append(file.rel)
    except OSError as error:
        outcome.error = f"cannot copy {root} to a temporary directory: {error}"
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return outcome


def _whole_file(old: bytes, new: bytes) -> LineBlock:
    """One block of every line: the patch aligns the two texts as difflib would, within it."""
    return LineBlock(0, _lines(old), 0, _lines(new))


def _lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _formatted(tree: Path, command: str, files: dict[str, bytes], outcome: FormatOutcome) -> dict[str, bytes] | None:
    """Each file's bytes after `command` ran on all of them; None (and `outcome.error`) if it failed."""
    for rel, data in files.items():
        path = tree / rel
        if path.is_symlink():
            path.unlink()  # a link to another file of the copy: the command gets the file itself
        path.write_bytes(data)
    words = shlex.split(command) + sorted(files)
    try:
        run = subprocess.run(words, cwd=tree, capture_output=True, timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as error:
        outcome.error = f"`{command}` could not run: {error}"
        return None
    if run.returncode != 0:
        message = (run.stderr or run.stdout).decode("utf-8", "replace").strip().splitlines()
        outcome.error = f"`{command}` exited with status {run.returncode}" + (f": {message[-1]}" if message else "")
        return None
    return {rel: (tree / rel).read_bytes() for rel in files}


def _parses(data: bytes) -> bool:
    try:
        compile(data, "<formatted>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True
