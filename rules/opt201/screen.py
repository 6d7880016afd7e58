"""OPT201's screen: whether a file's text may declare an array of non-literal size, read before libclang parses it.

The trigger word `[` is in nearly every C++ file, and the parse is most of
what a file costs (CUTLASS: 4.5 s of 14 s). But every declaration OPT201
judges spells its bound in this file: a declarator `name[bound]` (after
comments or line continuations, or as `(name)[bound]`), in the code or in a
macro body defined here. So a file may be skipped when each `[` that follows
a name is in a comment or a string, has no bound, or a constant for every
dimension of it (integer literals, arithmetic, and object-like macros of this
file defined as an integer literal before it and never undefined: `[ILP]`),
declares device memory (`__shared__ float s[n]`: obligations.py says
nothing of it), or reads as an expression. An expression, as
candidates._never_declared_here decides: after `=`, `+`, `[`, `;`, `.`,
`:`, `<` and the like, or after `new`, `return` and the like; reading
further back over what may stand before a declarator (names, `*`, `&`,
`::`, whole groups), an operator before any `,` (`m[j] = b * m[j]`), or the
`)` of an `if (...)` right before the name. Or an argument: after the first
of a call's (`f(x, a[i])`, `f({-1, a[i]})`), or right after its `(`, where
the call is not of a function-like macro of this file whose body may
declare what it is given (`#define DECL(d) float d`, or one that hands it
to such a macro). (A variable of a `typedef` or `using` of a
variable-length type is not one OPT201 judges, nor a parameter.) Digraphs
(`a<:n:>`), trigraphs and token pasting (`CAT(a, b)[n]`) spell declarators
no such look can see: a file with any is parsed. Where a string or another
comment could hide a comment mark, the `[` is read as code; a line that is
only a `//` comment is skipped.

What it cannot see, nor could the check on a header-free parse: an array
declared by a macro of a header. What it reads as a call, though it may be
a parenthesised declarator: `T (a[n])` where `T` is no type keyword. OPT201 asks for headers only where this
file's text shows a `name[` (`needs_headers`), so such an array is found
only where another rule's question brings the headers, and then not here.
tests/cpp/test_opt201_screen.py holds the screen to the full check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from optpatch.rule.cpp import BETWEEN_TOKENS

from .candidates import (WALK, _CONSTANT_BOUND, _TYPE_KEYWORDS, _code_end, _group_start, code_before,
                         TextMarks, _never_declared_here, has_long_lines)

# A `#define` with its continuation lines: the name, the parameters of a function-like macro, the body.
_DEFINITION = re.compile(r"^[ \t]*(?:#|%:)[ \t]*define[ \t]+(\w+)(\([^)\n]*\))?((?:[^\n]*\\\r?\n)*[^\n]*)", re.M)
_UNDEFINED = re.compile(r"^[ \t]*(?:#|%:)[ \t]*undef[ \t]+(\w+)", re.M)
_INTEGER_BODY = re.compile(r"\s*(\(\s*)?(?:0[xX][0-9a-fA-F']+|[0-9][0-9']*)[uUlLzZ]*\s*(?(1)\))\s*")
_BODY_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# What may stand right before a macro's parameter in its body without making the argument a declarator.
_NOT_DECLARING_BEFORE = frozenset("(=+-/%!|^~?:[#.;{}")
# A bound made of integer literals, constants (`_Macros.constants`) and arithmetic: `[ILP]`, `[N_ROWS / 2]`.
_BOUND_TOKEN = re.compile(r"[ \t]*(?:(?:0[xX][0-9a-fA-F']+|[0-9][0-9']*)[uUlLzZ]*|(\w+)|<<|>>|[-+*/%()&|^~])")
# Parentheses after these may hold a declaration (`for (int i = 0, a[n]; ...)`, `catch (T e[n])`).
_DECLARING_PARENTHESES = frozenset({"for", "if", "constexpr", "while", "switch", "catch", "requires"})
_CAST_BEFORE = re.compile(r"\b(?:static|reinterpret|const|dynamic|bit)_cast[ \t]*<[^;{}()]*>[ \t]*$")
# Device memory: an array declared so is never OPT201's (obligations.py), whatever its bound.
_DEVICE_MEMORY = frozenset({"__shared__", "__constant__"})
# What a declaration may start with (a name, `::`, `[[`), or what may hide it (a comment, a directive).
_DECLARATION_START = re.compile(r"\s*(?:[A-Za-z_:\[#]|/[/*])")
# A bracket after one of these opens no declarator: `operator[]`, `new T[n]`, `delete[] p`, `return a[i]`,
# `auto [x, y] = ...` (a structured binding), `struct [[deprecated]] S`.
_NOT_A_DECLARATOR = frozenset({"operator", "new", "delete", "return", "case", "throw", "sizeof", "alignof", "co_return",
                               "co_yield", "auto", "struct", "class", "union", "enum", "else", "do"})
# What before a name says it is read, not declared, beyond candidates._never_declared_here: `(` (`f(a[i])`; a
# parenthesised declarator is seen at its `)`), `<` (`x < a[i]`, `out << a[i]`), `&` (`&a[i]`: no array of references).
_BEFORE_A_READ = frozenset("(<&")
_EMPTY_BOUND = re.compile(r"\s*\]")  # `T a[] = {...}`, `extern T a[];`, a parameter `T a[]`: never variable-length
# On the line before a `//`, or before a `/*`: a quote or another comment mark may hide it, so nothing is concluded.
_UNSURE_BEFORE_A_COMMENT = re.compile(r"[\"']|/\*|\*/")
_UNSURE_BEFORE_A_BLOCK = re.compile(r"[\"']|//")
_NEXT_BRACKET = re.compile(rf"{BETWEEN_TOKENS}\[")
_UNSEEN_SPELLINGS = ("<:", "??(", "##")  # a digraph or trigraph `[`, token pasting
_COMMENTED = -2  # what `_last_token_end` says when a comment ends right before: nothing is read through it


def may_declare_an_array(text: str) -> bool:
    """False when no declaration of an array whose size is not an integer literal can be in TEXT.

    Each `[` is looked at from where it stands, backwards (far fewer than the names a forward search would try:
    CUTLASS's 2,381 C++ files in 0.2 s)."""
    if any(spelling in text for spelling in _UNSEEN_SPELLINGS) or has_long_lines(text):
        return True  # a declarator no look can see; a line each look would scan whole
    macros = _Macros.of(text)
    at = text.find("[")
    while at >= 0:
        if _may_open_a_declarator(text, at, macros):
            return True
        at = text.find("[", at + 1)
    return False


def _may_open_a_declarator(text: str, bracket: int, macros: "_Macros") -> bool:
    if _EMPTY_BOUND.match(text, bracket + 1) or _constant_dimensions(text, bracket + 1, macros):
        return False
    if _in_a_comment(text, bracket) or _in_a_string(text, bracket):
        return False
    end = _last_token_end(text, bracket)
    if end == _COMMENTED:
        return True
    if end < 0:
        return False
    if text[end] == ")":
        return _parenthesised_name(text, end)
    if not _in_a_word(text[end]):
        return False  # after `]` (a later dimension: judged with the first), `=`, `(`, an operator, `[[`
    start = _word_start(text, end)
    if text[start].isdigit() or text[start : end + 1] in _NOT_A_DECLARATOR or _after_a_keyword(text, start):
        return False
    if start > 0 and text[start - 1] == "\\" and text[start] not in "uU":
        return False  # `"\e[1m"`: an escape in a string (`\u` may spell a name)
    if macros.device_memory and _device_memory(text, start):
        return False
    return not _an_expression(text, start, macros)


def _last_token_end(text: str, before: int) -> int:
    """Where the last character before BEFORE that is not a blank or a line continuation is; -1 at the start of the
    text; `_COMMENTED` when a comment ends there (`*/`, or a `//` on a line crossed)."""
    at = before - 1
    while at >= 0:
        char = text[at]
        if char == "\n":
            at = _code_end(text, text.rfind("\n", 0, at) + 1, at)  # before a `//` comment on the line
            if at < 0:
                return _COMMENTED
        elif char == "\\" and text[at + 1 : at + 2] in ("\n", "\r"):
            pass  # a line continuation
        elif char not in " \t\r\f\v":
            return _COMMENTED if char == "/" and at > 0 and text[at - 1] == "*" else at
        at -= 1
    return -1


def _parenthesised_name(text: str, close: int) -> bool:
    """`(name)` ends at CLOSE: a parenthesised declarator (`T (a)[n]`), or a subscript of one (`f(a)[i]`)."""
    end = _last_token_end(text, close)
    if end == _COMMENTED:
        return True
    if end < 0 or not _in_a_word(text[end]):
        return False
    opening = _last_token_end(text, _word_start(text, end))
    if opening >= 0 and text[opening] == "(" and _CAST_BEFORE.search(text, max(0, opening - 300), opening):
        return False  # `static_cast<T*>(p)[i]`: a subscript of a cast
    return opening == _COMMENTED or (opening >= 0 and text[opening] == "(")


def _after_a_keyword(text: str, start: int) -> bool:
    """`new T[n]`, `return a[i]`, `case a[0]:`: the word before the name says it is no declarator."""
    end = _last_token_end(text, start)
    return end >= 0 and _in_a_word(text[end]) and text[_word_start(text, end) : end + 1] in _NOT_A_DECLARATOR


def _in_a_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _word_start(text: str, end: int) -> int:
    start = end
    while start > 0 and _in_a_word(text[start - 1]):
        start -= 1
    return start


def _an_expression(text: str, start: int, macros: "_Macros") -> bool:
    """The `name[` at START is a subscript: candidates._never_declared_here says so, or what comes before the
    name does (`_BEFORE_A_READ`; a `(` only where it opens no argument list of one of this file's function-like
    MACROS, nor a parenthesised declarator after a type keyword, `float (a[n])`), or it is an argument of a call
    (`_an_argument`)."""
    at = start - 1
    while at >= 0 and text[at] in " \t\r\n":
        at -= 1
    if at < 0:
        return False
    if text[at] == "(":
        word = _word_before(text, at)
        return word not in macros.declaring and word not in _TYPE_KEYWORDS
    return text[at] in _BEFORE_A_READ or _never_declared_here(text, start) or _an_argument(text, at, macros)


def _an_argument(text: str, at: int, macros: "_Macros") -> bool:
    """The name whose last character before it stands at AT is an argument after the first of a call
    (`f(x, a[i])`, `g(p + 1, q * a[i])`): reading backwards over whole groups and anything an argument list holds
    but `;`, `{`, `}`, a comment, a directive or a quote, the `(` reached follows a name that is neither a
    keyword whose parentheses may declare (`_DECLARING_PARENTHESES`) nor a function-like macro of this file.
    (A function's parameter list reads the same: a parameter is no array OPT201 judges.)"""
    for at in _read_back(text, at, strings=True):
        char = text[at]
        if char == "(":
            word = _word_before(text, at)
            if word in macros.function_like:
                return False
            if not _DECLARATION_START.match(text, at + 1):
                return True  # `f(-1, a[i])`, `(x + 1, a[i])`: no declaration starts the list
            return bool(word) and not word[0].isdigit() and word not in _DECLARING_PARENTHESES
        if char == "{":  # `f({-1, a[i]})`, `= {x, a[i]}`: a braced list of values
            before = _last_token_end(text, at)
            return not _DECLARATION_START.match(text, at + 1) or (before >= 0 and text[before] in "=,")
        if char in ";}'#/\\[":
            return False
    return False


def _read_back(text: str, at: int, strings: bool = False) -> Iterator[int]:
    """The positions of the characters from AT backwards, at most WALK of them: a line crossed from its code's end
    (before a `//` comment), a whole `(...)` or `[...]` skipped to before its opening, and with STRINGS a string
    literal of the line skipped too; it ends where a line, a group or a string is unsure."""
    stop = max(-1, at - WALK)
    while at > stop:
        char = text[at]
        if char == "\n":
            at = code_before(text, at)
        elif char in ")]":
            at = _group_start(text, at, stop)
        elif strings and char == '"':
            at = _string_start(text, at)
        else:
            yield at
        if at < 0:
            return
        at -= 1


def _string_start(text: str, close: int) -> int:
    """Where the string literal that the `"` at CLOSE ends opens, on the same line; -1 where that is unsure (a
    quote of a character literal, a raw string, a line continuation)."""
    line_start = text.rfind("\n", 0, close) + 1
    at = close - 1
    while at >= line_start:
        if text[at] == '"':
            slashes = 0
            while at - slashes - 1 >= line_start and text[at - slashes - 1] == "\\":
                slashes += 1
            if slashes % 2 == 0:
                line = text[line_start:close]
                return -1 if "'" in line or 'R"' in line or text[at - 1 : at] == "R" else at
            at -= slashes
        at -= 1
    return -1


def _device_memory(text: str, start: int) -> bool:
    """The declaration whose name starts at START says `__shared__` or `__constant__` before it, reading back over
    names, `*`, `&`, `::` and whole groups (`__shared__ __align__(16) float smem[N]`)."""
    for at in _read_back(text, start - 1):
        char = text[at]
        if _in_a_word(char):
            if not _in_a_word(text[at + 1]) and text[_word_start(text, at) : at + 1] in _DEVICE_MEMORY:
                return True  # read at a word's last character
        elif char == ":" and ":" in (text[at - 1 : at], text[at + 1 : at + 2]):
            continue  # `::`
        elif char not in " \t\r*&":
            return False
    return False


def _word_before(text: str, at: int) -> str:
    """The word that ends right before AT, blanks aside; empty where something else does."""
    end = at - 1
    while end >= 0 and text[end] in " \t":
        end -= 1
    if end < 0 or not _in_a_word(text[end]):
        return ""
    return text[_word_start(text, end) : end + 1]


def _in_a_comment(text: str, at: int) -> bool:
    """AT is inside a `//` comment on its line, or a `/* */` comment, as far as the text around says for certain:
    False wherever a string or another comment before the mark could hold it (`"http://..."`, `// see /*`)."""
    line_start = text.rfind("\n", 0, at) + 1
    slashes = text.find("//", line_start, at)
    if slashes >= 0 and not _UNSURE_BEFORE_A_COMMENT.search(text, line_start, slashes):
        return True
    marks = TextMarks.of(text)
    opened = marks.last_open_before(at)
    if opened < 0 or marks.closed_between(opened + 2, at) or marks.raw_strings:
        return False  # closed, or a raw string may hold it
    return not _UNSURE_BEFORE_A_BLOCK.search(text, text.rfind("\n", 0, opened) + 1, opened)


def _constant_dimensions(text: str, after_bracket: int, macros: "_Macros") -> bool:
    """Every `[...]` from the one opened just before AFTER_BRACKET on holds a constant (`[4][8]`, `[ILP]` where
    `#define ILP 4` comes before, `[ROWS / 2]`)."""
    at = after_bracket
    while (end := _constant_bound(text, at, macros)) >= 0:
        following = _NEXT_BRACKET.match(text, end)
        if following is None:
            return True
        at = following.end()
    return False


def _constant_bound(text: str, at: int, macros: "_Macros") -> int:
    """Where the `]` that ends a bound made only of integer literals, arithmetic and `macros.constants` defined
    before it stands, plus one; -1 where the bound is anything else."""
    literal = _CONSTANT_BOUND.match(text, at)
    if literal is not None:
        return literal.end()
    seen = False
    while (token := _BOUND_TOKEN.match(text, at)) is not None:
        name = token.group(1)
        if name is not None and not name[0].isdigit() and not macros.constant_before(name, at):
            return -1  # a name that is no constant defined before this bound
        seen, at = True, token.end()
    closing = _EMPTY_BOUND.match(text, at)
    return closing.end() if seen and closing is not None else -1


@dataclass(frozen=True)
class _Macros:
    """What the file's own `#define`s say about its brackets.

    `function_like`: every function-like macro (its arguments may become a declaration: `_an_argument`).
    `declaring`: those whose body puts something that may end a type (a name, `*`, `&`, `>`, `,`, `)`) before a
    parameter, or passes one to another function-like macro: `DECL(a[n])` may declare `a` only through one of
    these. `constants`: the object-like macros whose every definition is an integer literal and which no
    `#undef` names and no declaration of the file declares, with where each is first defined (a bound before
    that may name something else). `device_memory`: whether `_device_memory` may be asked.
    """

    function_like: frozenset[str]
    declaring: frozenset[str]
    constants: dict[str, int]  # before `_declared` is asked: that is asked of a name only when a bound reads it
    device_memory: bool  # `__shared__` or `__constant__` is in the text, and no `#define` of this file changes it
    text: str = ""
    _declared: dict[str, bool] = field(default_factory=dict)

    def constant_before(self, name: str, at: int) -> bool:
        """NAME is one of `constants`, defined before AT, and the file declares no such name."""
        if self.constants.get(name, at) >= at:
            return False
        if name not in self._declared:
            self._declared[name] = _declared(self.text, name)
        return not self._declared[name]

    @classmethod
    def of(cls, text: str) -> "_Macros":
        device_memory = ("__shared__" in text or "__constant__" in text)
        if "define" not in text:
            return _Macros(frozenset(), frozenset(), {}, device_memory)
        definitions = list(_DEFINITION.finditer(text))
        function_like = frozenset(d.group(1) for d in definitions if d.group(2) is not None)
        bodies = {d.group(1): d for d in definitions if d.group(2) is not None}
        declaring = {name for name, d in bodies.items() if _declares_a_parameter(d)}
        words = {name: set(re.findall(r"\w+", d.group(3))) for name, d in bodies.items() if name not in declaring}
        while True:  # a macro that hands its arguments on to a declaring one declares too
            more = {name for name, used in words.items() if name not in declaring and not used.isdisjoint(declaring)}
            if not more:
                break
            declaring |= more
        undefined = set(_UNDEFINED.findall(text)) if "undef" in text else set()
        constants: dict[str, int] = {}
        not_constant: set[str] = set(undefined)
        for definition in definitions:
            name = definition.group(1)
            body = _BODY_COMMENT.sub(" ", definition.group(3).replace("\\\n", " "))
            if definition.group(2) is not None or not _INTEGER_BODY.fullmatch(body):
                not_constant.add(name)
            else:
                constants.setdefault(name, definition.start())
        device_memory = device_memory and not any(d.group(1) in _DEVICE_MEMORY for d in definitions)
        # A name the file also declares (`int ILP = ...`, `f(int ILP)`) is defined only where that is not compiled
        # (`#if 0`, another branch): a bound that reads it may be a run-time value (`constant_before`).
        constants = {n: at for n, at in constants.items() if n not in not_constant}
        return cls(function_like, frozenset(declaring), constants, device_memory, text)


def _declared(text: str, name: str) -> bool:
    """TEXT declares NAME somewhere: a word other than `return` and the like before it, and `=`, `;`, `,`, `)`,
    `[` or `{` after (`int ILP = 4;`, `f(int ILP)`)."""
    return re.search(rf"\b(?!return\b|case\b|throw\b|else\b)[A-Za-z_]\w*\s+{re.escape(name)}\s*[=;,)\[{{]", text) is not None


def _declares_a_parameter(definition: re.Match) -> bool:
    parameters = [p.strip() for p in definition.group(2)[1:-1].split(",")]
    names = [("__VA_ARGS__" if p.endswith("...") else p) for p in parameters if p]
    body = _BODY_COMMENT.sub(" ", definition.group(3))
    for name in names:
        for use in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", body):
            before = body[: use.start()].rstrip()
            if before and before[-1] not in _NOT_DECLARING_BEFORE and not _a_later_argument(before):
                return True
    return False


def _a_later_argument(before: str) -> bool:
    """BEFORE, a macro body up to a parameter, ends in `f(x, ` inside a call: the parameter is an argument."""
    if before[-1] != ",":
        return False
    depth = 0
    for at in range(len(before) - 2, -1, -1):
        char = before[at]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                word = re.search(r"(\w+)\s*$", before[:at]) if char == "(" else None
                return word is not None and word[1] not in _DECLARING_PARENTHESES and word[1] not in _TYPE_KEYWORDS
            depth -= 1
        elif char == ";":
            return False
    return False


def _in_a_string(text: str, at: int) -> bool:
    """AT is inside a string literal, as far as its line says for certain: an odd number of unescaped `"` before
    it on a line with no `'`, no raw string, no comment mark and no continuation from the line before."""
    line_start = text.rfind("\n", 0, at) + 1
    if at - line_start > WALK:
        return False  # a long line (a generated one): not worth the look
    before = text[line_start:at]
    if '"' not in before or "'" in before or "/" in before or 'R"' in before:
        return False
    if text[max(0, line_start - 3) : line_start].rstrip("\r\n").endswith("\\"):
        return False
    return (before.count('"') - before.count('\\"')) % 2 == 1 and '\\\\' not in before
