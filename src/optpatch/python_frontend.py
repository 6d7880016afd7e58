"""The Python frontend: a libcst tree plus the facts rules ask of it.

Positions, parents and qualified names are computed on first use, so a rule
that bails out early pays only for the parse. Everything a rule needs to
know about names goes through `qualified_names`, which resolves aliases
(`import torch as t`, `from torch import zeros as z`) and refuses shadowed
names (a parameter or local called `torch`).
"""

from __future__ import annotations

import ast
import re
import warnings
from functools import cached_property
from typing import Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider, QualifiedNameSource, ScopeProvider

from optpatch.model import Context, Edit, FileError
from optpatch.native_stack import call_with_large_stack
from optpatch.source import SourceFile

SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
LOOP_NODES = (cst.For, cst.While)

# Set-up code: runs once per process or per model, so a saving there is noise.
_ONE_TIME = re.compile(
    r"^(__init__|__post_init__|__new__|setUp|setUpClass|setup|set_up|initialize|init|reset_parameters|"
    r"load_weights|from_pretrained|(_?)(init|build|setup|allocate|create|make|prepare|load|register)_.*)$"
)
# Per-step code of model runners, samplers and training loops.
_HOT = re.compile(
    r"^(forward|_forward.*|__call__|step|.*_step|execute_model|sample|_sample.*|decode.*|prefill.*|"
    r"generate|run_model|.*_forward|backward|update|apply)$"
)


class PythonParseError(Exception):
    def __init__(self, error: FileError):
        super().__init__(error.reason)
        self.error = error


class PythonModule:
    def __init__(self, source: SourceFile):
        self.source = source
        _refuse_what_cpython_cannot_nest(source)
        try:
            self.tree = call_with_large_stack(cst.parse_module, source.text)
        except cst.ParserSyntaxError as error:
            raise PythonParseError(_syntax_error(source, error)) from None
        except RecursionError:
            raise PythonParseError(FileError(source.rel, "nesting too deep for the parser")) from None

    @cached_property
    def _wrapper(self) -> MetadataWrapper:
        return MetadataWrapper(self.tree, unsafe_skip_copy=True)

    @cached_property
    def _positions(self):
        return self._wrapper.resolve(PositionProvider)

    @cached_property
    def _qualified(self):
        return self._wrapper.resolve(QualifiedNameProvider)

    @cached_property
    def _parents(self) -> dict[cst.CSTNode, cst.CSTNode]:
        parents: dict[cst.CSTNode, cst.CSTNode] = {}
        stack = [self.tree]
        while stack:
            node = stack.pop()
            for child in node.children:
                parents[child] = node
                stack.append(child)
        return parents

    # -- names ---------------------------------------------------------------

    def _qualified_of(self, node: cst.CSTNode):
        value = self._qualified.get(node, ())
        return value() if callable(value) else value  # libcst resolves these lazily

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Fully qualified names `node` may refer to, e.g. {"torch.zeros"}; empty if unknown."""
        return {q.name for q in self._qualified_of(node)}

    def bindings(self, name: cst.Name) -> tuple | None:
        """Every assignment that `name` may read (libcst `BaseAssignment`s), or None outside any scope.

        Flow-insensitive: all bindings of the name in the scope it resolves to,
        including parameters, imports and builtins. Computed from the scope
        analysis that qualified names already ran, so it costs no second pass.
        """
        scope = self._wrapper.resolve(ScopeProvider).get(name)
        if scope is None:
            return None
        return tuple(scope[name.value])

    def is_import(self, node: cst.CSTNode) -> bool:
        """True when `node` names something bound by an import statement."""
        return any(q.source is QualifiedNameSource.IMPORT for q in self._qualified_of(node))

    def refers_to(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> str | None:
        """The one qualified name of `node` if it is in `names` (and it has no other meaning)."""
        found = self.qualified_names(node)
        if len(found) == 1:
            (name,) = found
            if name in names:
                return name
        return None

    # -- positions -----------------------------------------------------------

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        code_range = self._positions[node]
        return (
            self.source.offset(code_range.start.line, code_range.start.column),
            self.source.offset(code_range.end.line, code_range.end.column),
        )

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based line and column of the node's first character."""
        code_range = self._positions[node]
        return code_range.start.line, code_range.start.column + 1

    def text(self, node: cst.CSTNode) -> str:
        start, end = self.span(node)
        return self.source.text[start:end]

    def replace(self, node: cst.CSTNode, text: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, text)

    # -- structure -----------------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent = self._parents.get(node)
        while parent is not None:
            yield parent
            parent = self._parents.get(parent)

    def enclosing(self, node: cst.CSTNode, kinds) -> cst.CSTNode | None:
        return next((a for a in self.ancestors(node) if isinstance(a, kinds)), None)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        scope = self.enclosing(node, SCOPE_NODES)
        return scope if isinstance(scope, cst.FunctionDef) else None

    def calls(self) -> Iterator[cst.Call]:
        """Every call in the module, in source order."""
        stack = [self.tree]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                yield node
            stack.extend(reversed(node.children))

    # -- where the code runs ---------------------------------------------------

    def context(self, node: cst.CSTNode) -> Context:
        """Hot path (loop, forward, per-step method), one-time set-up, or an ordinary call."""
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, LOOP_NODES):
                return Context.HOT
            if isinstance(ancestor, cst.FunctionDef):
                name = ancestor.name.value
                if name.startswith("test") or _ONE_TIME.match(name) or _is_cached(ancestor):
                    return Context.ONCE
                if _HOT.match(name):
                    return Context.HOT
                return Context.CALL
            if isinstance(ancestor, (cst.ClassDef, cst.Lambda)):
                return Context.ONCE if isinstance(ancestor, cst.ClassDef) else Context.CALL
        return Context.ONCE  # module level


# CPython's own limits on nesting. libcst has none: past them its parser takes minutes, gigabytes or the process.
_CPYTHON_NESTING_ERRORS = ("too many nested parentheses", "too many levels of indentation")


def _refuse_what_cpython_cannot_nest(source: SourceFile) -> None:
    """A file nested deeper than CPython accepts is refused before libcst sees it.

    Any other syntax error is left to libcst, which also reads syntax newer
    than the Python running optpatch.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: CPython's business, not ours
            compile(source.text, source.rel, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if error.msg in _CPYTHON_NESTING_ERRORS:
            raise PythonParseError(FileError(source.rel, f"syntax error: {error.msg}", error.lineno)) from None
    except (MemoryError, RecursionError):  # CPython's parser stack ran out: the same nesting, deeper
        raise PythonParseError(FileError(source.rel, "nested too deeply for Python's own parser")) from None
    except ValueError:  # NUL bytes: libcst reports them with a position
        pass


def _syntax_error(source: SourceFile, error: cst.ParserSyntaxError) -> FileError:
    """CPython's message when it has one: libcst's positions can trail the real mistake."""
    try:
        compile(source.text, source.rel, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python_error:
        return FileError(source.rel, f"syntax error: {python_error.msg}", python_error.lineno)
    except ValueError:
        pass
    message = str(error).splitlines()[0]
    return FileError(source.rel, f"syntax error (libcst): {message}", error.raw_line)


def _is_cached(function: cst.FunctionDef) -> bool:
    for decorator in function.decorators:
        target = decorator.decorator
        if isinstance(target, cst.Call):
            target = target.func
        name = target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", "")
        if name in ("cache", "lru_cache", "cached_property"):
            return True
    return False


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything below it, in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def dotted_name(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None
