"""JSON output: a documented, versioned schema (docs/json-schema.md).

`schema_version` changes only when a field changes meaning or disappears;
new fields may be added within a version. Version 2: `applied` means that
this command wrote the fix (into the patch, or into the file), and
`fixable` that the run's policy accepts it; in version 1 `applied` meant the
latter, so `check` said `"applied": true` of fixes it never wrote.
Version 3: `impact` is the rule's size class weighed by how often the site
runs (`frequency`, from the project's call graph or a profile); the rule's
own class is `size`. Version 4: the report names the run's decision as the
code does (`Decision`, reporters/status.py): `accepted` (was `fixable`),
`written` (was `applied`), `refused_because` (was `not_applied_because`);
in the summary `accepted`, `written` and `refused` (were `fixable`,
`fixes_applied` and `fixes_not_applied`).
"""

from __future__ import annotations

import json

from optpatch import __version__
from optpatch.model import Decided, FileError, FrequencyEvidence, Impact, Verdict
from optpatch.reporters import ReportOptions
from optpatch.reporters.status import NOTHING_WRITTEN, Delivery, Status, held_by_area, status_of
from optpatch.results import RunResult

SCHEMA_VERSION = 4


def finding_to_dict(decided: Decided, delivery: Delivery = NOTHING_WRITTEN) -> dict:
    finding, decision = decided
    fix = finding.fix
    return {
        "code": finding.code,
        "name": finding.name,
        "path": finding.path,
        "line": finding.line,
        "column": finding.col,
        "verdict": finding.verdict.value,
        "tier": fix.tier.value if fix is not None else None,
        "written": status_of(decided, delivery).written,
        "accepted": decision.accepted,
        "refused_because": decision.refused_because or None,
        "held": decision.held.value if decision.held is not None else None,
        "keep_category": finding.keep_category.value if finding.keep_category else None,
        "area": finding.area.value,
        "reason": finding.reason,
        "proof": list(finding.proof),
        "context": finding.context.value,
        "impact": finding.impact.value,
        "impact_basis": finding.impact_basis,
        "size": finding.size.value if finding.size else None,
        "frequency": frequency_to_dict(finding.frequency) if finding.frequency else None,
        "replacement": fix.replacement if fix is not None and fix.replacement else None,
        "edits": [{"start": e.start, "end": e.end, "text": e.text} for e in (fix.edits if fix is not None else ())],
        "regions": [
            {
                "start_line": r.start_line,
                "start_column": r.start_column,
                "end_line": r.end_line,
                "end_column": r.end_column,
                "text": r.inserted,
            }
            for r in finding.regions
        ],
    }


def frequency_to_dict(evidence: FrequencyEvidence) -> dict:
    measured = evidence.measured
    return {
        "frequency": evidence.frequency.value,
        "source": evidence.source.value,
        "path": [{"function": step.function, "path": step.path, "line": step.line} for step in evidence.path],
        "static": evidence.static.value if evidence.static else None,
        "measured": None if measured is None else {
            "calls": measured.calls, "microseconds": round(measured.microseconds, 3), "ops": list(measured.ops),
            "profile": measured.profile,
        },
    }


def error_to_dict(error: FileError) -> dict:
    return {"path": error.path, "line": error.line, "reason": error.reason}


def summary_of(result: RunResult, delivery: Delivery = NOTHING_WRITTEN) -> dict:
    decided = result.decided
    findings = [finding for finding, _ in decided]
    statuses = [status_of(d, delivery) for d in decided]
    return {
        "files_analysed": result.analysed,
        "files_failed": len(result.errors),
        "files_changed": len(result.changes),
        "written": sum(status.written for status in statuses),
        "accepted": sum(decision.accepted for _, decision in decided),
        "refused": statuses.count(Status.PROPOSED),
        "held_by_area": {area.value: count for area, count in sorted(held_by_area(decided).items())},
        "kept": sum(f.verdict is Verdict.KEEP for f in findings),
        "advice": sum(f.verdict is Verdict.ADVICE for f in findings),
        "suppressed": result.suppressed,
        "fixes_by_impact": {level.value: sum(f.impact is level for f in findings if f.verdict is Verdict.FIX)
                            for level in (Impact.HIGH, Impact.MEDIUM, Impact.LOW, Impact.NONE)},
        "seconds": round(result.seconds, 3),
    }


def render_json(result: RunResult | None, options: ReportOptions = ReportOptions()) -> str:
    """The JSON report; with no result (--validate's baseline failed), a document holding the validation alone."""
    if result is None:
        return json.dumps({"schema_version": SCHEMA_VERSION, "validation": options.validation.to_dict()}, indent=2) + "\n"
    return json.dumps(report_document(result, options), indent=2, sort_keys=False) + "\n"


def report_document(result: RunResult, options: ReportOptions = ReportOptions()) -> dict:
    """The report as a JSON object; with --validate, its `validation` object last."""
    document = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "optpatch", "version": __version__},
        "root": str(result.root),
        "patch": options.patch_path,
        "summary": summary_of(result, options.delivery),
        "findings": [finding_to_dict(d, options.delivery) for d in result.decided],
        "errors": [error_to_dict(e) for e in result.errors],
        "skipped": [{"path": p, "reason": r} for p, r in result.skipped],
        "unused_suppressions": [{"path": path, "line": line} for path, line in result.unused_suppressions],
        "cpp_headers": [
            {"path": path, "mode": report.mode.value, "outcome": report.outcome.value, "detail": report.detail,
             "missing": report.missing or None}
            for path, report in result.header_reports
        ],
    }
    if options.validation is not None:
        document["validation"] = options.validation.to_dict()
    return document
