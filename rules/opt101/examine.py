"""The verdict on one site: where its value goes, and what the overwrite proof says about it there.

A chained full write (`torch.zeros(n).fill_(v)`), a list of fresh
allocations bound to a name, a local name and `self.<name>` are followed by
the proof (analysis/overwrite.py); any other use keeps the site (site.py).
A local whose proof fails but whose every use is a prefix slice, first
copied into, is worth a validation run.
"""

from __future__ import annotations

import libcst as cst

from optpatch.analysis.overwrite import Tracked, prove_chained_overwrite, prove_full_overwrite
from optpatch.analysis.torch_api import keyword_arg
from optpatch.rule import Advice, KeepCategory, Kept, Proven, Tier

from .attribute import examine_attribute
from .conclusions import always_keep, discarded, fix, kept, proven, unproven, zeroed_again
from .copy_writers import prefix_copy_pattern
from .shape import allocated_shape, shape_of
from .site import DISCARDED, FILLS_OUT, UNPACKED, Site, allocated_value, bound_target, moved_result, unbound_reason


def examine(site: Site) -> Proven | Advice | Kept:
    """The verdict on SITE: a fix with its proof, advice, or the use that keeps it."""
    module, call = site.module, site.call
    if keyword_arg(call, "out") is not None:
        return kept(*FILLS_OUT)
    star = site.facts.star_import
    if isinstance(call.func, cst.Name) and star:
        return kept(f"`{star}` may rebind `{call.func.value}`: it may not be torch's", KeepCategory.NOT_TORCH)
    chained = prove_chained_overwrite(module, moved_result(module, call))
    if chained is not None:
        if chained.zeroed_again:
            return zeroed_again("the allocation", chained)
        return fix(site, Tier.SAFE, f"nothing reads the zeros: {chained.summary()}", chained.steps)
    allocation, parameter = allocated_value(module, call)
    parent = module.parent(allocation)
    if isinstance(parent, cst.ListComp) and parent.elt is allocation and not parameter:
        listed = bound_target(module.parent(parent), parent)
        if isinstance(listed, cst.Name):
            return examine_elements(site, module.parent(parent), listed.value)
    target = bound_target(parent, allocation)
    if target is None:
        if isinstance(parent, cst.Expr):
            return discarded(site, DISCARDED[0], [])
        return kept(*unbound_reason(module, parent))
    shape = shape_of(module, call, site.kind, allocation)
    if isinstance(target, cst.Attribute):
        return examine_attribute(site, parent, target, shape, parameter)
    if not isinstance(target, cst.Name):
        return kept(*UNPACKED)
    proof = prove_full_overwrite(module, parent, Tracked(target.value), shape,
                                 lambda value: allocated_shape(module, site.facts, value))
    if proof.proven:
        return proven(site, target.value, proof)
    prefix_writer = None if parameter else prefix_copy_pattern(module, parent, target.value)
    if prefix_writer is not None and not always_keep(module, call, target.value):
        reason = (
            f"every use of `{target.value}` is a prefix slice, first filled by {prefix_writer}; "
            "whether later reads stay inside the written prefix cannot be proven statically"
        )
        return fix(site, Tier.VALIDATE, reason, proof.steps)
    return unproven(site, target.value, proof)


def examine_elements(site: Site, statement, name: str) -> Proven | Advice | Kept:
    """`name = [torch.zeros(s) for _ in range(n)]`: the proof follows every tensor in the list (the output list
    of a synchronous `all_gather` or `all_to_all` writes them all)."""
    proof = prove_full_overwrite(site.module, statement, Tracked(name, elements=True))
    if proof.proven:
        return proven(site, name, proof)
    return unproven(site, name, proof)
