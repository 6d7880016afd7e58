"""What a run produced: each file's findings and rewritten bytes, and the whole run's.

These are what the reporters, the patch writer and the command line read;
nothing here changes once the run is over, except that the command line
drops findings outside the run's scope before it reports (narrowing.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from optpatch.cpp_headers import HeaderReport
from optpatch.line_diff import LineBlock
from optpatch.model import Decided, FileError, Finding


@dataclass(frozen=True)
class FileChange:
    """One rewritten file, for the patch and for --write: its bytes before and after, and where they differ.

    `blocks` are the lines (split at LF, as git splits them) the edits
    touched, in order; every line outside them is unchanged. The patch
    writer aligns them instead of diffing the whole file (line_diff.py).
    """

    rel: str
    old: bytes
    new: bytes
    blocks: tuple[LineBlock, ...]


@dataclass
class FileResult:
    rel: str
    decided: list[Decided] = field(default_factory=list)  # each finding with this run's decision, in position order
    error: FileError | None = None
    skipped: str | None = None
    old: bytes | None = None  # set only when the file changes
    new: bytes | None = None
    blocks: tuple[LineBlock, ...] = ()  # with `new`: the lines the edits touched (FileChange)
    suppressed: int = 0
    unused_suppressions: list[int] = field(default_factory=list)
    headers: HeaderReport | None = None  # C++/CUDA: the header mode, and whether the rules saw the headers

    @property
    def findings(self) -> list[Finding]:
        return [decided.finding for decided in self.decided]


@dataclass
class RunResult:
    root: Path
    files: list[FileResult]
    discovery_errors: list[FileError]
    skipped: list[tuple[str, str]]
    seconds: float = 0.0
    oversized: list[str] = field(default_factory=list)  # the skipped files over max-file-size: failures only with --strict
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (rel, why) of skipped files a warning names

    @property
    def decided(self) -> list[Decided]:
        """Every finding with this run's decision, in path, line, column, code order: what the reporters read."""
        return sorted((d for r in self.files for d in r.decided), key=lambda d: d.finding.sort_key)

    @property
    def findings(self) -> list[Finding]:
        """Every finding, in the same order, without the decisions."""
        return [decided.finding for decided in self.decided]

    @property
    def errors(self) -> list[FileError]:
        return sorted(self.discovery_errors + [r.error for r in self.files if r.error], key=lambda e: e.path)

    @property
    def changes(self) -> list[FileChange]:
        """The files this run rewrites, in path order."""
        return [FileChange(r.rel, r.old, r.new, r.blocks) for r in self.files if r.new is not None and r.old != r.new]

    @property
    def analysed(self) -> int:
        return sum(1 for r in self.files if not r.error and not r.skipped)

    @property
    def suppressed(self) -> int:
        return sum(r.suppressed for r in self.files)

    @property
    def header_reports(self) -> list[tuple[str, HeaderReport]]:
        """(path, report) of every C++/CUDA file a rule parsed: its header mode and what became of it."""
        return [(r.rel, r.headers) for r in self.files if r.headers is not None]

    @property
    def unused_suppressions(self) -> list[tuple[str, int]]:
        """(path, line) of every `optpatch: ignore` comment that silenced nothing, in path order."""
        return [(r.rel, line) for r in self.files for line in r.unused_suppressions]
