"""Pure-PyTorch versions of the KV-cache kernels: the oracle that both the
original and the rewritten CUDA builds must match bit for bit.

Each function mutates its destination in place, as the kernel does, and
works on any device. Layouts (x = 16 bytes / element size):

    paged key cache    [num_blocks, num_heads, head_size // x, block_size, x]
    paged value cache  [num_blocks, num_heads, head_size, block_size]
    flash caches       [num_blocks, block_size, num_heads, head_size]

`gather_cache_flash` returns a new tensor instead.

Block mappings are int64 [num_pairs, 2] tensors of (src block, dst block);
the destinations of one call are distinct and never a source of that call.
"""

from __future__ import annotations

import torch


def copy_blocks(
    key_caches: list[torch.Tensor],
    value_caches: list[torch.Tensor],
    block_mapping: torch.Tensor,
) -> None:
    """In every layer's key and value cache, block dst := block src."""
    for cache in (*key_caches, *value_caches):
        mapping = block_mapping.to(cache.device)
        cache[mapping[:, 1]] = cache[mapping[:, 0]]


def swap_blocks(src: torch.Tensor, dst: torch.Tensor, block_mapping: torch.Tensor) -> None:
    """dst[dst block] := src[src block], across devices if need be."""
    src_blocks = block_mapping[:, 0].to(src.device)
    dst_blocks = block_mapping[:, 1].to(dst.device)
    dst[dst_blocks] = src[src_blocks].to(dst.device)


def _valid_slots(slot_mapping: torch.Tensor, block_size: int) -> tuple[torch.Tensor, ...]:
    """Tokens to cache (slot >= 0) and their (block, offset in block)."""
    tokens = torch.nonzero(slot_mapping >= 0).flatten()
    slots = slot_mapping[tokens]
    return tokens, slots // block_size, slots % block_size


def reshape_and_cache(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Scatter key/value [num_tokens, num_heads, head_size] into the paged
    caches; negative slots are skipped."""
    _, num_heads, head_size = key.shape
    block_size, x = key_cache.shape[3], key_cache.shape[4]
    tokens, blocks, offsets = _valid_slots(slot_mapping, block_size)
    # Two advanced indices around slices put the token dimension first:
    # key_cache[blocks, :, :, offsets, :] is [tokens, heads, head_size // x, x].
    key_cache[blocks, :, :, offsets, :] = key[tokens].reshape(-1, num_heads, head_size // x, x)
    value_cache[blocks, :, :, offsets] = value[tokens]


def reshape_and_cache_flash(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
) -> None:
    """Scatter key/value [num_tokens, num_heads, head_size] into the flash
    caches; negative slots are skipped."""
    tokens, blocks, offsets = _valid_slots(slot_mapping, key_cache.shape[1])
    key_cache[blocks, offsets] = key[tokens]
    value_cache[blocks, offsets] = value[tokens]


def gather_cache_flash(key_cache: torch.Tensor, slot_mapping: torch.Tensor) -> torch.Tensor:
    """Each token's row of the flash key cache at its slot, [num_tokens,
    num_heads, head_size]; zeros for a negative slot."""
    _, block_size, num_heads, head_size = key_cache.shape
    out = torch.zeros((slot_mapping.shape[0], num_heads, head_size), dtype=key_cache.dtype, device=key_cache.device)
    tokens, blocks, offsets = _valid_slots(slot_mapping, block_size)
    out[tokens] = key_cache[blocks, offsets]
    return out
