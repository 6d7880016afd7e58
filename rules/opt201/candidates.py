"""Where OPT201's candidates are: the array declarations it judges, and those the header-free parse dropped.

A variable-length array makes clang warn, so most files are judged from
that warning and a look at each `name[` of the text that may start a
declarator, without the whole tree (`array_declarations`). A `name[` that
reads as a host declaration clang did not build (`hidden_declaration`) asks
for the file's headers.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from functools import cached_property

from optpatch.rule.cpp import CppUnit, CursorKind, Node, TypeKind

from .bound import ARRAY_KINDS, NESTED_ARRAY_KINDS, bound_of, prove_runtime
from .uses import UNEVALUATED_WORDS

# A name right before `[`: every array declarator spells one (`float a[n]`, `T a[2][n]`).
# `name[` read backwards, in the reversed text: `[`, blanks, then the name's characters, the last of them (its first)
# a letter or `_`. Backwards, the search starts only at a `[`; forwards (`\b([A-Za-z_]\w*)\s*\[`) it started at every
# word: CUTLASS's 18 MB of headers in 0.02 s against 0.48 s, the same matches.
_BRACKET_AFTER_NAME_REVERSED = re.compile(r"\[\s*+(\w++)(?<=[A-Za-z_])")
# `[16]`, `[0x10u]`: a declarator with such a bound declares a constant-size array, whatever its element type,
# in the text or in a macro body (`#define HOST char hostname[1024]`), so it is never a candidate.
_CONSTANT_BOUND = re.compile(r"[ \t]*(?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlLzZ]*[ \t]*\]")
# What can silence clang's VLA warning, which the fast path relies on: a diagnostic pragma (`#pragma clang
# diagnostic ignored`, `_Pragma`, `__pragma`, the digraph `%:pragma`) or a GNU line marker whose flag makes
# what follows a system header (`# 1 "x.h" 3`). Matched loosely: a false match costs only the walk.
_LINE_MARKER = re.compile(r"(?:#|%:)[ \t]*\d")
# A line with a `#` before a `pragma`, with its continuation lines. The first `#` is taken, and the first `pragma`
# after it: a line of many `#` is read once, not once for each (the same lines, in linear time).
_PRAGMA_LINE = re.compile(r"^[^\n#]*#[^\n]*?pragma(?:[^\n]*\\\r?\n)*[^\n]*", re.M)


def _may_silence_the_vla_warning(text: str) -> bool:
    if _LINE_MARKER.search(text):
        return True
    if "diagnostic" not in text:
        return False
    if "_Pragma" in text or "__pragma" in text or "%:" in text:
        return True
    # A block comment may carry a directive over to the next line.
    return any("diagnostic" in line or "/*" in line for line in _PRAGMA_LINE.findall(text))


def _names_before_brackets(text: str) -> list[tuple[int, int, int]]:
    """Each `name[` of the text, in order: where the name starts and ends, and where the bound starts."""
    size = len(text)
    found = [(size - match.end(1), size - match.start(1), size - match.start())
             for match in _BRACKET_AFTER_NAME_REVERSED.finditer(text[::-1])]
    found.reverse()
    return found


def array_declarations(unit: CppUnit) -> list[Node]:
    """Every VAR_DECL of variable or template-dependent size that `examine` may have a verdict on.

    The plain way walks `unit.nodes`, a Python mirror of every cursor: ten
    times the cost of the parse. Most files need none of it: a variable-length
    array makes clang warn (its `-Wvla-cxx-extension` warning), and a template-dependent one matters
    only when its bound is provably a run-time value. So, unless clang warned
    or a pragma or line marker may have silenced it, each `name[` of the text
    that may be a declarator and has no integer literal for a bound is looked
    up with `cursor_at`, and a dependent declaration found there is judged on its
    own subtree; the whole tree is built only when one may be fixed or kept,
    or when a `name[` lies in a macro body (its expansions are declared where
    the macro is used, which no `name[` of the text shows).
    tests/cpp/test_opt201_fast_path.py checks that both ways agree.
    """
    text = unit.source.text
    if unit.warned_vla(0, len(text)) or _may_silence_the_vla_warning(text) or has_long_lines(text):
        return all_array_declarations(unit)
    for start, _, bound in _names_before_brackets(text):
        if _never_declared_here(text, start) or _CONSTANT_BOUND.match(text, bound):
            continue
        cursor = unit.cursor_at(start)
        if cursor is not None and cursor.kind is CursorKind.MACRO_DEFINITION:
            return all_array_declarations(unit)  # a macro body may declare an array wherever it is used
        if cursor is None or cursor.kind is not CursorKind.VAR_DECL or cursor.type.kind not in ARRAY_KINDS:
            continue
        if cursor.type.kind is not TypeKind.DEPENDENTSIZEDARRAY or _may_have_verdict(unit, unit.detached(cursor)):
            return all_array_declarations(unit)
    return []


def all_array_declarations(unit: CppUnit) -> list[Node]:
    return [node for node in unit.nodes if node.kind is CursorKind.VAR_DECL and node.type_kind in ARRAY_KINDS]


def _may_have_verdict(unit: CppUnit, declaration: Node | None) -> bool:
    """False when `examine` would say nothing of this dependent-size declaration (its first returns)."""
    if declaration is None:
        return True
    if declaration.cursor.type.element_type.get_canonical().kind in NESTED_ARRAY_KINDS:
        return False
    bound = bound_of(declaration)
    return bound is not None and prove_runtime(unit, bound, set()).runtime


# What may come right before the name a declaration declares: a type, `*`, `&`, `(`, `,`, `::`, `>`, a comment
# (`/`), a macro's name or arguments. These characters never do: they end an expression or a statement.
_NOT_BEFORE_A_DECLARATOR = frozenset("=[+-%!~^|?{};.")


def _never_declared_here(text: str, start: int) -> bool:
    """True when the `name[` at `start` is an expression (`x = a[i]`, `p->a[i]`, `; a[i] = 0`), so
    `cursor_at` there cannot find a VAR_DECL: more than half of the `name[` of CUDA code, each a clang lookup.

    It holds in a macro's body too: wherever the macro is used, its tokens
    keep the order they have here, and an expression's name after `=` or
    `->` is one in every expansion (mmcv's `filtered_lrelu.cu`: `b =
    s_tileIn[...]` in a `#define` built the file's whole tree, 0.1 s). A
    name that starts a continuation line comes after a `\\`, which concludes
    nothing: it is looked up.
    """
    at = start - 1
    while at >= 0 and text[at] in " \t\r\n":
        if text[at] == "\n":
            code_end = _code_end(text, text.rfind("\n", 0, at) + 1, at)
            if code_end < 0:
                return False  # the line before may end in a comment, whose last character says nothing
            at = code_end
        at -= 1
    if at < 0:
        return False
    before = text[at]
    if before == ".":
        return text[max(0, at - 2) : at + 1] != "..."
    if before == ">":
        return at > 0 and text[at - 1] == "-"
    if before == ":":  # `c ? x : a[i]`, `case 1: a[i] = 0`, `for (x : a[i])`; not `::`
        return at == 0 or text[at - 1] != ":"
    return before in _NOT_BEFORE_A_DECLARATOR or _after_an_operator(text, at)


# What may stand between a declaration's start and a declarator's name, read backwards: names and keywords,
# `*`, `&`, `::`, and whole `(...)`/`[...]` groups (`alignas(16)`, `__attribute__((x))`, `[[maybe_unused]]`).
_IN_A_DECLARATOR_PREFIX = frozenset("*&")
# Read backwards before any `,`, these end an expression the name is part of: no declaration holds them before
# its first declarator (`m[j] = b1 * m[j]`, `x + c * a[i]`, `p->q * a[i]`, `!b && a[i]`).
_OPERATORS = frozenset("=+-%|^!~?")
_EXPRESSION_WORDS = frozenset({"return", "co_return", "co_yield", "throw"})
_OPENS_A_GROUP = re.compile(r"[ \t]*\(")
# A line this long (a generated or minified file): every look at a `name[` scans its line, so the file is judged
# from its whole tree instead, and not screened (screen.py).
LONG_LINE = 5000


def has_long_lines(text: str) -> bool:
    """TEXT has a line of LONG_LINE characters or more (splitting it is twice as fast as a search by pattern)."""
    return max(map(len, text.split("\n"))) >= LONG_LINE
# The most characters a look back from one `name[` reads: past them nothing is concluded, so a file of a million
# subscripts costs a bounded look at each (a generated table, a long product of them).
WALK = 400
_UNSURE_BEFORE_A_LINE_COMMENT = re.compile(r"[\"']|/\*|\*/")
# A line these may hide the next token of (a comment, a directive, a string): read backwards, nothing is concluded.
_UNSURE_LINE = re.compile(r"/\*|\*/|#|\"|'|\\\s*$")


def _after_an_operator(text: str, at: int) -> bool:
    """The name whose last character before it stands at AT is read, not declared: reading backwards over what may
    precede a declarator (`_IN_A_DECLARATOR_PREFIX`, names, whole groups, an attribute's `[[...]]`), the first
    other token is an operator (`_OPERATORS`, `->`, `.`), a number, `return` and the like, an open `[` or a
    subscript's `]`; or the `)` of an `if (...)` right before the name, or a `(` no declaration follows. Anything
    else (`,`, `;`, `{`, `}`, `<`, `>`, `:`, a comment, a directive, a quote, WALK characters read) concludes
    nothing: `int k = n, a[n]` declares `a`."""
    stop = max(-1, at - WALK)
    if text[at] == ")" and (opening := _group_start(text, at, stop)) >= 0 and _statement_head(text, opening):
        return True  # `if (c) a[i] = 0`: the name starts the statement, with no type before it
    while at > stop:
        char = text[at]
        if char in " \t\r\n\f\v":
            if char == "\n" and (at := code_before(text, at)) < 0:
                return False
            at -= 1
        elif char.isalnum() or char == "_":
            end = at
            while at >= 0 and (text[at].isalnum() or text[at] == "_"):
                at -= 1
            word = text[at + 1 : end + 1]
            if word[0].isdigit() or word in _EXPRESSION_WORDS:
                return True
        elif char in _IN_A_DECLARATOR_PREFIX:
            at -= 1
        elif char == ":" and at > 0 and text[at - 1] == ":":
            at -= 2
        elif char == "]" and text[at - 1 : at] != "]":
            return True  # `x[i] * a[j]`: a subscript; before a declarator only an attribute's `[[...]]` stands
        elif char in ")]":
            at = _group_start(text, at, stop) - 1
            if at < -1:
                return False
        elif char == "(":  # `x + (c * a[i])`, `return (c * a[i])`, `if ((float)a[i] > 0)`: no declaration starts so
            before = _last_char(text, at)
            if _OPENS_A_GROUP.match(text, at + 1):
                return True
            return before >= 0 and (text[before] in _OPERATORS or _word_ending(text, before) in _EXPRESSION_WORDS)
        elif char in _OPERATORS or char == "[":
            return char != "%" or text[at - 1 : at] != "<"  # `<%`: the digraph of `{`
        elif char == ">":
            return at > 0 and text[at - 1] == "-"
        elif char == ".":
            return text[max(0, at - 2) : at + 1] != "..."
        else:
            return False
    return False


def code_before(text: str, newline: int) -> int:
    """Where the code of the line that ends at NEWLINE ends, read backwards (before a `//` comment), for a look
    back to go on from; -1 where that line may hide what comes before (a comment mark it cannot place, a
    directive, a quote, a continuation)."""
    line_start = text.rfind("\n", 0, newline) + 1
    end = _code_end(text, line_start, newline)
    return -1 if end < 0 or _UNSURE_LINE.search(text, line_start, end) else end


def _code_end(text: str, line_start: int, line_end: int) -> int:
    """Where the code of the line from LINE_START to LINE_END ends, read backwards from its end: at LINE_END
    without `//`; at its `//` where that surely opens a comment (no quote, `/*` or `*/` before it on the line, no
    raw string in the file, and the comment does not continue on the next line); -1 where it may not."""
    slashes = text.find("//", line_start, line_end)
    if slashes < 0:
        return line_end
    if _UNSURE_BEFORE_A_LINE_COMMENT.search(text, line_start, slashes) or TextMarks.of(text).raw_strings:
        return -1
    return -1 if text[line_start:line_end].rstrip().endswith("\\") else slashes


def _statement_head(text: str, opening: int) -> bool:
    """The `(` at OPENING follows `if`, `while`, `for` or `switch`: what comes after its group starts a statement."""
    return _word_ending(text, _last_char(text, opening)) in ("if", "while", "for", "switch")


def _last_char(text: str, before: int) -> int:
    """Where the last character before BEFORE on its line that is not a blank stands; -1 where there is none."""
    at = before - 1
    while at >= 0 and text[at] in " \t":
        at -= 1
    return at if at >= 0 and text[at] not in "\r\n" else -1


def _word_ending(text: str, end: int) -> str:
    """The word whose last character stands at END; empty where none does."""
    start = end
    while start >= 0 and (text[start].isalnum() or text[start] == "_"):
        start -= 1
    return text[start + 1 : end + 1]


class TextMarks:
    """Where a text's raw strings and block-comment marks stand, found once: the screen and the fast path look at
    each `name[` of a file, and a scan of the whole text from each (for `R"`, back to a licence header's `/*`)
    made them quadratic in the file. The marks of the text looked at last are kept (`of`)."""

    last: "TextMarks | None" = None

    def __init__(self, text: str):
        self.text = text
        self.raw_strings = 'R"' in text  # a raw string may hold anything, a comment mark included

    @cached_property
    def opens(self) -> list[int]:
        return [m.start() for m in re.finditer(r"/\*", self.text)]

    @cached_property
    def closes(self) -> list[int]:
        return [m.start() for m in re.finditer(r"\*/", self.text)]

    @classmethod
    def of(cls, text: str) -> "TextMarks":
        if cls.last is None or cls.last.text is not text:
            cls.last = cls(text)
        return cls.last

    def last_open_before(self, at: int) -> int:
        """`text.rfind("/*", 0, at)`."""
        index = bisect_right(self.opens, at - 2) - 1
        return self.opens[index] if index >= 0 else -1

    def closed_between(self, start: int, end: int) -> bool:
        """`text.find("*/", start, end) >= 0`."""
        index = bisect_left(self.closes, start)
        return index < len(self.closes) and self.closes[index] + 2 <= end


def _group_start(text: str, close: int, stop: int = -1) -> int:
    """Where the `(` or `[` that the `)` or `]` at CLOSE closes stands, after STOP; -1 when no plain group ends
    there (a quote, a comment, a directive or a block inside it, or no opening)."""
    depth = 0
    at = close
    while at > stop:
        char = text[at]
        if char in ")]":
            depth += 1
        elif char in "([":
            depth -= 1
            if depth == 0:
                return at
        elif char in "\"'#/;{}\\":
            return -1
        at -= 1
    return -1


# Keywords that may end the type before a declarator's name (`unsigned long a[n]`, `const char* p[n]`).
_TYPE_KEYWORDS = frozenset({
    "bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int", "long", "signed", "unsigned",
    "float", "double", "void", "auto", "const", "volatile",
})
_DECLARED_KINDS = frozenset({CursorKind.VAR_DECL, CursorKind.FIELD_DECL, CursorKind.PARM_DECL})
_MACRO_KINDS = frozenset({CursorKind.MACRO_DEFINITION, CursorKind.MACRO_INSTANTIATION})


# Right before the name of a local array's declarator these never stand (a parameter or an argument does).
_NOT_BEFORE_A_STATEMENT_DECLARATOR = frozenset("(,)<")
# Before a declaration, these say it is no candidate: device memory, or an array that cannot be variable-length.
_NOT_A_HOST_VLA = frozenset({"__shared__", "__constant__", "__device__", "static", "extern", "constexpr", "constinit"})


def hidden_declaration(unit: CppUnit) -> bool:
    """A `name[` with a non-literal bound and no initialiser that reads as a declaration clang did not build:
    after something that can end a type (a name, `>`, a type keyword, or a `*`/`&` that follows one), with
    neither a declaration nor an expression at the name, outside any device function: code the header-free
    parse dropped. Where clang dropped the function itself (an unknown macro or type in its head:
    `CUTLASS_DEVICE void f()`, `py::array f(...)`), only a bound that names something the function itself
    spells before the array (a parameter, a local) may be a run-time value; one made only of names from
    elsewhere (`kRank`, a template's `N`) is a constant: no parse for it."""
    text = unit.source.text
    for start, name_end, bound in _names_before_brackets(text):
        if _never_declared_here(text, start) or _CONSTANT_BOUND.match(text, bound):
            continue
        if _SIZED_BY_INITIALISER.match(text, bound) or _initialised(text, bound):
            continue  # `T a[] = {...}`, `T a[n] = {}`: a constant-size array (a VLA cannot be initialised)
        if _character_before(text, start) in _NOT_BEFORE_A_STATEMENT_DECLARATOR:
            continue  # `f(a[i])`, `g(x, a[i])`: an argument, or a parameter, never a local declaration
        cursor = unit.cursor_at(start)
        if cursor is None or cursor.kind in _DECLARED_KINDS or cursor.kind.is_expression():
            continue
        in_dropped_function = not cursor.kind.is_statement()
        # The statement's tokens up to the name, lexed alone (not the whole file's): back to a `;`, `{` or `}`.
        boundary = max(text.rfind(";", 0, start), text.rfind("{", 0, start), text.rfind("}", 0, start)) + 1
        before = unit.tokens_in(boundary, name_end)
        if cursor.kind in _MACRO_KINDS or not before or before[-1].start != start:
            continue  # a macro, a comment or a string
        name, before = before[-1], before[:-1]
        if name.kind != "identifier":
            continue  # `operator[]`
        if _ends_a_type(before) and not _device_or_static(before) and not unit.in_device_function(start):
            names = _bound_names(text, bound)
            runtime, constant_locals = _declared_in_function(text, start, names or frozenset())
            if runtime:
                return True
            # Made only of constants (`unit.constants_around`, or locals just read as such): an array of constant
            # size whatever its element type.
            constants = unit.constants_around(start) | constant_locals
            if not in_dropped_function and (names is None or not names <= constants):
                return True
    return False


def _bound_names(text: str, after_bracket: int) -> frozenset[str] | None:
    """The names in the bounds from the `[` just before AFTER_BRACKET on (`[kRows][kCols]`), but for `sizeof` and
    the like; None for a bound that holds a subscript, or has no end: not read here."""
    names: set[str] = set()
    at = after_bracket
    while True:
        end = text.find("]", at)
        if end < 0 or "[" in text[at:end]:
            return None
        names |= set(_IDENTIFIER.findall(text, at, end)) - UNEVALUATED_WORDS
        following = _ANOTHER_DIMENSION.match(text, end + 1)
        if following is None:
            return frozenset(names)
        at = following.end()


def _character_before(text: str, start: int) -> str:
    """The last character before `start` that is not blank ("" at the start of the text): `text[:start].rstrip()`'s
    last, without copying the text before it (once for each `name[` of a file, that was quadratic)."""
    at = start - 1
    while at >= 0 and text[at].isspace():
        at -= 1
    return text[at] if at >= 0 else ""


_SIZED_BY_INITIALISER = re.compile(r"\s*\]")


_BRACKET = re.compile(r"[\[\]]")


def _initialised(text: str, after_bracket: int) -> bool:
    """Whether the `[...]` opened just before `after_bracket` (and any `[...]` after it) is followed by an
    initialiser (`=` or `{`)."""
    depth, at = 1, after_bracket
    while at < len(text):
        if depth:  # inside a bound: on to the next bracket (char by char, an unclosed one read the rest of the file)
            bracket = _BRACKET.search(text, at)
            if bracket is None:
                at = len(text)
                break
            depth += 1 if bracket.group() == "[" else -1
            at = bracket.end()
        elif text[at] in " \t[":  # between dimensions
            depth = 1 if text[at] == "[" else 0
            at += 1
        else:
            break
    rest = text[at : at + 80].lstrip()
    return rest.startswith(("=", "{")) and not rest.startswith("==")


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_ANOTHER_DIMENSION = re.compile(r"\s*\[")
_BRACE = re.compile(r"[{}]")
_AFTER_PARAMETERS = re.compile(r"\)\s*(?:(?:const|noexcept|override|final|mutable)\s*)*$")


def _declared_in_function(text: str, start: int, names: frozenset[str]) -> tuple[bool, frozenset[str]]:
    """The NAMES of the bounds of the `name[` at `start` that the function around it declares earlier, as a
    parameter or a local (`int n)`, `const int64_t n =`; read as text: clang dropped the function, or the
    statements between): whether one of them may be a run-time value, and those that are constants.

    A local is a constant when it is `constexpr`, or `const` and initialised
    with integer literals alone (`const int request_solutions = 8;`: C++
    reads a const integral variable so initialised as a constant
    expression, and the array is no VLA). A name declared both ways may be
    a run-time value. A name after a `*` is skipped: a pointer cannot bound
    an array, and it is most often a product (`ROUND_DOWN(size, WIDTH *
    span)`, where `span` is a template's parameter).
    """
    body = _function_body_start(text, start)
    if not names or body is None:
        return False, frozenset()
    head = max(text.rfind("(", 0, text.rfind(")", 0, body)), 0)
    constant: set[str] = set()
    for name in names:
        for declared in re.finditer(rf"[\w>&]\s+{name}\s*[=;,)({{\[]", text[head:start]):
            statement = re.split(r"[;{}(,]", text[head : head + declared.start()])[-1]
            if "constexpr" in statement or (text[head + declared.start()] != "&"  # `const int& n = 8`: a reference
                                            and _constant_initialiser(statement, text, head + declared.end() - 1)):
                constant.add(name)
            else:
                return True, frozenset()
    return False, frozenset(constant)


_CONST = re.compile(r"\bconst\b")
# An initialiser of integer literals, operators and parentheses only, up to the `;` (`8`, `1 << 10`, `(4 * 32)`).
# Possessive: a literal is taken whole, never split into shorter ones to retry (`= 123...9 + seed;` would try every
# split of its digits: exponential in their number).
_LITERAL_INITIALISER = re.compile(r"=(?:\s|\d[\w']*+|[-+*/%()<>~&|^])++;")


def _constant_initialiser(statement: str, text: str, after_name: int) -> bool:
    """Whether the declaration whose text before the name is STATEMENT, and whose name ends before AFTER_NAME (at
    its `=`), is a `const` one initialised with integer literals alone."""
    return (_CONST.search(statement) is not None and "volatile" not in statement
            and _LITERAL_INITIALISER.match(text, after_name) is not None)


def _function_body_start(text: str, start: int) -> int | None:
    """The `{` of the outermost unclosed block around `start` that follows a `)` (a function's body), or None."""
    depth, found = 0, None
    for brace in reversed(list(_BRACE.finditer(text, 0, start))):
        at = brace.start()
        if text[at] == "}":
            depth += 1
        else:
            if depth:
                depth -= 1
                continue
            if _AFTER_PARAMETERS.search(text, max(0, at - 200), at):
                found = at
    return found


def _ends_a_type(before: list) -> bool:
    """The tokens before the name spell a type that starts a statement: `T a[`, `ns::T<int>* a[`,
    `const char* a[`; not `x * a[`, `f(&a[` or `return a[`."""
    depth, seen_type = 0, False
    for token in reversed(before):
        spelling = token.spelling
        if spelling in (">", ">>"):
            depth += len(spelling)
        elif spelling == "<":
            depth -= 1
            if depth < 0:
                return False
        elif depth == 0 and spelling in (";", "{", "}", ":"):
            return seen_type
        elif token.kind == "identifier" or token.kind == "keyword" and spelling in _TYPE_KEYWORDS:
            seen_type = True
        elif depth == 0 and spelling not in ("::", "*", "&", "&&"):
            return False  # `=`, `(`, `,`, an operator, `return`: an expression
        elif depth > 0 and spelling not in ("::", "*", "&", ",") and token.kind not in ("literal",):
            return False
    return seen_type and depth == 0  # `ss >> a[i]`: no `<` opens what `>>` would close


def _device_or_static(before: list) -> bool:
    """A qualifier of the statement the name is declared in (its tokens `before` the name)."""
    for token in reversed(before):
        if token.spelling in (";", "{", "}"):
            return False
        if token.spelling in _NOT_A_HOST_VLA:
            return True
    return False
