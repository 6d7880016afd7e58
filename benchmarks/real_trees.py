"""Real-tree runs: optpatch on whole repositories, every promise of the patch checked.

For each TREE and each fix mode (the default tiers, then --unsafe-fixes) the
real CLI runs on a fresh git copy of the tree, and this script checks what
CONTRACT.md promises: the run ends with status 0 or 3, prints no traceback
(nothing at all on stderr: the report is JSON on stdout) and reports no
"internal error"; `git apply --check` takes the patch on the
pristine copy; every rewritten Python file still parses (`ast.parse`) and no
rewritten C++/CUDA file has a clang error the original lacked (the header-free
frontend's error comparison: without the project's headers nothing can be
compiled); a second run on the patched copy writes an empty patch.

    PYTHONPATH=src python benchmarks/real_trees.py /tmp/trees/DeepSpeed /tmp/trees/apex --jobs 2

Prints one table per tree, a column per mode. Exits 1 when any check fails.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.cpp_frontend import new_errors
from optpatch.discovery import discover
from optpatch.model import FileError
from optpatch.source import language_of, read_source

SRC = Path(__file__).resolve().parents[1] / "src"
MODES = {"default": [], "--unsafe-fixes": ["--unsafe-fixes"]}


@dataclass
class ModeRun:
    """What one mode's two runs on one tree showed."""

    status: int = 0
    files: int = 0
    languages: Counter = field(default_factory=Counter)  # "python" / "cpp" -> files discovery lists
    analysed: int = 0
    changed: int = 0
    findings: Counter = field(default_factory=Counter)  # (code, verdict, tier, applied) -> count
    errors: Counter = field(default_factory=Counter)  # kind of reason -> count
    internal_errors: list[str] = field(default_factory=list)
    traceback: bool = False
    stderr_lines: int = 0  # with --format json nothing belongs there
    rewrites_checked: int = 0  # rewritten files parsed (Python) or compared for new clang errors (C++/CUDA)
    unparsable: list[str] = field(default_factory=list)  # rewritten files that no longer parse, with why
    applies: bool = False
    second_run_empty: bool = False
    seconds: float = 0.0
    crashed: bool = False  # no JSON report came back: the process died or printed something else

    @property
    def passed(self) -> bool:
        return (
            not self.crashed and self.status in (0, 3) and not self.internal_errors and not self.traceback
            and not self.stderr_lines and not self.unparsable and self.applies and self.second_run_empty
        )


def error_kind(reason: str) -> str:
    """A reason without its particulars: `syntax error: ...` -> `syntax error`."""
    kind = re.split(r": | \(", reason, maxsplit=1)[0]
    if re.fullmatch(r"OPT\d+", kind):  # "OPT101: code nested too deeply to analyse"
        kind = reason.split(" (")[0]
    return kind


def optpatch_apply(tree: Path, patch: Path, mode_args: list[str], jobs: int) -> tuple[int, dict | None, str, float]:
    """Run the CLI once: (exit status, JSON report or None, what it printed on stderr, wall seconds)."""
    command = [sys.executable, "-m", "optpatch", "apply", str(tree), "-o", str(patch), "--format", "json", "-j", str(jobs)]
    command += mode_args + _no_cache_flag()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])))
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        report = None
    return completed.returncode, report, completed.stderr, seconds


def _no_cache_flag() -> list[str]:
    """Timings are of cold runs: pass --no-cache where this optpatch has a result cache."""
    help_text = subprocess.run(
        [sys.executable, "-m", "optpatch", "apply", "--help"], capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=str(SRC)),
    ).stdout
    return ["--no-cache"] if "--no-cache" in help_text else []


def git(copy: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=copy, capture_output=True, text=True)


def fresh_copy(tree: Path, where: Path) -> Path:
    """The tree in a new git repository, so that `git apply` sees exactly the pristine files."""
    shutil.rmtree(where, ignore_errors=True)
    shutil.copytree(tree, where, symlinks=True)
    git(where, "init", "-q")
    git(where, "add", "-A")
    return where


def rewrite_problem(rel: str, original: Path, rewritten: Path) -> str | None:
    """Why a rewritten file is worse than its original, or None."""
    if language_of(rel) == "python":
        try:
            ast.parse(original.read_bytes())
        except (SyntaxError, ValueError):
            return None  # nothing to keep: the original did not parse either
        try:
            ast.parse(rewritten.read_bytes())
        except (SyntaxError, ValueError) as error:
            return f"{rel}: the rewrite does not parse: {error}"
        return None
    before, after = read_source(original, rel), read_source(rewritten, rel)
    if isinstance(before, FileError) or isinstance(after, FileError):
        return f"{rel}: cannot be read back: {getattr(after, 'reason', '')}"
    added = new_errors(before, after)
    return f"{rel}: new clang errors: {'; '.join(added[:3])}" if added else None


def run_mode(tree: Path, mode_args: list[str], jobs: int, scratch: Path) -> ModeRun:
    outcome = ModeRun()
    copy = fresh_copy(tree, scratch / "tree")
    outcome.languages = Counter(language_of(rel) for _, rel in discover(copy).files)
    first_patch, second_patch = scratch / "first.diff", scratch / "second.diff"
    outcome.status, report, stderr, outcome.seconds = optpatch_apply(copy, first_patch, mode_args, jobs)
    outcome.traceback = "Traceback" in stderr
    outcome.stderr_lines = len(stderr.splitlines())
    if report is None:
        outcome.crashed = True
        outcome.internal_errors.append(f"no JSON report (exit status {outcome.status}): {stderr[-2000:]}")
        return outcome
    summary = report["summary"]
    outcome.analysed, outcome.changed = summary["files_analysed"], summary["files_changed"]
    outcome.files = summary["files_analysed"] + summary["files_failed"] + len(report["skipped"])
    outcome.findings = Counter((f["code"], f["verdict"], f["tier"], f["written"]) for f in report["findings"])
    outcome.errors = Counter(error_kind(e["reason"]) for e in report["errors"])
    outcome.internal_errors = [f"{e['path']}: {e['reason']}" for e in report["errors"] if "internal error" in e["reason"]]
    outcome.applies = git(copy, "apply", "--check", str(first_patch)).returncode == 0
    if not outcome.applies:
        return outcome
    git(copy, "apply", str(first_patch))
    changed = [rel for rel in git(copy, "diff", "--name-only", "-z").stdout.split("\0") if rel]
    outcome.rewrites_checked = len(changed)
    outcome.unparsable = [p for rel in changed if (p := rewrite_problem(rel, tree / rel, copy / rel))]
    status, _, stderr, _ = optpatch_apply(copy, second_patch, mode_args, jobs)
    outcome.traceback |= "Traceback" in stderr
    outcome.stderr_lines += len(stderr.splitlines())
    outcome.second_run_empty = status in (0, 3) and second_patch.exists() and second_patch.stat().st_size == 0
    return outcome


def tree_commit(tree: Path) -> str:
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() if head.returncode == 0 else "not a git tree"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def print_table(tree: Path, runs: dict[str, ModeRun]) -> None:
    print(f"\n{tree.name}  ({tree}, {tree_commit(tree)})")
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, value) -> None:
        rows.append((label, [str(value(run)) for run in runs.values()]))

    row("files", lambda r: r.files)
    row("  Python", lambda r: r.languages["python"])
    row("  C++/CUDA", lambda r: r.languages["cpp"])
    row("  analysed", lambda r: r.analysed)
    row("  rewritten", lambda r: r.changed)
    for code, verdict, tier, applied in sorted({k for r in runs.values() for k in r.findings}, key=str):
        label = f"{code} {verdict}" + (f" {tier}" if tier else "") + (" applied" if applied else "")
        row("  " + label, lambda r, key=(code, verdict, tier, applied): r.findings[key])
    for kind in sorted({k for r in runs.values() for k in r.errors}):
        row(f"  error: {kind}", lambda r, kind=kind: r.errors[kind])
    row("exit status", lambda r: r.status)
    row("crashed (no report, or a status not 0/3)", lambda r: yes_no(r.crashed or r.status not in (0, 3)))
    row("internal errors", lambda r: len(r.internal_errors))
    row("traceback printed", lambda r: yes_no(r.traceback))
    row("lines on stderr", lambda r: r.stderr_lines)
    row("rewrites checked", lambda r: r.rewrites_checked)
    row("rewrites that no longer parse", lambda r: len(r.unparsable))
    row("git apply --check", lambda r: yes_no(r.applies))
    row("second run empty", lambda r: yes_no(r.second_run_empty))
    row("wall time (s)", lambda r: f"{r.seconds:.1f}")
    width = max(len(label) for label, _ in rows) + 2
    print(" " * width + "".join(f"{mode:>16}" for mode in runs))
    for label, values in rows:
        print(f"{label:<{width}}" + "".join(f"{value:>16}" for value in values))
    for mode, run in runs.items():
        for problem in run.internal_errors + run.unparsable:
            print(f"  [{mode}] {problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path, help="directories to scan (left untouched: each run uses a copy)")
    parser.add_argument("--jobs", type=int, default=1, help="optpatch --jobs (default 1)")
    args = parser.parse_args()
    failed = False
    for tree in args.trees:
        tree = tree.resolve()
        runs = {}
        for mode, mode_args in MODES.items():
            with tempfile.TemporaryDirectory(prefix="optpatch-real-tree-") as scratch:
                runs[mode] = run_mode(tree, mode_args, args.jobs, Path(scratch))
        print_table(tree, runs)
        failed |= not all(run.passed for run in runs.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
