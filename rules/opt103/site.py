"""What a site is: a host-to-device copy of a source this rule pins, and where it is found.

Three shapes: a move of a source (`torch.tensor(data).to(d)`, `t.cuda()`
where `t = torch.from_numpy(a)`), `torch.tensor(data, device=d)` not itself
moved, and a legacy CUDA constructor (`torch.cuda.LongTensor(ids)`), which
converts on the host and copies to the current device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from optpatch.analysis.torch_api import CUDA_LEGACY_TENSOR_TYPES, keyword_arg
from optpatch.analysis.torch_values import Kind, Move, classify, factory_name, move_method, parse_move, torch_callee
from optpatch.rule.python import PythonModule

from .function import Function, Functions
from .host_data import takes_pin_keyword
from .source import Source, constructor, named_source


@dataclass(frozen=True)
class Site:
    """A host-to-device copy: `source.to(...)` / `.cuda(...)`, or `torch.tensor(data, device=d)` (no move)."""

    source: Source
    copy: cst.Call  # the move, or the tensor call with `device=`
    move: Move | None  # None for `torch.tensor(data, device=d)`
    function: Function | None  # the function holding the copy; None at module or class level

    @property
    def anchor(self) -> cst.CSTNode:
        """Where the finding is reported: the constructor of a chained copy, else the copy."""
        if self.move is None or self.source.name is None:
            return self.source.call
        return self.source.name


def sites(module: PythonModule) -> Iterator[Site]:
    """Every copy of the module this rule judges, in the order of its calls."""
    functions = Functions(module)
    for call in module.calls():
        if move_method(call) is not None:
            site = _move_site(module, call, functions)
        elif _is_tensor_with_device(module, call):
            site = _device_keyword_site(module, call, functions)
        elif torch_callee(module, call) in CUDA_LEGACY_TENSOR_TYPES:
            site = Site(Source(call, torch_callee(module, call), keyword_pins=False), call, None, functions.around(call))
        else:
            site = None
        if site is not None:
            yield site


def _move_site(module: PythonModule, move_call: cst.Call, functions: Functions) -> Site | None:
    receiver = move_call.func.value
    if isinstance(receiver, cst.Call):
        source = constructor(module, receiver, named=False)
    elif isinstance(receiver, cst.Name):
        source = named_source(module, receiver, move_call)
    else:
        source = None
    if source is None or _converts_only(module, move_call):
        return None
    return Site(source, move_call, parse_move(module, move_call), functions.around(move_call))


def _converts_only(module: PythonModule, move_call: cst.Call) -> bool:
    """`.to(dtype)`, `.to(memory_format=...)`, `.to(dtype=...)`: no device, so no copy to one."""
    if move_method(move_call) != "to":
        return False
    positional = [arg.value for arg in move_call.args if arg.keyword is None and not arg.star]
    if positional:
        return classify(module, positional[0]).kind in (Kind.DTYPE, Kind.MEMORY_FORMAT)
    return keyword_arg(move_call, "device") is None and not any(arg.star for arg in move_call.args)


def _is_tensor_with_device(module: PythonModule, call: cst.Call) -> bool:
    return keyword_arg(call, "device") is not None and factory_name(module, call) == "torch.tensor"


def _device_keyword_site(module: PythonModule, call: cst.Call, functions: Functions) -> Site | None:
    """`torch.tensor(data, device=d)` not itself moved (a move of it is judged as the move)."""
    parent = module.parent(call)
    grand = module.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is call else None
    if isinstance(grand, cst.Call) and grand.func is parent and move_method(grand):
        return None
    value = classify(module, keyword_arg(call, "device").value)
    if value.kind is Kind.NONE or value.kind is Kind.DEVICE and value.device_type == "cpu":
        return None  # the host: nothing moves
    return Site(Source(call, "torch.tensor", keyword_pins=takes_pin_keyword(module, call)), call, None,
                functions.around(call))
