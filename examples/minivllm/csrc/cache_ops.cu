// Host side of minivllm's block copy: builds per-layer pointer tables and
// launches one kernel over all layers.
#include <torch/all.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

namespace minivllm {

template <typename scalar_t>
__global__ void copy_blocks_kernel(int64_t* key_ptrs, int64_t* value_ptrs,
                                   const int64_t* __restrict__ mapping,
                                   const int elems_per_block) {
  const int layer = blockIdx.x;
  const int pair = blockIdx.y;
  scalar_t* keys = reinterpret_cast<scalar_t*>(key_ptrs[layer]);
  scalar_t* values = reinterpret_cast<scalar_t*>(value_ptrs[layer]);
  const int64_t src = mapping[2 * pair] * elems_per_block;
  const int64_t dst = mapping[2 * pair + 1] * elems_per_block;
  for (int i = threadIdx.x; i < elems_per_block; i += blockDim.x) {
    keys[dst + i] = keys[src + i];
    values[dst + i] = values[src + i];
  }
}

}  // namespace minivllm

void copy_blocks(std::vector<torch::Tensor> const& key_caches,
                 std::vector<torch::Tensor> const& value_caches,
                 const torch::Tensor& block_mapping) {
  const int num_layers = key_caches.size();
  if (num_layers == 0) return;
  torch::Device device = key_caches[0].device();
  const at::cuda::OptionalCUDAGuard device_guard(device);
  // A variable-length array: not ISO C++, and MSVC rejects it.
  int64_t key_ptrs[num_layers];
  int64_t value_ptrs[num_layers];
  for (int layer = 0; layer < num_layers; ++layer) {
    key_ptrs[layer] = reinterpret_cast<int64_t>(key_caches[layer].data_ptr());
    value_ptrs[layer] = reinterpret_cast<int64_t>(value_caches[layer].data_ptr());
  }
  // Synchronous: waits for all queued GPU work before it copies.
  torch::Tensor key_ptrs_device =
      torch::from_blob(key_ptrs, {num_layers}, torch::kInt64).to(device);
  torch::Tensor value_ptrs_device =
      torch::from_blob(value_ptrs, {num_layers}, torch::kInt64).to(device);

  const int num_pairs = block_mapping.size(0);
  const int elems_per_block = key_caches[0][0].numel();
  dim3 grid(num_layers, num_pairs);
  dim3 block(std::min(1024, elems_per_block));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, key_caches[0].scalar_type(), "copy_blocks", [&] {
        minivllm::copy_blocks_kernel<scalar_t><<<grid, block, 0, stream>>>(
            key_ptrs_device.data_ptr<int64_t>(), value_ptrs_device.data_ptr<int64_t>(),
            block_mapping.data_ptr<int64_t>(), elems_per_block);
      });
}

// Python calls it as torch.ops.minivllm.copy_blocks, before each decode step (ModelRunner.execute_model).
TORCH_LIBRARY(minivllm, m) {
  m.def("copy_blocks(Tensor[] key_caches, Tensor[] value_caches, Tensor block_mapping) -> ()");
}

TORCH_LIBRARY_IMPL(minivllm, CUDA, m) { m.impl("copy_blocks", &copy_blocks); }
