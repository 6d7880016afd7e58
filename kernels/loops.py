"""The kernels' semantics as plain element-by-element loops: an oracle for
kernels.reference that shares none of its indexing tricks. Slow; for tiny
sizes on the CPU only. Same arguments, in-place behaviour and
results as kernels.reference.
"""

from __future__ import annotations

import torch


def _copy_block(src_cache: torch.Tensor, src_block: int, dst_cache: torch.Tensor, dst_block: int) -> None:
    src_elements = src_cache[src_block].flatten()
    dst_elements = dst_cache[dst_block].view(-1)
    for i in range(src_elements.numel()):
        dst_elements[i] = src_elements[i]


def copy_blocks(key_caches, value_caches, block_mapping) -> None:
    for src_block, dst_block in block_mapping.tolist():
        for cache in (*key_caches, *value_caches):
            _copy_block(cache, src_block, cache, dst_block)


def swap_blocks(src, dst, block_mapping) -> None:
    for src_block, dst_block in block_mapping.tolist():
        _copy_block(src, src_block, dst, dst_block)


def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping) -> None:
    num_tokens, num_heads, head_size = key.shape
    block_size, x = key_cache.shape[3], key_cache.shape[4]
    for token, slot in enumerate(slot_mapping.tolist()):
        if slot < 0:
            continue
        block, offset = divmod(slot, block_size)
        for head in range(num_heads):
            for dim in range(head_size):
                key_cache[block, head, dim // x, offset, dim % x] = key[token, head, dim]
                value_cache[block, head, dim, offset] = value[token, head, dim]


def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping) -> None:
    num_tokens, num_heads, head_size = key.shape
    block_size = key_cache.shape[1]
    for token, slot in enumerate(slot_mapping.tolist()):
        if slot < 0:
            continue
        block, offset = divmod(slot, block_size)
        for head in range(num_heads):
            for dim in range(head_size):
                key_cache[block, offset, head, dim] = key[token, head, dim]
                value_cache[block, offset, head, dim] = value[token, head, dim]


def gather_cache_flash(key_cache, slot_mapping) -> torch.Tensor:
    _, block_size, num_heads, head_size = key_cache.shape
    out = torch.empty((slot_mapping.shape[0], num_heads, head_size), dtype=key_cache.dtype)
    for token, slot in enumerate(slot_mapping.tolist()):
        block, offset = divmod(slot, block_size)
        for head in range(num_heads):
            for dim in range(head_size):
                out[token, head, dim] = 0 if slot < 0 else key_cache[block, offset, head, dim]
    return out
