"""benchmarks/gpu_opt202.py, the part that needs no GPU: optpatch rewrites every form the GPU run builds.

The GPU run itself (building both extensions with nvcc, calling them) is on the
lent machine; docs/benchmarks.md has its command and results. Here the rewrite
it builds is checked to hold every form, and to compile against the CPU
torch's and CUDA's headers (skipped, saying why, where they are missing).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from test_nvcc_example import toolchain

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_opt202.py"
_spec = importlib.util.spec_from_file_location("gpu_opt202", SCRIPT)
gpu = importlib.util.module_from_spec(_spec)
sys.modules["gpu_opt202"] = gpu
_spec.loader.exec_module(gpu)


def test_every_form_is_a_function_and_is_rewritten():
    text = gpu.FORMS.read_text(encoding="utf-8")
    for function in gpu.FUNCTIONS:
        assert f"torch::Tensor {function}(torch::Tensor like, int64_t n)" in text
    new, fixes = gpu.rewritten(text)
    assert len(fixes) == len(gpu.FUNCTIONS) and all(fix["accepted"] for fix in fixes), fixes
    assert "from_blob" not in new and new.count("cudaMemcpyAsync(") == len(gpu.FUNCTIONS)


def test_the_rewrite_compiles_against_torch_and_cuda_headers(tmp_path):
    """The functions hold no device code: g++ checks the rewrite as nvcc's host compiler would see it."""
    _, include_dirs = toolchain()
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    new, _ = gpu.rewritten(gpu.FORMS.read_text(encoding="utf-8"))
    source = tmp_path / "forms.cpp"
    source.write_text(new, encoding="utf-8")
    python = sysconfig.get_paths()["include"]
    command = [gxx, "-std=c++17", "-fsyntax-only", "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", f"-I{python}", str(source)]
    compiled = subprocess.run(command + [f"-I{d}" for d in include_dirs], capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, compiled.stderr[-4000:]
