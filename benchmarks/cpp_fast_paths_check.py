"""The C++ fast paths on real trees: the same findings as the full checks, file by file.

    PYTHONPATH=src python benchmarks/cpp_fast_paths_check.py TREE...

OPT201 judges most files from clang's VLA warning and a `cursor_at` look at
the `name[` that may start a declarator (`candidates.array_declarations`), and OPT202
skips files where no `from_blob(...)` is followed by a move
(`screen.may_chain_a_copy`); the frontend reparses one translation unit instead
of setting clang up for every file (`cpp_frontend._Spare`). For every
C++/CUDA file of each TREE this runs both rules as optpatch does, then with
the fast paths switched off (every array declaration of the whole tree,
every file checked in full, every file parsed afresh), with
`--unsafe-fixes`, and compares the findings and errors. Prints one line per
difference and a count; exits 1 if anything differs. The tests hold the
same promise on the fixtures (tests/cpp/test_opt201_fast_path.py,
tests/cpp/test_opt202_screen.py, tests/cpp/test_cpp_frontend.py); this is
for public checkouts, never committed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from optpatch import cpp_frontend
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile, language_of, read_source


def answers(source: SourceFile, rules) -> tuple:
    result = analyse_file(source, rules, Settings(), FixPolicy(unsafe_fixes=True))
    findings = [(f.code, f.line, f.col, f.verdict, f.fix, f.reason) for f in result.findings]
    return findings, result.error and result.error.reason


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    args = parser.parse_args()
    rules = select_rules(load_rules(), ["OPT201", "OPT202"])
    opt201 = sys.modules[rules[0].__module__.rsplit(".", 1)[0] + ".candidates"]  # rules/opt201/candidates.py
    opt202 = sys.modules[rules[1].__module__]
    fast = opt201.array_declarations, opt202.may_chain_a_copy, cpp_frontend._Spare.take
    full = opt201.all_array_declarations, lambda unit: True, classmethod(lambda spare: None)
    files = different = 0
    for tree in args.trees:
        for path in sorted(p for p in tree.rglob("*") if p.is_file() and language_of(p) == "cpp"):
            source = read_source(path, str(path.relative_to(tree)))
            if not isinstance(source, SourceFile):
                continue
            results = []
            for declarations, screen, take in (fast, full):
                opt201.array_declarations, opt202.may_chain_a_copy, cpp_frontend._Spare.take = declarations, screen, take
                results.append(answers(source, rules))
            opt201.array_declarations, opt202.may_chain_a_copy, cpp_frontend._Spare.take = fast
            files += 1
            if results[0] != results[1]:
                different += 1
                print(f"differs: {tree.name}/{source.rel}", file=sys.stderr)
    print(f"{files} C++/CUDA files, {different} with different findings or errors")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
