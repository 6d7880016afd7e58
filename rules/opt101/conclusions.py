"""What a site's proof, or the use that blocked it, concludes: a fix, advice, or a keep, with its reason.

A proof that the zeros are never read is a fix when some path fills the
buffer, and advice when nothing reads the buffer at all or every path zeroes
it again. A fix inside a block that expects an exception, or one that cannot
be spelled, is kept instead. An unproven site is kept; the "always keep"
shapes (docs/rules/OPT101.md) say which kind of keep, and are never
proposed for validation.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterable

import libcst as cst

from optpatch.analysis.expected_exceptions import expecting_block
from optpatch.analysis.overwrite import OverwriteProof, Step
from optpatch.analysis.tensor_subclasses import receiver_caution
from optpatch.analysis.torch_api import INTEGER_DTYPES, keyword_arg, padded_size_call
from optpatch.rule import Advice, KeepCategory, Kept, Proven, Tier
from optpatch.rule.python import PythonModule, dotted_name, preview

from .allocation import ON_A_RECEIVER
from .edits import rewrite_edits
from .impact import impact_of
from .site import Site

DISCARDED_BASIS = "no rewrite: an allocation nothing reads is either dead code or there for a side effect of the call"
ZEROED_AGAIN_BASIS = "no rewrite: the allocation's zeros are the values wanted; the fill after it is the one to remove"
_INDEX_NAME = re.compile(r"(ids?|idx|index|indices|positions?|pos|slots?|slot_mapping|block_tables?|mapping|tokens?|offsets?)$")
_DUMMY_NAME = re.compile(r"(dummy|warmup|graph|capture)")


def proven(site: Site, name: str, proof: OverwriteProof) -> Proven | Advice | Kept:
    """A proof that the zeros are never read: a fix when some path fills the buffer, else the allocation is dead."""
    if not proof.fills:
        discarded_steps = [f"L{step.line}: {step.text}" for step in proof.steps if step.writes]
        reason = (f"the value of `{name}` is never read"
                  f"{' (' + '; '.join(discarded_steps) + ')' if discarded_steps else ''}: the "
                  "allocation is dead, or kept for a side effect of the call (an exception, a dispatch); remove it, "
                  "or leave it as it is")
        return discarded(site, reason, proof.steps)
    if proof.zeroed_again:
        return zeroed_again(f"`{name}`", proof)
    return fix(site, Tier.SAFE, f"every path overwrites `{name}` before reading it: {proof.summary()}", proof.steps)


def zeroed_again(what: str, proof: OverwriteProof) -> Advice:
    """Zeros that every path zeroes again before any read: advice to remove the second zeroing, not a fix."""
    again = "; ".join(f"L{step.line}: {step.text}" for step in proof.zeroed_again)
    reason = f"{what} is zeroed again before any read ({again}): the second zeroing gains nothing; remove it, or leave it as it is"
    return Advice(reason, ZEROED_AGAIN_BASIS, category=KeepCategory.NO_GAIN)


def unproven(site: Site, name: str, proof: OverwriteProof) -> Kept:
    """The use that blocked the proof, and the "always keep" shape it has, if any."""
    assert proof.blocker is not None
    always = always_keep(site.module, site.call, name)
    reason = f"L{proof.blocker.line}: {proof.blocker.text}" + (f" ({always[0]})" if always else "")
    category = always[1] if always else proof.blocker.category or KeepCategory.OTHER
    return kept(reason, category, proof.steps + [proof.blocker])


def fix(site: Site, tier: Tier, reason: str, steps: list[Step]) -> Proven | Kept:
    """The rewrite at TIER, or a keep where the exception is the behaviour or `empty` cannot be spelled."""
    module, call, kind = site.module, site.call, site.kind
    expecting = expecting_block(module, call)
    if expecting is not None:
        return kept(f"{expecting}: `zeros` and `empty` may raise differently there, and the exception is part of what "
                    "the code does", KeepCategory.EXPECTED_EXCEPTION, steps)
    edits = rewrite_edits(module, call, kind, site.facts.torch_imports)
    if isinstance(edits, Kept):
        return replace(edits, proof=_lines(steps))
    if tier is Tier.SAFE and kind in ON_A_RECEIVER:
        caution = receiver_caution(module, f"`{kind}`")
        if caution is not None:
            tier, reason = Tier.VALIDATE, f"{reason}; but {caution}"
    impact, basis = impact_of(module, call, kind)
    start, end = module.span(call)
    return Proven(reason, tier, edits, impact, basis, preview(module.source.text, start, end, edits), _lines(steps))


def discarded(site: Site, reason: str, steps: list[Step]) -> Advice | Kept:
    """An allocation whose value nothing reads: advice, never a fix (the call may be there for what it raises)."""
    expecting = expecting_block(site.module, site.call)
    if expecting is not None:
        return kept(f"{expecting}: the call may be there for the exception it raises", KeepCategory.EXPECTED_EXCEPTION,
                    steps)
    return unread(reason)


def unread(reason: str) -> Advice:
    """The advice on an allocation whose value nothing reads."""
    return Advice(reason, DISCARDED_BASIS, category=KeepCategory.DISCARDED)


def kept(reason: str, category: KeepCategory, steps: Iterable[Step] = ()) -> Kept:
    """A keep, with the proof steps that led to it."""
    return Kept(reason, category, _lines(steps))


def _lines(steps: Iterable[Step]) -> tuple[str, ...]:
    return tuple(f"L{step.line}: {step.text}" for step in steps)


def always_keep(module: PythonModule, call: cst.Call, name: str) -> tuple[str, KeepCategory] | None:
    """The "always keep" cases of docs/rules/OPT101.md, recognised by their usual shapes: why, and which.

    They stop a site from being proposed for validation; a static proof
    of a full overwrite still applies to them, since it leaves no element
    unwritten (an index tensor included).
    """
    padding = padded_size_call(call)
    if padding:
        return (f"padded or tiled size from `{padding}(...)`: a writer bounded by lengths leaves the padding unwritten",
                KeepCategory.PADDED)
    dtype = keyword_arg(call, "dtype")
    if dtype is not None and dotted_name(dtype.value) in INTEGER_DTYPES and _INDEX_NAME.search(name.lower()):
        return "integer index or id tensor: garbage indices reach an embedding or gather", KeepCategory.INDEX_TENSOR
    if _DUMMY_NAME.search(name.lower()):
        return "dummy input for warm-up or CUDA-graph capture: its values flow through the model", KeepCategory.DUMMY_INPUT
    if _in_test(module, call):
        return ("test fixture: compared in full against a reference, where unwritten elements must be zero",
                KeepCategory.TEST_FIXTURE)
    return None


def _in_test(module: PythonModule, call: cst.Call) -> bool:
    """Inside a test function or a Test* class: its buffers are compared against references."""
    for scope in module.ancestors(call):
        if isinstance(scope, cst.FunctionDef) and scope.name.value.startswith("test"):
            return True
        if isinstance(scope, cst.ClassDef) and scope.name.value.startswith("Test"):
            return True
    return False
