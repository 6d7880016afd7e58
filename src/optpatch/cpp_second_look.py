"""The second look at a C++/CUDA file: with its headers, where the header-free parse left a question.

Every C++/CUDA file a rule wants is first parsed without headers (cheap:
milliseconds). A rule then says whether its findings there could change
with the project's headers (`Rule.needs_headers`): a variable-length array
whose bound may be a constant from a header, a declaration the parse
dropped, a `from_blob(...).to()` whose types did not resolve. Only such a
file is parsed again with its headers (cpp_headers.py says how, cpp_pch.py
keeps the heavy part precompiled), in a forked child with a time limit, and
the rules' findings there replace the header-free ones. A parse with
headers that fails, times out or cannot find an #include leaves the
header-free findings, and the file's `HeaderReport` says why: unknown is
never evidence.

A parse whose precompiled header is not built yet costs 5-10 s of CPU for
torch's headers: more than the header-free scan of most trees (DeepSpeed:
13 s for 1,351 files; eight of its files asked, for five builds and one
that failed: 46 s). Where no
fix rests on it, the parse is put off: the file's header-free findings
(kept sites, advice, or none) stand for this run, which is sound, since a
parse with headers only turns a fix into a keep, or a keep, advice or an
unseen site into something else. The next run over the whole tree that
wants the precompiled header builds it (`cpp_pch.put_off`); a run narrowed
to some paths, as pre-commit's, puts it off again. Such an analysis is
never reused from the result cache. A header-free fix is never applied
unless the headers confirm it: that parse always runs.

A rewrite made from a parse with headers is checked the same way: the
original and the rewritten text are parsed with the same flags (and the
same precompiled header), and the rewrite must add no error.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TypeVar

from optpatch.analysis_inputs import FileInput
from optpatch.child_process import ChildFailed, TimeLimitExceeded, run_in_child
from optpatch.cpp_frontend import (
    CppUnit, HeaderParseError, MissingHeader, file_preamble, first_missing_include, include_sources,
    precompiled_header_readiness, put_off_precompiled_header,
)
from optpatch.cpp_pch import Readiness
from optpatch.formatter_config import CppStyle
from optpatch.cpp_headers import HeaderFlags, HeaderOutcome, HeaderReport, HeaderSetup
from optpatch.model import KeepCategory, Verdict
from optpatch.source import SourceFile

if TYPE_CHECKING:
    from optpatch.rule import Rule

# passes.Analysis, which this module must not import (passes imports it): replaced field by field, never built here.
Analysis = TypeVar("Analysis")

# A parse with torch's headers takes 0.1-0.4 s once its precompiled header exists, 5-10 s to build that,
# and 12-40 s without one (on a loaded 2-core machine): far below this, unless something is wrong.
TIME_LIMIT_S = 300.0
PUT_OFF = ("its precompiled header is not built yet and no fix rests on this parse: the header-free verdicts stand "
           "(kept, advice, or none), and the next run over the whole tree builds it")


def with_headers(
    source: SourceFile, rules: list[type["Rule"]], unit: CppUnit, analysis: Analysis, setup: HeaderSetup,
    check: Callable[[CppUnit], Analysis],
) -> Analysis:
    """`analysis` (of the header-free `unit`), or the rules' analysis of the file parsed with its headers."""
    path = Path(source.path)
    flags = setup.flags_for(path)
    if isinstance(flags, HeaderReport):  # --no-headers, or no flags to be found
        inputs = analysis.inputs if flags.outcome is HeaderOutcome.DISABLED else analysis.inputs + (setup.flags_input(path),)
        return replace(analysis, headers=flags, inputs=inputs)
    if not any(rule.needs_headers(unit, [f for f in analysis.findings if f.code == rule.code]) for rule in rules):
        return replace(analysis, headers=HeaderReport(flags.mode, HeaderOutcome.NOT_NEEDED, _not_needed(analysis)))
    flags_input = setup.flags_input(path)
    missing = first_missing_include(source, flags)
    sources = include_sources(source, flags)
    if missing is not None:  # milliseconds, before any header is parsed or a child forked
        report = HeaderReport(flags.mode, HeaderOutcome.FAILED, _why(unit, str(missing)), missing=missing.header,
                              sources=sources)
        return _fell_back(analysis, report, flags_input)
    if not _fix_rests_on(analysis, setup) and _put_off(precompiled_header_readiness(source, flags, setup.run), setup):
        marker = put_off_precompiled_header(source, flags, setup.run)
        report = HeaderReport(flags.mode, HeaderOutcome.PUT_OFF, _why(unit, PUT_OFF), sources=sources)
        # Never taken from the result cache (the marker now exists: its hash is not ""): the next run decides again.
        return replace(analysis, headers=report, inputs=analysis.inputs + (flags_input, FileInput(marker, "")))
    try:
        looked = run_in_child(lambda: _look(source, flags, setup, check, unit.style), TIME_LIMIT_S)
    except TimeLimitExceeded:
        report = HeaderReport(flags.mode, HeaderOutcome.TIMED_OUT, _why(unit, f"no result within {TIME_LIMIT_S:.0f} s"))
        return _fell_back(analysis, report, flags_input)
    except ChildFailed as failure:
        return _fell_back(analysis, HeaderReport(flags.mode, HeaderOutcome.FAILED, _why(unit, str(failure))), flags_input)
    if isinstance(looked, HeaderReport):
        return _fell_back(analysis, replace(looked, detail=_why(unit, looked.detail), sources=sources), flags_input)
    return replace(looked, inputs=looked.inputs + (flags_input,),
                   headers=replace(looked.headers, detail=_why(unit, looked.headers.detail), sources=sources))


def _put_off(readiness: Readiness, setup: HeaderSetup) -> bool:
    """Whether a parse no fix rests on waits for its precompiled header: one not built, unless an earlier run put
    it off and this one is a run over the whole tree (a narrowed run, as pre-commit's, never builds it)."""
    return readiness is Readiness.UNBUILT or readiness is Readiness.WANTED and not setup.builds_put_off


def _fix_rests_on(analysis: Analysis, setup: HeaderSetup) -> bool:
    """Whether a header-free fix this run may apply would stand without the parse with headers, which may keep it
    (`CHECK(buf)` may expand to `sizeof(buf)`; `from_blob` may be another function): then the parse is never put
    off. A fix of a tier the run does not apply (a validate-tier proposal, outside a validation run) is only
    proposed: its parse waits like a kept site's, and the next run that applies it parses first (pytorch3d: four
    validate-tier proposals cost 4.6 s of a 4.9 s first run in failed parses)."""
    return any(finding.verdict is Verdict.FIX and finding.fix.tier in setup.applied_tiers
               for finding in analysis.findings)


def _why(unit: CppUnit, detail: str) -> str:
    """The report's detail: why a parse with headers started (the first question the rules asked), then `detail`."""
    asked = unit.header_questions[0] if unit.header_questions else "a rule asked"
    more = f" (+{len(unit.header_questions) - 1} more)" if len(unit.header_questions) > 1 else ""
    return f"wanted for {asked}{more}" + (f"; {detail}" if detail else "")


def unparsed(source: SourceFile, setup: HeaderSetup) -> HeaderReport:
    """The report of a file no rule's screen let through (`Rule.screen_text`): no parse ran, with or without headers."""
    flags = setup.flags_for(Path(source.path))
    if isinstance(flags, HeaderReport):  # --no-headers, or no flags to be found
        return flags
    return HeaderReport(flags.mode, HeaderOutcome.NOT_NEEDED, NOT_PARSED)


NOT_PARSED = "no candidate in its text: not parsed"


def _not_needed(analysis: Analysis) -> str:
    """Why no parse with headers started: no finding, or only findings no header can change."""
    if not analysis.findings:
        return "no host-code candidate"
    kept = Counter(str(f.keep_category or f.verdict.value) for f in analysis.findings)
    return "no verdict a header can change: " + ", ".join(f"{n} {what}" for what, n in sorted(kept.items()))


def _fell_back(analysis: Analysis, report: HeaderReport, flags_input) -> Analysis:
    """The header-free analysis with the report of why the headers were not used; a kept site the headers might
    have resolved says which header was missing."""
    findings = analysis.findings
    if report.missing:
        note = f" (its headers were not read: '{report.missing}' not found; pass -I or a compile_commands.json)"
        findings = tuple(replace(f, reason=f.reason + note) if f.keep_category is KeepCategory.UNRESOLVED else f
                         for f in findings)
    return replace(analysis, findings=findings, headers=report, inputs=analysis.inputs + (flags_input,))


def _look(source: SourceFile, flags: HeaderFlags, setup: HeaderSetup, check, style: CppStyle) -> "Analysis | HeaderReport":
    """In the child: parse with headers and run the rules (their edits in the file's `style`); a report when the
    parse cannot stand."""
    try:
        unit = CppUnit(source, flags, setup, style=style)
    except MissingHeader as error:
        return HeaderReport(flags.mode, HeaderOutcome.FAILED, str(error), missing=error.header)
    except HeaderParseError as error:
        return HeaderReport(flags.mode, HeaderOutcome.FAILED, str(error))
    analysis = check(unit)
    if analysis.error is not None:
        return HeaderReport(flags.mode, HeaderOutcome.FAILED, analysis.error.reason)
    errors = tuple(sorted(unit.error_signature().items()))
    return replace(analysis, headers=HeaderReport(flags.mode, HeaderOutcome.USED, flags.origin, flags, errors))


def rewrite_error(original: SourceFile, rewritten: SourceFile, report: HeaderReport) -> str | None:
    """Why the rewrite would not compile with the file's headers (errors it adds to the original's, which the
    analysis recorded), or None."""

    def compare() -> list[str]:
        preamble = file_preamble(original.text, str(Path(original.path).absolute()), report.flags)
        after = CppUnit(rewritten, report.flags, preamble=preamble)
        return sorted(after.error_signature() - Counter(dict(report.errors)))

    try:
        added = run_in_child(compare, TIME_LIMIT_S)
    except TimeLimitExceeded:
        return f"it could not be checked with its headers within {TIME_LIMIT_S:.0f} s"
    except ChildFailed as failure:
        return f"it could not be checked with its headers: {failure}"
    return "new errors: " + "; ".join(added[:3]) if added else None
