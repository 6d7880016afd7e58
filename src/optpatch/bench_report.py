"""The report of `optpatch bench`: text for a person, JSON for tools, and the exit status.

Exit status (docs/bench.md):
- 0: the rounds ran and the result is printed, whatever it says;
- 1: --require-speedup X and the patch's interval reaches below X;
- 2: CMD (or --build) fails on the original tree: the command, not the
  patch, is at fault, and nothing is measured;
- 4: CMD (or --build) passes on the original tree and fails on a patched
  one: the patch breaks the workload (as a failed --validate, exit 4).
"""

from __future__ import annotations

import statistics

from optpatch.bench import ORIGINAL, BenchReport, Comparison, Difference, Direction

EXIT_OK, EXIT_SLOWER_THAN_REQUIRED, EXIT_COMMAND_FAILS, EXIT_PATCH_BREAKS = 0, 1, 2, 4
SCHEMA = "optpatch-bench/1"


def exit_status(report: BenchReport, require_speedup: float | None) -> int:
    if report.failure is not None:
        return EXIT_COMMAND_FAILS if report.failure.tree.label == ORIGINAL else EXIT_PATCH_BREAKS
    patched = report.comparisons[0] if report.comparisons else None
    if require_speedup is not None and patched is not None and patched.low < require_speedup:
        return EXIT_SLOWER_THAN_REQUIRED
    return EXIT_OK


def speedup_text(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def _value_text(value: float, report: BenchReport) -> str:
    if report.metric.pattern is not None:
        return f"{value:.4g}"
    return f"{value:.3g} s" if value >= 1 else f"{value * 1e3:.3g} ms"


def headline(comparison: Comparison, subject: str = "the patch") -> str:
    """One sentence: what the interval says about SUBJECT ("the patch", "OPT101 alone")."""
    interval = f"95% interval {speedup_text(comparison.low)}-{speedup_text(comparison.high)}"
    subject = subject[:1].upper() + subject[1:]
    if comparison.difference is Difference.FASTER:
        return f"{subject} is {speedup_text(comparison.speedup)} faster ({interval}, which excludes 1.0)."
    if comparison.difference is Difference.SLOWER:
        return f"{subject} is slower: {speedup_text(comparison.speedup)} ({interval}, which excludes 1.0)."
    return (f"{subject}: no significant difference, {speedup_text(comparison.speedup)} ({interval}, which contains "
            "1.0): on this workload its effect, if any, is within the run's noise.")


def render_text(report: BenchReport, require_speedup: float | None = None) -> str:
    lines = [f"optpatch bench: `{report.command}` in {report.repo}"]
    lines += [f"  {variant.label}: {variant.fixes} fix(es) in {len(variant.changes)} file(s)" for variant in report.variants]
    if report.build_command:
        lines.append(f"  built each tree first with `{report.build_command}`")
    if report.identical:
        lines.append("  the patch is empty: both trees are the same code, so this run measures the noise alone (an A/A run)")
    lines.append(f"metric: {report.metric.describe()}")
    if report.failure is not None:
        lines += _failure_lines(report)
        return "\n".join(lines) + "\n"
    schedule = report.schedule
    rounds = len(report.values[ORIGINAL])
    lines.append(f"{rounds} rounds in alternating order (ABBA) after {schedule.warmup} warm-up round(s), "
                 f"{report.seconds:.1f} s in all")
    lines.append("")
    lines += _table(report)
    lines.append("")
    lines.append(headline(report.comparisons[0]))
    for comparison in report.comparisons[1:]:
        lines.append("  " + headline(comparison, f"{comparison.label} alone"))
    if require_speedup is not None:
        met = report.comparisons[0].low >= require_speedup
        lines.append(f"--require-speedup {require_speedup:g}: {'met' if met else 'NOT met'} "
                     f"(the interval's lower bound is {speedup_text(report.comparisons[0].low)})")
    return "\n".join(lines) + "\n"


def _table(report: BenchReport) -> list[str]:
    rows = [("tree", "median", "speedup", "95% interval", "difference")]
    rows.append((ORIGINAL, _value_text(statistics.median(report.values[ORIGINAL]), report), "", "", ""))
    for comparison in report.comparisons:
        rows.append((comparison.label, _value_text(comparison.patched_median, report), speedup_text(comparison.speedup),
                     f"{speedup_text(comparison.low)} - {speedup_text(comparison.high)}", comparison.difference.value))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    return ["  ".join(cell.ljust(width) if column in (0, 4) else cell.rjust(width)
                      for column, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in rows]


def _failure_lines(report: BenchReport) -> list[str]:
    failure = report.failure
    if failure.tree.label == ORIGINAL:
        verdict = "the command fails on the original tree, before any patch: fix the command first. No result."
    else:
        verdict = (f"the command passes on the original tree and fails on the {failure.tree.label} tree: the patch "
                   "breaks this workload (`--validate CMD` backs out the fixes that break a command). No result.")
    tail = failure.run.tail.splitlines() or ["(no output)"]
    return [f"error: {failure.why}", *(f"    | {line}" for line in tail), verdict]


def payload(report: BenchReport, require_speedup: float | None = None) -> dict:
    """The JSON document of `optpatch bench --json` (docs/bench.md describes its fields)."""
    metric = report.metric
    document = {
        "schema": SCHEMA,
        "command": report.command,
        "repo": report.repo,
        "build_command": report.build_command,
        "metric": {
            "kind": "wall time" if metric.pattern is None else "regex",
            "pattern": None if metric.pattern is None else metric.pattern.pattern,
            "unit": "s" if metric.pattern is None else None,
            "higher_is_better": metric.direction is Direction.HIGHER_IS_BETTER,
        },
        "warmup_rounds": report.schedule.warmup,
        "confidence_level": 0.95,
        "variants": [{"label": v.label, "fixes": v.fixes, "files": [c.rel for c in v.changes]} for v in report.variants],
        "identical_trees": report.identical,
        "seconds": round(report.seconds, 3),
        "values": report.values,
        "comparisons": [_comparison_entry(c) for c in report.comparisons or ()],
        "failure": None,
        "require_speedup": require_speedup,
        "exit_code": exit_status(report, require_speedup),
    }
    if report.failure is not None:
        failure = report.failure
        document["failure"] = {"tree": failure.tree.label, "message": failure.why, "returncode": failure.run.returncode,
                               "timed_out": failure.run.timed_out, "output_tail": failure.run.tail}
    return document


def _comparison_entry(comparison: Comparison) -> dict:
    return {
        "label": comparison.label, "rounds": comparison.rounds,
        "original_median": comparison.original_median, "patched_median": comparison.patched_median,
        "speedup": comparison.speedup, "low": comparison.low, "high": comparison.high,
        "excludes_one": comparison.excludes_one, "difference": comparison.difference.value,
    }
