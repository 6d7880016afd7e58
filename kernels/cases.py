"""The inputs the kernels are checked and timed on: the size sweep, and
random caches, mappings and tokens for each case.

Every builder fills its inputs with random values (never zeros, which hide
copies from the wrong place) and poisons what the kernel must write with
NaN, so a destination it forgets stays visibly wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# Every eighth token is padding (slot -1), as in a batch padded for a CUDA
# graph.
PADDING_EVERY = 8


@dataclass(frozen=True)
class CacheGeometry:
    num_heads: int
    head_size: int
    block_size: int

    def x(self, dtype: torch.dtype) -> int:
        """Elements per 16 bytes: the innermost split of the paged key cache."""
        return 16 // dtype.itemsize

    def paged_key_shape(self, num_blocks: int, dtype: torch.dtype) -> tuple[int, ...]:
        x = self.x(dtype)
        return (num_blocks, self.num_heads, self.head_size // x, self.block_size, x)

    def paged_value_shape(self, num_blocks: int) -> tuple[int, ...]:
        return (num_blocks, self.num_heads, self.head_size, self.block_size)

    def flash_shape(self, num_blocks: int) -> tuple[int, ...]:
        return (num_blocks, self.block_size, self.num_heads, self.head_size)


# A Llama-like attention layer: 8 KV heads of 128, blocks of 16 tokens.
SERVING_GEOMETRY = CacheGeometry(num_heads=8, head_size=128, block_size=16)
# Small enough for the per-element loops of kernels.loops.
TINY_GEOMETRY = CacheGeometry(num_heads=2, head_size=16, block_size=4)


class RandomSource:
    """Seeded generators, one per device, so that random data is drawn where
    it lives (drawing gigabytes of caches on the CPU would take minutes)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._generators: dict[torch.device, torch.Generator] = {}

    def on(self, device: torch.device | str) -> torch.Generator:
        device = torch.device(device)
        if device not in self._generators:
            self._generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self._generators[device]


@dataclass(frozen=True)
class Workload:
    """One kernel at one size: a builder of fresh, poisoned arguments, the
    data the kernel reads (which must hold no NaN: a copy kernel would pass
    poison through unnoticed), and the tensors it writes in place (a tensor
    it returns is compared too)."""

    kernel: str
    shape: str
    make_args: Callable[[torch.dtype, torch.device, RandomSource], tuple]
    read: Callable[[tuple], list[torch.Tensor]]
    written: Callable[[tuple], list[torch.Tensor]]


def random_tensor(shape, dtype, device, rng: RandomSource, pin_memory=False) -> torch.Tensor:
    tensor = torch.zeros(shape, dtype=dtype, device=device, pin_memory=pin_memory)
    tensor.uniform_(-1.0, 1.0, generator=rng.on(device))
    return tensor


def disjoint_block_pairs(num_blocks: int, num_pairs: int, rng: RandomSource) -> torch.Tensor:
    """int64 [num_pairs, 2] on the CPU: distinct destinations, none of them
    a source."""
    order = torch.randperm(num_blocks, generator=rng.on("cpu"))
    return torch.stack([order[:num_pairs], order[num_pairs : 2 * num_pairs]], dim=1)


def padded_slot_mapping(num_tokens: int, num_slots: int, rng: RandomSource) -> torch.Tensor:
    """Distinct random slots for the tokens on the CPU, -1 for every
    eighth."""
    slots = torch.randperm(num_slots, generator=rng.on("cpu"))[:num_tokens]
    slots[PADDING_EVERY - 1 :: PADDING_EVERY] = -1
    return slots


def copy_blocks_workload(geometry: CacheGeometry, num_layers: int, num_pairs: int) -> Workload:
    num_blocks = 2 * num_pairs + 2

    def make_args(dtype, device, rng):
        key_caches = [random_tensor(geometry.paged_key_shape(num_blocks, dtype), dtype, device, rng)
                      for _ in range(num_layers)]
        value_caches = [random_tensor(geometry.paged_value_shape(num_blocks), dtype, device, rng)
                        for _ in range(num_layers)]
        mapping = disjoint_block_pairs(num_blocks, num_pairs, rng)
        for cache in (*key_caches, *value_caches):
            cache[mapping[:, 1].to(device)] = float("nan")
        return key_caches, value_caches, mapping.to(device)

    return Workload(
        kernel="copy_blocks",
        shape=f"layers={num_layers} pairs={num_pairs}",
        make_args=make_args,
        read=lambda args: [cache[args[2][:, 0]] for cache in (*args[0], *args[1])],
        written=lambda args: [*args[0], *args[1]],
    )


def swap_blocks_workload(geometry: CacheGeometry, direction: str, num_pairs: int) -> Workload:
    """direction: 'gpu->gpu', 'gpu->cpu' or 'cpu->gpu'; host memory is pinned,
    as a serving engine's swap space is."""
    num_blocks = 2 * num_pairs + 2
    src_side, dst_side = direction.split("->")

    def make_args(dtype, device, rng):
        def cache_on(side):
            on_host = side == "cpu"
            return random_tensor(geometry.paged_key_shape(num_blocks, dtype), dtype,
                                 "cpu" if on_host else device, rng,
                                 pin_memory=on_host and device.type == "cuda")

        src, dst = cache_on(src_side), cache_on(dst_side)
        mapping = disjoint_block_pairs(num_blocks, num_pairs, rng)
        dst[mapping[:, 1].to(dst.device)] = float("nan")
        return src, dst, mapping

    return Workload(
        kernel="swap_blocks",
        shape=f"{direction} pairs={num_pairs}",
        make_args=make_args,
        read=lambda args: [args[0][args[2][:, 0].to(args[0].device)]],
        written=lambda args: [args[1]],
    )


def _scatter_workload(kernel: str, geometry: CacheGeometry, num_tokens: int, flash: bool) -> Workload:
    # Room for every token with slack, so slots land in scattered blocks.
    num_blocks = 2 * num_tokens // geometry.block_size + 2

    def make_args(dtype, device, rng):
        token_shape = (num_tokens, geometry.num_heads, geometry.head_size)
        key = random_tensor(token_shape, dtype, device, rng)
        value = random_tensor(token_shape, dtype, device, rng)
        if flash:
            key_shape = value_shape = geometry.flash_shape(num_blocks)
        else:
            key_shape = geometry.paged_key_shape(num_blocks, dtype)
            value_shape = geometry.paged_value_shape(num_blocks)
        key_cache = torch.full(key_shape, float("nan"), dtype=dtype, device=device)
        value_cache = torch.full(value_shape, float("nan"), dtype=dtype, device=device)
        slots = padded_slot_mapping(num_tokens, num_blocks * geometry.block_size, rng)
        return key, value, key_cache, value_cache, slots.to(device)

    return Workload(
        kernel=kernel,
        shape=f"tokens={num_tokens}",
        make_args=make_args,
        read=lambda args: [args[0], args[1]],
        written=lambda args: [args[2], args[3]],
    )


def reshape_and_cache_workload(geometry: CacheGeometry, num_tokens: int) -> Workload:
    return _scatter_workload("reshape_and_cache", geometry, num_tokens, flash=False)


def reshape_and_cache_flash_workload(geometry: CacheGeometry, num_tokens: int) -> Workload:
    return _scatter_workload("reshape_and_cache_flash", geometry, num_tokens, flash=True)


def gather_cache_flash_workload(geometry: CacheGeometry, num_tokens: int) -> Workload:
    """The op returns its output: a fresh allocation, poisoned by the check."""
    num_blocks = 2 * num_tokens // geometry.block_size + 2

    def make_args(dtype, device, rng):
        key_cache = random_tensor(geometry.flash_shape(num_blocks), dtype, device, rng)
        slots = padded_slot_mapping(num_tokens, num_blocks * geometry.block_size, rng)
        return key_cache, slots.to(device)

    return Workload(
        kernel="gather_cache_flash",
        shape=f"tokens={num_tokens}",
        make_args=make_args,
        read=lambda args: [args[0]],
        written=lambda args: [],
    )


def gpu_sweep() -> list[Workload]:
    """The sizes `optpatch validate` checks and times on a GPU."""
    geometry = SERVING_GEOMETRY
    workloads = [copy_blocks_workload(geometry, layers, pairs)
                 for layers in (32, 80) for pairs in (1, 16, 256)]
    workloads += [swap_blocks_workload(geometry, direction, pairs)
                  for direction in ("gpu->gpu", "gpu->cpu", "cpu->gpu") for pairs in (1, 16, 256)]
    for tokens in (1, 16, 256, 2048):
        workloads.append(reshape_and_cache_workload(geometry, tokens))
        workloads.append(reshape_and_cache_flash_workload(geometry, tokens))
        workloads.append(gather_cache_flash_workload(geometry, tokens))
    return workloads


def cpu_reference_sweep() -> list[Workload]:
    """Small sizes on which the reference is checked against plain loops."""
    geometry = TINY_GEOMETRY
    workloads = [copy_blocks_workload(geometry, layers, pairs) for layers, pairs in ((1, 1), (3, 4))]
    workloads += [swap_blocks_workload(geometry, "cpu->cpu", pairs) for pairs in (1, 5)]
    for tokens in (1, 9, 17):
        workloads.append(reshape_and_cache_workload(geometry, tokens))
        workloads.append(reshape_and_cache_flash_workload(geometry, tokens))
        workloads.append(gather_cache_flash_workload(geometry, tokens))
    return workloads
