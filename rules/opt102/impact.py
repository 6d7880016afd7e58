"""What a fix buys: the impact class and its basis, from the measured host time of the factory at the site's size.

MEASURED holds the H100 figures (benchmarks/opt102_kinds.py,
docs/benchmarks.md); a site's size comes from the factory's literals.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import Impact
from optpatch.rule.python import PythonModule
from optpatch.analysis.torch_values import factory_numel, on_cpu

from .site import Site, like_template

# Host time per call in us, built on the host then moved -> built on the device, by number of elements:
# NVIDIA H100 80GB HBM3, torch 2.11.0+cu130, idle GPU, 2026-11-26 (benchmarks/opt102_kinds.py,
# docs/benchmarks.md). "chain" is `arange(n).int()`: the device also runs the conversion's kernel.
MEASURED: dict[str, dict[int, tuple[float, float]]] = {
    "zeros": {1: (17.0, 12.2), 1024: (14.2, 8.4), 65536: (57.7, 8.3), 1048576: (520.5, 12.2)},
    "ones": {1: (16.9, 10.7), 1024: (14.7, 8.1), 65536: (57.6, 11.7), 1048576: (496.0, 8.2)},
    "empty": {1: (16.9, 4.5), 1024: (13.8, 2.8), 65536: (40.9, 4.8), 1048576: (372.3, 4.5)},
    "full": {1: (12.3, 11.3), 1024: (16.0, 8.7), 65536: (93.6, 12.1), 1048576: (843.3, 11.6)},
    "eye": {1: (17.5, 19.6), 1024: (14.8, 15.1), 65536: (65.3, 21.1), 1048576: (483.2, 15.1)},
    "arange": {1: (15.2, 11.6), 1024: (15.8, 8.3), 65536: (105.9, 11.8), 1048576: (850.7, 8.4)},
    "linspace": {1: (13.3, 9.0), 1024: (16.4, 8.6), 65536: (113.1, 12.2), 1048576: (609.3, 12.7)},
    "randn": {1024: (18.2, 14.0), 1048576: (6510.2, 9.8)},
    "randint": {1024: (27.9, 14.7), 1048576: (8182.0, 14.1)},
    "randperm": {1024: (29.1, 53.1), 1048576: (13041.1, 95.1)},
    "chain": {1024: (23.9, 23.6), 1048576: (522.3, 21.2)},
}
QUEUED = ("with 5 ms of GPU work queued, every host form waited for all of it (5.0-5.7 ms) and the device form "
          "returned in 7-100 us")
# Impact classes by known size: a few us saved up to SMALL elements, tens of us up to MEDIUM_SIZE, more beyond.
SMALL = 1024
MEDIUM_SIZE = 65536
# Methods that never launch a kernel on a factory's fresh, contiguous result.
_FREE_VIEWS = frozenset(("view", "expand", "unsqueeze", "squeeze", "permute", "transpose", "t", "detach"))
LIKE_UNKNOWN_BASIS = (
    "the template's device is not known here: if it is already on the device, `.to()` was free (`zeros_like`: 12.1 "
    "vs 11.7 us); if it is on the CPU, as `zeros` (506.8 -> 11.9 us at 1,048,576 elements), on an H100 "
    "(docs/benchmarks.md)"
)


def measured_impact(module: PythonModule, site: Site) -> tuple[Impact, str]:
    """The impact class from the measured host time of this factory at this size (docs/benchmarks.md)."""
    template = like_template(site)
    if template is not None and on_cpu(module, template) is None:
        return Impact.LOW, LIKE_UNKNOWN_BASIS
    family = _measured_family(site)
    figures = MEASURED[family]
    numel = None if template is not None else factory_numel(module, site.factory, site.callee)
    if numel is None:
        small, large = min(figures), max(figures)
        return Impact.HIGH, (f"size not known here; `{family}`: {_figure(figures, small)} at {small:,} element(s) to "
                             f"{_figure(figures, large)} at {large:,} on an H100 (docs/benchmarks.md); {QUEUED}")
    measured = min((size for size in figures if size >= numel), default=max(figures))
    impact = Impact.LOW if numel <= SMALL else Impact.MEDIUM if numel <= MEDIUM_SIZE else Impact.HIGH
    return impact, (f"{numel:,} element(s); `{family}` at {measured:,}: {_figure(figures, measured)} on an H100 "
                    f"(docs/benchmarks.md); {QUEUED}")


def arange_impact(module: PythonModule, call: cst.Call) -> tuple[Impact, str]:
    """What creating the index on the device saves: the host `arange` and its copy, as `arange(n).to(d)` measured."""
    figures = MEASURED["arange"]
    numel = factory_numel(module, call, "torch.arange")
    measured = max(figures) if numel is None else min((size for size in figures if size >= numel), default=max(figures))
    impact = Impact.HIGH if numel is None or numel > MEDIUM_SIZE else Impact.MEDIUM if numel > SMALL else Impact.LOW
    size = "size not known here" if numel is None else f"{numel:,} element(s)"
    return impact, (f"{size}; `arange` at {measured:,}: {_figure(figures, measured)} on an H100 (docs/benchmarks.md), "
                    f"for a host index copied at each use; {QUEUED}")


def _measured_family(site: Site) -> str:
    """The row of MEASURED that fits the site: its factory, or the chain when the device runs a kernel for it."""
    if any(op.method not in _FREE_VIEWS for op in site.ops):
        return "chain"
    name = site.callee.removeprefix("torch.").removesuffix("_like")
    return {"logspace": "linspace", "rand": "randn", "normal": "randn"}.get(name, name)


def _figure(figures: dict[int, tuple[float, float]], size: int) -> str:
    before, after = figures[size]
    return f"{before:g} -> {after:g} us idle ({before / after:.1f}x)"
