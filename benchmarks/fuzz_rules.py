"""Differential fuzzing of optpatch's Python rules, at any scale.

Each generated program (tests/fuzz/programs.py) is analysed by the engine;
when a fix applies, the original and the rewrite run with uninitialised
memory poisoned (both modes of optpatch.poison) on six inputs, and must
give exactly the same results (tests/fuzz/oracle.py).

    PYTHONPATH=src python benchmarks/fuzz_rules.py --programs 5000 --seed 1

Prints progress, then one summary table. Exits 1 after printing the minimal
failing program (shrunk by hypothesis) when a rewrite changes a result.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz.campaign import RULE_CODES, run_campaign  # noqa: E402
from fuzz.oracle import DifferentialFailure  # noqa: E402

COLUMNS = ("programs", "rewritten", "sites", "applied", "kept")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=1000, help="how many programs to generate and check")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed; the same seed gives the same programs")
    parser.add_argument("--rules", default=",".join(RULE_CODES), help="comma-separated rule codes under test")
    args = parser.parse_args()
    codes = tuple(code.strip() for code in args.rules.split(","))
    started = time.perf_counter()

    def progress(tally):
        if tally["programs"] % 500 == 0:
            print(f"  {tally['programs']} programs, {tally['applied']} fixes applied, {time.perf_counter() - started:.0f} s", flush=True)

    try:
        tally = run_campaign(args.programs, random_seed=args.seed, codes=codes, progress=progress)
    except DifferentialFailure as failure:
        print(f"ORACLE FAILURE after {time.perf_counter() - started:.0f} s; minimal program:\n{failure}")
        return 1
    seconds = time.perf_counter() - started
    print(f"rules {', '.join(codes)}, seed {args.seed}")
    print(" | ".join(f"{c:>9}" for c in (*COLUMNS, "failures", "seconds")))
    print(" | ".join(f"{v:>9}" for v in (*(tally[c] for c in COLUMNS), 0, f"{seconds:.0f}")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
