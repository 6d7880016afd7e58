"""What the zero fill costs where an allocation lives: its impact class and the measurement behind it.

The class follows the device (`device=`, `pin_memory=`) and, when the call
spells every size as a literal, its bytes; one-time allocations gain nothing
measurable.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.torch_api import DTYPES, is_true, keyword_arg, string_value
from optpatch.rule import Impact
from optpatch.rule.python import PythonModule

from .allocation import fill_argument
from .shape import element_count, shape_of

# The measurement behind each impact class (docs/benchmarks.md: H100, torch 2.11, CUDA 13.0; CPU: 2-core EPYC, torch 2.13).
CUDA_BASIS = (
    "skips the fill launch and the memset: host time per call 7.5-8.6 us -> 2.3-2.4 us at any size, GPU time "
    "14.0 -> 8.6 us at 1 MiB, 28.8 -> 8.6 us at 64 MiB, 334.7 -> 8.5 us at 1 GiB (H100, docs/benchmarks.md)"
)
CUDA_SMALL_BASIS = (
    "on CUDA the fill launch costs ~5 us of host time per call (7.8 -> 2.4 us at 1 MiB, H100) and its memset next to "
    "nothing at this size (GPU time 14.0 -> 8.6 us at 1 MiB, docs/benchmarks.md); on the CPU 0.1-0.5 us"
)
CUDA_MEDIUM_BASIS = (
    "on CUDA ~5 us of host time per call plus the memset: GPU time 14.0 -> 8.6 us at 1 MiB, 28.8 -> 8.6 us at "
    "64 MiB (H100, docs/benchmarks.md)"
)
CUDA_LARGE_BASIS = (
    "on CUDA the memset dominates: GPU time 28.8 -> 8.6 us at 64 MiB, 334.7 -> 8.5 us at 1 GiB (H100, docs/benchmarks.md)"
)
PINNED_BASIS = (
    "pinned host buffer, steady state: 2.8 -> 1.5 us at 64 KiB, 358 -> 2.1 us at 64 MiB per call "
    "(H100 host, torch 2.11, docs/benchmarks.md)"
)
PINNED_SMALL_BASIS = "steady state 2.8 -> 1.5 us per call at 64 KiB (H100 host, torch 2.11, docs/benchmarks.md)"
PINNED_LARGE_BASIS = "steady state 358 -> 2.1 us per call at 64 MiB (H100 host, torch 2.11, docs/benchmarks.md)"
CPU_BASIS = (
    "CPU tensor: skips a memset, ~0.5 us at 64 KiB, 8 us at 1 MiB, 25 ms at 64 MiB with first-touch page faults "
    "(2-core EPYC, torch 2.13 CPU, docs/benchmarks.md)"
)
CPU_SMALL_BASIS = "skips a memset of 0.1-0.5 us (1-64 KiB: 0.77 -> 0.64 us, 1.11 -> 0.63 us; 2-core EPYC, docs/benchmarks.md)"
CPU_LARGE_BASIS = "skips a memset: 8.8 -> 0.6 us at 1 MiB, 25 ms -> 10 us at 64 MiB with page faults (2-core EPYC, docs/benchmarks.md)"


def impact_of(module: PythonModule, call: cst.Call, kind: str) -> tuple[Impact, str]:
    """What the zero fill costs where this allocation lives, by device and, when the call spells it, size."""
    size = _size_in_bytes(module, call, kind)
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and is_true(pinned.value):
        if size is not None and size <= 64 * 1024:
            return Impact.LOW, f"{_bytes(size)} pinned host buffer: {PINNED_SMALL_BASIS}"
        if size is not None and size >= 64 * 1024 * 1024:
            return Impact.HIGH, f"{_bytes(size)} pinned host buffer: {PINNED_LARGE_BASIS}"
        return Impact.MEDIUM, PINNED_BASIS
    device = keyword_arg(call, "device")
    on_cpu = (device is None and kind in ("zeros", "full")) or (
        device is not None and (string_value(device.value) or "").startswith("cpu"))
    if on_cpu:
        note = " (no device=: the default device, usually the CPU)" if device is None else ""
        if size is not None and size >= 1024 * 1024:
            return Impact.MEDIUM, f"{_bytes(size)} on the CPU{note}: {CPU_LARGE_BASIS}"
        if size is not None:
            return Impact.LOW, f"{_bytes(size)} on the CPU{note}: {CPU_SMALL_BASIS}"
        return Impact.LOW, CPU_BASIS + note
    where = "" if device is not None else " (on the template's device: on the CPU see docs/benchmarks.md's CPU table)"
    if size is not None and size < 1024 * 1024:
        return Impact.LOW, f"{_bytes(size)}{where}: {CUDA_SMALL_BASIS}"
    if size is not None and size >= 64 * 1024 * 1024:
        return Impact.HIGH, f"{_bytes(size)}{where}: {CUDA_LARGE_BASIS}"
    if size is not None:
        return Impact.MEDIUM, f"{_bytes(size)}{where}: {CUDA_MEDIUM_BASIS}"
    return Impact.MEDIUM, CUDA_BASIS + where


def _size_in_bytes(module: PythonModule, call: cst.Call, kind: str) -> int | None:
    """Bytes the allocation takes, when the call spells every size as a literal; an unknown dtype counts 16 bytes."""
    count = element_count(shape_of(module, call, kind))
    if count is None:
        return None
    dtype = keyword_arg(call, "dtype")
    if dtype is not None:
        width = DTYPES.get(module.refers_to(dtype.value, frozenset(DTYPES)) or "", ("", 0))[1]
        return count * max(width // 8, 1) if width else count * 16
    if kind in ("zeros", "full"):
        return count * 4 if kind == "zeros" or not isinstance(fill_argument(call, kind).value, cst.Name) else count
    return count * 16


def _bytes(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"
