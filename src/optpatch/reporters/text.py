"""The terminal report: one table of findings, the files that failed, one summary.

Designed to fit one screen on a small repository: fixes first (applied, then
proposed), kept sites counted by why they were kept (listed one by one with
-v), and the exact next command to run.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.table import Table
from rich.text import Text

from optpatch.cpp_headers import HeaderOutcome
from optpatch.results import RunResult
from optpatch.model import Finding, KeepCategory, Verdict

_STATUS = {
    "applied": ("fixed", "bold green"),
    "proposed": ("proposed", "yellow"),
    "keep": ("kept", "dim"),
    "advice": ("advice", "cyan"),
}
def status_of(finding: Finding) -> str:
    if finding.verdict is Verdict.FIX:
        return "applied" if finding.applied else "proposed"
    return finding.verdict.value


def render_text(
    result: RunResult, console: Console, verbose: bool = False, patch_note: str | None = None, title: str | None = None
) -> None:
    findings = result.findings
    shown = [f for f in findings if verbose or f.verdict is not Verdict.KEEP]
    if title:
        console.print(Text(title, style="bold"))
    if shown:
        console.print(_findings_table(shown))
    for error in result.errors:
        console.print(Text.assemble(("error ", "bold red"), (error.location(), "bold"), f": {error.reason}"))
    unused = result.unused_suppressions
    if unused and verbose:
        places = ", ".join(f"{path}:{line}" for path, line in unused)
        console.print(Text.assemble(("unused suppressions ", "bold"), f"(they silence nothing): {places}"))
    if verbose:
        for line in _header_lines(result):
            console.print(line)
    console.print(_summary(result, findings, verbose))
    if patch_note:
        console.print(Text(patch_note))


def _findings_table(findings: list[Finding]) -> Table:
    table = Table(show_lines=False, pad_edge=False, expand=True, box=None, header_style="bold")
    table.add_column("status", no_wrap=True, min_width=8)
    table.add_column("code", no_wrap=True, min_width=6)
    table.add_column("location", no_wrap=True)
    table.add_column("tier", no_wrap=True, min_width=8)
    table.add_column("impact", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1, min_width=30)
    for finding in findings:
        label, style = _STATUS[status_of(finding)]
        reason = finding.reason
        if finding.verdict is Verdict.FIX and not finding.applied and finding.not_applied_because:
            reason = f"{reason} [not applied: {finding.not_applied_because}]"
        impact = f"{finding.impact.value} ({finding.context.value})" if finding.verdict is not Verdict.KEEP else finding.context.value
        table.add_row(
            Text(label, style=style),
            finding.code,
            finding.location(),
            finding.tier.value if finding.tier else "-",
            impact,
            Text(reason),
        )
    return table


def _header_lines(result: RunResult) -> list[Text]:
    """-v: each C++/CUDA file whose headers were looked for, with its mode and what became of the parse; a count
    of the files whose header-free parse left no question (the JSON report lists those too)."""
    lines, quiet = [], Counter()
    for path, report in result.header_reports:
        if report.outcome in (HeaderOutcome.NOT_NEEDED, HeaderOutcome.DISABLED):
            quiet[report.outcome] += 1
            continue
        detail = f": {report.detail}" if report.detail else ""
        fallback = "" if report.outcome is HeaderOutcome.USED else "; analysed without headers"
        lines.append(Text.assemble(("headers ", "bold"), (path, "bold"), f" {report.mode.value}, {report.outcome.value}{detail}{fallback}"))
    if quiet[HeaderOutcome.NOT_NEEDED]:
        lines.append(Text.assemble(("headers ", "bold"), f"{quiet[HeaderOutcome.NOT_NEEDED]} C++/CUDA file(s) needed none: "
                                   "the header-free parse left no question"))
    if quiet[HeaderOutcome.DISABLED]:
        lines.append(Text.assemble(("headers ", "bold"), f"{quiet[HeaderOutcome.DISABLED]} C++/CUDA file(s) without: --no-headers"))
    return lines


def _keep_label(finding: Finding) -> str:
    return (finding.keep_category or KeepCategory.OTHER).value


def _summary(result: RunResult, findings: list[Finding], verbose: bool) -> Text:
    statuses = Counter(status_of(f) for f in findings)
    tiers_proposed = Counter(f.tier.value for f in findings if status_of(f) == "proposed" and f.tier)
    kept = Counter(_keep_label(f) for f in findings if f.verdict is Verdict.KEEP)
    parts = [f"{statuses['applied']} fixed"]
    if statuses["proposed"]:
        detail = ", ".join(f"{n} {tier}" for tier, n in sorted(tiers_proposed.items()))
        parts.append(f"{statuses['proposed']} proposed but not applied ({detail}; see the table)")
    if kept:
        detail = ", ".join(f"{n} {label}" for label, n in kept.most_common())
        parts.append(f"{sum(kept.values())} kept ({detail})")
    if statuses["advice"]:
        parts.append(f"{statuses['advice']} advice")
    if result.suppressed:
        parts.append(f"{result.suppressed} suppressed")
    if result.unused_suppressions and not verbose:
        parts.append(f"{len(result.unused_suppressions)} unused suppressions (-v lists them)")
    files = f"{result.analysed} files analysed in {result.seconds:.2f} s"
    if result.errors:
        files += f", {len(result.errors)} could not be analysed"
    text = Text.assemble(("Summary: ", "bold"), " · ".join(parts), f" — {files}.")
    if kept and not verbose:
        text.append("\nKept sites are listed with -v; `optpatch explain REPO:FILE:LINE` shows any site's proof or blocking use.", style="dim")
    return text
