"""Whether the source of a copy is left alone while the copy may still read it.

A non-blocking copy from pinned memory reads its source after `.to(d)`
returns. Where the source is a named buffer that becomes pinned (`t =
torch.tensor(...)`, `t = torch.zeros(n)` filled, then `t.to(d)`), it may
be written only in place before the copy and asked only for its metadata
after it; a temporary, or a buffer pinned by a copy at the move, is a fresh
buffer nobody else holds.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.python import LOOP_NODES, SCOPE_NODES, PythonModule

from .quoting import statement_text
from .site import Site
from .source import FILLED_FACTORIES

# What a use may ask of the source without reading or writing its values.
_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "is_sparse"})
_METADATA_METHODS = frozenset({"size", "dim", "numel", "nelement", "element_size", "is_pinned", "stride", "is_contiguous"})


def written_after_copy(module: PythonModule, site: Site) -> Kept | None:
    """A named source that is the copy's pinned buffer: written in place before the copy, only asked for metadata after.

    "After" is after the copy in the text, or anywhere in a loop that holds the copy but not the constructor
    (the next iteration writes what this one's copy may still be reading). A CPU factory must be written
    before the copy: otherwise its values need no host data, which is OPT102's business.
    """
    source = site.source
    name = source.name.value
    function = site.function.node
    copy_end = module.span(site.copy)[1]
    loop = _loop_around(module, site.copy, source.statement, function)
    written_before = False
    for use in site.function.uses(name):
        if use is source.name:
            continue
        line, code = module.start(use)[0], statement_text(module, use)
        if module.enclosing(use, SCOPE_NODES) is not function:
            return Kept(f"L{line}: `{name}` is captured by `{code}`, which may write it after the copy",
                        KeepCategory.SOURCE_WRITTEN)
        if _is_metadata_use(module, use) or isinstance(module.parent(use), cst.Del):
            continue
        after = module.span(use)[0] > copy_end or (loop is not None and _inside(module, use, loop))
        if after:
            return Kept(f"L{line}: `{code}` uses `{name}` after the copy is queued: a write there would race with the "
                        "copy", KeepCategory.SOURCE_WRITTEN)
        if not _is_in_place_write(module, use):
            return Kept(f"L{line}: `{code}` may keep a reference to `{name}` that is written after the copy",
                        KeepCategory.SOURCE_WRITTEN)
        written_before = True
    if source.callee in FILLED_FACTORIES and not written_before:
        return Kept(f"`{name}` is not filled on the host before the copy: create it on the device instead (OPT102)",
                    KeepCategory.NO_GAIN)
    return None


def _loop_around(module: PythonModule, node: cst.CSTNode, statement, function) -> cst.CSTNode | None:
    """The outermost loop in `function` that holds `node` but not `statement`."""
    found = None
    for ancestor in module.ancestors(node):
        if ancestor is function:
            break
        if isinstance(ancestor, LOOP_NODES) and not _inside(module, statement, ancestor):
            found = ancestor
    return found


def _inside(module: PythonModule, node: cst.CSTNode, container: cst.CSTNode) -> bool:
    start, end = module.span(node)
    outer_start, outer_end = module.span(container)
    return outer_start <= start and end <= outer_end


def _is_metadata_use(module: PythonModule, use: cst.Name) -> bool:
    """`t.shape`, `t.size()`, `len(t)` and the like: no values read or written."""
    parent = module.parent(use)
    if isinstance(parent, cst.Attribute) and parent.value is use:
        attribute = parent.attr.value
        if attribute in _METADATA_ATTRIBUTES:
            return True
        grand = module.parent(parent)
        return attribute in _METADATA_METHODS and isinstance(grand, cst.Call) and grand.func is parent
    if isinstance(parent, cst.Arg):
        call = module.parent(parent)
        return (isinstance(call, cst.Call) and len(call.args) == 1
                and module.qualified_names(call.func) == {"builtins.len"})
    return False


def _is_in_place_write(module: PythonModule, use: cst.Name) -> bool:
    """`t[...] = v`, `t += v`, or `t.fill_(...)` / `t[...].copy_(...)` as a statement of its own."""
    node, parent = use, module.parent(use)
    if isinstance(parent, cst.Subscript) and parent.value is node:
        node, parent = parent, module.parent(parent)
    if isinstance(parent, cst.AssignTarget) or (isinstance(parent, cst.AugAssign) and parent.target is node):
        return True
    if isinstance(parent, cst.Attribute) and parent.value is node:
        method = parent.attr.value
        call = module.parent(parent)
        statement = module.parent(call) if isinstance(call, cst.Call) else None
        return (method.endswith("_") and not method.startswith("_") and isinstance(call, cst.Call)
                and call.func is parent and isinstance(statement, cst.Expr))
    return False
