"""One parser per language: what the rules of that language receive.

Python files become a `PythonModule` (libcst, with scopes; python_frontend.py),
C++/CUDA files a `CppUnit` (libclang; cpp_frontend.py). A new language adds
its frontend here and nowhere else in the pipeline. Frontends are imported
on first use: a run that parses no C++ never loads libclang.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optpatch.model import FileError, Language
from optpatch.source import SourceFile

if TYPE_CHECKING:
    from optpatch.cpp_headers import HeaderReport, HeaderSetup
    from optpatch.formatter_config import FileStyle
    from optpatch.python_screen import CallIndex


class FrontendError(Exception):
    """The file cannot be parsed: a syntax error, or code nested too deeply; `error` says where."""

    def __init__(self, error: FileError):
        super().__init__(error.reason)
        self.error = error


def parse(source: SourceFile, calls: "CallIndex | None" = None, outline: str | None = None,
          style: "FileStyle | None" = None, headers: "HeaderSetup | None" = None):
    """The unit the rules of the file's language check.

    `calls`: the screens' `ast` index of this Python text (so `ast` already
    took it); `outline`: parse this outline of it instead (python_outline.py);
    `style`: how the project's formatter lays the file out (the unit's
    `style`; formatter_config.py), by default no formatter. `headers`: what
    the run knows of a C++ file's build (the header-free parse reads no
    header; cpp_second_look.py asks for the parse with them).
    """
    if source.language is Language.PYTHON:
        from optpatch.formatter_config import PythonStyle
        from optpatch.python_frontend import PythonModule, PythonParseError

        try:
            return PythonModule(source, outline, calls, style if isinstance(style, PythonStyle) else PythonStyle())
        except PythonParseError as error:
            raise FrontendError(error.error) from None
    from optpatch.cpp_frontend import CppParseError, CppUnit
    from optpatch.formatter_config import CppStyle

    try:
        return CppUnit(source, setup=headers, style=style if isinstance(style, CppStyle) else CppStyle())
    except CppParseError as error:
        raise FrontendError(error.error) from None


def rewrite_error(
    original: SourceFile, rewritten: SourceFile, written_lines: set[int], headers: "HeaderReport | None" = None,
) -> str | None:
    """The safety net: why the rewritten file would not parse, or None.

    A rule bug must never hand out a file that no longer parses. Python:
    CPython takes all of it and libcst the definitions the edits wrote
    (python_frontend.rewrite_error). C++: clang always builds a tree, so the
    rewrite must add no error to the original's; parsed with the file's
    headers when the fixes came from such a parse (`headers`: its report,
    with the flags and the original's errors).
    """
    if rewritten.language is Language.PYTHON:
        from optpatch.python_frontend import rewrite_error as python_rewrite_error

        return python_rewrite_error(original, rewritten, written_lines)
    if headers is not None:
        from optpatch.cpp_second_look import rewrite_error as rewrite_error_with_headers

        return rewrite_error_with_headers(original, rewritten, headers)
    try:
        unit = parse(rewritten)
    except FrontendError as error:
        return error.error.reason
    from optpatch.cpp_frontend import added_errors

    added = added_errors(parse(original), unit)
    return "new errors: " + "; ".join(added[:3]) if added else None
