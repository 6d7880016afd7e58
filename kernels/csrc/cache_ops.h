// Host entry points of the bundled KV-cache kernels, shared by the CUDA
// source and the Python binding.
#pragma once

#include <torch/types.h>

#include <vector>

// For every layer, copies cache block mapping[i][0] onto block mapping[i][1]
// in both the key and the value cache. mapping: int64 [num_pairs, 2] on the
// caches' device.
void copy_blocks(const std::vector<torch::Tensor>& key_caches,
                 const std::vector<torch::Tensor>& value_caches,
                 const torch::Tensor& block_mapping);

// Copies whole blocks from src to dst, each on the GPU or in (pinned) host
// memory. mapping: int64 [num_pairs, 2] on the CPU.
void swap_blocks(const torch::Tensor& src, const torch::Tensor& dst,
                 const torch::Tensor& block_mapping);

// Scatters one step's keys and values [num_tokens, num_heads, head_size]
// into the paged caches at slot_mapping[token]; a negative slot is padding
// and is skipped.
//   key_cache:   [num_blocks, num_heads, head_size / x, block_size, x]
//   value_cache: [num_blocks, num_heads, head_size, block_size]
void reshape_and_cache(const torch::Tensor& key, const torch::Tensor& value,
                       torch::Tensor& key_cache, torch::Tensor& value_cache,
                       const torch::Tensor& slot_mapping);

// Same scatter for the flash layout, both caches
// [num_blocks, block_size, num_heads, head_size].
void reshape_and_cache_flash(const torch::Tensor& key,
                             const torch::Tensor& value,
                             torch::Tensor& key_cache,
                             torch::Tensor& value_cache,
                             const torch::Tensor& slot_mapping);

// Reads each token's row of the flash key cache [num_blocks, block_size,
// num_heads, head_size] at slot_mapping[token] into a new dense
// [num_tokens, num_heads, head_size] tensor; a negative slot gives zeros.
torch::Tensor gather_cache_flash(const torch::Tensor& key_cache,
                                 const torch::Tensor& slot_mapping);
