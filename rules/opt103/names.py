"""What a name in the source is: a callee's last name, a binding this rule follows, a target, a read.

The rule resolves names within one function, flow-insensitively: a source
is `t = constructor` alone on its line, `t += v` updates the tensor `t` in
place (not a new value), and a read is any `t` that is not bound there.
"""

from __future__ import annotations

import libcst as cst

from optpatch.rule.python import PythonModule


def last_name(node: cst.BaseExpression) -> str:
    """`cuda` of `torch.cuda` and of `x.cuda`, `f` of `f`, else ""."""
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return node.value if isinstance(node, cst.Name) else ""


def single_assignment(module: PythonModule, target: cst.Name):
    """(statement, value) of `target = value` / `target: T = value` alone on its line, else (None, None)."""
    parent = module.parent(target)
    if isinstance(parent, cst.AssignTarget):
        assign = module.parent(parent)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            return None, None
    elif isinstance(parent, cst.AnnAssign) and parent.target is target and parent.value is not None:
        assign = parent
    else:
        return None, None
    statement = module.parent(assign)
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement, assign.value
    return None, None


def is_augmented(module: PythonModule, binding) -> bool:
    """`t += v`: an in-place update of the tensor `t`, not a new value (its uses are judged as writes)."""
    node = getattr(binding, "node", None)
    parent = module.parent(node) if isinstance(node, cst.Name) else None
    return isinstance(parent, cst.AugAssign) and parent.target is node


def reads_a_variable(module: PythonModule, node: cst.Name) -> bool:
    """A name that reads a variable: not an attribute, a keyword, a parameter, a definition or a target."""
    parent = module.parent(node)
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        return False
    if isinstance(parent, (cst.Arg, cst.Param)) and (getattr(parent, "keyword", None) is node or
                                                     getattr(parent, "name", None) is node):
        return False
    return not isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and not _is_target(module, node)


def _is_target(module: PythonModule, name: cst.Name) -> bool:
    """`name` is bound here: an assignment's target (also inside `a, b = ...`), a loop's, an `as` name's."""
    node, parent = name, module.parent(name)
    while isinstance(parent, (cst.Element, cst.StarredElement, cst.Tuple, cst.List)):
        node, parent = parent, module.parent(parent)
    if isinstance(parent, (cst.AssignTarget, cst.AsName)):
        return True
    if isinstance(parent, (cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
        return parent.target is node
    return False
