"""Compile the kernels' CUDA sources with nvcc against the installed torch's
headers, with no GPU and no CUDA build of torch.

A CPU torch wheel ships the CUDA headers of ATen and c10 but not the
configuration header that CMake writes for CUDA builds, and the CUDA
toolkit alone lacks the cuBLAS, cuSPARSE and cuSOLVER headers that
``ATen/cuda/CUDAContext.h`` includes. ``-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE``
covers the first; the NVIDIA library wheels carry the second under
``nvidia/cu13/include``. ``fetch-headers`` downloads those wheels once and
keeps only their headers (about 1 MB of the 750 MB downloaded).

    python -m kernels.build_check fetch-headers
    python -m kernels.build_check compile kernels/csrc/cache_kernels.cu [--json FILE]

`compile` exits 0 when everything compiled or the toolchain is missing (it
says which part, and records it as "skipped" in the JSON), 1 when nvcc
failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

# The CUDA 13.0 releases of the libraries, matching nvcc 13.0 and torch's
# cu130 builds. Only their headers are used.
CUDA_LIBRARY_WHEELS = (
    "nvidia-cublas==13.0.0.19",
    "nvidia-cusparse==12.6.2.49",
    "nvidia-cusolver==12.0.3.29",
)
WHEEL_INCLUDE_DIR = "nvidia/cu13/include"
# What ATen/cuda/CUDAContext.h pulls in beyond the CUDA toolkit.
REQUIRED_LIBRARY_HEADERS = ("cublas_v2.h", "cublasLt.h", "cusparse.h", "cusolverDn.h")
HEADERS_ENV = "OPTPATCH_CUDA_LIBRARY_INCLUDE"

# The flags torch.utils.cpp_extension gives nvcc, plus the one that lets a
# CPU wheel's c10/cuda headers stand without CMake's generated config.
NVCC_FLAGS = (
    "-std=c++20",
    "-O3",
    "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE",
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
    "-gencode=arch=compute_90,code=sm_90",
    "-Xcompiler",
    "-fPIC",
)


class ToolchainMissing(Exception):
    """Something needed for an nvcc build is absent; the message says what."""


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    include_dirs: tuple[Path, ...]


@dataclass(frozen=True)
class CompileResult:
    source: Path
    ok: bool
    seconds: float
    log: str


def header_cache_dir() -> Path:
    cache_home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return cache_home / "optpatch" / "cuda-library-headers"


def find_nvcc() -> Path | None:
    candidates = []
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(variable):
            candidates.append(Path(os.environ[variable]) / "bin" / "nvcc")
    if shutil.which("nvcc"):
        candidates.append(Path(shutil.which("nvcc")))
    candidates.append(Path("/usr/local/cuda/bin/nvcc"))
    return next((path for path in candidates if path.is_file()), None)


def _has_library_headers(directory: Path) -> bool:
    return all((directory / name).is_file() for name in REQUIRED_LIBRARY_HEADERS)


def find_library_headers() -> Path | None:
    """The first folder holding the cuBLAS/cuSPARSE/cuSOLVER headers: the
    environment's override, installed NVIDIA wheels, then fetch-headers'
    cache."""
    candidates = []
    if os.environ.get(HEADERS_ENV):
        candidates.append(Path(os.environ[HEADERS_ENV]))
    candidates += [Path(entry) / WHEEL_INCLUDE_DIR for entry in sys.path if entry]
    candidates.append(header_cache_dir() / WHEEL_INCLUDE_DIR)
    return next((path for path in candidates if _has_library_headers(path)), None)


def torch_include_dirs() -> tuple[Path, ...]:
    # find_spec locates torch without importing it (importing costs seconds).
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise ToolchainMissing("torch is not installed")
    include = Path(spec.origin).parent / "include"
    return (include, include / "torch" / "csrc" / "api" / "include")


def find_toolchain() -> Toolchain:
    nvcc = find_nvcc()
    if nvcc is None:
        raise ToolchainMissing("nvcc not found (set CUDA_HOME or put nvcc on PATH)")
    library_headers = find_library_headers()
    if library_headers is None:
        raise ToolchainMissing(
            "cuBLAS/cuSPARSE/cuSOLVER headers not found: run "
            "`python -m kernels.build_check fetch-headers`, install "
            f"{' '.join(CUDA_LIBRARY_WHEELS)}, or set {HEADERS_ENV}"
        )
    return Toolchain(nvcc=nvcc, include_dirs=(*torch_include_dirs(), library_headers))


def nvcc_command(toolchain: Toolchain, source: Path, output: Path) -> list[str]:
    includes = [f"-I{directory}" for directory in toolchain.include_dirs]
    return [str(toolchain.nvcc), "-c", str(source), "-o", str(output), *NVCC_FLAGS, *includes]


def compile_source(toolchain: Toolchain, source: Path, output: Path) -> CompileResult:
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    completed = subprocess.run(
        nvcc_command(toolchain, source, output),
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    log = (completed.stdout + completed.stderr)[-4000:]
    return CompileResult(source=source, ok=completed.returncode == 0, seconds=seconds, log=log)


DOWNLOAD_MB = 750  # the three wheels, of which fetch-headers keeps about 1 MB of headers


def fetch_headers(destination: Path | None = None) -> Path:
    """Download the library wheels to a temporary folder, keep their
    headers under destination, and return the include folder; nothing is
    downloaded when the headers are found already (find_library_headers)."""
    if destination is None and (found := find_library_headers()) is not None:
        print(f"fetch-headers: the cuBLAS/cuSPARSE/cuSOLVER headers are in {found}; nothing to download", file=sys.stderr)
        return found
    destination = destination or header_cache_dir()
    print(f"fetch-headers: downloading {', '.join(CUDA_LIBRARY_WHEELS)} (about {DOWNLOAD_MB} MB) "
          f"to keep their headers (about 1 MB) in {destination}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="optpatch-cuda-wheels-") as scratch:
        subprocess.run(  # pip's own progress bars show each wheel's size and progress
            [sys.executable, "-m", "pip", "download", "--progress-bar", "on", "--no-deps",
             "--only-binary=:all:", "--dest", scratch, *CUDA_LIBRARY_WHEELS],
            check=True,
        )
        staging = Path(scratch) / "headers"
        for wheel in sorted(Path(scratch).glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                headers = [name for name in archive.namelist()
                           if name.startswith(WHEEL_INCLUDE_DIR + "/")]
                archive.extractall(staging, members=headers)
        if not _has_library_headers(staging / WHEEL_INCLUDE_DIR):
            raise ToolchainMissing(f"the wheels {CUDA_LIBRARY_WHEELS} lacked {REQUIRED_LIBRARY_HEADERS}")
        if destination.exists():
            shutil.rmtree(destination)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(destination))
    return destination / WHEEL_INCLUDE_DIR


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.build_check", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch-headers", help="download the CUDA library headers once")
    fetch.add_argument("--dest", type=Path, default=None, help=f"default: {header_cache_dir()}")
    compile_parser = commands.add_parser("compile", help="compile .cu files to objects")
    compile_parser.add_argument("sources", nargs="+", type=Path)
    compile_parser.add_argument("--out-dir", type=Path, default=None)
    compile_parser.add_argument("--json", type=Path, default=None, help="write the results here")
    args = parser.parse_args(argv)

    if args.command == "fetch-headers":
        print(fetch_headers(args.dest))
        return 0
    skipped, results = None, []
    try:
        toolchain = find_toolchain()
    except ToolchainMissing as missing:
        skipped = str(missing)
        print(f"skipped: {missing}", file=sys.stderr)
    else:
        out_dir = args.out_dir or Path(tempfile.mkdtemp(prefix="optpatch-nvcc-"))
        for source in args.sources:
            result = compile_source(toolchain, source, out_dir / (source.stem + ".o"))
            print(f"{'ok' if result.ok else 'FAILED'}  {source}  {result.seconds:.1f} s")
            if not result.ok:
                print(result.log, file=sys.stderr)
            results.append(result)
    if args.json:
        records = [{**dataclasses.asdict(result), "source": str(result.source)} for result in results]
        args.json.write_text(json.dumps({"skipped": skipped, "results": records}, indent=2) + "\n")
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
