"""What the factory call allows: whether it can take `device=`, and whether its values depend on the device.

A factory with `device=` (other than the CPU), `out=`, `generator=`,
`**kwargs` or `pin_memory=True` is kept. Otherwise its values set the
tier: random factories, `logspace` and a fractional `arange` are
`unsafe`, `linspace` and a `*_like` beside a tensor subclass `validate`,
`requires_grad=True` `unsafe`.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.python import PythonModule
from optpatch.analysis.overwrite import CHAINED_FULL_WRITES, prove_chained_overwrite
from optpatch.analysis.tensor_subclasses import receiver_caution
from optpatch.analysis.torch_api import LEGACY_TENSOR_TYPES, LIKE_FACTORIES, RANDOM_FACTORIES, keyword_arg
from optpatch.analysis.torch_values import Kind, classify, list_data

from .device import cpu_device
from .site import Site


def factory_blocker(module: PythonModule, site: Site) -> Kept | None:
    """Why the factory call itself cannot take `device=`."""
    call = site.factory
    device = keyword_arg(call, "device")
    if device is not None and cpu_device(module, device.value) is None:
        return Kept(f"already has `device=`: `.{site.move.method}()` moves it afterwards; change that `device=` instead "
                    "(never a second one)", KeepCategory.DEVICE_ALREADY_SET)
    for keyword, reason, category in (
        ("out", "`out=` writes into an existing tensor, whose device is fixed", KeepCategory.OUT_TARGET),
        ("generator", "`generator=` names a generator, which is tied to one device", KeepCategory.OTHER),
    ):
        if keyword_arg(call, keyword) is not None:
            return Kept(reason, category)
    if any(arg.star == "**" for arg in call.args):
        return Kept("`**kwargs` may already carry `device=`", KeepCategory.OTHER)
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and not _is_false(pinned.value):
        return Kept("`pin_memory=True`: a pinned staging buffer for an asynchronous copy is deliberate, and "
                    "`pin_memory=True` with a CUDA `device=` is an error", KeepCategory.DELIBERATE)
    positional = [arg for arg in call.args if arg.keyword is None]
    if site.callee == "torch.as_tensor" and len(positional) > 1:
        return Kept("`as_tensor` with positional dtype or device arguments", KeepCategory.CANNOT_SPELL)
    if site.callee == "torch.from_numpy" and (len(call.args) != 1 or positional != list(call.args)):
        return Kept("`from_numpy` with other than one positional argument", KeepCategory.CANNOT_SPELL)
    if site.callee in LEGACY_TENSOR_TYPES:
        return _legacy_data(module, site)
    return None


def _legacy_data(module: PythonModule, site: Site) -> Kept | None:
    """`torch.LongTensor(data)` is host data only where `data` is provably a list or tuple."""
    call = site.factory
    evidence = list_data(module, call.args[0].value) if len(call.args) == 1 and call.args[0].keyword is None \
        and not call.args[0].star else None
    if evidence is None:
        return Kept(f"`{module.text(call)}` copies data only from a list or tuple, which its argument is not provably: "
                    "with an integer it makes an uninitialised tensor of that size, with a tensor it shares it",
                    KeepCategory.OTHER)
    return None


UNSET_FACTORIES = frozenset({"torch.empty", "torch.empty_like", "torch.empty_strided"})


def _written_in_full(module: PythonModule, site: Site) -> bool:
    """An unset allocation's elements are written before anything reads them: a full write chained before the move
    (`torch.empty(n).fill_(1).cuda()`) or on the moved tensor itself (`torch.empty(n).to(d).fill_(3)`)."""
    if any(op.method in CHAINED_FULL_WRITES for op in site.ops):
        return True
    return site.second is None and prove_chained_overwrite(module, site.move_call) is not None


def value_tier(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    """Do the values depend on the device that computes them?"""
    callee = site.callee
    if callee in RANDOM_FACTORIES:
        return Tier.UNSAFE, "random values: the device's generator draws different numbers than the CPU's"
    if callee == "torch.logspace":
        return Tier.UNSAFE, "logspace rounds differently on the device (964 of 1000 values differed on an H200)"
    if callee == "torch.linspace":
        return Tier.VALIDATE, ("linspace is computed by the device's kernel: measured bit-identical on an H100 and an H200 "
                               "(docs/benchmarks.md), not proven")
    if callee == "torch.arange":
        fractional = fractional_arange_argument(module, site.factory)
        if fractional is not None:
            return Tier.UNSAFE, (f"arange with a start or step `{fractional}` that may be fractional rounds differently on "
                                 "the device (864 of 2702 values of arange(0.5, 1000, 0.37) differed on an H200)")
        return Tier.SAFE, "arange with integer start and step: the same integers on every device"
    if callee in UNSET_FACTORIES and not _written_in_full(module, site):
        return Tier.VALIDATE, (f"`{callee.removeprefix('torch.')}` leaves its elements unset, and they differ by place: "
                               "a large host allocation starts as the system's zeroed pages, a device one is recycled "
                               "from the caching allocator; a read before a full write (gpt-neox's `generation_logits`) "
                               "then sees other values")
    if callee in LIKE_FACTORIES:
        return Tier.SAFE, (f"`{callee.removeprefix('torch.')}(x, device=d)` makes what `{callee.removeprefix('torch.')}(x)"
                           ".to(d)` makes (x's shape, dtype, layout and strides on `d`), whatever device `x` is on")
    return None


def subclass_tier(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    """`*_like(x).to(d)`: a tensor subclass with a dispatch hook, defined in this file or a project module it
    imports, may implement the factory without `device=` and not with it (analysis/tensor_subclasses.py)."""
    if site.callee not in LIKE_FACTORIES:
        return None
    caution = receiver_caution(module, f"`{site.callee.rpartition('.')[2]}` as called here")
    return (Tier.VALIDATE, caution) if caution is not None else None


def fractional_arange_argument(module: PythonModule, call: cst.Call) -> str | None:
    """The start or step of `arange` that is not provably an integer (the end only sets the count)."""
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if len(positional) == 1:
        values = [keywords.get("step")]
    else:
        values = [positional[0], positional[2] if len(positional) > 2 else keywords.get("step")]
    values.append(keywords.get("start"))
    for value in values:
        if value is not None:
            found = classify(module, value)
            if not (found.kind is Kind.INTEGER and found.proven):
                return module.text(value)
    return None


def autograd_tier(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    requires_grad = keyword_arg(site.factory, "requires_grad")
    if requires_grad is None or _is_false(requires_grad.value):
        return None
    return Tier.UNSAFE, ("`requires_grad=True`: the moved copy is a non-leaf of a CPU leaf, while `device=` makes "
                         "the result itself the leaf that receives `.grad`")


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"
