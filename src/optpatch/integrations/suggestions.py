"""Review suggestions from the JSON report: each fix as one ```suggestion block over the lines its edits touch.

A suggestion replaces whole lines, so it is built from the fix's `regions`
(lines and columns of the file before any fix) and the file's text: the
lines from the first edit's line to the last edit's, with the edits applied.
Fixes that apply and touch overlapping lines become one suggestion, since
GitHub refuses to commit overlapping suggestions together; committing every
suggestion of fixes that apply then gives the patched file. A proposal (a fix
not applied: its tier, or a failed validation) gets its own suggestion unless
its lines overlap a fix that applies. Kept sites and advice have no edits and
get no comment.

Some fixes cannot be a suggestion, and are listed instead (the patch holds
them): a file that is not UTF-8 or has CR line endings (a suggestion is LF
text, so committing it would change the line endings), or an edit that joins
the last line with the next one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from optpatch.reporters.markdown import fenced

COMMENT_MARKER = "<!-- optpatch-suggestion"
# Python's tokenizer, and so optpatch's line numbers, end a line at each of these.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Suggestion:
    """Replace lines START_LINE..END_LINE (1-based, inclusive) of PATH by TEXT; an empty TEXT deletes them."""

    path: str
    start_line: int
    end_line: int
    text: str


@dataclass(frozen=True)
class ReviewItem:
    """One review comment: the findings it carries, and its suggestion, or why there is none."""

    path: str
    findings: tuple[dict, ...]
    applied: bool  # the findings' fixes are in the patch (else: one proposal)
    suggestion: Suggestion | None
    no_suggestion_because: str = ""

    @property
    def line(self) -> int:
        return self.suggestion.start_line if self.suggestion else min(f["line"] for f in self.findings)

    @property
    def key(self) -> str:
        """Names the same change at any position: a re-run finds its earlier comment by it."""
        parts = [self.path, "applied" if self.applied else "proposed", *sorted(f["code"] for f in self.findings)]
        if self.suggestion:
            parts.append(self.suggestion.text)
        parts += [f["replacement"] or "" for f in self.findings]
        return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:20]


class FileLines:
    """A file's text as GitHub counts lines (LF only), or the reason suggestions cannot reproduce it."""

    def __init__(self, path: Path):
        self.problem = ""
        self.text = ""
        try:
            self.text = path.read_bytes().decode("utf-8-sig")  # a BOM is no character, as in optpatch's columns
        except (OSError, UnicodeDecodeError) as error:
            self.problem = f"cannot be read as UTF-8 ({error.__class__.__name__})"
            return
        if "\r" in self.text:
            self.problem = "has CR line endings; a suggestion is LF text"
        self.starts = [0] + [m.end() for m in _LINE_BREAK.finditer(self.text)]

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column - 1

    def line_end(self, line: int) -> int:
        """Offset just past LINE's line break (or the end of the text)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)


def review_items(report: dict, root: Path) -> list[ReviewItem]:
    """The review's comments for the report's fixes, in path and line order."""
    by_path: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        if finding["verdict"] == "fix" and finding["regions"]:
            by_path.setdefault(finding["path"], []).append(finding)
    items: list[ReviewItem] = []
    for path, findings in sorted(by_path.items()):
        items += _items_for_file(path, findings, FileLines(root / path))
    return sorted(items, key=lambda item: (item.path, item.line))


def _items_for_file(path: str, findings: list[dict], lines: FileLines) -> list[ReviewItem]:
    groups = _overlapping([f for f in findings if f["written"]])
    taken = [span(group) for group in groups]
    items = [_item(path, tuple(group), True, lines) for group in groups]
    for proposal in (f for f in findings if not f["written"]):
        first, last = span([proposal])
        if any(first <= other_last and other_first <= last for other_first, other_last in taken):
            items.append(ReviewItem(path, (proposal,), False, None, "its lines overlap a fix that applies"))
        else:
            items.append(_item(path, (proposal,), False, lines))
    return items


def span(findings: list[dict] | tuple[dict, ...]) -> tuple[int, int]:
    """The first and last line the findings' edits replace.

    A region that ends at column 1 of a later line stops after the previous
    line's line break: that later line is kept whole.
    """
    regions = [r for f in findings for r in f["regions"]]
    first = min(r["start_line"] for r in regions)
    last = max(r["end_line"] - 1 if r["end_column"] == 1 and r["end_line"] > r["start_line"] else r["end_line"] for r in regions)
    return first, last


def _overlapping(findings: list[dict]) -> list[list[dict]]:
    """Findings grouped so that no two groups' line spans overlap: a sort, then one pass over neighbours."""
    groups: list[list[dict]] = []
    last_line = 0
    for finding in sorted(findings, key=lambda f: span([f])):
        first, last = span([finding])
        if groups and first <= last_line:
            groups[-1].append(finding)
            last_line = max(last_line, last)
        else:
            groups.append([finding])
            last_line = last
    return groups


def _item(path: str, findings: tuple[dict, ...], applied: bool, lines: FileLines) -> ReviewItem:
    if lines.problem:
        return ReviewItem(path, findings, applied, None, f"the file {lines.problem}")
    first, last = span(findings)
    start, end = lines.offset(first, 1), lines.line_end(last)
    edits = sorted(
        {(lines.offset(r["start_line"], r["start_column"]) - start, lines.offset(r["end_line"], r["end_column"]) - start, r["text"])
         for f in findings for r in f["regions"]},  # two fixes may share an edit (one import for both)
        reverse=True,
    )
    chunk = lines.text[start:end]
    new = chunk
    previous_start = len(chunk) + 1
    for edit_start, edit_end, inserted in edits:
        if edit_end > previous_start:
            return ReviewItem(path, findings, applied, None, "its edits overlap one another")
        new = new[:edit_start] + inserted + new[edit_end:]
        previous_start = edit_start
    if chunk.endswith("\n") and new:
        if not new.endswith("\n"):
            return ReviewItem(path, findings, applied, None, "it joins its last line with the next one")
        new = new[:-1]
    elif not chunk.endswith("\n") and new.endswith("\n"):
        return ReviewItem(path, findings, applied, None, "it adds a line break at the end of the file")
    return ReviewItem(path, findings, applied, Suggestion(path, first, last, new))


def comment_body(item: ReviewItem) -> str:
    """The comment: a hidden key, each finding's rule, tier, impact and one-line proof, then the suggestion."""
    findings = sorted(item.findings, key=lambda f: (f["line"], f["column"]))
    lines = [f"{COMMENT_MARKER} key={item.key} -->"]
    for finding in findings:
        lines += [finding_line(finding, item.applied), ""]
    if item.suggestion is not None:
        lines += fenced(item.suggestion.text, "suggestion") + [""]
    commands = ", ".join(f"`optpatch explain .:{f['path']}:{f['line']}`" for f in findings)
    lines.append(f"<sub>The whole proof: {commands}</sub>")
    return "\n".join(lines)


def finding_line(finding: dict, applied: bool) -> str:
    tier = finding["tier"] or "safe"
    status = "fix" if applied else f"proposed, not applied: {one_line(finding['refused_because'] or 'not applied')}"
    return (
        f"**optpatch `{finding['code']}` {finding['name']}** ({tier} tier, {status}; impact {finding['impact']}, "
        f"{runs(finding)}): {one_line(finding['reason'])}"
    )


def runs(finding: dict) -> str:
    """How often the site runs: the frequency the run's call graph gave (JSON schema 3), else the rule's context."""
    frequency = finding.get("frequency")
    return frequency["frequency"] if frequency else finding["context"]


def one_line(text: str) -> str:
    return " ".join(text.split())
