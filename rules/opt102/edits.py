"""The rewrite: `device=` (and `dtype=`) into the factory, the move removed, the chain between kept.

Keywords are laid out as the file's formatter would (FormattedEdits); a
legacy `.type(torch.IntTensor)` is written as its dtype.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import Edit, KeepCategory, Kept
from optpatch.rule.python import FormattedEdits, PythonModule
from optpatch.analysis.torch_api import keyword_arg

from .chain import legacy_dtype_text, merged_legacy
from .device import DeviceSpelling
from .site import Site


def site_edits(module: PythonModule, site: Site, device: DeviceSpelling) -> list[Edit] | Kept:
    """Put `device=` (and `dtype=`) into the factory, and remove the move; a chain between them stays."""
    call = site.factory
    if call.lpar:
        return Kept("the factory call is in parentheses of its own: the edit would have to move them", KeepCategory.CANNOT_SPELL)
    merged = merged_legacy(module, site)
    keywords = {"dtype": legacy_dtype_text(module, merged)} if merged is not None else {}
    keywords["device"] = device.text
    if site.move.dtype is not None:
        keywords["dtype"] = module.text(site.move.dtype)
    edits = keyword_edits(module, call, keywords)
    for op in site.ops:
        if op is merged:
            edits.add(_move_deletion(module, op.call))
        elif op.legacy is not None:
            edits.add(module.replace(op.call.args[0].value, legacy_dtype_text(module, op)))
    edits.add(_move_deletion(module, site.move_call) if site.second is None else _delete_line(module, site.second))
    written = edits.edits()
    return edits.layout_keep(unreproduced_break=False) or written


def keyword_edits(module: PythonModule, call: cst.Call, keywords: dict[str, str]) -> FormattedEdits:
    """Give `call` these keyword arguments: a keyword it has gets the new value (`device="cpu"`), the others are
    added after its last argument, laid out as the file's formatter would. Every keyword OPT102 writes goes through
    here."""
    edits = FormattedEdits(module)
    for name, text in keywords.items():
        existing = keyword_arg(call, name)
        if existing is not None:
            edits.add(module.replace(existing.value, text))
        else:
            edits.insert_keyword(call, name, text)
    return edits


def _move_deletion(module: PythonModule, move_call: cst.Call) -> Edit:
    """`.to(d)` and the space before it. Where a comment separates it from its receiver, the comment stays: the
    move goes from its dot on, or as its whole line when it has a line of its own."""
    text = module.source.text
    _, receiver_end = module.span(move_call.func.value)
    _, move_end = module.span(move_call)
    attribute_start, _ = module.span(move_call.func.attr)
    between = text[receiver_end:attribute_start]
    if "#" not in between:
        return Edit(receiver_end, move_end, "")
    dot = receiver_end + between.rindex(".")
    line_start = text.rfind("\n", 0, dot) + 1
    line_end = text.find("\n", move_end)
    if not text[line_start:dot].strip() and line_end >= 0 and not text[move_end:line_end].strip():
        return Edit(line_start, line_end + 1, "")
    return Edit(dot, move_end, "")


def _delete_line(module: PythonModule, line: cst.SimpleStatementLine) -> Edit:
    """The whole physical line of a statement: indentation, trailing comment and newline."""
    start, end = module.span(line)
    text = module.source.text
    newline = text.find("\n", end)
    return Edit(text.rfind("\n", 0, start) + 1, len(text) if newline < 0 else newline + 1, "")
