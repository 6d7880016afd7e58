"""What a C++/CUDA rule reads and writes with: the libclang unit, its nodes and tokens, and edit helpers.

The frontend's modules stay free to change inside; a rule sees them only
through these names (tests/architecture/test_rule_api.py).
"""

from clang.cindex import CursorKind, TypeKind

from optpatch.cpp_edits import statement_lines
from optpatch.cpp_frontend import (
    BETWEEN_TOKENS, FUNCTION_KINDS, LOOP_KINDS, CppUnit, Node, Place, Token, is_callee, kernel_name, matching_bracket,
    opening_bracket, split_top_level, unwrap,
)
from optpatch.planner import preview
from optpatch.source import LINE_BREAK

# A node's kind and type kind are libclang's enums: rules compare them by member (`node.kind is CursorKind.CALL_EXPR`).
__all__ = [
    "BETWEEN_TOKENS", "FUNCTION_KINDS", "LINE_BREAK", "LOOP_KINDS", "CppUnit", "CursorKind", "Node", "Place", "Token", "TypeKind",
    "is_callee", "kernel_name", "matching_bracket", "opening_bracket", "preview", "split_top_level", "statement_lines", "unwrap",
]
