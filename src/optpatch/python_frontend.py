"""The Python frontend: a libcst tree plus the facts rules ask of it.

Everything a rule needs to know about names goes through `qualified_names`,
which resolves aliases (`import torch as t`, `from torch import zeros as
z`) and refuses shadowed names (a parameter or local called `torch`).

Speed (docs/benchmarks.md): libcst's PositionProvider and
QualifiedNameProvider cost about two and five times the parse. Instead,
right after the parse, one pass of libcst's own code generator
(`_TreeIndex`, ~0.6x the parse) records every node's character span,
parent and pre-order place, and collects the calls and the nodes that bind
names; `python_scope.NameResolver` resolves a name from those only when a
rule asks.
"""

from __future__ import annotations

import ast
import re
import warnings
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Iterator

import libcst as cst
from libcst._nodes.internal import CodegenState

from optpatch.formatter_config import PythonStyle
from optpatch.model import Context, Edit, FileError
from optpatch.native_stack import call_with_large_stack
from optpatch.python_scope import BINDING_NODES, IMPORT, LOCAL, NameResolver
from optpatch.source import SourceFile

if TYPE_CHECKING:
    from optpatch.python_screen import CallIndex

SCOPE_NODES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_CACHE_DECORATORS = ("cache", "lru_cache", "cached_property")
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
    def __init__(self, source: SourceFile, outline: str | None = None, screen: "CallIndex | None" = None,
                 style: PythonStyle = PythonStyle()):
        """Parse `source`; `style` is how the project's formatter lays it out (formatter_config.py).

        `screen` is the `ast` call index the engine's screens built from the
        same text: Python's own parser has taken it, so its nesting needs no
        check here, and rules judge the sites in stubbed functions from it.
        With an `outline` of the file (python_outline.py: the same length and
        lines, some functions stubbed), libcst parses that instead, and every
        span is still a span of the file. An outline libcst refuses is
        dropped for the file itself, whose error is the one to report.
        """
        self.source = source
        self.style = style
        self.screen = screen
        self.outlined = False
        # Other files an analysis read to judge this one (analysis/tensor_subclasses.py), with their SHA-256:
        # passes.analyse_text hands them to the result cache, which re-analyses this file when one changes.
        self.inputs: list[tuple[str, str]] = []
        self._outline = None
        if screen is None:
            _refuse_what_cpython_cannot_nest(source)
        if outline is not None:
            try:
                self.tree, self._index = call_with_large_stack(_parse_and_index, outline)
                self.outlined = True
                self._outline = outline
                return
            except (cst.ParserSyntaxError, RecursionError, _TextLost):
                pass
        try:
            # The index is built at once, not on first use: every rule starts from calls, positions or `walk`.
            self.tree, self._index = call_with_large_stack(_parse_and_index, source.text)
        except cst.ParserSyntaxError as error:
            raise PythonParseError(_syntax_error(source, error)) from None
        except RecursionError:
            raise PythonParseError(FileError(source.rel, "nesting too deep for the parser")) from None
        except _TextLost as lost:
            line = source.position(lost.offset)[0]
            reason = "libcst cannot reproduce this line of the file, so optpatch cannot place edits in it; report it"
            raise PythonParseError(FileError(source.rel, reason, line)) from None

    @cached_property
    def _names(self) -> NameResolver:
        index = self._index
        return NameResolver(self.tree, index, index.binding_nodes)

    # -- names ---------------------------------------------------------------

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """Fully qualified names `node` may refer to, e.g. {"torch.zeros"}; empty if unknown.

        A module-level assignment names what it binds as it is spelled, so
        after `import torch` and `torch = np` both bindings call `torch.zeros`
        "torch.zeros" (libcst's QualifiedNameProvider does the same). The
        assignment's meaning is then marked `<assigned>.`, so that the name
        has two meanings and no rule takes it for torch's.
        """
        return _marked(self._names.qualified_names(node))

    @cached_property
    def import_aliases(self) -> frozenset[str]:
        """Every name an `import ... as name` or `from ... import x as name` binds, in any scope."""
        return frozenset(
            alias.asname.name.value
            for node in self._index.binding_nodes
            if type(node) in (cst.Import, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar)
            for alias in node.names
            if alias.asname is not None and type(alias.asname.name) is cst.Name
        )

    def bindings(self, name: cst.Name) -> tuple | None:
        """Every assignment that `name` may read (libcst `BaseAssignment`s), or None outside any scope.

        Flow-insensitive: all bindings of the name in the scope it resolves to,
        including parameters, imports and builtins, in source order. They are
        python_scope's bindings, which derive from libcst's assignment classes
        (`Assignment`, `ImportAssignment`, `BuiltinAssignment`) and carry
        the same `name` and `node`.
        """
        return self._names.bindings(name)

    def is_import(self, node: cst.CSTNode) -> bool:
        """True when `node` names something bound by an import statement."""
        return any(q.source == IMPORT for q in self._names.qualified_names(node))

    def refers_to(self, node: cst.CSTNode, names: set[str] | frozenset[str]) -> str | None:
        """The one qualified name of `node` if it is in `names` (and it has no other meaning)."""
        return _the_one(self.qualified_names(node), names)

    def callee_in_a_function_refers_to(self, callee: str, names: set[str] | frozenset[str]) -> str | None:
        """`refers_to` for a callee spelled `callee` in a function that binds none of its names anywhere
        (python_scope.NameResolver.meaning_in_a_function): the answer the module's own bindings give."""
        return _the_one(_marked(self._names.meaning_in_a_function(callee)), names)

    # -- positions -----------------------------------------------------------

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        """Character offsets of the node in the source text, without its surrounding whitespace."""
        return self._index.span(node)

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based line and column of the node's first character."""
        return self.source.position(self._index.span(node)[0])

    def text(self, node: cst.CSTNode) -> str:
        start, end = self.span(node)
        return self.source.text[start:end]

    def ast_offset(self, line: int, utf8_col: int) -> int:
        """The text offset of an `ast` position (its columns count UTF-8 bytes)."""
        start = self.source.line_starts[line - 1]
        head = self.source.text[start : start + utf8_col]
        if not head.isascii():
            head = head.encode()[:utf8_col].decode()
        return start + len(head)

    def ast_start(self, node: ast.expr) -> tuple[int, int]:
        """`start` for a node of the screen's `ast` (the same line and column libcst's node gets)."""
        return self.source.position(self.ast_offset(node.lineno, node.col_offset))

    def ast_text(self, node: ast.expr) -> str:
        return self.source.text[self.ast_offset(node.lineno, node.col_offset) : self.ast_offset(node.end_lineno, node.end_col_offset)]

    def stubbed(self, node: ast.expr) -> bool:
        """True when the outline replaced `node` (an `ast` node of the file) by a stub: libcst never saw it."""
        if self._outline is None:
            return False
        start, end = self.ast_offset(node.lineno, node.col_offset), self.ast_offset(node.end_lineno, node.end_col_offset)
        return self._outline[start:end] != self.source.text[start:end]

    def replace(self, node: cst.CSTNode, text: str) -> Edit:
        start, end = self.span(node)
        return Edit(start, end, text)

    # -- structure -----------------------------------------------------------

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._index.parent(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent_of = self._index.parent
        parent = parent_of(node)
        while parent is not None:
            yield parent
            parent = parent_of(parent)

    def enclosing(self, node: cst.CSTNode, kinds) -> cst.CSTNode | None:
        return next((a for a in self.ancestors(node) if isinstance(a, kinds)), None)

    def enclosing_function(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        scope = self.enclosing(node, SCOPE_NODES)
        return scope if isinstance(scope, cst.FunctionDef) else None

    def calls(self) -> Iterator[cst.Call]:
        """Every call in the module, in source order."""
        return iter(self._index.calls)

    # -- where the code runs ---------------------------------------------------

    def context(self, node: cst.CSTNode) -> Context:
        """Hot path (loop, forward, per-step method), one-time set-up, or an ordinary call."""
        return _context(_cst_scope(ancestor) for ancestor in self.ancestors(node))


def ast_context(ancestors: Iterable[ast.AST]) -> Context:
    """`PythonModule.context` for a node of the screen's `ast`, from its ancestors (innermost first)."""
    return _context(_ast_scope(ancestor) for ancestor in ancestors)


def _context(scopes: Iterable[tuple[str, str, bool] | None]) -> Context:
    """The context of the innermost loop or scope: (kind, function name, cached) for each ancestor, or None."""
    for scope in scopes:
        if scope is None:
            continue
        kind, name, cached = scope
        if kind == "loop":
            return Context.HOT
        if kind == "function":
            if name.startswith("test") or _ONE_TIME.match(name) or cached:
                return Context.ONCE
            return Context.HOT if _HOT.match(name) else Context.CALL
        return Context.ONCE if kind == "class" else Context.CALL  # a lambda
    return Context.ONCE  # module level


def _cst_scope(node: cst.CSTNode) -> tuple[str, str, bool] | None:
    if isinstance(node, LOOP_NODES):
        return "loop", "", False
    if isinstance(node, cst.FunctionDef):
        return "function", node.name.value, any(_cst_decorator_name(d.decorator) in _CACHE_DECORATORS for d in node.decorators)
    if isinstance(node, (cst.ClassDef, cst.Lambda)):
        return ("class" if isinstance(node, cst.ClassDef) else "lambda"), "", False
    return None


def _ast_scope(node: ast.AST) -> tuple[str, str, bool] | None:
    kind = type(node)
    if kind in _AST_LOOPS:
        return "loop", "", False
    if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
        return "function", node.name, any(_ast_decorator_name(d) in _CACHE_DECORATORS for d in node.decorator_list)
    if kind is ast.ClassDef or kind is ast.Lambda:
        return ("class" if kind is ast.ClassDef else "lambda"), "", False
    return None


_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)  # libcst's For holds `async for` too


def _cst_decorator_name(decorator: cst.BaseExpression):
    """`cache` for `@cache`, `@functools.cache` and `@functools.cache(...)`."""
    target = decorator.func if isinstance(decorator, cst.Call) else decorator
    return target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", "")


def _ast_decorator_name(decorator: ast.expr) -> str:
    """`_cst_decorator_name` for the `ast`."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""


def _marked(found) -> set[str]:
    """Qualified names as rules see them: a module name bound by an import and an assignment gets two meanings."""
    names = {q.name for q in found}
    if len(names) < len(found):
        return {f"<assigned>.{q.name}" if q.source == LOCAL else q.name for q in found}
    return names


def _the_one(found: set[str], names: set[str] | frozenset[str]) -> str | None:
    if len(found) == 1:
        (name,) = found
        if name in names:
            return name
    return None


# CPython's own limits on nesting. libcst has none: past them its parser takes minutes, gigabytes or the process.
_CPYTHON_NESTING_ERRORS = ("too many nested parentheses", "too many levels of indentation")


def _parse_and_index(text: str) -> tuple[cst.Module, "_TreeIndex"]:
    tree = cst.parse_module(text)
    index = _TreeIndex.of(tree)
    # libcst's code is the file, character for character, except for whitespace its tree cannot hold: a form
    # feed in an indentation (CPython reads it as a column reset) is left out or copied to the next lines; a
    # last line of blanks after an empty line, or a lone CR at the end, loses a line ending. Its offsets
    # are then moved onto the file's own characters.
    if index.offset != len(text) or "\f" in text:
        generated = tree.code
        if generated != text:
            index.move_offsets(source_offsets(generated, text))
    return tree, index


class _TextLost(Exception):
    """libcst's code for a file differs from the file in more than whitespace, at `offset` of the file."""

    def __init__(self, offset: int):
        super().__init__(offset)
        self.offset = offset


_WHITESPACE = frozenset(" \t\f\v\r\n")


def source_offsets(generated: str, text: str) -> list[int]:
    """For each offset of `generated` (0 to its length), the offset in `text` that stands for it.

    `generated` must hold the same characters as `text` once whitespace is
    left out of both; each of those characters maps to itself, and an offset
    in a run of whitespace to the same place in the file's run, or the run's
    end. Raises `_TextLost` otherwise.
    """
    kept_generated = [i for i, character in enumerate(generated) if character not in _WHITESPACE]
    kept_text = [i for i, character in enumerate(text) if character not in _WHITESPACE]
    for g, t in zip(kept_generated, kept_text):
        if generated[g] != text[t]:
            raise _TextLost(t)
    if len(kept_generated) != len(kept_text):
        shorter = min(len(kept_generated), len(kept_text))
        raise _TextLost(kept_text[shorter] if shorter < len(kept_text) else len(text))
    offsets = [0] * (len(generated) + 1)
    previous_g = previous_t = -1
    for g, t in zip(kept_generated + [len(generated)], kept_text + [len(text)]):
        for blank in range(previous_g + 1, g):
            offsets[blank] = min(previous_t + (blank - previous_g), t)
        offsets[g] = t
        previous_g, previous_t = g, t
    return offsets


def _cpython_parse(source: SourceFile) -> ast.Module | Exception:
    """CPython's `ast` of the file, or the error its parser raised."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes and the like: CPython's business, not ours
            return compile(source.text, source.rel, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:  # ValueError: NUL bytes
        return error


def _refuse_what_cpython_cannot_nest(source: SourceFile) -> None:
    """A file nested deeper than CPython accepts is refused before libcst sees it.

    Any other syntax error is left to libcst, which also reads syntax newer
    than the Python running optpatch (and reports NUL bytes with a position).
    """
    parsed = _cpython_parse(source)
    if isinstance(parsed, SyntaxError) and parsed.msg in _CPYTHON_NESTING_ERRORS:
        raise PythonParseError(FileError(source.rel, f"syntax error: {parsed.msg}", parsed.lineno, parsed.offset))
    if isinstance(parsed, (MemoryError, RecursionError)):  # CPython's parser stack ran out: the same nesting, deeper
        raise PythonParseError(FileError(source.rel, "nested too deeply for Python's own parser"))


def rewrite_error(original: SourceFile, rewritten: SourceFile, changed_lines: Iterable[int]) -> str | None:
    """Why the text a rewrite produced would not parse, or None: the safety net under the rules' edits.

    CPython must take all of it, and libcst what the rewrite wrote: the
    outline (python_outline.py) that keeps the definitions holding
    `changed_lines`, with the module's other statements. The rest is the
    original's text, which the analysis read. (Parsing all of it with
    libcst cost 18-27% of a scan of DeepSpeed or NeMo: files with a fix are
    the large ones.) Where CPython takes neither text (syntax newer than
    the running Python), libcst must take all of it. Large literal data
    the rewrite did not touch is stubbed as well, whoever reads it: here
    nothing is resolved, only parsed (a 60,000-row table cost libcst 20 s).
    """
    tree = _cpython_parse(rewritten)
    if isinstance(tree, ast.Module):
        from optpatch.python_outline import outline

        text = outline(rewritten.text, tree, changed_lines, reads=lambda: {}) or rewritten.text
    elif isinstance(_cpython_parse(original), ast.Module):
        return "Python's own parser refuses it"
    else:
        text = rewritten.text
    try:
        call_with_large_stack(cst.parse_module, text)
    except cst.ParserSyntaxError as error:
        return f"syntax error (libcst): {str(error).splitlines()[0]}"
    except RecursionError:
        return "nested too deeply for libcst"
    return None


def _syntax_error(source: SourceFile, error: cst.ParserSyntaxError) -> FileError:
    """CPython's message when it has one: libcst's positions can trail the real mistake."""
    parsed = _cpython_parse(source)
    if isinstance(parsed, SyntaxError):
        return FileError(source.rel, f"syntax error: {parsed.msg}", parsed.lineno, parsed.offset)
    message = str(error).splitlines()[0]
    return FileError(source.rel, f"syntax error (libcst): {message}", error.raw_line, error.raw_column + 1)


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything below it, in source order."""
    index = _TreeIndex.latest
    place = index.nodes.get(id(node)) if index is not None else None
    if place is not None and index.order[place[2]] is node:
        return iter(index.order[place[2] : place[3]])
    return _walk_children(node)


def _walk_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`walk` for a node of a tree that was never indexed (libcst's `children` is slow: each call re-visits the node)."""
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


class _TreeIndex(CodegenState):
    """One run of libcst's code generator that records, for every node, what the frontend needs.

    The generator visits nodes in source order and reports each one's start
    and end (`before_codegen`/`after_codegen`) and the span without
    surrounding whitespace (`record_syntactic_position`), which is exactly
    how libcst's PositionProvider defines positions; this state keeps
    character offsets instead of building line/column objects per token,
    and counts characters instead of collecting the tokens.

    It runs for every node and token of the file, so it is written for
    speed: one table entry per node, keyed by `id(node)` (a libcst node
    hashes through a Python-level `__hash__`; the tree keeps every node,
    and so its id, alive), and the state is its own context manager instead
    of allocating one per call.
    """

    __slots__ = ("offset", "nodes", "order", "calls", "binding_nodes", "_open", "_recording", "_last", "_indent")

    # The index of the module analysed last in this process: `walk` slices its
    # pre-order list instead of asking libcst for children node by node.
    latest: "_TreeIndex | None" = None

    @classmethod
    def of(cls, tree: cst.Module) -> "_TreeIndex":
        index = cls(tree)
        tree._codegen(index)
        cls.latest = index
        return index

    def __init__(self, tree: cst.Module):
        super().__init__(default_indent=tree.default_indent, default_newline=tree.default_newline)
        # libcst's Module only asks whether any token was written, to keep an empty file's newline.
        self.tokens = [tree] if (tree.header or tree.body or tree.footer) else []
        self.offset = 0
        self._last = ""  # the last token: the trailing newline that Module may take back
        self._indent = 0  # the width of `indent_tokens`
        # id(node) -> (start offset, end offset, place in `order`, place after its last descendant, parent)
        self.nodes: dict[int, tuple] = {}
        self.order: list[cst.CSTNode] = []  # every node, pre-order
        self.calls: list[cst.Call] = []
        self.binding_nodes: list[cst.CSTNode] = []
        self._open: list = [None]  # node, start, place in `order`, for each node being generated, after a None
        self._recording: list = []  # start node, end node, start offset, for each syntactic span being recorded

    def increase_indent(self, value: str) -> None:
        self.indent_tokens.append(value)
        self._indent += len(value)

    def decrease_indent(self) -> None:
        self._indent -= len(self.indent_tokens.pop())

    def add_indent_tokens(self) -> None:
        self.offset += self._indent

    def add_token(self, value: str) -> None:
        self.offset += len(value)
        self._last = value

    def pop_trailing_newline(self) -> None:
        if self.tokens:
            self.offset -= len(self._last)

    def before_codegen(self, node: cst.CSTNode) -> None:
        order = self.order
        self._open += (node, self.offset, len(order))
        order.append(node)
        kind = type(node)
        if kind is cst.Call:
            self.calls.append(node)
        elif kind in _BINDING_TYPES:
            self.binding_nodes.append(node)

    def after_codegen(self, node: cst.CSTNode) -> None:
        open_ = self._open
        first = open_.pop()
        start = open_.pop()
        del open_[-1]
        if start.__class__ is tuple:  # the syntactic span `__exit__` recorded
            self.nodes[id(node)] = (start[0], start[1], first, len(self.order), open_[-3] if len(open_) > 1 else None)
        else:
            self.nodes[id(node)] = (start, self.offset, first, len(self.order), open_[-3] if len(open_) > 1 else None)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None) -> "_TreeIndex":
        self._recording += (start_node, end_node, self.offset)
        return self

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        entry = self.nodes[id(node)]
        return entry[0], entry[1]

    def move_offsets(self, offsets: list[int]) -> None:
        """Turn every span into the file's offsets, given the file offset of each generated one (`source_offsets`)."""
        nodes, last = self.nodes, len(offsets) - 1
        # The module of a file without a final newline ends one past the code: libcst writes one, then takes it back.
        for key, (start, end, *rest) in nodes.items():
            nodes[key] = (offsets[min(start, last)], offsets[min(end, last)], *rest)
        self.offset = offsets[last]

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        entry = self.nodes.get(id(node))
        return entry[4] if entry is not None else None

    def __enter__(self) -> None:
        return None

    def __exit__(self, error_type, *exc) -> bool:
        recording = self._recording
        start = recording.pop()
        end_node = recording.pop()
        start_node = recording.pop()
        if error_type is not None:  # e.g. RecursionError in a deep expression: let it through unmasked
            return False
        nodes = self.nodes
        # libcst only records the position of the node being generated: keep it in that node's start slot.
        self._open[-2] = (
            nodes[id(start_node)][0] if start_node is not None else start,
            nodes[id(end_node)][1] if end_node is not None else self.offset,
        )
        return False


_BINDING_TYPES = frozenset(BINDING_NODES)
