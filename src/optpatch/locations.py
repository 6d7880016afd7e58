"""Where a finding sits in line/column terms, attached while its file's text is at hand.

Edits are character offsets into one file's decoded text. SARIF regions,
review suggestions and baseline fingerprints need lines and columns and the
text of the finding's line; the engine records them here during analysis, so
no reporter re-reads a file that `--write` or `check --fix` may have changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.model import Finding
from optpatch.source import SourceFile

_REGIONS = "regions"
_LINE_TEXT = "line_text"


@dataclass(frozen=True)
class Region:
    """One edit as lines and columns, all 1-based; columns count characters (code points).

    The end is the position just after the replaced text, as in SARIF: an
    insertion has start == end.
    """

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    inserted: str


def locate_findings(findings: list[Finding], source: SourceFile) -> None:
    """Record each finding's line text and the regions of its edits."""
    for finding in findings:
        finding.extra[_LINE_TEXT] = source.line_text(finding.line)
        finding.extra[_REGIONS] = tuple(
            Region(*source.position(edit.start), *source.position(edit.end), edit.text) for edit in finding.edits
        )


def set_regions(finding: Finding, regions: tuple[Region, ...]) -> None:
    finding.extra[_REGIONS] = regions


def regions_of(finding: Finding) -> tuple[Region, ...]:
    return finding.extra.get(_REGIONS, ())


def line_text_of(finding: Finding) -> str:
    return finding.extra.get(_LINE_TEXT, "")


def rewritten_line(finding: Finding) -> str | None:
    """The finding's line with its fix applied, when the fix touches that line only; else None."""
    regions = regions_of(finding)
    if not regions or _LINE_TEXT not in finding.extra:
        return None
    if any(r.start_line != finding.line or r.end_line != finding.line or "\n" in r.inserted for r in regions):
        return None
    line = line_text_of(finding)
    pieces, cursor = [], 0
    for region in sorted(regions, key=lambda r: (r.start_column, r.end_column)):
        start, end = region.start_column - 1, region.end_column - 1
        if start < cursor:
            return None
        pieces += [line[cursor:start], region.inserted]
        cursor = end
    pieces.append(line[cursor:])
    return "".join(pieces)
