"""Reading one file: bytes, encoding, text, and the reasons a file is refused.

The text keeps the file's own line endings; the encoding and BOM are kept so
that `encode()` gives back the original bytes for unchanged text.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import re
import stat
import tokenize
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.areas import area_of
from optpatch.model import CodeArea, FileError, Language

PYTHON_SUFFIXES = frozenset({".py"})
CPP_SUFFIXES = frozenset({".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp"})
DEFAULT_MAX_BYTES = 2 * 1024 * 1024

LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Python's tokenizer, and so every line number here, counts
_CODING_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.M)  # PEP 263, on one of the first two lines


def language_of(path: str | Path) -> Language | None:
    suffix = os.path.splitext(path)[1].lower()  # `Path(path).suffix`, without making a Path (discovery: every file)
    if suffix in PYTHON_SUFFIXES:
        return Language.PYTHON
    if suffix in CPP_SUFFIXES:
        return Language.CPP
    return None


@dataclass
class SourceFile:
    rel: str  # path relative to the scanned root, forward slashes
    path: Path  # absolute path
    raw: bytes
    text: str
    encoding: str
    bom: bool
    language: Language
    _line_starts: list[int] | None = field(default=None, repr=False)
    area: CodeArea | None = None  # None: from the path alone (areas.py); the engine gives its settings' (`areas`)

    def __post_init__(self) -> None:
        self.language = Language(self.language)  # "python" is Language.PYTHON
        if self.area is None:
            self.area = area_of(self.rel)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def encode(self, text: str) -> bytes:
        data = text.encode(self.encoding)
        return codecs.BOM_UTF8 + data if self.bom else data

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = line_starts(self.text)
        return self._line_starts

    def offset(self, line: int, col: int) -> int:
        """Text offset of a 1-based line and 0-based column."""
        return self.line_starts[line - 1] + col

    def position(self, offset: int) -> tuple[int, int]:
        """1-based line and 1-based column of a text offset."""
        index = bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def line_text(self, line: int) -> str:
        starts = self.line_starts
        end = starts[line] if line < len(starts) else len(self.text)
        return self.text[starts[line - 1] : end].rstrip("\r\n")


def line_starts(text: str) -> list[int]:
    """Offsets where each line begins; \\r\\n, \\r and \\n all end a line, as for libcst."""
    return [0] + [m.end() for m in LINE_BREAK.finditer(text)]


def read_source(path: Path, rel: str, max_bytes: int = DEFAULT_MAX_BYTES,
                area: CodeArea | None = None) -> SourceFile | FileError:
    """Read and decode one file, or say precisely why it cannot be analysed. AREA: its settings' (None: the path's)."""
    language = language_of(path)
    if language is None:
        return FileError(rel, "not a Python or C++/CUDA source file")
    try:
        status = os.stat(path)
        if not stat.S_ISREG(status.st_mode):  # reading a FIFO would wait forever for a writer
            return FileError(rel, "not a regular file (a FIFO, socket or device); remove it or exclude it")
        size = status.st_size
        if size > max_bytes:
            return FileError(rel, f"too large ({size:,} bytes; the limit is {max_bytes:,}, see max-file-size)")
        raw = path.read_bytes()
    except FileNotFoundError:
        return FileError(rel, "disappeared while optpatch was running")
    except OSError as error:
        return FileError(rel, f"cannot be read: {error.strerror or error}")
    return source_from_bytes(path, rel, raw, area)


def source_from_bytes(path: Path, rel: str, raw: bytes, area: CodeArea | None = None) -> SourceFile | FileError:
    """Decode bytes already read from PATH (a source file, by its suffix). AREA: its settings' (None: the path's)."""
    language = language_of(path)
    assert language is not None
    if b"\0" in raw:  # anywhere: a NUL past the first block makes the file no more Python or C++ than one in it
        return FileError(rel, "binary file (contains NUL bytes)")
    decoded = _decode(raw, language)
    if isinstance(decoded, FileError):
        return FileError(rel, decoded.reason, decoded.line)
    text, encoding, bom = decoded
    return SourceFile(rel, path, raw, text, encoding, bom, language, area=area)


def _decode(raw: bytes, language: Language) -> tuple[str, str, bool] | FileError:
    bom = raw.startswith(codecs.BOM_UTF8)
    body = raw[len(codecs.BOM_UTF8) :] if bom else raw
    encoding = "utf-8"
    if language is Language.PYTHON:
        try:
            detected, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        except SyntaxError as error:
            if not _CODING_COOKIE.search(b"\n".join(body.splitlines()[:2])):
                detected = "utf-8"  # no declaration, and not UTF-8: said below, with the line
            else:
                return FileError("", f"bad encoding declaration: {error}")
        encoding = "utf-8" if detected == "utf-8-sig" else detected
    try:
        return body.decode(encoding), encoding, bom
    except (UnicodeDecodeError, LookupError) as error:
        line = body[: getattr(error, "start", 0)].count(b"\n") + 1
        hint = "add a coding cookie or re-encode as UTF-8" if language is Language.PYTHON else "re-encode as UTF-8"
        return FileError("", f"not valid {encoding} text ({hint})", line)
