"""Which names each function of a module reads: whether a moved tensor is ever read, and an index's uses."""

from __future__ import annotations

import libcst as cst

from optpatch.rule.python import SCOPE_NODES, PythonModule, walk


class FunctionReads:
    """Which names each function of a module reads: one walk per function, however many sites it holds."""

    def __init__(self, module: PythonModule):
        self._module = module
        self._reads: dict[int, tuple[dict[str, list[cst.Name]], bool]] = {}

    def never_read(self, assignment: cst.CSTNode, name: str, own: cst.CSTNode | None) -> bool:
        """True when `name`, assigned by `assignment`, is a local of its function that nothing in the function reads.

        Assignments to it do not read it; anything else does (`del`, `+=`, a
        nested function, `global`, `locals()`), except `own`: the `t` of
        `t = t.to(d)`, which reads the factory's own result.
        """
        function = self._module.enclosing_function(assignment)
        if function is None or self._module.enclosing(assignment, SCOPE_NODES) is not function:
            return False  # module and class attributes are read from elsewhere
        names, dynamic = self._of(function)
        return not dynamic and all(read is own for read in names.get(name, ()))

    def of(self, function: cst.FunctionDef, name: str) -> list[cst.Name] | None:
        """Every read of `name` in `function`; None when the function may read names dynamically."""
        names, dynamic = self._of(function)
        return None if dynamic else names.get(name, [])

    def _of(self, function: cst.FunctionDef) -> tuple[dict[str, list[cst.Name]], bool]:
        found = self._reads.get(id(function))
        if found is None:
            found = self._reads[id(function)] = self._walk(function)
        return found

    def _walk(self, function: cst.FunctionDef) -> tuple[dict[str, list[cst.Name]], bool]:
        """The reading `Name`s by name, and whether the function may read names dynamically or out of scope."""
        parent = self._module.parent
        names: dict[str, list[cst.Name]] = {}
        dynamic = False
        for node in walk(function.body):
            kind = type(node)
            if kind is cst.Name:
                above = parent(node)
                if (type(above) is cst.Attribute and above.attr is node or type(above) is cst.Arg and above.keyword is node
                        or type(above) is cst.AssignTarget or type(above) is cst.AnnAssign and above.target is node):
                    continue
                names.setdefault(node.value, []).append(node)
            elif kind is cst.Global or kind is cst.Nonlocal:
                dynamic = True  # the name may live in another scope, which reads it
            elif kind is cst.Call and type(node.func) is cst.Name and node.func.value in ("locals", "vars", "eval", "exec"):
                dynamic = True
        return names, dynamic
