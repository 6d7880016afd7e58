"""Where one cold run's wall time goes: the main process's steps, the workers' balance, the collector.

    PYTHONPATH=src python benchmarks/run_timeline.py TREE [optpatch check options...]

Runs `optpatch check TREE --no-cache -q` in this process with a fresh
OPTPATCH_CACHE_DIR and prints, in seconds from the start: when the engine
was imported, discovery, opening the groups (rules' facts, formatter
configuration, header setup), step 1 (the files analysed, in the workers),
step 2 (the call graph and the frequencies), step 3 (settling, saving the
cache) and the report. Then each worker: how many files it took, how long
it was busy, when it took its first file and when it finished its last
(a worker that finishes long before the other is work left on the table).
Then the main process's garbage collections by generation (gc.callbacks):
time the main process spends there is serial. scan_phases.py says where
the workers' CPU goes; this says where the run's wall time goes. A profile
for docs/benchmarks.md; nothing here is a test.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict

START = time.perf_counter()
MAIN = os.getpid()
marks: list[tuple[float, str]] = []
collections: Counter = Counter()
collected_in: Counter = Counter()
_collection_start = [0.0]


def mark(what: str) -> None:
    marks.append((time.perf_counter() - START, what))


def on_collection(phase: str, info: dict) -> None:
    if os.getpid() != MAIN:
        return
    if phase == "start":
        _collection_start[0] = time.perf_counter()
    else:
        collected_in[info["generation"]] += time.perf_counter() - _collection_start[0]
        collections[info["generation"]] += 1


def timed(owner, name: str, label: str) -> None:
    function = getattr(owner, name)

    def wrapper(*args, **kwargs):
        mark(f"{label} starts")
        try:
            return function(*args, **kwargs)
        finally:
            mark(f"{label} ends")

    setattr(owner, name, wrapper)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    log = tempfile.mkdtemp(prefix="optpatch-timeline-")
    from optpatch import engine

    mark("engine imported")
    timed(engine, "discover", "discovery")
    timed(engine._Group, "open", "opening the group")
    timed(engine._Group, "analyse", "step 1 (analyse)")
    timed(engine, "_project_calls", "step 2 (call graph)")
    timed(engine, "_frequencies", "step 2 (frequencies)")
    timed(engine._Group, "finish", "step 3 (settle, save)")
    analyse_one = engine._FileTask.__call__

    def logged(self, item):
        began = time.perf_counter()
        try:
            return analyse_one(self, item)
        finally:
            with open(os.path.join(log, str(os.getpid())), "a") as stream:
                stream.write(f"{began - START} {time.perf_counter() - began}\n")

    engine._FileTask.__call__ = logged
    gc.callbacks.append(on_collection)
    from optpatch.cli import main as optpatch

    os.environ["OPTPATCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="optpatch-timeline-cache-")
    try:
        optpatch(["check", *sys.argv[1:], "--no-cache", "-q"], standalone_mode=False)
    except SystemExit:
        pass
    mark("done")
    print("| s | main process |\n|---:|---|")
    for at, what in marks:
        print(f"| {at:.3f} | {what} |")
    workers: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name in os.listdir(log):
        with open(os.path.join(log, name)) as stream:
            workers[name] = [tuple(map(float, line.split())) for line in stream]
    print("\n| process | files | busy s | first file at | last file done at |\n|---|---:|---:|---:|---:|")
    for name, runs in sorted(workers.items()):
        who = "main" if int(name) == MAIN else f"worker {name}"
        print(f"| {who} | {len(runs)} | {sum(d for _, d in runs):.3f} | {min(s for s, _ in runs):.3f} "
              f"| {max(s + d for s, d in runs):.3f} |")
    spent = ", ".join(f"generation {g}: {collections[g]} in {collected_in[g]:.3f} s" for g in sorted(collections))
    print(f"\nThe main process's collections: {spent or 'none'}.")


if __name__ == "__main__":
    main()
