"""Suppression comments: `# optpatch: ignore[OPT101]` (`//` in C++/CUDA), and ruff's `# noqa: OPT101`.

Only real comments count. Python's are read with `tokenize` and C++'s from
clang's comment tokens, so the words inside a string literal (`note = "#
optpatch: ignore"`) silence nothing. A file that holds neither marker is
never tokenized: a search of its text decides.

- `optpatch: ignore` silences every rule on its line; `optpatch:
  ignore[OPT101,OPT2]` those codes or prefixes. A comment alone on its line
  also covers the line below; one after code covers only its own line.
- `# noqa: OPT101` (Python) silences the optpatch codes it names on its own
  line, as ruff's does; other tools' codes in it are theirs and ignored.
  A bare `# noqa`, or one naming only other tools' codes, is left to the
  linters it was written for (README.md, "Suppression", says why).

Suppressions are honoured in every mode, `--write` included; the ones that
silenced nothing are counted in the text summary, listed with `-v` and in
the JSON report.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterator

from optpatch.model import Finding, Language
from optpatch.source import LINE_BREAK, SourceFile

_MARKER = re.compile(r"optpatch:\s*ignore|noqa\s*:[^\n]*\bOPT\d", re.IGNORECASE)  # the cheap look, before any tokenizer
_IGNORE = re.compile(r"optpatch:\s*ignore(?:\[([A-Za-z0-9_,\s-]*)\])?")
_NOQA = re.compile(r"#\s*noqa\s*:\s*([A-Za-z]+[0-9]+(?:[,\s]+[A-Za-z]+[0-9]+)*)", re.IGNORECASE)
_OURS = re.compile(r"OPT[0-9]+$")
_COMMENT_OPENER = {Language.PYTHON: "#", Language.CPP: "//"}


@dataclass
class Suppression:
    line: int
    codes: frozenset[str]  # empty: every rule
    alone: bool = True  # the comment is all its line holds: it also covers the line below
    used: bool = field(default=False, compare=False)

    def covers(self, code: str) -> bool:
        return not self.codes or any(code.startswith(c) for c in self.codes)


def find_suppressions(text: str, language: str) -> list[Suppression]:
    """Every suppression in TEXT's comments, in line order."""
    lowered = text.lower()  # a copy in C: ten times faster than the case-blind search, which most files then skip
    if ("optpatch" not in lowered and "noqa" not in lowered) or not _MARKER.search(text):
        return []
    language = Language(language)
    comments = _python_comments(text) if language is Language.PYTHON else _cpp_comments(text)
    found = []
    for line, comment, alone in comments:
        found += _suppressions(line, comment, alone, language)
    return found


def _suppressions(line: int, comment: str, alone: bool, language: Language) -> list[Suppression]:
    found = []
    opener = _COMMENT_OPENER[language]
    ignore = _IGNORE.search(comment)
    if ignore and comment[: ignore.start()].rstrip().endswith(opener):
        codes = frozenset(c.strip() for c in (ignore.group(1) or "").split(",") if c.strip())
        found.append(Suppression(line, codes, alone))
    noqa = _NOQA.search(comment) if language is Language.PYTHON else None
    if noqa:
        codes = frozenset(code.upper() for code in re.split(r"[,\s]+", noqa.group(1)) if _OURS.match(code.upper()))
        if codes:
            found.append(Suppression(line, codes, alone=False))  # ruff's noqa covers its own line only
    return found


def _python_comments(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line, comment, alone on its line) for each comment token, lines counted as optpatch counts them.

    A file the tokenizer gives up on (an unclosed bracket or string) keeps
    the comments before that point: its analysis reports the syntax error.
    """
    lines = LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    readline = io.StringIO("".join(line + "\n" for line in lines)).readline
    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string, not token.line[: token.start[1]].strip()
    except (tokenize.TokenError, SyntaxError):
        return


def _cpp_comments(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line, comment, alone on its line) for each comment token clang finds (string and raw-string literals are no comments)."""
    from pathlib import Path

    import clang.cindex as cindex

    from optpatch.cpp_frontend import CppParseError, CppUnit

    source = SourceFile("", Path(""), text.encode("utf-8"), text, "utf-8", False, Language.CPP)
    try:
        unit = CppUnit(source)
    except CppParseError:
        return  # no libclang: the file's analysis says so
    for token in unit.tu.get_tokens(extent=unit.tu.cursor.extent):
        if token.kind != cindex.TokenKind.COMMENT:
            continue
        offset = unit.char_offset(token.extent.start)
        if offset is None:
            continue
        line, column = source.position(offset)
        yield line, token.spelling, not source.line_text(line)[: column - 1].strip()


def apply_suppressions(findings: list[Finding], suppressions: list[Suppression]) -> tuple[list[Finding], int]:
    """Drop the findings a comment silences; returns the rest and how many were dropped."""
    by_line: dict[int, list[Suppression]] = {}
    for suppression in suppressions:
        by_line.setdefault(suppression.line, []).append(suppression)
    kept, dropped = [], 0
    for finding in findings:
        match = next(
            (s for line in (finding.line, finding.line - 1) for s in by_line.get(line, ())
             if s.covers(finding.code) and (line == finding.line or s.alone)),
            None,
        )
        if match is None:
            kept.append(finding)
        else:
            match.used = True
            dropped += 1
    return kept, dropped
