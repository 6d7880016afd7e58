"""What optpatch must do with any file, however damaged: never raise, refuse with a reason, or rewrite soundly.

`check_file` runs one file through the same steps a run takes (read and
decode, then `analyse_file` with every rule and unsafe fixes on) and returns
what happened plus every broken promise:

- nothing raises;
- a file optpatch cannot analyse comes back as a `FileError` with a reason,
  and never an "internal error" (that means a rule or a frontend failed);
- a rewrite of a Python file that CPython parses still parses; a rewrite of a
  C++/CUDA file adds no clang error (the header-free frontend's comparison);
- a rewrite keeps the file's BOM, its line endings (no CRLF added to an LF
  file, no lone LF to a CRLF file) and whether it ends with a newline;
- a rewrite brings in no word that neither the file nor a rule's source
  holds (an edit placed a character off turned `torch.zeros` into
  `torchemptys`, which still parses);
- analysing the rewrite again changes nothing (the patch is idempotent).
"""

from __future__ import annotations

import ast
import codecs
import functools
import inspect
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.config import Settings
from optpatch.cpp_frontend import new_errors
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.model import CodeArea, FileError
from optpatch.rule import load_rules
from optpatch.source import SourceFile, read_source

# Every area: the fixtures' paths read as tests, and the campaign is about the rewrites, not the default patch.
POLICY = FixPolicy(unsafe_fixes=True, fix_areas=frozenset(CodeArea))
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Outcome:
    """One file's fate: `kind` is "rewritten", "unchanged" or "refused: <reason kind>"."""

    kind: str
    problems: list[str] = field(default_factory=list)


def check_file(path: Path, rel: str) -> Outcome:
    """Analyse the file at `path` (which it may overwrite with the rewrite) as `rel`."""
    try:
        return _check(path, rel)
    except Exception:  # the promise under test: nothing escapes the engine
        return Outcome("raised", [f"{rel}: raised\n{traceback.format_exc()}"])


def _check(path: Path, rel: str) -> Outcome:
    source = read_source(path, rel)
    if isinstance(source, FileError):
        return _refused(source, rel)
    result = analyse_file(source, load_rules(), Settings(), POLICY)
    if result.error is not None:
        return _refused(result.error, rel)
    if result.new is None:
        return Outcome("unchanged")
    problems = []
    path.write_bytes(result.new)  # read back the way a second run would read the patched file
    rewritten = read_source(path, rel)
    if isinstance(rewritten, FileError):
        return Outcome("rewritten", [f"{rel}: the rewrite cannot be read back: {rewritten.reason}"])
    for why in (_worse(source, rewritten), _format_change(source.raw, result.new), _foreign_words(source, rewritten)):
        if why:
            problems.append(f"{rel}: {why}")
    again = analyse_file(rewritten, load_rules(), Settings(), POLICY)
    if again.error is not None:
        problems.append(f"{rel}: the rewrite cannot be analysed again: {again.error.reason}")
    elif again.new is not None:
        problems.append(f"{rel}: not idempotent: a second analysis rewrites the rewrite again")
    return Outcome("rewritten", problems)


def _refused(error: FileError, rel: str) -> Outcome:
    if not error.reason.strip():
        return Outcome("refused: no reason", [f"{rel}: a FileError without a reason"])
    kind = error.reason.split(":")[0].split(" (")[0]
    problems = [f"{rel}: {error.reason}"] if "internal error" in error.reason else []
    return Outcome(f"refused: {kind}", problems)


def _worse(original: SourceFile, rewritten: SourceFile) -> str | None:
    """Why the rewrite is broken where the original was not, or None."""
    if original.language == "python":
        try:
            ast.parse(original.raw)
        except (SyntaxError, ValueError):
            return None
        try:
            ast.parse(rewritten.raw)
        except (SyntaxError, ValueError) as error:
            return f"the rewrite does not parse: {error}"
        return None
    added = new_errors(original, rewritten)
    return "the rewrite adds clang errors: " + "; ".join(added[:3]) if added else None


def _foreign_words(original: SourceFile, rewritten: SourceFile) -> str | None:
    """The words the rewrite brings in that no rule writes, or None."""
    foreign = set(_WORD.findall(rewritten.text)) - set(_WORD.findall(original.text)) - _rule_words()
    return f"the rewrite brings in words no rule writes: {', '.join(sorted(foreign))}" if foreign else None


@functools.cache
def _rule_words() -> frozenset[str]:
    """Every word of the rules' files and of the analyses they write from (OPT102's dtype names live in
    analysis/torch_api.py), where their replacement texts and examples are written."""
    analyses = Path(inspect.getsourcefile(analyse_file)).parent / "analysis"
    files = [Path(inspect.getsourcefile(rule)) for rule in load_rules()] + sorted(analyses.glob("*.py"))
    return frozenset(word for path in files for word in _WORD.findall(path.read_text()))


def _format_change(old: bytes, new: bytes) -> str | None:
    """How the rewrite changed the file's format (CONTRACT.md: line endings and BOM are kept), or None."""
    if old.startswith(codecs.BOM_UTF8) != new.startswith(codecs.BOM_UTF8):
        return "the rewrite adds or drops the BOM"
    old_crlf, new_crlf = old.count(b"\r\n"), new.count(b"\r\n")
    old_lf, new_lf = old.count(b"\n") - old_crlf, new.count(b"\n") - new_crlf
    if old_crlf == 0 and new_crlf > 0:
        return "the rewrite adds CRLF line endings to a file that had none"
    if old_lf == 0 and new_lf > 0 and b"\r" in old:
        return "the rewrite adds LF line endings to a file that had only CR or CRLF"
    if old.endswith((b"\n", b"\r")) != new.endswith((b"\n", b"\r")):
        return "the rewrite changes whether the file ends with a newline"
    return None
