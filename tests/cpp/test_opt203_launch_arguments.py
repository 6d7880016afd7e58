"""OPT203 reads a launch's arguments with an accessor's template arguments whole: `x.packed_accessor32<float, 1,
torch::RestrictPtrTraits>()` is one argument, not three. Split at its commas, the accessor was never the whole
tensor's data, and every argument after it was matched to the wrong kernel parameter (pytorch3d's
`marching_cubes.cu` and `sigmoid_alpha_blend.cu`)."""

from __future__ import annotations

from pathlib import Path

from optpatch.passes import analyse_text
from optpatch.rule import load_rules
from optpatch.source import read_source

OPT203 = [rule for rule in load_rules() if rule.code == "OPT203"]
ACCESSOR = "torch::PackedTensorAccessor32<float, 1, torch::RestrictPtrTraits>"
PACKED = "packed_accessor32<float, 1, torch::RestrictPtrTraits>()"
KERNELS = f"""#include <torch/extension.h>

__global__ void scale_kernel({ACCESSOR} out, const float* in, int64_t n) {{
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = 2 * in[i];
}}

__global__ void sum_kernel({ACCESSOR} in, float* out, int64_t n) {{
  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&out[0], in[i]);
}}

torch::Tensor twice(torch::Tensor x) {{
  auto out = torch::zeros_like(x);
  scale_kernel<<<1, 128>>>(out.{PACKED}, x.data_ptr<float>(), out.numel());
  return out;
}}

torch::Tensor total(torch::Tensor x) {{
  auto out = torch::zeros({{1}}, x.options());
  sum_kernel<<<1, 128>>>(x.{PACKED}, out.data_ptr<float>(), x.numel());
  return out;
}}
"""


def test_a_packed_accessor_with_template_arguments_is_one_launch_argument(tmp_path: Path):
    (tmp_path / "k.cu").write_text(KERNELS)
    analysis = analyse_text(read_source(tmp_path / "k.cu", "k.cu"), OPT203)
    twice, total = sorted(analysis.findings, key=lambda f: f.line)
    # The accessor is the whole tensor's data, and the kernel assigns it under a guard on its size: validate.
    assert (twice.verdict.value, twice.fix.tier.value) == ("fix", "validate"), twice.reason
    assert "goes to kernel `scale_kernel` (argument 1)" in twice.reason
    # The data pointer after an accessor is the kernel's second parameter, which it accumulates into.
    assert total.verdict.value == "keep" and "accumulates into `out` with `atomicAdd`" in total.reason, total.reason
