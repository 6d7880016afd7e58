"""The run: discover files, analyse each (from the cache when its bytes are known), settle, merge.

Each file goes through passes.py: a policy-free analysis, then `settle`,
which applies this run's fix policy. Analyses are what the result cache
keeps, so the cache never carries a decision from one run to another.
Files whose analysis is cached are settled here; the others are analysed
and settled in a process pool when there are enough of them. Results are
merged in path order whatever the number of workers, so the patch is
byte-identical for any --jobs.

Cost, cheapest first: a file whose bytes are in the result cache is not
read further (cache.py); a file that holds none of a rule's trigger words
is done without importing the rules (rule_facts.py); a rule's `screen` may
reject a Python file from its `ast` before libcst parses it; libcst then
parses only the functions the rules need, the others stubbed
(python_outline.py); what is left is indexed and checked.
"""

from __future__ import annotations

import gc
import os
import stat
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from optpatch.config import Settings
from optpatch.cpp_headers import HeaderSetup
from optpatch.discovery import discover, is_generated
from optpatch.model import FileError
from optpatch.passes import Analysis, FileRecord, FindingFilter, analyse_text, rules_for, settle, suppression_lines, text_digest
from optpatch.policy import FixPolicy
from optpatch.results import FileResult, RunResult
from optpatch.rule import Rule, builtin_rules_dir, load_rules, select_rules
from optpatch.rule_facts import RuleFacts, rule_facts
from optpatch.source import SourceFile, read_source, source_from_bytes

PARALLEL_THRESHOLD = 16  # fewer files to analyse than this are not worth a process pool


def run(
    root: Path,
    settings: Settings,
    policy: FixPolicy,
    paths: list[Path] | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    use_cache: bool = True,
    filters: tuple[FindingFilter, ...] = (),
) -> RunResult:
    started = time.perf_counter()
    rules = select_rules(rule_facts(), settings.select, settings.ignore)
    found = discover(root, settings.exclude, paths, settings.force_exclude)
    jobs = max(1, jobs or os.cpu_count() or 1)
    headers = HeaderSetup.for_run(root, settings.compile_commands, settings.headers)
    task = _FileTask(codes=tuple(rule.code for rule in rules), settings=settings, policy=policy, filters=filters,
                     headers=headers)
    results: list[FileResult] = []
    todo = found.files
    store = _open_cache(root, rules, settings) if use_cache else None
    if store is not None:
        cached, todo = _cached(store, found.files, settings.max_file_size)
        for path, rel, raw, record in cached:
            results.append(task.settle(record, path, rel, raw))
            if record.changed:  # this policy led to a text, or a rewrite, the cache had not seen
                store.put(rel, record)
    done = len(results)
    with _fewer_collections():
        for result, record in _map(task, todo, jobs, _offset(progress, done, len(found.files))):
            results.append(result)
            if store is not None and record is not None:
                store.put(result.rel, record)
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


def _open_cache(root: Path, rules: list[RuleFacts], settings: Settings):
    from optpatch.cache import ResultCache, code_fingerprint, pack_key

    code = code_fingerprint(Path(__file__).parent, builtin_rules_dir())
    return ResultCache.open(pack_key(root.resolve(), rules, settings, code))


def _cached(store, files: list[tuple[Path, str]], max_bytes: int):
    """Split the files into those whose analysis the cache holds, as (path, rel, bytes, record), and those to analyse."""
    hits, misses = [], []
    for path, rel in files:
        record = raw = None
        try:
            status = os.stat(path)
            if stat.S_ISREG(status.st_mode) and status.st_size <= max_bytes:  # a FIFO would block: analysis reports it
                raw = path.read_bytes()
                record = store.get(rel, text_digest(raw))
        except OSError:
            pass  # the analysis reports it
        if record is None:
            misses.append((path, rel))
        else:
            hits.append((path, rel, raw, record))
    return hits, misses


def _offset(progress, done: int, total: int):
    if progress is None:
        return None
    if done:
        progress(done, total)
    return lambda index, _: progress(done + index, total)


def _map(task, files, jobs, progress) -> Iterator[tuple[FileResult, FileRecord | None]]:
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
    filters: tuple[FindingFilter, ...] = ()
    headers: HeaderSetup | None = None  # where C++/CUDA headers come from

    @property
    def facts(self) -> list[RuleFacts]:
        return [facts for facts in rule_facts() if facts.code in self.codes]

    def rules(self, rel: str) -> list[type[Rule]]:
        return rules_for(rel, [rule for rule in load_rules() if rule.code in self.codes], self.settings)

    def __call__(self, item: tuple[Path, str]) -> tuple[FileResult, FileRecord | None]:
        """Analyse and settle one file: its result, and the record the cache keeps (None: not cacheable)."""
        path, rel = item
        source = read_source(path, rel, self.settings.max_file_size)
        if isinstance(source, FileError):
            return FileResult(rel, error=source), None
        record = self.analyse(source)
        return self.settle(record, path, rel, source.raw, source), record

    def analyse(self, source: SourceFile) -> FileRecord:
        record = FileRecord(text_digest(source.raw))
        if is_generated(source.text):
            record.analyses[record.digest] = Analysis(skipped="generated file")
        elif not any(facts.wants(source) for facts in self.facts):
            # no rule can have a site here: no import, no parse, and any suppression in it silences nothing
            record.analyses[record.digest] = Analysis(unused_suppressions=tuple(suppression_lines(source)))
        else:
            record.analyses[record.digest] = analyse_text(source, self.rules(source.rel), self.headers)
        return record

    def settle(self, record: FileRecord, path: Path, rel: str, raw: bytes, source: SourceFile | None = None) -> FileResult:
        def load() -> SourceFile:
            return source if source is not None else source_from_bytes(path, rel, raw)

        return settle(record, load, lambda: self.rules(rel), self.policy, self.filters, rel, self.headers)
