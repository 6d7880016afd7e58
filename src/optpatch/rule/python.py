"""What a Python rule reads and writes with: the parsed module, the `ast` screen, and edit helpers.

The frontend's modules stay free to change inside; a rule sees them only
through these names (tests/architecture/test_rule_api.py).
"""

from optpatch.formatter_config import PythonFormatter
from optpatch.planner import preview
from optpatch.python_edits import FormattedEdits, add_import_name, string_literal
from optpatch.python_frontend import LOOP_NODES, SCOPE_NODES, PythonModule, ast_context, dotted_name, walk
from optpatch.python_screen import CallIndex, ast_dotted_name, callee_name, called_functions, root_name

__all__ = [
    "LOOP_NODES", "SCOPE_NODES", "CallIndex", "FormattedEdits", "PythonFormatter", "PythonModule", "add_import_name",
    "ast_context", "ast_dotted_name", "callee_name", "called_functions", "dotted_name", "preview", "root_name",
    "string_literal", "walk",
]
