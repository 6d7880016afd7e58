"""The pipeline: discover -> read -> parse -> run rules -> plan edits -> results.

`analyse_file` is a pure function of (file bytes, rules, settings), which is
what makes the run parallel, cacheable and deterministic: results are merged
in path order whatever the number of workers.

Cost, cheapest first: a file whose bytes are in the result cache is not
read further (cache.py); a file that holds none of a rule's trigger words
is done without importing the rules (rule_facts.py); a rule's `screen` may
reject a Python file from its `ast` before libcst parses it; libcst then
parses only the functions the rules need, the others stubbed
(python_outline.py); what is left is indexed and checked, in a process
pool when there is enough of it.
"""

from __future__ import annotations

import difflib
import gc
import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

import pathspec

from optpatch.config import TIER_ORDER, Settings
from optpatch.discovery import discover, is_generated
from optpatch.locations import Region, locate_findings, set_regions
from optpatch.model import Edit, FileError, Finding, Tier
from optpatch.planner import apply_edits, plan_edits
from optpatch.rule import Rule, builtin_rules_dir, load_rules, select_rules
from optpatch.rule_facts import RuleFacts, rule_facts
from optpatch.scope import Screen, screened_out
from optpatch.source import SourceFile, read_source
from optpatch.suppression import apply_suppressions, find_suppressions

if TYPE_CHECKING:
    from optpatch.python_screen import CallIndex

MAX_PASSES = 4  # rounds of re-analysis when fixes overlapped; real code needs at most two
PARALLEL_THRESHOLD = 16  # fewer candidate files than this are not worth a process pool


@dataclass(frozen=True)
class FixPolicy:
    """Which tiers this run applies. `validated` holds fix ids a validation run accepted."""

    unsafe_fixes: bool = False
    validated: frozenset[str] = frozenset()
    tiers: tuple[tuple[str, str], ...] = ()
    screens: tuple[Screen, ...] = ()  # --changed-lines, --baseline: what they screen out is never applied

    def refuse(self, finding: Finding) -> str | None:
        if why := screened_out(finding):
            return why
        tier = effective_tier(finding, self.tiers)
        if tier is Tier.SAFE:
            return None
        if tier is Tier.UNSAFE:
            return None if self.unsafe_fixes else "unsafe tier: applied only with --unsafe-fixes"
        if fix_id(finding) in self.validated:
            return None
        return "validate tier: applied only after a passing --validate run"


def effective_tier(finding: Finding, overrides: tuple[tuple[str, str], ...]) -> Tier:
    """The rule's tier, made stricter (never looser) by the `tiers` setting."""
    tier = finding.tier or Tier.SAFE
    for prefix, wanted in overrides:
        if finding.code.startswith(prefix) and TIER_ORDER.index(wanted) > TIER_ORDER.index(tier.value):
            tier = Tier(wanted)
    return tier


def fix_id(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.col}:{finding.code}"


@dataclass
class FileResult:
    rel: str
    findings: list[Finding] = field(default_factory=list)
    error: FileError | None = None
    skipped: str | None = None
    old: bytes | None = None  # set only when the file changes
    new: bytes | None = None
    suppressed: int = 0
    unused_suppressions: list[int] = field(default_factory=list)
    digest: str | None = None  # SHA-256 of the bytes analysed: the result cache's key
    # Other files the analysis read (C++ headers), as (absolute path, SHA-256): the cache checks them too.
    inputs: tuple[tuple[str, str], ...] = ()


@dataclass
class RunResult:
    root: Path
    files: list[FileResult]
    discovery_errors: list[FileError]
    skipped: list[tuple[str, str]]
    seconds: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        return sorted((f for r in self.files for f in r.findings), key=lambda f: f.sort_key)

    @property
    def errors(self) -> list[FileError]:
        return sorted(self.discovery_errors + [r.error for r in self.files if r.error], key=lambda e: e.path)

    @property
    def changes(self) -> list[tuple[str, bytes, bytes]]:
        return [(r.rel, r.old, r.new) for r in self.files if r.new is not None and r.old != r.new]

    @property
    def analysed(self) -> int:
        return sum(1 for r in self.files if not r.error and not r.skipped)

    @property
    def suppressed(self) -> int:
        return sum(r.suppressed for r in self.files)

    @property
    def unused_suppressions(self) -> list[tuple[str, int]]:
        """(path, line) of every `optpatch: ignore` comment that silenced nothing, in path order."""
        return [(r.rel, line) for r in self.files for line in r.unused_suppressions]


def run(
    root: Path,
    settings: Settings,
    policy: FixPolicy,
    paths: list[Path] | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    use_cache: bool = True,
) -> RunResult:
    started = time.perf_counter()
    rules = select_rules(rule_facts(), settings.select, settings.ignore)
    found = discover(root, settings.exclude, paths, settings.force_exclude)
    jobs = max(1, jobs or os.cpu_count() or 1)
    task = _FileTask(codes=tuple(rule.code for rule in rules), settings=settings, policy=policy)
    results: list[FileResult] = []
    todo = found.files
    store = _open_cache(root, rules, settings, policy) if use_cache else None
    if store is not None:
        results, todo = _cached(store, found.files, settings.max_file_size)
    done = len(results)
    with _fewer_collections():
        for result in _map(task, todo, jobs, _offset(progress, done, len(found.files))):
            results.append(result)
            if store is not None and result.digest is not None:
                store.put(result.rel, result.digest, result)
    if store is not None:
        store.save()
    results.sort(key=lambda r: r.rel)
    return RunResult(root.resolve(), results, found.errors, found.skipped, time.perf_counter() - started)


@contextmanager
def _fewer_collections():
    """Run the garbage collector less often while files are analysed (workers inherit it).

    A parse allocates hundreds of thousands of objects that all stay alive
    until the file is done, and are then freed by reference counting (the
    frontend makes no cycles); with the default threshold the collector
    keeps re-scanning them, which cost ~13% of a scan's CPU time.
    """
    threshold = gc.get_threshold()
    gc.set_threshold(50_000, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def _open_cache(root: Path, rules: list[RuleFacts], settings: Settings, policy: FixPolicy):
    from optpatch.cache import ResultCache, cacheable, code_fingerprint, pack_key

    if not cacheable(policy):
        return None
    code = code_fingerprint(Path(__file__).parent, builtin_rules_dir())
    return ResultCache.open(pack_key(root.resolve(), rules, settings, policy, code))


def _cached(store, files: list[tuple[Path, str]], max_bytes: int) -> tuple[list[FileResult], list[tuple[Path, str]]]:
    """Split the files into those whose results the cache holds and those to analyse."""
    from optpatch.cache import digest

    hits, misses = [], []
    for path, rel in files:
        result = None
        try:
            status = os.stat(path)
            if stat.S_ISREG(status.st_mode) and status.st_size <= max_bytes:  # a FIFO would block: analysis reports it
                result = store.get(rel, digest(path.read_bytes()))
        except OSError:
            pass  # the analysis reports it
        if result is None:
            misses.append((path, rel))
        else:
            hits.append(result)
    return hits, misses


def _offset(progress, done: int, total: int):
    if progress is None:
        return None
    if done:
        progress(done, total)
    return lambda index, _: progress(done + index, total)


def _map(task, files, jobs, progress) -> Iterator[FileResult]:
    total = len(files)
    if jobs == 1 or total < PARALLEL_THRESHOLD:
        for index, item in enumerate(files, start=1):
            yield task(item)
            if progress:
                progress(index, total)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    load_rules()  # imported once here, inherited by every forked worker
    chunk = max(1, min(32, total // (jobs * 8)))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        for index, result in enumerate(pool.map(task, files, chunksize=chunk), start=1):
            yield result
            if progress:
                progress(index, total)


@dataclass(frozen=True)
class _FileTask:
    """A picklable closure over what every worker needs (rules travel by code)."""

    codes: tuple[str, ...]
    settings: Settings
    policy: FixPolicy

    @property
    def facts(self) -> list[RuleFacts]:
        return [facts for facts in rule_facts() if facts.code in self.codes]

    @property
    def rules(self) -> list[type[Rule]]:
        return [rule for rule in load_rules() if rule.code in self.codes]

    def __call__(self, item: tuple[Path, str]) -> FileResult:
        path, rel = item
        source = read_source(path, rel, self.settings.max_file_size)
        if isinstance(source, FileError):
            return FileResult(rel, error=source)
        if is_generated(source.text):
            return FileResult(rel, skipped="generated file", digest=source.digest)
        if not any(facts.wants(source) for facts in self.facts):
            # no rule can have a site here: no import, no parse, and any suppression in it silences nothing
            return FileResult(rel, digest=source.digest, unused_suppressions=_suppression_lines(source))
        result = analyse_file(source, self.rules, self.settings, self.policy)
        result.digest = source.digest
        return result


def analyse_file(source: SourceFile, rules: Iterable[type[Rule]], settings: Settings, policy: FixPolicy) -> FileResult:
    """Every finding for one file, and its rewritten bytes when a fix applies."""
    rules = [r for r in rules if r.code not in _ignored_codes(source.rel, settings)]
    result = FileResult(source.rel)
    current = source
    applied: list[list[Edit]] = []  # each pass's edits, so later findings report original positions
    for attempt in range(MAX_PASSES):
        pass_result = _one_pass(current, rules, policy, _locator(source, current, applied))
        if isinstance(pass_result, FileError):
            if attempt == 0:
                result.error = pass_result
            else:  # a rewrite that no longer parses is a bug: keep the last good text
                result.error = FileError(source.rel, f"internal error: pass {attempt + 1} did not parse: {pass_result.reason}")
            break
        findings, suppressed, unused, edits = pass_result
        for finding in findings:
            finding.extra["pass"] = attempt
        if attempt == 0:
            result.findings, result.suppressed, result.unused_suppressions = findings, suppressed, unused
        else:
            result.findings = _merge_later_pass(result.findings, findings)
        new_text = apply_edits(current.text, edits)
        if new_text == current.text:
            break
        applied.append(edits)
        current = _rewritten(current, new_text)
        if not any(f.not_applied_because.startswith("overlaps") for f in findings):
            break
    if current.text != source.text:
        reparsed = _reparse_error(source, current, applied)
        if reparsed:  # a safety net: a rule bug must never hand out a file that no longer parses
            result.error = FileError(source.rel, f"internal error: the rewritten file would not parse ({reparsed}); left unchanged")
            return result
        result.old, result.new = source.raw, current.encode(current.text)
        if len(applied) > 1:
            relocate_to_original(result.findings, source, current.text, applied)
    return result


def _reparse_error(original: SourceFile, rewritten: SourceFile, applied: list[list[Edit]]) -> str | None:
    """Why the rewritten file would not parse, or None.

    Python: CPython takes all of it and libcst the definitions the edits
    touched (python_frontend.rewrite_error). C++: clang always builds a
    tree, so the rewrite must add no error to the original's.
    """
    if rewritten.language == "python":
        from optpatch.python_frontend import rewrite_error

        return rewrite_error(original, rewritten, _written_lines(rewritten, applied))
    try:
        unit = make_unit(rewritten)
    except FrontendError as error:
        return error.error.reason
    from optpatch.cpp_frontend import added_errors

    added = added_errors(make_unit(original), unit)
    return "new errors: " + "; ".join(added[:3]) if added else None


def _written_lines(final: SourceFile, applied: list[list[Edit]]) -> set[int]:
    """The lines of the final text that the edits of every pass wrote, carried through the passes after it.

    An edit that only deletes marks the lines on both sides of where its text was.
    """
    lines: set[int] = set()
    for step, edits in enumerate(applied):
        delta = 0
        for edit in sorted(edits):
            start = edit.start + delta
            end = start + len(edit.text)
            delta += len(edit.text) - (edit.end - edit.start)
            for later in applied[step + 1 :]:
                start, end = _offset_after(start, later), _offset_after(end, later)
            first, last = final.position(start)[0], final.position(end)[0]
            lines.update(range(first - 1 if start == end else first, last + 1))
    return lines


def _offset_after(offset: int, edits: list[Edit]) -> int:
    """Where an offset of the text before `edits` lies after them; inside replaced text, the replacement's start."""
    delta = 0
    for edit in sorted(edits):
        if offset < edit.start:
            break
        if offset < edit.end:
            return edit.start + delta
        delta += len(edit.text) - (edit.end - edit.start)
    return offset + delta


def _locator(original: SourceFile, current: SourceFile, applied: list[list[Edit]]):
    """Maps (line, col) in the current text to (line, col) in the original, through the edits applied."""

    def locate(line: int, col: int) -> tuple[int, int]:
        offset = current.offset(line, col - 1)
        for edits in reversed(applied):
            offset = _offset_before(offset, edits)
        return original.position(offset)

    return locate


def _original_line(offset: int, applied: list[list[Edit]], passes: int, original: SourceFile) -> int:
    for edits in reversed(applied[:passes]):
        offset = _offset_before(offset, edits)
    return original.position(offset)[0]


def relocate_to_original(findings: list[Finding], original: SourceFile, final_text: str, applied: list[list[Edit]]) -> None:
    """Give fixes applied over several passes regions of the ORIGINAL text (SARIF, suggestions).

    A later pass's edits refer to text an earlier pass rewrote, and may rewrite
    what an earlier fix inserted (OPT202 over OPT201's `.data()`). So the
    changed lines of the whole file are attributed to fixes instead: each
    block of changed lines goes to the latest fix that touches it, and applying
    every applied fix's regions gives exactly the rewritten file.
    """
    old_lines = original.text.splitlines(keepends=True)
    new_lines = final_text.splitlines(keepends=True)
    touched: list[tuple[int, int, Finding]] = []  # (pass, original line, finding)
    for finding in findings:
        if finding.applied:
            step = finding.extra.get("pass", 0)
            for edit in finding.edits:
                touched.append((step, _original_line(edit.start, applied, step, original), finding))
    owners: dict[int, list[Region]] = {}
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in _line_blocks(matcher.get_opcodes()):
        if tag == "equal":
            continue
        # 1-based lines of the block; an insertion also belongs to the line it follows
        lines = range(i1 + 1, i2 + 1) if i2 > i1 else range(i1, i1 + 2)
        claimants = [(step, finding) for step, line, finding in touched if line in lines]
        if not claimants:
            continue
        owner = max(claimants, key=lambda c: (c[0], c[1].sort_key))[1]
        region = Region(i1 + 1, 1, i2 + 1, 1, "".join(new_lines[j1:j2]))
        owners.setdefault(id(owner), []).append(region)
    for finding in findings:
        if finding.applied:
            set_regions(finding, tuple(owners.get(id(finding), ())))


def _line_blocks(opcodes):
    """Opcodes, with a replacement of N lines by N lines split line by line (one fix per line, usually)."""
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "replace" and i2 - i1 == j2 - j1:
            for k in range(i2 - i1):
                yield tag, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1
        else:
            yield tag, i1, i2, j1, j2


def _offset_before(offset: int, edits: list[Edit]) -> int:
    """Where an offset of the edited text was before `edits`; inside new text, the edit's start."""
    delta = 0
    for edit in sorted(edits):
        start = edit.start + delta
        if offset < start:
            break
        if offset < start + len(edit.text):
            return edit.start
        delta += len(edit.text) - (edit.end - edit.start)
    return offset - delta


def _one_pass(source: SourceFile, rules: list[type[Rule]], policy: FixPolicy, locate: Callable[[int, int], tuple[int, int]]):
    wanted, calls = _screened([rule for rule in rules if rule.wants(source)], source)
    if not wanted:
        return [], 0, _suppression_lines(source), []
    try:
        unit = make_unit(source, calls, _outline(wanted, calls, source))
    except FrontendError as error:
        return error.error
    findings: list[Finding] = []
    for rule in wanted:
        try:
            findings.extend(rule().check(unit))
        except RecursionError:
            return FileError(source.rel, f"{rule.code}: code nested too deeply to analyse")
        except Exception as error:  # a rule bug must cost one file, not the run
            return FileError(source.rel, f"internal error in {rule.code}: {type(error).__name__}: {error}")
    suppressions = find_suppressions(source.text, source.language)
    findings, suppressed = apply_suppressions(findings, suppressions)
    locate_findings(findings, source)  # line text and edit regions of the text these edits apply to
    for finding in findings:  # positions (and so fix ids and screens) refer to the file as the user has it
        finding.line, finding.col = locate(finding.line, finding.col)
    for screen in policy.screens:
        screen.screen(findings)
    edits = plan_edits(findings, policy.refuse)
    unused = [s.line for s in suppressions if not s.used]
    return sorted(findings, key=lambda f: f.sort_key), suppressed, unused, edits


def _suppression_lines(source: SourceFile) -> list[int]:
    """The lines of the file's suppression comments (a cheap look for the marker first)."""
    if "optpatch:" not in source.text:
        return []
    return [suppression.line for suppression in find_suppressions(source.text, source.language)]


def _screened(rules: list[type[Rule]], source: SourceFile) -> tuple[list[type[Rule]], "CallIndex | None"]:
    """Drop the rules whose `screen` rejects the file's `ast` (parsed once, only if some rule screens or needs).

    Also returns the `ast`'s call index, when Python's own parser took the
    file: it spares the Python frontend its own check for nesting CPython
    refuses, and gives the rules' `needs`.
    """
    if source.language != "python" or all(
        rule.screen.__func__ is Rule.screen.__func__ and rule.needs.__func__ is Rule.needs.__func__ for rule in rules
    ):
        return rules, None
    from optpatch.python_screen import CallIndex

    calls = CallIndex.of(source.text)
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
    return outline(source.text, calls.tree, needed, bindings, calls.reads() if bindings else None)


def _merge_later_pass(first: list[Finding], later: list[Finding]) -> list[Finding]:
    """A later pass's verdict on a fix deferred for overlap replaces the deferral; its new fixes join."""
    deferred = {(f.code, f.line) for f in first if f.not_applied_because.startswith("overlaps")}
    redone = [f for f in later if f.applied or (f.code, f.line) in deferred]
    replaced = {(f.code, f.line) for f in redone} & deferred
    kept = [f for f in first if not ((f.code, f.line) in replaced and f.not_applied_because.startswith("overlaps"))]
    return sorted(kept + redone, key=lambda f: f.sort_key)


def _rewritten(source: SourceFile, text: str) -> SourceFile:
    return SourceFile(source.rel, source.path, source.encode(text), text, source.encoding, source.bom, source.language)


def _ignored_codes(rel: str, settings: Settings) -> set[str]:
    codes: set[str] = set()
    for pattern, ignored in settings.per_file_ignores:
        if _pattern(pattern).match_file(rel):
            codes.update(rule.code for rule in rule_facts() if any(rule.code.startswith(c) for c in ignored))
    return codes


@cache
def _pattern(pattern: str) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines([pattern])


class FrontendError(Exception):
    def __init__(self, error: FileError):
        super().__init__(error.reason)
        self.error = error


def make_unit(source: SourceFile, calls: "CallIndex | None" = None, outline: str | None = None):
    """Parse with the frontend of the file's language.

    `calls`: the screens' `ast` index of this Python text (so `ast` already
    took it); `outline`: parse this outline of it instead (python_outline.py).
    """
    if source.language == "python":
        from optpatch.python_frontend import PythonModule, PythonParseError

        try:
            return PythonModule(source, outline, calls)
        except PythonParseError as error:
            raise FrontendError(error.error) from None
    from optpatch.cpp_frontend import CppParseError, CppUnit

    try:
        return CppUnit(source)
    except CppParseError as error:
        raise FrontendError(error.error) from None
