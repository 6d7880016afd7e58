"""What each step of the Python frontend costs, old way and new way, on the files a scan parses.

    python benchmarks/frontend_costs.py PATH [--limit N]

Takes the Python files under PATH that hold a rule's trigger word (those are
the only ones a scan parses) and times, best of three, in CPU seconds of this process, per step:

- `ast.parse` (what a rule's `screen` would cost);
- `libcst.parse_module`;
- libcst's PositionProvider, and the frontend's `_TreeIndex` that replaced it
  (spans, parents, pre-order, calls and binding nodes in one pass);
- libcst's QualifiedNameProvider (with the ScopeProvider it needs) asked for
  every Name, Attribute and Call, and python_scope's NameResolver asked the
  same, and asked only for the callees of calls (what the rules ask).

It also checks that the new answers equal the old ones on every node timed.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider  # noqa: E402

from optpatch.discovery import discover  # noqa: E402
from optpatch.python_frontend import PythonModule, _TreeIndex  # noqa: E402
from optpatch.rule_facts import rule_facts  # noqa: E402
from optpatch.source import read_source  # noqa: E402

ASKED = (cst.Name, cst.Attribute, cst.Call)


def candidates(root: Path, limit: int | None):
    facts = [f for f in rule_facts() if f.language == "python"]
    found = []
    for path, rel in discover(root.resolve()).files:
        source = read_source(path, rel)
        if hasattr(source, "text") and source.language == "python" and any(f.wants(source) for f in facts):
            found.append(source)
    return found[:limit] if limit else found


def best_of_three(step) -> float:
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        step()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--limit", type=int, help="Only the first N candidate files.")
    args = parser.parse_args()
    sources = [s for s in candidates(args.path, args.limit) if _parses(s)]
    megabytes = sum(len(s.raw) for s in sources) / 1e6
    print(f"{args.path.name}: {len(sources)} candidate Python files, {megabytes:.2f} MB")

    times = {"ast.parse": best_of_three(lambda: [ast.parse(s.text) for s in sources])}
    times["libcst parse"] = best_of_three(lambda: [cst.parse_module(s.text) for s in sources])
    modules = [PythonModule(s) for s in sources]

    def positions_libcst():
        for module in modules:
            MetadataWrapper(module.tree, unsafe_skip_copy=True).resolve(PositionProvider)

    def index_new():
        for module in modules:
            _TreeIndex.of(module.tree)

    times["PositionProvider"] = best_of_three(positions_libcst)
    times["_TreeIndex (replaces it)"] = best_of_three(index_new)

    def names_libcst():
        for module in modules:
            qualified = MetadataWrapper(module.tree, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
            for node in module._index.order:
                if isinstance(node, ASKED):
                    value = qualified.get(node, ())
                    value() if callable(value) else value

    def names_new(only_callees: bool):
        def step():
            for module in modules:
                module.__dict__.pop("_names", None)
                nodes = [c.func for c in module.calls()] if only_callees else module._index.order
                for node in nodes:
                    if isinstance(node, ASKED):
                        module.qualified_names(node)
        return step

    times["QualifiedNameProvider, every name"] = best_of_three(names_libcst)
    times["NameResolver, every name"] = best_of_three(names_new(False))
    times["NameResolver, callees only"] = best_of_three(names_new(True))

    width = max(map(len, times))
    for step, seconds in times.items():
        print(f"  {step.ljust(width)}  {seconds:7.2f} s  {seconds / megabytes:6.2f} s/MB  "
              f"{seconds / times['libcst parse']:5.2f}x parse")
    print(f"  answers identical on every Name/Attribute/Call: {_same_answers(modules)}")


def _parses(source) -> bool:
    try:
        PythonModule(source)
    except Exception:
        return False
    return True


def _same_answers(modules) -> bool:
    for module in modules:
        wrapper = MetadataWrapper(module.tree, unsafe_skip_copy=True)
        positions = wrapper.resolve(PositionProvider)
        qualified = wrapper.resolve(QualifiedNameProvider)
        for node in module._index.order:
            if node in positions:
                where = positions[node]
                start = module.source.offset(where.start.line, where.start.column)
                end = module.source.offset(where.end.line, where.end.column)
                if module.span(node) != (start, end):
                    return False
            if isinstance(node, ASKED):
                value = qualified.get(node, ())
                theirs = {q.name for q in (value() if callable(value) else value)}
                if theirs != module.qualified_names(node):
                    return False
    return True


if __name__ == "__main__":
    main()
