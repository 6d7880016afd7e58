"""Where a finding sits in line/column terms, attached while its file's text is at hand.

Edits are character offsets into one file's decoded text. SARIF regions,
review suggestions and baseline fingerprints need lines and columns and the
text of the finding's line; the engine records them here during analysis, so
no reporter re-reads a file that `--write` or `check --fix` may have changed.
"""

from __future__ import annotations

from dataclasses import replace

from optpatch.model import Finding, Region
from optpatch.source import SourceFile


def located(finding: Finding, source: SourceFile) -> Finding:
    """The finding with its line text and the regions of its fix's edits."""
    edits = finding.fix.edits if finding.fix is not None else ()
    regions = tuple(Region(*source.position(edit.start), *source.position(edit.end), edit.text) for edit in edits)
    return replace(finding, line_text=source.line_text(finding.line), regions=regions)


def rewritten_line(finding: Finding) -> str | None:
    """The finding's line with its fix applied, when the fix touches that line only; else None."""
    regions = finding.regions
    if not regions or not finding.line_text:
        return None
    if any(r.start_line != finding.line or r.end_line != finding.line or "\n" in r.inserted for r in regions):
        return None
    line = finding.line_text
    pieces, cursor = [], 0
    for region in sorted(regions, key=lambda r: (r.start_column, r.end_column)):
        start, end = region.start_column - 1, region.end_column - 1
        if start < cursor:
            return None
        pieces += [line[cursor:start], region.inserted]
        cursor = end
    pieces.append(line[cursor:])
    return "".join(pieces)
