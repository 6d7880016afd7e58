"""What each reference to the array is: a use the rewrite keeps (indexing), one it edits (a decay to a
pointer becomes `.data()`), or one that blocks it, as a `Kept`.

A use the parse could not see (code that did not parse without the
project's headers, or a macro) blocks the rewrite too: `unseen_use`.
"""

from __future__ import annotations

from dataclasses import dataclass

from optpatch.rule import Edit, KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node, TypeKind

# Words whose operand is never evaluated: `sizeof(name)` measures the array itself.
UNEVALUATED_WORDS = frozenset({
    "sizeof", "alignof", "_Alignof", "__alignof__", "decltype", "typeof", "__typeof__", "__typeof",
})
_BEFORE_CALL_ARGUMENT = frozenset({"(", ","})
_AFTER_CALL_ARGUMENT = frozenset({",", ")"})


@dataclass(frozen=True)
class Use:
    """One reference to the array: the edit it needs, or the keep it forces on the declaration."""

    node: Node
    edit: Edit | None = None
    blocks: Kept | None = None
    unresolved_callee: bool = False  # a decay into a call clang could not resolve (a macro from a header?)


def classify(unit: CppUnit, declaration: Node, reference: Node) -> Use:
    """What the reference to the array at `reference` is: kept as written, decayed (`.data()`), or blocking."""
    name = declaration.spelling
    line = unit.line_of(reference.start)
    token = unit.token_at(reference.start)
    if token is None or token.spelling != name:
        return _blocked(reference, f"L{line}: `{name}` is used through a macro", KeepCategory.UNRESOLVED)
    before, after = unit.token_before(token.start), unit.token_after(token.end)
    if reference.kind is CursorKind.VARIABLE_REF:  # a lambda capture
        if before is not None and before.spelling == "&":
            return Use(reference)
        return _blocked(reference, f"L{line}: captured by copy")
    if after is not None and after.spelling == "[":
        return Use(reference)
    if _in_unevaluated_operand(unit, reference):
        return _blocked(reference, f"L{line}: `sizeof`/`decltype` of `{name}` would measure a std::vector")
    if before is not None and before.spelling == "&":
        return _blocked(reference, f"L{line}: `&{name}` takes the address of the whole array")
    parent = reference.parent
    while parent is not None and parent.kind is CursorKind.PAREN_EXPR:
        parent = parent.parent
    if parent is None:
        return _blocked(reference, f"L{line}: a use the parser did not place", KeepCategory.UNRESOLVED)
    if parent.kind is CursorKind.CXX_FOR_RANGE_STMT:
        return Use(reference)  # a std::vector is a range with the same elements
    decay = Edit(token.start, token.end, f"{name}.data()")
    if parent.kind is CursorKind.UNEXPOSED_EXPR and parent.cursor.type.get_canonical().kind is TypeKind.POINTER:
        user = parent.parent
        truth = user is not None and user.kind is CursorKind.UNEXPOSED_EXPR
        if truth and user.cursor.type.get_canonical().kind is TypeKind.BOOL:
            return _blocked(reference, f"L{line}: `{name}` used as a truth value")
        return Use(reference, edit=decay)
    if _is_unresolved_call_argument(parent, before, after):
        return Use(reference, edit=decay, unresolved_callee=True)
    return _blocked(reference, f"L{line}: `{unit.text(*_line_span(unit, reference.start)).strip()}` uses the array itself")



def _blocked(reference: Node, reason: str, category: KeepCategory = KeepCategory.WHOLE_ARRAY_USED) -> Use:
    """A use that keeps the declaration: most use the whole array, which a std::vector is not."""
    return Use(reference, blocks=Kept(reason, category))


def _in_unevaluated_operand(unit: CppUnit, reference: Node) -> bool:
    for ancestor in reference.ancestors():
        if ancestor.kind.is_statement():
            break
        if ancestor.kind is CursorKind.CXX_UNARY_EXPR:  # sizeof, alignof
            return True
    before = unit.token_before(reference.start)
    return before is not None and before.spelling in UNEVALUATED_WORDS


def _is_unresolved_call_argument(parent: Node, before, after) -> bool:
    """An argument of a call clang could not resolve: the callee's parameter is unknown, but a VLA
    cannot bind to a deduced reference, so a call that compiles receives a pointer."""
    dependent = parent.cursor.type.kind in (TypeKind.DEPENDENT, TypeKind.INVALID)
    return (
        dependent and parent.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.CALL_EXPR)
        and before is not None and before.spelling in _BEFORE_CALL_ARGUMENT
        and after is not None and after.spelling in _AFTER_CALL_ARGUMENT
    )


def unseen_use(unit: CppUnit, declaration: Node, uses: list[Use]) -> Kept | None:
    """A token spelling the array's name that no parsed reference accounts for (code that did not parse)."""
    block = declaration.parent.parent if declaration.parent is not None else None
    end = block.end if block is not None else declaration.end
    seen = {use.node.start for use in uses}
    for token in unit.tokens_in(declaration.end, end):
        if token.spelling != declaration.spelling or token.start in seen:
            continue
        before = unit.token_before(token.start)
        if before is not None and before.spelling in (".", "->", "::"):
            continue  # a member of something else
        line = unit.line_of(token.start)
        return Kept(f"L{line}: a use of `{declaration.spelling}` the parser could not see (code that does not parse "
                    "without the project's headers)", KeepCategory.UNRESOLVED)
    return None


def _line_span(unit: CppUnit, offset: int) -> tuple[int, int]:
    line = unit.line_of(offset)
    starts = unit.source.line_starts
    return starts[line - 1], starts[line] if line < len(starts) else len(unit.source.text)
