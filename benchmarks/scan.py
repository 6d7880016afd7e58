"""How fast optpatch scans a repository, next to ruff and TorchFix on the same trees in the same run.

    python benchmarks/scan.py PATH... [--synthetic FILES] [--torchfix] [--markdown]

For each tree it runs, one after the other:

- optpatch cold: `optpatch check TREE --no-cache` (no result cache at all);
- optpatch first: the same with an empty cache directory (the cost of filling it);
- optpatch warm: again, every result from the cache;
- optpatch one file: `optpatch check FILE --no-cache` on the median-sized file
  that holds a rule's trigger word (what pre-commit runs for one changed
  file: a changed file is never in the cache), and on the median-sized file
  that holds none;
- with `--baseline SRC`, another optpatch checkout's `src` (say, before
  a change), cold;
- `ruff check --select ALL --no-cache` and, with `--torchfix`, `torchfix
  TREE`, when they are installed (`--tools-bin DIR` says where; by default
  PATH and this interpreter's bin directory); with `--torchfix`, also
  optpatch cold with the Python rules only, the job TorchFix does.

and prints files, lines, findings, wall time, files per second, the peak
resident memory of the whole process tree (workers included) and the ratios
that issue 8 sets targets for.

optpatch runs as installed: its modules byte-compiled, as `pip install`
leaves them, into a scratch `PYTHONPYCACHEPREFIX` that an untimed run on
each tree fills first (this VM sets PYTHONDONTWRITEBYTECODE=1, under which a
run from a checkout compiles optpatch's modules afresh every time).
`--from-source` keeps the environment as it is. `--synthetic N` adds a generated tree of N
files (benchmarks/synthetic_tree.py), so the benchmark runs without any
checkout. Timings are wall-clock of one run each (`--repeat` takes the best
of several); nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))

from optpatch.discovery import discover  # noqa: E402
from optpatch.rule_facts import rule_facts  # noqa: E402
from optpatch.source import read_source  # noqa: E402


@dataclass
class Measurement:
    tool: str
    files: int
    lines: int
    findings: str
    wall: float
    cpu: float  # user + system seconds of the whole process tree
    peak_rss: int  # bytes, the whole process tree
    returncode: int

    @property
    def files_per_second(self) -> float:
        return self.files / self.wall if self.wall else 0.0


@dataclass
class Tree:
    path: Path
    python_files: int
    cpp_files: int
    lines: int
    python_lines: int
    candidate_file: Path | None  # median-sized file with a trigger word
    plain_file: Path | None  # median-sized file without one

    @property
    def files(self) -> int:
        return self.python_files + self.cpp_files


def survey(path: Path) -> Tree:
    """What optpatch will look at in `path`, and the files the one-file runs use."""
    found = discover(path.resolve())
    facts = rule_facts()
    python = cpp = lines = python_lines = 0
    candidates, plain = [], []
    for absolute, rel in found.files:
        source = read_source(absolute, rel)
        if not hasattr(source, "text"):
            continue
        lines += source.text.count("\n")
        if source.language == "python":
            python += 1
            python_lines += source.text.count("\n")
        else:
            cpp += 1
        if source.language == "python":
            (candidates if any(f.wants(source) for f in facts) else plain).append((len(source.raw), absolute))
    return Tree(path, python, cpp, lines, python_lines, _median(candidates), _median(plain))


def _median(sized: list[tuple[int, Path]]) -> Path | None:
    return sorted(sized)[len(sized) // 2][1] if sized else None


class PeakMemory:
    """Samples the resident memory of a process and all its descendants until stopped."""

    def __init__(self, pid: int, interval: float = 0.02):
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PeakMemory":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(_rss(pid) for pid in _tree_of(self.pid)))
            self._stop.wait(self.interval)


def _tree_of(pid: int) -> list[int]:
    pids, stack = [], [pid]
    while stack:
        current = stack.pop()
        pids.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return pids


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def timed(command: list[str], env: dict | None = None, timeout: float | None = None) -> tuple:
    """Wall time, CPU time, peak RSS of the process tree, exit status and stdout of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    with PeakMemory(process.pid) as memory:
        try:
            output, _ = process.communicate(timeout=timeout)
            code = process.returncode
        except subprocess.TimeoutExpired:
            process.kill()
            output, code = b"", -9
            process.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, memory.peak, code, output.decode(errors="replace")


def best_of(repeat: int, command: list[str], env: dict | None = None, timeout: float | None = None):
    runs = [timed(command, env, timeout) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def optpatch_command(target: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "optpatch", "check", str(target), "--format", "json", "--quiet", *options]


def optpatch_findings(output: str) -> str:
    try:
        summary = json.loads(output)["summary"]
    except (ValueError, KeyError):
        return "?"
    sites = summary["written"] + summary["refused"] + summary["kept"] + summary["advice"]
    return f"{summary['written']} fixes / {sites} sites"


def measure_tree(tree: Tree, args, tools: dict[str, str | None], bytecode: str | None) -> list[Measurement]:
    base = dict(os.environ)
    if bytecode is not None:  # as installed: compiled once, read from then on
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = bytecode
    env = dict(base, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    select = ["--select", args.select] if args.select else []
    options = (["--jobs", str(args.jobs)] if args.jobs else []) + select
    rows = []
    if bytecode is not None:  # untimed: compiles what the runs import, and reads the tree once
        timed(optpatch_command(tree.path, "--no-cache", *options), env)
        if args.baseline:
            timed(optpatch_command(tree.path, "--no-cache", *options), dict(base, PYTHONPATH=str(args.baseline)))

    def add(tool: str, files: int, lines: int, run, findings: str) -> None:
        wall, cpu, peak, code, _ = run
        rows.append(Measurement(tool, files, lines, findings, wall, cpu, peak, code))

    if args.baseline:
        baseline_env = dict(base, PYTHONPATH=str(args.baseline))
        run = timed(optpatch_command(tree.path, "--no-cache", *options), baseline_env)
        add(f"optpatch before ({args.baseline_label})", tree.files, tree.lines, run, optpatch_findings(run[4]))
    run = best_of(args.repeat, optpatch_command(tree.path, "--no-cache", *options), env)
    add("optpatch cold (--no-cache)", tree.files, tree.lines, run, optpatch_findings(run[4]))
    with tempfile.TemporaryDirectory(prefix="optpatch-bench-cache-") as cache:
        cached_env = dict(env, OPTPATCH_CACHE_DIR=cache)
        run = timed(optpatch_command(tree.path, *options), cached_env)
        add("optpatch first run (fills cache)", tree.files, tree.lines, run, optpatch_findings(run[4]))
        run = best_of(args.repeat, optpatch_command(tree.path, *options), cached_env)
        add("optpatch warm (cache)", tree.files, tree.lines, run, optpatch_findings(run[4]))
    for label, path in (("candidate", tree.candidate_file), ("no candidate", tree.plain_file)):
        if path is None:
            continue
        lines = path.read_bytes().count(b"\n")
        run = best_of(args.repeat, optpatch_command(path, "--no-cache", *select), env)
        add(f"optpatch one file, {label} ({lines} lines)", 1, lines, run, optpatch_findings(run[4]))
    if tools["ruff"]:
        run = best_of(args.repeat, [tools["ruff"], "check", "--select", "ALL", "--no-cache", "--exit-zero",
                                    "--quiet", "--output-format", "concise", str(tree.path)])
        add("ruff check --select ALL", tree.python_files, tree.python_lines, run, f"{len(run[4].splitlines())} diagnostics")
    if tools["torchfix"] and args.torchfix:
        if not args.select:  # the job TorchFix does: the Python files, with the Python rules
            from optpatch.rule_facts import rule_facts

            python_rules = ",".join(rule.code for rule in rule_facts() if rule.language == "python")
            run = best_of(args.repeat, optpatch_command(tree.path, "--no-cache", "--select", python_rules, *options), env)
            add("optpatch cold, Python rules only", tree.python_files, tree.python_lines, run, optpatch_findings(run[4]))
        run = timed([tools["torchfix"], str(tree.path)], timeout=args.torchfix_timeout)
        findings = "timed out" if run[3] == -9 else f"{sum(': TOR' in line for line in run[4].splitlines())} diagnostics"
        add("torchfix", tree.python_files, tree.python_lines, run, findings)
    return rows


def find_tool(name: str, tools_bin: Path | None) -> str | None:
    for directory in (tools_bin, Path(sys.executable).parent):
        if directory is not None and (directory / name).is_file():
            return str(directory / name)
    return shutil.which(name)


def tool_version(path: str | None) -> str:
    if path is None:
        return "not installed"
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def ratios(rows: list[Measurement]) -> list[str]:
    by_tool = {row.tool.split(" (")[0]: row for row in rows}
    cold, warm, ruff = by_tool.get("optpatch cold"), by_tool.get("optpatch warm"), by_tool.get("ruff check --select ALL")
    torchfix = by_tool.get("torchfix")
    lines = []
    if cold and ruff:
        lines.append(f"cold / ruff = {cold.wall / ruff.wall:.1f}x wall, {cold.cpu / ruff.cpu:.1f}x CPU (target: within 15x)")
    if warm and ruff:
        lines.append(f"warm / ruff = {warm.wall / ruff.wall:.1f}x wall, {warm.cpu / ruff.cpu:.1f}x CPU (target: within 3x)")
    if cold and torchfix and torchfix.returncode != -9:
        lines.append(f"torchfix / cold = {torchfix.wall / cold.wall:.0f}x faster (target: at least 30x)")
        python_only = by_tool.get("optpatch cold, Python rules only")
        if python_only:
            lines.append(f"torchfix / cold with the Python rules only (the files TorchFix reads) = "
                         f"{torchfix.wall / python_only.wall:.0f}x faster")
    one_file = [row for row in rows if row.tool.startswith("optpatch one file")]
    for row in one_file:
        lines.append(f"{row.tool}: {row.wall:.2f} s (target: under 0.5 s)")
    peak = max(row.peak_rss for row in rows if row.tool.startswith("optpatch"))
    lines.append(f"optpatch peak RSS = {peak / 2**20:.0f} MiB (target: under 1024 MiB)")
    return lines


def print_table(tree: Tree, rows: list[Measurement], markdown: bool) -> None:
    title = f"{tree.path.name}: {tree.python_files} Python + {tree.cpp_files} C++/CUDA files, {tree.lines:,} lines"
    header = ("run", "files", "lines", "findings", "wall s", "CPU s", "files/s", "peak RSS MiB")
    cells = [
        (row.tool, str(row.files), f"{row.lines:,}", row.findings, f"{row.wall:.2f}", f"{row.cpu:.2f}",
         f"{row.files_per_second:,.0f}", f"{row.peak_rss / 2**20:.0f}")
        for row in rows
    ]
    if markdown:
        print(f"\n#### {title}\n")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for cell in cells:
            print("| " + " | ".join(cell) + " |")
        print()
        for line in ratios(rows):
            print(f"- {line}")
        return
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for cell in cells:
        print("  ".join(c.ljust(w) for c, w in zip(cell, widths)))
    for line in ratios(rows):
        print(f"  {line}")


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, {cpu}, load average {load:.1f} at start"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--synthetic", type=int, metavar="FILES", help="Also scan a generated tree of this many files.")
    parser.add_argument("--jobs", type=int, help="optpatch --jobs (default: all cores).")
    parser.add_argument("--select", metavar="CODES", help="optpatch --select (default: every rule).")
    parser.add_argument("--repeat", type=int, default=1, help="Best of this many runs (not for the first run or TorchFix).")
    parser.add_argument("--torchfix", action="store_true", help="Also run TorchFix (slow: minutes per tree).")
    parser.add_argument("--torchfix-timeout", type=float, default=900)
    parser.add_argument("--baseline", type=Path, metavar="SRC", help="Also time, cold, the optpatch whose `src` directory this is.")
    parser.add_argument("--baseline-label", default="baseline", help="What to call it in the table.")
    parser.add_argument("--tools-bin", type=Path, help="Directory holding the ruff and torchfix executables.")
    parser.add_argument("--markdown", action="store_true", help="Print Markdown tables (for docs/benchmarks.md).")
    parser.add_argument("--from-source", action="store_true",
                        help="Run optpatch with the environment as it is (no byte-code cache when PYTHONDONTWRITEBYTECODE is set).")
    args = parser.parse_args()
    if not args.paths and not args.synthetic:
        parser.error("give PATH... or --synthetic FILES")

    tools = {name: find_tool(name, args.tools_bin) for name in ("ruff", "torchfix")}
    from optpatch import __version__
    from importlib.metadata import version

    print(f"{date.today()}, {machine()}, Python {platform.python_version()}")
    print(f"optpatch {__version__}, libcst {version('libcst')}, "
          f"ruff: {tool_version(tools['ruff'])}, torchfix: {tool_version(tools['torchfix']) if args.torchfix else 'not run'}")
    print("optpatch: " + ("run with the environment as it is" if args.from_source else "byte-compiled, as installed"))
    with tempfile.TemporaryDirectory(prefix="optpatch-synthetic-") as scratch:
        bytecode = None if args.from_source else str(Path(scratch) / "bytecode")
        paths = list(args.paths)
        if args.synthetic:
            from synthetic_tree import write_tree

            synthetic = Path(scratch) / f"synthetic-{args.synthetic}"
            write_tree(synthetic, args.synthetic)
            paths.append(synthetic)
        for path in paths:
            tree = survey(path)
            print_table(tree, measure_tree(tree, args, tools, bytecode), args.markdown)


if __name__ == "__main__":
    main()
