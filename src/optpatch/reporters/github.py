"""`--output-format github`: GitHub Actions workflow annotations, as ruff's `github` format; one per fix or advice, one per failed file.

A warning is for a fix the run applies; a proposal (a fix it holds back: its
tier, a failed validation) is a plain log line naming its tier and what
would apply it.

`::warning file=F,line=L,col=C,title=T::MESSAGE`. GitHub decodes `%25`,
`%0D` and `%0A` in the message, and additionally `%3A` and `%2C` in
property values, so those characters are escaped as such. Paths are written
relative to the current directory (the checkout root in a workflow), where
GitHub looks for them. Kept sites are not annotated. (Before ruff's name was
taken, this format was `github-annotations`, still accepted for one release.)
"""

from __future__ import annotations

import os
from pathlib import Path

from optpatch.model import Decided, Verdict
from optpatch.reporters import ReportOptions
from optpatch.reporters.json_report import summary_of
from optpatch.reporters.status import Delivery, area_note, status_of
from optpatch.results import RunResult

_COMMAND = {Verdict.FIX: "warning", Verdict.ADVICE: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(command: str, properties: dict[str, object], message: str) -> str:
    props = ",".join(f"{name}={escape_property(str(value))}" for name, value in properties.items())
    return f"::{command} {props}::{escape_data(message)}"


def render_github(result: RunResult, options: ReportOptions = ReportOptions()) -> str:
    lines = [annotation(d, result.root, options.delivery) for d in result.decided if annotated(d)]
    lines += [proposal_line(d, result.root) for d in result.decided
              if d.finding.verdict is Verdict.FIX and not d.decision.accepted]
    for error in result.errors:
        properties: dict[str, object] = {"file": display_path(result.root, error.path)}
        if error.line:
            properties["line"] = error.line
        lines.append(workflow_command("error", {**properties, "title": "optpatch: file not analysed"}, error.reason))
    summary = summary_of(result, options.delivery)
    lines.append(
        f"optpatch: {summary['accepted']} fixable, {summary['refused']} proposed but not applied, "
        f"{summary['advice']} advice, {summary['files_failed']} file(s) not analysed."
    )
    if note := area_note(result.decided, options.fix_areas):
        lines.append(f"optpatch: {note}.")
    return "\n".join(lines) + "\n"


def annotated(decided: Decided) -> bool:
    """A warning for a fix this run applies, a notice for advice; a proposal is no warning (the run holds it back)."""
    verdict = decided.finding.verdict
    return verdict is Verdict.ADVICE or (verdict is Verdict.FIX and decided.decision.accepted)


def proposal_line(decided: Decided, root: Path) -> str:
    """A proposal as a plain log line: where, which rule and tier, and what would apply it."""
    finding, decision = decided
    return (f"{display_path(root, finding.path)}:{finding.line}:{finding.col}: {finding.code} {finding.name} "
            f"[{finding.fix.tier.value}, proposed]: {decision.refused_because or 'not applied'}")


def annotation(decided: Decided, root: Path, delivery: Delivery) -> str:
    finding = decided.finding
    properties = {
        "file": display_path(root, finding.path),
        "line": finding.line,
        "col": finding.col,
        "title": f"{finding.code} {finding.name}",
    }
    body = [finding.reason]
    if finding.fix is not None:
        body.append(f"Fix ({finding.fix.tier.value}, {status_of(decided, delivery)}): {finding.fix.replacement}")
        runs = finding.frequency.describe(finding.path) if finding.frequency else finding.context.value
        body.append(f"Impact: {finding.impact.value} ({runs}); {finding.impact_basis}")
    return workflow_command(_COMMAND[finding.verdict], properties, "\n".join(body))


def display_path(root: Path, rel: str) -> str:
    """ROOT/REL relative to the current directory when it lies below it, else REL."""
    absolute = root / rel
    try:
        return absolute.relative_to(Path(os.getcwd()).resolve()).as_posix()
    except ValueError:
        return rel
