"""Run code that puts tensors on CUDA devices on a CPU-only machine, remembering where they would be.

OPT102 turns `.cuda()`, `.cuda(1)` and `.to("cuda:1")` into `device=`
arguments. A CPU build of torch can run neither form, so fixtures run under
`CudaOnCpu`: every CUDA device in `device=`, `.to(...)` and `.cuda(...)` is
replaced by the CPU, and each result records the CUDA device it was asked
for in `emulated_device` (`cuda` alone and `.cuda()` mean the current
device, index 0 here); ops on such a tensor (views, conversions) give
results on the same emulated device. Comparing `emulated_device` before
and after a rewrite checks that `.cuda(1)` and `device="cuda:1"` agree.

`copies` counts the host-to-device copies a run made (`.cuda()`, `.to()` of
a tensor not yet on a CUDA device): on a GPU each one waits for all queued
work, which is what a probe that discards its result is for.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

CURRENT_DEVICE = 0


def device_of(tensor: torch.Tensor) -> torch.device:
    """The device a tensor would be on: the emulated CUDA device, or its real one."""
    return getattr(tensor, "emulated_device", tensor.device)


def _cuda_device(value) -> torch.device | None:
    """The CUDA device that `value` names in `device=` / `.to()`, or None when it names no CUDA device."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return torch.device("cuda", value)
    if isinstance(value, str):
        value = torch.device(value)
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cuda", CURRENT_DEVICE if value.index is None else value.index)
    return None


def _inherit(result, args):
    """An op on a tensor emulated on a CUDA device gives a result on that device (views, conversions, arithmetic)."""
    if isinstance(result, torch.Tensor) and getattr(result, "emulated_device", None) is None:
        inputs = [a for arg in args for a in (arg if isinstance(arg, (list, tuple)) else (arg,))]
        device = next((t.emulated_device for t in inputs if getattr(t, "emulated_device", None) is not None), None)
        if device is not None:
            result.emulated_device = device
    return result


def _tag(result, device: torch.device):
    if isinstance(result, torch.Tensor):
        result.emulated_device = device
    return result


class CudaOnCpu(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.copies = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return self._cuda(args, kwargs)
        if func is torch.Tensor.to:
            return self._to(func, args, kwargs)
        device = _cuda_device(kwargs.get("device"))
        if device is not None:
            kwargs["device"] = "cpu"
            return _tag(func(*args, **kwargs), device)
        result = func(*args, **kwargs)
        return result if func is torch.Tensor.cpu else _inherit(result, args)

    def _cuda(self, args, kwargs):
        tensor, rest = args[0], args[1:]
        requested = rest[0] if rest else kwargs.get("device")
        device = torch.device("cuda", CURRENT_DEVICE) if requested is None else _cuda_device(requested)
        if device is None:
            raise RuntimeError(f"Invalid device, must be cuda device: {requested!r}")
        return self._moved(tensor, tensor.clone(), device)  # moving a CPU tensor to CUDA copies it

    def _to(self, func, args, kwargs):
        tensor, rest = args[0], list(args[1:])
        if rest and _cuda_device(rest[0]) is not None:
            device, rest[0] = _cuda_device(rest[0]), "cpu"
        elif _cuda_device(kwargs.get("device")) is not None:
            device, kwargs["device"] = _cuda_device(kwargs["device"]), "cpu"
        else:
            result = func(tensor, *rest, **kwargs)
            names_a_device = bool(rest) and isinstance(rest[0], (str, int, torch.device)) or "device" in kwargs
            return result if names_a_device else _inherit(result, args)  # `.to(dtype)` stays where it is
        result = func(tensor, *rest, **kwargs)
        return self._moved(tensor, tensor.clone() if result is tensor else result, device)

    def _moved(self, source: torch.Tensor, result: torch.Tensor, device: torch.device) -> torch.Tensor:
        """`result` of moving `source` to `device`, tagged with it; a copy from the host is counted."""
        if getattr(source, "emulated_device", None) is None:
            self.copies += 1
        return _tag(result, device)
