"""Where OPT203 looks: the `zeros` and `zeros_like` calls that resolve to torch's factories, and the
`torch::zeros(` / `at::zeros_like(` spellings that did not parse (reported, never rewritten).
"""

from __future__ import annotations

import re
from typing import Iterator

from optpatch.rule import KeepCategory, Kept
from optpatch.rule.cpp import BETWEEN_TOKENS, CppUnit, CursorKind, Node

# The factory each zero-filling factory becomes: same arguments, same result but for the values.
EMPTY_OF = {"zeros": "empty", "zeros_like": "empty_like"}
_FACTORIES = frozenset(EMPTY_OF)
_MENTION = re.compile(r"\bzeros(?:_like)?\b")
# A call names the factory and opens its arguments: `at::zeros(`, `torch::zeros_like (`, with comments or a line
# continuation between. A macro may name it alone (`#define Z torch::zeros`), to be called where it expands.
_CALL_SHAPED = re.compile(rf"\bzeros(?:_like)?\b{BETWEEN_TOKENS}\(")
_MACRO = re.compile(r"#\s*define\b")


def may_call_a_factory(text: str) -> bool:
    """False when TEXT holds no call of `zeros` or `zeros_like` (OPT203's `screen_text`): a kernel header that only
    says "zeros" in a comment (flash-attention: 8 of the 12 files that mention the word, up to 107 KB each) or calls
    `filter_zeros(` (300 times in CUTLASS) is not parsed for OPT203."""
    return _CALL_SHAPED.search(text) is not None or (_MACRO.search(text) is not None and _MENTION.search(text) is not None)


def factory_calls(unit: CppUnit) -> Iterator[Node]:
    """Every call of torch's `zeros` or `zeros_like` (`torch::` or `at::`), in the order of the tree: read from
    the declarations that call them alone (`nodes_calling`)."""
    for node in unit.nodes_calling(_FACTORIES):
        if node.kind is CursorKind.CALL_EXPR and node.spelling in EMPTY_OF and _is_torch_factory(unit, node):
            yield node


def _is_torch_factory(unit: CppUnit, call: Node) -> bool:
    callee = unit.referenced(call)
    function = callee is not None and callee.kind is CursorKind.FUNCTION_DECL
    return function and unit.declared_by_library(callee, ("at", "torch"))


def unparsed(unit: CppUnit, analysed: set[int]) -> Iterator[tuple[int, tuple[int, int], Kept]]:
    """`torch::zeros(` / `at::zeros_like(` in host code that did not resolve to torch's factory (no token of
    `analysed` did): the index of its `torch` or `at` token, where it is, and its keep."""
    tokens = unit.tokens
    for index, token in enumerate(tokens):
        if token.spelling not in EMPTY_OF or token.start in analysed or index < 2 or index + 1 >= len(tokens):
            continue
        if tokens[index - 1].spelling != "::" or tokens[index - 2].spelling not in ("torch", "at"):
            continue
        if tokens[index + 1].spelling != "(" or unit.in_device_function(token.start):
            continue
        without = "" if unit.with_headers else " without the project's headers"
        reason = f"this statement does not parse{without} (unknown types in it); not analysed"
        yield index - 2, unit.position(tokens[index - 2].start), Kept(reason, KeepCategory.UNRESOLVED)
