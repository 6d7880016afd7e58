"""The stages of `optpatch bench` in-process: the metric, the rounds' order, the trees, the statistics, the exit status."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from bench_repos import OPT101_SITE, git_repo

from optpatch import bench
from optpatch.bench import (
    BenchReport,
    Comparison,
    Difference,
    Direction,
    Metric,
    MetricMissing,
    Schedule,
    Tree,
    Variant,
    compare,
    run_bench,
)
from optpatch.bench_report import exit_status, render_text
from optpatch.bench_trees import BenchTrees
from optpatch.results import FileChange
from optpatch.validation.commands import CommandRun


def command_run(seconds: float = 1.0) -> CommandRun:
    return CommandRun("patched, round 1", None, 0, False, seconds, 60.0, "")


@pytest.mark.parametrize(("regex", "higher", "says"), [
    ("tokens/s", False, "has no capture group"),
    ("([", False, "is not a regular expression"),
    (None, True, "needs --metric"),
])
def test_a_bad_metric_says_what_is_wrong(regex, higher, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        Metric.parse(regex, higher)


def test_the_metric_is_the_last_match_of_the_first_group_and_wall_time_by_default():
    metric = Metric.parse(r"([\d,.]+) tokens/s", True)
    output = "warm: 12 tokens/s\nstep 2: 1,234.5 tokens/s\ndone\n"
    assert metric.value(command_run(), output) == 1234.5
    assert metric.direction is Direction.HIGHER_IS_BETTER
    assert Metric.parse(None, False).value(command_run(2.5), "anything") == 2.5


@pytest.mark.parametrize(("output", "says"), [("no figure\n", "no line of the output matches"),
                                               ("0 tokens/s\n", "a ratio needs a positive number")])
def test_an_output_without_a_usable_number_is_missing_the_metric(output, says):
    with pytest.raises(MetricMissing, match=says):
        Metric.parse(r"(\S+) tokens/s", True).value(command_run(), output)


class RecordingRunner:
    """Stands in for CommandRunner: records which tree ran, and prints a metric per tree."""

    def __init__(self):
        self.order: list[str] = []

    def run(self, tree: Tree, label: str):
        self.order.append(tree.label)
        return command_run(), f"v: {10 if tree.label == 'A' else 20}\n"


def test_rounds_alternate_abba_after_discarded_warm_up_rounds():
    runner = RecordingRunner()
    trees = [Tree("A", Path(".")), Tree("B", Path("."))]
    values = bench.run_rounds(trees, runner, Metric.parse(r"v: (\d+)", False), Schedule(warmup=1, rounds=3), lambda _: None)
    assert runner.order == ["A", "B", "A", "B", "B", "A", "A", "B"]  # warm-up A B, then A B, B A, A B
    assert values == {"A": [10.0] * 3, "B": [20.0] * 3}


def test_a_time_budget_stops_after_it_has_passed_but_never_below_five_rounds():
    assert Schedule(rounds=None, time_s=0.001).more(4, elapsed=5.0)
    assert not Schedule(rounds=None, time_s=0.001).more(5, elapsed=5.0)
    assert Schedule(rounds=None, time_s=60).more(50, elapsed=1.0)
    assert not Schedule(rounds=4, time_s=60).more(4, elapsed=1.0)


def test_the_interval_is_the_bootstrap_of_the_ratio_of_medians_oriented_so_above_one_is_faster():
    slow, fast = [2.0, 2.1, 1.9, 2.05, 1.95], [1.0, 1.05, 0.95, 1.02, 0.98]
    lower = compare("patched", slow, fast, Direction.LOWER_IS_BETTER)
    assert lower.speedup == pytest.approx(2.0) and 1.0 < lower.low <= 2.0 <= lower.high
    assert lower.difference is Difference.FASTER and lower.excludes_one
    higher = compare("patched", slow, fast, Direction.HIGHER_IS_BETTER)  # the patched rate is half the original's
    assert higher.speedup == pytest.approx(0.5) and higher.difference is Difference.SLOWER
    same = compare("patched", slow, list(reversed(slow)), Direction.LOWER_IS_BETTER)
    assert same.low < 1.0 < same.high and same.difference is Difference.NOT_SIGNIFICANT
    assert compare("patched", slow, fast, Direction.LOWER_IS_BETTER) == lower  # one set of values, one interval


def report_with(comparison: Comparison | None) -> BenchReport:
    report = BenchReport("true", "repo", Metric(), Schedule(), [Variant("patched", (), 1)])
    if comparison is not None:
        report.values = {"original": [1.0, 1.0], "patched": [1.0, 1.0]}
        report.comparisons = [comparison]
    return report


def test_require_speedup_is_met_only_when_the_whole_interval_is_above_it():
    report = report_with(Comparison("patched", 1.2, 1.0, 1.2, 1.12, 1.3, 10))
    assert exit_status(report, None) == 0
    assert exit_status(report, 1.1) == 0
    assert exit_status(report, 1.15) == 1
    assert "--require-speedup 1.15: NOT met" in render_text(report, 1.15)


def tree_repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE, "gone.txt": "x\n"})


def test_the_trees_hold_the_working_tree_and_the_changes_and_are_removed(tmp_path):
    repo = tree_repo(tmp_path)
    (repo / "data.txt").write_text("untracked\n")
    (repo / "gone.txt").unlink()
    (repo / "lib" / "alloc.py").write_text(OPT101_SITE + "# edited\n")
    with BenchTrees(repo) as trees:
        original = trees.add("original", [])
        patched = trees.add("patched", [FileChange("lib/alloc.py", b"", b"patched\n", ())])
        assert (original / "data.txt").read_text() == "untracked\n" and not (original / "gone.txt").exists()
        assert (original / "lib" / "alloc.py").read_text().endswith("# edited\n")
        assert (patched / "lib" / "alloc.py").read_text() == "patched\n"
        assert (original / ".git").exists()  # a repository: setuptools-scm and git describe work in a tree
        assert trees.rewrite_path(f"{repo / 'lib'}:/elsewhere", patched) == f"{patched / 'lib'}:/elsewhere"
        base = trees.base
    assert not base.exists()
    assert (repo / "lib" / "alloc.py").read_text().endswith("# edited\n")


@pytest.mark.parametrize("git_init", [False, True])
def test_a_folder_with_no_commit_to_clone_is_copied_whole(tmp_path, git_init):
    plain = tmp_path / "plain"
    (plain / "lib").mkdir(parents=True)
    (plain / "lib" / "alloc.py").write_text(OPT101_SITE)
    (plain / "lib" / "alias.py").symlink_to(plain / "lib" / "alloc.py")
    if git_init:  # a repository without a commit: nothing to clone either
        subprocess.run(["git", "init", "-q"], cwd=plain, check=True)
    with BenchTrees(plain) as trees:
        copy = trees.add("original", [])
        assert (copy / "lib" / "alloc.py").read_text() == OPT101_SITE
        assert (copy / "lib" / "alias.py").resolve() == copy / "lib" / "alloc.py"  # not a way back into REPO


@pytest.mark.parametrize(("build", "command", "status", "where"), [
    ("exit 7", "true", 2, "original"),
    ("true", "echo broken; exit 3", 2, "original"),
    ("test ! -e lib/patched", "true", 4, "patched"),
])
def test_a_failing_build_or_command_claims_no_result(tmp_path, build, command, status, where):
    repo = tree_repo(tmp_path)
    variant = Variant("patched", (FileChange("lib/patched", b"", b"x", ()),), 1)
    report = BenchReport(command, str(repo), Metric(), Schedule(warmup=0, rounds=2), [variant], build)
    run_bench(repo, report, 60.0, lambda _: None)
    assert report.failure is not None and report.failure.tree.label == where
    assert report.comparisons is None and exit_status(report, None) == status
    text = render_text(report)
    assert "No result." in text and "interval" not in text


def test_without_scipy_bench_says_how_to_install_it_before_any_work(tmp_path):
    from conftest import run_cli_hooked

    result = run_cli_hooked("import sys\nsys.modules['scipy'] = None\n", "bench", "--repo", str(tmp_path), "true")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pip install 'optpatch[bench]'" in result.stderr and result.stderr.count("\n") == 1


def test_the_chart_draws_every_round_of_every_tree_under_the_result_in_words(tmp_path):
    import xml.etree.ElementTree as ElementTree

    from optpatch.bench_chart import draw_chart

    report = report_with(compare("patched", [2.0, 2.1, 1.9], [1.0, 1.1, 0.9], Direction.LOWER_IS_BETTER))
    report.values = {"original": [2.0, 2.1, 1.9], "patched": [1.0, 1.1, 0.9]}
    chart = tmp_path / "bench.svg"
    draw_chart(report, chart)
    root = ElementTree.parse(chart).getroot()
    text = " ".join("".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "The patch is 2.00x faster" in text and "which excludes 1.0" in text
    assert "original" in text and "patched" in text and "3 rounds" in text
    groups = {g.get("id"): g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id")}
    for tree in ("values-1", "values-2"):  # a marker a round
        assert len(list(groups[tree].iter("{http://www.w3.org/2000/svg}use"))) == 3
