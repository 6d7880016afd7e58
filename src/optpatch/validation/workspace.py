"""The temporary copy a validation (or a bench) runs in: the tree, a sitecustomize per poison pass, the logs.

REPO is only read: it is copied whole (.git included: tests may need built
extensions or git itself), links into it are pointed at the copy, and the
copy is removed even where the tests left read-only files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from optpatch import poison
from optpatch.poison import PoisonMode


class ValidationSetupError(Exception):
    """The validation could not start: the message says what to do."""


class Workspace:
    """A temporary directory holding the copy of REPO, the sitecustomize per poison pass, and logs."""

    def __init__(self, root: Path):
        temporary = Path(tempfile.gettempdir()).resolve()
        if temporary == root.resolve() or root.resolve() in temporary.parents:
            raise ValidationSetupError(
                f"the temporary directory {temporary} is inside {root}, which optpatch must not write to; "
                "set TMPDIR to a directory outside it"
            )
        self.base = Path(tempfile.mkdtemp(prefix="optpatch-validate-"))
        self.tree = self.base / (root.name or "repo")
        self.logs = self.base / "logs"
        self._stamps: dict[str, int] = {}
        self._runs = 0
        try:
            self.logs.mkdir()
            copy_tree(root, self.tree)
            for mode in PoisonMode:
                site = self.base / f"poison-{mode}"
                site.mkdir()
                (site / "sitecustomize.py").write_text(poison.sitecustomize_source(mode), encoding="utf-8")
        except BaseException:
            self.remove()
            raise

    def write(self, rel: str, data: bytes) -> None:
        """Write a file of the copy, with an mtime no earlier version had.

        A fix such as zeros -> empty keeps the file's size; if the mtime
        second were also equal, Python would run a stale .pyc.
        """
        path = self.tree / rel
        if path.read_bytes() == data:
            return
        status = path.stat()
        previous = self._stamps.get(rel, int(status.st_mtime))
        if not status.st_mode & 0o200:
            path.chmod(status.st_mode | 0o200)  # a read-only source file; the copy is ours to change
        path.write_bytes(data)
        second = max(int(time.time()), previous + 1)
        self._stamps[rel] = second
        os.utime(path, (second, second))

    def prepare_run(self, mode: PoisonMode | None) -> tuple[dict[str, str], Path, Path | None]:
        """The environment, output log and poison report of the next run (mode None: unpoisoned, for the build)."""
        self._runs += 1
        log = self.logs / f"run-{self._runs}.log"
        env = dict(os.environ)
        if mode is None:
            return env, log, None
        site = str(self.base / f"poison-{mode}")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
        env["OPTPATCH_POISON"] = mode.value
        report = self.logs / f"poisoned-{self._runs}.txt"
        env[poison.LOG_VARIABLE] = str(report)
        env[poison.IMPORT_LOG_VARIABLE] = str(self.import_log)
        env[poison.TREE_VARIABLE] = str(self.tree)
        return env, log, report

    @property
    def import_log(self) -> Path:
        """The tree's source files any poisoned process imported (poison.record_imports_at_exit), one per line."""
        return self.logs / "imported.txt"

    def imported(self) -> frozenset[str]:
        try:
            return frozenset(line for line in self.import_log.read_text(encoding="utf-8").splitlines() if line)
        except OSError:
            return frozenset()

    def remove(self) -> None:
        remove_tree(self.base)


def copy_tree(root: Path, destination: Path) -> None:
    """Copy REPO as it is, less sockets and fifos; absolute links into REPO are pointed at the copy,
    so nothing writes through to REPO."""

    def copy_regular(source: str, target: str) -> None:
        if Path(source).is_file():
            shutil.copy2(source, target)

    try:
        shutil.copytree(root, destination, symlinks=True, copy_function=copy_regular)
    except (shutil.Error, OSError) as error:
        raise ValidationSetupError(f"cannot copy {root} to a temporary directory: {error}") from None
    spellings = {root.absolute(), root.resolve()}
    for directory, dirnames, filenames in os.walk(destination):
        for name in dirnames + filenames:
            link = Path(directory) / name
            if not link.is_symlink():
                continue
            target = Path(os.readlink(link))
            inside = next((r for r in spellings if target == r or r in target.parents), None)
            if target.is_absolute() and inside is not None:
                link.unlink()
                link.symlink_to(destination / target.relative_to(inside))


def remove_tree(path: Path) -> None:
    """Remove the temporary tree even where the tests left read-only files or directories."""

    def make_writable(function, failed_path, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed_path), 0o700)
            if os.path.isdir(failed_path) and not os.path.islink(failed_path):
                os.chmod(failed_path, 0o700)
            function(failed_path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable)
    else:
        shutil.rmtree(path, onerror=make_writable)
    if path.exists():
        sys.stderr.write(f"optpatch: could not remove the temporary copy {path}; remove it by hand\n")
