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


def test_a_cpp_fix_says_how_often_it_runs(tmp_path):
    # Each finding states how often it runs: a C++ launcher as often as the Python that calls its binding. Alone, the
    # example's `.cu` file registers `torch.ops.minivllm.copy_blocks`, which nothing in the project calls.
    repo = tmp_path / "repo"
    (repo / "csrc").mkdir(parents=True)
    shutil.copy(CACHE_OPS, repo / "csrc" / "cache_ops.cu")
    shown = " ".join(run_cli("check", str(repo), "--select", "OPT2", "--no-cache", "--exit-zero").stdout.split())
    assert ("runs: unreached (public API, no caller in the project): torch.ops.minivllm.copy_blocks (L65) -> "
            "copy_blocks (L35)") in shown
    explained = " ".join(run_cli("explain", f"{repo}:csrc/cache_ops.cu:43", "--no-cache").stdout.split())
    assert "Runs: unreached (public API, no caller in the project): torch.ops.minivllm.copy_blocks (L65)" in explained
    assert "Impact: low: size" in explained
    # With the Python that calls it every step, it is per-step.
    (repo / "runner.py").write_text(
        "import torch\n\n\nclass Runner:\n    def execute_model(self, keys, values, mapping):\n"
        "        torch.ops.minivllm.copy_blocks(keys, values, mapping)\n")
    shown = " ".join(run_cli("check", str(repo), "--select", "OPT2", "--no-cache", "--exit-zero").stdout.split())
    assert ("runs: per-step (step-style method): runner.py:Runner.execute_model (L6) -> "
            "torch.ops.minivllm.copy_blocks (L65) -> copy_blocks (L35)") in shown


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
