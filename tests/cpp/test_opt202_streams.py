"""OPT202's stream argument: the copy must land on the stream its readers use.

These sites launch kernels (`<<<...>>>`), which g++ cannot compile, so they
are checked by analysis here; examples/minivllm/csrc/cache_ops.cu is the
launch site that is also compiled (test_nvcc_example.py).
"""

from pathlib import Path

import pytest

from cpp_fixtures import analyse
from optpatch.source import SourceFile

HEAD = (
    "template <typename T> __global__ void kernel(const int64_t* table, T* out) { out[0] = table[0]; }\n"
    "void launch(const std::vector<torch::Tensor>& caches, torch::Device device, cudaStream_t given) {\n"
    "  TORCH_CHECK(device.is_cuda());\n"
    "  const int n = caches.size();\n"
    "  std::vector<int64_t> host(n);\n"
)
COPY = "  auto table = torch::from_blob(host.data(), {n}, torch::kInt64).to(device);\n"


def finding_for(body: str):
    code = HEAD + body + "}\n"
    source = SourceFile("launch.cu", Path("launch.cu"), code.encode(), code, "utf-8", False, "cpp")
    result = analyse(source, {"OPT202"})
    assert result.error is None, result.error
    (finding,) = result.findings
    return finding


@pytest.mark.parametrize(
    "body",
    [
        # The guard makes `device` current, so getCurrentCUDAStream() is the copy's stream.
        "  const at::cuda::OptionalCUDAGuard guard(device);\n" + COPY
        + "  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n"
        "  kernel<float><<<1, 1, 0, stream>>>(table.data_ptr<int64_t>(), nullptr);\n",
        # The guard may come after the copy: the copy names the device's stream itself.
        COPY + "  const at::cuda::OptionalCUDAGuard guard(device);\n"
        "  kernel<float><<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(table.data_ptr<int64_t>(), nullptr);\n",
        COPY + "  kernel<float><<<1, 1, 0, at::cuda::getCurrentCUDAStream(device.index())>>>(table.data_ptr<int64_t>(), nullptr);\n",
    ],
)
def test_launches_on_the_devices_current_stream_are_safe(body):
    finding = finding_for(body)
    assert (finding.verdict.value, finding.fix.tier.value) == ("fix", "safe"), finding.reason


@pytest.mark.parametrize(
    "body, reason",
    [
        (COPY + "  kernel<float><<<1, 1>>>(table.data_ptr<int64_t>(), nullptr);\n", "default stream"),
        (COPY + "  kernel<float><<<1, 1, 0, given>>>(table.data_ptr<int64_t>(), nullptr);\n", "not shown to be the current stream"),
        # Taken before the guard: the current stream of whichever device was current then.
        ("  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n" + COPY
         + "  const at::cuda::OptionalCUDAGuard guard(device);\n"
         "  kernel<float><<<1, 1, 0, stream>>>(table.data_ptr<int64_t>(), nullptr);\n", "not shown to be the current stream"),
        (COPY + "  at::cuda::CUDAStreamGuard side(at::cuda::getStreamFromPool());\n", "another stream"),
    ],
)
def test_launches_on_another_stream_keep_the_copy(body, reason):
    finding = finding_for(body)
    assert finding.verdict.value == "keep"
    assert reason in finding.reason


def test_a_raw_pointer_handed_to_other_code_needs_validation():
    finding = finding_for(COPY + "  cudaMemsetAsync(table.data_ptr(), 0, 8, given);\n")
    assert (finding.verdict.value, finding.fix.tier.value) == ("fix", "validate")
    assert "other than a kernel launch" in finding.reason


def test_a_device_not_shown_to_be_cuda_needs_validation():
    code = HEAD.replace("  TORCH_CHECK(device.is_cuda());\n", "") + COPY + "  table.zero_();\n}\n"
    source = SourceFile("launch.cu", Path("launch.cu"), code.encode(), code, "utf-8", False, "cpp")
    (finding,) = analyse(source, {"OPT202"}).findings
    assert (finding.verdict.value, finding.fix.tier.value) == ("fix", "validate")
    assert "not shown to be a CUDA device" in finding.reason


@pytest.mark.parametrize(
    "code, reason",
    [
        ("template <class T> void f(T* host, int n, torch::Device d) {\n"
         "  auto t = torch::from_blob(host, {n}, torch::kInt64).to(d);\n}\n", "template-dependent"),
        ("void g(HeaderType h, int64_t* p) {\n"
         "  auto t = torch::from_blob(p, {2}, torch::kInt64).to(h.device());\n}\n", "does not parse"),
    ],
)
def test_copies_the_parser_cannot_type_are_reported_not_rewritten(code, reason):
    source = SourceFile("copy.cpp", Path("copy.cpp"), code.encode(), code, "utf-8", False, "cpp")
    result = analyse(source, {"OPT202"})
    (finding,) = result.findings
    assert finding.verdict.value == "keep" and reason in finding.reason
    assert result.new is None
