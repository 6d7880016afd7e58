"""Where a cold scan's CPU time goes, phase by phase, in one process.

    PYTHONPATH=src python benchmarks/scan_phases.py TREE...

Runs the engine's per-file task (step 1 of engine.run: a worker's) over
every file of each TREE (no pool, no cache) with the phases timed: reading
and the trigger-word check, the one `ast` parse of a Python file, the call
graph's index, the `ast` screens, CPython's nesting check, the libcst
parse, the frontend's index, the libclang parse, and each rule's `check`.
The call graph's resolution across files (step 2) is not in it; the C++ call
reader is. CPU seconds (`time.process_time`,
all threads). A profile summary for docs/benchmarks.md; nothing here is a test.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import libcst

from optpatch import engine, passes
from optpatch import python_frontend as frontend
from optpatch.call_graph import index_native_file, index_tree
from optpatch.config import Settings
from optpatch.discovery import discover
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules

SPENT: Counter = Counter()


def timed(phase: str, function):
    def measured(*args, **kwargs):
        start = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT[phase] += time.process_time() - start

    return measured


def install_timers() -> None:
    """Wrap the engine's phases; each rule's `check` is drained inside its timer (it is a generator)."""
    frontend._refuse_what_cpython_cannot_nest = timed("CPython nesting check", frontend._refuse_what_cpython_cannot_nest)

    def parse_and_index(text: str):
        tree = timed("libcst parse", libcst.parse_module)(text)
        return tree, timed("index (one code-generator pass)", frontend._TreeIndex.of)(tree)

    frontend._parse_and_index = parse_and_index
    passes._screened = timed("ast screens", passes._screened)
    engine.parse_module = timed("ast parse (one per Python file)", engine.parse_module)
    engine.call_graph = SimpleNamespace(
        index_tree=timed("call-graph index (a walk of that ast)", index_tree),
        index_native_file=timed("C++ call reader (cpp_calls.py)", index_native_file),
    )
    parse = passes.parse

    def make_unit_timed(source, *args):
        if source.language == "cpp":
            return timed("libclang parse", parse)(source, *args)
        return parse(source, *args)

    passes.parse = make_unit_timed
    for rule in load_rules():
        check = rule.check
        rule.check = lambda self, unit, check=check, code=rule.code: iter(timed(f"rule {code}", lambda: list(check(self, unit)))())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    args = parser.parse_args()
    install_timers()
    rules = load_rules()
    task = engine._FileTask(codes=tuple(rule.code for rule in rules), settings=Settings(), policy=FixPolicy())
    gc.freeze()  # as a worker does (engine._worker_start): what the imports made is never walked
    for tree in args.trees:
        SPENT.clear()
        files = discover(tree).files
        start = time.process_time()
        for path, rel in files:  # step 1 of engine.run, as a worker runs it
            task((path, rel))
        total = time.process_time() - start
        SPENT["everything else (reading, trigger words, findings, planning)"] = total - sum(SPENT.values())
        print(f"\n{tree.name}: {len(files)} files, {total:.2f} s CPU in one process\n")
        print("| phase | CPU s | share |\n|---|---:|---:|")
        for phase, seconds in SPENT.most_common():
            print(f"| {phase} | {seconds:.2f} | {seconds / total:.0%} |")


if __name__ == "__main__":
    main()
