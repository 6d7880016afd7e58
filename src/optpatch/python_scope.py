"""Which import, builtin or local binding a Python name refers to.

This replaces libcst's QualifiedNameProvider, whose scope analysis visits
every node of the module and costs about five times the parse
(benchmarks/frontend_costs.py, docs/benchmarks.md). Here the
frontend's one indexing pass hands over the few nodes that bind names
(imports, definitions, parameters, assignment targets, `global`), bindings
are recorded per scope from those alone, and a name is resolved only when a
rule asks about it.

The answers are QualifiedNameProvider's, quirks included, so that rules see
the same meaning either way (tests/python/test_python_scope.py compares the
two on tricky snippets): an alias resolves through its import (`import
torch as t; t.zeros` -> `torch.zeros`), a name bound in the scope where it
is used (a parameter, a local, a comprehension variable) is a local, class
attributes are invisible to the methods of the class, and a binding only
counts for uses that come after it in the same scope. What is not
reproduced: names inside string annotations (`x: "torch.Tensor"`), which
QualifiedNameProvider attaches to the string node, and PEP 695 type
parameter scopes.
"""

from __future__ import annotations

import builtins
import weakref
from typing import Iterator, NamedTuple

import libcst as cst
from libcst import metadata

IMPORT, BUILTIN, LOCAL = "import", "builtin", "local"

COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
# Node types the frontend's indexing pass collects for this module.
BINDING_NODES = (
    cst.Import, cst.ImportFrom, cst.FunctionDef, cst.ClassDef, cst.Param, cst.Assign, cst.AnnAssign,
    cst.AugAssign, cst.For, cst.CompFor, cst.AsName, cst.NamedExpr, cst.Global, cst.Nonlocal,
)
_EVERYWHERE = -1  # a binding that every use in its scope sees (parameters, comprehension targets)


class QualifiedName(NamedTuple):
    name: str  # "torch.zeros", "f.<locals>.x", "builtins.len"
    source: str  # IMPORT, BUILTIN or LOCAL


# The binding classes derive from libcst's assignment classes, so that code
# written against libcst's scope analysis (`isinstance(b, BuiltinAssignment)`,
# `b.node`, `b.name`) reads this module's bindings unchanged.


class _WeakScope:
    """A binding's `scope`, held weakly.

    A scope holds its bindings; a strong reference back would make every
    analysed tree part of a reference cycle, freed only when the garbage
    collector gets to it instead of as soon as the file is done (the
    collector then costs ~13% of a scan's CPU). The resolver keeps its
    scopes alive as long as it is used.
    """

    @property
    def scope(self) -> "Scope | None":
        return self._scope()

    @scope.setter
    def scope(self, value: "Scope") -> None:
        self._scope = weakref.ref(value)


class Binding(_WeakScope, metadata.Assignment):
    """A statement or target that binds `name` in `scope`, for the uses from offset `point` on.

    `node` is what libcst's `Assignment.node` is: the Name target, the
    Param, the FunctionDef or ClassDef, or the Import statement.
    """

    def __init__(self, name: str, scope: "Scope", node: cst.CSTNode, point: int):
        super().__init__(name, scope, node, point)
        self.point = point

    def qualified_names(self, full_name: str) -> set[QualifiedName]:
        prefix = self.scope.prefix
        return {QualifiedName(f"{prefix}.{full_name}" if prefix else full_name, LOCAL)}

    def get_qualified_names_for(self, full_name: str) -> set[metadata.QualifiedName]:
        """libcst's spelling of `qualified_names`."""
        return {metadata.QualifiedName(q.name, _SOURCES[q.source]) for q in self.qualified_names(full_name)}


class BuiltinBinding(_WeakScope, metadata.BuiltinAssignment):
    def __init__(self, name: str, scope: "Scope"):
        super().__init__(name, scope)
        self.node = None
        self.point = _EVERYWHERE

    def qualified_names(self, full_name: str) -> set[QualifiedName]:
        return {QualifiedName(f"builtins.{self.name}", BUILTIN)}

    get_qualified_names_for = Binding.get_qualified_names_for


class ImportBinding(_WeakScope, metadata.ImportAssignment):
    def __init__(self, name: str, scope: "Scope", node: cst.Import | cst.ImportFrom, point: int, as_name: cst.CSTNode):
        super().__init__(name, scope, node, point, as_name)
        self.point = point

    def qualified_names(self, full_name: str) -> set[QualifiedName]:
        """What `full_name` means through this import statement (any of its aliases may match)."""
        statement = self.node
        if isinstance(statement.names, cst.ImportStar):
            return set()
        module = _import_module(statement)
        found = set()
        for alias in statement.names:
            imported = full_name_of(alias.name)
            if not imported:
                continue
            parts = imported.split(".")
            for length in range(len(parts), 0, -1):
                local = ".".join(parts[:length])
                real = f"{module}{local}" if module.endswith(".") else f"{module}.{local}" if module else local
                if alias.asname is not None:
                    local = alias.evaluated_alias or local
                if not full_name.startswith(local):
                    continue
                rest = full_name[len(local):]
                if rest and not rest.startswith("."):
                    continue
                rest = rest.lstrip(".")
                found.add(QualifiedName(f"{real}.{rest}" if rest else real, IMPORT))
                break
        return found

    get_qualified_names_for = Binding.get_qualified_names_for


_SOURCES = {
    IMPORT: metadata.QualifiedNameSource.IMPORT,
    BUILTIN: metadata.QualifiedNameSource.BUILTIN,
    LOCAL: metadata.QualifiedNameSource.LOCAL,
}


def _import_module(statement: cst.Import | cst.ImportFrom) -> str:
    if not isinstance(statement, cst.ImportFrom):
        return ""
    module = (full_name_of(statement.module) or "") if statement.module else ""
    return "." * len(statement.relative) + module


class Scope:
    """A module, class, function, lambda or comprehension, and the names bound directly in it."""

    def __init__(self, kind: str, node: cst.CSTNode | None, parent: "Scope | None", name: str | None = None):
        self.kind = kind
        self.node = node
        self.parent = parent  # None for the builtins
        self.bindings: dict[str, list[Binding]] = {}
        self.redirects: dict[str, Scope] = {}  # `global x` / `nonlocal x`
        own = {"function": (name, "<locals>"), "lambda": ("<locals>",), "class": (name,),
               "comprehension": ("<comprehension>",)}.get(kind, ())
        # PEP 3155 qualified names, as libcst extends them: `f.<locals>.x`, `C.m.<locals>.<comprehension>.i`.
        self.prefix = ".".join(part for part in (parent.prefix if parent else "", *own) if part)

    def visible_from(self, scope: "Scope") -> bool:
        """Class bodies do not enclose the functions defined in them."""
        return self.kind != "class"

    def next_visible(self, from_scope: "Scope", first: "Scope | None" = None) -> "Scope":
        scope = first if first is not None else self.parent
        while not scope.visible_from(from_scope):
            scope = scope.parent
        return scope

    def binding_target(self, name: str) -> "Scope":
        """Where an assignment to `name` here lands (elsewhere after `global`/`nonlocal`)."""
        redirect = self.redirects.get(name)
        if redirect is None:
            return self
        return self.next_visible(self, redirect).binding_target(name)

    def __contains__(self, name: str) -> bool:
        if self.kind == "builtins":
            return hasattr(builtins, name)
        redirect = self.redirects.get(name)
        if redirect is not None:
            return name in redirect
        if self.bindings.get(name):
            return True
        return name in self.next_visible(self)

    def lookup(self, name: str, from_scope: "Scope") -> list[Binding]:
        """Every binding of `name` that code in `from_scope` may see from here outwards."""
        if self.kind == "builtins":
            return [BuiltinBinding(name, self)] if hasattr(builtins, name) else []
        redirect = self.redirects.get(name)
        if redirect is not None:
            return self.next_visible(from_scope, redirect).lookup(name, from_scope)
        if name in self.bindings:
            return self.bindings[name]
        return self.next_visible(from_scope).lookup(name, from_scope)


class NameResolver:
    """Qualified names for the nodes of one module, resolved on demand."""

    def __init__(self, tree: cst.Module, index, binding_nodes: list[cst.CSTNode]):
        """`index` is the frontend's: `index.parent(node)` and `index.span(node)` (character offsets)."""
        self.index = index
        self.scopes: dict[int, Scope] = {}  # id(scope-defining node) -> its scope
        self.module_scope = Scope("module", tree, Scope("builtins", None, None))
        self.scopes[id(tree)] = self.module_scope
        self.stored: set[int] = set()  # ids of the names in a target position: bindings, not uses
        self._record(binding_nodes)

    # -- what a rule asks -------------------------------------------------------------------

    def qualified_names(self, node: cst.CSTNode) -> set[QualifiedName]:
        if self._unscoped(node):
            return set()
        if isinstance(node, (cst.Name, cst.Attribute)):
            root = _chain_root(node)
            if root is not None and self._is_use(root):
                promoted, name = self._use_of(root)
                if promoted is node:
                    return self._meaning_of_use(root, name)
        full_name = full_name_of(node)
        if full_name is None:
            return set()
        scope = self.scope_of(node)
        bindings: list[Binding] = []
        prefix = full_name
        while prefix:
            if prefix in scope:
                bindings = scope.lookup(prefix, scope)
                break
            prefix = prefix.rpartition(".")[0]
        for binding in bindings:
            if binding.node is node:
                return binding.qualified_names(full_name)
        return {name for binding in bindings for name in binding.qualified_names(full_name)}

    def meaning_in_a_function(self, callee: str) -> set[QualifiedName]:
        """What `qualified_names` gives for a callee spelled `callee` (`zeros`, `torch.zeros`) in a function
        where no enclosing function, lambda, comprehension or class binds any of its names.

        Such a name can only be the module's or a builtin, so the answer needs
        the module's bindings alone: the same two paths as for a node (a
        bare name, or a dotted prefix bound as a whole, is a use; else the
        longest bound prefix qualifies the full name), from a scope that adds
        nothing. Rules use it for a call in a function the outline stubbed.
        """
        scope = self.module_scope
        prefixes = [callee]
        while "." in prefixes[-1]:
            prefixes.append(prefixes[-1].rpartition(".")[0])
        bound = next((prefix for prefix in prefixes if prefix in scope), None)
        if bound is None:
            return set()
        bindings = scope.lookup(bound, scope)
        if bound == callee:  # a use: every binding of the module counts, wherever it is
            return {qualified for binding in bindings for qualified in binding.qualified_names(binding.name)}
        return {qualified for binding in bindings for qualified in binding.qualified_names(callee)}

    def bindings(self, name: cst.Name) -> tuple[metadata.BaseAssignment, ...] | None:
        """Every binding `name` may read, flow-insensitively, in source order; None where libcst has no scope."""
        if self._unscoped(name):
            return None
        scope = self.scope_of(name)
        return tuple(scope.lookup(name.value, scope))

    # -- uses -------------------------------------------------------------------------------

    def _is_use(self, name: cst.Name) -> bool:
        """A Name that reads (or deletes) a variable, as opposed to binding it or naming an attribute."""
        return id(name) not in self.stored and not self._unscoped(name) and not _names_a_definition(name, self.index.parent)

    def _use_of(self, name: cst.Name) -> tuple[cst.CSTNode, str]:
        """The node a use is attached to: the longest dotted prefix bound by an import (`import a.b`)."""
        top = _enclosing_attribute(name, self.index.parent)
        if top is None:
            return name, name.value
        scope = self.scope_of(name)
        for dotted, node in _dotted_prefixes(top):
            if dotted in scope:
                return node, dotted
        return name, name.value

    def _meaning_of_use(self, name: cst.Name, dotted: str) -> set[QualifiedName]:
        scope = self.scope_of(name)
        bindings = scope.lookup(dotted, scope)
        point = self._use_point(name, scope)
        earlier = [b for b in bindings if b.scope is not scope or b.point <= point]
        if not earlier and bindings:  # bound only later here: the enclosing scope's meaning (builtins for a module)
            earlier = scope.parent.lookup(dotted, scope)
        return {qualified for binding in earlier for qualified in binding.qualified_names(binding.name)}

    def _use_point(self, name: cst.Name, scope: Scope) -> int:
        """Where a use happens: its offset, except that a comprehension's element is evaluated after its clauses."""
        if scope.kind == "comprehension":
            comprehension = scope.node
            child, parent = name, self.index.parent(name)
            while parent is not comprehension:
                child, parent = parent, self.index.parent(parent)
            if child is not comprehension.for_in:
                return self.index.span(comprehension)[1]
        return self.index.span(name)[0]

    # -- scopes -----------------------------------------------------------------------------

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The scope whose code `node` belongs to."""
        parent_of = self.index.parent
        if isinstance(node, cst.CompFor) and isinstance(parent_of(node), COMPREHENSIONS) and parent_of(node).for_in is node:
            node = parent_of(node)  # the outermost `for` clause belongs to the enclosing scope
        child, parent = node, parent_of(node)
        while parent is not None:
            kind = type(parent)
            if kind is cst.FunctionDef or kind is cst.Lambda:
                if child is parent.params or child is parent.body:
                    return self._scope(parent)
            elif kind is cst.ClassDef:
                if child is parent.body:
                    return self._scope(parent)
            elif kind is cst.Param:
                if child is parent.default or child is parent.annotation:
                    child = parent_of(parent_of(parent))  # defaults and annotations run in the enclosing scope
                    parent = parent_of(child)
                    continue
            elif kind is cst.CompFor:
                owner = parent_of(parent)
                if child is parent.iter and isinstance(owner, COMPREHENSIONS) and owner.for_in is parent:
                    child, parent = owner, parent_of(owner)  # the first iterable is evaluated outside
                    continue
            elif kind in COMPREHENSIONS:
                if _inside_comprehension(parent, child):
                    return self._scope(parent)
            child, parent = parent, parent_of(parent)
        return self.module_scope

    def _scope(self, node: cst.CSTNode) -> Scope:
        scope = self.scopes.get(id(node))
        if scope is None:
            enclosing = self.scope_of(node)
            if isinstance(node, cst.FunctionDef):
                scope = Scope("function", node, enclosing, node.name.value)
            elif isinstance(node, cst.ClassDef):
                scope = Scope("class", node, enclosing, node.name.value)
            elif isinstance(node, cst.Lambda):
                scope = Scope("lambda", node, enclosing)
            else:
                scope = Scope("comprehension", node, enclosing)
            self.scopes[id(node)] = scope
        return scope

    # -- bindings ---------------------------------------------------------------------------

    def _record(self, nodes: list[cst.CSTNode]) -> None:
        for node in nodes:  # redirects first: they decide where later assignments land
            if isinstance(node, (cst.Global, cst.Nonlocal)):
                scope = self.scope_of(node)
                if scope.kind == "module":
                    continue
                target = self.module_scope if isinstance(node, cst.Global) else scope.parent
                for item in node.names:
                    scope.redirects[item.name.value] = target
        for node in nodes:
            self._record_one(node)

    def _record_one(self, node: cst.CSTNode) -> None:
        end = self.index.span(node)[1]
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            if isinstance(node.names, cst.ImportStar):
                return
            scope = self.scope_of(node)
            for alias in node.names:
                if alias.asname is not None:
                    as_name = alias.asname.name
                    dotted = [as_name.value] if isinstance(as_name, cst.Name) else []
                else:
                    as_name = alias.name
                    dotted = [name for name, _ in _dotted_prefixes(alias.name)]
                for name in dotted:
                    self._bind(scope, ImportBinding(name, scope, node, end, as_name))
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            scope = self.scope_of(node)
            self._bind(scope, Binding(node.name.value, scope, node, end))
        elif isinstance(node, cst.Param):
            scope = self.scope_of(node.name)
            self._bind(scope, Binding(node.name.value, scope, node, _EVERYWHERE))
        elif isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind_targets(target.target, end)
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr)):
            self._bind_targets(node.target, end)
        elif isinstance(node, cst.For):
            self._bind_targets(node.target, self.index.span(node.target)[1])
        elif isinstance(node, cst.CompFor):
            # The first clause's variable is bound before anything else in the comprehension
            # runs; a later clause's, for what follows that clause (not for its own `if`s,
            # which is where libcst records it).
            owner = self.index.parent(node)
            outermost = isinstance(owner, COMPREHENSIONS) and owner.for_in is node
            self._bind_targets(node.target, _EVERYWHERE if outermost else end)
        elif isinstance(node, cst.AsName) and not isinstance(self.index.parent(node), cst.ImportAlias):
            self._bind_targets(node.name, end)

    def _bind_targets(self, target: cst.CSTNode, point: int) -> None:
        for name in _stored_names(target):
            self.stored.add(id(name))
            scope = self.scope_of(name)
            self._bind(scope, Binding(name.value, scope, name, point))

    def _bind(self, scope: Scope, binding: Binding) -> None:
        target = scope.binding_target(binding.name)
        binding.scope = target
        target.bindings.setdefault(binding.name, []).append(binding)

    def _unscoped(self, node: cst.CSTNode) -> bool:
        """Nodes libcst's scope analysis never visits: attribute and keyword names, the names in import
        and global statements, and the first argument of `TypeVar(...)` and `NewType(...)`."""
        child, parent = node, self.index.parent(node)
        while parent is not None:
            kind = type(parent)
            if kind is cst.Attribute:
                if child is parent.attr:
                    return True
            elif kind is cst.Arg:
                if child is parent.keyword or self._declares_a_type(parent):
                    return True
            elif kind in (cst.ImportAlias, cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal):
                return True
            elif isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                return False
            child, parent = parent, self.index.parent(parent)
        return False

    def _declares_a_type(self, argument: cst.Arg) -> bool:
        """The name argument of `TypeVar("T")` / `NewType("T", int)`, which libcst's scope analysis skips."""
        call = self.index.parent(argument)
        if not (isinstance(call, cst.Call) and call.args and call.args[0] is argument):
            return False
        return not self._names_of_callee(call).isdisjoint(("typing.TypeVar", "typing.NewType"))

    def _names_of_callee(self, call: cst.Call) -> set[str]:
        return {q.name for q in self.qualified_names(call)}


# -- syntax helpers -----------------------------------------------------------------------------


def full_name_of(node: cst.CSTNode) -> str | None:
    """`a.b.c` for names, attribute chains, calls (their callee), subscripts (their value) and definitions.

    An attribute of something unnamed is spelled `None.attr`, as libcst spells
    it, so that `"sep".join` keeps the meaning QualifiedNameProvider gave it.
    """
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{full_name_of(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call):
        return full_name_of(node.func)
    if isinstance(node, cst.Subscript):
        return full_name_of(node.value)
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return full_name_of(node.name)
    if isinstance(node, cst.Decorator):
        return full_name_of(node.decorator)
    return None


def _dotted_prefixes(node: cst.CSTNode) -> Iterator[tuple[str, cst.CSTNode]]:
    """`a.b.c` -> ("a.b.c", node), ("a.b", ...), ("a", ...); through calls: `a.b().c` -> "a.b", "a"."""
    if isinstance(node, cst.Name):
        yield node.value, node
        return
    if not isinstance(node, cst.Attribute):
        return
    value = node.value
    if isinstance(value, cst.Call):
        yield from _dotted_prefixes(value.func) if isinstance(value.func, (cst.Attribute, cst.Name)) else ()
        return
    if not isinstance(value, (cst.Attribute, cst.Name)):
        return
    inner = list(_dotted_prefixes(value))
    if inner:
        yield f"{inner[0][0]}.{node.attr.value}", node
        yield from inner


def _chain_root(node: cst.CSTNode) -> cst.Name | None:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def _enclosing_attribute(name: cst.Name, parent_of) -> cst.Attribute | None:
    """The attribute chain `name` roots, if that chain is the outermost attribute of its expression.

    A dotted import can only match a chain like `a.b.c`; when the chain sits
    inside a bigger attribute expression (`a.b[i].c`), libcst's matcher
    starts from the outer one and finds nothing, and so does this.
    """
    top = None
    child, parent = name, parent_of(name)
    while type(parent) is cst.Attribute and parent.value is child:
        top = child = parent
        parent = parent_of(parent)
    if top is None:
        return None
    while parent is not None and type(parent) is not cst.Call:
        if isinstance(parent, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            break
        if type(parent) is cst.Attribute:
            return None
        parent = parent_of(parent)
    return top


def _names_a_definition(name: cst.Name, parent_of) -> bool:
    parent = parent_of(name)
    return isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Param)) and parent.name is name


def _inside_comprehension(comprehension: cst.CSTNode, child: cst.CSTNode) -> bool:
    """True when `child` (a direct child) is evaluated in the comprehension's own scope."""
    if child is comprehension.for_in:
        return True
    if isinstance(comprehension, cst.DictComp):
        return child is comprehension.key or child is comprehension.value
    return child is comprehension.elt


def _stored_names(target: cst.CSTNode) -> Iterator[cst.Name]:
    """The names an assignment target binds: `a`, `a, (b, *c)`; not `a.b` or `a[i]`."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _stored_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _stored_names(target.value)
