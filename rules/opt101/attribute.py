"""A buffer stored on `self.<name>`: followed in `__init__`, else worth a validation run only if its class fills it.

Until `__init__` returns, only its own code holds the new object, so the
overwrite proof follows the attribute there, unless the class itself names
it (a method, a property, a class attribute). Elsewhere, and where the proof
fails, other methods may read the zeros: a `copy_` writer in the class makes
the fix validate tier; a parameter created outside `__init__` is kept.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.overwrite import Shape, Tracked, prove_full_overwrite
from optpatch.rule import Advice, KeepCategory, Kept, Proven, Tier
from optpatch.rule.python import PythonModule, walk

from .conclusions import always_keep, fix, kept, proven, unproven
from .copy_writers import attribute_writer
from .site import ANOTHER_OBJECT, Site


def examine_attribute(site: Site, statement, target: cst.Attribute, shape: Shape, parameter: bool) -> Proven | Advice | Kept:
    """The verdict on an allocation bound to `target` (`<owner>.<name> = ...`) by STATEMENT."""
    module = site.module
    owner = target.value
    if not (isinstance(owner, cst.Name) and owner.value == "self"):
        return kept(*ANOTHER_OBJECT)
    attribute = target.attr.value
    function = module.enclosing_function(statement)
    proof = None
    if _is_constructor(module, function) and not _class_defines(module, function, attribute):
        # Until __init__ returns, only its own code can see the attribute: the proof follows it there.
        proof = prove_full_overwrite(module, statement, Tracked(attribute, attribute=True), shape)
        if proof.proven:
            return proven(site, f"self.{attribute}", proof)
    if parameter:
        if proof is None:
            return kept(f"parameter `self.{attribute}` is created outside __init__, where other methods may read it "
                        "before it is initialised", KeepCategory.ATTRIBUTE_BUFFER)
        return unproven(site, f"self.{attribute}", proof)
    always = always_keep(module, site.call, attribute)
    if always:
        return kept(f"attribute buffer `self.{attribute}`: {always[0]}", always[1])
    writer = attribute_writer(module, site.call, attribute)
    if writer is None:
        return kept(
            f"attribute buffer `self.{attribute}` has no full or prefix `copy_` in its class; other methods may read the zeros",
            KeepCategory.ATTRIBUTE_BUFFER,
        )
    reason = (
        f"attribute buffer `self.{attribute}` is filled by {writer}; other methods may read elements "
        "that were never written, so this needs a validation run"
    )
    return fix(site, Tier.VALIDATE, reason, [])


def _is_constructor(module: PythonModule, function: cst.FunctionDef | None) -> bool:
    """`__init__` defined directly in a class: until it returns, nothing outside it holds the new object."""
    if function is None or function.name.value != "__init__":
        return False
    block = module.parent(function)
    return isinstance(block, cst.IndentedBlock) and isinstance(module.parent(block), cst.ClassDef)


def _class_defines(module: PythonModule, function: cst.FunctionDef, attribute: str) -> bool:
    """The class itself names `attribute` (a method, a property, a class attribute): `self.<attribute>` may not be
    the instance's own slot."""
    cls = module.parent(module.parent(function))
    for statement in cls.body.body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and statement.name.value == attribute:
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Assign, cst.AnnAssign)) and attribute in {
                node.value for node in walk(small) if isinstance(node, cst.Name)
            } for small in statement.body
        ):
            return True
    return False
