"""OPT201's screen: whether a file's text may declare an array of non-literal size, read before libclang parses it.

The trigger word `[` is in nearly every C++ file, and the parse is most of
what a file costs (CUTLASS: 4.5 s of 14 s). But every declaration OPT201
judges spells its bound in this file: a declarator `name[bound]` (after
comments or line continuations, or as `(name)[bound]`), in the code or in a
macro body defined here. So a file may be skipped when each `[` that follows
a name is in a comment, has no bound or an integer literal for one, every
dimension of it, or reads as an expression: after `=`, `+`, `[`, `;`, `.`,
`(`, `<` and the like, as candidates._never_declared_here decides, or after
`new`, `return` and the like. (A variable of a `typedef` or `using` of a
variable-length type is not one OPT201 judges.) Digraphs (`a<:n:>`),
trigraphs and token pasting (`CAT(a, b)[n]`) spell declarators no such look
can see: a file with any is parsed. Where a string or another comment could
hide a comment mark, the `[` is read as code.

What it cannot see, nor could the check on a header-free parse: an array
declared by a macro of a header. OPT201 asks for headers only where this
file's text shows a `name[` (`needs_headers`), so such an array is found
only where another rule's question brings the headers, and then not here.
tests/cpp/test_opt201_screen.py holds the screen to the full check.
"""

from __future__ import annotations

import re

from optpatch.rule.cpp import BETWEEN_TOKENS

from .candidates import _CONSTANT_BOUND, _never_declared_here

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
    if any(spelling in text for spelling in _UNSEEN_SPELLINGS):
        return True
    at = text.find("[")
    while at >= 0:
        if _may_open_a_declarator(text, at):
            return True
        at = text.find("[", at + 1)
    return False


def _may_open_a_declarator(text: str, bracket: int) -> bool:
    if _EMPTY_BOUND.match(text, bracket + 1) or _literal_dimensions(text, bracket + 1) or _in_a_comment(text, bracket):
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
    return not _an_expression(text, start)


def _last_token_end(text: str, before: int) -> int:
    """Where the last character before BEFORE that is not a blank or a line continuation is; -1 at the start of the
    text; `_COMMENTED` when a comment ends there (`*/`, or a `//` on a line crossed)."""
    at = before - 1
    while at >= 0:
        char = text[at]
        if char == "\n":
            if "//" in text[text.rfind("\n", 0, at) + 1 : at]:
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


def _an_expression(text: str, start: int) -> bool:
    """The `name[` at START is a subscript: candidates._never_declared_here says so, or what comes before the
    name does (`_BEFORE_A_READ`)."""
    at = start - 1
    while at >= 0 and text[at] in " \t\r\n":
        at -= 1
    return (at >= 0 and text[at] in _BEFORE_A_READ) or _never_declared_here(text, start)


def _in_a_comment(text: str, at: int) -> bool:
    """AT is inside a `//` comment on its line, or a `/* */` comment, as far as the text around says for certain:
    False wherever a string or another comment before the mark could hold it (`"http://..."`, `// see /*`)."""
    line_start = text.rfind("\n", 0, at) + 1
    slashes = text.find("//", line_start, at)
    if slashes >= 0 and not _UNSURE_BEFORE_A_COMMENT.search(text, line_start, slashes):
        return True
    opened = text.rfind("/*", 0, at)
    if opened < 0 or text.find("*/", opened + 2, at) >= 0 or 'R"' in text:  # closed, or a raw string may hold it
        return False
    return not _UNSURE_BEFORE_A_BLOCK.search(text, text.rfind("\n", 0, opened) + 1, opened)


def _literal_dimensions(text: str, after_bracket: int) -> bool:
    """Every `[...]` from the one opened just before AFTER_BRACKET on holds an integer literal (`[4][8]`)."""
    at = after_bracket
    while (bound := _CONSTANT_BOUND.match(text, at)) is not None:
        following = _NEXT_BRACKET.match(text, bound.end())
        if following is None:
            return True
        at = following.end()
    return False
