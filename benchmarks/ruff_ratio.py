"""Cold scans against `ruff check --select ALL`, repeated: the median of each, and their ratio.

    PYTHONPATH=src python benchmarks/ruff_ratio.py TREE... [--rounds 3] [--jobs N] [--ruff PATH]

Each round, per tree, alternates: ruff (`--no-cache`), optpatch header-free
(`check TREE --no-headers`), optpatch in header mode on an empty cache (a
machine's first run), each optpatch run with a fresh OPTPATCH_CACHE_DIR and
the default jobs unless --jobs. Medians of wall and CPU seconds (children's
CPU, as `time` reports it). With --floor, a fourth run per tree: header-free
with the C++ rules alone (`--select OPT2`), so that libcst is never imported
and no Python rule runs, while every Python file is still parsed by `ast`
for the call graph: what this design costs before any Python rule, the
floor no change to the Python rules can go below. The single runs of cpp_headers.py's acceptance
move by 10% between two runs on a small tree; the median of a few does not.
A tree whose own ruff configuration this ruff cannot load (a rule code newer
than it: ruff exits 2 at once) is timed with `--isolated` instead, and the
table says so: a ruff that checked nothing is no baseline.
Prints a markdown table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command: list[str], env: dict | None = None) -> tuple[float, float]:
    before = os.times()
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def _ruff_command(ruff: str, tree: Path) -> list[str]:
    """`ruff check --select ALL` as the tree configures it, or `--isolated` where ruff cannot load that configuration
    (exit status 2: it checked nothing)."""
    command = [ruff, "check", "--select", "ALL", "--no-cache", "--quiet", str(tree)]
    probe = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return command if probe.returncode in (0, 1) else [*command[:2], "--isolated", *command[2:]]


def optpatch(tree: Path, jobs: int | None, *options: str) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="optpatch-ratio-") as cache:
        env = {**os.environ, "OPTPATCH_CACHE_DIR": cache}
        command = [sys.executable, "-m", "optpatch", "check", str(tree), "--no-cache", "--format", "json", *options]
        return timed(command + (["--jobs", str(jobs)] if jobs else []), env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int)
    parser.add_argument("--ruff", default="ruff")
    parser.add_argument("--floor", action="store_true", help="also time the C++ rules alone (no libcst, no Python rule)")
    args = parser.parse_args()
    kinds = ("ruff", "free", "first", "floor") if args.floor else ("ruff", "free", "first")
    runs: dict[Path, dict[str, list[tuple[float, float]]]] = {tree: {kind: [] for kind in kinds} for tree in args.trees}
    ruff = {tree: _ruff_command(args.ruff, tree) for tree in args.trees}
    load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for tree in args.trees:
            runs[tree]["ruff"].append(timed(ruff[tree]))
            runs[tree]["free"].append(optpatch(tree, args.jobs, "--no-headers"))
            runs[tree]["first"].append(optpatch(tree, args.jobs))
            if args.floor:
                runs[tree]["floor"].append(optpatch(tree, args.jobs, "--no-headers", "--select", "OPT2"))
    print(f"{args.rounds} rounds, load {load:.1f} -> {os.getloadavg()[0]:.1f}, jobs {args.jobs or 'default'}\n")
    floor = " C++ rules alone / ruff |" if args.floor else ""
    print(f"| tree | ruff | header-free | headers, first run | header-free / ruff | first run / ruff |{floor}")
    print("|---|---|---|---|---|---|" + ("---|" if args.floor else ""))
    for tree, kinds in runs.items():
        median = {kind: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for kind, r in kinds.items()}
        (rw, rc), (fw, fc), (hw, hc) = median["ruff"], median["free"], median["first"]
        name = f"{tree.name} (ruff `--isolated`)" if "--isolated" in ruff[tree] else tree.name
        print(f"| {name} | {rw:.2f} s ({rc:.2f} s CPU) | {fw:.2f} s ({fc:.2f} s CPU) | {hw:.2f} s ({hc:.2f} s CPU) "
              f"| {fw / rw:.2f}x wall, {fc / rc:.2f}x CPU | {hw / rw:.2f}x wall, {hc / rc:.2f}x CPU |", end="")
        if args.floor:
            lw, lc = median["floor"]
            print(f" {lw:.2f} s, {lw / rw:.2f}x wall, {lc / rc:.2f}x CPU |", end="")
        print()


if __name__ == "__main__":
    main()
