"""What a fix buys, and how its reason opens: the impact class with the measurement it rests on, and what the copy
costs now.

The gain is the host stall removed when GPU work is queued (measured on an
H100, docs/benchmarks.md), so a copy on a per-step path is high value, an
ordinary call medium and set-up code low.
"""

from __future__ import annotations

from optpatch.analysis.torch_api import CUDA_LEGACY_TENSOR_TYPES
from optpatch.rule import Context, Impact
from optpatch.rule.python import PythonModule

from .host_data import HostData
from .site import Site

LIST_BASIS = (
    "removes a host stall, not copy time: with 5 ms of GPU work queued a 16-element list's copy went 5,013 -> 24 us "
    "and a 1,024-element list's 5,014 -> 170 us; idle, 17 -> 14 us and 157 -> 155 us, within run-to-run noise (H100, "
    "torch 2.11, docs/benchmarks.md)"
)
UNKNOWN_LENGTH_BASIS = (
    LIST_BASIS + "; this list's length is not known here: the gain was measured up to 1,024 elements, and a "
    "65,536-element list costs 9 ms either way"
)
ARRAY_BASIS = (
    "with 5 ms of GPU work queued a 1 MiB array's copy went 5,045 -> 122 us and a 64 MiB array's 12.4 -> 1.5 ms; "
    "idle, 94 -> 30 us and 7.41 -> 0.78 ms (H100, torch 2.11, docs/benchmarks.md); the array's size is not known here"
)
PINNED_BASIS = (
    "the source is already pinned, so only the wait goes: with 5 ms of GPU work queued a blocking copy returned after "
    "5 ms or more, a non-blocking one from pinned memory in 24-170 us for up to 1,024 elements (H100, torch 2.11, "
    "docs/benchmarks.md)"
)


def impact_of(site: Site, data: HostData | None, context: Context) -> tuple[Impact, str]:
    """The impact class of a fix of this copy, run in `context`, and the measurement it rests on."""
    impact = Impact.HIGH if context is Context.HOT else Impact.MEDIUM
    if site.source.pinned:
        return impact, PINNED_BASIS
    if data is not None and data.array:
        return impact, ARRAY_BASIS
    return impact, LIST_BASIS if data is not None and data.length is not None else UNKNOWN_LENGTH_BASIS


def describe(module: PythonModule, site: Site) -> str:
    """What the copy does now, and what the fix changes."""
    source = site.source
    constructor = "`x.pin_memory()`" if source.callee == "pin_memory" else f"`{source.callee}(...)`"
    if site.move is None and source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return (f"{constructor} converts the list in pageable host memory and copies it to the current CUDA device, "
                "which waits for queued GPU work: build it on the host, pin it and copy with `non_blocking=True`")
    if site.move is None:
        return (f"{constructor} with `device=` converts the data in pageable host memory and copies it, which waits for "
                "queued GPU work: pin the data and copy with `non_blocking=True`")
    if source.name is not None:
        copy = (f"`{source.name.value}` = {constructor} (L{module.start(source.statement)[0]}) then "
                f"`{source.name.value}.{site.move.method}()`")
    else:
        copy = f"{constructor} then `.{site.move.method}()`"
    if source.pinned:
        return f"{copy}: a copy from pinned memory that still waits for queued GPU work: copy with `non_blocking=True`"
    return f"{copy}: a copy from pageable host memory, which waits for queued GPU work: pin it and copy with `non_blocking=True`"
