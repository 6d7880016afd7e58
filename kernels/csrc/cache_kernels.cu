// Paged KV-cache kernels in vLLM's layouts: block copies across layers,
// block swaps between memories, and the per-step scatter of keys and values
// into the cache.
//
// The host code is deliberately written the way optpatch's C++ rules find
// it in real projects (a variable-length array of pointers, and
// `torch::from_blob(...).to(device)`); `optpatch validate` rewrites a copy
// of this file with those rules and checks that both versions agree.
// Device code stays free of such constructs.

#include <torch/types.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>

#include "cache_ops.h"

namespace {

constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxThreadsPerToken = 512;

// One CUDA block per (layer, block pair); its threads stride over the
// elements of one cache block, for the key and then the value cache.
template <typename scalar_t>
__global__ void copy_blocks_kernel(const int64_t* __restrict__ key_cache_ptrs,
                                   const int64_t* __restrict__ value_cache_ptrs,
                                   const int64_t* __restrict__ block_mapping,
                                   const int64_t elements_per_block) {
  const int64_t layer = blockIdx.x;
  const int64_t pair = blockIdx.y;
  scalar_t* key_cache = reinterpret_cast<scalar_t*>(key_cache_ptrs[layer]);
  scalar_t* value_cache =
      reinterpret_cast<scalar_t*>(value_cache_ptrs[layer]);
  const int64_t src_start = block_mapping[2 * pair] * elements_per_block;
  const int64_t dst_start = block_mapping[2 * pair + 1] * elements_per_block;

  for (int64_t i = threadIdx.x; i < elements_per_block; i += blockDim.x) {
    key_cache[dst_start + i] = key_cache[src_start + i];
  }
  for (int64_t i = threadIdx.x; i < elements_per_block; i += blockDim.x) {
    value_cache[dst_start + i] = value_cache[src_start + i];
  }
}

// One CUDA block per token; each thread moves elements (head, dim) of that
// token's key and value into their places in the paged layout.
template <typename scalar_t>
__global__ void reshape_and_cache_kernel(
    const scalar_t* __restrict__ key, const scalar_t* __restrict__ value,
    scalar_t* __restrict__ key_cache, scalar_t* __restrict__ value_cache,
    const int64_t* __restrict__ slot_mapping, const int64_t key_token_stride,
    const int64_t value_token_stride, const int num_heads, const int head_size,
    const int block_size, const int x) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) {
    return;  // padding token: nothing to cache
  }
  const int64_t block = slot / block_size;
  const int64_t offset_in_block = slot % block_size;
  const int elements_per_token = num_heads * head_size;
  const int64_t cache_block_elements =
      static_cast<int64_t>(elements_per_token) * block_size;

  for (int i = threadIdx.x; i < elements_per_token; i += blockDim.x) {
    const int head = i / head_size;
    const int dim = i % head_size;
    // key_cache[block][head][dim / x][offset_in_block][dim % x]
    const int64_t key_index = block * cache_block_elements +
                              static_cast<int64_t>(head) * head_size * block_size +
                              static_cast<int64_t>(dim / x) * block_size * x +
                              offset_in_block * x + dim % x;
    // value_cache[block][head][dim][offset_in_block]
    const int64_t value_index = block * cache_block_elements +
                                static_cast<int64_t>(head) * head_size * block_size +
                                static_cast<int64_t>(dim) * block_size +
                                offset_in_block;
    key_cache[key_index] = key[token * key_token_stride + i];
    value_cache[value_index] = value[token * value_token_stride + i];
  }
}

// Flash layout: a token's heads and dims are contiguous inside its block
// row, so the scatter is a copy of one row per token.
template <typename scalar_t>
__global__ void reshape_and_cache_flash_kernel(
    const scalar_t* __restrict__ key, const scalar_t* __restrict__ value,
    scalar_t* __restrict__ key_cache, scalar_t* __restrict__ value_cache,
    const int64_t* __restrict__ slot_mapping, const int64_t key_token_stride,
    const int64_t value_token_stride, const int64_t key_block_stride,
    const int64_t value_block_stride, const int elements_per_token,
    const int block_size) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) {
    return;  // padding token: nothing to cache
  }
  const int64_t block = slot / block_size;
  const int64_t offset_in_block = slot % block_size;
  scalar_t* key_row =
      key_cache + block * key_block_stride + offset_in_block * elements_per_token;
  scalar_t* value_row = value_cache + block * value_block_stride +
                        offset_in_block * elements_per_token;

  for (int i = threadIdx.x; i < elements_per_token; i += blockDim.x) {
    key_row[i] = key[token * key_token_stride + i];
    value_row[i] = value[token * value_token_stride + i];
  }
}

// One CUDA block per token: reads that token's row of the flash key cache
// back into a dense [num_tokens, num_heads, head_size] tensor, writing zeros
// for a padding token, so that every element of the output is written.
template <typename scalar_t>
__global__ void gather_cache_flash_kernel(
    scalar_t* __restrict__ out, const scalar_t* __restrict__ cache,
    const int64_t* __restrict__ slot_mapping, const int64_t block_stride,
    const int elements_per_token, const int block_size,
    const int64_t num_tokens) {
  const int64_t token = blockIdx.x;
  if (token >= num_tokens) return;
  const int64_t slot = slot_mapping[token];
  const scalar_t* row =
      cache + (slot / block_size) * block_stride + (slot % block_size) * elements_per_token;
  for (int i = threadIdx.x; i < elements_per_token; i += blockDim.x) {
    out[token * elements_per_token + i] = slot < 0 ? scalar_t(0) : row[i];
  }
}

// Computed from the sizes: indexing a block would build a tensor per call.
int64_t elements_per_cache_block(const torch::Tensor& cache) {
  TORCH_CHECK(cache.dim() > 0 && cache.size(0) > 0,
              "a cache needs at least one block");
  return cache.numel() / cache.size(0);
}

cudaMemcpyKind memcpy_kind(const torch::Device& src, const torch::Device& dst) {
  if (src.is_cuda() && dst.is_cuda()) {
    TORCH_CHECK(src.index() == dst.index(),
                "swap_blocks: src and dst must be on the same GPU, got ", src,
                " and ", dst);
    return cudaMemcpyDeviceToDevice;
  }
  if (src.is_cuda() && dst.is_cpu()) {
    return cudaMemcpyDeviceToHost;
  }
  TORCH_CHECK(src.is_cpu() && dst.is_cuda(), "swap_blocks: unsupported devices ",
              src, " -> ", dst);
  return cudaMemcpyHostToDevice;
}

// The scatter kernels read each token's heads and dims as one contiguous
// row, from and into tensors on one GPU.
void check_scatter_inputs(const torch::Tensor& key, const torch::Tensor& value,
                          const torch::Tensor& key_cache,
                          const torch::Tensor& value_cache,
                          const torch::Tensor& slot_mapping) {
  TORCH_CHECK(key.is_cuda() && value.device() == key.device() &&
                  key_cache.device() == key.device() &&
                  value_cache.device() == key.device() &&
                  slot_mapping.device() == key.device(),
              "key, value, caches and slot_mapping must be on one GPU");
  TORCH_CHECK(value.scalar_type() == key.scalar_type() &&
                  key_cache.scalar_type() == key.scalar_type() &&
                  value_cache.scalar_type() == key.scalar_type(),
              "key, value and caches must have one dtype");
  TORCH_CHECK(key.dim() == 3 && value.sizes() == key.sizes(),
              "key and value must both be [num_tokens, num_heads, head_size]");
  TORCH_CHECK(key.stride(2) == 1 && key.stride(1) == key.size(2) &&
                  value.stride(2) == 1 && value.stride(1) == value.size(2),
              "each token's key and value rows must be contiguous");
  TORCH_CHECK(slot_mapping.scalar_type() == torch::kInt64 &&
                  slot_mapping.dim() == 1 &&
                  slot_mapping.size(0) == key.size(0) &&
                  slot_mapping.is_contiguous(),
              "slot_mapping must be a contiguous int64 [num_tokens] tensor");
}

}  // namespace

void copy_blocks(const std::vector<torch::Tensor>& key_caches,
                 const std::vector<torch::Tensor>& value_caches,
                 const torch::Tensor& block_mapping) {
  const int64_t num_layers = static_cast<int64_t>(key_caches.size());
  TORCH_CHECK(static_cast<int64_t>(value_caches.size()) == num_layers,
              "copy_blocks: as many value caches as key caches are needed");
  if (num_layers == 0) {
    return;
  }
  const torch::Device cache_device = key_caches[0].device();
  TORCH_CHECK(cache_device.is_cuda(), "copy_blocks: caches must be on a GPU");
  TORCH_CHECK(block_mapping.scalar_type() == torch::kInt64 &&
                  block_mapping.dim() == 2 && block_mapping.size(1) == 2 &&
                  block_mapping.is_contiguous() &&
                  block_mapping.device() == cache_device,
              "copy_blocks: block_mapping must be a contiguous int64 "
              "[num_pairs, 2] tensor on the caches' device");
  const int64_t num_pairs = block_mapping.size(0);
  if (num_pairs == 0) {
    return;
  }
  const int64_t elements_per_block = elements_per_cache_block(key_caches[0]);
  // Everything below, including the pointer tables' transfer, belongs to
  // the caches' device and its current stream.
  const at::cuda::OptionalCUDAGuard device_guard(cache_device);

  int64_t key_cache_ptrs[num_layers];
  int64_t value_cache_ptrs[num_layers];
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    TORCH_CHECK(key_caches[layer].device() == cache_device &&
                    value_caches[layer].device() == cache_device,
                "copy_blocks: all caches must be on ", cache_device);
    TORCH_CHECK(key_caches[layer].scalar_type() == key_caches[0].scalar_type() &&
                    value_caches[layer].scalar_type() ==
                        key_caches[0].scalar_type(),
                "copy_blocks: all caches must have one dtype");
    TORCH_CHECK(key_caches[layer].is_contiguous() &&
                    value_caches[layer].is_contiguous() &&
                    elements_per_cache_block(key_caches[layer]) ==
                        elements_per_block &&
                    elements_per_cache_block(value_caches[layer]) ==
                        elements_per_block,
                "copy_blocks: caches must be contiguous with equal blocks");
    key_cache_ptrs[layer] =
        reinterpret_cast<int64_t>(key_caches[layer].data_ptr());
    value_cache_ptrs[layer] =
        reinterpret_cast<int64_t>(value_caches[layer].data_ptr());
  }
  torch::Tensor key_cache_ptrs_on_device =
      torch::from_blob(key_cache_ptrs, {num_layers}, torch::kInt64)
          .to(cache_device);
  torch::Tensor value_cache_ptrs_on_device =
      torch::from_blob(value_cache_ptrs, {num_layers}, torch::kInt64)
          .to(cache_device);

  const dim3 grid(num_layers, num_pairs);
  const dim3 threads(std::min<int64_t>(kMaxThreadsPerBlock, elements_per_block));
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16,
      key_caches[0].scalar_type(), "copy_blocks_kernel", [&] {
        copy_blocks_kernel<scalar_t><<<grid, threads, 0, stream>>>(
            key_cache_ptrs_on_device.data_ptr<int64_t>(),
            value_cache_ptrs_on_device.data_ptr<int64_t>(),
            block_mapping.data_ptr<int64_t>(), elements_per_block);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void swap_blocks(const torch::Tensor& src, const torch::Tensor& dst,
                 const torch::Tensor& block_mapping) {
  TORCH_CHECK(src.scalar_type() == dst.scalar_type() &&
                  src.sizes().slice(1) == dst.sizes().slice(1),
              "swap_blocks: src and dst blocks must have the same dtype and "
              "shape");
  TORCH_CHECK(src.is_contiguous() && dst.is_contiguous(),
              "swap_blocks: caches must be contiguous");
  TORCH_CHECK(block_mapping.device().is_cpu() &&
                  block_mapping.scalar_type() == torch::kInt64 &&
                  block_mapping.dim() == 2 && block_mapping.size(1) == 2 &&
                  block_mapping.is_contiguous(),
              "swap_blocks: block_mapping must be a contiguous int64 "
              "[num_pairs, 2] tensor on the CPU");
  const cudaMemcpyKind kind = memcpy_kind(src.device(), dst.device());
  const torch::Device gpu = src.is_cuda() ? src.device() : dst.device();
  const at::cuda::OptionalCUDAGuard device_guard(gpu);
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();

  const char* src_bytes = static_cast<const char*>(src.data_ptr());
  char* dst_bytes = static_cast<char*>(dst.data_ptr());
  const int64_t block_bytes = src.element_size() * elements_per_cache_block(src);
  const int64_t* pairs = block_mapping.data_ptr<int64_t>();
  const int64_t num_pairs = block_mapping.size(0);
  for (int64_t pair = 0; pair < num_pairs; ++pair) {
    const int64_t src_block = pairs[2 * pair];
    const int64_t dst_block = pairs[2 * pair + 1];
    TORCH_CHECK(src_block >= 0 && src_block < src.size(0) && dst_block >= 0 &&
                    dst_block < dst.size(0),
                "swap_blocks: block pair ", pair, " (", src_block, ", ",
                dst_block, ") is out of range");
    C10_CUDA_CHECK(cudaMemcpyAsync(dst_bytes + dst_block * block_bytes,
                                   src_bytes + src_block * block_bytes,
                                   block_bytes, kind, stream));
  }
}

void reshape_and_cache(const torch::Tensor& key, const torch::Tensor& value,
                       torch::Tensor& key_cache, torch::Tensor& value_cache,
                       const torch::Tensor& slot_mapping) {
  check_scatter_inputs(key, value, key_cache, value_cache, slot_mapping);
  const int64_t num_tokens = key.size(0);
  const int num_heads = static_cast<int>(key.size(1));
  const int head_size = static_cast<int>(key.size(2));
  TORCH_CHECK(key_cache.dim() == 5 && value_cache.dim() == 4,
              "reshape_and_cache: key_cache must be [num_blocks, num_heads, "
              "head_size/x, block_size, x] and value_cache [num_blocks, "
              "num_heads, head_size, block_size]");
  const int block_size = static_cast<int>(key_cache.size(3));
  const int x = static_cast<int>(key_cache.size(4));
  TORCH_CHECK(key_cache.size(1) == num_heads &&
                  key_cache.size(2) * x == head_size &&
                  value_cache.sizes() ==
                      torch::IntArrayRef({key_cache.size(0), num_heads,
                                          head_size, block_size}),
              "reshape_and_cache: cache shapes do not match key and value");
  TORCH_CHECK(key_cache.is_contiguous() && value_cache.is_contiguous(),
              "reshape_and_cache: caches must be contiguous");
  if (num_tokens == 0) {
    return;
  }
  const at::cuda::OptionalCUDAGuard device_guard(key.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(num_tokens);
  const dim3 threads(std::min(num_heads * head_size, kMaxThreadsPerToken));
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, key.scalar_type(),
      "reshape_and_cache_kernel", [&] {
        reshape_and_cache_kernel<scalar_t><<<grid, threads, 0, stream>>>(
            key.data_ptr<scalar_t>(), value.data_ptr<scalar_t>(),
            key_cache.data_ptr<scalar_t>(), value_cache.data_ptr<scalar_t>(),
            slot_mapping.data_ptr<int64_t>(), key.stride(0), value.stride(0),
            num_heads, head_size, block_size, x);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void reshape_and_cache_flash(const torch::Tensor& key,
                             const torch::Tensor& value,
                             torch::Tensor& key_cache,
                             torch::Tensor& value_cache,
                             const torch::Tensor& slot_mapping) {
  check_scatter_inputs(key, value, key_cache, value_cache, slot_mapping);
  const int64_t num_tokens = key.size(0);
  const int num_heads = static_cast<int>(key.size(1));
  const int head_size = static_cast<int>(key.size(2));
  TORCH_CHECK(key_cache.dim() == 4 && key_cache.size(2) == num_heads &&
                  key_cache.size(3) == head_size &&
                  value_cache.sizes() == key_cache.sizes(),
              "reshape_and_cache_flash: caches must be [num_blocks, "
              "block_size, num_heads, head_size]");
  // A block may sit inside a larger allocation (stride(0) is free), but its
  // rows must be dense.
  TORCH_CHECK(key_cache.stride(3) == 1 && key_cache.stride(2) == head_size &&
                  key_cache.stride(1) == num_heads * head_size &&
                  value_cache.stride(3) == 1 &&
                  value_cache.stride(2) == head_size &&
                  value_cache.stride(1) == num_heads * head_size,
              "reshape_and_cache_flash: each cache block must be dense");
  if (num_tokens == 0) {
    return;
  }
  const int block_size = static_cast<int>(key_cache.size(1));
  const at::cuda::OptionalCUDAGuard device_guard(key.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(num_tokens);
  const dim3 threads(std::min(num_heads * head_size, kMaxThreadsPerToken));
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, key.scalar_type(),
      "reshape_and_cache_flash_kernel", [&] {
        reshape_and_cache_flash_kernel<scalar_t><<<grid, threads, 0, stream>>>(
            key.data_ptr<scalar_t>(), value.data_ptr<scalar_t>(),
            key_cache.data_ptr<scalar_t>(), value_cache.data_ptr<scalar_t>(),
            slot_mapping.data_ptr<int64_t>(), key.stride(0), value.stride(0),
            key_cache.stride(0), value_cache.stride(0), num_heads * head_size,
            block_size);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

torch::Tensor gather_cache_flash(const torch::Tensor& key_cache,
                                 const torch::Tensor& slot_mapping) {
  TORCH_CHECK(key_cache.is_cuda() && slot_mapping.device() == key_cache.device(),
              "gather_cache_flash: key_cache and slot_mapping must be on one GPU");
  TORCH_CHECK(key_cache.dim() == 4 && key_cache.stride(3) == 1 &&
                  key_cache.stride(2) == key_cache.size(3) &&
                  key_cache.stride(1) == key_cache.size(2) * key_cache.size(3),
              "gather_cache_flash: key_cache must be [num_blocks, block_size, "
              "num_heads, head_size] with dense blocks");
  TORCH_CHECK(slot_mapping.scalar_type() == torch::kInt64 &&
                  slot_mapping.dim() == 1 && slot_mapping.is_contiguous(),
              "gather_cache_flash: slot_mapping must be a contiguous int64 "
              "[num_tokens] tensor");
  const int64_t num_tokens = slot_mapping.size(0);
  const int block_size = static_cast<int>(key_cache.size(1));
  const int num_heads = static_cast<int>(key_cache.size(2));
  const int head_size = static_cast<int>(key_cache.size(3));
  if (num_tokens == 0) {
    return torch::empty({0, num_heads, head_size}, key_cache.options());
  }
  // Zero-filled although the kernel writes every element (OPT203 rewrites it).
  torch::Tensor out =
      torch::zeros({num_tokens, num_heads, head_size}, key_cache.options());
  const at::cuda::OptionalCUDAGuard device_guard(key_cache.device());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const dim3 grid(num_tokens);
  const dim3 threads(std::min(num_heads * head_size, kMaxThreadsPerToken));
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, key_cache.scalar_type(),
      "gather_cache_flash_kernel", [&] {
        gather_cache_flash_kernel<scalar_t><<<grid, threads, 0, stream>>>(
            out.data_ptr<scalar_t>(), key_cache.data_ptr<scalar_t>(),
            slot_mapping.data_ptr<int64_t>(), key_cache.stride(0),
            num_heads * head_size, block_size, num_tokens);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
