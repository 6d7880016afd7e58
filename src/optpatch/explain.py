"""`optpatch explain`: the whole argument behind each verdict, for a human."""

from __future__ import annotations

from typing import Callable

from optpatch.model import Decided, Verdict, frequency_not_known
from optpatch.reporters.status import status_of
from optpatch.reporters.wrapping import wrap


def explain_lines(decided: Decided, display: Callable[[str], str] = lambda rel: rel) -> list[str]:
    """The explanation of one finding, as plain lines (no markup: code may hold brackets); DISPLAY shows its path."""
    finding, decision = decided
    tier = f", tier {finding.fix.tier.value}" if finding.fix is not None else ""
    where = f"{display(finding.path)}:{finding.line}:{finding.col}"
    lines = [f"{finding.code} {finding.name} at {where}: {status_of(decided)}{tier}"]
    label = "Proof" if finding.verdict is Verdict.FIX else "Kept because"
    lines.append(f"  {label}: {finding.reason}")
    if finding.proof:
        lines.append("  Step by step:")
        lines.extend(f"    - {step}" for step in finding.proof)
    if finding.fix is not None:
        if finding.fix.replacement:
            lines.append(f"  Rewrite: {finding.fix.replacement}")
        if not decision.accepted and decision.refused_because:
            lines.append(f"  Not applied in this run: {decision.refused_because}")
    if finding.frequency is None:
        lines.append(f"  Runs: {finding.context.value}, how often {frequency_not_known(finding.path)}")
        lines.append(f"  Impact: {finding.impact.value} ({finding.impact_basis})")
        return lines
    lines.append(f"  Runs: {finding.frequency.describe(finding.path)}")
    size = finding.size.value if finding.size else finding.impact.value
    lines.append(f"  Impact: {finding.impact.value}: size {size} ({finding.impact_basis}) x "
                 f"{finding.frequency.frequency.value}")
    return lines


def explain_text(findings: list[Decided], width: int, display: Callable[[str], str] = lambda rel: rel) -> list[str]:
    """Every finding's explanation, each line wrapped to WIDTH under its own indentation, a blank line after each."""
    lines: list[str] = []
    for decided in findings:
        for line in explain_lines(decided, display):
            indent = line[: len(line) - len(line.lstrip())]
            lines += wrap(line, width, indent, indent + "    ")
        lines.append("")
    return lines
