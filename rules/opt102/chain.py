"""What stands between the factory and the move, and whether the device computes it the same way.

Views and copies keep their values on every device; a method that
computes new values, or an `expand` the move would have copied, keeps the
site. Each dtype conversion (`.int()`, `.to(dtype)`, a legacy
`.type(torch.IntTensor)`, the move's own `dtype`) must be exact for the
factory's values. `device=` is evaluated before the chain's arguments:
where both hold calls, the site is kept.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import KeepCategory, Kept, Tier
from optpatch.rule.python import PythonModule, walk
from optpatch.analysis.torch_api import FACTORIES, ZERO_ONE_FACTORIES, exact_in, keyword_arg
from optpatch.analysis.torch_values import ChainOp, Kind, Step, Values, classify, convert, factory_elements

from .site import Site, op_text

# Methods that copy their receiver into a tensor of its own (which a move would also have done).
_COPIES = frozenset(("clone", "contiguous", "repeat"))


def op_between(module: PythonModule, site: Site) -> Kept | None:
    """A method call between the factory and the move that computes new values (`.sum()`, `.fill_(v)`), or a
    broadcast view that the move would have copied into a tensor of its own."""
    broadcast = None
    for op in site.ops:
        if op.step is Step.OTHER:
            what = "reinterprets the bits as another dtype" if op.method == "view" else \
                "is not a view, a copy or a dtype conversion"
            return Kept(f"`{op_text(module, op)}` between `{site.callee}(...)` and the move {what}: computed on the "
                        "device, it is not proven to give the same values", KeepCategory.OP_BETWEEN)
        if op.method == "expand" and not _expands_nothing(op.call):
            broadcast = op
        elif op.method in _COPIES:
            broadcast = None
    if broadcast is not None:
        return Kept(f"`{op_text(module, broadcast)}` makes a view whose elements share memory, which the move copied "
                    "into a tensor of its own; on the device the result would stay that view (writes to one element "
                    "would show in others, or fail)", KeepCategory.OP_BETWEEN)
    if site.ops and site.move.dtype is not None:
        return Kept(f"the move also converts to `{module.text(site.move.dtype)}` after "
                    f"`{op_text(module, site.ops[-1])}`: the dtype cannot go into the factory past the chain",
                    KeepCategory.CANNOT_SPELL)
    return None


def _expands_nothing(call: cst.Call) -> bool:
    """`expand(1, -1)`: every size is 1 or -1, so no element is repeated (at most a dimension of size 1 is added)."""
    def one_or_minus_one(node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            node = node.expression
        return isinstance(node, cst.Integer) and node.evaluated_value == 1

    return bool(call.args) and all(arg.keyword is None and not arg.star and one_or_minus_one(arg.value) for arg in call.args)


def chain_casts(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    """Each dtype conversion between the factory and the move gives the same values on the device."""
    casts = [op for op in site.ops if op.step is Step.CAST]
    if not casts:
        return None
    elements = factory_elements(module, site.factory, site.callee)
    tier, reasons = Tier.SAFE, []
    for op in casts:
        outcome = convert(elements, op.dtype)
        if isinstance(outcome, str):
            return Kept(f"`{op_text(module, op)}` after `{site.callee}(...)`: {outcome} ({elements.evidence})",
                        KeepCategory.INEXACT_CONVERSION)
        elements = outcome.elements
        if not outcome.proven:
            tier = Tier.VALIDATE
        reasons.append(f"`{op_text(module, op)}`: {outcome.reason}")
    return tier, "; ".join(reasons)


def legacy_casts(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    """`.type(torch.IntTensor)` converts and moves to the CPU: after `device=` it is written as its dtype,
    `.type(torch.int32)`, which keeps the device; alone after a 0/1 factory, as the factory's `dtype=`."""
    legacy = [op for op in site.ops if op.legacy is not None]
    if not legacy:
        return None
    for op in legacy:
        if legacy_dtype_text(module, op) is None:
            return Kept(f"`{op_text(module, op)}` also moves to the CPU, and its dtype cannot be spelled from "
                        f"`{module.text(op.call.args[0].value)}`", KeepCategory.CANNOT_SPELL)
    merged = merged_legacy(module, site)
    if merged is not None:
        return Tier.SAFE, (f"`{op_text(module, merged)}` converts to {merged.dtype} and moves to the CPU: it becomes "
                           f"`dtype={legacy_dtype_text(module, merged)}` of a factory whose every value is 0 or 1")
    texts = ", ".join(f"`{op_text(module, op)}` -> `.type({legacy_dtype_text(module, op)})`" for op in legacy)
    return Tier.SAFE, f"a legacy type converts and moves to the CPU, a dtype keeps the device: {texts}"


def legacy_dtype_text(module: PythonModule, op: ChainOp) -> str | None:
    """`torch.int32` for `.type(torch.IntTensor)`, with the module's own spelling of torch."""
    target = op.call.args[0].value
    if not isinstance(target, cst.Attribute) or op.dtype is None:
        return None
    return f"{module.text(target.value)}.{op.dtype.removeprefix('torch.')}"


def merged_legacy(module: PythonModule, site: Site) -> ChainOp | None:
    """The chain's one op, a legacy `.type(...)` after a 0/1 factory without `dtype=`: it goes into the factory."""
    if len(site.ops) != 1 or site.ops[0].legacy is None or site.move.dtype is not None or site.callee not in FACTORIES:
        return None
    if keyword_arg(site.factory, "dtype") is not None:
        return None
    elements = factory_elements(module, site.factory, site.callee)
    return site.ops[0] if elements.values is Values.ZERO_ONE else None


def dtype_merge(module: PythonModule, site: Site) -> tuple[Tier, str] | Kept | None:
    """`.to(d, dtype)`: merged only when the factory has no dtype= and converting its values is exact."""
    move = site.move
    if move.dtype is None:
        return None
    dtype_text = module.text(move.dtype)
    value = move.dtype_value
    if keyword_arg(site.factory, "dtype") is not None:
        return Kept(f"the factory has `dtype=` and the move converts to `{dtype_text}`: two conversions, kept",
                    KeepCategory.INEXACT_CONVERSION)
    if site.callee in ZERO_ONE_FACTORIES and value is not None and value.kind is Kind.DTYPE:
        return Tier.SAFE, f"every value of `{site.callee}` is 0 or 1 (or unset), exact in any dtype ({value.evidence})"
    if value is None or value.kind is not Kind.DTYPE or value.dtype is None:
        return Kept(f"`.to(..., {dtype_text})`: the dtype is not known exactly ({value.evidence if value else 'unknown'})",
                    KeepCategory.INEXACT_CONVERSION)
    source = _integer_source_dtype(module, site)
    if source is not None and exact_in(source, value.dtype):
        return Tier.SAFE, f"`{site.callee}` makes {source} values here, exact in `{value.dtype}`"
    return Kept(f"`{site.callee}` computes its values in its own dtype before `.to(..., {dtype_text})` converts them; "
                "computing them in the new dtype is not proven to give the same values", KeepCategory.INEXACT_CONVERSION)


def _integer_source_dtype(module: PythonModule, site: Site) -> str | None:
    """torch.int64 when the factory's values are Python integers (arange of ints, full with an int)."""
    positional = [arg.value for arg in site.factory.args if arg.keyword is None]
    if site.callee == "torch.arange" and positional and all(classify(module, p).kind is Kind.INTEGER and classify(module, p).proven for p in positional):
        return "torch.int64"
    if site.callee == "torch.full" and len(positional) == 2 and isinstance(positional[1], cst.Integer):
        return "torch.int64"
    return None


def evaluation_order(module: PythonModule, site: Site) -> Kept | None:
    """`device=` is evaluated before the chain's own arguments, and before the factory's arguments after a
    `device="cpu"` it replaces: where both hold calls or `:=`, their order could matter."""
    if site.move.device is None or not _may_have_effects(site.move.device):
        return None
    args = list(site.factory.args)
    cpu_device = keyword_arg(site.factory, "device")
    later = [("the factory", arg) for arg in args[args.index(cpu_device) + 1:]] if cpu_device is not None else []
    later += [(f"`.{op.method}(...)`", arg) for op in site.ops for arg in op.call.args]
    for owner, arg in later:
        if _may_have_effects(arg.value):
            return Kept(f"`device={module.text(site.move.device)}` would be evaluated before `{module.text(arg)}` of "
                        f"{owner}, and both hold calls", KeepCategory.OTHER)
    return None


def _may_have_effects(node: cst.CSTNode) -> bool:
    return any(isinstance(n, (cst.Call, cst.NamedExpr)) for n in walk(node))
