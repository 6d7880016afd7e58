"""Poisoned uninitialised memory: the oracle that turns a wrong `empty` into a wrong result.

Pass "nan" is PyTorch's own: with deterministic algorithms on and
`torch.utils.deterministic.fill_uninitialized_memory = True`, new memory is
filled with NaN (floating point) or the largest integer, and bool with True.
Integer and bool tensors can hide a read of that pattern (True is also valid
data), so pass "pattern" fills every tensor from `empty`, `empty_like`,
`empty_strided` and `new_empty` with other values (1.2345e4, -7, 251,
False); memory those do not hand out (C++ `torch::empty`, TorchScript, the
grown part after `resize_`) still gets PyTorch's NaN fill in that pass.

`activate(mode)` poisons the running process; `poisoned(mode)` does so for
a block (tests). `sitecustomize_source(mode)` is this very file plus a
footer, written as a `sitecustomize.py` into a directory put on PYTHONPATH:
every Python process a command starts then poisons torch when, and only if,
it imports it, so a process that never imports torch pays one cheap import
hook. That is why this module imports nothing from optpatch: the command
may run under another interpreter, where optpatch is not installed.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import sys


class PoisonMode(str, enum.Enum):
    """A poison pass; each catches reads of memory the other's fill hides (the module's docstring)."""

    NAN = "nan"  # PyTorch's own fill: NaN, the largest integer, True
    PATTERN = "pattern"  # the allocators' tensors filled with other values (1.2345e4, -7, 251, False)

    def __str__(self) -> str:  # "nan" in messages and the JSON report, on any Python the sitecustomize runs under
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


MODES = tuple(PoisonMode)  # in the order a validation runs them
PATTERN_FLOAT = 1.2345e4
PATTERN_INT = -7
PATTERN_UINT8 = 251
LOG_VARIABLE = "OPTPATCH_POISON_LOG"  # a file each poisoned process appends "pid mode" to
IMPORT_LOG_VARIABLE = "OPTPATCH_IMPORT_LOG"  # a file each process appends, at exit, the tree's source files it imported
TREE_VARIABLE = "OPTPATCH_TREE"  # the tree whose files count (the validation's copy)
_ALLOCATORS = ("empty", "empty_like", "empty_strided")
_wrappers: dict = {}  # created once per process: TorchScript knows them by id(), which must never be reused


def poison_mode(mode: PoisonMode | str) -> PoisonMode:
    """MODE as a PoisonMode; a ValueError naming the modes for any other name."""
    try:
        return PoisonMode(mode)
    except ValueError:
        raise ValueError(f"unknown poison mode {mode!r}; use one of {tuple(m.value for m in PoisonMode)}") from None


def activate(mode: PoisonMode | str) -> None:
    import torch
    import torch.utils.deterministic  # noqa: F401  (the attribute below lives in this submodule)

    mode = poison_mode(mode)
    _enable_deterministic_fill(torch)
    if mode is PoisonMode.PATTERN:
        _install_pattern_allocators(torch)
    _log_activation(mode)


def _enable_deterministic_fill(torch) -> None:
    _set_deterministic(torch, True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True


def _set_deterministic(torch, enabled: bool, warn_only: bool) -> None:
    """`torch.use_deterministic_algorithms`, as ATen sees it.

    The public function also imports torch._inductor.config, 0.9 s in every
    process; the fill needs only the ATen flag, so set that when it exists.
    """
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
    else:
        set_flag(enabled, warn_only=warn_only)


def _fill(tensor):
    import torch

    if tensor.numel() == 0 or tensor.layout is not torch.strided or tensor.is_quantized:
        return tensor
    if tensor.dtype == torch.bool:
        return tensor.fill_(False)  # the NaN pass gives True: this pass catches the other half
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.fill_(PATTERN_FLOAT)
    return tensor.fill_(PATTERN_UINT8 if tensor.dtype == torch.uint8 else PATTERN_INT)


def _pattern_wrappers(torch) -> dict:
    if _wrappers:
        return _wrappers
    for name in _ALLOCATORS:
        original = getattr(torch, name)

        @functools.wraps(original)
        def allocate(*args, _original=original, **kwargs):
            tensor = _original(*args, **kwargs)
            with torch.no_grad():
                return _fill(tensor)

        _wrappers[name] = (original, allocate)
    original_new_empty = torch.Tensor.new_empty

    @functools.wraps(original_new_empty)
    def new_empty(self, *args, **kwargs):
        tensor = original_new_empty(self, *args, **kwargs)
        with torch.no_grad():
            return _fill(tensor)

    _wrappers["new_empty"] = (original_new_empty, new_empty)
    _register_with_torchscript(torch)
    return _wrappers


def _register_with_torchscript(torch) -> None:
    """TorchScript must compile `torch.empty` to aten::empty, not try to script the wrapper."""
    try:
        from torch.jit._builtins import _register_builtin
    except ImportError:
        return
    for name in _ALLOCATORS:
        _register_builtin(_wrappers[name][1], f"aten::{name}")


def _install_pattern_allocators(torch) -> None:
    wrappers = _pattern_wrappers(torch)
    for name in _ALLOCATORS:
        setattr(torch, name, wrappers[name][1])
    torch.Tensor.new_empty = wrappers["new_empty"][1]


def _restore_allocators(torch) -> None:
    for name, (original, _) in _wrappers.items():
        if name == "new_empty":
            torch.Tensor.new_empty = original
        else:
            setattr(torch, name, original)


def _log_activation(mode: PoisonMode) -> None:
    path = os.environ.get(LOG_VARIABLE)
    if not path:
        return
    with contextlib.suppress(OSError):
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()} {mode}\n")


@contextlib.contextmanager
def poisoned(mode: PoisonMode | str):
    """Poison within a block (tests); restores the allocators and deterministic settings after."""
    import torch
    import torch.utils.deterministic  # noqa: F401

    was_deterministic = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    was_filling = torch.utils.deterministic.fill_uninitialized_memory
    activate(mode)
    try:
        yield
    finally:
        _set_deterministic(torch, was_deterministic, was_warn_only)
        torch.utils.deterministic.fill_uninitialized_memory = was_filling
        _restore_allocators(torch)


class _PoisonTorchOnImport:
    """A meta-path finder that poisons torch right after `import torch` finishes, in any process."""

    def __init__(self, mode: PoisonMode):
        self.mode = mode

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # the real finders locate torch; this hook is done after once
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        execute, mode = spec.loader.exec_module, self.mode

        def exec_module(module):
            execute(module)
            activate(mode)

        spec.loader.exec_module = exec_module
        return spec


def poison_on_import(mode: PoisonMode | str) -> None:
    """Poison torch in this process when it is imported (at once if it already is)."""
    mode = poison_mode(mode)
    if "torch" in sys.modules:
        activate(mode)
    else:
        sys.meta_path.insert(0, _PoisonTorchOnImport(mode))


def record_imports_at_exit() -> None:
    """At exit, append to $OPTPATCH_IMPORT_LOG the files under $OPTPATCH_TREE that this process imported.

    That is the evidence that a test ran a fixed module at all: a
    validate-tier fix in a file no process imported was not validated by
    the command, however it ended. A process killed before it exits
    records nothing, which only keeps more fixes unvalidated.
    """
    path, tree = os.environ.get(IMPORT_LOG_VARIABLE), os.environ.get(TREE_VARIABLE)
    if not path or not tree:
        return
    import atexit

    root = os.path.realpath(tree) + os.sep

    def write() -> None:
        files = set()
        for module in list(sys.modules.values()):
            name = getattr(module, "__file__", None)
            if isinstance(name, str):
                real = os.path.realpath(name)
                if real.startswith(root):
                    files.add(real[len(root):].replace(os.sep, "/"))
        with contextlib.suppress(OSError):
            with open(path, "a", encoding="utf-8") as log:
                log.write("".join(f"{name}\n" for name in sorted(files)))

    atexit.register(write)


def run_shadowed_sitecustomize(own_directory: str) -> None:
    """Run the `sitecustomize` that this one hides on sys.path (a distribution's or the user's)."""
    import importlib.machinery
    import importlib.util

    own = os.path.realpath(own_directory)
    rest = [entry for entry in sys.path if os.path.realpath(entry or os.getcwd()) != own]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def sitecustomize_source(mode: PoisonMode | str) -> str:
    """A sitecustomize.py that poisons every Python process started with its directory on PYTHONPATH."""
    mode = poison_mode(mode)
    with open(__file__, encoding="utf-8") as own:
        body = own.read()
    footer = (
        "\n\n# Written by optpatch --validate: poison this process, then run the sitecustomize this file hides.\n"
        f"poison_on_import({mode.value!r})\n"
        "record_imports_at_exit()\n"
        "run_shadowed_sitecustomize(os.path.dirname(os.path.abspath(__file__)))\n"
    )
    return body + footer
