"""One file through the pipeline: analyse its text, then settle what this run applies.

Two halves, so that analysis can be cached and policy cannot leak into it:

1. `analyse_text` runs the rules over one text and returns an `Analysis`:
   every finding with its tier, positions in that text, and no decision.
   It depends only on the text, the rules, the analysis settings and the
   file's formatter style (formatter_config.py), which shapes the edits.
2. `settle` takes the run's fix policy (tiers, --unsafe-fixes, validated
   fixes) and narrowing filters, plans the edits, applies them, and when a
   fix was held back because it overlapped another, analyses the rewritten
   text again (at most `MAX_PASSES` times). The rewritten file must pass the
   safety net (frontends.rewrite_error) before it is handed out.

A `FileRecord` holds every analysis and safety-net verdict of one file's
texts, by the SHA-256 of each text's bytes. It is what the result cache
keeps (cache.py), so a warm run with another policy analyses nothing again
unless its fixes produce a text never seen before.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Callable, Iterable, Protocol, Sequence

import pathspec

from optpatch.areas import self_test_lines
from optpatch.config import Settings
from optpatch.cpp_headers import HeaderOutcome, HeaderReport, HeaderSetup
from optpatch.frontends import FrontendError, parse, rewrite_error
from optpatch.judgements import finding_of
from optpatch.locations import located
from optpatch.model import CodeArea, Decided, Edit, FileError, Finding, Hold, KeepCategory, Language, Refusal, Verdict
from optpatch.line_diff import LineBreaks
from optpatch.offsets import Passes, changed_lines, locator, relocate_to_original, written_lines
from optpatch.planner import apply_edits, plan_edits
from optpatch.policy import FixPolicy
from optpatch.results import FileResult
from optpatch.rule import Rule
from optpatch.source import SourceFile
from optpatch.suppression import apply_suppressions, find_suppressions

if TYPE_CHECKING:
    import ast

    from optpatch.call_graph import FileCalls
    from optpatch.formatter_config import FileStyle
    from optpatch.frequency import FileFrequencies
    from optpatch.python_screen import CallIndex

MAX_PASSES = 4  # rounds of re-analysis when fixes overlapped; real code needs at most two


class FindingFilter(Protocol):
    """Narrowing (narrowing.py): says which findings are outside the run's scope, to be neither applied nor shown."""

    def out_of_scope(self, findings: Sequence[Finding]) -> list[str | None]:
        """For each finding, why it is outside the scope, or None."""


@dataclass(frozen=True)
class Analysis:
    """What the rules found in one text, before any fix policy: the unit of the result cache.

    Findings carry positions, line text and regions of the analysed text,
    and no decision: a run's `Decision` is made in `settle`, beside them.
    """

    findings: tuple[Finding, ...] = ()
    suppressed: int = 0
    unused_suppressions: tuple[int, ...] = ()
    skipped: str | None = None  # a generated file
    error: FileError | None = None
    # What the analysis read besides the file (analysis_inputs.py): C++ headers, build files. A cached analysis
    # stands only while each is unchanged.
    inputs: tuple = ()
    headers: HeaderReport | None = None  # C++/CUDA: the header mode, and whether the rules saw the headers

    @property
    def parsed_with_headers(self) -> HeaderReport | None:
        """The report of the parse with headers the findings come from (its flags, its errors); None when they
        come from the header-free parse."""
        if self.headers is not None and self.headers.outcome is HeaderOutcome.USED:
            return self.headers
        return None


@dataclass
class FileRecord:
    """One file's analyses and safety-net verdicts, by the SHA-256 of the text's bytes."""

    digest: str  # of the file's bytes as read
    analyses: dict[str, Analysis] = field(default_factory=dict)
    net: dict[str, str | None] = field(default_factory=dict)  # rewritten text -> why it would not parse, or None
    changed: bool = field(default=False, compare=False)
    style: "FileStyle | None" = None  # how the project's formatter lays the file out: every analysis of it uses this
    calls: "FileCalls | None" = None  # a Python file's part of the project's call graph (call_graph.py)

    @property
    def first(self) -> Analysis:
        return self.analyses[self.digest]

    @property
    def inputs(self) -> tuple:
        return tuple(dict.fromkeys(item for analysis in self.analyses.values() for item in analysis.inputs))

    def analysis_of(self, source: SourceFile, rules: Callable[[], list[type[Rule]]], headers: HeaderSetup | None = None) -> Analysis:
        key = text_digest(source.raw)
        if key not in self.analyses:
            self.analyses[key] = analyse_text(source, rules(), self.style, headers)
            self.changed = True
        return self.analyses[key]

    def net_verdict(self, original: SourceFile, rewritten: SourceFile, applied: Passes) -> str | None:
        key = text_digest(rewritten.raw)
        if key not in self.net:
            lines = written_lines(rewritten, applied)
            self.net[key] = rewrite_error(original, rewritten, lines, self.first.parsed_with_headers)
            self.changed = True
        return self.net[key]


def text_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- 1. analysis: the rules over one text -----------------------------------------------------


def analyse_text(source: SourceFile, rules: Iterable[type[Rule]], style: "FileStyle | None" = None,
                 headers: HeaderSetup | None = None, tree: "ast.Module | None" = None) -> Analysis:
    """Every finding the rules make in this text, with suppressions honoured; no fix policy.

    `style`: how the project's formatter lays the file out; the rules shape their edits by it.
    `headers`: where a C++/CUDA file's headers come from. The rules first see
    the header-free parse; where their findings there may change with the
    headers, they see the file parsed with them (cpp_second_look.py).
    Without it, C++ is analysed header-free only.
    `tree`: a Python text's `ast`, when the caller has parsed it (the engine
    does, for the call graph): the screens read it instead of parsing again.
    """
    triggered = [rule for rule in rules if rule.wants(source)]
    wanted, calls = _screened([rule for rule in triggered if rule.screen_text(source.text)], source, tree)
    if not wanted:
        unparsed = _unparsed_headers(source, headers) if triggered else None
        return Analysis(unused_suppressions=tuple(suppression_lines(source)), headers=unparsed)
    try:
        unit = parse(source, calls, _outline(wanted, calls, source), style, headers)
    except FrontendError as error:
        return Analysis(error=error.error)
    analysis = _checked(source, wanted, unit)
    if headers is None or source.language is not Language.CPP or analysis.error is not None:
        return analysis
    from optpatch.cpp_second_look import with_headers

    return with_headers(source, wanted, unit, analysis, headers, lambda better: _checked(source, wanted, better))


def _unparsed_headers(source: SourceFile, headers: HeaderSetup | None) -> HeaderReport | None:
    """A C++ file whose trigger words some rule found but whose text every screen rejected: its header report says
    that no parse ran (the report has a line for every file a rule looked at)."""
    if headers is None or source.language is not Language.CPP:
        return None
    from optpatch.cpp_second_look import unparsed

    return unparsed(source, headers)


def _checked(source: SourceFile, wanted: list[type[Rule]], unit) -> Analysis:
    """The rules' findings in one parsed unit, suppressions honoured, placed in the text."""
    findings: list[Finding] = []
    screen = getattr(unit, "screen", None)  # a Python module's `ast` index
    self_tests = self_test_lines(screen.tree) if screen is not None and source.area is CodeArea.LIBRARY else ()
    for rule in wanted:
        try:
            findings.extend(finding_of(rule, unit, judgement, self_tests) for judgement in rule().check(unit))
        except RecursionError:
            return Analysis(error=FileError(source.rel, f"{rule.code}: code nested too deeply to analyse"))
        except Exception as error:  # a rule bug must cost one file, not the run
            return Analysis(error=FileError(source.rel, f"internal error in {rule.code}: {type(error).__name__}: {error}"))
    suppressions = find_suppressions(source.text, source.language)
    findings, suppressed = apply_suppressions(findings, suppressions)
    findings = [located(finding, source) for finding in findings]
    unused = tuple(s.line for s in suppressions if not s.used)
    inputs = tuple(getattr(unit, "inputs", ()))
    return Analysis(tuple(sorted(findings, key=lambda f: f.sort_key)), suppressed, unused, inputs=inputs)


def suppression_lines(source: SourceFile) -> list[int]:
    """The lines of the file's suppression comments (a cheap look for the marker first)."""
    if "optpatch:" not in source.text and "noqa" not in source.text:
        return []
    return [suppression.line for suppression in find_suppressions(source.text, source.language)]


def rules_for(rel: str, rules: list[type[Rule]], settings: Settings) -> list[type[Rule]]:
    """The rules that run on this path: `per-file-ignores` removes some."""
    ignored: set[str] = set()
    for pattern, codes in settings.per_file_ignores:
        if _pattern(pattern).match_file(rel):
            ignored.update(code for code in codes)
    return [rule for rule in rules if not any(rule.code.startswith(code) for code in ignored)]


@cache
def _pattern(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _screened(rules: list[type[Rule]], source: SourceFile, tree: "ast.Module | None" = None,
              ) -> tuple[list[type[Rule]], "CallIndex | None"]:
    """Drop the rules whose `screen` rejects the file's `ast` (parsed once, only if some rule screens or needs).

    Also returns the `ast`'s call index, when Python's own parser took the
    file: it spares the Python frontend its own check for nesting CPython
    refuses, and gives the rules' `needs`.
    """
    if source.language is not Language.PYTHON or all(
        rule.screen.__func__ is Rule.screen.__func__ and rule.needs.__func__ is Rule.needs.__func__ for rule in rules
    ):
        return rules, None
    from optpatch.python_screen import CallIndex

    calls = CallIndex.of(source.text, tree)
    if calls is None:
        return rules, None  # `ast` refused the file: libcst reports the syntax error properly
    return [rule for rule in rules if rule.screen(calls)], calls


def _outline(rules: list[type[Rule]], calls: "CallIndex | None", source: SourceFile) -> str | None:
    """What libcst parses instead of the file: its outline, when every rule says what it needs (python_outline.py)."""
    if calls is None:
        return None
    needed: list[int] = []
    resolved: set[str] = set()
    for rule in rules:
        nodes = rule.needs(calls)
        if nodes is None:
            return None
        needed += (node.lineno for node in nodes)
        resolved |= rule.resolved_in_stubs(calls)
    from optpatch.python_outline import outline
    from optpatch.python_screen import bound_outside

    # A `global` or `:=` that binds a name a rule resolves in a stubbed function keeps its own function;
    # the outline keeps the others' functions only if code that stays reads their names.
    bindings = []
    for binding in calls.outer_bindings:
        names = bound_outside(binding)
        if names & resolved:
            needed.append(binding.lineno)
        else:
            bindings.append((binding.lineno, names))
    return outline(source.text, calls.tree, needed, bindings, calls.reads)


# -- 2. settling: what this run applies ---------------------------------------------------------


def settle(
    record: FileRecord,
    load: Callable[[], SourceFile],
    rules: Callable[[], list[type[Rule]]],
    policy: FixPolicy,
    filters: tuple[FindingFilter, ...] = (),
    rel: str | None = None,
    headers: HeaderSetup | None = None,
    frequencies: "FileFrequencies | None" = None,
) -> FileResult:
    """The file's findings with this run's decisions, and its rewritten bytes when a fix applies.

    `frequencies`: how often each of the file's functions runs in this
    project (frequency.py); it weighs each finding's impact before the
    filters see it (--min-impact is one).

    `load` gives the file's text; it is called only when a fix may apply.
    `rules` gives the rules, for a text the record holds no analysis of;
    `headers` where a C++ file's headers come from, for such a text.
    """
    first = record.first
    rel = rel if rel is not None else load().rel
    result = FileResult(rel, suppressed=first.suppressed, unused_suppressions=list(first.unused_suppressions),
                        headers=first.headers)
    if first.error is not None:
        result.error = first.error
        return result
    if first.skipped is not None:
        result.skipped = first.skipped
        return result
    result.decided, edits = _decided(first.findings, policy, filters, _unmoved, 0, frequencies,
                                     lambda: load().text)
    if not any(d.decision.accepted or d.decision.deferred for d in result.decided):
        return result
    source = load()
    current, applied, pass_decided, attempt = source, [], result.decided, 0
    while True:
        new_text = apply_edits(current.text, edits)
        if new_text == current.text:
            break
        applied.append(edits)
        current = _rewritten(current, new_text)
        attempt += 1
        if attempt == MAX_PASSES or not any(d.decision.deferred for d in pass_decided):
            break
        analysis = record.analysis_of(current, rules, headers)
        if analysis.error is not None:  # a rewrite that no longer parses is a bug: keep the last good text
            result.error = FileError(rel, f"internal error: pass {attempt + 1} did not parse: {analysis.error.reason}")
            break
        pass_decided, edits = _decided(analysis.findings, policy, filters, locator(source, current, applied), attempt,
                                       frequencies, lambda text=current.text: text)
        result.decided = _merge_later_pass(result.decided, pass_decided)
    if current.text != source.text:
        broken = record.net_verdict(source, current, applied)
        if broken:
            result.error = FileError(rel, f"internal error: the rewritten file would not parse ({broken}); left unchanged")
            return result
        result.old, result.new = source.raw, current.raw
        result.blocks = tuple(changed_lines(source.text, current.text, applied, LineBreaks.LF))
        if len(applied) > 1:
            result.decided = relocate_to_original(result.decided, source, current.text, applied)
    return result


def _unmoved(line: int, col: int) -> tuple[int, int]:
    return line, col


def _decided(findings: Sequence[Finding], policy: FixPolicy, filters: tuple[FindingFilter, ...], locate,
             attempt: int, frequencies: "FileFrequencies | None" = None,
             text: Callable[[], str] | None = None) -> tuple[list[Decided], list[Edit]]:
    """An analysis's findings placed in the original file and weighed (new values: the cached ones stay as they
    are), each with this run's decision; and the accepted edits. TEXT gives the analysed text, read only when a
    site kept for its spelling needs it."""
    placed = [_placed(finding, locate, attempt, frequencies) for finding in findings]
    decided, edits = plan_edits(placed, _out_of_scope(placed, filters), policy.refuse)
    if edits and text is not None and any(_unspelt(finding) for finding in findings):
        decided = _defer_beside_edits(decided, [finding.line for finding in findings], edits, text())
    return decided, edits


def _placed(finding: Finding, locate, attempt: int, frequencies: "FileFrequencies | None") -> Finding:
    line, col = locate(finding.line, finding.col)
    finding = replace(finding, line=line, col=col, analysis_pass=attempt)
    return frequencies.weigh(finding) if frequencies is not None else finding


def _out_of_scope(findings: list[Finding], filters: tuple[FindingFilter, ...]) -> list[str | None]:
    """Why each finding is outside the run's scope, or None: the first filter that leaves it out says why."""
    why: list[str | None] = [None] * len(findings)
    for narrowing in filters:
        why = [earlier or later for earlier, later in zip(why, narrowing.out_of_scope(findings))]
    return why


def _unspelt(finding: Finding) -> bool:
    return finding.verdict is Verdict.KEEP and finding.keep_category is KeepCategory.CANNOT_SPELL


def _defer_beside_edits(decided: list[Decided], analysed_lines: list[int], edits: list[Edit], text: str) -> list[Decided]:
    """Sites kept because their edit could not be laid out (past the line limit) on a line this pass's fixes
    rewrite are judged again on the rewritten text, as overlapping fixes are: those fixes may have made room, and
    a second run would find the site fixable (the patch must be idempotent). ANALYSED_LINES: each finding's line
    in the analysed text."""
    starts = list(itertools.accumulate((len(line) for line in text.splitlines(keepends=True)), initial=0))
    touched = set()
    for edit in edits:
        first = bisect.bisect_right(starts, edit.start)
        touched.update(range(first, bisect.bisect_right(starts, max(edit.start, edit.end - 1)) + 1))
    return [Decided(finding, replace(decision, refusal=Refusal(Hold.OVERLAP)))
            if _unspelt(finding) and line in touched else Decided(finding, decision)
            for (finding, decision), line in zip(decided, analysed_lines)]


def _merge_later_pass(first: list[Decided], later: list[Decided]) -> list[Decided]:
    """A later pass's verdict on a fix deferred for overlap replaces the deferral; its new fixes join."""
    deferred = {(f.code, f.line) for f, decision in first if decision.deferred}
    redone = [(f, decision) for f, decision in later if decision.accepted or (f.code, f.line) in deferred]
    replaced = {(f.code, f.line) for f, _ in redone} & deferred
    kept = [(f, decision) for f, decision in first if not ((f.code, f.line) in replaced and decision.deferred)]
    return sorted((Decided(f, decision) for f, decision in kept + redone), key=lambda d: d.finding.sort_key)


def _rewritten(source: SourceFile, text: str) -> SourceFile:
    return SourceFile(source.rel, source.path, source.encode(text), text, source.encoding, source.bom, source.language,
                      area=source.area)


# -- both halves, for one file ------------------------------------------------------------------


def analyse_file(
    source: SourceFile, rules: Iterable[type[Rule]], settings: Settings, policy: FixPolicy,
    filters: tuple[FindingFilter, ...] = (), record: FileRecord | None = None, style: "FileStyle | None" = None,
    headers: HeaderSetup | None = None,
) -> FileResult:
    """Every finding for one file under this policy, and its rewritten bytes when a fix applies."""
    selected = rules_for(source.rel, list(rules), settings)
    record = record or FileRecord(text_digest(source.raw), style=style)
    record.analysis_of(source, lambda: selected, headers)
    return settle(record, lambda: source, lambda: selected, policy, filters, source.rel, headers)
