"""How optpatch's cost grows with the size of one file and with the number of files (issue 21, section 4).

    python benchmarks/scaling.py [--src SRC]... [--sites 100,200,...] [--files 1,10,...] [--big-bytes N]
                                 [--bytes 500000,...] [--timeout S] [--repeat N] [--phases]
                                 [--skip sites,files,big,bytes,planner]

Four generated workloads, each run as `optpatch apply TREE --no-cache -o PATCH --format json` in a
fresh process, one run per row:

- sites: one file with one `torch.zeros` site in each of N small functions, every site a fix (the
  file of the issue: 100 sites, 600 lines);
- files: N small modules of three functions each, one of them with a site;
- big: one file of about `--big-bytes` bytes (default 2,000,000, under max-file-size's 2 MiB) with
  five sites, twice: of small functions like the sites file's, and of the classes, functions and
  training loops of benchmarks/synthetic_tree.py;
- bytes: one file of each size in `--bytes` (0.5, 1 and 2 MB) with five sites, of a module-level
  table of literal rows (issue 33, point 8), then of small functions: CPU per MB stays flat where
  cost is linear in bytes.

optpatch runs byte-compiled, as pip leaves it (an untimed first run fills a scratch
PYTHONPYCACHEPREFIX). Each row gives wall time, CPU time (user and system, of the process and its workers), and for
`sites` the CPU time each added site cost (from the row above): a linear cost keeps it flat. CPU
time is the steadier measure on a shared machine: the load average is printed beside the tables,
and `--repeat N` shows the run of least CPU time of N.
`--src DIR` (repeatable) runs another checkout's `src` too, say before a change, in the same
benchmark; a run past `--timeout` seconds is stopped and shown as `>`. `--phases` adds, for this
checkout, where the CPU time of the largest `sites` file goes: analysis, settling (the safety
net's parses included), the patch, and each reporter. A last table times the planner
(planner.plan_edits) alone on up to 100,000 fixes of one file. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from synthetic_tree import MODULE_CLASS, PLAIN_FUNCTION, TRAIN_LOOP

HERE = Path(__file__).resolve().parent
SITE = "\n\ndef f_{i}(n):\n    x = torch.zeros(n)\n    x.fill_(1)\n    return x\n"
TABLE_ROW = "    ({i}, {i}.5, 'name_{i}', \"label {i}\", -{i}),\n"
PLAIN = "\n\ndef g_{i}(x, scale=1.0):\n    y = x * scale + {i}\n    y = y.clamp(min=0)\n    return y.sum()\n"


def sites_file(count: int) -> str:
    """The issue's file: one site in each of COUNT small functions (six lines each)."""
    return "import torch\n" + "".join(SITE.format(i=i) for i in range(count))


def small_module(number: int) -> str:
    return "import torch\n" + PLAIN.format(i=number) + SITE.format(i=number) + PLAIN.format(i=number + 1)


def big_file(size: int, shape: str, sites: int = 5) -> str:
    """About SIZE bytes of code, with SITES sites spread evenly.

    SHAPE "small": small functions, as in the sites file; "synthetic": the
    classes, functions and training loops of benchmarks/synthetic_tree.py;
    "table": a module-level table of literal rows that nothing reads, then
    the sites' functions (a generated file of issue 33, point 8).
    """
    if shape == "table":
        rows = "".join(TABLE_ROW.format(i=i) for i in range(size // len(TABLE_ROW.format(i=10_000))))
        return "import torch\n\nTABLE = [\n" + rows + "]\n" + "".join(SITE.format(i=i) for i in range(sites))
    if shape == "small":
        blocks = [PLAIN.format(i=i) for i in range(size // len(PLAIN.format(i=10_000)))]
    else:
        templates = [PLAIN_FUNCTION.format(name="normalise_{i}"), MODULE_CLASS.format(name="Block{i}"),
                     TRAIN_LOOP.format(name="train_{i}")]
        count = 3 * size // sum(len(template) for template in templates)
        blocks = ["\n" + templates[i % 3].replace("{i}", str(i)) for i in range(count)]
    chosen = {len(blocks) * k // sites for k in range(sites)}
    return "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n" + "".join(
        SITE.format(i=i) if i in chosen else block for i, block in enumerate(blocks)
    )


@dataclass
class Run:
    wall: float
    cpu: float
    fixes: int | None  # None: stopped at the timeout
    error: str = ""


def run_optpatch(src: Path, tree: Path, timeout: float, jobs: int | None, repeat: int = 1) -> Run:
    """The best (by CPU time) of REPEAT runs of `optpatch apply` in fresh processes; a run past TIMEOUT ends them."""
    runs = []
    for _ in range(repeat):
        runs.append(_run_once(src, tree, timeout, jobs))
        if runs[-1].fixes is None:
            return runs[-1]
    return min(runs, key=lambda run: run.cpu)


def _run_once(src: Path, tree: Path, timeout: float, jobs: int | None) -> Run:
    """One `optpatch apply` in a fresh process: wall time, CPU time of it and its workers, fixes applied."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "optpatch", "apply", str(tree), "--no-cache", "-o", f"{scratch}/p.diff",
                   "--format", "json"] + (["-j", str(jobs)] if jobs else [])
        environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment)
        except subprocess.TimeoutExpired:
            return Run(time.perf_counter() - started, float("nan"), None)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        try:
            fixes = json.loads(done.stdout)["summary"]["written"]
        except (ValueError, KeyError):
            return Run(wall, cpu, 0, error=done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no report")
        return Run(wall, cpu, fixes)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cell(run: Run, timeout: float, measure: str) -> str:
    if run.fixes is None:
        return f"> {timeout:.0f} s"
    return f"{getattr(run, measure):.2f} s"


def sources(args) -> list[tuple[str, Path]]:
    named = [(str(path), Path(path).resolve()) for path in args.src]
    return named or [("this checkout", HERE.parent / "src")]


def sites_table(args, scratch: Path) -> None:
    print("\n### One file, one `torch.zeros` site in each of N small functions\n")
    srcs = sources(args)
    print("| sites | lines | bytes |" + "".join(f" wall ({name}) | CPU ({name}) | CPU per added site |" for name, _ in srcs))
    print("|" + "---:|" * (3 + 3 * len(srcs)))
    previous: dict[str, tuple[int, float]] = {}
    slopes: dict[str, dict[int, float]] = {name: {} for name, _ in srcs}
    for count in args.sites:
        text = sites_file(count)
        tree = write_tree(scratch / f"sites-{count}", {"big.py": text})
        line = f"| {count:,} | {text.count(chr(10)):,} | {len(text):,} |"
        for name, src in srcs:
            run = run_optpatch(src, tree, args.timeout, 1, args.repeat)
            slope = "-"
            if run.fixes is not None and name in previous:
                fewer, cpu = previous[name]
                slopes[name][count] = (run.cpu - cpu) / (count - fewer)
                slope = f"{1000 * slopes[name][count]:.2f} ms"
            line += f" {cell(run, args.timeout, 'wall')} | {cell(run, args.timeout, 'cpu')} | {slope} |"
            line += f" (error: {run.error})" if run.error else ""
            if run.fixes is not None:
                previous[name] = (count, run.cpu)
        print(line, flush=True)
    for name, by_count in slopes.items():
        first, last = min((c for c in by_count if c > 400), default=None), max(by_count, default=None)
        if first is not None and last is not None and last != first:
            print(f"\n{name}: CPU per added site from {last // 2:,} to {last:,} sites is "
                  f"{by_count[last] / by_count[first]:.2f}x that from {first // 2:,} to {first:,}")


def files_table(args, scratch: Path) -> None:
    print("\n### N small files (three functions, one site each), all cores\n")
    srcs = sources(args)
    print("| files | bytes |" + "".join(f" wall ({name}) | CPU ({name}) |" for name, _ in srcs))
    print("|" + "---:|" * (2 + 2 * len(srcs)))
    for count in args.files:
        files = {f"pkg{number // 100}/mod{number}.py": small_module(number) for number in range(count)}
        tree = write_tree(scratch / f"files-{count}", files)
        line = f"| {count:,} | {sum(len(text) for text in files.values()):,} |"
        for _, src in srcs:
            run = run_optpatch(src, tree, args.timeout, None, args.repeat)
            line += f" {cell(run, args.timeout, 'wall')} | {cell(run, args.timeout, 'cpu')} |"
        print(line, flush=True)


def big_table(args, scratch: Path) -> None:
    print(f"\n### One file of about {args.big_bytes:,} bytes, five fixes\n")
    srcs = sources(args)
    print("| code | bytes | lines | checkout | wall | CPU | fixes |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for shape, label in (("small", "small functions"), ("synthetic", "synthetic_tree.py's classes and functions")):
        text = big_file(args.big_bytes, shape)
        tree = write_tree(scratch / f"big-{shape}", {"big.py": text})
        for name, src in srcs:
            run = run_optpatch(src, tree, args.timeout, 1, args.repeat)
            fixes = run.fixes if run.fixes is not None else "-"
            print(f"| {label} | {len(text.encode()):,} | {text.count(chr(10)):,} | {name} | "
                  f"{cell(run, args.timeout, 'wall')} | {cell(run, args.timeout, 'cpu')} | {fixes} |", flush=True)


def bytes_table(args, scratch: Path) -> None:
    """Cost against bytes alone: files of each size in `--bytes`, five fixes each, of a module table and of functions."""
    print("\n### Cost against bytes: one file of each size, five fixes\n")
    srcs = sources(args)
    print("| code | bytes | lines | checkout | wall | CPU | CPU per MB | fixes |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for shape, label in (("table", "a module-level table"), ("small", "small functions")):
        for size in args.bytes:
            text = big_file(size, shape)
            tree = write_tree(scratch / f"bytes-{shape}-{size}", {"big.py": text})
            for name, src in srcs:
                run = run_optpatch(src, tree, args.timeout, 1, args.repeat)
                fixes = run.fixes if run.fixes is not None else "-"
                per_mb = f"{run.cpu / (len(text.encode()) / 1e6):.2f} s" if run.fixes is not None else "-"
                print(f"| {label} | {len(text.encode()):,} | {text.count(chr(10)):,} | {name} | "
                      f"{cell(run, args.timeout, 'wall')} | {cell(run, args.timeout, 'cpu')} | {per_mb} | {fixes} |",
                      flush=True)


def phases_table(args, scratch: Path) -> None:
    """Where the CPU time of the largest sites file goes, in this process, for this checkout."""
    sys.path.insert(0, str(HERE.parent / "src"))
    from rich.console import Console

    from optpatch import engine
    from optpatch.config import Settings
    from optpatch.patch import write_patch
    from optpatch.policy import FixPolicy
    from optpatch.reporters import machine_renderer
    from optpatch.reporters.text import render_text
    from optpatch.rule import load_rules

    count = max(args.sites)
    tree = write_tree(scratch / f"phases-{count}", {"big.py": sites_file(count)})
    spent: dict[str, float] = {}

    def timed(name: str, function):
        @functools.wraps(function)
        def wrapper(*positional, **named):
            started = time.process_time()
            try:
                return function(*positional, **named)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started

        return wrapper

    load_rules()
    engine.analyse_text = timed("analysis (parse, rules, suppressions)", engine.analyse_text)
    engine.settle = timed("settling (plan, apply, safety net, line blocks)", engine.settle)
    started = time.process_time()
    result = engine.run(tree, Settings(), FixPolicy(), jobs=1, use_cache=False)
    spent["the run, in all"] = time.process_time() - started
    steps = {
        "patch": lambda: write_patch(result.changes),
        "JSON report": lambda: machine_renderer("json")(result, None),
        "SARIF report": lambda: machine_renderer("sarif")(result),
        "markdown report": lambda: machine_renderer("markdown")(result),
        "text report": lambda: render_text(result, Console(file=open(os.devnull, "w"), width=120)),
    }
    for name, step in steps.items():
        started = time.process_time()
        step()
        spent[name] = time.process_time() - started
    print(f"\n### Where the CPU time goes: {count:,} sites, in one process\n")
    print("| step | CPU |")
    print("|---|---:|")
    for name, seconds in spent.items():
        print(f"| {name} | {seconds:.2f} s |")


def planner_table(args) -> None:
    """plan_edits on N fixes of one file, every tenth overlapping its neighbour: a sort, not a comparison of all pairs."""
    sys.path.insert(0, str(HERE.parent / "src"))
    from optpatch.model import Context, Edit, Finding, Fix, Impact, Tier, Verdict
    from optpatch.planner import plan_edits

    print("\n### The planner: N fixes in one file, one in ten overlapping the one before it\n")
    print("| fixes | CPU | per fix |")
    print("|---:|---:|---:|")
    for count in args.planner:
        findings = [
            Finding(code="OPT101", name="zeros-to-empty", path="f.py", line=i + 1, col=1, verdict=Verdict.FIX,
                    reason="", context=Context.ONCE, impact=Impact.LOW, impact_basis="",
                    fix=Fix(tier=Tier.SAFE, edits=(Edit(10 * i - (6 if i % 10 == 9 else 0), 10 * i + 5, "empty"),)))
            for i in range(count)
        ]
        started = time.process_time()
        plan_edits(findings, [None] * count, lambda finding: None)
        spent = time.process_time() - started
        print(f"| {count:,} | {spent:.3f} s | {1e6 * spent / count:.1f} us |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", action="append", default=[], help="an optpatch checkout's src directory (repeatable)")
    parser.add_argument("--sites", default="100,200,400,800,1600,3200")
    parser.add_argument("--files", default="1,10,100,1000,10000")
    parser.add_argument("--big-bytes", type=int, default=2_000_000)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; the one with the least CPU time is shown")
    parser.add_argument("--phases", action="store_true")
    parser.add_argument("--planner", default="1000,10000,100000", help="fix counts for the planner's table")
    parser.add_argument("--bytes", default="500000,1000000,2000000", help="file sizes for the bytes table")
    parser.add_argument("--skip", default="", help="comma-separated: sites, files, big, bytes, planner")
    args = parser.parse_args()
    args.sites = [int(n) for n in args.sites.split(",") if n]
    args.files = [int(n) for n in args.files.split(",") if n]
    args.planner = [int(n) for n in args.planner.split(",") if n]
    args.bytes = [int(n) for n in args.bytes.split(",") if n]
    skip = set(args.skip.split(","))
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{date.today()}; load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as directory:
        scratch = Path(directory)
        # As pip installs it: byte-compiled once (this VM sets PYTHONDONTWRITEBYTECODE), by an untimed run
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
        for _, src in sources(args):
            run_optpatch(src, write_tree(scratch / "warm-up", {"w.py": sites_file(3)}), args.timeout, 1)
        if "sites" not in skip:
            sites_table(args, scratch)
        if "big" not in skip:
            big_table(args, scratch)
        if "bytes" not in skip:
            bytes_table(args, scratch)
        if "files" not in skip:
            files_table(args, scratch)
        if "planner" not in skip:
            planner_table(args)
        if args.phases:
            phases_table(args, scratch)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
