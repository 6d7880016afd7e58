"""The C++/CUDA frontend: a libclang parse of one file, plus the facts rules ask of it.

Two kinds of parse. The header-free one takes every file alone, in clang's
CUDA host mode, with no include path at all (`-nostdinc`, no torch, no
CUDA toolkit) and `cpp_prelude.h` force-included: a stand-in that declares
the types and functions extension code uses most. It costs milliseconds and
is the same on every machine. What the prelude does not declare stays
unresolved; rules must treat an unresolved name as "unknown", never as
evidence (docs/cpp-frontend.md). The parse with headers takes the file at
its own path with the flags cpp_headers.py finds for it (its
compile_commands.json entry, or inferred include folders), its leading
heavy includes loaded from a precompiled header (cpp_pch.py); passes.py
asks for it only where the header-free parse left a question.

Offsets: libclang speaks bytes of the buffer it was given (the UTF-8 text,
without a BOM); everything this module hands out is a character offset into
`SourceFile.text`, like the Python frontend. Positions inside macro
arguments (`AT_DISPATCH_...(..., [&] { ... })`) come from
`clang_getFileLocation`, which cindex does not wrap.
"""

from __future__ import annotations

import array
import atexit
import ctypes
import enum
import hashlib
import os
import re
import tempfile
import time
import weakref
from bisect import bisect_left, bisect_right
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Iterator

from clang.cindex import CursorKind, TypeKind

from optpatch.formatter_config import CppStyle
from optpatch.analysis_inputs import FileInput, record_header_set
from optpatch.cpp_headers import CudaBuild, HeaderFlags, HeaderSetup
from optpatch.cpp_missing_headers import DeepMissing, remember, remembered
from optpatch.cpp_pch import (
    CONDITIONAL_CLOSE, CONDITIONAL_OPEN, LocalHeaders, Preamble, PrecompiledHeader, PrecompileError, Readiness, discard,
    precompiled, preamble_of, put_off, readiness,
)
from optpatch.model import Context, Edit, FileError
from optpatch.native_stack import call_with_large_stack
from optpatch.source import SourceFile

PRELUDE = Path(__file__).with_name("cpp_prelude.h")
# Paths that exist only as libclang "unsaved files": a quoted #include next to
# them finds nothing, so no header from the scanned repo or the machine leaks in.
_VIRTUAL_DIR = "/optpatch-virtual"
_PRELUDE_NAME = f"{_VIRTUAL_DIR}/optpatch_prelude.h"
# Every file is parsed under this one name, so that a translation unit can be reparsed with the next file.
_MAIN_NAME = f"{_VIRTUAL_DIR}/optpatch_main.cu"
_LANGUAGE_ARGS = (
    "-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib",
    # A CUDA installation clang finds would add a version warning that differs by machine.
    "--cuda-path=/optpatch-no-cuda",
    "-std=c++20", "-nostdinc", "-nostdinc++", "-ferror-limit=0",
)
PARSE_ARGS = (*_LANGUAGE_ARGS, "-include", _PRELUDE_NAME)
# clang's CUDA wrapper includes cuRAND's `curand_mtgp32_kernel.h`, which a toolkit without cuRAND lacks; an empty
# stand-in, searched after every real folder, keeps that from failing every CUDA parse with headers.
_FALLBACK_DIR = f"{_VIRTUAL_DIR}/fallback"
_FALLBACK_HEADERS = ((f"{_FALLBACK_DIR}/curand_mtgp32_kernel.h", b""),)
_LEAVE = object()  # marks, on the build stack, the end of a node's subtree
_DETAILED_PROCESSING_RECORD = 0x01
_INCOMPLETE = 0x02  # CXTranslationUnit_Incomplete: a header, to be precompiled
_FOR_SERIALIZATION = 0x10
_SKIP_FUNCTION_BODIES = 0x40  # in a precompiled header: the rules look only at the file itself
_KEEP_GOING = 0x200  # CXTranslationUnit_KeepGoing: go on after a missing #include
# Diagnostics are told apart by clang's structure, never by their text: the warning option that controls one,
# its category, its severity and where it points (tests/cpp/test_cpp_frontend.py rewords every message).
VLA_OPTION = "-Wvla-cxx-extension"  # clang's warning that a declaration is a variable-length array
ERROR = 3  # CXDiagnostic_Error: a diagnostic of this severity or above (Fatal, 4) is an error
PREPROCESSOR_CATEGORY = "Lexical or Preprocessor Issue"  # an #include not found is an error of this category
# What may stand between two tokens of C++ text: blanks, comments and line continuations, as a regular expression
# to build others with (`rf"\bzeros{BETWEEN_TOKENS}\("`). Atomic: nothing in a comment reads as code, and a
# `//////` banner cannot make a search try every way of splitting it (exponential before it was).
BETWEEN_TOKENS = r"(?>(?:\s|\\\r?\n|/\*(?s:.*?)\*/|//[^\n]*)*)"
_INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*(?:include|include_next|import)[ \t]*([<"])([^>"]+)[>"]')

FUNCTION_KINDS = frozenset({
    CursorKind.FUNCTION_DECL, CursorKind.CXX_METHOD, CursorKind.FUNCTION_TEMPLATE, CursorKind.CONSTRUCTOR,
    CursorKind.DESTRUCTOR, CursorKind.CONVERSION_FUNCTION, CursorKind.LAMBDA_EXPR,
})
LOOP_KINDS = frozenset({CursorKind.FOR_STMT, CursorKind.WHILE_STMT, CursorKind.DO_STMT, CursorKind.CXX_FOR_RANGE_STMT})
_FUNCTION_CURSOR_KINDS = frozenset({
    CursorKind.FUNCTION_DECL, CursorKind.CXX_METHOD, CursorKind.FUNCTION_TEMPLATE, CursorKind.CONSTRUCTOR,
    CursorKind.DESTRUCTOR,
})
# Declarations a function may sit in: namespaces, classes, templates of them, `extern "C"` blocks.
_SCOPE_KINDS = _FUNCTION_CURSOR_KINDS | frozenset({
    CursorKind.NAMESPACE, CursorKind.CLASS_DECL, CursorKind.STRUCT_DECL, CursorKind.CLASS_TEMPLATE,
    CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, CursorKind.UNION_DECL, CursorKind.LINKAGE_SPEC,
})
# Declarations that hold other declarations but run no code of their own.
_CONTAINER_KINDS = _SCOPE_KINDS - _FUNCTION_CURSOR_KINDS
_CLASS_KINDS = frozenset({
    CursorKind.CLASS_DECL, CursorKind.STRUCT_DECL, CursorKind.CLASS_TEMPLATE,
    CursorKind.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, CursorKind.UNION_DECL,
})
_DEVICE_WORDS = frozenset({"__device__", "__global__"})
# Set-up code runs once per process or model: a saving there is noise.
_ONE_TIME = re.compile(r"(^|_)(init|initialize|setup|set_up|create|build|allocate|register|load)(_|$)", re.I)


class CppParseError(Exception):
    def __init__(self, error: FileError):
        super().__init__(error.reason)
        self.error = error


class HeaderParseError(Exception):
    """The parse with headers is not usable for this file (an #include not found, a failed parse): the message
    says why, and the header-free parse stands."""


class MissingHeader(HeaderParseError):
    """An `#include` clang could not find: which header, and the file that includes it."""

    def __init__(self, header: str, includer: str):
        super().__init__(f"'{header}' not found (included from {includer})")
        self.header = header
        self.includer = includer


class Place(enum.Enum):
    HOST = "host"
    DEVICE = "device"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Where:
    """Whether a site is host code, and the function it sits in."""

    place: Place
    function: "Node | None"
    reason: str  # why DEVICE or UNKNOWN; empty for HOST


@dataclass(frozen=True)
class Token:
    spelling: str
    kind: str  # "identifier", "keyword", "literal", "punctuation"
    start: int  # character offsets into SourceFile.text
    end: int


@dataclass(eq=False)
class Node:
    """One cursor of the main file, with its parent and its position in characters."""

    cursor: object  # clang.cindex.Cursor
    kind: CursorKind
    spelling: str
    start: int
    end: int
    parent: "Node | None"
    children: list["Node"] = field(default_factory=list)

    @property
    def type_kind(self) -> TypeKind:
        return self.cursor.type.kind

    def ancestors(self) -> Iterator["Node"]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def walk(self) -> Iterator["Node"]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def body(self) -> "Node | None":
        """The compound statement of a function or lambda definition."""
        bodies = [c for c in self.children if c.kind is CursorKind.COMPOUND_STMT]
        return bodies[-1] if bodies else None

    def expressions(self) -> list["Node"]:
        return [c for c in self.children if c.cursor.kind.is_expression()]

    def arguments(self) -> list["Node"]:
        """A call's argument expressions: not the callee, not a member call's object."""
        return [c for c in self.expressions() if c.kind is not CursorKind.MEMBER_REF_EXPR and not is_callee(c)]

    def call_object(self) -> "Node | None":
        """The object of a member call (`t` in `t.to(d)`)."""
        members = [c for c in self.children if c.kind is CursorKind.MEMBER_REF_EXPR]
        objects = members[0].expressions() if members else []
        return objects[0] if objects else None


def unwrap(node: Node) -> Node:
    """The expression behind implicit conversions, parentheses and copies, which keep its extent."""
    while (
        node.kind in (CursorKind.UNEXPOSED_EXPR, CursorKind.PAREN_EXPR, CursorKind.CALL_EXPR)
        and len(node.expressions()) == 1
    ):
        inner = node.expressions()[0]
        if node.kind is CursorKind.CALL_EXPR and (inner.start, inner.end) != (node.start, node.end):
            break  # a real call with one argument, not an implicit copy
        node = inner
    return node


def is_callee(node: Node) -> bool:
    """The function-name operand of a call (`f` in `f(x)`), possibly behind an implicit conversion."""
    while node.kind is CursorKind.UNEXPOSED_EXPR and len(node.children) == 1:
        node = node.children[0]
    return node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.OVERLOADED_DECL_REF) and node.cursor.type.kind in (
        TypeKind.FUNCTIONPROTO, TypeKind.FUNCTIONNOPROTO, TypeKind.OVERLOAD,
    )


def matching_bracket(tokens: list[Token], index: int) -> int | None:
    """Index of the bracket that closes tokens[index] ( `(`, `[`, `{` or `<<<` )."""
    closers = {"(": ")", "[": "]", "{": "}", "<<<": ">>>"}
    opener = tokens[index].spelling
    depth = 0
    for position in range(index, len(tokens)):
        spelling = tokens[position].spelling
        if spelling == opener:
            depth += 1
        elif spelling == closers[opener]:
            depth -= 1
            if depth == 0:
                return position
    return None


def opening_bracket(tokens: list[Token], index: int) -> int | None:
    """Index of the bracket that opens tokens[index] ( `)`, `]` or `}` ), read backwards: `matching_bracket`'s mirror."""
    openers = {")": "(", "]": "[", "}": "{"}
    closer = tokens[index].spelling
    depth = 0
    for position in range(index, -1, -1):
        spelling = tokens[position].spelling
        if spelling == closer:
            depth += 1
        elif spelling == openers[closer]:
            depth -= 1
            if depth == 0:
                return position
    return None


def kernel_name(tokens: list[Token], opener: int) -> str:
    """The name before `<<<`, skipping template arguments (`kernel<scalar_t><<<...>>>`)."""
    index, depth = opener - 1, 0
    while index >= 0:
        spelling = tokens[index].spelling
        depth += {">": 1, ">>": 2, "<": -1}.get(spelling, 0)
        if depth <= 0 and tokens[index].kind == "identifier":
            return spelling
        index -= 1
    return "?"


def split_top_level(tokens: list[Token], separator: str = ",") -> list[list[Token]]:
    """Split a token list on separators outside any brackets."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.spelling in ("(", "[", "{", "<<<"):
            depth += 1
        elif token.spelling in (")", "]", "}", ">>>"):
            depth -= 1
        if token.spelling == separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


@dataclass(frozen=True)
class Diagnostic:
    offset: int
    severity: int
    message: str


class CppUnit:
    """A parsed C++/CUDA file: its nodes, tokens, diagnostics and the edits rules build from them.

    `flags` None: the header-free parse. Otherwise the parse with the file's
    headers, as those flags say; `preamble` is the precompiled part to use
    when it still fits the text (the original's, for a rewrite of it).
    `setup` says how the build compiles the file (`cuda_build`); `style`,
    how clang-format lays the file out (formatter_config.py).
    """

    def __init__(self, source: SourceFile, flags: HeaderFlags | None = None, setup: HeaderSetup | None = None,
                 preamble: Preamble | None = None, style: CppStyle = CppStyle()):
        self.source = source
        self.flags = flags
        self.setup = setup
        self.style = style
        self._data = source.text.encode("utf-8")
        self._header_inputs: tuple = ()
        self._build_inputs: tuple = ()
        self._cursors: dict[int, object] = {}
        # Host candidates whose verdict a declaration this parse could not see may change, noted by the rules
        # (`ask_headers`): what starts a parse with headers, and what the report says of it.
        self.header_questions: list[str] = []
        if flags is None:
            self._main_name = _MAIN_NAME
            self.tu = _parse(self._data, source.rel, self)
        else:
            self._main_name = str(Path(source.path).absolute())
            self.tu, self._header_inputs = _parse_with_headers(source, self._main_name, flags, preamble)
        self._main_file_address = _address(_clang().conf.lib.clang_getFile(self.tu, self._main_name.encode()))
        self._offsets = _MainFileOffsets(self._main_file_address)
        self._char_of, self._byte_of = _offset_maps(source.text, self._data)

    @property
    def with_headers(self) -> bool:
        return self.flags is not None

    def ask_headers(self, why: str) -> None:
        """A rule notes a verdict the file's headers may change (cpp_second_look.py parses with them then)."""
        self.header_questions.append(why)

    @property
    def inputs(self) -> tuple:
        """What the analysis read besides the file: headers (with headers), and build files it consulted."""
        return self._header_inputs + self._build_inputs

    @cached_property
    def cuda_build(self) -> CudaBuild:
        """Whether the build compiles this file with CUDA's headers (False when nothing says so)."""
        if self.setup is None:
            return CudaBuild(False, "no build file was read")
        build = self.setup.cuda_build(Path(self.source.path))
        self._build_inputs = build.inputs
        return build

    # -- positions -------------------------------------------------------------------

    def _file_offset(self, location) -> int | None:
        """Byte offset of a location in the main file (macro arguments resolved), or None."""
        return self._offsets.of(location, _get_file_location())

    def char_offset(self, location) -> int | None:
        offset = self._file_offset(location)
        return None if offset is None else self._char_of(offset)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        return self.source.position(offset)

    def line_of(self, offset: int) -> int:
        return self.source.position(offset)[0]

    def text(self, start: int, end: int) -> str:
        return self.source.text[start:end]

    def node_text(self, node: Node) -> str:
        return self.source.text[node.start : node.end]

    # -- the tree -----------------------------------------------------------------------

    @cached_property
    def nodes(self) -> list[Node]:
        """Every cursor spelled in the main file, in document order, each once.

        A cursor expanded more than once (a lambda instantiated per dtype by an
        AT_DISPATCH macro) would repeat: the first of each (kind, spelling,
        start, end) is kept.
        """
        roots: list[Node] = []
        seen: set[tuple] = set()
        for cursor in self._declarations_here:
            if _implicit_instantiation(cursor):
                continue
            node = self._build(cursor, seen)
            if node is not None:
                roots.append(node)
        return [node for root in roots for node in root.walk()]

    @cached_property
    def _declarations_here(self) -> list:
        """The translation unit's top-level cursors that this file expands."""
        return self._children_here(self.tu.cursor)

    def _children_here(self, cursor) -> list:
        """The child cursors of `cursor` that this file expands. Most of the translation unit's are the prelude's
        and the builtin headers' (about a thousand a file): each is told apart by two calls to libclang, not
        through cindex's location objects."""
        location_of, expansion, offsets = _clang().conf.lib.clang_getCursorLocation, _get_expansion_location(), self._offsets
        here = [child for child in _children(cursor) if offsets.of(location_of(child), expansion) is not None]
        for child in here:
            child._tu = self.tu
        return here

    def _build(self, top, seen: set[tuple]) -> Node | None:
        """The tree of nodes under cursor `top`, depth first without recursion: code can nest thousands deep.

        It runs for every cursor of the file, so it calls libclang itself
        rather than through cindex's properties, each of which first asks
        libclang whether the cursor is null (these come from
        clang_visitChildren and never are): the trees of the 45 field files
        OPT203 reads in 1.26 s, against 2.13 s (docs/benchmarks.md). The
        keys hold kind ids, not CursorKind members, whose hash runs in Python.
        """
        clang = _clang()
        lib = clang.conf.lib
        extent_of, range_start, range_end = lib.clang_getCursorExtent, lib.clang_getRangeStart, lib.clang_getRangeEnd
        spelling_of, text_of, kind_of = lib.clang_getCursorSpelling, clang._CXString.from_result, _cursor_kind
        visit_children, tu = lib.clang_visitChildren, self.tu
        file_offset, file_location, char_of = self._offsets.of, _get_file_location(), self._char_of

        def offset_of(location) -> int | None:
            offset = file_offset(location, file_location)
            return None if offset is None else char_of(offset)

        children: list = []
        visit = _visitor(children)
        root = None
        on_path: Counter = Counter()  # keys of the nodes whose subtrees are being built
        stack: list = [(top, None)]
        while stack:
            cursor, parent = stack.pop()
            if cursor is _LEAVE:
                on_path[parent] -= 1
                continue
            extent = extent_of(cursor)
            start, end = offset_of(range_start(extent)), offset_of(range_end(extent))
            if start is None or end is None:
                continue
            kind_id, spelling = cursor._kind_id, text_of(spelling_of(cursor))
            key = (kind_id, spelling, start, end)
            # An implicit conversion wraps an expression with the same extent: only a
            # repeat outside the current chain of ancestors is a second expansion.
            if key in seen and not on_path[key]:
                continue
            seen.add(key)
            cursor._tu, cursor._extent, cursor._spelling = tu, extent, spelling  # what cindex would cache
            node = Node(cursor, kind_of(kind_id), spelling, start, end, parent)
            if parent is None:
                root = node
            else:
                parent.children.append(node)
            on_path[key] += 1
            stack.append((_LEAVE, key))
            visit_children(cursor, visit, None)
            stack.extend((child, node) for child in reversed(children))
            children.clear()
        return root

    # -- parts of the tree -------------------------------------------------------------
    #
    # A rule that looks at a few calls reads the declarations that hold them, not the
    # file: OPT203 needs the functions that call `zeros`, the kernels they launch and
    # the macros around them. Each look returns `nodes`' own when the whole tree is
    # built already (another rule built it), and otherwise builds only those
    # declarations' subtrees, whose nodes have no parent above the declaration.

    def nodes_calling(self, names: frozenset[str]) -> list[Node]:
        """The nodes of the declarations that hold a call spelled as one of NAMES, in document order.

        A declaration here is a function, or another declaration outside any
        function (a variable whose initialiser calls), found below the
        namespaces, classes and `extern "C"` blocks around it. Which ones
        hold such a call is asked of libclang in one walk that reads a
        cursor's kind from the cursor itself and a spelling only for calls:
        on 13 field files that call `zeros(`, 0.06 s against 0.61 s to build
        their whole trees (docs/benchmarks.md).
        """
        if self.has_tree:
            return self.nodes
        seen: set[tuple] = set()
        roots = [self._build(cursor, seen) for cursor in self._declarations_below_scopes() if _calls(cursor, names)]
        return [node for root in roots if root is not None for node in root.walk()]

    def functions_named(self, name: str) -> list[Node]:
        """The functions and function templates spelled NAME that the file declares outside other functions
        (in namespaces, classes, `extern "C"` blocks too), in document order."""
        kinds = (CursorKind.FUNCTION_DECL, CursorKind.FUNCTION_TEMPLATE)
        if self.has_tree:
            return [n for n in self.nodes if n.kind in kinds and n.spelling == name]
        spelling_of, text_of = _clang().conf.lib.clang_getCursorSpelling, _clang()._CXString.from_result
        found = [
            self._build(cursor, set()) for cursor in self._declarations_below_scopes()
            if _cursor_kind(cursor._kind_id) in kinds and text_of(spelling_of(cursor)) == name
        ]
        return [node for node in found if node is not None]

    @cached_property
    def macro_uses(self) -> list[Node]:
        """The file's macro instantiations (from the detailed preprocessing record), in document order."""
        if self.has_tree:
            return [n for n in self.nodes if n.kind is CursorKind.MACRO_INSTANTIATION]
        seen: set[tuple] = set()
        found = [
            self._build(cursor, seen) for cursor in self._declarations_here
            if _cursor_kind(cursor._kind_id) is CursorKind.MACRO_INSTANTIATION
        ]
        return [node for node in found if node is not None]

    def _declarations_below_scopes(self) -> list:
        """The top-level cursors `nodes` builds, with each namespace, class and `extern "C"` block among them
        replaced by its children, recursively, in document order (template instantiations as `nodes` has them)."""
        found: list = []
        stack = [cursor for cursor in reversed(self._declarations_here) if not _implicit_instantiation(cursor)]
        while stack:
            cursor = stack.pop()
            if _cursor_kind(cursor._kind_id) in _CONTAINER_KINDS:
                children = _children(cursor)
                for child in children:
                    child._tu = self.tu
                stack.extend(reversed(children))
            else:
                found.append(cursor)
        return found

    @cached_property
    def _by_cursor(self) -> dict:
        return {node.cursor: node for node in self.nodes}

    def node_of(self, cursor) -> Node | None:
        """The main-file node of a cursor (for example a declaration a reference points to).

        Before `nodes` is built, the cursor's detached subtree: what a look at
        one declaration needs, without paying for the whole file.
        """
        if cursor is None:
            return None
        if not self.has_tree:
            return self.detached(cursor)
        return self._by_cursor.get(cursor)

    # -- looking without the whole tree ---------------------------------------------------
    #
    # `nodes` mirrors every cursor of the file as a Python object: about 40 us per
    # cursor through cindex, 70-80 ms for a typical kernel file, ten times the
    # parse. A rule that can name the few places it cares about asks clang for
    # the cursor there and builds only that subtree.

    def cursor_at(self, offset: int):
        """clang's most specific cursor at character `offset` of the main file (clang_getCursor).

        Remembered: OPT201 looks at the same `name[` when it checks and when it asks whether the file needs its
        headers."""
        if offset not in self._cursors:
            self._cursors[offset] = _clang().Cursor.from_location(self.tu, self._location(offset))
        return self._cursors[offset]

    def _location(self, offset: int):
        return _clang().SourceLocation.from_offset(self.tu, self._main_file, self._byte_of(offset))

    @cached_property
    def _main_file(self):
        return _clang().File.from_name(self.tu, self._main_name)

    def detached(self, cursor) -> Node | None:
        """The subtree of `cursor` alone, without its ancestors (`parent` is None).

        For looking at an expression or a declaration in isolation: `where`
        and `references_to` need the node from `nodes` instead.
        """
        return self._build(cursor, set())

    @property
    def has_tree(self) -> bool:
        """True once `nodes` has been built (the detached look-ups are no saving then)."""
        return "nodes" in self.__dict__

    def referenced(self, node: Node):
        """The declaration a reference names (a cindex cursor, possibly in the prelude), or None."""
        target = node.cursor.referenced
        return target if target is not None and not target.kind.is_invalid() else None

    def in_prelude(self, cursor) -> bool:
        """Declared by optpatch's prelude (header-free parse only): a stand-in, never evidence."""
        location = cursor.location
        return location.file is not None and location.file.name == _PRELUDE_NAME

    def in_this_file(self, cursor) -> bool:
        location = cursor.location
        return location.file is not None and location.file.name == self._main_name

    def declared_by_library(self, cursor, namespaces: tuple[str, ...]) -> bool:
        """Declared by the library the prelude stands for: the prelude's declaration, or (with headers) one
        outside this file in one of `namespaces` (`at`, `torch`), as clang resolved it."""
        if self.in_prelude(cursor):
            return True
        if not self.with_headers or self.in_this_file(cursor):
            return False
        parent = cursor.semantic_parent
        while parent is not None and parent.kind is not CursorKind.TRANSLATION_UNIT:
            if parent.kind is CursorKind.NAMESPACE and parent.spelling in namespaces:
                return True
            parent = parent.semantic_parent
        return False

    def references_to(self, declaration: Node) -> list[Node]:
        """DECL_REF_EXPR and lambda-capture references to `declaration`, in order."""
        found = []
        for node in self.nodes:
            reference = node.kind in (CursorKind.DECL_REF_EXPR, CursorKind.VARIABLE_REF)
            if reference and node.spelling == declaration.spelling:
                target = self.referenced(node)
                if target is not None and target == declaration.cursor:
                    found.append(node)
        return found

    # -- tokens -------------------------------------------------------------------------

    @cached_property
    def tokens(self) -> list[Token]:
        """The main file's tokens, comments left out."""
        return self._tokenize(self.tu.cursor.extent)

    def _tokenize(self, extent) -> list[Token]:
        """The tokens of a range of the main file, comments left out.

        clang_tokenize's array is read in one go (`_token_fields`): a token's
        kind, location and length, its spelling sliced from the text. That is
        ten times faster than asking clang three questions per token, which
        cost ~25 us a token and made tokenizing a 100 KB file take 0.2 s.
        """
        clang = _clang()
        lib = clang.conf.lib
        array_start, count = ctypes.POINTER(clang.Token)(), ctypes.c_uint()
        lib.clang_tokenize(self.tu, extent, ctypes.byref(array_start), ctypes.byref(count))
        if not count.value:
            return []
        try:
            fields = _token_fields(array_start, count.value)
            if fields is not None:
                found = self._tokens_from_fields(array_start, count.value, fields)
                if found is not None:
                    return found
            return self._tokens_one_by_one(array_start, count.value)
        finally:
            lib.clang_disposeTokens(self.tu, array_start, count)

    def _tokens_from_fields(self, array_start, count: int, fields) -> list[Token] | None:
        """The tokens from their (kind, raw location, byte length) fields; None if the locations do not map
        to the main file the way clang's own answer for the first and last token says."""
        kinds, locations, lengths = fields
        lib = _clang().conf.lib
        first = self._file_offset(lib.clang_getTokenLocation(self.tu, array_start[0]))
        last = self._file_offset(lib.clang_getTokenLocation(self.tu, array_start[count - 1]))
        if first is None or last is None:
            return None
        base = locations[0] - first
        if locations[-1] - base != last:
            return None
        data, char_of, found = self._data, self._char_of, []
        for kind, location, length in zip(kinds, locations, lengths):
            name = _TOKEN_KINDS.get(kind)
            if name is None:
                continue
            start = location - base
            spelling = data[start : start + length].decode("utf-8", "replace")
            if "\\" in spelling and kind in _NAMED_TOKEN_KINDS:
                spelling = _LINE_SPLICE.sub("", spelling)  # as clang_getTokenSpelling: a name's own, a literal's raw
            found.append(Token(spelling, name, char_of(start), char_of(start + length)))
        return found

    def _tokens_one_by_one(self, array_start, count: int) -> list[Token]:
        """The tokens through clang's accessors, where the array's layout is not the one `_token_fields` reads."""
        found = []
        for index in range(count):
            token = array_start[index]
            token._tu = self.tu  # what cindex's TokenGroup sets before its accessors are used
            name = _TOKEN_KINDS.get(token.kind.value)
            if name is None:
                continue
            extent = token.extent
            start, end = self.char_offset(extent.start), self.char_offset(extent.end)
            if start is not None and end is not None:
                found.append(Token(token.spelling, name, start, end))
        return found

    @cached_property
    def _token_starts(self) -> list[int]:
        return [token.start for token in self.tokens]

    def token_index(self, offset: int) -> int:
        """Index of the first token that starts at or after `offset`."""
        return bisect_left(self._token_starts, offset)

    def tokens_in(self, start: int, end: int) -> list[Token]:
        """The tokens that start in [start, end), where `start` starts a token (as a node's start does).

        From `tokens` once built; before that clang tokenizes just this range.
        """
        if "tokens" not in self.__dict__:
            clang = _clang()
            extent = clang.SourceRange.from_locations(self._location(start), self._location(end))
            return [token for token in self._tokenize(extent) if start <= token.start < end]
        return self.tokens[self.token_index(start) : bisect_left(self._token_starts, end)]

    def token_at(self, offset: int) -> Token | None:
        index = self.token_index(offset)
        if index < len(self.tokens) and self.tokens[index].start == offset:
            return self.tokens[index]
        return None

    def token_before(self, offset: int) -> Token | None:
        index = self.token_index(offset) - 1
        return self.tokens[index] if index >= 0 else None

    def token_after(self, offset: int) -> Token | None:
        """The first token that starts at or after `offset`."""
        index = self.token_index(offset)
        return self.tokens[index] if index < len(self.tokens) else None

    def starts_directive_line(self, token: Token) -> bool:
        """True when `token` sits on a preprocessor line (`#include`, `#define`, ...)."""
        line_start = self.source.text.rfind("\n", 0, token.start) + 1
        return self.source.text[line_start : token.start].lstrip().startswith("#") or (
            token.spelling == "#" and not self.source.text[line_start : token.start].strip()
        )

    # -- diagnostics ----------------------------------------------------------------------

    @cached_property
    def diagnostics(self) -> list[Diagnostic]:
        found = []
        for diagnostic in self.tu.diagnostics:
            offset = self.char_offset(diagnostic.location)
            if offset is not None:
                found.append(Diagnostic(offset, diagnostic.severity, diagnostic.spelling))
        return sorted(found, key=lambda d: d.offset)

    @cached_property
    def _error_offsets(self) -> list[int]:
        return [d.offset for d in self.diagnostics if d.severity >= ERROR]

    def errors_in(self, start: int, end: int) -> int:
        """How many errors clang reported in [start, end)."""
        return bisect_left(self._error_offsets, end) - bisect_left(self._error_offsets, start)

    def warned_vla(self, start: int, end: int) -> bool:
        """Clang's own opinion: it warned that a declaration in [start, end) is a VLA."""
        return any(start <= offset < end for offset in self._vla_warnings)

    @cached_property
    def _vla_warnings(self) -> list[int]:
        """Where clang warned of a VLA. Only these are placed, not every diagnostic: a file without its
        headers has thousands of errors, and placing each costs more than the rule's look."""
        found = []
        for diagnostic in self.tu.diagnostics:
            if diagnostic.option == VLA_OPTION:
                offset = self.char_offset(diagnostic.location)
                if offset is not None:
                    found.append(offset)
        return found

    def missing_include(self, diagnostic) -> str | None:
        """The header an `#include` names when `diagnostic` is clang's error that it was not found, else None:
        a preprocessor error that points at an include directive (the name read from the directive itself)."""
        location = diagnostic.location
        if location.file is not None and location.file.name == self._main_name:
            lines = self.source.text.splitlines()
            return _not_found(diagnostic, lines[location.line - 1] if 0 < location.line <= len(lines) else "")
        if location.file is not None and location.file.name == _PRELUDE_NAME:
            return None
        return missing_include(diagnostic)

    def error_signature(self) -> Counter:
        """Clang's error messages, without positions: what a rewrite must not add to.

        Without headers, missing headers do not count: no #include is ever
        found there, so an include a rule adds is an error by construction.
        With headers they count: an include the build cannot find is a
        broken rewrite.
        """
        return Counter(
            d.spelling for d in self.tu.diagnostics
            if d.severity >= ERROR and (self.with_headers or self.missing_include(d) is None)
        )

    # -- host or device ---------------------------------------------------------------------

    def where(self, node: Node) -> Where:
        """Host code, device code, or unknown, judged by every function around `node`."""
        functions = [a for a in node.ancestors() if a.kind in FUNCTION_KINDS]
        for function in functions:
            device = self._device_reason(function)
            if device:
                return Where(Place.DEVICE, function, device)
        for function in functions:
            unknown = self._unknown_reason(function)
            if unknown:
                return Where(Place.UNKNOWN, function, unknown)
        if not functions:
            return Where(Place.UNKNOWN, None, "not inside a function")
        return Where(Place.HOST, functions[0], "")

    def constants_around(self, offset: int) -> frozenset[str]:
        """Names that mean a constant at `offset` whatever its function declares, from the declarations clang built
        around it: the non-type parameters of every template there (C++ forbids declaring their names again in
        their scope), and the static `const` or `constexpr` members with an in-class initialiser (a constant
        expression, for an integral one) and unscoped enumerators of the innermost class (which its own scope
        finds before any base's or namespace's). A parameter or local of the same name hides a member: the
        caller looks for one."""
        names: set[str] = set()
        members: set[str] = set()
        children = self._declarations_here
        while True:
            inner = next((child for child in children if self._holds(child, offset)), None)
            if inner is None or inner.kind not in _SCOPE_KINDS:
                break
            inside = self._children_here(inner)
            names.update(child.spelling for child in inside if child.kind is CursorKind.TEMPLATE_NON_TYPE_PARAMETER)
            if inner.kind in _CLASS_KINDS:  # an inner class's replace an outer one's: its bases may hide those
                members = {child.spelling for child in inside if self._constant_member(child)}
                members.update(constant.spelling for child in inside
                               if child.kind is CursorKind.ENUM_DECL and not child.is_scoped_enum()
                               for constant in child.get_children() if constant.kind is CursorKind.ENUM_CONSTANT_DECL)
            if inner.kind in _FUNCTION_CURSOR_KINDS:
                break
            children = inside
        return frozenset(names | members)

    def _span(self, cursor) -> tuple[int, int] | None:
        """The characters of the main file that a cindex cursor covers; None where it is not in this file."""
        start, end = self.char_offset(cursor.extent.start), self.char_offset(cursor.extent.end)
        return None if start is None or end is None else (start, end)

    def _holds(self, cursor, offset: int) -> bool:
        span = self._span(cursor)
        return span is not None and span[0] <= offset < span[1]

    def _constant_member(self, cursor) -> bool:
        """A static data member declared `constexpr`, or `const` and not `inline`, with its initialiser in the
        class: C++ requires a constant expression there (an `inline` one may be initialised at run time)."""
        span = self._span(cursor) if cursor.kind is CursorKind.VAR_DECL else None
        if span is None:
            return False
        spellings = [token.spelling for token in self.tokens_in(*span)]
        named = spellings.index(cursor.spelling) if cursor.spelling in spellings else len(spellings)
        head = set(spellings[:named])
        constant = "constexpr" in head or ("const" in head and "inline" not in head)
        return constant and any(spelling in ("=", "{") for spelling in spellings[named:])

    def in_device_function(self, offset: int) -> bool:
        """Whether the innermost function declaration clang built around `offset` is `__global__` or `__device__`,
        looked up from the top-level declarations, without the tree (for places the tree has no node for)."""
        children, found = self._declarations_here, None
        while True:
            inner = next((child for child in children if self._holds(child, offset)), None)
            if inner is None or inner.kind not in _SCOPE_KINDS:
                break
            if inner.kind in _FUNCTION_CURSOR_KINDS:
                found = inner
                break
            children = self._children_here(inner)
        if found is None:
            return False
        attributes = (CursorKind.CUDAGLOBAL_ATTR, CursorKind.CUDADEVICE_ATTR)
        return any(child.kind in attributes for child in found.get_children())

    def _device_reason(self, function: Node) -> str:
        name = function.spelling or "lambda"
        attributes = {child.kind for child in function.children}
        if CursorKind.CUDAGLOBAL_ATTR in attributes:
            return f"inside `__global__` function `{name}`"
        if CursorKind.CUDADEVICE_ATTR in attributes:
            return f"inside `__device__` function `{name}`"
        if function.kind is CursorKind.LAMBDA_EXPR:
            head = self.tokens_in(function.start, _body_start(function))
            if any(token.spelling in _DEVICE_WORDS for token in head):
                return "inside a `__device__` lambda"
        return ""

    def _unknown_reason(self, function: Node) -> str:
        """Why the declaration's head cannot be trusted to say host: errors or unknown macros in it."""
        body_start = _body_start(function)
        name = function.spelling or "lambda"
        if self.errors_in(function.start, body_start):
            without = "" if self.with_headers else " without the project's headers"
            return f"the declaration of `{name}` does not parse{without}"
        if self.with_headers and function.kind is not CursorKind.LAMBDA_EXPR:
            return ""  # every macro in the head resolved: a __device__ or __global__ in it is an attribute above
        if function.kind is CursorKind.LAMBDA_EXPR:
            head = self.tokens_in(function.start, body_start)
            macros = [t.spelling for t in head if t.kind == "identifier" and t.spelling in self.macro_names]
            if macros:
                return f"the lambda's head uses the macro `{macros[0]}`, which may mark it `__device__`"
            return ""
        before = self.token_before(function.start)
        if before is None or before.spelling in (";", "}", "{", ":") or self.starts_directive_line(before):
            return ""
        if before.kind == "literal" and self._is_linkage_spec(before):
            return ""
        if before.spelling == "]" and self._closes_attribute(before):
            return ""
        return f"`{before.spelling}` before the declaration of `{name}` is an unresolved macro or attribute"

    def _is_linkage_spec(self, literal: Token) -> bool:
        previous = self.token_before(literal.start)
        return previous is not None and previous.spelling == "extern"

    def _closes_attribute(self, bracket: Token) -> bool:
        previous = self.token_before(bracket.start)
        return previous is not None and previous.spelling == "]"

    @cached_property
    def macro_names(self) -> frozenset[str]:
        """Macros used in the main file (from the detailed preprocessing record)."""
        return frozenset(n.spelling for n in self.macro_uses)

    def run_context(self, node: Node, function: Node | None) -> Context:
        """HOT inside a loop, ONCE in set-up functions, else CALL (the `context` of docs/json-schema.md)."""
        for ancestor in node.ancestors():
            if ancestor is function:
                break
            if ancestor.kind in LOOP_KINDS and not self.runs_once(ancestor):
                return Context.HOT
        named = [a for a in node.ancestors() if a.kind in FUNCTION_KINDS and a.spelling]
        if named and _ONE_TIME.search(named[0].spelling):
            return Context.ONCE
        return Context.CALL

    def runs_once(self, loop: Node) -> bool:
        """`do { ... } while (0)`: a macro's statement wrapper, not a loop."""
        if loop.kind is not CursorKind.DO_STMT:
            return False
        condition = loop.expressions()
        return bool(condition) and _integer_value(condition[-1].cursor) == 0

    # -- edits ------------------------------------------------------------------------------

    def has_include(self, header: str) -> bool:
        return re.search(rf"^[ \t]*#[ \t]*include[ \t]*[<\"]{re.escape(header)}[>\"]", self.source.text, re.M) is not None

    def include_edit(self, header: str) -> Edit | None:
        """An `#include <header>` after the file's last unconditional include; None if present."""
        if self.has_include(header):
            return None
        text = self.source.text
        newline = "\r\n" if "\r\n" in text else "\n"
        offset = _include_point(text, self.source.line_starts)
        return Edit(offset, offset, f"#include <{header}>{newline}")

    def indentation(self, offset: int) -> str:
        line_start = self.source.line_starts[self.line_of(offset) - 1]
        line = self.source.text[line_start:offset]
        return line[: len(line) - len(line.lstrip())]

    def newline(self) -> str:
        return "\r\n" if "\r\n" in self.source.text else "\n"


# CXTokenKind: punctuation, keyword, identifier, literal (4, comments, left out).
_TOKEN_KINDS = {0: "punctuation", 1: "keyword", 2: "identifier", 3: "literal"}
_NAMED_TOKEN_KINDS = frozenset({1, 2})
_LINE_SPLICE = re.compile(r"\\[ \t]*(?:\r\n|\n|\r)")


def _token_fields(array_start, count: int):
    """(kinds, raw locations, byte lengths) of clang_tokenize's CXToken array, read as its 32-bit words.

    A CXToken is `unsigned int_data[4]; void *ptr_data`, and libclang fills
    int_data with the kind, the location's raw encoding and the length in
    bytes (CIndex.cpp, getTokens); a main file's raw locations are its byte
    offsets plus one base. None where the struct is not that size; the
    caller checks the base against clang's answer for two tokens.
    """
    size = ctypes.sizeof(_clang().Token)
    if size % 4 or size < 16:
        return None
    words = array.array("I", ctypes.string_at(array_start, count * size))
    if words.itemsize != 4:
        return None
    step = size // 4
    return words[0::step], words[1::step], words[2::step]


def _implicit_instantiation(cursor) -> bool:
    """A function a template's use instantiated, which a parse that loads a precompiled header lists among the
    translation unit's children (after the file's own declarations): it spans the tail of its template, where an
    explicit specialization has a range of its own."""
    if cursor.kind not in _FUNCTION_CURSOR_KINDS:
        return False
    template = cursor.specialized_template
    if template is None:
        return False
    extent, pattern = cursor.extent, template.extent
    return pattern.start.offset <= extent.start.offset and extent.end.offset == pattern.end.offset


def _address(pointer) -> int | None:
    return ctypes.cast(pointer, ctypes.c_void_p).value


def _body_start(function: Node) -> int:
    body = function.body()
    return body.start if body is not None else function.end


_INCLUDE = re.compile(r"^\s*#\s*include\b")
_GUARD = re.compile(r"^\s*#\s*ifndef\s+(\w+)\s*$")


def _include_point(text: str, line_starts: list[int]) -> int:
    """Where a new #include goes: after the last include outside any #if, or after the include guard."""
    lines = text.splitlines(keepends=True)
    guard_depth, guard_end = _include_guard(lines)
    depth, last_include, line_index = 0, None, 0
    for line_index, line in enumerate(lines):
        if CONDITIONAL_OPEN.match(line):
            depth += 1
        elif CONDITIONAL_CLOSE.match(line):
            depth -= 1
        elif _INCLUDE.match(line) and depth == guard_depth:
            last_include = line_index
    if last_include is not None:
        return _start_of_line(text, line_starts, last_include + 1)
    if guard_end is not None:
        return _start_of_line(text, line_starts, guard_end + 1)
    return _start_of_line(text, line_starts, _first_code_line(lines))


def _start_of_line(text: str, line_starts: list[int], index: int) -> int:
    return line_starts[index] if index < len(line_starts) else len(text)


def _include_guard(lines: list[str]) -> tuple[int, int | None]:
    """(1, index of `#define GUARD`) for a classic include guard, else (0, None)."""
    directives = [(i, line) for i, line in enumerate(lines) if line.lstrip().startswith("#")]
    if len(directives) >= 2:
        (_, first), (second_index, second) = directives[0], directives[1]
        match = _GUARD.match(first)
        if match and re.match(rf"^\s*#\s*define\s+{match.group(1)}\b", second):
            return 1, second_index
    return 0, None


def _first_code_line(lines: list[str]) -> int:
    """The first line after leading blank lines and comments."""
    in_block = False
    for index, line in enumerate(lines):
        stripped = line.strip()
        if in_block:
            in_block = "*/" not in stripped
            continue
        if not stripped or stripped.startswith("//"):
            continue
        if stripped.startswith("/*"):
            in_block = "*/" not in stripped
            continue
        return index
    return len(lines)


def _offset_maps(text: str, data: bytes):
    """Two functions: UTF-8 byte offsets of `text` (`data`) to character offsets, and back."""
    if len(data) == len(text):
        same = lambda offset: offset  # noqa: E731 - ASCII: both are the identity
        return same, same
    starts = []  # the byte offset of each character, then of the end
    position = 0
    for character in text:
        starts.append(position)
        position += len(character.encode("utf-8"))
    starts.append(position)
    return (lambda offset: bisect_right(starts, offset) - 1), (lambda offset: starts[offset])


@cache
def _clang():
    """Import libclang's bindings once, without the bundled libc++ (it clashes: TOOLCHAIN.md)."""
    import clang.cindex as cindex

    if hasattr(cindex.Config, "libcxx_dir"):
        cindex.Config.libcxx_dir = None
    return cindex


@cache
def _index():
    index = _clang().Index.create()
    # Dispose of them while cindex still can: at interpreter exit its globals are gone first (last in, first out).
    atexit.register(_index.cache_clear)
    atexit.register(_Spare.release)
    return index


@cache
def _local_index():
    """The index of parses that load a precompiled header: their translation unit's children are the file's own
    declarations (and those of headers outside the precompiled part), not the 100,000 of torch's headers that
    `nodes` would otherwise step over one by one (2.4 s a file)."""
    index = _clang().Index.create(excludeDecls=True)
    atexit.register(_local_index.cache_clear)
    return index


def _integer_value(cursor) -> int | None:
    """clang's constant evaluation of an integer (or bool) expression; None when it is not a constant."""
    evaluate = _evaluation_functions()
    result = evaluate.evaluate(cursor)
    if not result:
        return None
    try:
        return evaluate.as_long_long(result) if evaluate.kind(result) == 1 else None  # CXEval_Int
    finally:
        evaluate.dispose(result)


@dataclass(frozen=True)
class _Evaluation:
    evaluate: object
    kind: object
    as_long_long: object
    dispose: object


@cache
def _evaluation_functions() -> _Evaluation:
    """clang_Cursor_Evaluate and its result's accessors, which cindex does not wrap."""
    clang = _clang()
    lib = clang.conf.lib
    evaluate, kind = lib.clang_Cursor_Evaluate, lib.clang_EvalResult_getKind
    as_long_long, dispose = lib.clang_EvalResult_getAsLongLong, lib.clang_EvalResult_dispose
    evaluate.argtypes, evaluate.restype = [clang.Cursor], ctypes.c_void_p
    kind.argtypes, kind.restype = [ctypes.c_void_p], ctypes.c_int
    as_long_long.argtypes, as_long_long.restype = [ctypes.c_void_p], ctypes.c_longlong
    dispose.argtypes, dispose.restype = [ctypes.c_void_p], None
    return _Evaluation(evaluate, kind, as_long_long, dispose)


@cache
def _get_file_location():
    """clang_getFileLocation, this module's own copy of it: its file comes back as a plain address (c_void_p),
    compared as an int, where cindex's pointer type needs a cast per call."""
    clang = _clang()
    function = clang.conf.lib["clang_getFileLocation"]  # a new function object, not cindex's
    function.argtypes = [
        clang.SourceLocation, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint),
        ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
    ]
    function.restype = None
    return function


@cache
def _get_expansion_location():
    """clang_getExpansionLocation (cindex's `location.file`), with the file as a plain address like
    `_get_file_location`'s."""
    clang = _clang()
    function = clang.conf.lib["clang_getExpansionLocation"]
    function.argtypes = _get_file_location().argtypes
    function.restype = None
    return function


class _MainFileOffsets:
    """Where a location falls in the main file, asked of libclang into out-parameters made once per unit
    (the tree asks it twice for every cursor)."""

    def __init__(self, main_file: int | None):
        self.main_file = main_file
        self._file, self._offset = ctypes.c_void_p(), ctypes.c_uint()
        # byref keeps the line and column it points to alive
        self._out = (ctypes.byref(self._file), ctypes.byref(ctypes.c_uint()), ctypes.byref(ctypes.c_uint()),
                     ctypes.byref(self._offset))

    def of(self, location, function) -> int | None:
        """The byte offset of `location` in the main file as `function` resolves it, or None if elsewhere."""
        function(location, *self._out)
        file = self._file.value
        return self._offset.value if file is not None and file == self.main_file else None


@cache
def _cursor_kind(kind_id: int) -> CursorKind:
    return CursorKind.from_id(kind_id)


def _visitor(into: list):
    """A clang_visitChildren callback that appends each child cursor to `into` and does not descend: cindex's
    `get_children` without its per-child null check (the cursors it is given never are)."""

    def visit(child, _parent, _data) -> int:
        into.append(child)
        return 1  # CXChildVisit_Continue

    return _clang().cursor_visit_callback(visit)


def _calls(cursor, names: frozenset[str]) -> bool:
    """Whether a call spelled as one of NAMES is anywhere under `cursor`: one walk inside libclang that stops at
    the first, with the spelling asked only of calls."""
    clang = _clang()
    spelling_of, text_of, call = clang.conf.lib.clang_getCursorSpelling, clang._CXString.from_result, _CALL_EXPR_ID
    found: list = []

    def visit(child, _parent, _data) -> int:
        if child._kind_id == call and text_of(spelling_of(child)) in names:
            found.append(child)
            return 0  # CXChildVisit_Break: the whole walk ends
        return 2  # CXChildVisit_Recurse

    clang.conf.lib.clang_visitChildren(cursor, clang.cursor_visit_callback(visit), None)
    return bool(found)


_CALL_EXPR_ID = CursorKind.CALL_EXPR.value


def _children(cursor) -> list:
    """The child cursors of `cursor` (their `_tu` is for the caller to set on the ones it keeps)."""
    children: list = []
    _clang().conf.lib.clang_visitChildren(cursor, _visitor(children), None)
    return children


@cache
def _prelude() -> bytes:
    return PRELUDE.read_bytes()


def _parse(data: bytes, rel: str, owner: "CppUnit"):
    """A translation unit of `data` for `owner`: the spare one reparsed when it is free, else a new one.

    Half of a fresh parse of a typical file is clang setting itself up (its
    driver, the CUDA target, the compiler instance), which a reparse of an
    existing translation unit skips: 4.9 -> 2.9 ms a file on apex.
    tests/cpp/test_cpp_frontend.py checks that both give the same tree,
    tokens and diagnostics.
    """
    try:
        clang = _clang()
    except ImportError:
        raise CppParseError(FileError(rel, "libclang is not installed (pip install libclang-ng)")) from None
    unsaved = [(_MAIN_NAME, data), (_PRELUDE_NAME, _prelude())]
    prelude = _precompiled_prelude()
    spare = _Spare.take()
    if spare is not None:
        try:
            with _parsing_on_the_calling_thread():
                call_with_large_stack(spare.reparse, unsaved)
            _Spare.lend(spare, owner)
            return spare
        except clang.TranslationUnitLoadError:
            _Spare.release()  # a failed reparse leaves the unit unusable; a fresh parse says what failed

    def parse(precompiled: str | None):
        # Not `_local_index`, which leaves out declarations from a precompiled file: a redefinition in this file
        # of one of the prelude's (a project's stand-in for a CUDA type) would be left out with them.
        arguments = PARSE_ARGS if precompiled is None else (*_LANGUAGE_ARGS, "-include-pch", precompiled)
        return _index().parse(
            _MAIN_NAME, args=list(arguments), unsaved_files=unsaved, options=_DETAILED_PROCESSING_RECORD | _KEEP_GOING,
        )

    try:
        with _parsing_on_the_calling_thread():
            try:
                unit = call_with_large_stack(parse, prelude)
            except clang.TranslationUnitLoadError:
                if prelude is None:
                    raise
                _Prelude.refused = True  # a precompiled prelude clang refuses: this process reads the text from now on
                _precompiled_prelude.cache_clear()
                unit = call_with_large_stack(parse, None)
    except clang.TranslationUnitLoadError as error:
        raise CppParseError(FileError(rel, f"libclang could not parse the file: {error}")) from None
    _Spare.lend(unit, owner)  # a spare still in use stays with its own CppUnit
    return unit


class _Prelude:
    refused = False  # clang refused this process's precompiled prelude once: parse the text


@cache
def _precompiled_prelude() -> str | None:
    """The prelude, precompiled once per machine (the user's cache folder, by libclang's version, the prelude's text
    and the arguments), or None where it cannot be: every header-free parse then reads the prelude's text.

    Reading its 21 KB was most of a header-free parse: 4.0 of 4.4 ms a file
    on apex, against 1.3 of 2.6 ms loading it precompiled (docs/benchmarks.md).
    Building it takes a few milliseconds; a process that finds none builds
    it and renames it into place, so concurrent workers need no lock.
    """
    if _Prelude.refused:
        return None
    from optpatch.user_cache import cache_dir

    prelude = _prelude()
    key = hashlib.sha256("\0".join((libclang_version(), *_LANGUAGE_ARGS, "")).encode() + prelude).hexdigest()[:24]
    path = cache_dir() / "prelude" / f"{key}.pch"
    if path.is_file():
        return str(path)
    options = _DETAILED_PROCESSING_RECORD | _INCOMPLETE | _FOR_SERIALIZATION
    clang = _clang()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _parsing_on_the_calling_thread():
            unit = _index().parse(_PRELUDE_NAME, args=list(_LANGUAGE_ARGS), unsaved_files=[(_PRELUDE_NAME, prelude)],
                                  options=options)
        if any(d.severity >= ERROR for d in unit.diagnostics):
            return None
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{key}.", suffix=".tmp")
        os.close(handle)
        try:
            unit.save(temporary)
            os.replace(temporary, path)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        _forget_old_preludes(path)
    except (OSError, clang.TranslationUnitLoadError, clang.TranslationUnitSaveError):
        return None
    return str(path)


def _forget_old_preludes(kept: Path) -> None:
    """Other versions' precompiled preludes (half a megabyte each) unused for a month go when a new one is built,
    and a temporary one a day old (its writer was killed before the rename)."""
    from optpatch.cpp_pch import STALE_AFTER_DAYS

    now = time.time()
    for other in kept.parent.iterdir():
        age = now - (STALE_AFTER_DAYS * 86400 if other.suffix == ".pch" else 86400)
        try:
            if other != kept and other.stat().st_atime < age and other.stat().st_mtime < age:
                other.unlink()
        except OSError:
            pass  # another process took it first


@cache
def libclang_version() -> str:
    """clang_getClangVersion, which cindex does not wrap: a precompiled header is only for the parser that wrote it."""
    clang = _clang()
    function = clang.conf.lib.clang_getClangVersion
    function.argtypes, function.restype = [], clang._CXString
    return clang._CXString.from_result(function())


def _header_arguments(flags: HeaderFlags) -> list[str]:
    """libclang's arguments for a parse with headers: the language, then the file's own flags."""
    if flags.language == "cuda":
        language = ["-x", "cuda", "--cuda-host-only", "-nocudalib", f"--cuda-path={flags.cuda_path}"]
        language += ["-Wno-unknown-cuda-version", "-idirafter", _FALLBACK_DIR]
    else:
        language = ["-x", "c++"]
    return [*language, "-ferror-limit=0", *flags.arguments]


def _parse_with_headers(source: SourceFile, main: str, flags: HeaderFlags, preamble: Preamble | None):
    """The translation unit of `source` parsed with its headers, and the inputs it read; HeaderParseError if
    the parse cannot stand (an #include not found, libclang failing). Without KeepGoing: clang stops at the
    first missing #include, which makes the parse unusable anyway."""
    arguments = _header_arguments(flags)
    text = source.text
    local = _local_headers(main, flags)
    missing = _missing_local_include(text, local)
    if missing:  # said before any header is parsed: building a precompiled header first would cost seconds
        raise MissingHeader(missing, main)
    if preamble is None or not preamble.fits(text):
        preamble = preamble_of(text, local)
    header = None
    root = _root_of(source)
    if preamble is not None:
        header = _precompiled(preamble, main, root, arguments, flags)
        text = preamble.blank(text)
    data = text.encode("utf-8")
    try:
        unit = _parse_file(main, data, arguments, header)
    except _clang().TranslationUnitLoadError:
        if header is None:
            raise HeaderParseError("libclang could not parse the file with its headers") from None
        discard(header)  # clang refused it: its headers changed after the manifest was checked
        header = _precompiled(preamble, main, root, arguments, flags)
        unit = _parse_file(main, data, arguments, header)
    lines = text.splitlines()
    for diagnostic in unit.diagnostics:
        if _in_file(diagnostic, main):
            line = diagnostic.location.line
            name = _not_found(diagnostic, lines[line - 1] if line <= len(lines) else "")
        else:
            name = missing_include(diagnostic)
        if name is not None:
            includer = diagnostic.location.file.name if diagnostic.location.file else main
            _remember_deep(flags, unit, main, lines, name, includer)
            raise MissingHeader(name, includer)
    return unit, _inputs(source, unit, header)


def _precompiled(preamble: Preamble, main: str, root: str, arguments: list[str], flags: HeaderFlags) -> PrecompiledHeader:
    try:
        return precompiled(preamble, os.path.dirname(main), root, tuple(arguments), libclang_version(),
                           _precompile(arguments), _search_folders(flags))
    except PrecompileError as error:
        if error.missing is None:
            raise HeaderParseError(str(error)) from None
        if error.via is not None and error.headers is not None:
            remember(flags.digest, DeepMissing(error.via, error.missing), error.headers)
        raise MissingHeader(error.missing, error.includer or main) from None


def precompiled_header_readiness(source: SourceFile, flags: HeaderFlags, run: str) -> Readiness:
    """Whether a parse of `source` with `flags` would first have to build a precompiled header (READY: no, or the
    file has no heavy includes to precompile), and whether a run other than `run` put that off."""
    found = _precompiled_header_of(source, flags)
    return readiness(*found, _search_folders(flags), run) if found is not None else Readiness.READY


def put_off_precompiled_header(source: SourceFile, flags: HeaderFlags, run: str) -> str | None:
    """Note that `run` did not build the file's precompiled header (the next run that wants it does); the
    marker's path."""
    found = _precompiled_header_of(source, flags)
    return put_off(*found, run) if found is not None else None


def _precompiled_header_of(source: SourceFile, flags: HeaderFlags):
    """The arguments that name the file's precompiled header in the cache, as `_parse_with_headers` gives them;
    None when it has none."""
    main = str(Path(source.path).absolute())
    preamble = file_preamble(source.text, main, flags)
    if preamble is None:
        return None
    return preamble, os.path.dirname(main), _root_of(source), tuple(_header_arguments(flags)), libclang_version()


def _remember_deep(flags: HeaderFlags, unit, main: str, lines: list[str], header: str, includer: str) -> None:
    """Remember a header missing inside a header the file includes, under that include (cpp_missing_headers.py)."""
    if includer == main:
        return
    via = _top_include(unit, lines)
    if via is not None:
        read = [i.include.name for i in unit.get_includes() if i.include is not None]
        remember(flags.digest, DeepMissing(via, header), record_header_set(read))


def _top_include(unit, lines: list[str]) -> str | None:
    """The include of the main file clang was inside when it stopped: the last one it entered, as spelled."""
    last = None
    for inclusion in unit.get_includes():
        if inclusion.depth == 1:
            last = inclusion
    if last is None or not 0 < last.location.line <= len(lines):
        return None
    match = _INCLUDE_LINE.match(lines[last.location.line - 1])
    return match.group(2).strip() if match else None


def _search_folders(flags: HeaderFlags) -> tuple[str, ...]:
    """Every folder an `#include <...>` is looked for in with these flags (and the CUDA toolkit's)."""
    folders = _quoted_include_folders(flags)
    if flags.language == "cuda" and flags.cuda_path:
        folders += (os.path.join(flags.cuda_path, "include"),)
    return folders


def missing_include(diagnostic) -> str | None:
    """The header an `#include` of a file on disk names, when `diagnostic` says clang did not find it."""
    location = diagnostic.location
    if location.file is None or not location.line:
        return None
    return _not_found(diagnostic, _line_on_disk(location.file.name, location.line))


def _not_found(diagnostic, line: str) -> str | None:
    if diagnostic.severity < ERROR or diagnostic.category_name != PREPROCESSOR_CATEGORY:
        return None
    match = _INCLUDE_LINE.match(line)
    return match.group(2).strip() if match else None


def _in_file(diagnostic, name: str) -> bool:
    location = diagnostic.location
    return location.file is not None and location.file.name == name and location.line > 0


def _line_on_disk(path: str, number: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as stream:
            for index, line in enumerate(stream, 1):
                if index == number:
                    return line
    except OSError:
        pass
    return ""


def first_missing_include(source: SourceFile, flags: HeaderFlags) -> MissingHeader | None:
    """The first include of the file that these flags cannot find, asked of clang with `__has_include` in one
    tiny translation unit (milliseconds): the file's unconditional includes, the angle includes of the project
    headers it reaches through quoted ones, and the deep missing headers remembered for this include set under
    an include the file has (cpp_missing_headers.py). None when every one is found."""
    main = str(Path(source.path).absolute())
    asked = _probed_includes(source.text, main, _local_headers(main, flags))
    deep = remembered(flags.digest)
    asked += [("<", deep[name].header, name) for _bracket, name, _includer in asked if name in deep]
    if not asked:
        return None
    probe_name = os.path.join(os.path.dirname(main), ".optpatch-include-probe.h")
    lines = []
    for bracket, name, _includer in asked:
        spelled = f"<{name}>" if bracket == "<" else f'"{name}"'
        lines += [f"#if !__has_include({spelled})", "#error", "#endif"]
    arguments = _header_arguments(flags)
    if flags.language == "cuda":  # no CUDA wrapper headers: nothing is included, only looked for
        arguments += ["-nocudainc", "-idirafter", os.path.join(flags.cuda_path or "/", "include")]
    data = ("\n".join(lines) + "\n").encode()

    def parse():
        return _index().parse(probe_name, args=arguments, unsaved_files=[(probe_name, data)], options=0)

    try:
        with _parsing_on_the_calling_thread():
            unit = call_with_large_stack(parse)
    except _clang().TranslationUnitLoadError:
        return None  # the parse with headers will say what is wrong
    failed = sorted({d.location.line for d in unit.diagnostics if d.severity >= ERROR and d.location.line % 3 == 2})
    if not failed:
        return None
    _bracket, name, includer = asked[(failed[0] - 2) // 3]
    return MissingHeader(name, includer)


_QUOTE = '"'  # an include in quotes, which is looked for in the including file's folder first


def include_sources(source: SourceFile, flags: HeaderFlags) -> tuple[str, ...]:
    """For -v: each unconditional include of the file, and where these flags find it (folder and origin)."""
    folder = os.path.dirname(str(Path(source.path).absolute()))
    return tuple(f"{name}: {flags.source_of(name, folder if bracket == _QUOTE else '')}"
                 for bracket, name in _unconditional_includes(source.text))


def _probed_includes(text: str, main: str, local: LocalHeaders) -> list[tuple[str, str, str]]:
    """(bracket, name, includer) of the file's unconditional includes, then the angle includes of the project
    headers its quoted includes reach (read as text, at most LocalHeaders.MAX_READ of them)."""
    own = _unconditional_includes(text)
    found = [(bracket, name, main) for bracket, name in own]
    queue = [local.find(name) for bracket, name in own if bracket == '"']
    seen: set[str] = set()
    while queue and len(seen) < LocalHeaders.MAX_READ:
        path = queue.pop(0)
        if path is None or path in seen:
            continue
        seen.add(path)
        try:
            header_text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for bracket, name in _unconditional_includes(header_text):
            if bracket == "<":
                found.append((bracket, name, path))
            else:
                queue.append(local.find(name, os.path.dirname(path)))
    return list(dict.fromkeys(found))


def _unconditional_includes(text: str) -> list[tuple[str, str]]:
    """(bracket, name) of the includes outside any #if (an include guard's aside)."""
    lines = text.splitlines()
    guard_depth, _ = _include_guard(lines)
    depth, found = 0, []
    for line in lines:
        if CONDITIONAL_OPEN.match(line):
            depth += 1
        elif CONDITIONAL_CLOSE.match(line):
            depth -= 1
        elif depth <= guard_depth:
            match = _INCLUDE_LINE.match(line)
            if match:
                found.append((match.group(1), match.group(2).strip()))
    return found


_QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def _quoted_include_folders(flags: HeaderFlags) -> tuple[str, ...]:
    """Where a `#include "..."` is looked for after the including file's folder."""
    words = flags.arguments
    folders = [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-I", "-iquote", "-isystem", "-idirafter")]
    return tuple(folders + [word[2:] for word in words if word.startswith("-I") and len(word) > 2])


def file_preamble(text: str, main: str, flags: HeaderFlags) -> Preamble | None:
    """The precompiled part of the file at `main` parsed with `flags`: its leading includes up to the last that
    reaches a heavy library, directly or through the project's own headers."""
    return preamble_of(text, _local_headers(main, flags))


def _local_headers(main: str, flags: HeaderFlags) -> LocalHeaders:
    return LocalHeaders(os.path.dirname(main), _quoted_include_folders(flags))


def _missing_local_include(text: str, local: LocalHeaders) -> str | None:
    """A `#include "..."` outside any #if that neither the file's folder nor an include folder of the flags holds."""
    depth = 0
    for line in text.splitlines():
        if CONDITIONAL_OPEN.match(line):
            depth += 1
        elif CONDITIONAL_CLOSE.match(line):
            depth -= 1
        elif depth == 0:
            match = _QUOTED_INCLUDE.match(line)
            if match and local.find(match.group(1)) is None:
                return match.group(1)
    return None


def _parse_file(main: str, data: bytes, arguments: list[str], header: PrecompiledHeader | None):
    unsaved = [(main, data), *_FALLBACK_HEADERS]
    if header is not None:
        arguments = [*arguments, "-include-pch", header.path]

    index = _index() if header is None else _local_index()

    def parse():  # without KeepGoing: a missing #include stops clang, and the parse is not used then
        return index.parse(main, args=arguments, unsaved_files=unsaved, options=_DETAILED_PROCESSING_RECORD)

    with _parsing_on_the_calling_thread():
        return call_with_large_stack(parse)


def _precompile(arguments: list[str]):
    """The builder `cpp_pch.precompiled` calls: parse the preamble with function bodies skipped, save it."""

    def build(source_name: str, text: str, output: str) -> list[str]:
        unsaved = [(source_name, text.encode("utf-8")), *_FALLBACK_HEADERS]
        # Without KeepGoing: a missing #include is fatal, and clang stops there instead of parsing on.
        options = _DETAILED_PROCESSING_RECORD | _INCOMPLETE | _FOR_SERIALIZATION | _SKIP_FUNCTION_BODIES

        def parse():
            return _index().parse(source_name, args=arguments, unsaved_files=unsaved, options=options)

        try:
            with _parsing_on_the_calling_thread():
                unit = call_with_large_stack(parse)
        except _clang().TranslationUnitLoadError as error:
            raise PrecompileError(f"libclang could not parse the file's includes: {error}") from None
        errors = [d for d in unit.diagnostics if d.severity >= ERROR]
        if errors:
            raise _precompile_error(unit, errors[0], source_name, text)
        try:
            unit.save(output)
        except _clang().TranslationUnitSaveError as error:
            raise PrecompileError(f"libclang could not save the precompiled header: {error}") from None
        return [inclusion.include.name for inclusion in unit.get_includes() if inclusion.include is not None]

    return build


def _precompile_error(unit, error, source_name: str, text: str) -> PrecompileError:
    """What stopped a precompiled header: the missing header and the include of the preamble that led to it, or
    clang's first error; with the headers read up to there, which the failure is remembered with."""
    lines = text.splitlines()
    read = record_header_set(i.include.name for i in unit.get_includes() if i.include is not None)
    place = error.location.file.name if error.location.file else source_name
    if place == source_name:
        name = _not_found(error, lines[error.location.line - 1] if 0 < error.location.line <= len(lines) else "")
    else:
        name = missing_include(error)
    if name is None:
        return PrecompileError(f"{error.spelling} (in {place})", headers=read)
    via = None if place == source_name else _top_include(unit, lines)
    return PrecompileError(f"'{name}' not found (included from {place})", missing=name, includer=place, via=via,
                           headers=read)


def _inputs(source: SourceFile, unit, header: PrecompiledHeader | None) -> tuple:
    """The repository's headers by hash, the others as one set checked by stat (analysis_inputs.py)."""
    root = _root_of(source)
    read = {inclusion.include.name for inclusion in unit.get_includes() if inclusion.include is not None}
    read.discard(str(Path(source.path).absolute()))
    local = sorted(p for p in read if _is_under(p, root))
    outside = sorted(p for p in read if not _is_under(p, root) and not p.startswith(_VIRTUAL_DIR))
    inputs: list = [FileInput.of(path) for path in local]
    if header is not None:
        inputs.append(header.headers)
    if outside:
        inputs.append(record_header_set(outside))
    return tuple(inputs)


def _root_of(source: SourceFile) -> str:
    """The scanned root: the file's path without its relative part."""
    path = Path(source.path).absolute()
    depth = len(Path(source.rel).parts)
    return str(path.parents[depth - 1]) if depth >= 1 else str(path.parent)


def _is_under(path: str, root: str) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)


class _Spare:
    """The one translation unit a process keeps for reparsing, and the `CppUnit` using it.

    A reparse replaces the tree in place, so it waits until that `CppUnit`
    is gone: rules reach cursors only through their unit. (Its nodes may
    outlive it for a while in reference cycles, unreachable.) A forked
    worker parses afresh before it reuses anything.
    """

    unit = None
    pid = 0
    owner: "weakref.ref | None" = None

    @classmethod
    def take(cls):
        if cls.unit is None or cls.pid != os.getpid() or cls.owner() is not None:
            return None
        return cls.unit

    @classmethod
    def lend(cls, unit, owner: "CppUnit") -> None:
        cls.unit, cls.pid, cls.owner = unit, os.getpid(), weakref.ref(owner)

    @classmethod
    def release(cls) -> None:
        cls.unit = cls.owner = None


@contextmanager
def _parsing_on_the_calling_thread():
    """libclang parses on a thread of its own with an 8 MiB stack unless LIBCLANG_NOTHREADS is set."""
    previous = os.environ.get("LIBCLANG_NOTHREADS")
    os.environ["LIBCLANG_NOTHREADS"] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["LIBCLANG_NOTHREADS"]
        else:
            os.environ["LIBCLANG_NOTHREADS"] = previous


def new_errors(original: SourceFile, rewritten: SourceFile) -> list[str]:
    """Error messages the rewritten file has and the original did not: a rewrite must add none."""
    return added_errors(CppUnit(original), CppUnit(rewritten))


def added_errors(original: CppUnit, rewritten: CppUnit) -> list[str]:
    """`new_errors` of two parsed units."""
    return sorted(rewritten.error_signature() - original.error_signature())
