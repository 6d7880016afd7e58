"""The CUDA sources: they keep the host-code patterns optpatch's rules
exist to rewrite, their device code stays free of them, and they compile
with nvcc against the CPU torch wheel's headers where the toolchain is
present."""

import re
from pathlib import Path

import pytest

from kernels import build_check

CSRC = Path(build_check.__file__).resolve().parent / "csrc"
CACHE_KERNELS = CSRC / "cache_kernels.cu"
VLA = re.compile(r"^\s*int64_t (\w+)\[num_layers\];", re.MULTILINE)


def _function_bodies(source: str, marker: str) -> list[str]:
    """Bodies of the functions whose declaration starts with `marker`."""
    bodies = []
    for match in re.finditer(re.escape(marker), source):
        start = source.index("{", match.end())
        depth, end = 0, start
        for end in range(start, len(source)):
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            if depth == 0:
                break
        bodies.append(source[start : end + 1])
    return bodies


def test_copy_blocks_host_code_has_the_patterns_the_rules_rewrite():
    source = CACHE_KERNELS.read_text()
    host = _function_bodies(source, "void copy_blocks(")[0]
    assert VLA.findall(host) == ["key_cache_ptrs", "value_cache_ptrs"]
    from_blob_to_device = re.findall(
        r"torch::from_blob\((\w+), \{num_layers\}, torch::kInt64\)\s*\.to\(cache_device\)", host
    )
    assert from_blob_to_device == ["key_cache_ptrs", "value_cache_ptrs"]
    assert "#include <vector>" not in source, "OPT201 is expected to add it"


def test_gather_allocates_zeros_that_its_kernel_overwrites():
    # The OPT203 site of the bundle: torch::zeros handed to a kernel that writes every element (zeros for padding).
    source = CACHE_KERNELS.read_text()
    host = _function_bodies(source, "torch::Tensor gather_cache_flash(")[0]
    assert re.search(r"torch::Tensor out =\s+torch::zeros\(\{num_tokens, num_heads, head_size\}", host)
    assert re.search(r"gather_cache_flash_kernel<scalar_t><<<[^;]*>>>\(\s*out\.data_ptr<scalar_t>\(\)", host)
    kernel = _function_bodies(source, "__global__ void gather_cache_flash_kernel(")[0]
    assert "= slot < 0 ? scalar_t(0) : row[i];" in kernel and "out[token * elements_per_token + i] +=" not in kernel


def test_the_pointer_tables_move_after_the_device_guard():
    # The rewritten copy runs on the current stream of the current device:
    # the guard must already be in place for it to be the caches' device.
    host = _function_bodies(CACHE_KERNELS.read_text(), "void copy_blocks(")[0]
    assert host.index("OptionalCUDAGuard") < host.index("torch::from_blob")


def test_device_code_has_no_variable_length_arrays():
    kernels = _function_bodies(CACHE_KERNELS.read_text(), "__global__ void")
    assert len(kernels) == 4
    for body in kernels:
        assert not re.search(r"\b\w+ \w+\[\w+\];", body)
        assert "from_blob" not in body


def test_python_builders_allocate_zeros_that_are_fully_overwritten():
    # The OPT101 site of the bundle: torch.zeros, then uniform_ on every element.
    source = (CSRC.parent / "cases.py").read_text()
    assert re.search(
        r"(\w+) = torch\.zeros\(.*\)\n\s+\1\.uniform_\(", source
    ), "cases.random_tensor should allocate with torch.zeros and fill with uniform_"


def test_nvcc_command_carries_the_cpu_wheel_flags(tmp_path):
    toolchain = build_check.Toolchain(nvcc=Path("/cuda/bin/nvcc"), include_dirs=(Path("/inc/a"), Path("/inc/b")))
    command = build_check.nvcc_command(toolchain, Path("k.cu"), tmp_path / "k.o")
    assert command[:5] == ["/cuda/bin/nvcc", "-c", "k.cu", "-o", str(tmp_path / "k.o")]
    assert "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE" in command and "-std=c++20" in command
    assert command[-2:] == ["-I/inc/a", "-I/inc/b"]


def test_library_headers_are_found_through_the_environment(tmp_path, monkeypatch):
    for name in build_check.REQUIRED_LIBRARY_HEADERS:
        (tmp_path / name).write_text("")
    monkeypatch.setenv(build_check.HEADERS_ENV, str(tmp_path))
    assert build_check.find_library_headers() == tmp_path


def test_missing_library_headers_say_how_to_get_them(tmp_path, monkeypatch):
    (tmp_path / "cublas_v2.h").write_text("")  # incomplete
    monkeypatch.setenv(build_check.HEADERS_ENV, str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(build_check.sys, "path", [])
    monkeypatch.setattr(build_check, "find_nvcc", lambda: Path("/usr/bin/true"))
    with pytest.raises(build_check.ToolchainMissing, match="fetch-headers"):
        build_check.find_toolchain()


def _toolchain_or_skip() -> build_check.Toolchain:
    try:
        return build_check.find_toolchain()
    except build_check.ToolchainMissing as missing:
        pytest.skip(f"nvcc build check not possible here: {missing}")


def test_cache_kernels_compile_with_nvcc(tmp_path):
    toolchain = _toolchain_or_skip()
    result = build_check.compile_source(toolchain, CACHE_KERNELS, tmp_path / "cache_kernels.o")
    assert result.ok, result.log
    assert (tmp_path / "cache_kernels.o").stat().st_size > 0


def test_nvcc_failures_are_reported(tmp_path):
    toolchain = _toolchain_or_skip()
    broken = tmp_path / "broken.cu"
    broken.write_text("void f() { undeclared_call(); }\n")
    result = build_check.compile_source(toolchain, broken, tmp_path / "broken.o")
    assert not result.ok and "undeclared_call" in result.log


def test_optpatch_proposes_the_gathers_zeros_as_validate_tier():
    # The launch goes to a kernel this file defines, which only assigns to its output under a guard bounded by
    # the output's first size: a validate-tier fix, applied only by a validation that rebuilds and checks it.
    from optpatch.config import Settings
    from optpatch.cpp_headers import HeaderSetup
    from optpatch.passes import analyse_file
    from optpatch.policy import FixPolicy
    from optpatch.rule import load_rules
    from optpatch.source import read_source

    rules = [rule for rule in load_rules() if rule.code == "OPT203"]
    source = read_source(CACHE_KERNELS, "csrc/cache_kernels.cu")
    result = analyse_file(source, rules, Settings(), FixPolicy(), headers=HeaderSetup(CSRC, enabled=False))
    (finding,) = result.findings
    line = source.text.splitlines()[finding.line - 1]
    assert finding.fix is not None and finding.fix.tier.value == "validate" and "torch::zeros({num_tokens" in line
    assert result.new is None
