"""The run: discover files, analyse each (from the cache when its bytes are known), build the call graph, settle, merge.

Each file goes through passes.py: a policy-free analysis, then `settle`,
which applies this run's fix policy. Analyses are what the result cache
keeps, so the cache never carries a decision from one run to another.

1. Analyse: the files the cache does not hold are read, in a process pool
   when there are enough of them. Each Python file's `ast` is parsed once,
   for both its part of the call graph and the rules' screens; the worker
   also settles the file once without frequencies, so that the texts this
   policy leads to and their safety-net verdicts are in its record.
2. The call graph: every Python file's part (the cache's, or step 1's) is
   resolved across files, and each function's frequency classified; built
   when the first file with findings is settled (`_OnDemand`), so a run
   whose files hold none never builds it.
3. Settle: every file, cached or just analysed, is settled here with its
   frequencies, from its record (a filter that reads the weighed impact,
   as --min-impact does, may ask for a text the record lacks).

Results are merged in path order whatever the number of workers, so the
patch is byte-identical for any --jobs.

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from optpatch import call_graph
from optpatch.config import ConfigResolver, Settings
from optpatch.cpp_headers import HeaderSetup
from optpatch.discovery import discover, is_generated
from optpatch.formatter_config import FormatterConfig, read_formatter_config
from optpatch.model import FileError, Language, Tier
from optpatch.passes import Analysis, FileRecord, FindingFilter, analyse_text, rules_for, settle, suppression_lines, text_digest
from optpatch.policy import FixPolicy
from optpatch.python_screen import parse_module
from optpatch.results import FileResult, RunResult
from optpatch.rule import Rule, builtin_rules_dir, select_rules
from optpatch.rule_facts import RuleFacts, load_rules_for, rule_facts
from optpatch.source import SourceFile, read_source, source_from_bytes

PARALLEL_THRESHOLD = 16  # fewer files to analyse than this are not worth a process pool

# Set (to anything), C++/CUDA files are analysed without their headers, as with --no-headers.
NO_HEADERS_VARIABLE = "OPTPATCH_NO_HEADERS"


def run(
    root: Path,
    settings: Settings | ConfigResolver,
    policy: FixPolicy,
    paths: list[Path] | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    use_cache: bool = True,
    filters: tuple[FindingFilter, ...] = (),
    profile: Path | None = None,
) -> RunResult:
    """Analyse and settle the files under ROOT (or PATHS): with SETTINGS, or each with its own configuration's.

    Given a ConfigResolver, files are run in groups of equal settings, each
    with its own rules, cache pack and policy (`FixPolicy.of` its settings).
    The call graph spans every group, so a file's frequency is the same
    whichever configuration its callers have. `profile`: a torch.profiler
    trace or py-spy profile whose measurements weigh the findings
    (profile_trace.py).
    """
    started = time.perf_counter()
    configs = settings if isinstance(settings, ConfigResolver) else ConfigResolver.fixed(settings)
    if paths and all(_is_the_root(path, root) for path in paths):
        paths = None  # `optpatch check .`: the whole tree, so its call graph needs no second walk
    found = discover(root, configs, paths)
    by_settings: dict[Settings, list[tuple[Path, str]]] = {}
    for path, rel in found.files:
        by_settings.setdefault(_settings_of(configs, path), []).append((path, rel))
    oversized: list[str] = []
    groups: list[_Group] = []
    counter = _Counter(progress, len(found.files))
    jobs = max(1, jobs or os.cpu_count() or 1)
    results: list[FileResult] = []
    with _run_heap():
        with _gathering():  # the cache packs' records: unpickled by the million, and no cycle among them
            for group_settings, files in by_settings.items():
                group_policy = policy if configs is not settings else _policy_with(policy, group_settings)
                files, too_large = _within_size(files, group_settings.max_file_size)
                found.skipped.extend(too_large)
                found.warnings.extend(too_large)
                oversized.extend(rel for rel, _ in too_large)
                groups.append(_Group.open(root, group_settings, group_policy, files, use_cache, filters,
                                          whole_tree=paths is None))
        analysed = [group.analyse(jobs, counter) for group in groups]
        rules = [facts for group in groups for facts in group.rules]
        weights = _OnDemand(lambda: _frequencies(root, _project_calls(root, configs, groups, analysed, paths, use_cache,
                                                                      jobs), profile, rules, use_cache))
        if profile is not None:
            weights.build()  # a profile that cannot be read is a usage error, whatever the files hold
        for group, fresh in zip(groups, analysed):
            results.extend(group.finish(fresh, weights, counter))
    results.sort(key=lambda r: r.rel)
    found.skipped.sort()
    return RunResult(root.resolve(), results, found.errors, found.skipped, time.perf_counter() - started,
                     oversized=sorted(oversized), warnings=sorted(found.warnings))


def _is_the_root(path: Path, root: Path) -> bool:
    """PATH names ROOT's folder itself, as discovery walks it (a link to it is classified instead)."""
    path = path if path.is_absolute() else Path.cwd() / path
    return not path.is_symlink() and path.is_dir() and path.resolve() == root.resolve()


def _settings_of(configs: ConfigResolver, path: Path) -> Settings:
    settings = configs.for_file(path)
    if os.environ.get(NO_HEADERS_VARIABLE):  # as --no-headers; in the settings, so in the cache key too
        settings = replace(settings, headers=False)
    return settings


@dataclass(frozen=True)
class _Read:
    """One file's bytes and record, before this run's settling: from the cache, or analysed by step 1.

    A file step 1 found nothing in comes back without its bytes (`raw` is
    None): settling reads a file's text only for a finding (passes.settle),
    and the bytes were half of what the workers pickled (xformers: 3.0 ->
    1.5 MB, 0.043 -> 0.018 s of pickling; NeMo: 40 -> 22 MB, which the main
    process holds until the run's end).
    """

    path: Path
    rel: str
    raw: bytes | None
    record: FileRecord


@dataclass
class _Group:
    """The files that share one configuration: their rules, task and cache pack, and which the cache holds."""

    settings: Settings
    rules: list[RuleFacts]
    task: "_FileTask"
    store: object  # the ResultCache of this group's pack, or None
    cached: list[_Read]
    todo: list[tuple[Path, str]]

    @classmethod
    def open(cls, root: Path, settings: Settings, policy: FixPolicy, files: list[tuple[Path, str]], use_cache: bool,
             filters: tuple[FindingFilter, ...], whole_tree: bool = False) -> "_Group":
        """WHOLE_TREE: the run is over the whole tree, not narrowed to some paths (it may build the precompiled
        headers an earlier run put off: cpp_second_look.py)."""
        rules = select_rules(rule_facts(), settings.select, settings.ignore)
        formatters = read_formatter_config(root, (rel for _, rel in files))
        headers = HeaderSetup.for_run(root, settings.compile_commands, settings.headers, settings.include_dirs,
                                      builds_put_off=whole_tree, applied_tiers=policy.applied_tiers())
        task = _FileTask(codes=tuple(rule.code for rule in rules), settings=settings, policy=policy, filters=filters,
                         formatters=formatters, headers=headers)
        store = _open_cache(root, rules, settings, formatters) if use_cache else None
        cached, todo = _cached(store, files, settings.max_file_size) if store is not None else ([], files)
        return cls(settings, rules, task, store, cached, todo)

    def analyse(self, jobs: int, counter: "_Counter") -> list["_Read | FileResult"]:
        """Step 1: the files the cache does not hold, analysed (in a process pool when many); a file that cannot
        be read is its result already."""
        analysed = list(_map(self.task, self.todo, jobs, counter.offset(), self.task.load))
        counter.done += len(self.todo)
        return analysed

    def finish(self, analysed: list["_Read | FileResult"], weights, counter: "_Counter") -> list[FileResult]:
        """Step 3: settle the cached files and the analysed ones with their frequencies, and save the pack."""
        results: list[FileResult] = []
        for read in self.cached:
            results.append(self._settled(read, weights))
            if read.record.changed:  # this policy led to a text, or a rewrite, the cache had not seen
                self.store.put(read.rel, read.record)
        counter.add(len(results))
        for read in analysed:
            if isinstance(read, FileResult):
                results.append(read)
                continue
            results.append(self._settled(read, weights))
            if self.store is not None:
                self.store.put(read.rel, read.record)
        if self.store is not None:
            self.store.save()
        return results

    def _settled(self, read: _Read, weights: "_OnDemand") -> FileResult:
        frequencies = weights(read.rel) if _has_findings(read.record) else None
        with _collections_paused():
            return self.task.settle(read.record, read.path, read.rel, read.raw, frequencies)


def _has_findings(record: FileRecord) -> bool:
    """Whether settling the file has anything to weigh: a file without findings needs no frequencies."""
    return any(analysis.findings for analysis in record.analyses.values())


class _OnDemand:
    """Step 2, built the first time a file with findings asks for its frequencies: the project's call graph and
    what it says of how often each function runs. A run whose files hold no finding (most pre-commit runs) never
    pays for it (NeMo, one changed file, warm: 1.6 s, of which the graph 1.2 s; docs/benchmarks.md)."""

    def __init__(self, make: Callable[[], Callable]):
        self._make = make
        self._weigh: Callable | None = None

    def build(self) -> Callable:
        if self._weigh is None:
            with _gathering():  # records, and the graph's arcs and nodes
                self._weigh = self._make()
        return self._weigh

    def __call__(self, rel: str):
        return self.build()(rel)


def _within_size(files: list[tuple[Path, str]], limit: int) -> tuple[list[tuple[Path, str]], list[tuple[str, str]]]:
    """The files within `max-file-size`, and (rel, why) for those over it: skipped, not failed (--strict fails them)."""
    kept, skipped = [], []
    for path, rel in files:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = 0  # the analysis says why it cannot be read
        if size > limit:
            skipped.append((rel, f"larger than max-file-size ({size:,} > {limit:,} bytes)"))
        else:
            kept.append((path, rel))
    return kept, skipped


@contextmanager
def _collections_paused():
    """No garbage collection while one file is analysed and settled; a collection may follow.

    A parse allocates hundreds of thousands of objects that all stay alive
    until the file is done, and are then freed by reference counting (the
    frontends make no cycles). The collector would keep re-scanning them:
    with CPython's default thresholds that grows with the file (a 2 MB file:
    30% of its CPU time; docs/benchmarks.md), and a higher threshold only
    spaces the scans out. The few cycles a file's analysis leaves are
    collected once it is done.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _RunHeap:
    """Whether `run` holds the main process's heap: only then does `_gathering` freeze what it gathered."""

    held = 0


@contextmanager
def _gathering():
    """While the main process gathers values (the cache packs' records, the workers', the call graph), collection is
    paused; then, within a run, what it gathered is frozen: left out of every later collection until `_run_heap` ends.

    By step 3 the main process holds the whole run: each file's bytes and
    record, the call graph. Collected as usual, CPython walks all of it
    whenever a quarter more objects have survived since the last full
    collection, and the first collection after a pause walks everything
    allocated during it: in a CUTLASS scan, 1.2 s of the main process's
    8.7 s; unpickling NeMo's cache pack, 0.64 s of 0.93 s
    (docs/benchmarks.md). Values hold no cycles to collect.
    """
    with _collections_paused():
        try:
            yield
        finally:
            if _RunHeap.held:
                gc.freeze()  # before collection resumes, so that its first round does not walk them either


@contextmanager
def _run_heap():
    """A run leaves the collector as it found it: what it froze (`_gathering`) is collectable again when it ends
    (unless the caller had frozen objects itself: CPython unfreezes only all at once)."""
    frozen = gc.get_freeze_count()
    _RunHeap.held += 1
    try:
        yield
    finally:
        _RunHeap.held -= 1
        if not frozen and not _RunHeap.held:
            gc.unfreeze()


def _open_cache(root: Path, rules: list[RuleFacts], settings: Settings, formatters: FormatterConfig):
    from optpatch.cache import ResultCache, pack_key

    return ResultCache.open(pack_key(root.resolve(), rules, settings, _code(), formatters.sources))


def _code() -> str:
    """What the caches' keys hold of optpatch's own code: every file of the package and of the rules."""
    from optpatch.cache import code_fingerprint

    return code_fingerprint(Path(__file__).parent, builtin_rules_dir())


def _cached(store, files: list[tuple[Path, str]], max_bytes: int) -> tuple[list[_Read], list[tuple[Path, str]]]:
    """Split the files into those whose analysis the cache holds and those to analyse."""
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
        if record is None or not record.analyses:  # none, or the call-graph index alone (a narrowed run's)
            misses.append((path, rel))
        else:
            hits.append(_Read(path, rel, raw, record))
    return hits, misses


def _policy_with(policy: FixPolicy, settings: Settings) -> FixPolicy:
    """POLICY with a configuration's own policy (`FixPolicy.of`): its `unsafe-fixes` and `tiers` added, its
    `fix-areas` (the command line's --fix-areas is in SETTINGS too)."""
    own = FixPolicy.of(settings)
    return replace(policy, unsafe_fixes=policy.unsafe_fixes or own.unsafe_fixes,
                   tiers=tuple(sorted(set(policy.tiers) | set(own.tiers))), fix_areas=own.fix_areas)


def _project_calls(root: Path, configs: ConfigResolver, groups: list[_Group],
                   analysed: list[list["_Read | FileResult"]], paths, use_cache: bool,
                   jobs: int = 1) -> dict[str, tuple[str, call_graph.FileCalls]]:
    """Step 2's input: every Python and C++ file's part of the call graph, with the digest of its bytes, by path.

    Each record carries its file's: the cache's, or step 1's. A run
    narrowed to some paths still needs the whole project's, since callers
    live anywhere: each other file is indexed here with its own
    configuration's settings and kept in its own pack; the files the cache
    does not hold are indexed by JOBS workers (a first pre-commit run in
    NeMo indexes 2,575 files).
    """
    from optpatch.source import language_of

    reads = [read for group, fresh in zip(groups, analysed) for read in (*group.cached, *fresh) if isinstance(read, _Read)]
    calls = {read.rel: (read.record.digest, read.record.calls) for read in reads if read.record.calls is not None}
    if paths is not None:
        others: dict[Settings, list[tuple[Path, str]]] = {}
        for path, rel in discover(root, configs, None).files:
            if rel not in calls and language_of(rel) is not None:
                others.setdefault(_settings_of(configs, path), []).append((path, rel))
        stores = {group.settings: group.store for group in groups}
        for settings, files in others.items():
            store = stores.get(settings)
            if store is None and use_cache:
                store = _Group.open(root, settings, FixPolicy.of(settings), [], True, ()).store
            found = [_cached_index(path, rel, settings, store) for path, rel in files]
            unknown = [item for item, index in zip(files, found) if index is _UNKNOWN]
            indexed = iter(_map(_IndexTask(settings.max_file_size), unknown, jobs, None))
            for (path, rel), index in zip(files, found):  # in the files' order whatever the cache held: the graph follows it
                if index is _UNKNOWN:
                    index = _kept(store, rel, next(indexed))
                if index is not None:
                    calls[rel] = index
            if store is not None and settings not in stores:
                store.save()
    return calls


_UNKNOWN = object()  # `_cached_index`: a file the cache has never seen


def _cached_index(path: Path, rel: str, settings: Settings, store):
    """A file this run does not analyse: the digest of its bytes and its part of the call graph, the cache's, else
    read from its `ast` (and kept: a narrowed run, such as pre-commit's, would otherwise read the whole project's
    every time); None where it cannot be read. A file the cache has never seen is `_UNKNOWN`: a worker reads it
    (`_IndexTask`). Where the cache recorded the file's size and modification time and they still hold, the file
    is not even read (cache.py `known_digest`); a file changed since is read and indexed here (a few, as a rule)."""
    try:
        seen = os.stat(path)
    except OSError:
        return None
    if store is None or not store.holds(rel):
        return _UNKNOWN
    if (digest := store.known_digest(rel, seen)) is not None:
        record = store.get(rel, digest)
        if record is not None and record.calls is not None:
            return digest, record.calls  # unchanged since it was read: not read again
    source = read_source(path, rel, settings.max_file_size)
    if isinstance(source, FileError):
        return None
    digest = text_digest(source.raw)
    record = store.get(rel, digest)
    if record is not None and record.calls is not None:
        store.remember(rel, seen)
        return digest, record.calls
    return _kept(store, rel, _indexed(source, digest, seen))


def _kept(store, rel: str, fresh: "_Indexed | None") -> tuple[str, call_graph.FileCalls] | None:
    """A file's part of the call graph just read, kept in the cache (when there is one) as the run uses it."""
    if fresh is None:
        return None
    if store is not None:
        store.put(rel, FileRecord(fresh.digest, calls=fresh.calls), fresh.seen)
    return fresh.digest, fresh.calls


class _Indexed(NamedTuple):
    """A file's part of the call graph as `_IndexTask` read it."""

    digest: str  # of the file's bytes
    calls: call_graph.FileCalls
    seen: os.stat_result  # the file's status when it was read, for the cache (`known_digest`)


@dataclass(frozen=True)
class _IndexTask:
    """The task that reads a file's part of the call graph from its `ast`; None where it cannot."""

    max_file_size: int

    def __call__(self, item: tuple[Path, str]) -> _Indexed | None:
        path, rel = item
        try:
            seen = os.stat(path)
        except OSError:
            return None
        source = read_source(path, rel, self.max_file_size)
        return None if isinstance(source, FileError) else _indexed(source, text_digest(source.raw), seen)


def _indexed(source: SourceFile, digest: str, seen: os.stat_result) -> _Indexed | None:
    """A file's part of the call graph read from its `ast` (or a C++ file's text), with DIGEST of its bytes; None where
    it cannot be."""
    if source.language is Language.CPP:
        index = call_graph.index_native_file(source.rel, source.text, False)
    else:
        index = call_graph.index_file(source.rel, source.text)
    return _Indexed(digest, index, seen) if index is not None else None


def _frequencies(root: Path, indexed: dict[str, tuple[str, call_graph.FileCalls]], profile: Path | None,
                 rules: list[RuleFacts], use_cache: bool):
    """rel -> how often each of its functions runs (frequency.py), measured where the profile says.

    The call graph reuses the last run's resolution of every file unchanged
    since, where that holds (call_graph.Resolution; kept by cache.py).
    """
    from optpatch.cache import ResolutionCache
    from optpatch.call_graph import CallGraph
    from optpatch.frequency import Frequencies

    # A C++ file with no function and no binding (most of CUTLASS's headers) adds nothing to the graph.
    indexed = {rel: item for rel, item in indexed.items() if not (item[1].native and not item[1].definitions)}
    calls = {rel: index for rel, (_, index) in indexed.items()}
    digests = {rel: digest for rel, (digest, _) in indexed.items()}
    kept = ResolutionCache(root.resolve(), _code()) if use_cache else None
    previous = kept.load() if kept is not None else None
    graph = CallGraph.build(calls, digests, previous)
    if kept is not None and graph.resolution is not None:
        kept.save(graph.resolution, graph.resolved_files, reused=graph.resolved_files < len(calls))
    frequencies = Frequencies.classify(graph)
    measured = None
    if profile is not None:
        from optpatch.profile_trace import Profile

        measured = Profile.read(profile, list(calls))
    ops = {facts.code: facts.profiled_ops for facts in rules if facts.profiled_ops}
    return lambda rel: frequencies.of_file(rel, measured.for_file(rel, ops) if measured is not None else None)


class _Counter:
    """Progress over every group of a run: files done so far, of the run's total."""

    def __init__(self, progress: Callable[[int, int], None] | None, total: int):
        self.progress = progress
        self.total = total
        self.done = 0

    def add(self, count: int) -> None:
        self.done += count
        if self.progress and count:
            self.progress(self.done, self.total)

    def offset(self):
        """The callback of one group's analysis, counted after what is done."""
        if self.progress is None:
            return None
        before = self.done
        return lambda index, _: self.progress(before + index, self.total)


def _map(task, files, jobs, progress, load: Callable[[], object] | None = None) -> Iterator[_Read | FileResult]:
    """TASK over FILES ((path, rel) pairs), in their order: in this process, or in a pool of JOBS forked workers,
    which take the files in batches, the costliest first (`_batches`). LOAD imports what every worker's TASK will
    need (the selected rules), once, before the fork."""
    total = len(files)
    if jobs == 1 or total < PARALLEL_THRESHOLD:
        for index, item in enumerate(files, start=1):
            yield task(item)
            if progress:
                progress(index, total)
        return
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with _collections_paused():  # importing libcst and the rules makes only objects that live as long as the process
        if load is not None:
            load()  # imported once here, inherited by every forked worker
        if _RunHeap.held:
            gc.freeze()  # so that no later collection walks them either (`_run_heap` unfreezes at the end)
    batches = _batches(files, jobs)
    results: list = [None] * total
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork"), initializer=_worker_start,
                               initargs=(task,))
    finished = False
    try:
        # Meanwhile this process only gathers records, values whose number grows to the whole run's: collecting
        # would walk them again and again (each worker collects its own, _worker_start).
        with _gathering():
            done = 0
            work = ([files[index] for index in batch] for batch in batches)
            for batch, outcomes in zip(batches, pool.map(_each, work)):
                for index, outcome in zip(batch, outcomes):
                    results[index] = outcome
                done += len(batch)
                if progress:
                    progress(done, total)
        finished = True
    finally:
        if finished:
            pool.shutdown()
        else:
            _stop_workers(pool)
    yield from results


# The task of this worker's pool: handed over once, in the fork, and not pickled with every batch. A pickled task
# arrived as a new object each time, without what it had worked out for the last batch (the formatters' parsed
# configuration: xformers parsed its .clang-format and .pre-commit-config.yaml again for each of its 61 batches).
_worker_task = None


def _each(items: list) -> list:
    return [_worker_task(item) for item in items]


BATCH_FILES = 32  # the most files a worker takes at once


def _batches(files: list[tuple[Path, str]], jobs: int) -> list[list[int]]:
    """The files' indexes in batches for a pool of JOBS workers: the costliest files first, alone or nearly, then
    batches of cheaper ones that shrink as the work left does, so the workers finish together.

    A batch holds up to BATCH_FILES files and about a quarter of each
    worker's share of the work still to hand out. The estimate is the
    file's size, a Python file's counted four times: libcst and the call
    graph read all of one, while most C++ files are never parsed
    (flash-attention: in file order one of two workers finished 0.4 s
    before the other; docs/benchmarks.md).
    """
    costs = [_estimated_cost(path, rel) for path, rel in files]
    order = sorted(range(len(files)), key=lambda index: -costs[index])
    remaining = sum(costs)
    batches: list[list[int]] = []
    batch: list[int] = []
    spent = share = 0
    for index in order:
        if not batch:
            share = max(1, remaining // (jobs * 4))
        batch.append(index)
        spent += costs[index]
        if spent >= share or len(batch) == BATCH_FILES:
            batches.append(batch)
            remaining -= spent
            batch, spent = [], 0
    if batch:
        batches.append(batch)
    return batches


def _estimated_cost(path: Path, rel: str) -> int:
    try:
        size = os.stat(path).st_size
    except OSError:
        return 1
    return 1 + size * (4 if rel.endswith((".py", ".pyi")) else 1)


def _worker_start(task) -> None:
    """A worker keeps its pool's TASK for every batch, leaves interrupts to the main process and dies of SIGTERM (it
    is how the main process stops it), and collects garbage between files (it was forked while the main process had
    paused collection; a C++ file's tree is a web of cycles), but only its own.

    What it inherited (the imported modules, the rules, libcst's and
    libclang's bindings) is frozen first: a collection would walk all of
    it again and again, and write to every page it walks, copying the
    main process's heap into each worker (xformers: 1.03-1.09 s -> 0.98 s
    wall, 0.1 s of the workers' CPU; docs/benchmarks.md).
    """
    import signal

    global _worker_task
    _worker_task = task
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.freeze()
    gc.enable()


def _stop_workers(pool) -> None:
    """End the pool's workers now, not after the queued files: an interrupt to the main process alone reaches none of them.

    `shutdown(wait=False)` would leave each worker finishing its files, or
    waiting forever for more once this process is gone; so each is
    terminated, and killed if it does not end at once. Then the executor's
    own thread, which notices the dead workers and closes its wake-up pipe,
    is waited for: until it has, this process's exit hook for process pools
    may write to that pipe as it closes, and print a traceback (EBADF, seen
    under load). `shutdown` forgets that thread, so it is taken first.
    """
    workers = list((pool._processes or {}).values())  # the executor has no public handle on its processes
    manager = pool._executor_manager_thread  # nor on its thread
    pool.shutdown(wait=False, cancel_futures=True)
    for worker in workers:
        worker.terminate()
    for worker in workers:
        worker.join(timeout=2)
        if worker.is_alive():
            worker.kill()
            worker.join()
    if manager is not None:
        manager.join(timeout=5)


@dataclass(frozen=True)
class _FileTask:
    """A picklable closure over what every worker needs (rules travel by code)."""

    codes: tuple[str, ...]
    settings: Settings
    policy: FixPolicy
    filters: tuple[FindingFilter, ...] = ()
    formatters: FormatterConfig = FormatterConfig()
    headers: HeaderSetup | None = None  # where C++/CUDA headers come from

    @property
    def facts(self) -> list[RuleFacts]:
        return [facts for facts in rule_facts() if facts.code in self.codes]

    def load(self) -> None:
        """Import the selected rules (and so libcst, for a Python rule): in the main process, before the fork."""
        load_rules_for(frozenset(self.codes))

    def rules(self, path: Path, rel: str) -> list[type[Rule]]:
        """The rules for one file: `per-file-ignores` sees it relative to its configuration's folder."""
        chosen = list(load_rules_for(frozenset(self.codes)))
        return rules_for(self.settings.pattern_path(path, rel) or rel, chosen, self.settings)

    def __call__(self, item: tuple[Path, str]) -> _Read | FileResult:
        """Step 1 for one file (PATH, its name in the root): its record, or its result when it cannot be read.

        The file is settled once here, without frequencies, for what that
        leaves in its record: the texts this policy's fixes lead to, their
        analyses and safety-net verdicts. Step 3 settles it again from the
        record, weighed; the frequencies change no text unless a filter
        reads them.
        """
        path, rel = item
        source = read_source(path, rel, self.settings.max_file_size, self.settings.area_of(path, rel))
        if isinstance(source, FileError):
            return FileResult(rel, error=source)
        with _collections_paused():
            record = self.analyse(source)
            self.settle(record, path, rel, source.raw, None, source)
        self.anticipate_the_flip(record, path, rel, source)
        return _Read(path, rel, source.raw if _has_findings(record) else None, record)

    def analyse(self, source: SourceFile) -> FileRecord:
        """The file's record: its analysis, and a Python file's part of the call graph, from one `ast` parse."""
        record = FileRecord(text_digest(source.raw), style=self.formatters.style_of(source.rel, source.language))
        tree = None
        if source.language is Language.PYTHON and (tree := parse_module(source.text)) is not None:
            record.calls = call_graph.index_tree(source.rel, tree)
        if is_generated(source.text):
            record.analyses[record.digest] = Analysis(skipped="generated file")
        elif not any(facts.wants(source) for facts in self.facts):
            # no rule can have a site here: no import, no parse, and any suppression in it silences nothing
            record.analyses[record.digest] = Analysis(unused_suppressions=tuple(suppression_lines(source)))
        else:
            record.analyses[record.digest] = analyse_text(source, self.rules(source.path, source.rel), record.style,
                                                          self.headers, tree)
        if source.language is Language.CPP:
            record.calls = call_graph.index_native_file(source.rel, source.text, bool(record.first.findings))
        return record

    def anticipate_the_flip(self, record: FileRecord, path: Path, rel: str, source: SourceFile) -> None:
        """Settle once more with --unsafe-fixes flipped, when that changes what applies, so the record holds its
        later passes and safety-net verdict too.

        The flip users make most is `--unsafe-fixes` on a tree they just
        scanned. Its rewrites are new texts, whose safety net would
        otherwise load the frontends in the warm run (libcst alone costs as
        much as a warm scan of DeepSpeed). Here, in the cold run's worker,
        they are loaded already, and only files with an unsafe-tier fix pay.
        """
        first = record.first
        if not any(f.fix is not None and f.fix.tier is Tier.UNSAFE for f in first.findings):
            return
        flipped = replace(self.policy, unsafe_fixes=not self.policy.unsafe_fixes)
        settle(record, lambda: source, lambda: self.rules(path, rel), flipped, self.filters, rel, self.headers)

    def settle(self, record: FileRecord, path: Path, rel: str, raw: bytes | None, frequencies=None,
               source: SourceFile | None = None) -> FileResult:
        def load() -> SourceFile:
            if source is not None:
                return source
            if raw is None:  # only a record without findings comes without its bytes (`_Read`), and settles unread
                raise AssertionError(f"{rel}: settling a file without findings read its text")
            return source_from_bytes(path, rel, raw, self.settings.area_of(path, rel))

        return settle(record, load, lambda: self.rules(path, rel), self.policy, self.filters, rel, self.headers, frequencies)
