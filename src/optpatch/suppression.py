"""`# optpatch: ignore[OPT101]` comments (`//` in C++/CUDA), on the line or the line above.

A bare `optpatch: ignore` silences every rule on that line. A comment
alone on its line also covers the line below; one after code covers only
its own line. Suppressions are honoured in every mode, `--write` included;
the ones that silenced nothing are counted in the text summary, listed
with `-v` and in the JSON report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from optpatch.model import Finding
from optpatch.source import LINE_BREAK

_COMMENT = {
    "python": re.compile(r"#\s*optpatch:\s*ignore(?:\[([A-Za-z0-9_,\s-]*)\])?"),
    "cpp": re.compile(r"//\s*optpatch:\s*ignore(?:\[([A-Za-z0-9_,\s-]*)\])?"),
}


@dataclass
class Suppression:
    line: int
    codes: frozenset[str]  # empty: every rule
    alone: bool = True  # the comment is all its line holds: it also covers the line below
    used: bool = field(default=False, compare=False)

    def covers(self, code: str) -> bool:
        return not self.codes or any(code.startswith(c) for c in self.codes)


def find_suppressions(text: str, language: str) -> list[Suppression]:
    pattern = _COMMENT[language]
    found = []
    for number, line in enumerate(LINE_BREAK.split(text), start=1):
        match = pattern.search(line)
        if match:
            codes = frozenset(c.strip() for c in (match.group(1) or "").split(",") if c.strip())
            found.append(Suppression(number, codes, alone=not line[: match.start()].strip()))
    return found


def apply_suppressions(findings: list[Finding], suppressions: list[Suppression]) -> tuple[list[Finding], int]:
    """Drop the findings a comment silences; returns the rest and how many were dropped."""
    by_line: dict[int, list[Suppression]] = {}
    for suppression in suppressions:
        by_line.setdefault(suppression.line, []).append(suppression)
    kept, dropped = [], 0
    for finding in findings:
        match = next(
            (s for line in (finding.line, finding.line - 1) for s in by_line.get(line, ())
             if s.covers(finding.code) and (line == finding.line or s.alone)),
            None,
        )
        if match is None:
            kept.append(finding)
        else:
            match.used = True
            dropped += 1
    return kept, dropped
