"""Poisoned uninitialised memory: the oracle that turns a wrong `empty` into a wrong result.

Pass "nan" is PyTorch's own: with deterministic algorithms on and
`torch.utils.deterministic.fill_uninitialized_memory = True`, new memory is
filled with NaN (floating point) or the largest integer. Integer and bool
tensors can hide a read of that pattern (True is also valid data), so pass
"pattern" fills every `empty` with a second, different value instead.

`activate(mode)` is what tests and `--validate` call inside the process
under test; `sitecustomize_source(mode)` is the same thing as a
`sitecustomize.py`, so that every Python subprocess a command starts is
poisoned too.
"""

from __future__ import annotations

import contextlib

MODES = ("nan", "pattern")
PATTERN_FLOAT = 1.2345e4
PATTERN_INT = -7


def activate(mode: str) -> None:
    import torch

    if mode == "nan":
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = True
        return
    if mode != "pattern":
        raise ValueError(f"unknown poison mode {mode!r}; use one of {MODES}")
    _wrap_allocators(torch)


def _fill(tensor):
    import torch

    if tensor.numel() == 0:
        return tensor
    if tensor.dtype == torch.bool:
        return tensor.fill_(False)  # the NaN pass gives True: this pass catches the other half
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.fill_(PATTERN_FLOAT)
    return tensor.fill_(PATTERN_INT if tensor.dtype != torch.uint8 else 251)


def _wrap_allocators(torch) -> None:
    if getattr(torch, "_optpatch_poisoned", False):
        return
    for name in ("empty", "empty_like", "empty_strided"):
        original = getattr(torch, name)

        def poisoned(*args, _original=original, **kwargs):
            with torch.no_grad():
                return _fill(_original(*args, **kwargs))

        setattr(torch, name, poisoned)
    original_new_empty = torch.Tensor.new_empty

    def new_empty(self, *args, **kwargs):
        with torch.no_grad():
            return _fill(original_new_empty(self, *args, **kwargs))

    torch.Tensor.new_empty = new_empty
    torch._optpatch_poisoned = True


@contextlib.contextmanager
def poisoned(mode: str):
    """Poison within a block (tests); restores the deterministic-algorithms setting after."""
    import torch

    was_deterministic = torch.are_deterministic_algorithms_enabled()
    saved = {name: getattr(torch, name) for name in ("empty", "empty_like", "empty_strided")}
    saved_new_empty = torch.Tensor.new_empty
    activate(mode)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was_deterministic)
        for name, value in saved.items():
            setattr(torch, name, value)
        torch.Tensor.new_empty = saved_new_empty
        torch._optpatch_poisoned = False


def sitecustomize_source(mode: str) -> str:
    """A sitecustomize.py that poisons every Python process started with it on PYTHONPATH."""
    return (
        "try:\n"
        "    import optpatch.poison as _p\n"
        f"    _p.activate({mode!r})\n"
        "except ImportError:\n"
        "    pass\n"
    )
