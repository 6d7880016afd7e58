"""What the statement is for, where the rewrite would change it: a copy nobody reads, an expected exception.

A moved tensor that is never read is kept: the blocking copy is the
point (a probe of the GPU). A site in a block that expects or swallows an
exception is kept: the rewrite changes which call raises and how.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.python import PythonModule
from optpatch.analysis.exception_contexts import expected_exception

from .reads import FunctionReads
from .site import Site


def discarded(module: PythonModule, site: Site, reads: FunctionReads) -> Kept | None:
    """The moved tensor is never read: the blocking copy is all the statement does."""
    statement = site.second.body[0] if site.second is not None else module.parent(site.move_call)
    target = _assigned_name(statement, site.move_call)
    if isinstance(statement, cst.Expr) and statement.value is site.move_call:
        how = "the moved tensor is thrown away"
    elif target is not None:
        name = target.value
        if name == "_":
            how = "the moved tensor is assigned to `_`"
        elif reads.never_read(statement, name, site.move_call.func.value if site.second is not None else None):
            how = f"the local `{name}` is never read"
        else:
            return None
    else:
        return None
    return Kept(f"{how}: the statement is kept for what it does, a copy that waits for all queued GPU work (a health "
                "probe of the GPU, a synchronisation); creating the tensor on the device would return at once and "
                "gain nothing", KeepCategory.DISCARDED)


def _assigned_name(statement: cst.CSTNode | None, value: cst.Call) -> cst.Name | None:
    """`name` in `name = value` / `name: T = value`."""
    if isinstance(statement, cst.Assign) and statement.value is value and len(statement.targets) == 1:
        target = statement.targets[0].target
    elif isinstance(statement, cst.AnnAssign) and statement.value is value:
        target = statement.target
    else:
        return None
    return target if isinstance(target, cst.Name) else None


def exception_expected(module: PythonModule, site: Site) -> Kept | None:
    """The site is inside a block that expects or swallows an exception (analysis/exception_contexts.py)."""
    found = expected_exception(module, site.move_call)
    if found is None:
        return None
    return Kept(f"inside {found.construct}: the exception, its message or a warning is part of what the code does, "
                "and the rewrite changes which call raises it and how", KeepCategory.EXPECTED_EXCEPTION)
