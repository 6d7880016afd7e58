"""`optpatch explain`: the whole argument behind each verdict, for a human."""

from __future__ import annotations

from typing import Callable

from optpatch.model import Finding, Verdict
from optpatch.reporters.status import status_of
from optpatch.reporters.wrapping import wrap


def explain_lines(finding: Finding, display: Callable[[str], str] = lambda rel: rel) -> list[str]:
    """The explanation of one finding, as plain lines (no markup: code may hold brackets); DISPLAY shows its path."""
    tier = f", tier {finding.tier.value}" if finding.tier else ""
    where = f"{display(finding.path)}:{finding.line}:{finding.col}"
    lines = [f"{finding.code} {finding.name} at {where}: {status_of(finding)}{tier}"]
    label = "Proof" if finding.verdict is Verdict.FIX else "Kept because"
    lines.append(f"  {label}: {finding.reason}")
    if finding.proof:
        lines.append("  Step by step:")
        lines.extend(f"    - {step}" for step in finding.proof)
    if finding.verdict is Verdict.FIX:
        if finding.replacement:
            lines.append(f"  Rewrite: {finding.replacement}")
        if not finding.applied and finding.not_applied_because:
            lines.append(f"  Not applied in this run: {finding.not_applied_because}")
    if finding.frequency is None:
        lines.append(f"  Runs: {finding.context.value}; impact: {finding.impact.value} ({finding.impact_basis})")
        return lines
    lines.append(f"  Runs: {finding.frequency.describe(finding.path)}")
    size = finding.size.value if finding.size else finding.impact.value
    lines.append(f"  Impact: {finding.impact.value}: size {size} ({finding.impact_basis}) x "
                 f"{finding.frequency.frequency.value}")
    return lines


def explain_text(findings: list[Finding], width: int, display: Callable[[str], str] = lambda rel: rel) -> list[str]:
    """Every finding's explanation, each line wrapped to WIDTH under its own indentation, a blank line after each."""
    lines: list[str] = []
    for finding in findings:
        for line in explain_lines(finding, display):
            indent = line[: len(line) - len(line.lstrip())]
            lines += wrap(line, width, indent, indent + "    ")
        lines.append("")
    return lines
