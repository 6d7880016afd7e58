"""The rewrite: the edits that turn an allocation into `empty`, or why it cannot be spelled.

The callee's last name changes (`zeros` -> `empty`, `new_full` -> `new_empty`,
...), a bare name gets its `empty` imported beside it, and a `full` loses its
zero fill, saying the dtype that fill chose where no `dtype=` does.
"""

from __future__ import annotations

import re

import libcst as cst

from optpatch.analysis.torch_api import keyword_arg
from optpatch.rule import Edit, KeepCategory, Kept
from optpatch.rule.python import PythonModule, add_import_name

from .allocation import FILLED, REPLACEMENT, fill_argument


def rewrite_edits(module: PythonModule, call: cst.Call, kind: str, torch_imports: list[cst.ImportFrom]) -> list[Edit] | Kept:
    """The edits that turn this allocation into `empty`, or the keep that says why it cannot be spelled."""
    new_name = REPLACEMENT[kind]
    func = call.func
    fill = _fill_edit(module, call, kind) if kind in FILLED else []
    if isinstance(fill, Kept):
        return fill
    if isinstance(func, cst.Attribute):
        return [module.replace(func.attr, new_name), *fill]
    # A bare name from `from torch import zeros [as z]`: import `empty` beside it.
    if re.search(rf"\b{new_name}\b", module.source.text):
        return _unspellable(f"called as a bare name and `{new_name}` is already used in this file: cannot add "
                            f"`from torch import {new_name}` safely")
    imports = [
        node for node in torch_imports
        if any((alias.asname.name.value if alias.asname else module.text(alias.name)) == func.value for alias in node.names)
    ]
    if len(imports) != 1:
        return _unspellable(f"cannot find the one `from torch import` that binds `{func.value}`")
    return [*add_import_name(module, imports[0], new_name), module.replace(func, new_name), *fill]


def _fill_edit(module: PythonModule, call: cst.Call, kind: str) -> list[Edit] | Kept:
    """Drop the zero fill of `full(size, 0)`; where it chose the dtype (`full` with no `dtype=`), say it instead.

    `torch.full(size, 0)` is int64 and `torch.full(size, False)` bool, where
    `torch.empty(size)` would take the default float dtype; `full_like` and
    `new_full` take the template's dtype whatever the fill.
    """
    fill = fill_argument(call, kind)
    assert fill is not None
    value = fill.value
    if kind == "full" and keyword_arg(call, "dtype") is None and not isinstance(value, cst.Float):
        func = call.func
        if not isinstance(func, cst.Attribute):
            return _unspellable("`full` called as a bare name with an integer fill and no `dtype=`: cannot spell the dtype "
                                "it implies")
        dtype = "bool" if isinstance(value, cst.Name) else "int64"
        return [module.replace(fill, f"dtype={module.text(func.value)}.{dtype}")]
    arguments = list(call.args)
    position = arguments.index(fill)
    if position > 0:  # from the end of the argument before it (its comma goes) to the end of the fill
        return [Edit(module.span(arguments[position - 1])[1], module.span(fill)[1], "")]
    return [Edit(module.span(fill)[0], module.span(arguments[1])[0], "")]


def _unspellable(reason: str) -> Kept:
    return Kept(reason, KeepCategory.CANNOT_SPELL)
