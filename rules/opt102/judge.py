"""The verdict on a site: its obligations in order, the first that fails keeps it, and a fix carries them all as proof.

The order is part of what the rule says: a move that cannot be read is
kept before anything else is asked, a move to where the tensor already is
gets advice before the factory is looked at, and the tier of a fix is the
strictest any obligation asked for.
"""

from __future__ import annotations

from optpatch.rule import Advice, Edit, KeepCategory, Kept, Proven, Tier
from optpatch.rule.python import PythonModule, preview
from optpatch.analysis.no_gain import rebound_before_read

from .chain import chain_casts, dtype_merge, evaluation_order, legacy_casts, op_between
from .device import device_spelling
from .edits import site_edits
from .factory import autograd_tier, factory_blocker, subclass_tier, value_tier
from .gain import DEAD_STORE_BASIS, SAME_DEVICE_BASIS, already_there, nothing_to_gain
from .impact import measured_impact
from .purpose import discarded, exception_expected
from .reads import FunctionReads
from .site import Site, op_text


def judge(module: PythonModule, site: Site, reads: FunctionReads) -> Proven | Kept | Advice:
    """The fix of a factory-then-move site with its tier and proof, or the first obligation that keeps it, or advice
    where the rewrite gains nothing."""
    move = site.move
    if move.blocker is not None:
        return Kept(move.blocker, move.blocker_category)
    between = op_between(module, site)
    if between is not None:
        return between
    device = device_spelling(module, move)
    if isinstance(device, Kept):
        return device
    already = already_there(module, site)
    if already is not None:
        return Advice(already, SAME_DEVICE_BASIS)
    for kept in (exception_expected(module, site), discarded(module, site, reads), factory_blocker(module, site)):
        if kept is not None:
            return kept
    no_gain = nothing_to_gain(module, site, device)
    if isinstance(no_gain, Kept):
        return no_gain
    if no_gain is not None:
        return Advice(*no_gain)
    tier, reasons = device.tier, [device.reason]
    for check in (chain_casts, legacy_casts, dtype_merge, value_tier, autograd_tier, subclass_tier, evaluation_order):
        outcome = check(module, site)
        if isinstance(outcome, Kept):
            return outcome
        if outcome is not None:
            tier = max(tier, outcome[0], key=lambda t: t.strictness)
            reasons.append(outcome[1])
    rebound = rebound_before_read(module, site.move_call)
    if rebound is not None:
        return Advice(rebound.advice("the moved tensor"), DEAD_STORE_BASIS, category=KeepCategory.DEAD_STORE)
    edits = site_edits(module, site, device)
    if isinstance(edits, Kept):
        return edits
    return _proven(module, site, tier, reasons, edits)


def _proven(module: PythonModule, site: Site, tier: Tier, reasons: list[str], edits: list[Edit]) -> Proven:
    """The fix: what the site is, what it becomes, and every obligation's reason as its proof."""
    impact, basis = measured_impact(module, site)
    start, _ = module.span(site.factory)
    _, end = module.span(site.move_call if site.second is None else site.ops[-1].call if site.ops else site.factory)
    replacement = preview(module.source.text, start, end, edits)
    ops = "".join(op_text(module, op) for op in site.ops)
    if site.second is None:
        form = f"`{ops}.{site.move.method}()` on the result"
    else:
        form = f"`{module.text(site.second.body[0])}` on L{module.start(site.second)[0]}"
    where = "create it on the device instead, keeping the chain" if ops else "create it on the device instead"
    reason = f"`{site.callee}(...)` then {form}: {where}; " + "; ".join(reasons)
    return Proven(reason, tier, tuple(edits), impact, basis, replacement, tuple(reasons))
