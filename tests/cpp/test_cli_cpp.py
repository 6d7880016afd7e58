"""The C++/CUDA rules through the real command line: patch, git apply, idempotence, suppression."""

import shutil
import subprocess

from conftest import REPO_ROOT, run_cli

CACHE_OPS = REPO_ROOT / "examples" / "minivllm" / "csrc" / "cache_ops.cu"


def test_the_example_kernel_host_code_gets_a_patch_git_accepts(tmp_path):
    repo = tmp_path / "repo"
    (repo / "csrc").mkdir(parents=True)
    shutil.copy(CACHE_OPS, repo / "csrc" / "cache_ops.cu")
    patch = tmp_path / "first.diff"
    result = run_cli("apply", str(repo), "-o", str(patch), "--select", "OPT2")
    assert result.returncode == 0, result.stderr
    text = patch.read_text()
    assert "+  std::vector<int64_t> key_ptrs(num_layers);" in text
    assert "+#include <vector>" in text
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, check=True)
    subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True)
    again = tmp_path / "second.diff"
    assert run_cli("apply", str(repo), "-o", str(again), "--select", "OPT2").returncode == 0
    assert again.read_bytes() == b""


def test_a_cpp_fix_says_how_often_it_runs_is_not_known(tmp_path):
    # Each finding states how often it runs; C++/CUDA code is outside the call graph, and the report says so.
    repo = tmp_path / "repo"
    (repo / "csrc").mkdir(parents=True)
    shutil.copy(CACHE_OPS, repo / "csrc" / "cache_ops.cu")
    shown = " ".join(run_cli("check", str(repo), "--select", "OPT2", "--no-cache", "--exit-zero").stdout.split())
    assert "runs: not known: C++/CUDA code is outside the project's call graph" in shown
    explained = " ".join(run_cli("explain", f"{repo}:csrc/cache_ops.cu:43", "--no-cache").stdout.split())
    assert "Runs: per-call, how often not known: C++/CUDA code is outside the project's call graph" in explained


def test_a_suppression_comment_keeps_the_array(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "ops.cpp").write_text(
        "void g(int* p);\nvoid f(int n) {\n  int a[n];  // optpatch: ignore[OPT201]\n  g(a);\n}\n"
    )
    patch = tmp_path / "out.diff"
    result = run_cli("apply", str(repo), "-o", str(patch))
    assert result.returncode == 0, result.stderr
    assert patch.read_bytes() == b""
