"""How a reason quotes the code it names: the statement that holds a use, on one line, and long text shortened."""

from __future__ import annotations

import libcst as cst

from optpatch.rule.python import PythonModule


def statement_text(module: PythonModule, node: cst.CSTNode) -> str:
    """The text of the small statement holding `node`, on one line."""
    for ancestor in (node, *module.ancestors(node)):
        if isinstance(ancestor, cst.BaseSmallStatement) or isinstance(ancestor, cst.BaseCompoundStatement):
            text = " ".join(module.text(ancestor).split())
            return text if len(text) <= 80 else text[:77] + "..."
    return module.text(node)


def shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."
