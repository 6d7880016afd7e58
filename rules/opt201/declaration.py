"""What a candidate's declaration spells: a plain `T name[bound];`, read back as its element type and bound
text for the rewrite, or a `Kept` saying why it cannot be rewritten (several declarators, qualifiers,
attributes, a macro, `bool` elements).
"""

from __future__ import annotations

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import CppUnit, CursorKind, Node, TypeKind

_DECLARATION_BLOCKERS = frozenset({
    "static", "extern", "thread_local", "register", "const", "volatile", "constexpr", "alignas", "__attribute__",
    "__shared__", "__constant__", "__device__", "(", ")", "&", "&&", ",", "=", "{", "[",
})


def declaration_shape(unit: CppUnit, declaration: Node) -> Kept | tuple[str, str]:
    """(element type text, bound text) of `T name[bound]`, or the keep saying why it cannot be rewritten."""
    statement = declaration.parent
    if (
        statement is None or statement.kind is not CursorKind.DECL_STMT
        or statement.parent is None or statement.parent.kind is not CursorKind.COMPOUND_STMT
    ):
        return _cannot_spell("not a declaration statement of its own block")
    if len([c for c in statement.children if c.kind is CursorKind.VAR_DECL]) != 1:
        return _cannot_spell("declared together with other variables; split the declaration first")
    element_type = declaration.cursor.type.element_type
    if element_type.get_canonical().kind is TypeKind.BOOL:
        return _cannot_spell("`bool` elements: std::vector<bool> is a packed bitset without `.data()`")
    if element_type.get_canonical().kind in (TypeKind.UNEXPOSED, TypeKind.DEPENDENT):
        return _cannot_spell(
            "the element type depends on a template parameter: std::vector<bool> would be a packed bitset")
    if statement.start != declaration.start or any(child.kind.is_attribute() for child in declaration.children):
        # `alignas(64)`, `[[gnu::aligned(64)]]`: std::vector's buffer would not keep them.
        return _cannot_spell("the declaration has attributes: only a plain `T name[n];` is rewritten")
    tokens = unit.tokens_in(declaration.start, declaration.end)
    names = [i for i, t in enumerate(tokens) if t.spelling == declaration.spelling and t.kind == "identifier"]
    if len(names) != 1 or unit.token_at(declaration.start) is None:
        return _cannot_spell("the declaration is spelled through a macro")
    name_index = names[0]
    type_tokens, rest = tokens[:name_index], tokens[name_index + 1 :]
    if element_type.is_const_qualified() or element_type.is_volatile_qualified():
        return _cannot_spell("a const or volatile array of objects: std::vector cannot hold const elements")
    # `const float* ptrs[n]` is an ordinary array of pointers (to const): its qualifiers belong to the pointees.
    qualifiers = {"const", "volatile"} if element_type.get_canonical().kind is TypeKind.POINTER else set()
    blocking = [t.spelling for t in type_tokens if t.spelling in _DECLARATION_BLOCKERS and t.spelling not in qualifiers]
    if blocking or not type_tokens:
        shown = blocking[0] if blocking else declaration.spelling
        return _cannot_spell(f"the declaration has `{shown}`: only a plain `T name[n];` is rewritten")
    if not rest or rest[0].spelling != "[" or rest[-1].spelling != "]":
        return _cannot_spell("the declaration has an initialiser or attributes")
    after = unit.token_after(declaration.end)
    if after is None or after.spelling != ";":
        return _cannot_spell("the declaration has an initialiser or attributes")
    element = unit.text(type_tokens[0].start, type_tokens[-1].end)
    bound = unit.text(rest[0].end, rest[-1].start).strip()
    return element, bound


def element_text(unit: CppUnit, declaration: Node) -> str:
    """The element type as the declaration spells it (for an advice's `std::array<T, n>`)."""
    tokens = unit.tokens_in(declaration.start, declaration.end)
    names = [i for i, t in enumerate(tokens) if t.spelling == declaration.spelling]
    if names and names[0] > 0:
        return unit.text(tokens[0].start, tokens[names[0] - 1].end)
    return declaration.cursor.type.element_type.spelling


def _cannot_spell(reason: str) -> Kept:
    return Kept(reason, KeepCategory.CANNOT_SPELL)
