"""The console section of a `--validate CMD` run: what ran, what was backed out and why, what passed."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optpatch.validation.tests import ValidationOutcome


def render_validation(outcome: ValidationOutcome, console) -> None:
    """The validation section of the text report: what ran, what was dropped and why, what passed."""
    from rich.text import Text

    header = f"Validation with `{outcome.command}`: {len(outcome.runs)} runs in {outcome.seconds:.1f} s"
    console.print(Text(header, style="bold"), soft_wrap=True)
    if outcome.baseline_failure is not None:
        console.print(Text("Output of the failing baseline run:", style="bold red"), soft_wrap=True)
        console.print(Text(_indent(outcome.baseline_failure.tail)), soft_wrap=True)
    for finding, failure in outcome.dropped:
        console.print(Text.assemble(("dropped ", "bold red"), f"{finding.code} {finding.location()} ({finding.fix.tier.value}): ",
                                    failure.describe() if failure else "failed", f" [{failure.what()}]" if failure else ""), soft_wrap=True)
        if failure is not None:
            if failure.failing_tests:
                console.print(Text("  failing: " + ", ".join(failure.failing_tests)), soft_wrap=True)
            console.print(Text(_indent(failure.tail), style="dim"), soft_wrap=True)
    for finding in outcome.validated_passed:
        console.print(Text.assemble(("passed ", "bold green"), f"{finding.code} {finding.location()} (validate tier): applied"), soft_wrap=True)
    for finding in outcome.unexercised:
        console.print(Text.assemble(("not exercised ", "yellow"), f"{finding.code} {finding.location()} (validate tier): "
                                    "no process the command started imported this file; not applied"), soft_wrap=True)
    style = "bold red" if outcome.failed else "bold"
    console.print(Text(outcome.message, style=style), soft_wrap=True)


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.splitlines()) or "    | (no output)"
