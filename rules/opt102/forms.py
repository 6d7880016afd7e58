"""The two forms of a factory-then-move site, found from the move: `F(args).to(d)` and `t = F(args)`; `t = t.to(d)`.

Each form finds the factory and its `Site`, or the keep that a lookalike
earns (a call that is not a factory, a pinned staging buffer, a statement
between the two that may change what the device expression means), and
has the site judged (judge.py).
"""

from __future__ import annotations

from typing import Container

import libcst as cst

from optpatch.rule import Advice, KeepCategory, Kept, Proven
from optpatch.rule.python import PythonModule, walk
from optpatch.analysis.torch_values import factory_name, method_chain, parse_move, torch_callee

from .judge import judge
from .reads import FunctionReads
from .site import ALL_SOURCES, HOST_DATA_CLASSES, Site


def chained(module: PythonModule, move_call: cst.Call, receiver: cst.Call, judged: Container[int],
            reads: FunctionReads) -> tuple[cst.Call, Proven | Kept | Advice] | None:
    """`F(args).to(d)`, `F(args).op(...).to(d)`, `F(args).cuda(i)`; also the keeps that look like them.

    None where the chain starts from no call, from a factory already judged (`judged`, by `id`), or from a
    call that is not this rule's business."""
    root, ops = method_chain(module, receiver)
    if not isinstance(root, cst.Call) or id(root) in judged:
        return None
    factory = factory_name(module, root)
    callee = factory or torch_callee(module, root)
    if callee is None:
        if not ops and _is_method(root, "pin_memory") and parse_move(module, move_call).blocker is None:
            return root, Kept("`x.pin_memory().to(...)`: a pinned staging buffer for an asynchronous copy is deliberate",
                              KeepCategory.DELIBERATE)
        return None
    site = Site(root, move_call, callee, parse_move(module, move_call), ops=tuple(ops))
    if factory is None and callee not in HOST_DATA_CLASSES:
        if ops or site.move.blocker is not None or not _is_function(callee):
            return None  # a conversion of some other tensor, or a module or legacy class: not this rule's business
        return root, Kept(f"`{callee}` is not a factory: it has no `device=` to create its result on the device",
                          KeepCategory.NOT_A_FACTORY)
    return root, judge(module, site, reads)


def two_statement(module: PythonModule, move_call: cst.Call, receiver: cst.Name,
                  reads: FunctionReads) -> tuple[cst.Call, Proven | Kept | Advice] | None:
    """`t = F(args)` (or `t = F(args).op(...)`) then, with no use of `t` in between, `t = t.to(d)`."""
    name = receiver.value
    assign = module.parent(move_call)
    if not (isinstance(assign, cst.Assign) and assign.value is move_call and len(assign.targets) == 1):
        return None
    target = assign.targets[0].target
    line = module.parent(assign)
    block = module.parent(line) if line is not None else None
    if not (isinstance(target, cst.Name) and target.value == name and isinstance(line, cst.SimpleStatementLine)
            and len(line.body) == 1 and isinstance(block, (cst.IndentedBlock, cst.Module))):
        return None
    index = next(i for i, statement in enumerate(block.body) if statement is line)
    device_names = {n.value for arg in move_call.args for n in walk(arg) if isinstance(n, cst.Name)}
    blocker = None
    for statement in reversed(block.body[:index]):
        if _mentions(module, statement, name):
            value = factory_assignment(statement, name)
            root, ops = method_chain(module, value) if value is not None else (None, [])
            if not isinstance(root, cst.Call):
                return None
            callee = factory_name(module, root) or torch_callee(module, root)
            if callee not in ALL_SOURCES:
                return None
            if name in device_names:
                return root, Kept(f"the device expression reads `{name}` itself", KeepCategory.OTHER)
            if blocker is not None:
                return root, blocker
            site = Site(root, move_call, callee, parse_move(module, move_call), second=line, ops=tuple(ops))
            return root, judge(module, site, reads)
        if blocker is None:
            blocker = _intervening_blocker(module, statement, device_names)
    return None

def _is_function(qualified: str) -> bool:
    """`torch.cat`, not `torch.nn.Linear` or `torch.LongTensor` (classes are capitalised)."""
    return qualified.rsplit(".", 1)[-1][:1].islower()


def _is_method(call: cst.Call, name: str) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == name


def _mentions(module: PythonModule, node: cst.CSTNode, name: str) -> bool:
    """True when `name` appears as a variable anywhere in `node` (not as an attribute or keyword)."""
    for found in walk(node):
        if isinstance(found, cst.Name) and found.value == name:
            parent = module.parent(found)
            if isinstance(parent, cst.Attribute) and parent.attr is found:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is found:
                continue
            return True
    return False


def factory_assignment(statement, name: str) -> cst.Call | None:
    """The call in `name = F(...)` / `name: T = F(...)`, else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign):
        target, value = small.target, small.value
    else:
        return None
    if isinstance(target, cst.Name) and target.value == name and isinstance(value, cst.Call):
        return value
    return None


def _intervening_blocker(module: PythonModule, statement, device_names: set[str]) -> Kept | None:
    """Why moving the device expression above `statement` could change what it means."""
    line = module.start(statement)[0]
    if not isinstance(statement, cst.SimpleStatementLine):
        return Kept(f"L{line}: a compound statement between the two may leave early or change the device", KeepCategory.OTHER)
    if any(isinstance(node, cst.Call) for node in walk(statement)):
        return Kept(f"L{line}: a call between the two may change the current device or the names in the device expression",
                    KeepCategory.OTHER)
    bound = {n.value for small in statement.body for n in walk(small) if isinstance(n, cst.Name)
             and isinstance(module.parent(n), (cst.AssignTarget, cst.AnnAssign, cst.AugAssign))}
    if bound & device_names:
        return Kept(f"L{line}: rebinds `{sorted(bound & device_names)[0]}`, which the device expression reads", KeepCategory.OTHER)
    return None
