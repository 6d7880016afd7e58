"""`--output-format markdown`: a pull-request comment body, with a summary table, one suggestion per small fix and the whole patch folded.

It opens with the headline and a compact table of the fixes by rule and
area (library, tests, benchmarks), folded in `<details>` when it is longer
than a screen; then the findings, the suggestions and the patch.

The first line is a hidden marker, so a bot can find and update its previous
comment instead of adding another. A fix whose edits all lie on the
finding's own line, and that the run applies, gets a ```suggestion block holding the rewritten line:
GitHub offers a one-click "commit suggestion" for it when the block is
posted as a review comment on that line. Larger fixes are in the patch. A
proposal (a fix of the unsafe or validate tier, or one validation backed
out) is listed as text with its tier and what would apply it: a one-click
suggestion would apply what optpatch itself holds back.
GitHub refuses comments longer than 65,536 characters; a patch that would
not fit is left out with a pointer to the artifact.

After `--validate CMD`, a validation section says what ran, which fixes
failed it and were backed out, and which validate-tier fixes passed it (the
`validation` object of the JSON report, docs/validation.md).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from optpatch.locations import rewritten_line
from optpatch.model import CodeArea, Decided, Verdict
from optpatch.patch import write_patch
from optpatch.policy import fix_id
from optpatch.reporters import ReportOptions
from optpatch.reporters.json_report import summary_of
from optpatch.reporters.status import area_note
from optpatch.results import RunResult

if TYPE_CHECKING:
    from optpatch.validation.tests import ValidationOutcome

MARKER = "<!-- optpatch-report -->"
COMMENT_LIMIT = 65_536
_PATCH_NAME = "model_patch.diff"
SCREEN_ROWS = 20  # a summary with more rules than this is folded: the findings below should show without scrolling


def render_markdown(result: RunResult, options: ReportOptions = ReportOptions()) -> str:
    findings = [d for d in result.decided if d.finding.verdict is not Verdict.KEEP]
    patch = write_patch(result.changes).decode("utf-8", errors="replace")
    head = [MARKER, headline(result), ""] + fixes_summary(findings) + area_section(findings, options.fix_areas)
    head += errors_section(result) + validation_section(options.validation)
    table = findings_table(findings) + [""] if findings else []
    suggestions = suggestions_section(findings)
    # Most complete first; GitHub rejects a longer comment outright.
    for lines in (
        head + table + suggestions + patch_section(patch, result),
        head + table + suggestions + [artifact_note(f"The patch ({len(patch):,} characters)")],
        head + table + [artifact_note("The suggestions and the patch")],
    ):
        body = "\n".join(lines) + "\n"
        if len(body) <= COMMENT_LIMIT:
            return body
    return "\n".join(head + truncated_table(table, COMMENT_LIMIT - len("\n".join(head)) - 200)) + "\n"


def headline(result: RunResult) -> str:
    summary = summary_of(result)
    if not result.changes and not summary["refused"] and not summary["advice"]:
        return f"### optpatch: no changes\n\n{summary['files_analysed']} file(s) analysed, nothing to rewrite."
    parts = [f"{summary['accepted']} fix(es) in {summary['files_changed']} file(s)"]
    if summary["refused"]:
        parts.append(f"{summary['refused']} proposed but not applied")
    if summary["advice"]:
        parts.append(f"{summary['advice']} advice")
    return f"### optpatch: {', '.join(parts)}\n\n{summary['files_analysed']} file(s) analysed; every fix below carries its proof."


def fixes_summary(findings: list[Decided]) -> list[str]:
    """The fixes counted by rule (rows) and area (columns): `2 + 1 proposed` is two in the patch and one held back."""
    fixes = [(f, decision) for f, decision in findings if f.verdict is Verdict.FIX]
    if not fixes:
        return []
    areas = [area for area in CodeArea if any(f.area is area for f, _ in fixes)]
    applied = Counter((f.code, f.area) for f, decision in fixes if decision.accepted)
    proposed = Counter((f.code, f.area) for f, decision in fixes if not decision.accepted)
    names = {f.code: f.name for f, _ in fixes}
    columns = [area.value for area in areas] + (["total"] if len(areas) > 1 else [])
    rows = ["| rule | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for code in sorted(names):
        cells = [_count_cell(applied[code, area], proposed[code, area]) for area in areas]
        if len(areas) > 1:
            cells.append(_count_cell(sum(applied[code, a] for a in areas), sum(proposed[code, a] for a in areas)))
        rows.append(f"| `{code}` {names[code]} | " + " | ".join(cells) + " |")
    if len(names) > SCREEN_ROWS:
        summary = f"Fixes by rule and area ({len(names)} rules)"
        return ["<details>", f"<summary>{summary}</summary>", ""] + rows + ["", "</details>", ""]
    return rows + [""]


def area_section(findings: list[Decided], fix_areas: tuple[CodeArea, ...]) -> list[str]:
    """The fixes `fix-areas` left out of the patch, and the option that includes them."""
    note = area_note(findings, fix_areas)
    return [re.sub(r"(--fix-areas \S+)$", r"`\1`", note) + ".", ""] if note else []


def _count_cell(applied: int, proposed: int) -> str:
    if not proposed:
        return str(applied) if applied else "-"
    return f"{applied} + {proposed} proposed"


def findings_table(findings: list[Decided]) -> list[str]:
    rows = ["| | rule | location | tier | impact | why |", "|---|---|---|---|---|---|"]
    for decided in findings:
        finding = decided.finding
        rows.append(
            "| "
            + " | ".join(
                [
                    status(decided),
                    f"`{finding.code}` {finding.name}",
                    f"`{finding.location()}`",
                    finding.fix.tier.value if finding.fix is not None else "-",
                    f"{finding.impact.value} ({finding.frequency.frequency.value if finding.frequency else finding.context.value})",
                    cell(why(decided)),
                ]
            )
            + " |"
        )
    return rows


def status(decided: Decided) -> str:
    if decided.finding.verdict is Verdict.ADVICE:
        return "advice"
    return "fix" if decided.decision.accepted else "proposed"


def why(decided: Decided) -> str:
    finding, decision = decided
    if finding.verdict is Verdict.FIX and not decision.accepted:
        return f"{finding.reason} (not applied: {decision.refused_because})"
    return finding.reason


def cell(text: str) -> str:
    """Table cells hold one line, and a `|` would end the cell."""
    return " ".join(text.split()).replace("|", "\\|")


def errors_section(result: RunResult) -> list[str]:
    if not result.errors:
        return []
    lines = ["**Not analysed:**", ""]
    lines += [f"- `{error.location()}`: {cell(error.reason)}" for error in result.errors]
    return lines + [""]


def validation_section(validation: ValidationOutcome | None) -> list[str]:
    if validation is None:
        return []
    lines = [
        "#### Validation",
        "",
        # No timing: a bot updates a pull request's body only when its content changes.
        f"`{cell(validation.command)}`, {len(validation.runs)} run(s): {cell(validation.message)}",
        "",
    ]
    for finding, failure in validation.dropped:
        why = "failed" if failure is None else f"{failure.label} (poison {failure.mode}) failed"
        if failure and failure.failing_tests:
            why += ": " + ", ".join(f"`{test}`" for test in failure.failing_tests)
        lines.append(f"- backed out `{fix_id(finding)}`: {cell(why)}")
    passed = validation.validated_passed
    lines += [f"- passed, so applied (validate tier): `{fix_id(finding)}`" for finding in passed]
    return lines + [""] if validation.dropped or passed else lines


def suggestions_section(findings: list[Decided]) -> list[str]:
    """One-click suggestions for the fixes this run applies, then the proposals as text: never a click for a fix optpatch holds back."""
    lines: list[str] = []
    for finding, decision in findings:
        if finding.verdict is not Verdict.FIX or not decision.accepted:
            continue
        new_line = rewritten_line(finding)
        if new_line is None:
            continue
        tier = finding.fix.tier.value
        lines += [f"**`{finding.location()}`** `{finding.code}` {finding.name} ({tier}): {cell(finding.reason)}", ""]
        lines += fenced(new_line, "suggestion") + [""]
    return (["#### Suggestions", ""] + lines if lines else []) + proposals_section(findings)


def proposals_section(findings: list[Decided]) -> list[str]:
    """The fixes found and held back, with their tier and what would apply them; no suggestion block."""
    lines = [
        f"- `{finding.location()}` `{finding.code}` {finding.name} ({finding.fix.tier.value} tier): "
        f"`{cell(finding.fix.replacement)}`; {cell(decision.refused_because or 'not applied')}"
        for finding, decision in findings if finding.fix is not None and not decision.accepted
    ]
    return ["#### Proposed, not applied", ""] + lines + [""] if lines else []


def patch_section(patch: str, result: RunResult) -> list[str]:
    if not patch:
        return []
    files = len(result.changes)
    summary = f"The whole patch ({_PATCH_NAME}, {files} file(s)); apply it with <code>git apply {_PATCH_NAME}</code>"
    return ["<details>", f"<summary>{summary}</summary>", ""] + fenced(patch.rstrip("\n"), "diff") + ["", "</details>"]


def artifact_note(what: str) -> str:
    return f"{what} would make this comment too long for GitHub: download `{_PATCH_NAME}` from the run's artifacts."


def truncated_table(table: list[str], budget: int) -> list[str]:
    """The table's header and as many rows as fit in BUDGET characters, then how many were left out."""
    kept, used = table[:2], len("\n".join(table[:2]))
    rows = [row for row in table[2:] if row]
    for row in rows:
        if used + len(row) + 1 > budget:
            break
        kept.append(row)
        used += len(row) + 1
    left_out = len(rows) - (len(kept) - 2)
    return kept + ["", artifact_note(f"{left_out} more finding(s), the suggestions and the patch")]


def fenced(text: str, language: str) -> list[str]:
    """A code fence longer than any run of backticks inside the text."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", text, fence]
