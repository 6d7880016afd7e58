"""OPT203's proof obligations for one `zeros` call, in the order they are checked; the first that fails keeps
the site, with its reason:

1. host code (a device or unknown side is kept);
2. a local holds the tensor, outside any loop that reads it first (allocation.py);
3. its first use writes every element before any read, on every path (first_use.py, element_loop.py,
   kernel.py), which also sets the tier.

A call that meets them all becomes `empty` / `empty_like`, with the same arguments.

Without the project's headers, a kept site whose verdict they may change (an unknown side, an unresolved
holder, a first use the tokens show may still be a full write: header_questions.py) is noted with
`unit.ask_headers`, and only such a note, or a fix, starts a parse with them (`ZerosToEmptyCpp.needs_headers`).
"""

from __future__ import annotations

from optpatch.rule import Context, Edit, Impact, KeepCategory, Kept, Proven
from optpatch.rule.cpp import CppUnit, Node, Place, Token

from .allocation import Allocation, allocation_of
from .first_use import first_use
from .header_questions import may_become_a_fix
from .sites import EMPTY_OF

IMPACT_BASIS = (
    "RULES.md, measured on one H100 (torch 2.11, CUDA 13.0): torch.zeros -> torch.empty on cuda saves ~6-10 us of "
    "host time (one fill launch) plus the memset: ~4 us up to 1 MiB, 25 us at 64 MiB, 328 us at 1 GiB"
)


def examine(unit: CppUnit, call: Node) -> tuple[Context, Kept | Proven]:
    """Where the call runs, and the rewrite or the first obligation that keeps it."""
    where = unit.where(call)
    context = unit.run_context(call, where.function)
    if where.place is not Place.HOST:
        if where.place is not Place.DEVICE:
            # Only host code can call torch's factories, so the headers matter only if they may prove the rest.
            _ask_headers(unit, call, _question(unit, call, allocation_of(unit, call)),
                         f"cannot tell host from device code: {where.reason}; ")
        category = KeepCategory.DEVICE_CODE if where.place is Place.DEVICE else KeepCategory.UNRESOLVED
        return context, Kept(f"not host code: {where.reason}", category)
    allocation = allocation_of(unit, call)
    if isinstance(allocation, Kept):
        _ask_headers(unit, call, _question(unit, call, allocation))
        return context, allocation
    written = first_use(unit, allocation)
    if isinstance(written, Kept):
        _ask_headers(unit, call, _question(unit, call, allocation))
        return context, written
    tier, proof = written
    name = _callee_token(unit, call)
    if name is None:  # `#define Z torch::zeros` ... `Z({n}, ...)`: the name to change is the macro's, for every use
        return context, Kept(f"`{call.spelling}` is spelled in a macro, not at this call: changing the macro would "
                             "change every call through it", KeepCategory.CANNOT_SPELL)
    edit = Edit(name.start, name.end, EMPTY_OF[call.spelling])
    impact = Impact.HIGH if context is Context.HOT else Impact.MEDIUM
    basis = IMPACT_BASIS
    replacement = unit.text(call.start, name.start) + EMPTY_OF[call.spelling] + unit.text(name.end, call.end)
    return context, Proven("; ".join(proof), tier, (edit,), impact, basis, " ".join(replacement.split()), tuple(proof))


def _question(unit: CppUnit, call: Node, allocation: Allocation | Kept) -> str | None:
    """What the project's headers could still prove of a site kept without them, or None when nothing: a local the
    parse could not resolve, or a first use the tokens show may be a full write (header_questions.py)."""
    if unit.with_headers:
        return None
    if isinstance(allocation, Kept):
        return allocation.reason if allocation.category is KeepCategory.UNRESOLVED else None
    return may_become_a_fix(unit, allocation)


def _ask_headers(unit: CppUnit, call: Node, question: str | None, context: str = "") -> None:
    """Note a kept site the project's headers may make a fix (`ZerosToEmptyCpp.needs_headers` reads the notes)."""
    if question is not None:
        unit.ask_headers(f"OPT203 L{unit.line_of(call.start)}: {context}{question}")


def _callee_token(unit: CppUnit, call: Node) -> Token | None:
    """The factory's name as the call spells it; None when a macro spells it."""
    return next((t for t in unit.tokens_in(call.start, call.end) if t.spelling == call.spelling), None)
