"""optpatch's C++ rewrites compile against the real torch headers (CPU wheel), without a GPU.

The example's `.cu` host file is compiled with nvcc; the rewrites in
OPT202's own examples are checked with g++ (`-fsyntax-only`), which covers
the `at::` spellings the example does not use.

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
from optpatch.rule import load_rules
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


def find_cuda_include(nvcc: Path) -> Path | None:
    """The toolkit's include folder (nvcc may be a wrapper script elsewhere)."""
    candidates = [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates += [nvcc.resolve().parent.parent / "include", Path("/usr/local/cuda/include")]
    return next((c for c in candidates if (c / "cuda_runtime_api.h").is_file()), None)


def torch_includes() -> list[Path] | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    include = Path(spec.origin).parent / "include"
    return [include, include / "torch" / "csrc" / "api" / "include"]


def toolchain() -> tuple[Path, list[Path]]:
    """nvcc and the include folders for torch, CUDA and its libraries; skips the test when one is missing."""
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
    cuda_include = find_cuda_include(nvcc)
    if cuda_include is None:
        pytest.skip("the CUDA toolkit's include folder (cuda_runtime_api.h) was not found; set CUDA_HOME")
    return nvcc, [*torch_dirs, cuda_include, headers]


def test_rewritten_example_compiles_with_nvcc(tmp_path):
    nvcc, include_dirs = toolchain()
    source = read_source(EXAMPLE, "csrc/cache_ops.cu")
    result = analyse_every_tier(source, {"OPT201", "OPT202"})
    applied = sorted(f.code for f, decision in result.decided if decision.accepted)
    assert applied == ["OPT201", "OPT201", "OPT202", "OPT202"], result.findings
    rewritten = tmp_path / "cache_ops.cu"
    rewritten.write_bytes(result.new)
    includes = [f"-I{d}" for d in include_dirs]
    command = [str(nvcc), "-c", str(rewritten), "-o", str(tmp_path / "cache_ops.o"), *NVCC_FLAGS, *includes]
    compiled = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert compiled.returncode == 0, compiled.stderr[-4000:]


def test_opt202_example_rewrites_compile_against_torch_headers(tmp_path):
    _, include_dirs = toolchain()
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    (rule,) = [r for r in load_rules() if r.code == "OPT202"]
    bodies = ["\n".join(l for l in e.fixed.splitlines() if not l.startswith("#include")) for e in rule.INVALID]
    unit = tmp_path / "rewrites.cpp"
    unit.write_text("#include <torch/all.h>\n#include <ATen/cuda/CUDAContext.h>\n" + "\n".join(bodies) + "\n")
    command = [gxx, "-std=c++20", "-fsyntax-only", "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", str(unit)]
    compiled = subprocess.run(command + [f"-I{d}" for d in include_dirs], capture_output=True, text=True, timeout=600)
    assert compiled.returncode == 0, compiled.stderr[-4000:]
