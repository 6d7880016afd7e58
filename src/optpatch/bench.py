"""`optpatch bench CMD`: the rounds, the metric and the statistics.

bench_trees.py makes the trees (the original and each patched version, as
`apply` would patch them); this module runs the user's command in them and
says what the difference is worth:

1. Each round runs CMD once in every tree, the order reversed every other
   round (original, patched; patched, original; ...: ABBA), so that a drift
   of the machine (clocks warming up, a neighbour's load) falls on every
   tree alike. `warmup` rounds come first and are discarded.
2. A run's value is its wall time, or the number the metric's regular
   expression captures in the run's output (its last match: a command that
   prints a running figure ends with its final one).
3. Each tree's values give its median; the speedup is the ratio of the
   medians, oriented so that above 1.0 means the patch is better. Its 95%
   interval is scipy's bootstrap (percentile method, the two trees'
   values resampled independently, a fixed seed so that one set of values
   gives one interval). The patch made a difference when the interval
   excludes 1.0; otherwise the difference is within the run's noise.

A run that fails (exit status, timeout, no metric in its output) stops the
benchmark: no result is claimed from a tree that did not run.
"""

from __future__ import annotations

import enum
import os
import re
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from optpatch.config import Settings
from optpatch.policy import FixPolicy, fix_id
from optpatch.results import FileChange, RunResult
from optpatch.validation.commands import CommandRun, run_command
from optpatch.validation.fix_choice import ChosenFixes

MIN_ROUNDS = 5  # below it a bootstrap of medians has too few distinct resamples to mean anything (cli.py's --rounds)
CONFIDENCE = 0.95
RESAMPLES = 9999
SEED = 20261127  # one set of values gives one interval, run after run


class Direction(enum.Enum):
    LOWER_IS_BETTER = "lower"  # times: seconds, ms/step
    HIGHER_IS_BETTER = "higher"  # rates: tokens/s, samples/s


@dataclass(frozen=True)
class Metric:
    """What one run of CMD yields: its wall time (pattern None) or the number PATTERN's first group captures."""

    pattern: re.Pattern | None = None
    direction: Direction = Direction.LOWER_IS_BETTER

    @classmethod
    def parse(cls, regex: str | None, higher_is_better: bool) -> "Metric":
        """The metric of --metric REGEX and --higher-is-better; ValueError says what is wrong with REGEX."""
        direction = Direction.HIGHER_IS_BETTER if higher_is_better else Direction.LOWER_IS_BETTER
        if regex is None:
            if higher_is_better:
                raise ValueError("--higher-is-better needs --metric REGEX: wall time is lower-is-better")
            return cls(None, direction)
        try:
            pattern = re.compile(regex, re.MULTILINE)
        except re.error as error:
            raise ValueError(f"--metric {regex!r} is not a regular expression: {error}") from None
        if pattern.groups < 1:
            raise ValueError(f"--metric {regex!r} has no capture group: put the number in parentheses, "
                             r"e.g. 'tokens/s: ([0-9.]+)'")
        return cls(pattern, direction)

    def describe(self) -> str:
        better = "higher" if self.direction is Direction.HIGHER_IS_BETTER else "lower"
        what = "wall time, seconds" if self.pattern is None else f"the number `{self.pattern.pattern}` captures"
        return f"{what} ({better} is better)"

    def value(self, run: CommandRun, output: str) -> float:
        """The run's value; MetricMissing when the output holds no number the pattern captures."""
        if self.pattern is None:
            return run.seconds
        matches = list(self.pattern.finditer(output))
        if not matches:
            raise MetricMissing(f"no line of the output matches --metric `{self.pattern.pattern}`")
        text = matches[-1].group(1)
        try:
            number = float(text.replace(",", ""))
        except ValueError:
            raise MetricMissing(f"--metric `{self.pattern.pattern}` captured {text!r}, which is not a number") from None
        if not number > 0:
            raise MetricMissing(f"--metric `{self.pattern.pattern}` captured {text!r}: a ratio needs a positive number")
        return number


class MetricMissing(Exception):
    """A run's output did not give the metric; the message says how."""


# -- the rounds -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A tree CMD runs in: its label in the report, and the folder CMD starts in."""

    label: str
    folder: Path


@dataclass(frozen=True)
class Schedule:
    """How many rounds: `rounds` (at most, when `time_s` is set), or as many as fit in `time_s` seconds."""

    warmup: int = 1
    rounds: int | None = 10
    time_s: float | None = None
    min_rounds: int = MIN_ROUNDS

    def more(self, done: int, elapsed: float) -> bool:
        if self.rounds is not None and done >= self.rounds:
            return False
        if self.time_s is None:
            return True
        return done < self.min_rounds or elapsed < self.time_s


class RunFailed(Exception):
    """CMD (or the build) failed in a tree; no result is claimed."""

    def __init__(self, tree: Tree, run: CommandRun, why: str):
        super().__init__(why)
        self.tree = tree
        self.run = run
        self.why = why


@dataclass(frozen=True)
class CommandRunner:
    """Runs one command line in a tree, as --validate runs its tests: its own process group, output to a log."""

    command: str
    env_for: Callable[[Tree], dict[str, str]]
    logs: Path
    timeout_s: float

    def run(self, tree: Tree, label: str) -> tuple[CommandRun, str]:
        log = self.logs / f"{_slug(tree.label)}-{_slug(label)}.log"
        run = run_command(self.command, tree.folder, self.env_for(tree), self.timeout_s, log, f"{tree.label}, {label}", None)
        if not run.passed:
            raise RunFailed(tree, run, f"`{self.command}` {_describe(run)} in the {tree.label} tree ({label})")
        return run, log.read_text(encoding="utf-8", errors="replace")


def _describe(run: CommandRun) -> str:
    if run.timed_out:
        return f"timed out after {run.timeout_s:g} s (--timeout)"
    return run.describe()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


Progress = Callable[[str], None]


def run_rounds(trees: Sequence[Tree], runner: CommandRunner, metric: Metric, schedule: Schedule,
               progress: Progress) -> dict[str, list[float]]:
    """Every tree's values, one a round, after the warm-up rounds; RunFailed stops it."""
    for number in range(1, schedule.warmup + 1):
        for tree in _round_order(trees, number - 1):
            _measure(runner, tree, f"warm-up {number}", metric)  # a warm-up run without the metric fails now
        progress(f"bench: warm-up round {number} of {schedule.warmup} done")
    values: dict[str, list[float]] = {tree.label: [] for tree in trees}
    started, done = time.monotonic(), 0
    while schedule.more(done, time.monotonic() - started):
        for tree in _round_order(trees, done):
            values[tree.label].append(_measure(runner, tree, f"round {done + 1}", metric))
        done += 1
        latest = ", ".join(f"{label} {values[label][-1]:.4g}" for label in values)
        progress(f"bench: round {done}: {latest}")
    return values


def _round_order(trees: Sequence[Tree], index: int) -> list[Tree]:
    """Round 0: A B; round 1: B A; ...: each tree runs first as often as last."""
    return list(trees) if index % 2 == 0 else list(reversed(trees))


def _measure(runner: CommandRunner, tree: Tree, label: str, metric: Metric) -> float:
    run, output = runner.run(tree, label)
    try:
        return metric.value(run, output)
    except MetricMissing as missing:
        raise RunFailed(tree, run, f"{missing} (the {tree.label} tree, {label})") from None


# -- the statistics ---------------------------------------------------------------------------


class Difference(enum.StrEnum):
    """What the interval says; only the first two are differences."""

    FASTER = "faster"
    SLOWER = "slower"
    NOT_SIGNIFICANT = "not significant"


@dataclass(frozen=True)
class Comparison:
    """A patched tree against the original: the speedup (above 1.0: the patch is faster) and its interval."""

    label: str
    original_median: float
    patched_median: float
    speedup: float
    low: float
    high: float
    rounds: int

    @property
    def difference(self) -> Difference:
        if self.low > 1.0:
            return Difference.FASTER
        if self.high < 1.0:
            return Difference.SLOWER
        return Difference.NOT_SIGNIFICANT

    @property
    def excludes_one(self) -> bool:
        return self.difference is not Difference.NOT_SIGNIFICANT


def compare(label: str, original: Sequence[float], patched: Sequence[float], direction: Direction) -> Comparison:
    """The speedup of PATCHED over ORIGINAL with its bootstrap interval (CONFIDENCE, RESAMPLES, SEED)."""
    import numpy as np
    from scipy.stats import bootstrap

    def speedup(before, after, axis=-1):
        ratio = np.median(before, axis=axis) / np.median(after, axis=axis)
        return ratio if direction is Direction.LOWER_IS_BETTER else 1.0 / ratio

    before, after = np.asarray(original, dtype=float), np.asarray(patched, dtype=float)
    result = bootstrap((before, after), speedup, vectorized=True, paired=False, confidence_level=CONFIDENCE,
                       n_resamples=RESAMPLES, method="percentile", rng=np.random.default_rng(SEED))
    interval = result.confidence_interval
    return Comparison(label, statistics.median(original), statistics.median(patched), float(speedup(before, after)),
                      float(interval.low), float(interval.high), min(len(original), len(patched)))


def statistics_missing() -> str | None:
    """Why the interval cannot be computed here (scipy missing), or None."""
    import importlib.util

    if importlib.util.find_spec("scipy") is None:  # found, not imported: a usage error must not wait a second for scipy
        return "optpatch bench needs scipy for its confidence interval; install it with: pip install 'optpatch[bench]'"
    return None


# -- the whole benchmark ----------------------------------------------------------------------

ORIGINAL = "original"


@dataclass(frozen=True)
class Variant:
    """A patched version to bench: its label ("patched", or a rule's code), the files it rewrites, its fix count."""

    label: str
    changes: tuple[FileChange, ...]  # what the tree holds beyond the original
    fixes: int


def variants_of(result: RunResult, per_rule: bool, settings: Settings,
                rerun: Callable[[FixPolicy], RunResult]) -> list[Variant]:
    """RESULT's patch as the "patched" variant; with PER_RULE and two rules or more with fixes, one variant per rule.

    A rule's tree holds exactly the fixes of that rule RESULT applied: the
    run again (RERUN, with those fixes chosen), so that fixes applied over
    several passes come out as a normal run would write them.
    """
    applied = [finding for finding, decision in result.decided if decision.accepted]
    variants = [Variant("patched", tuple(result.changes), len(applied))]
    codes = sorted({finding.code for finding in applied})
    if not per_rule or len(codes) < 2:
        return variants
    for code in codes:
        chosen = frozenset(fix_id(finding) for finding in applied if finding.code == code)
        alone = rerun(ChosenFixes(unsafe_fixes=settings.unsafe_fixes, tiers=settings.tiers, chosen=chosen))
        variants.append(Variant(code, tuple(alone.changes), sum(decision.accepted for _, decision in alone.decided)))
    return variants


@dataclass
class BenchReport:
    """Everything `optpatch bench` measured, for the text, JSON and chart reports."""

    command: str
    repo: str
    metric: Metric
    schedule: Schedule
    variants: list[Variant]
    build_command: str | None = None
    values: dict[str, list[float]] | None = None
    comparisons: list[Comparison] | None = None
    failure: RunFailed | None = None
    seconds: float = 0.0

    @property
    def identical(self) -> bool:
        """No variant changes a file: the run compares the original with itself (an A/A run: pure noise)."""
        return not any(variant.changes for variant in self.variants)


def run_bench(repo: Path, report: BenchReport, timeout_s: float, progress: Progress) -> BenchReport:
    """Make the trees, build them, run the rounds and compare each variant with the original; the trees are removed on any exit."""
    from optpatch.bench_trees import BenchTrees

    started = time.monotonic()
    environment = dict(os.environ)
    with BenchTrees(repo) as made:
        progress(f"bench: making {1 + len(report.variants)} trees in {made.base}")
        trees = [Tree(ORIGINAL, made.add(ORIGINAL, []))]
        trees += [Tree(variant.label, made.add(_slug(variant.label), list(variant.changes))) for variant in report.variants]

        def env_for(tree: Tree) -> dict[str, str]:
            own = dict(environment)
            if own.get("PYTHONPATH"):
                own["PYTHONPATH"] = made.rewrite_path(own["PYTHONPATH"], tree.folder)
            return own

        try:
            if report.build_command:
                builder = CommandRunner(report.build_command, env_for, made.logs, timeout_s)
                for tree in trees:
                    progress(f"bench: building the {tree.label} tree")
                    builder.run(tree, "build")
            runner = CommandRunner(report.command, env_for, made.logs, timeout_s)
            report.values = run_rounds(trees, runner, report.metric, report.schedule, progress)
        except RunFailed as failure:
            report.failure = failure
            report.seconds = time.monotonic() - started
            return report
    original = report.values[ORIGINAL]
    report.comparisons = [compare(tree.label, original, report.values[tree.label], report.metric.direction)
                          for tree in trees[1:]]
    report.seconds = time.monotonic() - started
    return report
