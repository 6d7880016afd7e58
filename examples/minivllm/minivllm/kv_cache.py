"""Allocates the paged KV cache and the block tables that index it."""

import numpy as np
import torch


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KVCacheManager:
    def __init__(self, num_layers: int, num_blocks: int, block_size: int, num_heads: int, head_size: int,
                 dtype: torch.dtype, device: torch.device):
        self.block_size = block_size
        # KEEP: the cache is returned to the attention backend, which reads unwritten slots.
        self.kv_caches = [self._allocate(num_blocks, block_size, num_heads, head_size, dtype, device)
                          for _ in range(num_layers)]
        # Not torch: numpy's zeros are never touched.
        self.free_blocks = np.zeros(num_blocks, dtype=np.int32)

    @staticmethod
    def _allocate(num_blocks, block_size, num_heads, head_size, dtype, device):
        return torch.zeros(2, num_blocks, block_size, num_heads, head_size, dtype=dtype, device=device)

    def block_table(self, seq_lens: list[int], max_len: int, device: torch.device) -> torch.Tensor:
        # KEEP: padded to whole blocks and written only up to each sequence's length.
        table = torch.zeros(len(seq_lens), cdiv(max_len, self.block_size), dtype=torch.int32, device=device)
        for row, length in enumerate(seq_lens):
            table[row, : cdiv(length, self.block_size)] = torch.arange(cdiv(length, self.block_size))
        return table

    def swap_in(self, cpu_blocks: torch.Tensor, device: torch.device) -> torch.Tensor:
        # FIX: fully overwritten by copy_ right after allocation.
        gpu_blocks = torch.zeros(cpu_blocks.shape, dtype=cpu_blocks.dtype, device=device)
        gpu_blocks.copy_(cpu_blocks, non_blocking=True)
        return gpu_blocks
