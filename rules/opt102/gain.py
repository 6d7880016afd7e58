"""Where `device=` would save nothing measurable: advice (or a keep) instead of a fix, with the measurement.

A move to where the tensor already is (`F(..., device=d).to(d)`, the CPU,
a `*_like` template's own device), and host data (`torch.tensor(data)`,
`from_numpy`, the legacy constructors), which crosses from host memory
either way; moved to a provably CUDA device, that copy is OPT103's.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.python import PythonModule
from optpatch.analysis.torch_api import DATA_FACTORIES, LEGACY_TENSOR_TYPES, keyword_arg

from .device import DeviceSpelling
from .site import HOST_DATA_CLASSES, Site, like_template

LIKE_SAME_BASIS = "`zeros_like` of a template on the device, then `.to()` that device: 12.1 vs 11.7 us on an H100 (docs/benchmarks.md)"
DATA_BASIS = (
    "`torch.tensor(list_of_1024).cuda()` -> `device='cuda'`: 163.4 vs 162.1 us idle, 5013.9 vs 5013.7 us with 5 ms "
    "of GPU work queued (H100, docs/benchmarks.md): the data starts in host memory and both forms wait; "
    "`pin_memory=True` + `non_blocking=True` measured 5035 -> 292 us (17x) with 5 ms queued"
)
FROM_NUMPY_BASIS = (
    "`from_numpy(a).cuda()` -> `as_tensor(a, device='cuda')`: 381.5 vs 356.1 us for 1,048,576 floats, 17.6 vs 18.7 us "
    "for 1,024; both waited 5.2 ms with 5 ms of GPU work queued (H100, docs/benchmarks.md)"
)
CPU_BASIS = "a move to the CPU of a tensor on the CPU: `.to('cpu')` returns it unchanged, nothing to save"
SAME_DEVICE_BASIS = "a move to the device the tensor is created on: `.to()` returns it unchanged, nothing to save"
DEAD_STORE_BASIS = "a value assigned again before any read: nothing runs faster for rewriting it"


def already_there(module: PythonModule, site: Site) -> str | None:
    """Why the move goes to the device the factory already creates the tensor on, or None: `F(..., device=d).to(d)`,
    `F(..., device="cuda").cuda()`."""
    device = keyword_arg(site.factory, "device")
    move = site.move
    if device is None or site.ops or move.dtype is not None or move.blocker is not None:
        return None
    created = module.text(device.value)
    if move.device is None and created.strip("'\"") == "cuda" or move.device is not None and created == module.text(move.device):
        return (f"`{site.callee}(...)` already creates the tensor on `{created}`: `.{move.method}()` returns it unchanged, "
                "so there is nothing to rewrite; the move can go")
    return None


def nothing_to_gain(module: PythonModule, site: Site, device: DeviceSpelling) -> tuple[str, str] | Kept | None:
    """(reason, basis) of advice, or a keep, for a site where `device=` would save nothing measurable; else None."""
    if device.device_type == "cpu":
        rest = "the move can go" if site.move.dtype is None else "only the dtype conversion is left of the move"
        return f"moves to the CPU, where the tensor already is: `device=` would save nothing; {rest}", CPU_BASIS
    if site.callee in DATA_FACTORIES | HOST_DATA_CLASSES:
        if not site.ops and device.device_type == "cuda":
            return Kept(f"`{site.callee}(...)` copies host data: `device=` would save nothing (measured); OPT103 "
                        "(pinned-async-h2d) reports this copy (docs/rules/OPT103.md)", KeepCategory.NO_GAIN)
        if site.callee == "torch.from_numpy":
            return ("`torch.as_tensor(a, device=d)` would only save a wrapper tensor: the array's data crosses from host "
                    "memory either way (measured within noise). What helps on CUDA is a pinned copy: "
                    "`torch.from_numpy(a).pin_memory().to(d, non_blocking=True)`, which stops the copy from waiting "
                    "for queued GPU work", FROM_NUMPY_BASIS)
        pin = "pin it with `.pin_memory()`" if site.callee in LEGACY_TENSOR_TYPES else "create it with `pin_memory=True`"
        return (f"`{site.callee}(...)` copies host data: `device=` would save nothing (measured). To stop the copy "
                f"from waiting for queued GPU work, {pin} and move it with `.to(device, non_blocking=True)` (measured "
                "17x with 5 ms of GPU work queued)", DATA_BASIS)
    template = like_template(site)
    if template is not None and isinstance(site.move.device, cst.Attribute) and site.move.device.attr.value == "device" \
            and module.text(site.move.device.value) == module.text(template):
        return (f"`{module.text(site.move.device)}` is the template's own device, where `{site.callee}` already puts "
                "its result: `.to()` returns it unchanged, so `device=` would save nothing; the move can go", LIKE_SAME_BASIS)
    return None
