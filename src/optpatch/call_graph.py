"""The project's call graph: who calls whom, across files, from each file's `ast`.

Two halves, like the analysis and the settling of passes.py:

1. `index_file` reads one Python file's `ast` into a `FileCalls`: its
   definitions, classes (their bases, the classes of the attributes their
   methods assign, and the functions they store), imports, and call sites,
   each call written as the dotted text of its callee (`self.norm`,
   `F.linear`, `apply_rope`). It depends only on the file's text, so the
   result cache keeps it in the file's `FileRecord` and a warm run reads no
   file's `ast` again.
2. `CallGraph.build` resolves every call once per run, across files:
   imports (absolute and relative, `from x import y`, `mod.f`), `self.m`
   and `cls.m` through the project's base classes, `super().m`, the
   attributes a constructor assigned (`self.attn = Attention()`, so
   `self.attn(x)` calls `Attention.forward`), a function a method stored
   (`self.act = gelu`, `self.act = act` for a parameter `act=gelu`, or
   `self.run = self._fused`: `self.act(x)` calls it), a class called (its
   `__init__`), a module-level name bound to another (`_bwd = _bwd_impl`,
   `_bwd = torch.ops.ns.bwd`), an operator registered from Python
   (`@torch.library.custom_op("ns::bwd")`: `torch.ops.ns.bwd(...)` calls
   it), and, last, a method name defined once in the whole project.
   A call nothing resolves is left out: the graph under-approximates, so a
   function it cannot reach is "unreached", never wrongly "per-step".

C++/CUDA files take part too (`index_native`, from cpp_calls.py): their
functions and calls by name, and the names they bind for Python. A Python
call of a binding reaches the C++ function it registers (`_Natives`): by the
module the build script builds the file into (`import amp_C`; `from pkg
import _C`), by `torch.ops.<namespace>.<name>`, or, for an extension loaded
at run time (`ext = Builder().load()`), by a name the project binds once.

Cost: one `ast` walk per file, then one dictionary look-up per call, with
import chains and base classes followed to a fixed depth: linear in the
project.
"""

from __future__ import annotations

import ast
import enum
import hashlib
import pickle
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, NamedTuple

from optpatch.cpp_calls import Binding
from optpatch.python_screen import child_fields, parse_module

MODULE = "<module>"  # the qualified name of a file's module-level code
MAX_HOPS = 8  # re-exports and base classes followed at most this deep (cycles end here too)
# Method names too common to resolve by name alone: `x.update()` is a dict as often as anything of the project's.
_COMMON = frozenset({
    "update", "apply", "get", "set", "add", "run", "call", "copy", "clone", "to", "item", "view", "append", "extend",
    "pop", "keys", "values", "items", "format", "join", "split", "read", "write", "close", "open", "start", "stop",
    "reset", "clear", "load", "save", "init", "build", "setup", "forward", "backward", "step", "cuda", "cpu",
    "float", "half", "size", "numel", "sum", "mean", "max", "min", "register", "wait", "sync", "send", "recv",
})


# Calls that take a function or a class without calling it.
_NOT_CALLING = frozenset({"super", "isinstance", "issubclass", "type", "getattr", "setattr", "hasattr", "id", "print",
                          "callable", "repr", "str", "len", "wraps", "partial_repr", "register_buffer",
                          "register_parameter"})


class Edge(enum.StrEnum):
    """How a site reaches its callee."""

    CALL = "call"
    CAPTURE = "capture"  # inside `with torch.cuda.graph(...)`: the Python runs at capture only
    LAZY = "lazy"  # under `if self.x is None:` that assigns `self.x`: runs once
    COMPILED = "compiled"  # handed to torch.compile: its callee is a per-step root
    HOOK = "hook"  # handed to register_*hook: runs on every forward or backward


# The records of one file's part (Definition, ClassInfo, CallSite, Import) are NamedTuples, not dataclasses: a
# project holds hundreds of thousands (NeMo: 210,000 call sites), and the result cache loads them all on every
# run, a narrowed one too; a tuple unpickles in two thirds of a dataclass's time (docs/benchmarks.md).


class Definition(NamedTuple):
    """A function or method; `cls` is the qualified name of the class it is defined in, if any."""

    qualname: str
    line: int
    end_line: int
    cls: str | None = None
    decorators: tuple[str, ...] = ()
    first_line: int = 0  # of its first decorator, or its `def`: where a profiler's frame names it
    loops: tuple[tuple[int, int], ...] = ()  # the lines of its outermost loops (not those of nested functions)
    forever: tuple[tuple[int, int], ...] = ()  # the lines of its `while True:` loops: a server's or a worker's
    # The lines that run only while a cached attribute is missing or too small: the body of `if self.x is None:`
    # that assigns `self.x`, and what follows `if self.pe.size(1) >= n: return` when it assigns `self.pe`.
    lazy: tuple[tuple[int, int], ...] = ()
    # The functions nested in it that it returns, by qualified name: a decorator's wrapper, a factory's closure
    returns: tuple[str, ...] = ()
    called_decorators: tuple[str, ...] = ()  # those of `decorators` applied as calls: `@traced("step")`

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


class ClassInfo(NamedTuple):
    qualname: str
    line: int
    bases: tuple[str, ...]  # dotted texts
    attributes: tuple[tuple[str, str], ...] = ()  # (attribute, dotted text of a class assigned to it in a method)
    # (attribute, dotted text of a function a method stores in it, not called: `self.act = gelu`)
    functions: tuple[tuple[str, str], ...] = ()


class CallSite(NamedTuple):
    caller: str  # the qualified name of the enclosing function, or MODULE
    callee: str  # dotted text: "f", "self.f", "mod.f", "super.f"; "self.attn" calls the attribute
    line: int
    edge: Edge = Edge.CALL
    handed: bool = False  # a function passed as an argument, not called here: a class passed is not instantiated
    key: str | None = None  # the first argument, where it is a string that names an attribute: `make_op("adam")`
    returned: bool = False  # calls what the callee returns: `make_op(2.0)(x)` runs the closure `make_op` returns


class ExtensionModule(NamedTuple):
    """A compiled extension a build script declares (`CUDAExtension(name="amp_C", sources=[...])`, or
    `cpp_extension.load`): its module's name, and the C++ sources it is built from, as written."""

    name: str
    sources: tuple[str, ...]


class Dispatcher(NamedTuple):
    """A function that calls the attribute its first argument names, of an object it names itself:
    `def op(name): return getattr(torch.ops.gsplat, name)`, or a factory whose closure does
    (`make_op(name)` returning `lambda *a: getattr(_C, name)(*a)`). A call `make_op("adam")` then reaches
    `torch.ops.gsplat.adam`, resolved where the `getattr` is (`scope`)."""

    qualname: str
    owner: str  # dotted text: "torch.ops.gsplat", "_C"
    scope: str


class Import(NamedTuple):
    local: str  # the name bound in the file
    module: str  # the module as written ("" for `from . import x`)
    name: str | None  # `from module import name`; None for `import module`
    level: int = 0  # leading dots of a relative import


@dataclass(frozen=True, eq=False)
class FileCalls:
    """One file's part of the call graph: what `CallGraph.build` resolves.

    Its call sites are pickled apart, as one string of bytes, and decoded
    on first use (`calls`): a run that reuses the last resolution
    (`Resolution`) reads no unchanged file's sites, though it loads every
    file's part with the result cache (NeMo: 210,000 sites, 60% of the
    pack's bytes, docs/benchmarks.md).
    """

    rel: str
    definitions: tuple[Definition, ...]
    classes: tuple[ClassInfo, ...]
    imports: tuple[Import, ...]
    sites: "tuple[CallSite, ...] | bytes"  # the call sites, or them pickled: read them through `calls`
    exports: tuple[str, ...] | None = None  # `__all__`, when the file spells it as a literal
    interface: str = ""  # `interface_of` the above: indexed with them, in the workers, and cached with them
    extensions: tuple[ExtensionModule, ...] = ()  # a build script's compiled extensions
    bindings: tuple[Binding, ...] = ()  # a C++ file's: the names Python calls it by (cpp_calls.py)
    # What this file assigns an extension loaded at run time (`ext = Builder().load()`): `self.ext`, or the scope
    # and the name, `Model.__init__:ext` (`<module>:ext` at module level)
    loaded: tuple[str, ...] = ()
    # Module-level names bound to another name, not called: `_wrapped_bwd = torch.ops.ns.bwd` (or `= _bwd`)
    aliases: tuple[tuple[str, str], ...] = ()
    # Functions registered as torch operators (`@torch.library.custom_op("ns::name", ...)`): ("ns.name", qualname)
    custom_ops: tuple[tuple[str, str], ...] = ()
    dispatchers: tuple["Dispatcher", ...] = ()  # functions that call an attribute their first argument names

    @property
    def calls(self) -> tuple[CallSite, ...]:
        sites = self.sites
        if type(sites) is bytes:
            object.__setattr__(self, "_pickled", sites)  # pickled again as they came, if they are
            sites = pickle.loads(sites)
            object.__setattr__(self, "sites", sites)
        return sites

    def __reduce__(self):
        sites = self.sites
        if type(sites) is not bytes:
            sites = self.__dict__.get("_pickled") or pickle.dumps(sites, protocol=pickle.HIGHEST_PROTOCOL)
        return FileCalls, (self.rel, self.definitions, self.classes, self.imports, sites, self.exports, self.interface,
                           self.extensions, self.bindings, self.loaded, self.aliases, self.custom_ops, self.dispatchers)

    def __eq__(self, other) -> bool:
        if not isinstance(other, FileCalls):
            return NotImplemented
        return (self.rel, self.definitions, self.classes, self.imports, self.calls, self.exports, self.interface,
                self.extensions, self.bindings, self.loaded, self.aliases, self.custom_ops, self.dispatchers) == \
            (other.rel, other.definitions, other.classes, other.imports, other.calls, other.exports, other.interface,
             other.extensions, other.bindings, other.loaded, other.aliases, other.custom_ops, other.dispatchers)

    @property
    def module(self) -> str:
        return module_name(self.rel)

    @property
    def package(self) -> bool:
        return self.rel.endswith("__init__.py")

    @property
    def native(self) -> bool:
        """A C++/CUDA file's part: its functions and bindings, outside Python's names and imports."""
        return not self.rel.endswith(".py")


def module_name(rel: str) -> str:
    parts = rel[: -len(".py")].split("/") if rel.endswith(".py") else rel.split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# -- 1. one file ------------------------------------------------------------------------------


def index_file(rel: str, text: str) -> FileCalls | None:
    """The file's definitions, imports and calls; None when Python's parser refuses it."""
    tree = parse_module(text)
    return index_tree(rel, tree) if tree is not None else None


def index_tree(rel: str, tree: ast.Module) -> FileCalls | None:
    """The definitions, imports and calls of a file's `ast` (the engine parses each file once, for this and the
    rules' screens); None when it nests too deeply to walk."""
    indexer = _Indexer()
    try:
        indexer.visit_body(tree.body, MODULE, None, Edge.CALL)
    except RecursionError:
        return None
    definitions, classes, imports = tuple(indexer.definitions), tuple(indexer.class_infos()), tuple(indexer.imports)
    extensions, custom_ops, dispatchers = tuple(indexer.extensions), tuple(indexer.custom_ops), tuple(indexer.dispatchers)
    return FileCalls(rel, definitions, classes, imports, tuple(indexer.calls), indexer.exports,
                     interface_of(definitions, classes, imports, extensions, custom_ops=custom_ops,
                                  dispatchers=dispatchers), extensions,
                     loaded=tuple(sorted(indexer.loaded)), aliases=tuple(indexer.aliases), custom_ops=custom_ops,
                     dispatchers=dispatchers)


# A C++ file is part of the graph where Python may reach it: it registers bindings, or its host code handles torch's
# tensors (a launcher, a wrapper; a `.cpp` file's `Tensor` too: mmcv's wrappers say `using namespace at`). Plain
# substring tests: CUTLASS's 53 MB of headers and kernels pass none, in 0.05 s, and 9 of its 95 `.cpp` files do.
_NATIVE_MARKERS = ("PYBIND11_MODULE", "TORCH_LIBRARY", "at::Tensor", "torch::Tensor")
_HOST_SOURCES = (".cpp", ".cc", ".cxx")


def reaches_python(rel: str, text: str) -> bool:
    """Whether a C++/CUDA text is read into the call graph whatever its findings (`index_native`)."""
    return any(marker in text for marker in _NATIVE_MARKERS) or (rel.endswith(_HOST_SOURCES) and "Tensor" in text)


def index_native_file(rel: str, text: str, has_findings: bool) -> FileCalls:
    """A C++/CUDA file's part of the graph: read where Python may reach it or it holds findings (whose frequency it
    gives), else an empty part, kept by the cache all the same (a narrowed run then reads no such file again)."""
    if has_findings or reaches_python(rel, text):
        return index_native(rel, text)
    return FileCalls(rel, (), (), (), (), None, _EMPTY_INTERFACE)


def index_native(rel: str, text: str) -> FileCalls:
    """A C++/CUDA file's part of the graph (cpp_calls.py): its functions by name, their calls, its bindings."""
    from optpatch.cpp_calls import index_text

    found = index_text(text)
    definitions = tuple(Definition(function.name, function.line, function.end_line) for function in found.functions)
    sites = tuple(CallSite(function.name, callee, line) for function in found.functions for callee, line in function.calls)
    return FileCalls(rel, definitions, (), (), sites, None,
                     interface_of(definitions, (), (), (), found.bindings), bindings=found.bindings)


_EMPTY_INTERFACE = ""  # a C++ file outside the graph: nothing of it is read by another file's resolution


def interface_of(definitions: tuple[Definition, ...], classes: tuple[ClassInfo, ...], imports: tuple[Import, ...],
                 extensions: tuple[ExtensionModule, ...] = (), bindings: tuple = (), custom_ops: tuple = (),
                 dispatchers: tuple = ()) -> str:
    """A digest of all that resolving any file's calls reads of this one (`_Resolver`): its functions and classes
    by name, the classes' bases and attributes, its imports, the extensions it builds, the names it binds and the
    functions that dispatch by name. Not its lines, nor its call sites."""
    read = (tuple((d.qualname, d.cls, d.returns, d.decorators, d.called_decorators) for d in definitions),
            tuple((c.qualname, c.bases, c.attributes, c.functions) for c in classes),
            tuple((i.local, i.module, i.name, i.level) for i in imports),
            extensions, tuple((b.registrar, b.module, b.name, b.targets) for b in bindings), custom_ops, dispatchers)
    return hashlib.blake2b(repr(read).encode(), digest_size=16).hexdigest()


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a chain of names and attributes; `super().f` is `super.f`; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super")
    else:
        return None
    return ".".join(reversed(parts))


class _Indexer:
    def __init__(self):
        self.definitions: list[Definition] = []
        self.classes: dict[str, tuple[int, tuple[str, ...]]] = {}
        self.attributes: dict[str, dict[str, list[str]]] = {}
        self.functions: dict[str, dict[str, list[str]]] = {}  # class -> attribute -> functions stored in it
        self._functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []  # being visited, innermost last
        self._frames: list[tuple[str, bool]] = []  # theirs: the qualified name, and whether it is a method
        self._lazy: list[list[tuple[int, int]]] = []  # the lazy spans of each function being visited
        self._locals: dict[int, _Locals] = {}  # id(function) -> the names it binds, for the few guards that ask
        self.imports: list[Import] = []
        self.calls: list[CallSite] = []
        self.exports: tuple[str, ...] | None = None
        self.extensions: list[ExtensionModule] = []
        self.loaded: set[str] = set()
        self.aliases: list[tuple[str, str]] = []
        self.custom_ops: list[tuple[str, str]] = []
        self.dispatchers: list[Dispatcher] = []
        self._loaded_locals: dict[int, set[str]] = {}  # id(function) -> the names it assigns a loaded extension
        # id(function) -> name -> the functions an assignment so far gave it: `fn = fast_collate if p else collate`
        self._named_functions: dict[int, dict[str, list[str]]] = {}

    def class_infos(self) -> Iterator[ClassInfo]:
        for qualname, (line, bases) in self.classes.items():
            assigned = self.attributes.get(qualname, {})
            stored = self.functions.get(qualname, {})
            yield ClassInfo(qualname, line, bases, tuple((name, text) for name in sorted(assigned) for text in assigned[name]),
                            tuple((name, text) for name in sorted(stored) for text in stored[name]))

    def visit_body(self, body, scope: str, cls: str | None, edge: Edge) -> None:
        for statement in body:
            self.visit_statement(statement, scope, cls, edge)

    def visit_statement(self, node: ast.stmt, scope: str, cls: str | None, edge: Edge) -> None:
        kind = type(node)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            self.function(node, scope, cls, edge)
        elif kind is ast.ClassDef:
            self.klass(node, scope, edge)
        elif kind in (ast.Import, ast.ImportFrom):
            self.import_(node)
        elif kind is ast.With or kind is ast.AsyncWith:
            inner = Edge.CAPTURE if any(_is_graph_capture(item.context_expr) for item in node.items) else edge
            for item in node.items:
                self.expression(item.context_expr, scope, cls, edge)
            self.visit_body(node.body, scope, cls, inner)
        elif kind is ast.If:
            self.expression(node.test, scope, cls, edge)
            inner = Edge.LAZY if edge is Edge.CALL and (_lazy_guard(node) or self.state_guard(node)) else edge
            if inner is Edge.LAZY and edge is Edge.CALL and self._lazy:
                self._lazy[-1].append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno))
            self.visit_body(node.body, scope, cls, inner)
            self.visit_body(node.orelse, scope, cls, edge)
        else:
            if kind is ast.Assign and scope == MODULE and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                self.exports = _literal_names(node.value)
            if kind is ast.Assign and scope == MODULE and type(node.value) in (ast.Name, ast.Attribute):
                text = dotted(node.value)
                for target in node.targets:
                    if type(target) is ast.Name and text is not None and text.split(".", 1)[0] != target.id:
                        self.aliases.append((target.id, text))
            if kind in (ast.Assign, ast.AnnAssign) and cls is not None:
                self.attribute_types(node, cls)
            if kind is ast.Assign and self._functions and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
                self.named_functions(node.targets[0].id, node.value)
            if kind is ast.Assign and type(node.value) is ast.Call and _loads_an_extension(node.value):
                for target in node.targets:
                    text = dotted(target)
                    head = text.split(".", 1)[0] if text is not None else None
                    if text is not None and text.count(".") == 1 and (head in ("self", "cls") or head in self.classes):
                        self.loaded.add("self." + text.split(".", 1)[1])  # `BaseOp.ext = ...`: `self.ext` in its methods
                    elif text is not None and "." not in text:
                        declared = self._functions and text in self.locals_of(self._functions[-1]).declared_global
                        self.loaded.add(f"{MODULE if declared else scope}:{text}")
                        if self._functions:
                            self._loaded_locals.setdefault(id(self._functions[-1]), set()).add(text)
            for name in child_fields(kind):  # `ast.iter_child_nodes`, in its order, without its two generators
                value = getattr(node, name, None)
                for child in value if type(value) is list else (value,):
                    if isinstance(child, ast.stmt):
                        self.visit_statement(child, scope, cls, edge)
                    elif isinstance(child, (ast.excepthandler, ast.match_case)):
                        self.visit_body(child.body, scope, cls, edge)
                    elif isinstance(child, ast.expr):
                        self.expression(child, scope, cls, edge)

    def function(self, node, scope: str, cls: str | None, edge: Edge) -> None:
        qualname = node.name if scope == MODULE else f"{scope}.{node.name}"
        owner = cls if cls is not None and scope == cls else None
        decorators = tuple(filter(None, (dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list)))
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        for decorator in node.decorator_list:
            operator = _custom_op(decorator)
            if operator is not None:
                self.custom_ops.append((operator, qualname))
        loops = list(_outermost_loops(node.body))
        spans = tuple((loop.lineno, loop.end_lineno or loop.lineno) for loop in loops)
        forever = tuple((loop.lineno, loop.end_lineno or loop.lineno) for loop in _serving_loops(node.body))
        place = len(self.definitions)
        self.definitions.append(None)  # its place before the functions nested in it; filled once its body is read
        for decorator in node.decorator_list:
            self.expression(decorator, scope, cls, edge)
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.expression(default, scope, cls, edge)
        self._functions.append(node)
        self._frames.append((qualname, owner is not None))
        self._lazy.append([])
        body_edge = Edge.CALL
        for index, statement in enumerate(node.body):
            self.visit_statement(statement, qualname, cls, body_edge)
            if body_edge is Edge.CALL and type(statement) is ast.If and _growth_guard(statement, node.body[index + 1:]):
                body_edge = Edge.LAZY  # the rest runs only when the cached attribute must be built or grown
                self._lazy[-1].append((node.body[index + 1].lineno, node.end_lineno or node.lineno))
        lazy = tuple(self._lazy.pop())
        self._functions.pop()
        self._frames.pop()
        called = tuple(filter(None, (dotted(d.func) for d in node.decorator_list if isinstance(d, ast.Call))))
        self.definitions[place] = Definition(qualname, node.lineno, node.end_lineno or node.lineno, owner, decorators,
                                             first, spans, forever, lazy, _returned_functions(node, qualname), called)

    def klass(self, node: ast.ClassDef, scope: str, edge: Edge) -> None:
        qualname = node.name if scope == MODULE else f"{scope}.{node.name}"
        self.classes[qualname] = (node.lineno, tuple(filter(None, (dotted(base) for base in node.bases))))
        for expression in node.bases + [k.value for k in node.keywords] + node.decorator_list:
            self.expression(expression, scope, None, edge)
        self.visit_body(node.body, qualname, qualname, edge)

    def import_(self, node) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                self.imports.append(Import(local, alias.name if alias.asname else local, None))
            return
        for alias in node.names:
            if alias.name != "*":
                self.imports.append(Import(alias.asname or alias.name, node.module or "", alias.name, node.level))

    def attribute_types(self, node, cls: str) -> None:
        """`self.x = SomeClass(...)` in a method: `self.x(...)` later calls SomeClass's forward. `self.x = f` (or
        `self.x = f if c else g`): `self.x(...)` later calls f (or g)."""
        targets = [t for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                   if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"]
        value = node.value
        if not targets or value is None:
            return
        if isinstance(value, ast.Call):
            texts, table = [dotted(value.func)], self.attributes
        else:
            texts, table = [self.stored_function(v) for v in _branches(value)], self.functions
        for target in targets:
            for text in filter(None, texts):
                assigned = table.setdefault(cls, {}).setdefault(target.attr, [])
                if text not in assigned:  # each branch's class: `self.backend = NcclBackend()` or `MpiBackend()`
                    assigned.append(text)

    def state_guard(self, node: ast.If) -> bool:
        """`if len(state) == 0:` (or `if not state:`) whose body fills `state[...]`, where the function bound `state`
        once to an item of an attribute (`state = self.state[p]`): an optimizer's per-parameter state, made on its
        first step and kept."""
        test = node.test
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            checked = test.operand
        elif isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq) and \
                isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == 0 and \
                isinstance(test.left, ast.Call) and dotted(test.left.func) == "len" and len(test.left.args) == 1:
            checked = test.left.args[0]
        else:
            return False
        if not isinstance(checked, ast.Name) or not self._functions or not any(
                isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == checked.id
                for target in _assigned_targets(node.body)):
            return False  # the body does not fill it (checked first: the function's assignments cost a walk)
        values = self.locals_of(self._functions[-1]).assigned.get(checked.id, [])
        return len(values) == 1 and isinstance(values[0], ast.Subscript) and \
            (dotted(values[0].value) or "").startswith("self.")

    def stored_function(self, value: ast.expr) -> str | None:
        """The dotted text of the function VALUE names, where a method stores it: a name the module binds, a
        parameter's default (`act=gelu`), or `self.m`. None for a parameter without a dotted default, and for a
        name the method binds itself (its value is not known here)."""
        text = dotted(value)
        if text is None or text in ("self", "cls") or text.startswith("super."):
            return None
        head = text.split(".", 1)[0]
        if head in ("self", "cls") or not self._functions:
            return text
        function = self._functions[-1]
        default = _parameter_default(function.args, head)
        if default is not _NO_PARAMETER:
            return dotted(default) if default is not None and "." not in text else None
        names = self.locals_of(function)
        if head in names.bound and head not in names.imported and head not in self._loaded_locals.get(id(function), ()):
            return None
        return text

    def locals_of(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> "_Locals":
        found = self._locals.get(id(function))
        if found is None:
            found = self._locals[id(function)] = _Locals.of(function)
        return found

    def expression(self, node: ast.expr, scope: str, cls: str | None, edge: Edge) -> None:
        """Every call in an expression (lambdas and comprehensions included: they run as part of their function)."""
        for call in _calls_in(node):
            self.call(call, scope, edge)

    def call(self, node: ast.Call, scope: str, edge: Edge) -> None:
        callee = dotted(node.func)
        if callee is None:
            if type(node.func) is ast.Call:
                self.called_by_name(node.func, scope, edge)
                made_by = dotted(node.func.func)
                if made_by is not None:  # `make_op(2.0)(x)`: what `make_op` returns runs here
                    self.calls.append(CallSite(scope, made_by, node.lineno, edge, returned=True))
            return
        first = node.args[0] if node.args else None
        key = first.value if type(first) is ast.Constant and type(first.value) is str and first.value.isidentifier() \
            else None
        self.calls.append(CallSite(scope, callee, node.lineno, edge, key=key))
        last = callee.rsplit(".", 1)[-1]
        if last in _BUILDS_AN_EXTENSION:
            extension = _extension(node)
            if extension is not None:
                self.extensions.append(extension)
        # A hook, and an autograd formula registered for a custom op (`op.register_autograd(backward, ...)`), run on
        # every forward or backward.
        handed = Edge.COMPILED if last == "compile" else Edge.HOOK if "hook" in last or last == "register_autograd" \
            else edge
        if last in _NOT_CALLING:
            return
        # A function handed on, by position or keyword (`DataLoader(..., collate_fn=fast_collate)`), is called by
        # the callee: as often as this call, or more.
        arguments = node.args
        if node.keywords:
            arguments = arguments + [keyword.value for keyword in node.keywords if keyword.arg is not None]
        for argument in arguments:
            kind = type(argument)
            if kind is ast.Name:
                if argument.id != "self" and argument.id != "cls":
                    self.calls.append(CallSite(scope, argument.id, node.lineno, handed, handed=True))
                    named = self._named_functions.get(id(self._functions[-1])) if self._functions else None
                    for function in named.get(argument.id, ()) if named else ():
                        self.calls.append(CallSite(scope, function, node.lineno, handed, handed=True))
            elif kind is ast.Attribute:  # a literal, a call, an operation names no function (most arguments)
                name = dotted(argument)
                if name is not None:
                    self.calls.append(CallSite(scope, name, node.lineno, handed, handed=True))

    def named_functions(self, name: str, value: ast.expr) -> None:
        """`name = f`, `name = a.f if p else g` in a function: the functions NAME may hold when it is handed on
        (timm's `collate_fn = fast_collate if use_prefetcher else default_collate`, then `collate_fn=collate_fn`)."""
        branches = _branches(value)
        if all(type(branch) is ast.Name or type(branch) is ast.Attribute for branch in branches):
            texts = [text for text in map(dotted, branches) if text is not None and text != name]
            if texts:
                self._named_functions.setdefault(id(self._functions[-1]), {}).setdefault(name, []).extend(texts)

    def called_by_name(self, node: ast.Call, scope: str, edge: Edge) -> None:
        """`getattr(owner, "name")(...)` calls `owner.name`; `getattr(owner, name)(...)`, where `name` is the first
        parameter of this function or of one around it, makes that function a `Dispatcher`."""
        if not (type(node.func) is ast.Name and node.func.id == "getattr" and len(node.args) in (2, 3)):
            return
        owner, name = dotted(node.args[0]), node.args[1]
        if owner is None or owner.split(".", 1)[0] in ("self", "cls"):
            return
        if type(name) is ast.Constant and type(name.value) is str and name.value.isidentifier():
            self.calls.append(CallSite(scope, f"{owner}.{name.value}", node.lineno, edge))
        elif type(name) is ast.Name:
            for function, (qualname, method) in zip(reversed(self._functions), reversed(self._frames)):
                arguments = function.args
                if any(a.arg == name.id for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs):
                    if _first_parameter(function, method) == name.id:
                        self.dispatchers.append(Dispatcher(qualname, owner, scope))
                    return
                if name.id in self.locals_of(function).bound:
                    return


def _returned_functions(function: ast.FunctionDef | ast.AsyncFunctionDef, qualname: str) -> tuple[str, ...]:
    """The functions defined in FUNCTION's own body that it returns (`return wrapper`), by qualified name."""
    nested = {statement.name for statement in function.body
              if type(statement) is ast.FunctionDef or type(statement) is ast.AsyncFunctionDef}
    if not nested:
        return ()
    found: list[str] = []
    pending = list(function.body)
    while pending:
        statement = pending.pop()
        if type(statement) is ast.Return:
            value = statement.value
            if type(value) is ast.Name and value.id in nested and f"{qualname}.{value.id}" not in found:
                found.append(f"{qualname}.{value.id}")
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pending.extend(_child_statements(statement))
    return tuple(found)


def _first_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> str | None:
    """The name of the parameter a call's first argument binds (a method's after `self`)."""
    positional = function.args.posonlyargs + function.args.args
    if method and not any(dotted(d) == "staticmethod" for d in function.decorator_list):
        positional = positional[1:]
    return positional[0].arg if positional else None


_NO_PARAMETER = object()
# Calls that load a compiled extension at run time: `cpp_extension.load(...)`, DeepSpeed's `Builder().load()`, mmcv's
# `ext_loader.load_ext(...)`, `importlib.import_module(...)`.
_LOADERS = re.compile(r"^(load|load_ext|load_op|load_inline|load_extension|import_module|load_kernels?|_load_ext.*)$")


def _loads_an_extension(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
    return name is not None and _LOADERS.match(name) is not None


def _custom_op(decorator: ast.expr) -> str | None:
    """`@torch.library.custom_op("ns::name", ...)` (or a project's wrapper of it): "ns.name", as `torch.ops` spells it."""
    if type(decorator) is not ast.Call or not decorator.args:
        return None
    name, first = dotted(decorator.func), decorator.args[0]
    if name is None or "custom_op" not in name.rsplit(".", 1)[-1]:
        return None
    if type(first) is ast.Constant and type(first.value) is str and _OPERATOR_NAME.match(first.value):
        return first.value.replace("::", ".")
    return None


_OPERATOR_NAME = re.compile(r"^\w+::\w+$")
_BUILDS_AN_EXTENSION = frozenset({"CUDAExtension", "CppExtension", "Extension", "Pybind11Extension", "load"})
_NATIVE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")


def _extension(node: ast.Call) -> ExtensionModule | None:
    """`CUDAExtension(name="m", sources=[...])`, `Extension("m", [...])`, `load(name="m", sources=[...])`: the
    module's name and the C++ sources named by string literals (those of `os.path.join(d, "x.cu")` too)."""
    given = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    name = given.get("name", node.args[0] if node.args else None)
    sources = given.get("sources", node.args[1] if len(node.args) > 1 else None)
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or sources is None:
        return None
    found = tuple(dict.fromkeys(
        child.value for child in ast.walk(sources)
        if isinstance(child, ast.Constant) and isinstance(child.value, str) and child.value.endswith(_NATIVE_SUFFIXES)))
    return ExtensionModule(name.value, found)  # no source it can read (`[str(s) for s in sources]`): a name only


def _parameter_default(arguments: ast.arguments, name: str):
    """NAME's default among ARGUMENTS (None where it has none), or _NO_PARAMETER where no parameter is NAME."""
    positional = arguments.posonlyargs + arguments.args
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    for argument, default in zip(positional + arguments.kwonlyargs, defaults + list(arguments.kw_defaults)):
        if argument.arg == name:
            return default
    if name in (a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None):
        return None
    return _NO_PARAMETER


class _Locals(NamedTuple):
    """The names a function's body binds (those of functions nested in it too: a stored name bound anywhere in it is
    left unresolved), and the values `name = value` gives each, from one walk."""

    bound: set[str]
    assigned: dict[str, list[ast.expr]]
    imported: set[str]  # bound by an `import` in it: the module's name, resolved as the file's imports are
    declared_global: set[str]  # named by a `global` statement in it

    @classmethod
    def of(cls, function: ast.FunctionDef | ast.AsyncFunctionDef) -> "_Locals":
        bound: set[str] = set()
        assigned: dict[str, list[ast.expr]] = {}
        imported: set[str] = set()
        declared_global: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                declared_global.update(node.names)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                bound.add(node.id)
            elif isinstance(node, ast.alias):
                bound.add(node.asname or node.name.split(".")[0])
                imported.add(node.asname or node.name.split(".")[0])
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
                bound.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        assigned.setdefault(target.id, []).append(node.value)
        return cls(bound, assigned, imported - {name for name in assigned}, declared_global)


def _branches(value: ast.expr) -> list[ast.expr]:
    """The values an expression may take where it picks one: both sides of `a if c else b`, and each operand of
    `a or b` and `a and b` (`self.kernel = fused_kernel or reference_kernel`, ktransformers' fallback when an
    optional package is missing), nested."""
    if isinstance(value, ast.IfExp):
        return _branches(value.body) + _branches(value.orelse)
    if isinstance(value, ast.BoolOp):
        return [branch for operand in value.values for branch in _branches(operand)]
    return [value]


def _calls_in(node: ast.expr) -> list[ast.Call]:
    """The calls in an expression, in `ast.walk`'s order (breadth first), at about twice its speed: only the
    fields that may hold nodes are read (the index walks every expression of the project: DeepSpeed, 690,000)."""
    found = []
    todo = deque((node,))
    pop, push = todo.popleft, todo.append
    while todo:
        node = pop()
        kind = type(node)
        if kind is ast.Call:
            found.append(node)
        for name in child_fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST):
                        push(item)
            elif isinstance(value, ast.AST):
                push(value)
    return found


def _outermost_loops(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            pending.extend(_child_statements(node))
            for handler in getattr(node, "handlers", ()):
                pending.extend(handler.body)
            for case in getattr(node, "cases", ()):
                pending.extend(case.body)


def _serving_loops(body: list[ast.stmt]) -> Iterator[ast.While]:
    """`while True:` loops, but not one in a `try` (an exception ends it: an enumeration, not a server)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Try)):
            continue
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value:
            yield node
        pending.extend(_child_statements(node))


# Every field of a statement that holds statements, in `_fields` order (a handler's or a case's body aside).
_BLOCKS = ("body", "orelse", "finalbody")


def _child_statements(node: ast.stmt) -> list[ast.stmt]:
    """The statements of NODE's own blocks: `ast.iter_child_nodes` kept to statements, without walking the rest."""
    return [child for name in _BLOCKS if type(block := getattr(node, name, None)) is list for child in block]


def _is_graph_capture(node: ast.expr) -> bool:
    """`torch.cuda.graph(g)`, `graph_capture(...)`, `capture(...)`-like context managers."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node.func) or ""
    last = name.rsplit(".", 1)[-1]
    return name.endswith("cuda.graph") or "capture" in last.lower()


def _lazy_guard(node: ast.If) -> bool:
    """The body runs once (or once a key): `if self.x is None:` (or `if not self.x:`) whose body assigns `self.x`;
    a memo, `if key not in self.cache:`; `if not hasattr(self, "x"):`."""
    test = node.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn):
        return (dotted(test.comparators[0]) or "").startswith("self.")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Call) and \
            dotted(test.operand.func) == "hasattr" and test.operand.args and dotted(test.operand.args[0]) == "self":
        return True
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) and \
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        guarded = test.left
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        guarded = test.operand
    else:
        return False
    target = dotted(guarded)
    if target is None or not target.startswith("self."):
        return False
    return any(isinstance(t, ast.Attribute) and dotted(t) == target for t in _assigned_targets(node.body))


def _assigned_targets(statements: list[ast.stmt]) -> Iterator[ast.expr]:
    """Every target an assignment in STATEMENTS (at any depth) writes: `=`, annotated, augmented."""
    for statement in statements:
        for sub in ast.walk(statement):
            kind = type(sub)
            if kind is ast.Assign:
                yield from sub.targets
            elif kind is ast.AnnAssign or kind is ast.AugAssign:
                yield sub.target


def _growth_guard(node: ast.If, rest: list[ast.stmt]) -> bool:
    """`if self.pe is not None and self.pe.size(1) >= n: return` (or nested `if`s that end in `return`), followed by
    statements that assign `self.pe`: those run only when the cached attribute is missing or too small.

    Every condition must be one of a cache's: `self.x is not None`, `hasattr(self, "x")`, or a comparison of its
    size (`self.x.size(...)`, `.shape`, `.numel()`, `len(self.x)`), all of one attribute. A state's test
    (`if self.state not in (...): return`, `if self.count == 0: return`) is not: what follows runs whenever the
    state says so.
    """
    if not rest:
        return False
    cached: set[str] = set()
    current = node
    while True:
        if current.orelse:
            return False
        for test in current.test.values if isinstance(current.test, ast.BoolOp) and isinstance(current.test.op, ast.And) \
                else [current.test]:
            attribute = _cached_attribute_test(test)
            if attribute is None:
                return False
            cached.add(attribute)
        last = current.body[-1]
        if isinstance(last, ast.Return):
            break
        if not isinstance(last, ast.If):
            return False
        current = last
    return len(cached) == 1 and any(
        isinstance(target, ast.Attribute) and dotted(target) in cached for target in _assigned_targets(rest))


def _cached_attribute_test(test: ast.expr) -> str | None:
    """`self.x` where TEST is `self.x is not None`, `hasattr(self, "x")`, or compares the size of `self.x`."""
    if isinstance(test, ast.Call) and dotted(test.func) == "hasattr" and len(test.args) == 2 and \
            dotted(test.args[0]) == "self" and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str):
        return f"self.{test.args[1].value}"
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    operator = type(test.ops[0])
    if operator is ast.IsNot and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return _self_attribute(test.left)
    if operator in (ast.GtE, ast.Gt, ast.LtE, ast.Lt):
        sizes = [_size_of(side) for side in (test.left, test.comparators[0])]
        found = [size for size in sizes if size is not None]
        return found[0] if len(found) == 1 else None
    return None


def _size_of(node: ast.expr) -> str | None:
    """`self.x` where NODE is `self.x.size(...)`, `self.x.shape[...]`, `self.x.shape`, `self.x.numel()` or
    `len(self.x)`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call):
        if dotted(node.func) == "len" and len(node.args) == 1:
            return _self_attribute(node.args[0])
        node = node.func
        if not (isinstance(node, ast.Attribute) and node.attr in ("size", "numel")):
            return None
        return _self_attribute(node.value)
    if isinstance(node, ast.Attribute) and node.attr == "shape":
        return _self_attribute(node.value)
    return None


def _self_attribute(node: ast.expr) -> str | None:
    text = dotted(node)
    return text if text is not None and text.startswith("self.") and text.count(".") == 1 else None


def _literal_names(node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


# -- 2. the project ---------------------------------------------------------------------------


class Node(NamedTuple):
    """A function of the project (or a file's module-level code: qualname MODULE).

    A tuple, not a dataclass: the graph and the frequencies look Nodes up a
    quarter of a million times in a run (NeMo), and a tuple hashes and
    compares in C (classifying NeMo's graph: 0.31 -> 0.2 s).
    """

    rel: str
    qualname: str


class _Module(NamedTuple):
    """A module a name resolves to (`import x.y as m`; `m.f`): the file it is."""

    rel: str


class _Extension(NamedTuple):
    """A compiled extension module a name resolves to (`import amp_C`; `amp_C.multi_tensor_adam`); None for one the
    project's own package holds but no build script names literally (`from pytorch3d import _C`)."""

    name: str | None


# The names projects give their compiled modules: `_C`, `_ext`, `fused_adam_cuda`, `selective_scan_cuda`, `ops_lib`.
_EXTENSION_NAME = re.compile(r"^_|.*_(C|cuda|ext|ops|cpp|kernels?|lib)$")


class _Natives:
    """The project's C++ functions by name, and the names Python calls them by (`cpp_calls.Binding`).

    Each binding is a function of the graph of its own, `amp_C.multi_tensor_adam` in the C++ file that registers
    it, which calls what the registration names. Its module is the one the build script builds that file into
    (`CUDAExtension(name="amp_C", sources=[...])`), else the one `PYBIND11_MODULE` names, else `<module>`;
    `torch.ops.<namespace>` for `TORCH_LIBRARY`.
    """

    def __init__(self, files: dict[str, FileCalls]):
        natives = [rel for rel, calls in files.items() if calls.native]
        modules, unplaced = _extension_modules(files, natives)
        self.functions: dict[str, list[Node]] = {}  # C++ name -> one node per file that defines it
        self.definitions: dict[Node, Definition] = {}  # the bindings'
        self.targets: dict[Node, tuple[str, ...]] = {}
        self.by_module: dict[str, dict[str, Node]] = {}  # extension module -> Python name -> binding
        self.by_name: dict[str, list[Node]] = {}  # Python name -> every binding of it
        self.in_file: dict[str, dict[Node, None]] = {}  # C++ file -> the bindings it registers, in order
        self.registered: dict[str, list[tuple[str, Binding]]] = {}  # a registry's key -> (file, entry) of its entries
        self.locals: dict[str, frozenset[str]] = {}  # C++ file -> the names it defines
        for rel in natives:
            calls = files[rel]
            self.locals[rel] = frozenset(d.qualname for d in calls.definitions)
            for name in self.locals[rel]:
                self.functions.setdefault(name, []).append(Node(rel, name))
        # An operator's namespaces, where `TORCH_LIBRARY*` registers it: a helper handed the library
        # (`register_ops(torch::Library& m)`, called from `TORCH_LIBRARY_IMPL(ns, CUDA, m)`) implements it there.
        self.namespaces: dict[str, set[str]] = {}
        namespaces = self.namespaces
        for rel in natives:
            for binding in files[rel].bindings:
                if binding.torch_ops:
                    namespaces.setdefault(binding.name, set()).add(binding.module)
        self.ops: dict[tuple[str, str], list[Node]] = {}  # (namespace, name) -> every file's binding of the operator
        for rel in natives:
            for binding in files[rel].bindings:
                if binding.registry:
                    self.registered.setdefault(binding.name, []).append((rel, binding))
                    continue
                declared = namespaces.get(binding.name, ()) if not binding.registrar else ()
                namespace = binding.module if binding.torch_ops else next(iter(declared)) if len(declared) == 1 else None
                if namespace is not None:
                    module = f"torch.ops.{namespace}"
                else:
                    named = binding.module if binding.module and binding.module != "TORCH_EXTENSION_NAME" else None
                    unknown = unplaced[0] if len(unplaced) == 1 else "<module>"  # the one module without sources
                    module = (modules.get(rel) or [named or unknown])[0]
                node = Node(rel, f"{module}.{binding.name}")
                self.definitions[node] = Definition(node.qualname, binding.line, binding.line)
                self.targets[node] = self.targets.get(node, ()) + binding.targets
                self.by_module.setdefault(module, {}).setdefault(binding.name, node)
                if namespace is not None:
                    same = self.ops.setdefault((namespace, binding.name), [])
                    if node not in same:
                        same.append(node)
                self.by_name.setdefault(binding.name, []).append(node)
                self.in_file.setdefault(rel, {})[node] = None
        # A module the build script names without sources it can read (`CppExtension(name="te_torch", sources=[str(s)
        # for s in found])`) holds the bindings whose module is not known otherwise.
        for module in unplaced:
            self.by_module.setdefault(module, self.by_module.get("<module>", {}))

    def function(self, rel: str, name: str, local: frozenset[str]) -> Node | None:
        """The C++ function NAME called from file REL: the file's own, else the one file that defines it, else the
        one of those whose folder is nearest REL's (mmcv defines each op in `csrc/pytorch/` and again in
        `csrc/parrots/`: a build links the one beside its caller)."""
        if name in local:
            return Node(rel, name)
        found = self.functions.get(name)
        if found is None:
            return None
        if len(found) == 1:
            return found[0]
        folders = rel.split("/")[:-1]
        shared = [len(_common_prefix(folders, node.rel.split("/")[:-1])) for node in found]
        nearest = max(shared)
        return found[shared.index(nearest)] if shared.count(nearest) == 1 else None

    def only(self, name: str) -> Node | None:
        """The binding of a Python NAME bound once in the whole project (not a name too common to tell apart)."""
        found = self.by_name.get(name)
        if found is None or len(found) != 1 or name in _COMMON or name.startswith("__"):
            return None
        return found[0]

    def torch_op(self, namespace: str, name: str) -> list[Node]:
        """`torch.ops.NAMESPACE.NAME`: its bindings, in every file that registers it (a schema in one, each device's
        implementation in another); else those of NAME in the one namespace that registers it, where the namespace
        is a macro (`TORCH_LIBRARY(TORCH_EXTENSION_NAME, m)`)."""
        found = self.ops.get((namespace, name))
        if found is not None:
            return found
        declared = self.namespaces.get(name, ())
        return self.ops.get((next(iter(declared)), name), []) if len(declared) == 1 else []


def _common_prefix(a: list[str], b: list[str]) -> list[str]:
    shared = []
    for x, y in zip(a, b):
        if x != y:
            break
        shared.append(x)
    return shared


def _extension_modules(files: dict[str, FileCalls], natives: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """C++ file -> the extension modules a build script builds it into, by the sources it names: a path relative to
    the script's folder or the root, else the one C++ file whose path ends so; and the modules none of whose sources
    it places."""
    if not any(calls.extensions for calls in files.values()):
        return {}, []
    known = set(natives)
    by_tail: dict[str, list[str]] = {}
    for rel in natives:
        parts = rel.split("/")
        for start in range(len(parts)):
            by_tail.setdefault("/".join(parts[start:]), []).append(rel)
    modules: dict[str, list[str]] = {}
    for rel, calls in files.items():
        folder = rel.rsplit("/", 1)[0] + "/" if "/" in rel else ""
        for extension in calls.extensions:
            for source in extension.sources:
                written = source.replace("\\", "/").lstrip("./") if not source.startswith("../") else source
                if folder + written in known:
                    found = folder + written
                elif written in known:
                    found = written
                else:
                    tails = by_tail.get(written, ())
                    found = tails[0] if len(tails) == 1 else None
                if found is not None:
                    names = modules.setdefault(found, [])
                    module = extension.name.rsplit(".", 1)[-1]
                    if module not in names:
                        names.append(module)
    placed = {module for names in modules.values() for module in names}
    unplaced = [extension.name.rsplit(".", 1)[-1] for calls in files.values() for extension in calls.extensions]
    return modules, [module for module in dict.fromkeys(unplaced) if module not in placed]


@dataclass(frozen=True)
class Arc:
    caller: Node
    callee: Node
    line: int
    edge: Edge


@dataclass(frozen=True)
class Resolution:
    """What one `CallGraph.build` resolved, kept for the next run by the cache (cache.py `ResolutionCache`).

    A file's arcs depend on its own call sites and on every file's
    `interface`, nothing else. So a project whose files changed only in
    their bodies since (each changed file's interface the same, no file
    added or removed) keeps every other file's arcs, and only the changed
    files' calls are resolved again: a pre-commit run's one file, instead
    of the whole project's 150,000 sites (NeMo).
    """

    digests: dict[str, str]  # rel -> the digest of the file's bytes when it was resolved
    interfaces: dict[str, str]  # rel -> its FileCalls.interface then
    arcs: dict[str, tuple["Arc", ...]]  # rel -> the arcs from its call sites, in their order

    def __reduce__(self):
        # Pickled as plain tuples: a third of the bytes and of the time of 30,000 Arcs and their Nodes (NeMo).
        arcs = {rel: tuple((a.caller.qualname, a.callee.rel, a.callee.qualname, a.line, a.edge.value) for a in found)
                for rel, found in self.arcs.items()}
        return _resolution, (self.digests, self.interfaces, arcs)

    def stale(self, files: dict[str, FileCalls], digests: dict[str, str]) -> list[str] | None:
        """The files whose arcs must be resolved again; None when none of these arcs can be trusted."""
        if self.digests.keys() != files.keys():
            return None
        changed = [rel for rel, calls in files.items() if digests.get(rel) != self.digests[rel]]
        if any(files[rel].interface != self.interfaces[rel] for rel in changed):
            return None
        return changed


def _resolution(digests: dict[str, str], interfaces: dict[str, str], arcs: dict[str, tuple]) -> Resolution:
    return Resolution(digests, interfaces, {
        rel: tuple(Arc(Node(rel, caller), Node(callee_rel, callee), line, Edge(edge))
                   for caller, callee_rel, callee, line, edge in found)
        for rel, found in arcs.items()})


@dataclass
class CallGraph:
    """Every resolved call of the project, and every definition; `resolution`: what a later build may reuse."""

    files: dict[str, FileCalls]
    definitions: dict[Node, Definition] = field(default_factory=dict)
    callers: dict[Node, list[Arc]] = field(default_factory=dict)
    callees: dict[Node, list[Arc]] = field(default_factory=dict)
    resolution: Resolution | None = None
    resolved_files: int = 0  # how many files' calls this build resolved (the others' arcs came from `previous`)
    bindings: set[Node] = field(default_factory=set)  # the names Python calls C++ by (`_Natives`)

    @classmethod
    def build(cls, files: dict[str, FileCalls], digests: dict[str, str] | None = None,
              previous: Resolution | None = None) -> "CallGraph":
        """The graph of FILES. With DIGESTS (rel -> the digest of the file's bytes), it keeps a `resolution`, and
        takes from PREVIOUS the arcs of every file unchanged since, where `Resolution.stale` allows."""
        graph = cls(files)
        for rel, calls in files.items():
            for definition in calls.definitions:
                graph.definitions[Node(rel, definition.qualname)] = definition
        natives = _Natives(files)
        graph.definitions.update(natives.definitions)
        graph.bindings = set(natives.definitions)
        stale = previous.stale(files, digests) if previous is not None and digests is not None else None
        reused = previous if stale is not None else None
        again = set(stale or ())
        resolver: _Resolver | None = None
        arcs: dict[str, tuple[Arc, ...]] = {}
        for rel, calls in files.items():
            if reused is not None and rel not in again:
                found = reused.arcs[rel]
            else:
                resolver = resolver or _Resolver(files, natives)
                found = tuple(_arcs(resolver, rel, calls))
                graph.resolved_files += 1
            arcs[rel] = found
            for arc in found:
                graph.callers.setdefault(arc.callee, []).append(arc)
                graph.callees.setdefault(arc.caller, []).append(arc)
        if digests is not None:
            graph.resolution = Resolution(dict(digests), {rel: calls.interface for rel, calls in files.items()}, arcs)
        return graph

    def exported(self, node: Node) -> bool:
        """Public: no leading underscore on its name or its class, in a file that is not a test."""
        calls = self.files[node.rel]
        if calls.native:
            return node in self.bindings
        top = node.qualname.split(".")[0]
        if calls.exports is not None:
            return top in calls.exports
        return not any(part.startswith("_") and not part.startswith("__") for part in node.qualname.split("."))


def _arcs(resolver: "_Resolver", rel: str, calls: FileCalls) -> Iterator[Arc]:
    """The arcs from one file's call sites, in their order."""
    if calls.native:
        yield from resolver.native_arcs(rel, calls)
        return
    # A site's targets depend on its scope, its callee text and whether it is handed on, not its line:
    # resolved once per file for each (CUTLASS: 103,000 of its 165,000 sites).
    resolved: dict[tuple[str, str, bool], tuple[Node, list[Node]]] = {}
    for site in calls.calls:
        key = (site.caller, site.callee, site.handed)
        known = resolved.get(key)
        if known is None:
            known = resolved[key] = (Node(rel, site.caller), resolver.targets(calls, site))
        caller, targets = known
        for callee in targets:
            if site.returned:  # `make_op(2.0)(x)`: the closure runs here (`make_op` itself has a site of its own)
                for closure in resolver.returned(callee):
                    yield Arc(caller, closure, site.line, site.edge)
                continue
            if callee != caller:
                yield Arc(caller, callee, site.line, site.edge)
            if not site.handed and callee in resolver.shaped:  # a decorated function runs its decorators' wrappers
                for wrapper in resolver.wrappers(callee):
                    if wrapper != caller:
                        yield Arc(caller, wrapper, site.line, site.edge)
            if site.key is not None and callee in resolver.dispatchers:  # `make_op("adam")`: `torch.ops.ns.adam`
                for reached in resolver.dispatched(callee, site.key):
                    yield Arc(caller, reached, site.line, site.edge)


class _Resolver:
    """Callee texts -> the project's functions. Every look-up is bounded by MAX_HOPS."""

    def __init__(self, files: dict[str, FileCalls], natives: _Natives | None = None):
        self.files = files
        self.natives = natives if natives is not None else _Natives(files)
        self.by_module: dict[str, str] = {}
        suffixes: dict[str, list[str]] = {}
        for rel, calls in files.items():
            if calls.native:
                continue
            module = calls.module
            self.by_module[module] = rel
            parts = module.split(".")
            for start in range(1, len(parts)):
                suffixes.setdefault(".".join(parts[start:]), []).append(rel)
        # A module imported by a shorter name than its path (a src/ layout): only where the suffix is unique.
        for suffix, rels in suffixes.items():
            if len(rels) == 1 and suffix not in self.by_module:
                self.by_module[suffix] = rels[0]
        self.top: dict[str, dict[str, object]] = {}
        self.class_info: dict[Node, ClassInfo] = {}
        self.methods: dict[Node, dict[str, Definition]] = {}
        self.nested: dict[tuple[str, str], dict[str, Definition]] = {}
        self.owner: dict[tuple[str, str], str] = {}
        self.other_imports: dict[tuple[str, str], list[Import]] = {}  # the imports of a name after its first
        self.python_ops: dict[str, Node] = {}  # "ns.name" -> the function registered as `torch.ops.ns.name`
        self.dispatchers: dict[Node, Dispatcher] = {}
        for rel, calls in files.items():
            for operator, qualname in calls.custom_ops:
                self.python_ops.setdefault(operator, Node(rel, qualname))
            for dispatcher in calls.dispatchers:
                self.dispatchers[Node(rel, dispatcher.qualname)] = dispatcher
        self._dispatched: dict[tuple[Node, str], list[Node]] = {}
        # The functions that return a closure of their own, or are decorated: what `wrappers` and `returned` read
        self.shaped: dict[Node, Definition] = {
            Node(rel, d.qualname): d for rel, calls in files.items() if not calls.native
            for d in calls.definitions if d.returns or d.decorators}
        self._wrappers: dict[Node, list[Node]] = {}
        by_name: dict[str, list[Node]] = {}
        for rel, calls in files.items():
            if calls.native:
                continue
            names: dict[str, object] = {}
            for info in calls.classes:
                self.class_info[Node(rel, info.qualname)] = info
                if "." not in info.qualname:
                    names[info.qualname] = Node(rel, info.qualname)
            for definition in calls.definitions:
                node = Node(rel, definition.qualname)
                if definition.cls is not None:
                    self.owner[rel, definition.qualname] = definition.cls
                    self.methods.setdefault(Node(rel, definition.cls), {})[definition.name] = definition
                    by_name.setdefault(definition.name, []).append(node)
                elif "." not in definition.qualname:
                    names[definition.qualname] = node
                else:
                    parent = definition.qualname.rsplit(".", 1)[0]
                    self.nested.setdefault((rel, parent), {})[definition.name] = definition
            for imported in calls.imports:
                first = names.setdefault(imported.local, imported)
                if first is not imported and isinstance(first, Import):  # `try: import a as m` / `except: import b as m`
                    self.other_imports.setdefault((rel, imported.local), []).append(imported)
            self.top[rel] = names
        self.unique_methods = {name: nodes[0] for name, nodes in by_name.items()
                               if len(nodes) == 1 and name not in _COMMON and not name.startswith("__")}
        self._bases: dict[Node, tuple[Node, ...]] = {}
        self.subclasses: dict[Node, list[Node]] = {}
        for cls in self.class_info:
            for base in self.bases(cls)[1:2 + MAX_HOPS]:
                self.subclasses.setdefault(base, []).append(cls)

    # -- names --

    def module_rel(self, calls: FileCalls, imported: Import) -> str | None:
        """The file of the module an import names (relative imports from the importing file's package)."""
        name = imported.module
        if imported.level:
            package = calls.module.split(".") if calls.package else calls.module.split(".")[:-1]
            package = package[: len(package) - (imported.level - 1)] if imported.level > 1 else package
            name = ".".join(package + ([name] if name else []))
        return self.by_module.get(name)

    def lookup(self, rel: str, name: str, hops: int = 0):
        """What NAME is at the top of file REL: a Node (function or class), a _Module, or None."""
        target = self.top.get(rel, {}).get(name)
        if isinstance(target, Import) and hops < MAX_HOPS:
            calls = self.files[rel]
            module_rel = self.module_rel(calls, target)
            if target.name is None:
                if module_rel is not None:
                    return _Module(module_rel)
                return self.extension(rel, name, target)
            if module_rel is not None:
                found = self.lookup(module_rel, target.name, hops + 1)
                if found is not None:
                    return found
            submodule = self.module_rel(calls, Import(target.local, f"{target.module}.{target.name}".lstrip("."),
                                                      None, target.level)) if target.module or target.level else None
            if submodule is not None:
                return _Module(submodule)
            extension = self.extension(rel, name, target)
            if extension is None and module_rel is not None and self.natives.by_name and \
                    _EXTENSION_NAME.match(target.name) and target.name not in self.top.get(module_rel, {}):
                return _Extension(None)  # `from pkg import _C`: a module of the project's that no Python file is
            return extension
        return target if isinstance(target, Node) else None

    def extension(self, rel: str, name: str, first: Import) -> _Extension | None:
        """The compiled extension NAME is imported as, in file REL: by its first import or a later one of the same name
        (flash-attention binds `flash_attn_gpu` to a fallback's module, or else to `flash_attn_2_cuda`)."""
        if not self.natives.by_module:
            return None
        for imported in [first, *self.other_imports.get((rel, name), ())]:
            module = (imported.name or imported.module).rsplit(".", 1)[-1]  # `from . import _C` names `_C`
            if module in self.natives.by_module:
                return _Extension(module)
        return None

    def resolve_dotted(self, calls: FileCalls, scope: str, parts: list[str]):
        """A Node, a _Module or None for a dotted name read in SCOPE of the file."""
        head, rest = parts[0], parts[1:]
        found = self.local_definition(calls.rel, scope, head) or self.lookup(calls.rel, head)
        for part in rest:
            if found is None:
                return None
            if isinstance(found, _Module):
                found = self.lookup(found.rel, part) or self.submodule(found.rel, part)
            elif isinstance(found, _Extension):
                found = self.natives.by_module[found.name].get(part) if found.name else self.natives.only(part)
            elif found in self.class_info:
                method = self.method(found, part)
                found = method if method is not None else self.nested_class(found, part)
            else:
                return None
        return found

    def submodule(self, rel: str, name: str):
        sub = self.by_module.get(f"{self.files[rel].module}.{name}")
        return _Module(sub) if sub is not None else None

    def nested_class(self, cls: Node, name: str) -> Node | None:
        node = Node(cls.rel, f"{cls.qualname}.{name}")
        return node if node in self.class_info else None

    def local_definition(self, rel: str, scope: str, name: str) -> Node | None:
        """A function defined in SCOPE or an enclosing function (closures), innermost first."""
        while scope != MODULE:
            nested = self.nested.get((rel, scope), {})
            if name in nested:
                return Node(rel, nested[name].qualname)
            if "." not in scope:
                break
            scope = scope.rsplit(".", 1)[0]
        return None

    # -- classes --

    def bases(self, cls: Node) -> tuple[Node, ...]:
        """CLS and its bases defined in the project, nearest first, at most MAX_HOPS deep.

        Resolved once per class: every `self.m` in the project asks for them (DeepSpeed: 90,000 look-ups)."""
        found = self._bases.get(cls)
        if found is None:
            found = self._bases[cls] = tuple(self._resolved_bases(cls))
        return found

    def _resolved_bases(self, cls: Node) -> Iterator[Node]:
        seen, queue = set(), [cls]
        while queue and len(seen) < MAX_HOPS:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.add(current)
            yield current
            calls = self.files[current.rel]
            for base in self.class_info[current].bases:
                found = self.resolve_dotted(calls, MODULE, base.split("."))
                if isinstance(found, Node) and found in self.class_info:
                    queue.append(found)

    def method(self, cls: Node, name: str) -> Node | None:
        for base in self.bases(cls):
            definition = self.methods.get(base, {}).get(name)
            if definition is not None:
                return Node(base.rel, definition.qualname)
        return None

    def attribute_classes(self, cls: Node, attribute: str) -> list[Node]:
        """The project's classes a method of CLS (or of a base) assigns an instance of to `self.ATTRIBUTE`."""
        for base in self.bases(cls):
            texts = [text for name, text in self.class_info[base].attributes if name == attribute]
            if texts:
                found = (self.resolve_dotted(self.files[base.rel], MODULE, text.split(".")) for text in texts)
                return [node for node in found if isinstance(node, Node) and node in self.class_info]
        return []

    def attribute_functions(self, cls: Node, attribute: str) -> list[Node]:
        """What calling `self.ATTRIBUTE` runs, where a method of CLS (or of a base) stored a function or a class in it
        (`self.act = gelu`): that function, or the class's `__init__`. A stored `self.m` is the method `m` (and
        its overrides), never another stored attribute."""
        for base in self.bases(cls):
            texts = [text for name, text in self.class_info[base].functions if name == attribute]
            if not texts:
                continue
            found: list[Node] = []
            for parts in (text.split(".") for text in texts):
                if parts[0] in ("self", "cls"):
                    if len(parts) == 2:
                        method = self.method(cls, parts[1])
                        found += ([method] if method is not None else []) + self.overrides(cls, parts[1], method)
                    elif len(parts) == 3:  # `self.gemm = self.ext.gemm_fp16`, where `self.ext` is a loaded extension
                        found += [node for node in (self.loaded_binding(self.files[owner.rel], ["self", *parts[1:]], None)
                                                    for owner in self.bases(cls)) if node is not None][:1]
                    continue
                node = self.resolve_dotted(self.files[base.rel], MODULE, parts)
                if node is None:  # `self.adam = ext.adam`, where `ext = Builder().load()`
                    node = self.loaded_binding(self.files[base.rel], parts, None)
                if isinstance(node, Node):
                    found += self.instantiated(node) if node in self.class_info else [node]
            return found
        return []

    def instantiated(self, cls: Node) -> list[Node]:
        return [node for node in (self.method(cls, "__init__"), self.method(cls, "__post_init__")) if node]

    def called(self, cls: Node) -> list[Node]:
        """Calling an instance: its `__call__`, or an nn.Module's `forward`."""
        target = self.method(cls, "__call__") or self.method(cls, "forward")
        return [target] if target else []

    # -- a call --

    def targets(self, calls: FileCalls, site: CallSite, aliases: bool = True) -> list[Node]:
        parts = site.callee.split(".")
        cls = self.enclosing_class(calls, site.caller)
        if parts[0] in ("self", "cls", "super") and cls is not None:
            found = self.on_self(cls, parts)
            if not found and len(parts) == 3 and parts[0] == "self":
                # `self.ext.f()`, where this class or a base assigned `self.ext` (or `Base.ext`) a loaded extension
                for base in self.bases(cls):
                    loaded = self.loaded_binding(self.files[base.rel], parts, site.caller)
                    if loaded is not None:
                        return [loaded]
            return found
        found = self.resolve_dotted(calls, site.caller, parts)
        if isinstance(found, Node):
            if found in self.class_info:
                return [] if site.handed else self.instantiated(found)
            return [found]
        if len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
            # `torch.ops.ns.name(...)`, `torch.ops.ns.name.default(...)`: a Python custom op, and the C++ bindings
            # that implement it (torchao's ops are declared in Python, with a fake kernel there, and run in C++)
            op = self.python_ops.get(f"{parts[2]}.{parts[3]}")
            return ([op] if op is not None else []) + self.natives.torch_op(parts[2], parts[3])
        if found is None and aliases and calls.aliases:  # `_bwd = torch.ops.ns.bwd` (or `= _bwd_impl`): `_bwd(...)`
            found_through = []
            for name, text in calls.aliases:
                if name == parts[0]:
                    aliased = site._replace(callee=".".join([text, *parts[1:]]))
                    found_through += [node for node in self.targets(calls, aliased, False) if node not in found_through]
            if found_through:
                return found_through
        if found is None and len(parts) > 1 and not isinstance(self.top[calls.rel].get(parts[0]), Import):
            if parts[-1] in self.unique_methods:  # `torch.nan_to_num` is torch's
                return [self.unique_methods[parts[-1]]]
            loaded = self.loaded_binding(calls, parts, site.caller)
            if loaded is not None:
                return [loaded]
        return []

    def returned(self, node: Node, levels: int = 1) -> list[Node]:
        """The closures a call of NODE's result runs: the functions it returns; with LEVELS 2, those that the
        functions it returns return in turn (a decorator factory's `decorator` returns `wrapper`)."""
        found = [node]
        for _ in range(levels):
            found = [Node(function.rel, qualname) for function in found
                     for qualname in getattr(self.shaped.get(function), "returns", ())]
        return found

    def wrappers(self, node: Node) -> list[Node]:
        """What a call of NODE runs besides NODE: the wrappers its project's decorators return (`@timed` returning
        `wrapper`, which calls NODE); none for a decorator outside the project."""
        found = self._wrappers.get(node)
        if found is None:
            found = []
            definition = self.shaped.get(node)
            if definition is not None and definition.decorators:
                # A decorator is read where the `def` is: a method's, around its class
                around = definition.cls if definition.cls is not None else definition.qualname
                scope = around.rsplit(".", 1)[0] if "." in around else MODULE
                for decorator in definition.decorators:
                    site = CallSite(scope, decorator, definition.line)
                    levels = 2 if decorator in definition.called_decorators else 1  # `@traced("step")`: its result's
                    for target in self.targets(self.files[node.rel], site):
                        found += [wrapper for wrapper in self.returned(target, levels) if wrapper not in found]
            self._wrappers[node] = found
        return found

    def dispatched(self, node: Node, key: str) -> list[Node]:
        """What a `Dispatcher` called with KEY calls: `owner.key`, resolved where its `getattr` is."""
        found = self._dispatched.get((node, key))
        if found is None:
            dispatcher = self.dispatchers[node]
            site = CallSite(dispatcher.scope, f"{dispatcher.owner}.{key}", 0)
            found = self._dispatched[node, key] = self.targets(self.files[node.rel], site)
        return found

    def loaded_binding(self, calls: FileCalls, parts: list[str], scope: str | None) -> Node | None:
        """`ext.f` where the file assigned `ext` an extension loaded at run time (`ext = Builder().load()`) in SCOPE
        or at module level, or `self.ext.f` where it assigned `self.ext` one: the binding of `f`, where the project
        binds that name once. SCOPE None: `ext` assigned one in any scope (a stored `self.f = ext.f`, kept only
        where its method's `ext` was)."""
        if not calls.loaded:
            return None
        if parts[0] == "self":
            found = len(parts) == 3 and f"self.{parts[1]}" in calls.loaded
        elif len(parts) != 2:
            found = False
        elif scope is None:
            found = any(entry.endswith(f":{parts[0]}") for entry in calls.loaded)
        else:
            found = f"{scope}:{parts[0]}" in calls.loaded or f"{MODULE}:{parts[0]}" in calls.loaded
        return self.natives.only(parts[-1]) if found else None

    def native_arcs(self, rel: str, calls: FileCalls) -> Iterator[Arc]:
        """A C++ file's arcs: its functions' calls, and its bindings to what they run."""
        local = frozenset(d.qualname for d in calls.definitions)
        natives = self.natives
        for site in calls.calls:
            callee = natives.function(rel, site.callee, local)
            if callee is not None and callee.qualname != site.caller:
                yield Arc(Node(rel, site.caller), callee, site.line, Edge.CALL)
        for node in natives.in_file.get(rel, ()):
            for target in natives.targets[node]:
                callee = natives.function(rel, target, local)
                if callee is not None:
                    yield Arc(node, callee, natives.definitions[node].line, Edge.CALL)
        # A registry's key defined here runs what each entry names, in the entry's file (mmcv: `nms_impl`, which
        # dispatches on the device, runs `nms_cuda` of cudabind.cpp).
        for definition in calls.definitions:
            for where, entry in natives.registered.get(definition.qualname, ()):
                for target in entry.targets:
                    callee = natives.function(where, target, natives.locals.get(where, frozenset()))
                    if callee is not None:
                        yield Arc(Node(rel, definition.qualname), callee, definition.line, Edge.CALL)

    def on_self(self, cls: Node, parts: list[str]) -> list[Node]:
        if len(parts) == 1:
            return []
        start = cls
        if parts[0] == "super":
            for base in self.bases(cls)[1:]:
                definition = self.methods.get(base, {}).get(parts[1])
                if definition is not None:
                    return [Node(base.rel, definition.qualname)] if len(parts) == 2 else []
            return []
        if len(parts) == 2:
            method = self.method(start, parts[1])
            targets = ([method] if method is not None else []) + self.overrides(start, parts[1], method)
            if targets:
                return targets
            held = [target for cls in self.attribute_classes(start, parts[1]) for target in self.called(cls)]
            return held + self.attribute_functions(start, parts[1])
        held = self.attribute_classes(start, parts[1])
        if held and len(parts) == 3:
            return [method for method in (self.method(cls, parts[2]) for cls in held) if method is not None]
        if parts[-1] in self.unique_methods:
            return [self.unique_methods[parts[-1]]]
        return []

    def overrides(self, cls: Node, name: str, found: Node | None) -> list[Node]:
        """`self.m()` in a base class may run a subclass's `m`: every override in the project's subclasses."""
        targets = []
        for sub in self.subclasses.get(cls, ())[: 4 * MAX_HOPS]:
            definition = self.methods.get(sub, {}).get(name)
            if definition is not None and Node(sub.rel, definition.qualname) != found:
                targets.append(Node(sub.rel, definition.qualname))
        return targets

    def enclosing_class(self, calls: FileCalls, scope: str) -> Node | None:
        """The class whose method (or a function nested in one) SCOPE is."""
        while scope != MODULE:
            owner = self.owner.get((calls.rel, scope))
            if owner is not None:
                return Node(calls.rel, owner)
            if "." not in scope:
                return None
            scope = scope.rsplit(".", 1)[0]
        return None
