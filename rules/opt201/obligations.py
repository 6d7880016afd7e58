"""OPT201's proof obligations for one candidate, in the order they are checked: the first that fails keeps
the declaration (or says nothing, or advises `std::array`), and a candidate that meets them all is rewritten.

1. host memory, not device memory (`__shared__`, `__constant__`);
2. a bound proven to be a run-time value (bound.py), in host code;
3. a one-dimensional array that clang warned is variable-length;
4. a plain `T name[n];` (declaration.py);
5. every use understood (uses.py).

Where a declaration the header-free parse could not see may change the
verdict, the rule asks for the file's headers (cpp_second_look.py).
"""

from __future__ import annotations

from optpatch.rule import Advice, Context, Impact, KeepCategory, Kept, Proven, Tier
from optpatch.rule.cpp import CppUnit, CursorKind, Node, Place, TypeKind

from .bound import NESTED_ARRAY_KINDS, BoundProof, bound_of, prove_runtime, undeclared_names
from .declaration import declaration_shape, element_text
from .edits import rewrite
from .repetition import repeated_call
from .uses import Use, classify, unseen_use

_INTEGER_KINDS = frozenset({
    TypeKind.BOOL, TypeKind.CHAR_U, TypeKind.UCHAR, TypeKind.CHAR16, TypeKind.CHAR32, TypeKind.USHORT, TypeKind.UINT,
    TypeKind.ULONG, TypeKind.ULONGLONG, TypeKind.UINT128,
    TypeKind.CHAR_S, TypeKind.SCHAR, TypeKind.WCHAR, TypeKind.SHORT, TypeKind.INT, TypeKind.LONG, TypeKind.LONGLONG,
    TypeKind.INT128, TypeKind.ENUM,
})
# Device memory (`__shared__`, `__constant__`): never a host array, whatever its bound.
_DEVICE_MEMORY_ATTRIBUTES = frozenset({CursorKind.CUDASHARED_ATTR, CursorKind.CUDACONSTANT_ATTR})

PORTABILITY_BASIS = (
    "portability: ISO C++ has no variable-length arrays (MSVC and -pedantic reject them); std::vector costs "
    "one heap allocation and a zero fill per call. A speed-up was measured only for this rule together with "
    "OPT202 on the same buffer: copy_blocks 32.1 -> 16.8 us host time per call (H100, docs/benchmarks.md)"
)
ADVICE_BASIS = "no runtime change: a constant-size array is already ISO C++"


def examine(unit: CppUnit, declaration: Node) -> tuple[Context, Proven | Kept | Advice] | None:
    """Where the declaration runs and the verdict on it; None when there is nothing to say (device memory, a
    constant bound in code that may be device code, a template's constant per instantiation)."""
    if any(child.kind in _DEVICE_MEMORY_ATTRIBUTES for child in declaration.children):
        return None  # `__shared__`, `__constant__`: device memory, never a host array
    dependent = declaration.type_kind is TypeKind.DEPENDENTSIZEDARRAY
    nested = declaration.cursor.type.element_type.get_canonical().kind in NESTED_ARRAY_KINDS
    if nested and dependent:
        return None
    bound = bound_of(declaration)
    if bound is None:
        return None
    if nested:  # `T a[n][4]`: a run-time value in any bound makes it variable-length
        bound = next((b for b in declaration.expressions() if prove_runtime(unit, b, set()).runtime), bound)
    proof = prove_runtime(unit, bound, set())
    if bound.cursor.type.get_canonical().kind not in _INTEGER_KINDS:
        proof.unresolved.insert(0, f"`{unit.node_text(bound)}` is not known to be an integer")
    if unit.errors_in(bound.start, bound.end):
        proof.unresolved.insert(0, f"`{unit.node_text(bound)}` has errors without the project's headers")
    if dependent and not proof.runtime:
        return None  # a template-dependent bound is a constant per instantiation unless proven otherwise
    where = unit.where(declaration)
    if where.place is Place.DEVICE and not proof.runtime:
        return None  # device code has no VLAs (nvcc rejects them): a constant this parse could not evaluate
    context = unit.run_context(declaration, where.function)
    if where.place is Place.DEVICE:
        reason = f"device code ({where.reason}): std::vector cannot be used there"
        return context, Kept(reason, KeepCategory.DEVICE_CODE)
    if where.place is Place.UNKNOWN:
        if proof.witnesses:  # a run-time bound: host (a fix) or device (a keep) is the macro's to say
            _ask_headers(unit, declaration, f"cannot tell host from device code: {where.reason}")
            return context, Kept(f"cannot tell host from device code: {where.reason}", KeepCategory.UNRESOLVED)
        if proof.constexpr_names or not proof.unresolved:
            return None  # a constant-size array, in code that may be device code: no advice to give there
        return context, _unproven(unit, declaration, bound, proof, ask=False)
    if not proof.runtime:
        return context, _unproven(unit, declaration, bound, proof)
    return context, _host_candidate(unit, declaration, nested, dependent, proof, context)


def _host_candidate(unit: CppUnit, declaration: Node, nested: bool, dependent: bool, proof: BoundProof,
                    context: Context) -> Proven | Kept:
    """A host array whose bound is a run-time value: rewritten, unless its shape or a use keeps it."""
    if nested:
        return Kept("multi-dimensional array: std::vector<std::vector<T>> would change its layout",
                    KeepCategory.CANNOT_SPELL)
    if not dependent and not unit.warned_vla(declaration.start, declaration.end):
        _ask_headers(unit, declaration, "clang did not warn that this is a variable-length array")
        return Kept("clang did not warn that this is a variable-length array", KeepCategory.UNRESOLVED)
    shape = declaration_shape(unit, declaration)
    if isinstance(shape, Kept):
        return shape
    uses = [classify(unit, declaration, reference) for reference in unit.references_to(declaration)]
    blocking = next((use.blocks for use in uses if use.blocks is not None), None)
    if blocking is not None:
        if blocking.category is KeepCategory.UNRESOLVED:
            _ask_headers(unit, declaration, blocking.reason)
        return blocking
    unseen = unseen_use(unit, declaration, uses)
    if unseen is not None:
        _ask_headers(unit, declaration, unseen.reason)
        return unseen
    unresolved = next((use for use in uses if use.unresolved_callee), None)
    if unresolved is not None:  # the callee may be a macro from a header (`CHECK(a)` -> `sizeof(a)`)
        _ask_headers(unit, declaration, f"L{unit.line_of(unresolved.node.start)}: passed to a call this parse "
                                        "could not resolve")
    return _proven(unit, declaration, shape, uses, proof, context)


def _unproven(unit: CppUnit, declaration: Node, bound: Node, proof: BoundProof, ask: bool = True) -> Advice | Kept:
    """A bound not proven to be a run-time value: advice when it is a constant, else kept with what did not resolve."""
    bound_text = unit.node_text(bound)
    if ask:
        _ask_headers(unit, declaration, f"the bound `{bound_text}` did not resolve")
    if proof.constexpr_names or not proof.unresolved:
        names = ", ".join(f"`{n}`" for n in proof.constexpr_names)
        origin = f"declared constexpr ({names})" if names else "a constant expression"
        reason = (
            f"the bound `{bound_text}` is {origin}: a constant-size array, not a VLA, so nothing to rewrite; "
            f"if a container is wanted, use `std::array<{element_text(unit, declaration)}, {bound_text}>`"
        )
        return Advice(reason, ADVICE_BASIS)
    unseen = undeclared_names(unit, bound)
    if unseen and not proof.witnesses:
        names = ", ".join(f"`{n}`" for n in unseen)
        reason = (f"the bound `{bound_text}` reads {names}, which this file does not declare: a constant from a "
                  f"header the parse could not see, not shown to be a run-time value")
        return Kept(reason, KeepCategory.UNRESOLVED)
    reason = f"bound `{bound_text}` is not proven to be a run-time value: " + "; ".join(proof.unresolved)
    return Kept(reason, KeepCategory.UNRESOLVED)


def _proven(unit: CppUnit, declaration: Node, shape: tuple[str, str], uses: list[Use], proof: BoundProof,
            context: Context) -> Proven:
    """The rewrite, its proof step by step, and its tier: `validate` where the allocation may be repeated."""
    element, bound_text = shape
    edits, replacement = rewrite(unit, declaration, element, bound_text, uses)
    decayed = sum(1 for use in uses if use.edit is not None)
    reason = (
        f"`{declaration.spelling}` is a variable-length array in host code: its bound `{bound_text}` depends on "
        f"{', '.join(proof.witnesses)}; {len(uses)} use(s) understood, {decayed} decayed to a pointer (-> `.data()`)"
    )
    steps = [f"bound `{bound_text}` depends on {w}" for w in proof.witnesses]
    steps += [f"L{unit.line_of(u.node.start)}: `{u.node.spelling}` -> `{u.edit.text}`" for u in uses if u.edit]
    tier = Tier.SAFE
    repeated = repeated_call(unit, declaration, context)
    if repeated:
        # std::vector allocates on the heap each time: a cost the array never had, on a path that may be hot.
        tier = Tier.VALIDATE
        note = f"{repeated}: std::vector heap-allocates on every call there (pytorch #134140 reverted such a change)"
        reason += f"; {note}"
        steps.append(note)
    return Proven(reason, tier, tuple(sorted(edits)), Impact.LOW, PORTABILITY_BASIS, replacement, tuple(steps))


def _ask_headers(unit: CppUnit, declaration: Node, why: str) -> None:
    """Note that the file's headers may change this host candidate's verdict (cpp_second_look.py reads it)."""
    unit.ask_headers(f"OPT201 L{unit.line_of(declaration.start)} `{declaration.spelling}`: {why}")
