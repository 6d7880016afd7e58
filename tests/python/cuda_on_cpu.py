"""Run code that puts tensors on CUDA devices on a CPU-only machine, remembering where they would be.

OPT102 turns `.cuda()`, `.cuda(1)` and `.to("cuda:1")` into `device=`
arguments. A CPU build of torch can run neither form, so fixtures run under
`CudaOnCpu`: every CUDA device in `device=`, `.to(...)` and `.cuda(...)` is
replaced by the CPU, and each result records the CUDA device it was asked
for in `emulated_device` (`cuda` alone and `.cuda()` mean the current
device, index 0 here); ops on such a tensor (views, conversions) give
results on the same emulated device. Comparing `emulated_device` before
and after a rewrite checks that `.cuda(1)` and `device="cuda:1"` agree. A
copy of such a tensor to the CPU (`.cpu()`, `.to("cpu")`) gives an ordinary
CPU tensor, as does a conversion to a legacy CPU type (`.type(torch.IntTensor)`).

`host_copies` counts the host-to-device copies a run made (`.cuda()`,
`.to()` of a tensor not yet on a CUDA device): on a GPU each one waits for
all queued work, which is what a probe that discards its result is for.

OPT103 makes host-to-device copies pinned and non-blocking. A CPU build of
torch has neither pinned memory nor streams, so `CudaOnCpu` stands in for
them, with these semantics:

- Pinned memory: `pin_memory=True` in a factory and `Tensor.pin_memory()`
  give an ordinary CPU tensor recorded as pinned (`is_pinned()` answers from
  the record, and a view of a pinned tensor is pinned). `pin_memory()` copies
  a tensor that is not pinned into a fresh buffer, and returns a pinned one
  as it is, as CUDA's does.
- A copy to a CUDA device with `non_blocking=True` from a pinned source is
  queued, not performed. Its result is filled with a poison value (NaN, or
  the largest integer) until the copy lands, and the copy lands as late as
  CUDA lets it: when an operation on the stream that was current at the copy
  touches the result (or a view of it), when that stream is waited for
  (`wait_stream`) or synchronised, or when the `CudaOnCpu` block ends (the
  harnesses compare results after it). It reads the source when it lands. So
  a read of the result on another stream with no wait in between sees the
  poison, as it may see garbage on a GPU.
- Until the host synchronises with that stream (`torch.cuda.synchronize()`,
  `Stream.synchronize()`, or a read of any tensor's values on the host while
  that stream is current: `.item()`, `.tolist()`, `.cpu()`, `.numpy()`,
  `bool()`, `int()`, `float()`), the GPU may still be reading the source.
  A write on the host to the source's memory in that time (an in-place
  operation, `t[i] = v`, `out=`) raises `EmulatedRace`: on a GPU the copy
  may read the old values, the new ones or a mix. A program that is correct
  under CUDA's stream semantics gives the same result as with blocking copies.
- A non-blocking copy from pageable memory is performed at once (CUDA stages
  pageable memory before returning), as is every blocking copy.
- The legacy CUDA constructors (`torch.cuda.LongTensor(data)`) build the
  CPU type's tensor and tag it with the current CUDA device (a host copy).
- Streams: for the block, `torch.cuda.Stream`, `torch.cuda.stream`,
  `torch.cuda.current_stream`, `torch.cuda.default_stream`,
  `torch.cuda.set_stream` and `torch.cuda.synchronize` are replaced by
  stand-ins that track which stream is current (`EmulatedStream`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

CURRENT_DEVICE = 0


def device_of(tensor: torch.Tensor) -> torch.device:
    """The device a tensor would be on: the emulated CUDA device, or its real one."""
    return getattr(tensor, "emulated_device", tensor.device)


def is_emulated_pinned(tensor: torch.Tensor) -> bool:
    return getattr(tensor, "emulated_pinned", False)


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


def _names_the_cpu(value) -> bool:
    return (isinstance(value, str) and torch.device(value).type == "cpu") or (
        isinstance(value, torch.device) and value.type == "cpu")


def _tag(result, device: torch.device):
    if isinstance(result, torch.Tensor):
        result.emulated_device = device
    return result


def _storage(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _poison(tensor: torch.Tensor) -> torch.Tensor:
    """What a buffer holds before a queued copy lands: values no fixture computes."""
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.fill_(float("nan"))
    if tensor.dtype == torch.bool:
        return tensor.fill_(True)
    return tensor.fill_(torch.iinfo(tensor.dtype).max)


class EmulatedRace(RuntimeError):
    """The host wrote the source of a non-blocking copy that the GPU may still be reading."""


class EmulatedStream:
    """A CUDA stream as far as ordering goes: which copies are queued on it."""

    def __init__(self, device=None, priority: int = 0, emulator: "CudaOnCpu | None" = None):
        self._emulator = emulator or CudaOnCpu.active

    def wait_stream(self, stream: "EmulatedStream") -> None:
        self._emulator.land(stream)

    def synchronize(self) -> None:
        self._emulator.synchronise_host(self)

    def wait_event(self, event) -> None:
        self._emulator.land(None)  # events are not tracked: everything queued before may be waited for

    def record_event(self, event=None):
        return event

    def query(self) -> bool:
        return not any(copy.stream is self for copy in self._emulator.copies)


@dataclass(eq=False)
class _QueuedCopy:
    source: torch.Tensor  # held, so that its memory is not reused, as the caching host allocator does
    result: torch.Tensor
    stream: EmulatedStream
    landed: bool = False


_LEGACY_TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
                 "IntTensor", "LongTensor", "BoolTensor")
# Reading values on the host waits for the current stream.
_HOST_READS = frozenset({"item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__"})


class CudaOnCpu(TorchFunctionMode):
    active: "CudaOnCpu | None" = None

    def __init__(self):
        super().__init__()
        self.copies: list[_QueuedCopy] = []  # queued copies the host has not synchronised with yet
        self.host_copies = 0  # copies from the host to a CUDA device, blocking or not
        self.default_stream = EmulatedStream(emulator=self)
        self.current_stream = self.default_stream
        self._landing = False
        self._patches = contextlib.ExitStack()

    # -- the block -------------------------------------------------------------------------------

    def __enter__(self):
        CudaOnCpu.active = self
        cuda = torch.cuda
        for name, value in (("Stream", EmulatedStream), ("stream", self._stream_block),
                            ("current_stream", lambda device=None: self.current_stream),
                            ("default_stream", lambda device=None: self.default_stream),
                            ("set_stream", self._set_stream),
                            ("synchronize", lambda device=None: self.synchronise_host(None)),
                            *((name, self._legacy_constructor(name)) for name in _LEGACY_TYPES)):
            self._patches.enter_context(_patched(cuda, name, value))
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            self.synchronise_host(None)
        finally:
            self._patches.close()
            CudaOnCpu.active = None
        return super().__exit__(*exc)

    @contextlib.contextmanager
    def _stream_block(self, stream):
        previous = self.current_stream
        self.current_stream = stream if stream is not None else previous
        try:
            yield stream
        finally:
            self.current_stream = previous

    def _set_stream(self, stream) -> None:
        self.current_stream = stream

    def _legacy_constructor(self, name: str):
        """`torch.cuda.LongTensor(data)`: the CPU type's tensor, copied to the current CUDA device (a host copy)."""
        host_type = getattr(torch, name)

        def construct(*args, **kwargs):
            self.host_copies += 1
            return _tag(host_type(*args, **kwargs), torch.device("cuda", CURRENT_DEVICE))

        return construct

    def land(self, stream: EmulatedStream | None) -> None:
        """Perform the queued copies of `stream` (of every stream for None), in the order they were queued."""
        self._landing = True
        try:
            for copy in self.copies:
                if not copy.landed and (stream is None or copy.stream is stream):
                    copy.result.copy_(copy.source)
                    copy.landed = True
        finally:
            self._landing = False

    def synchronise_host(self, stream: EmulatedStream | None) -> None:
        """The host waits for `stream` (every stream for None): its copies have landed and read their sources."""
        self.land(stream)
        self.copies = [copy for copy in self.copies if not (stream is None or copy.stream is stream)]

    # -- every torch call ---------------------------------------------------------------------------

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if self._landing:
            return func(*args, **kwargs)
        if self.copies:
            self._order(func, args, kwargs)
        if func is torch.Tensor.cuda:
            return self._cuda(args, kwargs)
        if func is torch.Tensor.to:
            return self._to(func, args, kwargs)
        if func is torch.Tensor.cpu or func is torch.Tensor.type and _legacy_host_type(args[1:], kwargs):
            return self._to_host(func(*args, **kwargs))
        if func is torch.Tensor.pin_memory:
            return self._pin(args[0])
        if func is torch.Tensor.is_pinned:
            return is_emulated_pinned(args[0])
        pinned = bool(kwargs.pop("pin_memory", False))
        if pinned and func is torch.tensor:
            _check_pinnable_data(args[0] if args else kwargs.get("data"))
        device = _cuda_device(kwargs.get("device"))
        if device is not None:
            kwargs["device"] = "cpu"
            return _tag(func(*args, **kwargs), device)
        result = func(*args, **kwargs)
        if pinned and isinstance(result, torch.Tensor):
            result.emulated_pinned = True
        return _inherit(self._keep_pinned_views(result, args), args)

    def _order(self, func, args, kwargs) -> None:
        """What this call waits for, and whether it writes a source the GPU may still be reading."""
        name = getattr(func, "__name__", "")
        if name in _HOST_READS:
            self.synchronise_host(self.current_stream)
            return
        tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
        storages = {_storage(t) for t in tensors}
        if any(not c.landed and _storage(c.result) in storages and c.stream is self.current_stream for c in self.copies):
            self.land(self.current_stream)
        written = [kwargs["out"]] if isinstance(kwargs.get("out"), torch.Tensor) else []
        if args and isinstance(args[0], torch.Tensor) and _writes_in_place(name):
            written.append(args[0])
        for tensor in written:
            if any(_storage(copy.source) == _storage(tensor) for copy in self.copies):
                raise EmulatedRace(f"`{name}` writes the source of a non-blocking copy before the host waited for it")

    def _keep_pinned_views(self, result, args):
        if isinstance(result, torch.Tensor) and not is_emulated_pinned(result):
            for tensor in args:
                if isinstance(tensor, torch.Tensor) and is_emulated_pinned(tensor) and _storage(tensor) == _storage(result):
                    result.emulated_pinned = True
                    break
        return result

    def _pin(self, tensor: torch.Tensor) -> torch.Tensor:
        if is_emulated_pinned(tensor):
            return tensor
        pinned = tensor.clone()
        pinned.emulated_pinned = True
        return pinned

    @staticmethod
    def _to_host(result):
        if isinstance(result, torch.Tensor) and hasattr(result, "emulated_device"):
            return result.clone()  # a copy to the host: an ordinary CPU tensor, untagged
        return result

    # -- copies to a CUDA device ------------------------------------------------------------------

    def _cuda(self, args, kwargs):
        tensor, rest = args[0], list(args[1:])
        requested = rest[0] if rest else kwargs.get("device")
        non_blocking = rest[1] if len(rest) > 1 else kwargs.get("non_blocking", False)
        device = torch.device("cuda", CURRENT_DEVICE) if requested is None else _cuda_device(requested)
        if device is None:
            raise RuntimeError(f"Invalid device, must be cuda device: {requested!r}")
        return self._copy(tensor, tensor.clone(), device, non_blocking)  # moving a CPU tensor to CUDA copies it

    def _to(self, func, args, kwargs):
        tensor, rest = args[0], list(args[1:])
        if rest and _cuda_device(rest[0]) is not None:
            device, rest[0] = _cuda_device(rest[0]), "cpu"
        elif _cuda_device(kwargs.get("device")) is not None:
            device, kwargs["device"] = _cuda_device(kwargs["device"]), "cpu"
        elif (rest and _names_the_cpu(rest[0])) or _names_the_cpu(kwargs.get("device")):
            self.synchronise_host(self.current_stream)  # a blocking copy to the host waits for the stream
            return self._to_host(func(tensor, *rest, **kwargs))
        else:
            return _inherit(func(tensor, *rest, **kwargs), args)  # `.to(dtype)` stays where the tensor is
        non_blocking = rest[2] if len(rest) > 2 else kwargs.get("non_blocking", False)
        result = func(tensor, *rest, **kwargs)
        return self._copy(tensor, tensor.clone() if result is tensor else result, device, non_blocking)

    def _copy(self, source: torch.Tensor, result: torch.Tensor, device: torch.device, non_blocking) -> torch.Tensor:
        """`result` holds the copied values already; a queued copy poisons it until it lands."""
        if getattr(source, "emulated_device", None) is None:
            self.host_copies += 1
        if non_blocking and is_emulated_pinned(source) and not hasattr(source, "emulated_device"):
            _poison(result)
            self.copies.append(_QueuedCopy(source, result, self.current_stream))
        return _tag(result, device)


def _legacy_host_type(rest, kwargs) -> bool:
    """`t.type(torch.IntTensor)` / `t.type("torch.IntTensor")`: a legacy CPU type, which moves a tensor to the host
    (`t.type(torch.int32)` keeps its device)."""
    target = rest[0] if rest else kwargs.get("dtype")
    name = target if isinstance(target, str) else getattr(target, "__module__", "") + "." + getattr(target, "__name__", "")
    return isinstance(target, (str, type)) and name.startswith("torch.") and not name.startswith("torch.cuda.")


def _writes_in_place(name: str) -> bool:
    """`t.fill_(...)`, `t[i] = v`, `t += v`: the operation writes its first argument."""
    if name == "__setitem__" or (name.startswith("__i") and name.endswith("__")):
        return True
    return name.endswith("_") and not name.startswith("_") and name != "requires_grad_"


@contextlib.contextmanager
def _patched(owner, name: str, value):
    missing = object()
    previous = getattr(owner, name, missing)
    setattr(owner, name, value)
    try:
        yield
    finally:
        if previous is missing:
            delattr(owner, name)
        else:
            setattr(owner, name, previous)


def _check_pinnable_data(data) -> None:
    """What `torch.tensor(data, pin_memory=True)` checks before it allocates (torch/csrc/utils/tensor_new.cpp)."""
    import numpy

    if isinstance(data, torch.Tensor):
        raise RuntimeError("Can't pin tensor constructed from a variable")
    if isinstance(data, numpy.ndarray):
        raise RuntimeError("Can't pin tensor constructed from numpy")
