"""The rewrite of a proven copy: the one place this rule writes text, and the fix it becomes.

`pin_memory=True` and `non_blocking=True` are appended as the last argument
of their call, laid out as the project's formatter would (as OPT102 appends
`device=`); `.pin_memory()` follows a sharing constructor (chained) or the
name (at the move); `torch.tensor(data, device=d)` has its `device=d`
replaced by `pin_memory=True` and gains `.to(d, non_blocking=True)`; a
legacy CUDA constructor is built on the host and copied. Where an edit
cannot be written as the formatter would lay it out, the site is kept.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.torch_api import CUDA_LEGACY_TENSOR_TYPES, keyword_arg
from optpatch.rule import Context, Edit, KeepCategory, Kept, Proven
from optpatch.rule.python import FormattedEdits, PythonFormatter, PythonModule, preview

from .impact import describe, impact_of
from .proof import Proof
from .site import Site

_RESHAPING_FORMATTERS = frozenset({PythonFormatter.BLACK, PythonFormatter.RUFF})
_IN_PARENTHESES = Kept("the call is in parentheses of its own: the edit would have to move them", KeepCategory.CANNOT_SPELL)


def rewrite(module: PythonModule, site: Site, proof: Proof, context: Context) -> Proven | Kept:
    """The fix of a copy every obligation holds for: its edits, what it buys, and the reason with each step."""
    edits = _edits(module, site)
    if isinstance(edits, Kept):
        return edits
    impact, basis = impact_of(site, proof.data, context)
    start = min(module.span(site.anchor)[0], min(edit.start for edit in edits))
    end = max(module.span(site.copy)[1], max(edit.end for edit in edits))
    replacement = preview(module.source.text, start, end, edits)
    reason = f"{describe(module, site)}; " + "; ".join(proof.steps)
    return Proven(reason, proof.tier, edits, impact, basis, replacement, proof.steps)


def _edits(module: PythonModule, site: Site) -> list[Edit] | Kept:
    """Pin the source and make the copy non-blocking (the module's docstring says how)."""
    source = site.source
    edits = []
    # Under black or ruff, laid out as they would (docs/formatting.md); otherwise appended where they go, the
    # statement's layout kept, and on a line of their own where they would pass the line limit.
    formatted = FormattedEdits(module)
    if site.move is None and source.callee in CUDA_LEGACY_TENSOR_TYPES:
        return _cuda_legacy_edits(module, site)
    if site.move is None:
        return _device_keyword_edits(module, site, formatted if module.style.formatter in _RESHAPING_FORMATTERS else None)
    if not source.pinned:
        if source.pinned_at_the_move:
            receiver = source.name if source.name is not None else source.call
            _, end = module.span(receiver)
            edits.append(Edit(end, end, ".pin_memory()"))
        elif source.call.lpar:
            return _IN_PARENTHESES
        else:
            formatted.insert_keyword(source.call, "pin_memory", "True")
    if site.copy.lpar:
        return _IN_PARENTHESES
    formatted.insert_keyword(site.copy, "non_blocking", "True")
    return _shaped(formatted.add(*edits))


def _shaped(formatted: FormattedEdits) -> list[Edit] | Kept:
    """The edits, or a keep where the formatter would lay the statement out again in a way optpatch does not know."""
    edits = formatted.edits()
    return formatted.layout_keep(unreproduced_break=True) or edits


def _device_keyword_edits(module: PythonModule, site: Site, formatted: FormattedEdits | None) -> list[Edit] | Kept:
    """`torch.tensor(data, device=d)` -> `torch.tensor(data, pin_memory=True).to(d, non_blocking=True)`, or
    `torch.tensor(data).pin_memory().to(d, non_blocking=True)` where the keyword cannot pin the data."""
    call, source = site.copy, site.source
    device = keyword_arg(call, "device")
    _, end = module.span(device.value)
    _, call_end = module.span(call)
    pin = "" if source.keyword_pins else ".pin_memory()"
    move = Edit(call_end, call_end, f"{pin}.to({module.text(device.value)}, non_blocking=True)")
    if source.keyword_pins and formatted is None:
        start, _ = module.span(device.keyword)
        return [Edit(start, end, "pin_memory=True"), move]
    index = next(i for i, arg in enumerate(call.args) if arg is device)
    if index == 0:
        return Kept("`device=` is the call's first argument: removing it would leave the call's layout to guess",
                    KeepCategory.CANNOT_SPELL)
    _, start = module.span(call.args[index - 1])
    removal = Edit(start, end, "")  # the argument, with the comma before it: the data comes first
    if formatted is None:
        return [removal, move]
    if source.keyword_pins:
        formatted.insert_keyword(call, "pin_memory", "True")
    return _shaped(formatted.add(removal, move))


def _cuda_legacy_edits(module: PythonModule, site: Site) -> list[Edit] | Kept:
    """`torch.cuda.LongTensor(ids)` -> `torch.LongTensor(ids).pin_memory().cuda(non_blocking=True)`: built on the
    host as before, pinned by a copy, copied to the current CUDA device."""
    call = site.copy
    func = call.func
    if call.lpar:
        return _IN_PARENTHESES
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute) and func.value.attr.value == "cuda"):
        return Kept(f"`{module.text(func)}` is not spelled `torch.cuda.<Type>`: the host type cannot be written from it",
                    KeepCategory.CANNOT_SPELL)
    _, end = module.span(call)
    return [module.replace(func, f"{module.text(func.value.value)}.{func.attr.value}"),
            Edit(end, end, ".pin_memory().cuda(non_blocking=True)")]
