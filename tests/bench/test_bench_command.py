"""`optpatch bench CMD` end to end, on small git repositories made here (docs/bench.md).

Each repository holds a site optpatch fixes; CMD reads the file the fix
changes, so the original and the patched tree behave differently by a known
amount. Asserted outcomes keep a wide margin on a loaded machine: a half
second of sleep against a shell's few milliseconds, or a metric CMD prints
from a fixed sequence, never a timing that could land either side of 1.0.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench_repos import NO_SITE, OPT101_SITE, OPT102_SITE, git_repo

def bench(repo: Path, tmp: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`optpatch bench` with its temporary trees under TMP, so that a test can see they are gone."""
    tmp.mkdir(exist_ok=True)
    env = dict(os.environ, TMPDIR=str(tmp))
    return subprocess.run([sys.executable, "-m", "optpatch", "bench", "--repo", str(repo), "--jobs", "1", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def test_a_patch_that_removes_a_sleep_is_faster_with_an_interval_that_excludes_one(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE})
    # Only the original tree holds torch.zeros: it sleeps half a second a run, the patched tree does not.
    command = "if grep -q torch.zeros lib/alloc.py; then sleep 0.5; fi"
    completed = bench(repo, tmp_path / "tmp", command, "--rounds", "6", "--warmup", "0", "--json")
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    (patched,) = result["comparisons"]
    assert patched["difference"] == "faster" and patched["excludes_one"] and patched["low"] > 1.0
    assert patched["rounds"] == 6 and patched["original_median"] >= 0.5 > patched["patched_median"]
    assert result["variants"] == [{"label": "patched", "fixes": 1, "files": ["lib/alloc.py"]}]
    assert list(result["values"]) == ["original", "patched"] and all(len(v) == 6 for v in result["values"].values())
    assert not list((tmp_path / "tmp").iterdir())  # the trees are gone
    assert "torch.zeros" in (repo / "lib" / "alloc.py").read_text()  # REPO is never written


def test_an_unchanged_repository_gives_an_interval_that_contains_one(tmp_path):
    """No fix: both trees hold the same code. The metric comes from a counter each tree keeps, so both
    print the same values (10, 11, 12, ...) and the interval must contain 1.0, with no timing involved."""
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": NO_SITE})
    command = 'n=$(cat .count 2>/dev/null || echo 0); n=$((n + 1)); echo $n > .count; echo "ms/step: $((10 + n % 3))"'
    completed = bench(repo, tmp_path / "tmp", command, "--rounds", "6", "--warmup", "0", "--metric", r"ms/step: (\d+)")
    assert completed.returncode == 0, completed.stderr
    assert "no significant difference" in completed.stdout and "which contains 1.0" in completed.stdout
    assert "A/A run" in completed.stdout
    assert "faster" not in completed.stdout and "slower" not in completed.stdout


def test_a_command_that_fails_on_the_patched_tree_is_a_failure_with_no_result(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE})
    completed = bench(repo, tmp_path / "tmp", "grep -q torch.zeros lib/alloc.py", "--rounds", "5")
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert "fails on the patched tree: the patch breaks this workload" in completed.stdout
    assert "No result." in completed.stdout and "speedup" not in completed.stdout
    assert not list((tmp_path / "tmp").iterdir())


def test_metric_reads_a_tokens_per_second_line_and_select_reaches_the_patched_tree(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE, "lib/place.py": OPT102_SITE})
    command = ('echo "step 1: 99 tokens/s"; if grep -q torch.zeros lib/alloc.py; then echo "decode: 1,000.0 tokens/s"; '
               'else echo "decode: 1,500.0 tokens/s"; fi')
    completed = bench(repo, tmp_path / "tmp", command, "--rounds", "5", "--warmup", "0", "--json", "--select", "OPT101",
                      "--metric", r"decode: ([\d,.]+) tokens/s", "--higher-is-better")
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["values"] == {"original": [1000.0] * 5, "patched": [1500.0] * 5}
    (patched,) = result["comparisons"]
    assert (patched["speedup"], patched["low"], patched["high"]) == (1.5, 1.5, 1.5)
    assert result["metric"]["higher_is_better"] is True
    assert result["variants"] == [{"label": "patched", "fixes": 1, "files": ["lib/alloc.py"]}]  # as `apply --select`


def test_per_rule_gives_a_speedup_row_for_each_rule_with_fixes(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE, "lib/place.py": OPT102_SITE})
    command = ("v=100; grep -q torch.zeros lib/alloc.py || v=$((v + 50)); grep -q '.cuda()' lib/place.py || v=$((v + 25)); "
               'echo "tok/s: $v"')
    completed = bench(repo, tmp_path / "tmp", command, "--per-rule", "--rounds", "5", "--warmup", "0", "--json",
                      "--metric", r"tok/s: (\d+)", "--higher-is-better")
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    speedups = {c["label"]: c["speedup"] for c in result["comparisons"]}
    assert speedups == {"patched": 1.75, "OPT101": 1.5, "OPT102": 1.25}
    assert [v["files"] for v in result["variants"]] == [["lib/alloc.py", "lib/place.py"], ["lib/alloc.py"], ["lib/place.py"]]


def test_ctrl_c_stops_the_command_and_removes_the_trees(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE})
    started = tmp_path / "started"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "optpatch", "bench", "--repo", str(repo), "--jobs", "1", f"touch {started}; sleep 60"],
        env=dict(os.environ, TMPDIR=str(tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "removed the temporary trees" in stderr
    assert not list(tmp.iterdir())


def test_a_failed_validate_is_exit_4_and_times_nothing(tmp_path):
    repo = git_repo(tmp_path / "repo", {"lib/alloc.py": OPT101_SITE})
    marker = tmp_path / "ran"
    completed = bench(repo, tmp_path / "tmp", f"touch {marker}", "--validate", "exit 1")
    assert completed.returncode == 4, completed.stdout + completed.stderr
    assert "No patch to bench: --validate failed." in completed.stderr and not marker.exists()
