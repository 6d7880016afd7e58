"""Which lines of a pull request a review comment may sit on: the new-side lines of each hunk of GitHub's diff.

GitHub accepts a review comment only on a line its pull-request diff shows
(an added or a context line, on the RIGHT side), and a multi-line comment
only when its first and last lines lie in the same hunk. The diff is the
`patch` of each entry of `GET /repos/{owner}/{repo}/pulls/{number}/files`:
hunks without file headers. A file GitHub shows no diff for (binary, too
large) has no such line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class DiffLines:
    """Per path, the new-side line ranges of the hunks."""

    hunks: dict[str, tuple[range, ...]]

    @classmethod
    def from_pull_files(cls, files: list[tuple[str, str | None]]) -> "DiffLines":
        """FILES: (filename, patch) as GitHub lists them."""
        return cls({name: hunk_ranges(patch) for name, patch in files if patch})

    def holds(self, path: str, start_line: int, end_line: int) -> bool:
        return any(start_line in hunk and end_line in hunk for hunk in self.hunks.get(path, ()))


def hunk_ranges(patch: str) -> tuple[range, ...]:
    """The new-side line numbers each hunk of PATCH shows."""
    ranges = []
    for line in patch.splitlines():
        match = _HUNK.match(line)
        if match:
            start, count = int(match.group(1)), int(match.group(2) or "1")
            if count:
                ranges.append(range(start, start + count))
    return tuple(ranges)
