"""`optpatch validate`: optpatch's C++/CUDA and Python rules, proven on the
bundled KV-cache kernels.

1. Copy `kernels/` twice into a work folder: `original/` and `patched/`.
2. Rewrite `patched/` with optpatch's own rules, through the CLI as a user
   would run it (`python -m optpatch apply ... --write`).
3. Insist that the rewrite changed host code: validating an unchanged tree
   would prove nothing.
4. With a GPU: build both trees as torch extensions (in parallel, distinct
   names and build folders), check each bit for bit against the PyTorch
   reference over the size sweep with poisoned outputs, then time both in
   one process in alternating rounds on the same inputs and compare them;
   report the kernels' acceptance targets (their targets.json). Without
   one: compile both trees' CUDA sources with nvcc where the headers exist,
   check the reference against plain loops on the CPU in both trees, and
   list what was skipped.
5. Print the report; with `--plot FILE`, draw it (kernel_chart.py).
   `--from-report` prints and draws a saved report instead (kernel_report.py).

Builds and checks run in each tree's own process (`python -m
kernels.harness` with the tree as working folder), so each imports its own
copy of the Python code and a crash in one cannot take the other down.

Exit status: 0 when everything that ran passed, 4 when the rewrite failed
or changed no host code, a build failed, or any check failed; 2 when the
chart cannot be written. Timings are reported, never asserted.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import enum
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, TextIO

from optpatch.validation.kernel_changes import changed_kernels
from optpatch.validation.kernel_report import (
    EXIT_CHECK_FAILED as EXIT_CHECK_FAILED,  # re-exported: the exit status a failed check returns
    ComparisonRow,
    KernelReport,
    Reading,
    noise_bands,
    read_report,
    reading,
    report_payload,
)

EXIT_USAGE = 2  # a chart that cannot be written, as for any output (cli.py)

RULES_UNDER_TEST = "OPT201,OPT202,OPT203,OPT101"
# Rules whose fixes in the bundle are validate tier: on a GPU they are applied through `optpatch apply --validate
# --build`, with the harness's build and bit-exact check (under poisoned memory) as the commands.
VALIDATED_RULES = "OPT203"
VALIDATED_KERNELS = ("gather_cache_flash",)
CANDIDATE_EXTENSION = "optpatch_kernels_candidate"
# optpatch is on no package registry: the hint installs torch itself (any build; a GPU machine keeps its CUDA one).
TORCH_INSTALL_HINT = "pip install torch (a CUDA build on a GPU machine: https://pytorch.org/get-started/locally/)"
KERNELS_DIR_ENV = "OPTPATCH_KERNELS_DIR"
TARGETS_FILE = "targets.json"
HOST_CODE_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".h", ".hpp"})
VERSIONS = ("original", "patched")
LOG_TAIL_CHARS = 2000

# Rewrites a tree in place. The default runs optpatch's CLI; tests and dry
# runs pass their own.
Rewriter = Callable[[Path], None]


class RewriteFailed(Exception):
    """optpatch could not rewrite the copy; the message says why."""


class TargetsError(ValueError):
    """The kernels' targets.json cannot be read; the message names the file and the fault."""


class Bound(enum.Enum):
    """What a target asks of its row; the value is targets.json's key."""

    SPEEDUP_AT_LEAST = "speedup_at_least"
    PATCHED_BELOW_US = "patched_below_us"


@dataclasses.dataclass(frozen=True)
class Target:
    """An acceptance target of the bundled kernels: one row of the table and
    one bound on it, from the kernels' targets.json."""

    kernel: str
    shape: str
    measure: str
    bound: Bound
    limit: float

    def describe(self) -> str:
        wanted = (f"speedup >= {self.limit:g}x" if self.bound is Bound.SPEEDUP_AT_LEAST
                  else f"patched < {self.limit:g} us")
        return f"{self.kernel} {self.shape}, {self.measure}: {wanted}"

    def matches(self, row: ComparisonRow) -> bool:
        return (row.kernel, row.shape, row.measure) == (self.kernel, self.shape, self.measure)

    def judge(self, row: ComparisonRow) -> dict | None:
        """The target's entry in the report; None when the row lacks the value it bounds."""
        if self.bound is Bound.SPEEDUP_AT_LEAST:
            if row.speedup is None:
                return None
            return {"target": self.describe(), "value": round(row.speedup, 2), "met": row.speedup >= self.limit}
        if row.patched_us is None:
            return None
        return {"target": self.describe(), "value": round(row.patched_us, 1), "met": row.patched_us < self.limit}


def load_targets(kernels_dir: Path) -> list[Target]:
    """The targets in kernels_dir/targets.json; none when the file is absent
    (a kernels folder of one's own need not set any)."""
    path = kernels_dir / TARGETS_FILE
    if not path.exists():
        return []
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))["targets"]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise TargetsError(f'{path}: cannot be read as {{"targets": [...]}}: {error}') from None
    return [_target(path, number, entry) for number, entry in enumerate(entries, 1)]


def _target(path: Path, number: int, entry: object) -> Target:
    bounds = [bound for bound in Bound if isinstance(entry, dict) and bound.value in entry]
    keys_given = isinstance(entry, dict) and all(isinstance(entry.get(key), str) for key in ("kernel", "shape", "measure"))
    if not keys_given or len(bounds) != 1 or not _is_number(entry[bounds[0].value]):
        raise TargetsError(
            f"{path}: target {number}: give `kernel`, `shape` and `measure` (strings, as in the table) and exactly one "
            f"of {', '.join(f'`{bound.value}`' for bound in Bound)} (a number)")
    return Target(entry["kernel"], entry["shape"], entry["measure"], bounds[0], float(entry[bounds[0].value]))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def optpatch_rewriter(tree: Path) -> None:
    """Apply optpatch's C++/CUDA rules and zeros-to-empty to `tree` in place,
    through the CLI, leaving the patch in tree/optpatch.diff; on a GPU, then
    the validate-tier fixes of VALIDATED_RULES, leaving tree/optpatch-validated.diff."""
    _apply(tree, ["--select", RULES_UNDER_TEST, "-o", str(tree / "optpatch.diff")])
    if gpu_available():
        _apply(tree, validated_rewrite_options(tree))


def validated_rewrite_options(tree: Path) -> list[str]:
    """`optpatch apply` options that validate VALIDATED_RULES' fixes as a user would: `--build` rebuilds the
    copy's extension, `--validate` checks its VALIDATED_KERNELS bit for bit against the reference, with fresh
    allocations poisoned (the harness's own poisoning, and optpatch's)."""
    build_dir = tree.parent / "candidate-build"
    harness = f"{shlex.quote(sys.executable)} -m kernels.harness"
    common = f"--name {CANDIDATE_EXTENSION} --build-dir {shlex.quote(str(build_dir))}"
    kernels = " ".join(f"--kernel {kernel}" for kernel in VALIDATED_KERNELS)
    check_out = shlex.quote(str(tree.parent / "candidate-check.json"))
    return [
        "--select", VALIDATED_RULES, "-o", str(tree / "optpatch-validated.diff"),
        "--build", f"{harness} build {common}",
        "--validate", f"{harness} check {common} --out {check_out} {kernels}",
    ]


def _apply(tree: Path, options: list[str]) -> None:
    command = [sys.executable, "-m", "optpatch", "apply", str(tree), "--write", *options, "-q"]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        output = (completed.stdout + completed.stderr)[-LOG_TAIL_CHARS:]
        raise RewriteFailed(f"`{' '.join(command)}` exited {completed.returncode}:\n{output}")


def default_kernels_dir() -> Path:
    """$OPTPATCH_KERNELS_DIR, else the kernels inside the wheel, else `<repo>/kernels` of a source checkout."""
    if os.environ.get(KERNELS_DIR_ENV):
        return Path(os.environ[KERNELS_DIR_ENV])
    packaged = Path(__file__).parents[1] / "bundled_kernels"
    if packaged.is_dir():
        return packaged
    # A source checkout: src/optpatch/validation/kernels.py -> <repo>/kernels.
    return Path(__file__).resolve().parents[3] / "kernels"


def copy_kernels(kernels_dir: Path, tree: Path) -> None:
    """A fresh copy: a kept workdir may hold an earlier run's tree (its
    build folders sit beside it and are reused)."""
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(
        kernels_dir,
        tree / "kernels",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.so", "*.o"),
    )


def changed_files(original: Path, patched: Path) -> list[str]:
    """Files under kernels/ whose bytes differ between the trees (new and
    deleted files included), relative to the tree."""
    def contents(tree: Path) -> dict[str, bytes]:
        return {
            str(path.relative_to(tree)): path.read_bytes()
            for path in sorted((tree / "kernels").rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
        }

    before, after = contents(original), contents(patched)
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def gpu_available() -> bool:
    if not torch_installed():
        return False
    import torch

    return torch.cuda.is_available()


def log_tail(path: Path) -> str:
    return path.read_text(errors="replace")[-LOG_TAIL_CHARS:] if path.exists() else ""


def run_in_tree(tree: Path, module: str, arguments: list[str], log_path: Path, result_file: Path | None = None) -> int:
    """Run `python -m module` with the tree as working folder, so that
    `kernels` resolves to that tree's copy; output goes to log_path. A
    result_file left by an earlier run in a kept workdir is removed first,
    so that a crash cannot pass off old results as new."""
    if result_file is not None:
        result_file.unlink(missing_ok=True)
    with log_path.open("w") as log:
        completed = subprocess.run(
            [sys.executable, "-m", module, *arguments],
            cwd=tree, stdout=log, stderr=subprocess.STDOUT, check=False,
        )
    return completed.returncode


def run_in_both_trees(trees: dict[str, Path], task: Callable[[str, Path], object]) -> dict[str, object]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(trees)) as pool:
        futures = {version: pool.submit(task, version, tree) for version, tree in trees.items()}
        return {version: future.result() for version, future in futures.items()}


def progress(message: str) -> None:
    print(f"optpatch validate: {message}", file=sys.stderr, flush=True)


# --- without a GPU ------------------------------------------------------


def compile_with_nvcc(trees: dict[str, Path], workdir: Path, report: KernelReport) -> None:
    progress("compiling both trees' CUDA sources with nvcc")

    def compile_tree(version: str, tree: Path) -> dict:
        sources = [str(path.relative_to(tree)) for path in sorted((tree / "kernels" / "csrc").glob("*.cu"))]
        result_file = workdir / f"nvcc-{version}.json"
        arguments = ["compile", *sources, "--out-dir", str(workdir / f"nvcc-{version}"), "--json", str(result_file)]
        log_path = workdir / f"nvcc-{version}.log"
        run_in_tree(tree, "kernels.build_check", arguments, log_path, result_file)
        if not result_file.exists():
            return {"skipped": None, "results": [], "crash": log_tail(log_path)}
        return json.loads(result_file.read_text())

    outcomes = run_in_both_trees(trees, compile_tree)
    for version, outcome in outcomes.items():
        if outcome.get("crash") is not None:
            report.failures.append(f"{version}: the nvcc build check crashed:\n{outcome['crash']}")
        elif outcome["skipped"]:
            report.skipped.append(f"nvcc compile of the {version} tree: {outcome['skipped']}")
        for result in outcome["results"]:
            line = f"nvcc compile, {version}: {result['source']} ({result['seconds']:.0f} s)"
            if result["ok"]:
                report.passed.append(line)
            else:
                report.failures.append(f"{line} failed:\n{result['log']}")


def check_reference_on_cpu(trees: dict[str, Path], workdir: Path, report: KernelReport) -> None:
    progress("checking the PyTorch reference against plain loops on the CPU")

    def check_tree(version: str, tree: Path) -> dict | None:
        result_file = workdir / f"reference-{version}.json"
        log_path = workdir / f"reference-{version}.log"
        run_in_tree(tree, "kernels.harness", ["check-reference", "--out", str(result_file)], log_path, result_file)
        if not result_file.exists():
            report.failures.append(f"{version}: the reference check crashed:\n{log_tail(log_path)}")
            return None
        return json.loads(result_file.read_text())

    for version, results in run_in_both_trees(trees, check_tree).items():
        if results is None:
            continue
        checks = results["checks"]
        failed = [check for check in checks if not check["ok"]]
        report.failures += [
            f"{version}: reference {c['kernel']} {c['shape']} {c['dtype']}: {c['detail']}" for c in failed
        ]
        report.passed.append(f"reference vs loops on the CPU, {version}: {len(checks) - len(failed)}/{len(checks)} checks")


def check_kernels_without_gpu(trees: dict[str, Path], workdir: Path, report: KernelReport, nvcc: bool) -> None:
    report.skipped.append("GPU build, bit-exact checks and timings: no CUDA device is available")
    if nvcc:
        compile_with_nvcc(trees, workdir, report)
    else:
        report.skipped.append("nvcc compile: turned off by the caller")
    check_reference_on_cpu(trees, workdir, report)


# --- with a GPU ---------------------------------------------------------


def extension_name(version: str) -> str:
    return f"optpatch_kernels_{version}"


def build_both(trees: dict[str, Path], workdir: Path, report: KernelReport) -> bool:
    progress("building both extensions at once (about a minute)")

    def build(version: str, tree: Path) -> int:
        arguments = ["build", "--name", extension_name(version), "--build-dir", str(workdir / f"build-{version}")]
        return run_in_tree(tree, "kernels.harness", arguments, workdir / f"build-{version}.log")

    exit_codes = run_in_both_trees(trees, build)
    for version, exit_code in exit_codes.items():
        if exit_code != 0:
            report.failures.append(f"{version}: the extension build failed:\n{log_tail(workdir / f'build-{version}.log')}")
    return all(exit_code == 0 for exit_code in exit_codes.values())


def check_on_gpu(trees: dict[str, Path], workdir: Path, report: KernelReport) -> dict[str, dict]:
    """Each tree's build against the reference, in that tree's own process
    (its own Python code, as rewritten)."""
    results = {}
    for version, tree in trees.items():
        progress(f"checking the {version} build bit for bit")
        result_file, log_path = workdir / f"checks-{version}.json", workdir / f"checks-{version}.log"
        arguments = ["check", "--name", extension_name(version), "--build-dir", str(workdir / f"build-{version}"),
                     "--out", str(result_file)]
        run_in_tree(tree, "kernels.harness", arguments, log_path, result_file)
        if not result_file.exists():
            report.failures.append(f"{version}: the checks crashed:\n{log_tail(log_path)}")
            continue
        results[version] = json.loads(result_file.read_text())
    return results


def time_on_gpu(trees: dict[str, Path], workdir: Path, report: KernelReport) -> dict | None:
    """Both builds in one process, timed in alternating rounds."""
    progress("timing both builds in alternating rounds")
    result_file, log_path = workdir / "timings.json", workdir / "timings.log"
    arguments = ["time", "--out", str(result_file)]
    for version, tree in trees.items():
        arguments += ["--variant", version, extension_name(version), str(workdir / f"build-{version}"),
                      str(tree / "kernels")]
    run_in_tree(trees["original"], "kernels.harness", arguments, log_path, result_file)
    if not result_file.exists():
        report.failures.append(f"the timing run crashed:\n{log_tail(log_path)}")
        return None
    return json.loads(result_file.read_text())


def compare_versions(checks: dict[str, dict], timings: list[dict], report: KernelReport,
                     changed: dict[str, bool] | None = None) -> None:
    """One row per (kernel, shape, measure), with each build's median and
    quartiles; a shape is correct when every dtype passed in both versions.
    CHANGED (kernel_changes.changed_kernels) says which kernels' host code
    the rewrite changed; a kernel it does not name is not known either way."""
    correct_shapes: dict[tuple[str, str], bool] = {}
    for version, result in checks.items():
        for check in result["checks"]:
            key = (check["kernel"], check["shape"])
            correct_shapes[key] = correct_shapes.get(key, True) and check["ok"]
            if not check["ok"]:
                report.failures.append(
                    f"{version}: {check['kernel']} {check['shape']} {check['dtype']}: {check['detail']}")
        report.passed.append(f"{version}: {len(result['checks'])} bit-exact checks ran")
    by_measure: dict[tuple[str, str, str], dict[str, dict]] = {}
    for timing in timings:
        key = (timing["kernel"], timing["shape"], timing["measure"])
        by_measure.setdefault(key, {})[timing["variant"]] = timing
    both_checked = len(checks) == len(VERSIONS)
    changed = changed or {}
    for (kernel, shape, measure), by_version in by_measure.items():
        original, patched = by_version.get("original", {}), by_version.get("patched", {})
        before, after = original.get("microseconds"), patched.get("microseconds")
        speedup = before / after if before and after else None
        correct = both_checked and correct_shapes.get((kernel, shape), False)
        report.rows.append(ComparisonRow(
            kernel, shape, measure, before, after, speedup, correct,
            original.get("q1"), original.get("q3"), patched.get("q1"), patched.get("q3"), changed.get(kernel)))


def evaluate_targets(report: KernelReport, targets: list[Target]) -> None:
    """The kernels' acceptance targets, reported (timings are never a
    pass/fail check). Once there are timings, a target whose row or value is
    not among them is reported missed: targets.json names what was not measured."""
    if not report.rows:
        return
    for target in targets:
        rows = [row for row in report.rows if target.matches(row)]
        judged = [entry for entry in map(target.judge, rows) if entry is not None]
        report.targets += judged or [{"target": f"{target.describe()} (not measured)",
                                      "value": None, "met": False}]


def check_kernels_on_gpu(trees: dict[str, Path], workdir: Path, report: KernelReport, targets: list[Target]) -> None:
    if not build_both(trees, workdir, report):
        return
    checks = check_on_gpu(trees, workdir, report)
    timings = time_on_gpu(trees, workdir, report)
    if timings is not None:
        report.environment.update(timings["environment"])
        report.environment.pop("tree", None)
    timed = timings["timings"] if timings else []
    kernels = {timing["kernel"] for timing in timed}
    csrc = {version: tree / "kernels" / "csrc" for version, tree in trees.items()}
    changed = changed_kernels(csrc["original"], csrc["patched"], kernels)
    compare_versions(checks, timed, report, changed)
    evaluate_targets(report, targets)


# --- the command --------------------------------------------------------


def check_kernels(
    workdir: Path,
    kernels_dir: Path,
    rewriter: Rewriter,
    gpu: bool,
    nvcc: bool,
) -> KernelReport:
    report = KernelReport()
    if not torch_installed():
        report.failures.append(f"torch is not installed: {TORCH_INSTALL_HINT}")
        return report
    if not (kernels_dir / "csrc").is_dir():
        report.failures.append(f"{kernels_dir}: no bundled kernels here (set {KERNELS_DIR_ENV} to the kernels/ folder)")
        return report
    try:
        targets = load_targets(kernels_dir)
    except TargetsError as error:
        report.failures.append(str(error))
        return report
    trees = {version: workdir / version for version in VERSIONS}
    for tree in trees.values():
        copy_kernels(kernels_dir, tree)

    progress(f"rewriting a copy of {kernels_dir} with {RULES_UNDER_TEST}")
    try:
        rewriter(trees["patched"])
    except RewriteFailed as failure:
        report.failures.append(f"the rewrite failed: {failure}")
        return report
    report.changed_files = changed_files(trees["original"], trees["patched"])
    if not any(Path(name).suffix in HOST_CODE_SUFFIXES for name in report.changed_files):
        report.failures.append(f"the rewrite changed no C++/CUDA host code (changed: {report.changed_files or 'nothing'})")
        return report

    if gpu:
        check_kernels_on_gpu(trees, workdir, report, targets)
    else:
        check_kernels_without_gpu(trees, workdir, report, nvcc)
    return report


def _format_us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _with_spread(median: float | None, q1: float | None, q3: float | None) -> str:
    """`32.1 (31.5-33.0)`: the median and its interquartile range, when recorded."""
    if median is None or q1 is None or q3 is None:
        return _format_us(median)
    return f"{_format_us(median)} ({_format_us(q1)}-{_format_us(q3)})"


def _speedup_cell(row: ComparisonRow) -> str:
    if row.speedup is None:
        return "-"
    spread = row.speedup_range
    return f"{row.speedup:.2f}x" + ("" if spread is None else f" ({spread[0]:.2f}-{spread[1]:.2f})")


READING_STYLE = {Reading.FASTER: "green", Reading.SLOWER: "red", Reading.WITHIN_NOISE: "dim", Reading.UNCHANGED: "dim"}


def noise_lines(report: KernelReport) -> list[str]:
    """What the readings mean, and each measure's noise band, under the table."""
    bands = noise_bands(report.rows)
    lines = [f"noise of {measure}: {low:.2f}x-{high:.2f}x, the ratios of the kernels whose code is unchanged"
             for measure, (low, high) in bands.items()]
    if any(row.speedup_range is not None for row in report.rows):
        lines.append("in brackets: the interquartile range of each build's samples, and the ratio's range from them; a "
                     "ratio whose range contains 1.0, or inside its measure's noise, is within noise, not a difference")
    return lines


def print_text(report: KernelReport, file: TextIO | None = None) -> None:
    from rich.console import Console
    from rich.table import Table

    # Off a terminal rich would wrap the table at 80 columns; the spreads make it about 190 wide.
    on_terminal = file is None and sys.stdout.isatty()
    console = Console(file=file, width=None if on_terminal else 200)
    if report.environment:
        env = report.environment
        console.print(f"{env.get('device')}, torch {env.get('torch')}, CUDA {env.get('cuda')}, {env.get('date')}")
    if report.rows:
        table = Table(title="bundled kernels before and after optpatch (median and interquartile range, microseconds)")
        for column in ("kernel", "shape", "measure"):
            table.add_column(column)
        for column in ("original", "patched", "speedup"):
            table.add_column(column, justify="right")
        table.add_column("reading")
        table.add_column("correct")
        bands = noise_bands(report.rows)
        for row in report.rows:
            judged = reading(row, bands)
            table.add_row(row.kernel, row.shape, row.measure, _with_spread(row.original_us, row.original_q1, row.original_q3),
                          _with_spread(row.patched_us, row.patched_q1, row.patched_q3), _speedup_cell(row),
                          f"[{READING_STYLE[judged]}]{judged.value}[/]" if judged in READING_STYLE else judged.value,
                          "yes" if row.correct else "[red]NO[/red]")
        console.print(table)
        for line in noise_lines(report):
            console.print(line, markup=False, highlight=False)
    sections = (
        ("rewritten files", report.changed_files),
        ("passed", report.passed),
        ("targets", [f"{'met' if t['met'] else 'MISSED'}: {t['target']}" + ("" if t["value"] is None else f" ({t['value']})")
                     for t in report.targets]),
        ("skipped", report.skipped),
        ("failed", report.failures),
    )
    for title, lines in sections:
        if lines:
            console.print(f"[bold]{title}[/bold]")
            for line in lines:
                console.print(f"  {line}", markup=False, highlight=False)
    verdict = "FAILED" if report.failures else "ok"
    console.print(f"validate: {verdict} (exit {report.exit_code})", markup=False)


def print_json(report: KernelReport, file: TextIO | None = None) -> None:
    print(json.dumps(report_payload(report), indent=2), file=file or sys.stdout)


def publish(report: KernelReport, output_format: str, plot: Path | None) -> int:
    """Print the report; draw its chart to `plot` when given. The exit code:
    the report's, or 2 when the chart cannot be written."""
    (print_json if output_format == "json" else print_text)(report)
    if plot is None:
        return report.exit_code
    if not report.rows:
        progress(f"no chart written to {plot}: the report has no timings (they need a CUDA GPU)")
        return report.exit_code
    from optpatch.validation.kernel_chart import draw_chart

    try:
        draw_chart(report, plot)
    except OSError as error:
        progress(f"the chart cannot be written to {plot}: {error.strerror or error}")
        return EXIT_USAGE
    progress(f"chart written to {plot}")
    return report.exit_code


def replay_report(path: Path, output_format: str = "text", plot: Path | None = None) -> int:
    """`optpatch validate --from-report`: print (and plot) a saved report
    without running anything; its exit code is that of the run it records.
    Raises ReportError when the file is not such a report."""
    _check_output_format(output_format)
    return publish(read_report(path), output_format, plot)


def _check_output_format(output_format: str) -> None:
    if output_format not in ("text", "json"):
        raise ValueError(f"unknown output format {output_format!r}: use text or json")


def run_kernel_check(
    output_format: str = "text",
    workdir: Path | None = None,
    *,
    plot: Path | None = None,
    rewriter: Rewriter | None = None,
    kernels_dir: Path | None = None,
    gpu: bool | None = None,
    nvcc: bool = True,
) -> int:
    """Engine of `optpatch validate`; returns the exit code (0 or 4; 2 when
    the chart asked for with `plot` cannot be written).

    workdir keeps the copies, builds and logs (a temporary folder, removed
    afterwards, when None). The caller checks beforehand that a chart can
    be drawn (kernel_chart.require_matplotlib, chart_format). rewriter,
    kernels_dir, gpu (None: detect) and nvcc exist for tests and dry runs.
    """
    _check_output_format(output_format)
    rewriter = rewriter or optpatch_rewriter
    kernels_dir = kernels_dir or default_kernels_dir()
    gpu = gpu_available() if gpu is None else gpu
    with tempfile.TemporaryDirectory(prefix="optpatch-validate-") as scratch:
        root = Path(workdir) if workdir is not None else Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        report = check_kernels(root, kernels_dir, rewriter, gpu, nvcc)
    return publish(report, output_format, plot)
