"""The index form: `idx = torch.arange(n)` read only as an index of one tensor `t` (`t[idx]`, `t[:, idx] = v`).

Each use copies the host index to `t`'s device, so it is created there,
`device=t.device`. This module decides what an index site is (in the
screen's `ast` and in libcst), whether `t` is one tensor bound before the
index and provably a tensor (the tier), and the fix.
"""

from __future__ import annotations

import ast

import libcst as cst
from libcst.metadata import Assignment

from optpatch.rule import KeepCategory, Kept, Proven, Tier
from optpatch.rule.python import SCOPE_NODES, CallIndex, PythonModule, dotted_name, preview, walk
from optpatch.analysis.torch_values import Kind, classify, factory_name, on_cpu

from .edits import keyword_edits
from .factory import fractional_arange_argument
from .forms import factory_assignment
from .impact import arange_impact
from .reads import FunctionReads


def index_verdict(module: PythonModule, call: cst.Call, reads: FunctionReads) -> Proven | Kept | None:
    """The verdict on `call` as an index tensor's `arange`, or None where it is no index site."""
    found = _index_uses(module, call, reads)
    if found is None:
        return None
    name, tables = found
    kept = _index_blocker(module, call, name, tables)
    if isinstance(kept, Kept):
        return kept
    tier, evidence = kept
    table = module.text(tables[0])
    formatted = keyword_edits(module, call, {"device": f"{table}.device"})
    edits = formatted.edits()
    unwritable = formatted.layout_keep(unreproduced_break=False)
    if unwritable is not None:
        return unwritable
    impact, basis = arange_impact(module, call)
    start, end = module.span(call)
    proof = [f"`{name}` is read only as an index of `{table}` ({len(tables)} use(s)), which copies it to "
             f"`{table}`'s device each time", evidence, "arange with integer start and step: the same integers on "
             "every device"]
    if isinstance(tables[0], cst.Name):
        proof.append(f"`{table}` is bound before `{name}` and not rebound after it")
    reason = f"`{name} = torch.arange(...)` indexes `{table}`: create it on `{table}.device`; " + "; ".join(proof)
    return Proven(reason, tier, tuple(edits), impact, basis, preview(module.source.text, start, end, edits), tuple(proof))

def index_candidates(calls: CallIndex) -> list[ast.AST]:
    """`needs` for the index form: `name = torch.arange(...)` without `device=`, in a function that indexes with
    `name` (`t[name]`, `t[:, name]`)."""
    found = []
    for call in calls.named("arange"):
        name = calls.assigned_to(call)
        function = calls.outermost_function(call) if name is not None and calls.calls_torch(call) else None
        if function is None or any(keyword.arg in (None, "device") for keyword in call.keywords):
            continue
        if any(isinstance(node, ast.Subscript) and _ast_indexes_with(node.slice, name) for node in ast.walk(function)):
            found.append(call)
    return found


def _ast_indexes_with(index: ast.expr, name: str) -> bool:
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(element, ast.Name) and element.id == name for element in elements)


def _index_uses(module: PythonModule, call: cst.Call, reads: FunctionReads) -> tuple[str, list[cst.BaseExpression]] | None:
    """(`name`, the indexed expression of each use) for `name = torch.arange(...)` alone on its line in a function,
    bound nowhere else, every read of which is a plain index element; None for anything else."""
    if factory_name(module, call) != "torch.arange" or any(arg.star or arg.keyword is not None and arg.keyword.value in (
            "device", "out", "requires_grad", "pin_memory") for arg in call.args):
        return None
    assign = module.parent(call)
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    target = assign.targets[0].target
    function = module.enclosing_function(assign)
    if function is None or module.enclosing(assign, SCOPE_NODES) is not function or len(module.bindings(target) or ()) != 1:
        return None
    uses = reads.of(function, target.value)
    if not uses:
        return None
    tables = []
    for use in uses:
        table = _indexed(module, use)
        if table is None or module.enclosing(use, SCOPE_NODES) is not function:
            return None
        tables.append(table)
    return target.value, tables


def _indexed(module: PythonModule, use: cst.Name) -> cst.BaseExpression | None:
    """`t` in `t[use]` / `t[:, use, None]`, where the other elements are slices, integers, `None` or `...`."""
    index = module.parent(use)
    element = module.parent(index) if isinstance(index, cst.Index) else None
    subscript = module.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or subscript.value is use:
        return None
    for other in subscript.slice:
        if other is element:
            continue
        value = other.slice.value if isinstance(other.slice, cst.Index) else None
        if not (isinstance(other.slice, cst.Slice) or isinstance(value, (cst.Integer, cst.Ellipsis))
                or isinstance(value, cst.Name) and value.value == "None"):
            return None
    return subscript.value


def _index_blocker(module: PythonModule, call: cst.Call, name: str,
                   tables: list[cst.BaseExpression]) -> Kept | tuple[Tier, str]:
    """(tier, evidence that the indexed tensor is one), or why the index stays where it is."""
    texts = {module.text(table) for table in tables}
    if len(texts) > 1:
        return Kept(f"`{name}` indexes {', '.join(f'`{t}`' for t in sorted(texts))}, which may be on different devices",
                    KeepCategory.OTHER)
    fractional = fractional_arange_argument(module, call)
    if fractional is not None:
        return Kept(f"arange with a start or step `{fractional}` that may be fractional is no index", KeepCategory.OTHER)
    start, end = module.span(module.parent(call))
    if any(module.span(use)[0] < end for use in tables):
        return Kept(f"`{name}` is read before it is created (a loop's earlier pass)", KeepCategory.OTHER)
    table = tables[0]
    if isinstance(table, cst.Attribute):
        return _attribute_table(module, call, table)
    if not isinstance(table, cst.Name):
        return Kept(f"`{module.text(table)}` is not a name: what it holds at each use is not known here",
                    KeepCategory.OTHER)
    for binding in module.bindings(table) or ():
        node = binding.node if isinstance(binding, Assignment) else None
        if not isinstance(node, (cst.Name, cst.Param)) or module.span(node)[0] >= start:
            return Kept(f"`{table.value}` may be bound after `{name}` is created: `device={table.value}.device` would "
                        "read another tensor", KeepCategory.OTHER)
    if not module.bindings(table):
        return Kept(f"`{table.value}` is bound nowhere this file shows", KeepCategory.OTHER)
    cpu = on_cpu(module, table)
    if cpu is not None:
        return Kept(f"`{table.value}` is on the CPU ({cpu}): the index is already where it is used", KeepCategory.NO_GAIN)
    evidence = _tensor_evidence(module, table)
    if evidence is not None:
        return Tier.SAFE, f"`{table.value}` is a tensor: {evidence}"
    return Tier.VALIDATE, (f"`{table.value}` is indexed like a tensor, but nothing here shows it is one: "
                           f"`{table.value}.device` raises for a list, a tuple or a module")


def _attribute_table(module: PythonModule, call: cst.Call, table: cst.Attribute) -> Kept | tuple[Tier, str]:
    """`self.table[idx]`: validate at best, since a call between may rebind the attribute and nothing here shows
    it holds a tensor; kept where the function itself assigns it."""
    spelled = dotted_name(table)
    if spelled is None:
        return Kept(f"`{module.text(table)}` is not a name: what it holds at each use is not known here",
                    KeepCategory.OTHER)
    function = module.enclosing_function(call)
    for node in walk(function.body):
        targets = node.targets if isinstance(node, cst.Assign) else [node] if isinstance(node, (cst.AnnAssign, cst.AugAssign)) else []
        if any(dotted_name(t.target) == spelled or dotted_name(t.target) == spelled.split(".", 1)[0] for t in targets):
            return Kept(f"`{spelled}` is assigned in this function: `device={spelled}.device` may read another tensor",
                        KeepCategory.OTHER)
    return Tier.VALIDATE, (f"`{spelled}` is an attribute: nothing here shows it holds a tensor (`.device` raises for a "
                           "list or a module), or that no call between rebinds it")


def _tensor_evidence(module: PythonModule, name: cst.Name) -> str | None:
    """Evidence that every binding of `name` is a tensor: a parameter annotated `torch.Tensor`, or a torch factory's
    result (other torch functions may return tuples, modules or numbers)."""
    evidence = []
    for binding in module.bindings(name) or ():
        node = binding.node if isinstance(binding, Assignment) else None
        if isinstance(node, cst.Param):
            value = classify(module, node.name)
            if value.kind is not Kind.TENSOR or not value.proven:
                return None
            evidence.append(value.evidence)
            continue
        statement = module.parent(module.parent(node)) if isinstance(node, cst.Name) else None
        value = factory_assignment(module.parent(statement), name.value) if statement is not None else None
        if value is None or factory_name(module, value) is None:
            return None
        evidence.append(f"`{name.value}` = `{module.text(value.func)}(...)` (L{module.start(node)[0]})")
    return "; ".join(evidence) or None
