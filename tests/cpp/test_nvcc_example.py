"""optpatch's rewrite of examples/minivllm/csrc/cache_ops.cu compiles with nvcc against torch's headers.

No GPU is needed: the CPU torch wheel ships ATen's CUDA headers, and
`-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE` stands in for the configuration header
CMake writes for CUDA builds. `ATen/cuda/CUDAContext.h` also includes the
cuBLAS, cuSPARSE and cuSOLVER headers, which the CUDA toolkit leaves out and
the `nvidia-cublas`, `nvidia-cusparse` and `nvidia-cusolver` wheels (CUDA
13) carry under `nvidia/cu13/include`. The test is skipped, saying which,
when nvcc, torch or those headers are missing. One compile takes 1-2 minutes
and about 2.7 GB of memory.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cpp_fixtures import analyse_every_tier
from optpatch.source import read_source

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "minivllm" / "csrc" / "cache_ops.cu"
LIBRARY_HEADERS = ("cublas_v2.h", "cublasLt.h", "cusparse.h", "cusolverDn.h")
WHEEL_INCLUDE = Path("nvidia") / "cu13" / "include"
HEADERS_ENV = "OPTPATCH_CUDA_LIBRARY_INCLUDE"
# The flags torch.utils.cpp_extension passes to nvcc, plus the CPU wheel's stand-in for CMake's config.
NVCC_FLAGS = (
    "-std=c++20", "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr", "-gencode=arch=compute_90,code=sm_90", "-Xcompiler", "-fPIC",
)


def find_nvcc() -> Path | None:
    candidates = [Path(os.environ[v]) / "bin" / "nvcc" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    on_path = shutil.which("nvcc")
    candidates += [Path(on_path)] if on_path else []
    candidates.append(Path("/usr/local/cuda/bin/nvcc"))
    return next((c for c in candidates if c.is_file()), None)


def find_library_headers() -> Path | None:
    """Installed nvidia-* wheels, $OPTPATCH_CUDA_LIBRARY_INCLUDE, or the cache `kernels.build_check fetch-headers` fills."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "optpatch" / "cuda-library-headers"
    candidates = [Path(os.environ[HEADERS_ENV])] if os.environ.get(HEADERS_ENV) else []
    candidates += [Path(entry) / WHEEL_INCLUDE for entry in sys.path if entry]
    candidates.append(cache / WHEEL_INCLUDE)
    return next((c for c in candidates if all((c / h).is_file() for h in LIBRARY_HEADERS)), None)


def torch_includes() -> list[Path] | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    include = Path(spec.origin).parent / "include"
    return [include, include / "torch" / "csrc" / "api" / "include"]


def test_rewritten_example_compiles_with_nvcc(tmp_path):
    nvcc, headers, torch_dirs = find_nvcc(), find_library_headers(), torch_includes()
    if nvcc is None:
        pytest.skip("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    if torch_dirs is None:
        pytest.skip("torch is not installed: its headers are needed")
    if headers is None:
        pytest.skip(
            "cuBLAS/cuSPARSE/cuSOLVER headers not found: pip install nvidia-cublas nvidia-cusparse "
            f"nvidia-cusolver (CUDA 13 wheels), or set {HEADERS_ENV}"
        )
    source = read_source(EXAMPLE, "csrc/cache_ops.cu")
    result = analyse_every_tier(source, {"OPT201", "OPT202"})
    applied = sorted(f.code for f in result.findings if f.applied)
    assert applied == ["OPT201", "OPT201", "OPT202", "OPT202"], result.findings
    rewritten = tmp_path / "cache_ops.cu"
    rewritten.write_bytes(result.new)
    includes = [f"-I{d}" for d in [*torch_dirs, headers]]
    command = [str(nvcc), "-c", str(rewritten), "-o", str(tmp_path / "cache_ops.o"), *NVCC_FLAGS, *includes]
    compiled = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert compiled.returncode == 0, compiled.stderr[-4000:]
