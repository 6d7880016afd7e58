"""The proof obligations of a copy, in the order they are checked; the first that fails decides.

1. The target is a CUDA device and the copy is host to device (here).
2. The constructor's own arguments allow the edit, and no `non_blocking=`
   is written out already (here; `non_blocking=True` from pageable memory
   gets advice).
3. The data is host memory, small enough for pinning to pay (here, from
   host_data.py).
4. A named source that becomes pinned is not written after the copy
   (writes.py).
5. The result is read on the copy's stream (readers.py).
6. The rewrite gains something (no_gain.py).

Each obligation that holds gives a `Step`; the fix's tier is the strictest.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.torch_api import CUDA_LEGACY_TENSOR_TYPES, DEVICE_CALLS, LEGACY_TENSOR_TYPES, is_true, keyword_arg
from optpatch.analysis.torch_values import Kind, classify, list_data
from optpatch.rule import Advice, KeepCategory, Kept, Tier
from optpatch.rule.python import PythonModule, walk

from .host_data import HostData, data_argument, host_data
from .no_gain import no_gain
from .proof import Proof, Step
from .readers import Readers, read_on_the_copy_stream
from .site import Site
from .source import FILLED_FACTORIES, Source
from .writes import written_after_copy

HIDDEN_SYNC_BASIS = (
    "`non_blocking=True` from pageable memory still waits for queued GPU work (vLLM #54660, #51841; with 5 ms queued "
    "every pageable form waited 5 ms or more, H100, docs/benchmarks.md)"
)


def prove(module: PythonModule, site: Site) -> Proof | Kept | Advice:
    """Every obligation's step, or the verdict of the first that fails."""
    source = site.source
    target = _target(module, site)
    if isinstance(target, Kept):
        return target
    blocker = _source_blocker(module, site)
    if blocker is not None:
        return blocker
    flag = _non_blocking_flag(module, site)
    if flag is not None:
        return flag
    data = _data_step(module, source)
    if isinstance(data, Kept):
        return data
    data_step, found = data
    if source.named_buffer_is_pinned:
        written = written_after_copy(module, site)
        if written is not None:
            return written
    readers = Readers(module, site.function) if site.function is not None else None
    if readers is not None:
        readers.follow(site.copy)
    consumers = read_on_the_copy_stream(module, site, readers)
    if isinstance(consumers, Kept):
        return consumers
    gains_nothing = no_gain(module, site, readers)
    if gains_nothing is not None:
        return gains_nothing
    steps = [target, data_step, consumers]
    if source.named_buffer_is_pinned:
        steps.append(Step(Tier.SAFE,
                          f"`{source.name.value}` is written only before the copy and read only for metadata after it"))
    if site.move is not None and site.move.dtype is not None:
        steps.append(Step(Tier.VALIDATE, f"`.to(..., {module.text(site.move.dtype)})`: the dtype conversion moves from "
                                         "the CPU to the GPU, where out-of-range float-to-integer conversions differ"))
    tier = max((step.tier for step in steps), key=lambda t: t.strictness)
    return Proof(tier, tuple(step.text for step in steps), found)


def _target(module: PythonModule, site: Site) -> Step | Kept:
    """Is the copy's target provably a CUDA device, and is the copy host to device?"""
    move = site.move
    if move is not None and move.blocker is not None:
        return Kept(move.blocker, move.blocker_category)
    if site.source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return Step(Tier.SAFE, f"`{site.source.callee}` copies to the current CUDA device, as `.cuda()` does")
    source_device = _source_device(module, site.source) if move is not None else None
    if move is not None and move.method == "cuda":
        if source_device is not None:
            return source_device
        return Step(Tier.SAFE, "`.cuda()` copies to a CUDA device")
    device = move.device if move is not None else keyword_arg(site.copy, "device").value
    value = classify(module, device)
    text = module.text(device)
    if value.kind is Kind.NONE:
        return Kept("`.to(None)` moves nothing", KeepCategory.NOT_A_DEVICE)
    if value.kind is Kind.DEVICE and value.device_type == "cpu":
        if source_device is not None:
            return Kept(f"a copy to the host (`{text}`) of a tensor created on a device: made non-blocking, the host "
                        "could read the buffer before the copy lands", KeepCategory.DEVICE_TO_HOST)
        return Kept(f"`{text}` is the host: the data stays where it is, nothing to gain", KeepCategory.NO_GAIN)
    if source_device is not None:
        return source_device
    if value.kind is Kind.DEVICE and value.device_type not in (None, "cuda"):
        return Kept(f"`{text}` names a `{value.device_type}` device: this rule pins memory for CUDA copies only",
                    KeepCategory.NOT_CUDA)
    if value.kind is Kind.DEVICE and value.device_type == "cuda" and value.proven:
        return Step(Tier.SAFE, f"`{text}` is a CUDA device: {value.evidence}")
    if value.kind is Kind.INTEGER:
        return Step(Tier.VALIDATE,
                    f"`{text}` is a device index ({value.evidence}): the current accelerator's, not provably CUDA")
    return Step(Tier.VALIDATE,
                f"`{text}` is not provably a CUDA device: {value.evidence}; `pin_memory=True` raises without CUDA")


def _source_device(module: PythonModule, source: Source) -> Kept | None:
    """Why the source may not be in host memory (a constructor with a `device=` other than the CPU), or None."""
    if source.callee == "pin_memory":
        return None
    device = keyword_arg(source.call, "device")
    if device is None:
        return None
    value = classify(module, device.value)
    if value.kind is Kind.DEVICE and value.device_type == "cpu":
        return None
    return Kept(f"the source is created with `device={module.text(device.value)}`, not provably in host memory",
                KeepCategory.DEVICE_MEMORY)


def _source_blocker(module: PythonModule, site: Site) -> Kept | None:
    """What in the constructor's own arguments forbids the edit."""
    call = site.source.call
    if any(arg.star == "**" for arg in call.args):
        return Kept("`**kwargs` may already carry `pin_memory=` or `device=`", KeepCategory.OTHER)
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and not is_true(pinned.value):
        return Kept(f"`pin_memory={module.text(pinned.value)}` is written out: pinning is chosen, kept as written",
                    KeepCategory.DELIBERATE)
    if site.move is None and site.source.callee not in CUDA_LEGACY_TENSOR_TYPES:
        requires_grad = keyword_arg(call, "requires_grad")
        if requires_grad is not None and not _is_false(requires_grad.value):
            return Kept("`requires_grad=`: with a move, the device copy would no longer be the leaf that receives "
                        "`.grad`", KeepCategory.OTHER)
        device = keyword_arg(call, "device").value
        if any(isinstance(node, cst.Call) and not module.refers_to(node.func, DEVICE_CALLS) for node in walk(device)):
            return Kept(f"`device={module.text(device)}` calls a function, which the move would call after the data is "
                        "converted", KeepCategory.CANNOT_SPELL)
    return None


def _non_blocking_flag(module: PythonModule, site: Site) -> Kept | Advice | None:
    """An existing `non_blocking=` decides: kept as written, or advice when it cannot work."""
    if site.move is None:
        return None
    flag = _non_blocking_argument(site.copy, site.move.method)
    if flag is None:
        return None
    if is_true(flag):
        if site.source.pinned:
            return Kept("already a non-blocking copy from pinned memory", KeepCategory.DELIBERATE)
        return Advice("`non_blocking=True` from pageable memory still waits for queued GPU work (a hidden "
                      "synchronisation): pin the source (`pin_memory=True`, `.pin_memory()`) to make the copy asynchronous",
                      HIDDEN_SYNC_BASIS)
    if _is_false(flag):
        return Kept("`non_blocking=False` is written out: a blocking copy is asked for, kept as written", KeepCategory.DELIBERATE)
    return Kept(f"`non_blocking={module.text(flag)}` is chosen at run time: kept as written", KeepCategory.DELIBERATE)


def _non_blocking_argument(call: cst.Call, method: str) -> cst.BaseExpression | None:
    keyword = keyword_arg(call, "non_blocking")
    if keyword is not None:
        return keyword.value
    positional = [arg.value for arg in call.args if arg.keyword is None]
    index = 1 if method == "cuda" else 2  # `.cuda(device, non_blocking)`, `.to(device, dtype, non_blocking)`
    return positional[index] if len(positional) > index else None


def _data_step(module: PythonModule, source: Source) -> tuple[Step, HostData | None] | Kept:
    """Is the data in host memory, and small enough for pinning to pay?"""
    if source.callee == "pin_memory":
        return Step(Tier.SAFE, "`.pin_memory()` is a pinned host buffer (it raises for anything else)"), None
    if source.callee == "torch.from_numpy":
        return Step(Tier.SAFE, "`torch.from_numpy` wraps a NumPy array: host memory"), HostData("a NumPy array", array=True)
    if source.callee in FILLED_FACTORIES:
        return Step(Tier.SAFE, f"`{source.callee}` without `device=` makes a CPU tensor, filled on the host here"), None
    if source.callee in LEGACY_TENSOR_TYPES or source.callee in CUDA_LEGACY_TENSOR_TYPES:
        kept = _legacy_data(module, source.call)
        if kept is not None:
            return kept
    data = data_argument(source.call)
    found = host_data(module, data, 0) if data is not None else None
    if found is None:
        spelled = module.text(data) if data is not None else "the data"
        return Step(Tier.VALIDATE, f"`{spelled}` is not provably host data: a tensor already on a device would make "
                                   "`pin_memory` raise"), None
    if found.large:
        size = f"`{found.runtime_length}`" if found.runtime_length else f"{found.length:,}"
        return Kept(f"a list of {size} elements ({found.evidence}): converting the list dominates, so pinning buys "
                    "nothing (65,536 elements take 9 ms either way)", KeepCategory.NO_GAIN)
    return Step(Tier.SAFE, f"the data is host memory: {found.evidence}"), found


def _legacy_data(module: PythonModule, call: cst.Call) -> Kept | None:
    """`torch.LongTensor(data)` copies host data only where `data` is provably a list or tuple, its one argument."""
    only = call.args[0] if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star else None
    if only is None or list_data(module, only.value) is None:
        return Kept(f"`{module.text(call)}` copies data only from a list or tuple, which its argument is not provably: "
                    "with an integer it makes an uninitialised tensor of that size, with a tensor it shares it",
                    KeepCategory.OTHER)
    return None


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"
