"""The function that holds a copy, walked once for all the copies in it: its nodes, its calls, its reads of each name.

Every obligation past the call itself looks through the whole function
(the source's writes, the result's readers, the stream blocks, the host's
waits); walking it once per function rather than once per site is most of
what keeps the rule linear in a file's size.
"""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from optpatch.rule.python import PythonModule, walk

from .names import reads_a_variable

# The nodes where the host may wait for the GPU (no_gain.host_wait): calls, f-string parts and tests.
_MAY_WAIT = frozenset({cst.Call, cst.FormattedStringExpression, cst.If, cst.While, cst.Assert})


class Function:
    """One function's nodes and the names read in it, walked once for all the sites in it."""

    def __init__(self, module: PythonModule, node: cst.FunctionDef):
        self.module = module
        self.node = node

    @cached_property
    def nodes(self) -> list[cst.CSTNode]:
        """Every node of the body, in source order."""
        return list(walk(self.node.body))

    # Exact types: libcst's node classes are final, and `type(...) is` skips isinstance's ABC machinery (a tenth
    # of this rule's time on NeMo).
    @cached_property
    def calls(self) -> list[cst.Call]:
        return [node for node in self.nodes if type(node) is cst.Call]

    @cached_property
    def may_wait(self) -> list[cst.CSTNode]:
        """The nodes `no_gain.host_wait` looks at: calls, f-string parts and tests."""
        return [node for node in self.nodes if type(node) in _MAY_WAIT]

    @cached_property
    def _reads(self) -> dict[str, list[cst.Name]]:
        found: dict[str, list[cst.Name]] = {}
        for node in self.nodes:
            if type(node) is cst.Name and reads_a_variable(self.module, node):
                found.setdefault(node.value, []).append(node)
        return found

    def uses(self, name: str) -> list[cst.Name]:
        """Every `name` that reads a variable (not a target, an attribute or a keyword), in source order."""
        return self._reads.get(name, [])


class Functions:
    """The `Function` of each function of one module, made on first use."""

    def __init__(self, module: PythonModule):
        self.module = module
        self._made: dict[int, Function] = {}

    def around(self, node: cst.CSTNode) -> Function | None:
        function = self.module.enclosing_function(node)
        if function is None:
            return None
        made = self._made.get(id(function))
        if made is None:
            made = self._made[id(function)] = Function(self.module, function)
        return made
