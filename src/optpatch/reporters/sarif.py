"""SARIF 2.1.0 output, for code-scanning dashboards and editors that apply fixes.

One run; `tool.driver.rules` holds every rule with its documentation. Each
fix and advice finding is a result with its rule, location and message, the
optpatch fields (tier, verdict, context, impact and its basis, proof) in
`properties`, and, for fixes, `fixes[]` whose replacements reproduce the
patch: `deletedRegion` in lines and columns, `insertedContent` the new text.
With `-v` (`ReportOptions.verbose`), kept sites are results too, of kind `pass` and
level `none` (SARIF's "the rule was evaluated and found nothing to change"),
so that they carry their reason as in JSON without showing as alerts;
otherwise they are left out, as from the text report, and a code-scanning
upload holds only what asks for a change. Columns count Unicode code
points (`columnKind`), the unit optpatch's edits use. Paths are relative to
the `SRCROOT` base, the root of the repository holding the scanned folder
(its nearest folder with `.git`), so that code-scanning alerts land on the
right lines whichever folder was scanned.
"""

from __future__ import annotations

import json
from urllib.parse import quote

from optpatch import __version__
from optpatch.baseline import fingerprint
from optpatch.discovery import repository_of
from optpatch.model import Decided, Finding, Region, Verdict
from optpatch.reporters import ReportOptions
from optpatch.reporters.json_report import summary_of
from optpatch.reporters.status import Delivery, status_of
from optpatch.results import RunResult
from optpatch.rule import Rule, load_rules
from optpatch.rule_docs import rule_page

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
ROOT_BASE = "SRCROOT"
_LEVEL = {Verdict.FIX: "warning", Verdict.ADVICE: "note", Verdict.KEEP: "none"}


def render_sarif(result: RunResult, options: ReportOptions = ReportOptions()) -> str:
    rules = load_rules()
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    repository, inside = repository_of(result.root)
    prefix = inside + "/" if inside else ""  # an alert is placed by its path from the repository's top
    run = {
        "tool": {
            "driver": {
                "name": "optpatch",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {ROOT_BASE: {"uri": repository.as_uri() + "/"}},
        "columnKind": "unicodeCodePoints",
        "invocations": [invocation(result, prefix)],
        "results": [
            sarif_result(d, rule_index, options.delivery, prefix) for d in result.decided
            if options.verbose or d.finding.verdict is not Verdict.KEEP
        ],
        "properties": {"summary": summary_of(result, options.delivery)},
    }
    document = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(document, indent=2) + "\n"


def rule_descriptor(rule: type[Rule]) -> dict:
    sections = rule.documentation()
    page = rule_page(rule)
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it does") or sections.get("Summary") or rule.summary},
        "help": {"text": page, "markdown": page},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": list(rule.tags), "language": rule.language, "default_tier": rule.default_tier},
    }


def invocation(result: RunResult, prefix: str = "") -> dict:
    """Files that could not be analysed become error notifications: the run still succeeded."""
    notifications = []
    for error in result.errors:
        location = {"physicalLocation": {"artifactLocation": artifact(prefix + error.path)}}
        if error.line:
            location["physicalLocation"]["region"] = {"startLine": error.line}
        notifications.append({"level": "error", "message": {"text": error.reason}, "locations": [location]})
    return {"executionSuccessful": True, "toolExecutionNotifications": notifications}


def sarif_result(decided: Decided, rule_index: dict[str, int], delivery: Delivery, prefix: str = "") -> dict:
    finding, decision = decided
    entry = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.verdict],
        "message": {"text": message(decided, delivery)},
        "locations": [{"physicalLocation": {"artifactLocation": artifact(prefix + finding.path), "region": site_region(finding)}}],
        "partialFingerprints": {"optpatchLineHash/v1": fingerprint(finding)},
        "properties": {
            "tier": finding.fix.tier.value if finding.fix is not None else None,
            "verdict": finding.verdict.value,
            "written": status_of(decided, delivery).written,
            "accepted": decision.accepted,
            "refused_because": decision.refused_because or None,
            "context": finding.context.value,
            "impact": finding.impact.value,
            "impact_basis": finding.impact_basis,
            "size": finding.size.value if finding.size else None,
            "frequency": finding.frequency.frequency.value if finding.frequency else None,
            "frequency_evidence": finding.frequency.describe(finding.path) if finding.frequency else None,
            "proof": list(finding.proof),
            "replacement": finding.fix.replacement if finding.fix is not None and finding.fix.replacement else None,
        },
    }
    if finding.verdict is Verdict.KEEP:
        entry["kind"] = "pass"
    if finding.code in rule_index:
        entry["ruleIndex"] = rule_index[finding.code]
    if finding.fix is not None and finding.regions:
        entry["fixes"] = [fix(finding, prefix)]
    return entry


def message(decided: Decided, delivery: Delivery) -> str:
    finding, decision = decided
    if finding.fix is None:
        return finding.reason
    status = str(status_of(decided, delivery)) if decision.accepted else f"not applied: {decision.refused_because}"
    return f"{finding.name}: {finding.reason} (tier {finding.fix.tier.value}, {status})"


def site_region(finding: Finding) -> dict:
    """The finding's position, extended to the end of the edit that starts there, if any."""
    region = {"startLine": finding.line, "startColumn": finding.col}
    for edit in finding.regions:
        if (edit.start_line, edit.start_column) == (finding.line, finding.col) and edit.end_line == finding.line:
            region["endColumn"] = edit.end_column
    return region


def fix(finding: Finding, prefix: str = "") -> dict:
    return {
        "description": {"text": f"{finding.code} {finding.name}: {finding.fix.replacement or finding.reason}"},
        "artifactChanges": [
            {"artifactLocation": artifact(prefix + finding.path), "replacements": [replacement(r) for r in finding.regions]}
        ],
    }


def replacement(region: Region) -> dict:
    deleted = {
        "startLine": region.start_line,
        "startColumn": region.start_column,
        "endLine": region.end_line,
        "endColumn": region.end_column,
    }
    return {"deletedRegion": deleted, "insertedContent": {"text": region.inserted}}


def artifact(path: str) -> dict:
    return {"uri": quote(path.encode("utf-8", "surrogateescape")), "uriBaseId": ROOT_BASE}  # a non-UTF-8 name: its own bytes
