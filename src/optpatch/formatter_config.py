"""The scanned repository's formatters and their settings, read as text; nothing of it is ever run.

optpatch shapes its edits the way the project's formatter would
(python_edits.py, cpp_edits.py), so that a patched file that passed the
project's formatter check still passes it. For each file this finds which
formatter the project runs on it, and with which settings:

- `.pre-commit-config.yaml` at the repository's top (the nearest folder
  with `.git` or `.hg` at or above the scanned root): the ruff-format, black, ufmt and
  yapf hooks, their `files` / `exclude` and `args` (`--line-length`, `-S`,
  `-C`, `--config KEY=VALUE`), the black version they pin, and
  `double-quote-string-fixer`; a clang-format hook and its `files`. When
  the config holds a Python formatter hook, a file no such hook matches is
  not formatted.
- ruff's configuration, nearest to the file as ruff resolves it:
  `.ruff.toml`, then `ruff.toml`, then a `pyproject.toml` with `[tool.ruff]`
  (`line-length`, `indent-width`, `[format]` `quote-style`,
  `skip-magic-trailing-comma`, `indent-style`, the excludes, `extend`).
- black's: `[tool.black]` in the `pyproject.toml` of the file's project
  root, found as black finds it (the nearest directory with `.git`, `.hg`
  or a `pyproject.toml` holding `[tool.black]`).
- yapf's `column_limit` (`.style.yapf`, `[tool.yapf]`, `setup.cfg`'s `[yapf]`).
- `.clang-format` / `_clang-format`, nearest to a C++/CUDA file
  (`BasedOnStyle`, `ColumnLimit`, `IndentWidth`, `ContinuationIndentWidth`,
  `DisableFormat`, `InheritParentConfig`).

Without a pre-commit formatter hook, a ruff configuration with a `format`
table means ruff format, else `[tool.black]` means black, else a yapf style
means yapf. A file no formatter governs gets `PythonStyle()` /
`CppStyle()`: optpatch then keeps its edits as written (python_edits.py
says what it still guarantees).

A `FormatterConfig` lists the configuration files it read with their
SHA-256, which is its part of the result cache's key (cache.py).
"""

from __future__ import annotations

import configparser
import enum
import hashlib
import os
import re
import shlex
import tomllib
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path, PurePosixPath
from typing import Iterable

import pathspec

from optpatch.discovery import repository_of
from optpatch.model import Language


class PythonFormatter(enum.StrEnum):
    BLACK = "black"
    RUFF = "ruff"
    YAPF = "yapf"


class Quotes(enum.StrEnum):
    """The quotes a string literal written by an edit takes."""

    DOUBLE = "double"
    SINGLE = "single"
    PRESERVE = "preserve"  # the formatter keeps each literal's quotes: follow the file's own majority


@dataclass(frozen=True)
class PythonStyle:
    """How the project's formatter lays out one Python file; the defaults: no formatter."""

    formatter: PythonFormatter | None = None
    line_length: int | None = None  # None: no formatter's limit (python_edits.py falls back on the file's own)
    quotes: Quotes = Quotes.PRESERVE
    magic_trailing_comma: bool = True
    indent_width: int = 4
    tabs: bool = False  # ruff's `indent-style = "tab"`: not reproduced, edits stay as written
    black_before_23: bool = False  # the pinned black predates 23.1's stable style
    black_targets_known: bool = False  # black's target versions are configured, so its trailing commas are known
    # yapf's `split_before_named_assigns` (on in every base style): off, yapf packs a split call's keywords
    # with the arguments before them, as it finds best, which python_edits.py does not reproduce.
    yapf_splits_before_keywords: bool = True


@dataclass(frozen=True)
class CppStyle:
    """How clang-format lays out one C++/CUDA file; the defaults: no `.clang-format`."""

    column_limit: int | None = None  # None: no clang-format; 0: clang-format's "no limit"
    indent_width: int = 2
    continuation_indent_width: int = 4
    bin_pack_arguments: bool = True  # False: a call's arguments all on one line, or one per line
    align_after_open_bracket: str = "Align"  # or "DontAlign", "AlwaysBreak", "BlockIndent"


FileStyle = PythonStyle | CppStyle


# What clang-format's predefined styles set: ColumnLimit, IndentWidth, ContinuationIndentWidth,
# BinPackArguments, AlignAfterOpenBracket.
_CLANG_BASES = {
    "llvm": (80, 2, 4, True, "Align"), "google": (80, 2, 4, True, "Align"), "chromium": (80, 2, 4, True, "Align"),
    "mozilla": (80, 2, 2, False, "Align"), "webkit": (0, 4, 4, True, "DontAlign"),
    "microsoft": (120, 4, 4, True, "Align"), "gnu": (79, 2, 4, True, "Align"),
}
BLACK_DEFAULT_LINE_LENGTH = 88
RUFF_DEFAULT_LINE_LENGTH = 88
YAPF_DEFAULT_COLUMN_LIMIT = 79
_YAPF_BASES = {"pep8": 79, "google": 80, "facebook": 80, "yapf": 80}
_PYTHON_KINDS = frozenset(formatter.value for formatter in PythonFormatter)
_RUFF_CONFIGS = (".ruff.toml", "ruff.toml", "pyproject.toml")  # ruff's precedence within one directory
_PYTHON_HOOKS = {"ruff-format": PythonFormatter.RUFF, "black": PythonFormatter.BLACK,
                 "black-jupyter": PythonFormatter.BLACK, "ufmt": PythonFormatter.BLACK, "yapf": PythonFormatter.YAPF}


@dataclass(frozen=True)
class _Hook:
    """One pre-commit hook that shapes files: what it is, the files it takes, and what its args set."""

    kind: str  # a PythonFormatter value, "clang-format" or "double-quote-string-fixer"
    files: tuple[str, ...] = ()  # regexes that must all match (the hook's, the config's)
    excludes: tuple[str, ...] = ()  # regexes none of which may match
    types: tuple[str, ...] = ()
    line_length: int | None = None
    skip_string_normalization: bool = False
    skip_magic_trailing_comma: bool = False
    quote_style: str | None = None  # ruff `--config format.quote-style=...`
    black_version: tuple[int, ...] | None = None
    targets: bool = False  # black `--target-version`
    clang_style: str | None = None  # clang-format `--style=NAME`

    def takes(self, rel: str, language: Language) -> bool:
        if self.types and not set(self.types) & _FILE_TYPES[language]:
            return False
        return all(_regex(pattern).search(rel) for pattern in self.files) and not any(
            _regex(pattern).search(rel) for pattern in self.excludes
        )


# pre-commit's `types` tags (the `identify` library's) that name the files each language holds.
_FILE_TYPES = {Language.PYTHON: {"python", "pyi", "file", "text"}, Language.CPP: {"c", "c++", "cuda", "file", "text"}}


@dataclass(frozen=True)
class _RuffConfig:
    directory: str
    line_length: int = RUFF_DEFAULT_LINE_LENGTH
    indent_width: int = 4
    quote_style: str = "double"
    skip_magic_trailing_comma: bool = False
    tabs: bool = False
    has_format_table: bool = False
    excludes: tuple[str, ...] = ()

    def excluded(self, rel: str) -> bool:
        relative = _relative_to(rel, self.directory)
        return bool(self.excludes) and _glob_spec(self.excludes).match_file(relative)


@dataclass(frozen=True)
class _BlackConfig:
    line_length: int = BLACK_DEFAULT_LINE_LENGTH
    skip_string_normalization: bool = False
    skip_magic_trailing_comma: bool = False
    targets: bool = False
    required_version: tuple[int, ...] | None = None
    force_exclude: str | None = None
    excludes: tuple[str, ...] = ()  # `exclude` and `extend-exclude`: not for files pre-commit names


@dataclass(frozen=True)
class FormatterConfig:
    """A tree's formatter configuration files, as read; parsed only when a file's style is asked for.

    A run whose files all come from the result cache needs only `sources`,
    the files' digests (its part of the cache key): nothing is parsed then.
    """

    files: tuple[tuple[str, bytes], ...] = ()  # (path relative to the repository's top, bytes) of each file found
    black_markers: frozenset[str] = frozenset()  # directories holding `.git` or `.hg`: black's project roots
    # The scanned root's folder within the repository's top (`read_formatter_config`): "" when it is the top. The
    # paths asked about are relative to the root; the configuration's, and the hooks' patterns, to the top.
    prefix: str = ""

    @property
    def sources(self) -> tuple[tuple[str, str], ...]:
        return tuple((rel, hashlib.sha256(data).hexdigest()) for rel, data in self.files)

    @cached_property
    def _settings(self) -> "_Settings":
        return _parse(dict(self.files), self.black_markers)

    def style_of(self, rel: str, language: Language) -> PythonStyle | CppStyle:
        return self._settings.style_of(_join(self.prefix, rel), language)

    def python_style(self, rel: str) -> PythonStyle:
        return self._settings.python_style(_join(self.prefix, rel))

    def cpp_style(self, rel: str) -> CppStyle:
        return self._settings.cpp_style(_join(self.prefix, rel))


@dataclass(frozen=True)
class _Settings:
    """The parsed settings: the hooks, and each formatter's configuration by directory."""

    hooks: tuple[_Hook, ...] = ()
    python_hooks_configured: bool = False
    clang_hooks_configured: bool = False
    ruff: tuple[tuple[str, _RuffConfig], ...] = ()  # by directory
    black: tuple[tuple[str, _BlackConfig], ...] = ()  # by project root
    black_roots: tuple[str, ...] = ()  # directories black would take for a project root
    yapf: tuple[tuple[str, _YapfConfig], ...] = ()  # by directory
    clang: tuple[tuple[str, CppStyle | None], ...] = ()  # by directory; None: DisableFormat

    @cached_property
    def _ruff(self) -> dict[str, _RuffConfig]:
        return dict(self.ruff)

    @cached_property
    def _black(self) -> dict[str, _BlackConfig]:
        return dict(self.black)

    @cached_property
    def _yapf(self) -> dict[str, "_YapfConfig"]:
        return dict(self.yapf)

    @cached_property
    def _clang(self) -> dict[str, CppStyle | None]:
        return dict(self.clang)

    def style_of(self, rel: str, language: Language) -> PythonStyle | CppStyle:
        return self.python_style(rel) if language is Language.PYTHON else self.cpp_style(rel)

    def python_style(self, rel: str) -> PythonStyle:
        hooks = [hook for hook in self.hooks if hook.takes(rel, Language.PYTHON)]
        formatter_hooks = [hook for hook in hooks if hook.kind in _PYTHON_KINDS]
        if self.python_hooks_configured:
            if not formatter_hooks:
                return PythonStyle()
            hook = formatter_hooks[-1]  # hooks run in order: the last formatter has the last word
            style = self._style_for(PythonFormatter(hook.kind), rel, hook)
        else:
            style = self._style_without_hooks(rel)
        if style.formatter is not None and style.quotes is Quotes.PRESERVE and any(
            hook.kind == "double-quote-string-fixer" for hook in hooks
        ):
            style = replace(style, quotes=Quotes.SINGLE)
        return style

    def _style_without_hooks(self, rel: str) -> PythonStyle:
        ruff = self._nearest(self._ruff, rel)
        if ruff is not None and ruff.has_format_table:
            return self._style_for(PythonFormatter.RUFF, rel, None)
        root = self._black_root(rel)
        if root in self._black:
            return self._style_for(PythonFormatter.BLACK, rel, None)
        if self._nearest(self._yapf, rel) is not None:
            return self._style_for(PythonFormatter.YAPF, rel, None)
        return PythonStyle()

    def _style_for(self, formatter: PythonFormatter, rel: str, hook: _Hook | None) -> PythonStyle:
        if formatter is PythonFormatter.RUFF:
            ruff = self._nearest(self._ruff, rel) or _RuffConfig("")
            if ruff.excluded(rel):
                return PythonStyle()
            quote_style = (hook.quote_style if hook and hook.quote_style else ruff.quote_style)
            return PythonStyle(
                formatter, hook.line_length if hook and hook.line_length else ruff.line_length,
                {"single": Quotes.SINGLE, "preserve": Quotes.PRESERVE}.get(quote_style, Quotes.DOUBLE),
                not (ruff.skip_magic_trailing_comma or (hook is not None and hook.skip_magic_trailing_comma)),
                ruff.indent_width, ruff.tabs,
            )
        if formatter is PythonFormatter.BLACK:
            black = self._black.get(self._black_root(rel), _BlackConfig())
            excludes = [black.force_exclude] if black.force_exclude else []
            if hook is None:
                excludes += black.excludes
            if any((regex := _black_regex(pattern)) is not None and regex.search("/" + rel) for pattern in excludes):
                return PythonStyle()
            version = (hook.black_version if hook else None) or black.required_version
            skip_strings = black.skip_string_normalization or (hook is not None and hook.skip_string_normalization)
            return PythonStyle(
                formatter, hook.line_length if hook and hook.line_length else black.line_length,
                Quotes.PRESERVE if skip_strings else Quotes.DOUBLE,
                not (black.skip_magic_trailing_comma or (hook is not None and hook.skip_magic_trailing_comma)),
                black_before_23=version is not None and version < (23, 1),
                black_targets_known=black.targets or (hook is not None and hook.targets),
            )
        yapf = self._nearest(self._yapf, rel) or _YapfConfig(YAPF_DEFAULT_COLUMN_LIMIT)
        return PythonStyle(formatter, hook.line_length if hook and hook.line_length else yapf.column_limit,
                           yapf_splits_before_keywords=yapf.split_before_named_assigns)

    def cpp_style(self, rel: str) -> CppStyle:
        hooks = [hook for hook in self.hooks if hook.kind == "clang-format" and hook.takes(rel, Language.CPP)]
        if self.clang_hooks_configured and not hooks:
            return CppStyle()
        named = next((hook.clang_style for hook in reversed(hooks) if hook.clang_style), None)
        if named is not None and named.lower() in _CLANG_BASES:
            return _clang_base(named)
        for directory in _ancestors(rel):
            if directory in self._clang:
                return self._clang[directory] or CppStyle()
        return _clang_base("llvm") if hooks else CppStyle()  # clang-format's own default without a file

    def _nearest(self, table: dict, rel: str):
        for directory in _ancestors(rel):
            if directory in table:
                return table[directory]
        return None

    def _black_root(self, rel: str) -> str:
        roots = set(self.black_roots)
        return next((directory for directory in _ancestors(rel) if directory in roots), "")


def _ancestors(rel: str) -> Iterable[str]:
    """The directories holding `rel`, nearest first, as relative POSIX paths ("" for the root)."""
    end = rel.rfind("/")
    while end > 0:
        yield rel[:end]
        end = rel.rfind("/", 0, end)
    yield ""


def _relative_to(rel: str, directory: str) -> str:
    return rel[len(directory) + 1 :] if directory else rel


# -- reading ------------------------------------------------------------------------------------------------

# The files each directory may hold that configure a formatter (ruff's in its order of precedence).
_CONFIG_NAMES = (".ruff.toml", "ruff.toml", "pyproject.toml", ".style.yapf", "setup.cfg", ".clang-format",
                 "_clang-format")
_RUFF_EXTEND = re.compile(r"""^\s*extend\s*=\s*["']([^"']+)["']""", re.M)


def read_formatter_config(root: Path, rels: Iterable[str]) -> FormatterConfig:
    """The configuration files that can govern `rels` (paths relative to `root`): one listing per directory.

    They are looked for from the repository's top (`discovery.repository_of`) down:
    a run on `server/` of a repository whose `.pre-commit-config.yaml` runs
    black lays its edits out for black, as a run on the whole repository
    does, and the hooks' `files` patterns see the paths pre-commit gives them.
    """
    top, prefix = repository_of(root)
    files: dict[str, bytes] = {}
    markers: set[str] = set()
    for directory in sorted({directory for rel in rels for directory in _ancestors(_join(prefix, rel))}):
        try:
            names = set(os.listdir(top / directory))
        except OSError:
            continue
        if names & {".git", ".hg"}:
            markers.add(directory)
        wanted = _CONFIG_NAMES + ((".pre-commit-config.yaml",) if directory == "" else ())
        for name in wanted:
            if name in names:
                _read_into(files, top, _join(directory, name))
    for rel in [rel for rel in files if rel.endswith((".toml",))]:
        _read_extended(files, top, rel, depth=0)
    return FormatterConfig(tuple(sorted(files.items())), frozenset(markers), prefix)



def _read_into(files: dict[str, bytes], root: Path, rel: str) -> None:
    try:
        path = root / rel
        if path.is_file():
            files[rel] = path.read_bytes()
    except OSError:
        pass  # unreadable: governs nothing


def _read_extended(files: dict[str, bytes], root: Path, rel: str, depth: int) -> None:
    """The files a ruff configuration `extend`s, within the tree: read now, so their bytes are in the key."""
    match = _RUFF_EXTEND.search(files.get(rel, b"").decode("utf-8", "replace"))
    if match is None or depth > 8:
        return
    target = _normalise((PurePosixPath(rel).parent / match.group(1)).as_posix())
    if target.startswith("../") or PurePosixPath(match.group(1)).is_absolute() or target in files:
        return
    _read_into(files, root, target)
    _read_extended(files, root, target, depth + 1)


def _parse(files: dict[str, bytes], markers: frozenset[str]) -> _Settings:
    parser = _Parser(files, markers)
    directories = sorted({rel.rpartition("/")[0] for rel in files} | set(markers) | {""})
    hooks, python_hooks, clang_hooks = parser.pre_commit()
    ruff, black, black_roots, yapf, clang = [], [], [], [], []
    for directory in directories:
        ruff_config = parser.ruff(directory)
        if ruff_config is not None:
            ruff.append((directory, ruff_config))
        black_config, is_root = parser.black(directory)
        if is_root:
            black_roots.append(directory)
        if black_config is not None:
            black.append((directory, black_config))
        yapf_config = parser.yapf(directory)
        if yapf_config is not None:
            yapf.append((directory, yapf_config))
        found, clang_style = parser.clang_format(directory)
        if found:
            clang.append((directory, clang_style))
    return _Settings(hooks, python_hooks, clang_hooks, tuple(ruff), tuple(black), tuple(black_roots), tuple(yapf),
                     tuple(clang))


@dataclass
class _Parser:
    """Parses configuration files held in memory, each once."""

    files: dict[str, bytes]
    markers: frozenset[str]
    _tomls: dict[str, dict | None] = field(default_factory=dict)

    def text(self, rel: str) -> str | None:
        data = self.files.get(rel)
        return None if data is None else data.decode("utf-8", "replace")

    def toml(self, rel: str) -> dict | None:
        if rel not in self._tomls:
            text = self.text(rel)
            try:
                self._tomls[rel] = tomllib.loads(text) if text is not None else None
            except tomllib.TOMLDecodeError:
                self._tomls[rel] = None  # a configuration its own tool cannot read governs nothing
        return self._tomls[rel]

    # -- pre-commit ---------------------------------------------------------------------------------------

    def pre_commit(self) -> tuple[tuple[_Hook, ...], bool, bool]:
        text = self.text(".pre-commit-config.yaml")
        if text is None:
            return (), False, False
        import yaml

        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError:
            return (), False, False
        if not isinstance(document, dict):
            return (), False, False
        files, exclude = str(document.get("files") or ""), str(document.get("exclude") or "^$")
        if not (_valid_regex(files) and _valid_regex(exclude)):
            return (), False, False  # pre-commit itself refuses this configuration
        hooks = []
        for repo in _list(document.get("repos")):
            if not isinstance(repo, dict):
                continue
            for entry in _list(repo.get("hooks")):
                if isinstance(entry, dict):
                    hook = _hook(repo, entry)
                    if hook is not None and all(map(_valid_regex, hook.files + hook.excludes)):
                        hooks.append(_within(hook, files, exclude))
        python = any(hook.kind in _PYTHON_KINDS for hook in hooks)
        clang = any(hook.kind == "clang-format" for hook in hooks)
        return tuple(hooks), python, clang

    # -- ruff ---------------------------------------------------------------------------------------------

    def ruff(self, directory: str) -> _RuffConfig | None:
        for name in _RUFF_CONFIGS:
            rel = _join(directory, name)
            document = self.toml(rel)
            if document is None:
                continue
            table = _tool_table(document, "ruff") if name == "pyproject.toml" else document
            if not isinstance(table, dict):
                continue
            return _ruff_config(directory, self._ruff_table(rel, table, depth=0))
        return None

    def _ruff_table(self, rel: str, table: dict, depth: int) -> dict:
        """The table with what it `extend`s underneath (ruff merges the extended file first)."""
        base = table.get("extend")
        if not isinstance(base, str) or depth > 8:
            return table
        target = (PurePosixPath(rel).parent / base).as_posix()
        if target.startswith("../") or PurePosixPath(base).is_absolute():
            return table  # outside the scanned tree: not read
        document = self.toml(_normalise(target))
        if document is None:
            return table
        extended = _tool_table(document, "ruff") if target.endswith("pyproject.toml") else document
        if not isinstance(extended, dict):
            return table
        merged = dict(self._ruff_table(_normalise(target), extended, depth + 1))
        for key, value in table.items():
            if key == "format" and isinstance(value, dict) and isinstance(merged.get("format"), dict):
                merged["format"] = {**merged["format"], **value}
            elif key != "extend":
                merged[key] = value
        return merged

    # -- black --------------------------------------------------------------------------------------------

    def black(self, directory: str) -> tuple[_BlackConfig | None, bool]:
        """The `[tool.black]` of this directory, and whether black would take it for a project root."""
        marker = directory in self.markers
        document = self.toml(_join(directory, "pyproject.toml"))
        table = _tool_table(document, "black")
        if table is None:
            return None, marker or directory == ""
        return _black_config(table), True

    # -- yapf ---------------------------------------------------------------------------------------------

    def yapf(self, directory: str) -> "_YapfConfig | None":
        text = self.text(_join(directory, ".style.yapf"))
        if text is not None:
            return _yapf_config(_ini_section(text, "style"))
        table = _tool_table(self.toml(_join(directory, "pyproject.toml")), "yapf")
        if table is not None:
            return _yapf_config({str(k).lower(): str(v) for k, v in table.items()})
        text = self.text(_join(directory, "setup.cfg"))
        if text is not None:
            section = _ini_section(text, "yapf")
            if section is not None:
                return _yapf_config(section)
        return None

    # -- clang-format -------------------------------------------------------------------------------------

    def clang_format(self, directory: str) -> tuple[bool, CppStyle | None]:
        for name in (".clang-format", "_clang-format"):
            text = self.text(_join(directory, name))
            if text is not None:
                return True, self._clang_style(directory, text)
        return False, None

    def _clang_style(self, directory: str, text: str) -> CppStyle | None:
        import yaml

        try:
            documents = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        except yaml.YAMLError:
            return None
        # The document without `Language` holds the defaults; a `Language: Cpp` one overrides them for C++.
        options: dict = {}
        for document in sorted(documents, key=lambda d: "Language" in d):
            if str(document.get("Language", "Cpp")).lower() == "cpp":
                options.update(document)
        if options.get("DisableFormat") is True:
            return None
        based_on = str(options.get("BasedOnStyle", "llvm")).lower()
        if based_on == "inheritparentconfig" or options.get("InheritParentConfig") is True:
            inherited = self._parent_clang_style(directory)
            base = CppStyle(inherited.column_limit or 0, inherited.indent_width, inherited.continuation_indent_width,
                            inherited.bin_pack_arguments, inherited.align_after_open_bracket)
        else:
            base = CppStyle(*_CLANG_BASES.get(based_on, _CLANG_BASES["llvm"]))
        bin_pack = options.get("BinPackArguments")
        align = options.get("AlignAfterOpenBracket")
        return CppStyle(
            _int(options.get("ColumnLimit"), base.column_limit or 0), _int(options.get("IndentWidth"), base.indent_width),
            _int(options.get("ContinuationIndentWidth"), base.continuation_indent_width),
            bin_pack if isinstance(bin_pack, bool) else base.bin_pack_arguments,
            str(align) if align in ("Align", "DontAlign", "AlwaysBreak", "BlockIndent") else base.align_after_open_bracket,
        )

    def _parent_clang_style(self, directory: str) -> CppStyle:
        if directory == "":
            return _clang_base("llvm")
        parent = str(PurePosixPath(directory).parent)
        parent = "" if parent == "." else parent
        for candidate in _ancestors(_join(parent, "x")):
            found, style = self.clang_format(candidate)
            if found:
                return style or _clang_base("llvm")
        return _clang_base("llvm")


def _tool_table(document: dict | None, name: str) -> dict | None:
    """`[tool.NAME]` of a pyproject.toml, or None (absent, or not a table: the tool itself would refuse it)."""
    tool = document.get("tool") if isinstance(document, dict) else None
    table = tool.get(name) if isinstance(tool, dict) else None
    return table if isinstance(table, dict) else None


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _normalise(rel: str) -> str:
    parts: list[str] = []
    for part in PurePosixPath(rel).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def _int(value, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _clang_base(name: str) -> CppStyle:
    return CppStyle(*_CLANG_BASES[name.lower()])


def _ruff_config(directory: str, table: dict) -> _RuffConfig:
    fmt = table.get("format") if isinstance(table.get("format"), dict) else {}
    excludes = [p for key in ("exclude", "extend-exclude") for p in _strings(table.get(key))]
    excludes += _strings(fmt.get("exclude"))
    return _RuffConfig(
        directory,
        _int(table.get("line-length"), RUFF_DEFAULT_LINE_LENGTH),
        _int(table.get("indent-width"), 4),
        str(fmt.get("quote-style", "double")),
        fmt.get("skip-magic-trailing-comma") is True,
        fmt.get("indent-style") == "tab",
        "format" in table,
        tuple(excludes),
    )


def _black_config(table: dict) -> _BlackConfig:
    def value(name: str):
        return table.get(name, table.get(name.replace("-", "_")))

    version = value("required-version")
    return _BlackConfig(
        _int(value("line-length"), BLACK_DEFAULT_LINE_LENGTH),
        value("skip-string-normalization") is True,
        value("skip-magic-trailing-comma") is True,
        bool(value("target-version")),
        _version(str(version)) if version is not None else None,
        str(value("force-exclude")) if value("force-exclude") else None,
        tuple(str(value(name)) for name in ("exclude", "extend-exclude") if value(name)),
    )


@dataclass(frozen=True)
class _YapfConfig:
    """What optpatch reads of a yapf style: its column limit, and whether it splits before every keyword of a split
    call (`split_before_named_assigns`, on in every base style)."""

    column_limit: int
    split_before_named_assigns: bool = True


def _yapf_config(section: dict | None) -> _YapfConfig:
    section = section or {}
    limit = section.get("column_limit")
    split = str(section.get("split_before_named_assigns", "true")).strip().lower() not in ("false", "0", "no", "off")
    if limit is not None and str(limit).strip().isdigit():
        return _YapfConfig(int(str(limit).strip()), split)
    base = str(section.get("based_on_style", "pep8")).strip().lower()
    return _YapfConfig(_YAPF_BASES.get(base, YAPF_DEFAULT_COLUMN_LIMIT), split)


def _ini_section(text: str, name: str) -> dict | None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    if not parser.has_section(name):
        return None
    return {key.lower(): value for key, value in parser.items(name)}


def _list(value) -> list:
    return value if isinstance(value, list) else []


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern:
    return re.compile(pattern)


def _valid_regex(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _version(text: str) -> tuple[int, ...] | None:
    match = re.search(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    return tuple(int(part) for part in match.groups() if part is not None) if match else None


def _glob_spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def _black_regex(pattern: str) -> re.Pattern | None:
    """black's exclude regex (verbose when it spans lines, as black compiles it); None if black would refuse it."""
    try:
        return re.compile(pattern, re.VERBOSE if "\n" in pattern else 0)
    except re.error:
        return None


def _within(hook: _Hook, files: str, exclude: str) -> _Hook:
    """The hook restricted by the config's top-level `files` and `exclude` as well."""
    return replace(hook, files=hook.files + ((files,) if files else ()),
                   excludes=hook.excludes + ((exclude,) if exclude != "^$" else ()))


def _hook(repo: dict, entry: dict) -> _Hook | None:
    """The hook's kind and settings, if it shapes source files; None for any other hook."""
    hook_id = str(entry.get("id", ""))
    kind = _hook_kind(hook_id, entry)
    if kind is None:
        return None
    args = [str(arg) for arg in _list(entry.get("args"))]
    types = tuple(str(t) for key in ("types", "types_or") for t in _list(entry.get(key)))
    files, exclude = entry.get("files"), entry.get("exclude")
    hook = _Hook(kind, (str(files),) if files else (), (str(exclude),) if exclude else (), types)
    if kind == PythonFormatter.BLACK:
        version = _version(str(repo.get("rev", ""))) if hook_id != "ufmt" else None
        for dependency in _list(entry.get("additional_dependencies")):
            match = re.match(r"\s*black\s*==\s*([\w.]+)", str(dependency))
            if match:
                version = _version(match.group(1))
        hook = replace(hook, black_version=version)
    return _with_args(hook, args)


def _hook_kind(hook_id: str, entry: dict) -> str | None:
    if hook_id in _PYTHON_HOOKS:
        return _PYTHON_HOOKS[hook_id].value
    if hook_id in ("clang-format", "double-quote-string-fixer"):
        return hook_id
    command = str(entry.get("entry", ""))
    words = shlex.split(command) if command else []
    if words[:2] == ["ruff", "format"] or words[:4] == ["python", "-m", "ruff", "format"]:
        return PythonFormatter.RUFF.value
    if words[:1] == ["black"] or words[:3] == ["python", "-m", "black"]:
        return PythonFormatter.BLACK.value
    return None


def _with_args(hook: _Hook, args: list[str]) -> _Hook:
    """What a hook's command-line arguments change: `--line-length`, `-S`, `-C`, ruff's `--config K=V`, `--style`."""
    changes: dict = {}
    words = iter(args)
    for word in words:
        name, _, inline = word.partition("=")
        if word.startswith("-l") and word[2:].isdigit():
            changes["line_length"] = int(word[2:])
        elif name in ("-l", "--line-length"):
            number = inline or next(words, "")
            if number.isdigit():
                changes["line_length"] = int(number)
        elif word in ("-S", "--skip-string-normalization"):
            changes["skip_string_normalization"] = True
        elif word in ("-C", "--skip-magic-trailing-comma"):
            changes["skip_magic_trailing_comma"] = True
        elif name in ("-t", "--target-version"):
            changes["targets"] = True
            if not inline:
                next(words, "")
        elif name == "--config":
            setting = inline or next(words, "")
            _ruff_override(setting, changes)
        elif name in ("--style", "-style"):
            style = inline or next(words, "")
            changes["clang_style"] = style
            if hook.kind == PythonFormatter.YAPF:
                match = re.search(r"column_limit\s*[:=]\s*(\d+)", style)
                if match:
                    changes["line_length"] = int(match.group(1))
    return replace(hook, **changes)


def _ruff_override(setting: str, changes: dict) -> None:
    """ruff's `--config "KEY = VALUE"` for the settings that shape an edit."""
    key, _, value = setting.partition("=")
    key, value = key.strip(), value.strip().strip("'\"")
    if key == "line-length" and value.isdigit():
        changes["line_length"] = int(value)
    elif key == "format.quote-style":
        changes["quote_style"] = value
    elif key == "format.skip-magic-trailing-comma":
        changes["skip_magic_trailing_comma"] = value.lower() == "true"
