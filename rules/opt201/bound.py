"""Whether an array's bound is a run-time value: what it depends on whenever it is evaluated.

A bound is proven variable-length only by facts of the file itself: a
parameter, a non-constant variable, a call to a non-constexpr function, or
a constant initialised from one of those. A function declared by
optpatch's prelude might be constexpr in the real headers, so calling it
proves nothing unless its arguments do. What did not resolve is named, so a
keep can say why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optpatch.rule.cpp import CppUnit, CursorKind, Node, TypeKind, is_callee

# The type kinds of an array whose size is not a constant of the language.
ARRAY_KINDS = frozenset({TypeKind.VARIABLEARRAY, TypeKind.DEPENDENTSIZEDARRAY})
# An element type that is itself an array: `T a[n][4]`.
NESTED_ARRAY_KINDS = frozenset({
    TypeKind.CONSTANTARRAY, TypeKind.VARIABLEARRAY, TypeKind.DEPENDENTSIZEDARRAY, TypeKind.INCOMPLETEARRAY,
})
_LITERAL_KINDS = frozenset({
    CursorKind.INTEGER_LITERAL, CursorKind.CHARACTER_LITERAL, CursorKind.CXX_BOOL_LITERAL_EXPR,
    CursorKind.FLOATING_LITERAL,
})
# Expressions that evaluate all of their operands: a runtime operand makes them runtime.
_TRANSPARENT_KINDS = frozenset({
    CursorKind.PAREN_EXPR, CursorKind.UNEXPOSED_EXPR, CursorKind.CSTYLE_CAST_EXPR, CursorKind.CXX_STATIC_CAST_EXPR,
    CursorKind.CXX_FUNCTIONAL_CAST_EXPR, CursorKind.BINARY_OPERATOR, CursorKind.UNARY_OPERATOR,
    CursorKind.ARRAY_SUBSCRIPT_EXPR,
})
_SHORT_CIRCUIT = frozenset({"&&", "||"})
# Built-in operators that read both operands (not `,`, not assignments).
_READING_OPERATORS = frozenset({
    "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=", "<=>",
})
_REFERENCE_KINDS = frozenset({TypeKind.LVALUEREFERENCE, TypeKind.RVALUEREFERENCE})


@dataclass
class BoundProof:
    """What the array bound depends on: runtime values (witnesses), and what could not be resolved."""

    witnesses: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    constexpr_names: list[str] = field(default_factory=list)

    def merge(self, other: "BoundProof") -> "BoundProof":
        self.witnesses += [w for w in other.witnesses if w not in self.witnesses]
        self.unresolved += [u for u in other.unresolved if u not in self.unresolved]
        self.constexpr_names += [c for c in other.constexpr_names if c not in self.constexpr_names]
        return self

    @property
    def runtime(self) -> bool:
        return bool(self.witnesses) and not self.unresolved


def bound_of(declaration: Node) -> Node | None:
    """The expression of the array's (first) bound."""
    expressions = declaration.expressions()
    return expressions[0] if expressions else None


def prove_runtime(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    """Which run-time values `node` depends on whenever it is evaluated, and what did not resolve.

    Only facts of the file itself count as evidence: a function declared by
    optpatch's prelude might be constexpr in the real headers, so calling it
    proves nothing unless its arguments do.
    """
    proof = BoundProof()
    kind = node.kind
    canonical = node.cursor.type.get_canonical().kind
    if canonical is TypeKind.INVALID:
        proof.unresolved.append(f"`{unit.node_text(node)}` has no type")
        return proof
    if kind in _LITERAL_KINDS:
        return proof
    if kind is CursorKind.CXX_UNARY_EXPR:  # sizeof / alignof: never evaluated
        if any(n.type_kind in ARRAY_KINDS for n in node.walk() if n is not node):
            proof.unresolved.append(f"`{unit.node_text(node)}` measures a variable-length array")
        return proof
    if kind is CursorKind.CXX_THIS_EXPR:
        proof.witnesses.append("`this`")
        return proof
    if kind is CursorKind.CONDITIONAL_OPERATOR:
        return _prove_conditional(unit, node, visiting)
    if kind is CursorKind.BINARY_OPERATOR and node.spelling in _SHORT_CIRCUIT:
        left = prove_runtime(unit, node.expressions()[0], visiting)
        return left if left.witnesses or left.unresolved else left.merge(_unresolved(unit, node, "short-circuit operand"))
    if kind is CursorKind.UNARY_OPERATOR and unit.node_text(node).startswith("&"):
        return _unresolved(unit, node, "an address, not a value")
    binary = kind in (CursorKind.BINARY_OPERATOR, CursorKind.COMPOUND_ASSIGNMENT_OPERATOR)
    if binary and node.spelling not in _READING_OPERATORS:
        return _unresolved(unit, node, f"the operator `{node.spelling}`")
    if kind in _TRANSPARENT_KINDS:
        for child in node.expressions():
            proof.merge(prove_runtime(unit, child, visiting))
        if proof.witnesses:  # every operand is read: one run-time operand suffices
            proof.unresolved = []
        return proof
    if kind is CursorKind.DECL_REF_EXPR:
        return _prove_reference(unit, node, visiting)
    if kind is CursorKind.MEMBER_REF_EXPR:
        return _prove_member(unit, node, visiting)
    if kind is CursorKind.CALL_EXPR:
        return _prove_call(unit, node, visiting)
    return _unresolved(unit, node, f"a {kind.name.lower().replace('_', ' ')}")


def _unresolved(unit: CppUnit, node: Node, what: str) -> BoundProof:
    return BoundProof(unresolved=[f"`{unit.node_text(node)}` ({what}) is not understood"])


def _prove_conditional(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    condition, *branches = node.expressions()
    proof = prove_runtime(unit, condition, visiting)
    if proof.witnesses or proof.unresolved:
        return proof
    # A constant condition picks one branch: runtime only if both are.
    both = [prove_runtime(unit, branch, visiting) for branch in branches]
    if all(b.runtime for b in both):
        for branch in both:
            proof.merge(branch)
        return proof
    for branch in both:
        proof.unresolved += branch.unresolved
    if not proof.unresolved:
        proof.unresolved.append(f"`{unit.node_text(node)}` may select a constant branch")
    return proof


def _prove_reference(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    target = unit.referenced(node)
    if target is None:
        return _unresolved(unit, node, "an unresolved name")
    kind = target.kind
    name = node.spelling
    if kind is CursorKind.PARM_DECL:
        return BoundProof(witnesses=[f"parameter `{name}`"])
    if kind in (CursorKind.ENUM_CONSTANT_DECL, CursorKind.TEMPLATE_NON_TYPE_PARAMETER):
        return BoundProof()
    if kind is not CursorKind.VAR_DECL or unit.in_prelude(target):
        return _unresolved(unit, node, "not a variable of this file")
    declaration = unit.node_of(target)
    if declaration is None:
        return _unresolved(unit, node, "declared outside this file")
    constexpr = any(t.spelling in ("constexpr", "constinit") for t in unit.tokens_in(declaration.start, declaration.end))
    reference = target.type.kind in (TypeKind.LVALUEREFERENCE, TypeKind.RVALUEREFERENCE)
    if not (constexpr or reference or target.type.is_const_qualified()):
        return BoundProof(witnesses=[f"the non-constant variable `{name}`"])
    initialiser = declaration.expressions()
    if not initialiser or unit.errors_in(declaration.start, declaration.end) or id(declaration) in visiting:
        proof = _unresolved(unit, node, "a constant whose initialiser did not resolve")
        if constexpr:
            proof.constexpr_names.append(name)
        return proof
    inner = prove_runtime(unit, initialiser[-1], visiting | {id(declaration)})
    if constexpr:
        inner.constexpr_names.append(name)
    if inner.runtime:
        inner.witnesses = [f"`{name}` = `{unit.node_text(initialiser[-1])}` ({', '.join(inner.witnesses)})"]
    return inner


def _prove_member(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    target = unit.referenced(node)
    if target is None:
        return _unresolved(unit, node, "an unresolved member")
    if target.kind is CursorKind.VAR_DECL:  # a static data member: like any variable
        return _prove_reference(unit, node, visiting)
    base = node.expressions()
    if target.kind is CursorKind.FIELD_DECL and not base:
        return BoundProof(witnesses=[f"the member `{node.spelling}` of `this`"])
    proof = BoundProof()
    for child in base:
        proof.merge(prove_runtime(unit, child, visiting))
    if target.kind is CursorKind.FIELD_DECL and proof.runtime:
        proof.witnesses = [f"`{unit.node_text(node)}`"]
    return proof


def _prove_call(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    """A call is a run-time value when it reads one, or when it cannot be constant-evaluated.

    A constexpr function need not read what it is given by reference
    (`std::array::size()` on a local array is a constant), so a run-time
    argument counts only when passed by value, and a run-time object only
    when the member function is not constexpr.
    """
    callee = unit.referenced(node)
    if callee is None:
        return _unresolved(unit, node, "an unresolved call")
    constexpr = _is_constexpr(callee)
    parameters = _parameter_kinds(callee)
    proof = BoundProof()
    arguments = [child for child in node.expressions() if not is_callee(child)]
    for child in arguments:
        if child.kind is CursorKind.MEMBER_REF_EXPR:  # the object of a member call
            for base in child.expressions():
                inner = prove_runtime(unit, base, visiting)
                proof.unresolved += inner.unresolved
                if inner.witnesses and not constexpr:
                    proof.witnesses += inner.witnesses
            continue
    values = [child for child in arguments if child.kind is not CursorKind.MEMBER_REF_EXPR]
    for index, child in enumerate(values):
        inner = prove_runtime(unit, child, visiting)
        proof.unresolved += inner.unresolved
        by_value = parameters is not None and index < len(parameters) and parameters[index] not in _REFERENCE_KINDS
        if inner.witnesses and (by_value or not constexpr):
            proof.witnesses += inner.witnesses
    if proof.witnesses:
        proof.witnesses = [f"`{unit.node_text(node)}` ({', '.join(proof.witnesses)})"]
        proof.unresolved = []  # every argument is evaluated: one run-time value suffices
        return proof
    if proof.unresolved:
        return proof
    if unit.in_prelude(callee) or unit.node_of(callee) is None:
        return _unresolved(unit, node, "a call optpatch cannot see into")
    if constexpr:
        return _unresolved(unit, node, "a constexpr call with constant arguments")
    return BoundProof(witnesses=[f"the call `{unit.node_text(node)}` to the non-constexpr `{node.spelling}`"])


def _is_constexpr(callee) -> bool:
    """`constexpr` or `consteval` in the head of the callee's declaration (the file's or the prelude's)."""
    for token in callee.get_tokens():
        if token.spelling in ("{", ";", "="):
            return False
        if token.spelling in ("constexpr", "consteval"):
            return True
    return False


def _parameter_kinds(callee) -> list[TypeKind] | None:
    """The canonical type kinds of the callee's parameters; None when its type has no prototype."""
    if callee.type.kind is not TypeKind.FUNCTIONPROTO:
        return None
    return [argument.get_canonical().kind for argument in callee.type.argument_types()]


def undeclared_names(unit: CppUnit, bound: Node) -> list[str]:
    """The names in `bound` that resolve to nothing (declared, if anywhere, in a header the parse did not read)."""
    names = []
    for node in bound.walk():
        named = node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.MEMBER_REF_EXPR, CursorKind.OVERLOADED_DECL_REF)
        if named and unit.referenced(node) is None:
            names.append(node.spelling or unit.node_text(node))
    if not names:  # clang dropped the unresolved name from the tree: its tokens still spell it
        names = [t.spelling for t in unit.tokens_in(bound.start, bound.end) if t.kind == "identifier"
                 and unit.errors_in(t.start, t.end)]
    return list(dict.fromkeys(n for n in names if n))
