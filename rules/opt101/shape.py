"""The shape an allocation spells: its sizes, whether its rank is known, and whether its memory is contiguous.

The overwrite proof (analysis/overwrite.py) compares a write's region and a
loop's bound with these sizes; the impact counts the bytes of a shape whose
every size is a literal.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from optpatch.analysis.overwrite import Shape
from optpatch.analysis.torch_api import keyword_arg
from optpatch.rule.python import PythonModule, walk

from .allocation import FILLED, METHODS, ModuleFacts, allocation_kind


def shape_of(module: PythonModule, call: cst.Call, kind: str, value: cst.Call | None = None) -> Shape:
    """The sizes the call spells, and whether `value` (the call, or what moved or wrapped it) is contiguous memory:
    every kind is but `*_like`, which keeps the template's strides unless `memory_format=torch.contiguous_format`,
    and `.to(..., memory_format=...)` may change the layout."""
    moves = [node for node in walk(value) if isinstance(node, cst.Call) and node is not call
             and keyword_arg(node, "memory_format") is not None] if value is not None and value is not call else []
    if moves:
        return replace(shape_of(module, call, kind), contiguous=False)
    if kind in ("zeros_like", "full_like"):
        memory_format = keyword_arg(call, "memory_format")
        contiguous = memory_format is not None and module.refers_to(memory_format.value, {"torch.contiguous_format"}) is not None
        return Shape(contiguous=contiguous)
    positional = [arg for arg in call.args if arg.keyword is None]
    if kind in METHODS and module.refers_to(call.func.value, {"torch.Tensor"}) is not None:
        positional = positional[1:]  # `torch.Tensor.new_zeros(t, size)`
    if kind in FILLED:
        positional = positional[:1]
    size = keyword_arg(call, "size")
    arguments = [size] if size is not None else positional
    if any(arg.star for arg in arguments):
        # `zeros(b, *rest)`: the sizes before the star lead, the rank is unknown (and `b` may be a tuple if `rest` is empty).
        leading = tuple(arg.value for arg in arguments[: next(i for i, arg in enumerate(arguments) if arg.star)])
        return Shape(leading, rank_known=False, contiguous=True)
    if not arguments:
        return Shape(contiguous=True)
    if len(arguments) == 1:
        value = arguments[0].value
        if isinstance(value, (cst.Tuple, cst.List)):
            starred = [isinstance(e, cst.StarredElement) for e in value.elements]
            if not any(starred):
                return Shape(tuple(element.value for element in value.elements), rank_known=True, contiguous=True)
            # `zeros((b, *rest))`: the elements before the star are the leading sizes; the rank is unknown.
            return Shape(tuple(element.value for element in value.elements[: starred.index(True)]), contiguous=True)
        if kind in FILLED:
            return Shape(contiguous=True)  # `full(size, 0)`: `size` is a sequence, never one integer
        return Shape((value,), rank_known=_integer_literal(value) is not None, contiguous=True)
    return Shape(tuple(arg.value for arg in arguments), rank_known=True, contiguous=True)


def allocated_shape(module: PythonModule, facts: ModuleFacts, value: cst.BaseExpression) -> Shape | None:
    """The shape `value` allocates when it is an allocation of this rule (moved by `.to()`/`.cuda()` or not): what
    a twin's size is compared with (overwrite.py's `_is_twin_size`)."""
    call = value
    while isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda"):
        call = call.func.value
    kind = allocation_kind(module, facts, call) if isinstance(call, cst.Call) else None
    return None if kind is None else shape_of(module, call, kind, value)


def element_count(shape: Shape) -> int | None:
    """The number of elements when every size is an integer literal (and the rank is known)."""
    if not shape.rank_known:
        return None
    count = 1
    for size in shape.sizes:
        value = _integer_literal(size)
        if value is None:
            return None
        count *= value
    return count


def _integer_literal(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        value = node.evaluated_value
        return value if isinstance(value, int) else None
    return None
