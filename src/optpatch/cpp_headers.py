"""Where a C++/CUDA file's headers come from, and how its build compiles it.

Three modes, chosen per file (docs/cpp-frontend.md, "Header modes"):

- `compile_commands`: the file's entry in a `compile_commands.json` (at the
  repository's root, in a `build*/` folder, or named by
  `--compile-commands`), with its own include folders, macros and standard.
- `inferred`: include folders found without running anything from the
  repository: its own `include/`, `includes/` and `csrc/` folders, those a
  `setup.py` names in `include_dirs` and CMake in `include_directories`
  (both read as text, `setup.py` through Python's `ast`, never executed);
  the installed torch's include folders, located from the package's path
  without importing it; the CUDA toolkit's (`CUDA_HOME`, `CUDA_PATH`, or
  the `nvcc` on PATH); the host compiler's system folders, which
  `c++ -E -v -x c++ /dev/null` lists (the machine's compiler, not the
  repository's code).
- `none`: no headers, as the header-free parse has always worked:
  `--no-headers`, or the fallback when a parse with headers fails.

The same reading of the build says which files are compiled with CUDA's
headers (a `compile_commands.json` entry whose include folders hold
`cuda_runtime_api.h`, or a source of a `CUDAExtension` in `setup.py`): OPT202
adds `ATen/cuda/CUDAContext.h`, which a CPU-only extension cannot include.

Discovery runs once per process for each (root, compile_commands): a few
milliseconds, plus ~20 ms for the host compiler's folders.
"""

from __future__ import annotations

import ast
import enum
import glob
import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import uuid
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Iterator

from optpatch.analysis_inputs import FileInput, FlagsInput, forget_checks
from optpatch.model import Tier

CUDA_SUFFIXES = frozenset({".cu", ".cuh"})
HEADER_SUFFIXES = frozenset({".h", ".hpp", ".cuh"})
INFERRED_STANDARD = "-std=c++20"
# What torch.utils.cpp_extension gives nvcc for a CUDAExtension: half and bfloat16 without operators that clash.
TORCH_CUDA_DEFINES = (
    "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
)
# The headers of cuBLAS, cuSPARSE and cuSOLVER that ATen/cuda/CUDAContext.h includes: not in every CUDA toolkit,
# but in NVIDIA's wheels, and in the folder `make setup` fills (kernels/build_check.py).
CUDA_LIBRARY_HEADERS = ("cublas_v2.h", "cusparse.h", "cusolverDn.h")
LIBRARY_HEADERS_ENV = "OPTPATCH_CUDA_LIBRARY_INCLUDE"
MAX_INFERRED_FOLDERS = 128
# Folders never searched for include folders: version control, environments, build output.
_SKIPPED_FOLDERS = frozenset({
    ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "__pycache__", "node_modules", "site-packages",
    "dist", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache",
})
_INCLUDE_FOLDER_NAMES = frozenset({"include", "includes", "csrc"})
_HOST_COMPILER_SECONDS = 10


class HeaderMode(enum.StrEnum):
    """Where a file's headers come from."""

    COMPILE_COMMANDS = "compile_commands"
    INFERRED = "inferred"
    NONE = "none"


class HeaderOutcome(enum.StrEnum):
    """What became of the parse with headers for one file."""

    USED = "used"  # the rules saw the file with its headers
    NOT_NEEDED = "not needed"  # the header-free parse left no question (no candidate): headers never read
    DISABLED = "disabled"  # --no-headers
    UNAVAILABLE = "unavailable"  # no flags could be found for it
    FAILED = "failed"  # the parse with headers failed: header-free instead
    TIMED_OUT = "timed out"  # the parse with headers took too long: header-free instead
    PUT_OFF = "put off"  # its precompiled header is not built, no fix rests on it: header-free; a later whole-tree run builds it


@dataclass(frozen=True)
class HeaderFlags:
    """How to parse one file with its headers."""

    mode: HeaderMode
    language: str  # "c++" or "cuda"
    arguments: tuple[str, ...]  # include folders, macros, the standard; absolute paths
    origin: str  # for people: the compile_commands.json entry; with inferred flags, why not one
    cuda_path: str | None = None  # the CUDA toolkit clang's CUDA mode uses
    # For people (-v): each include folder of `arguments`, with where it came from (`--include-dir`, `CPATH`...).
    folders: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def source_of(self, header: str, includer_folder: str) -> str:
        """Where `#include <header>` (or a quoted one from `includer_folder`) is found: the folder and its origin."""
        own = ((includer_folder, "the including file's folder"),) if includer_folder else ()
        for folder, origin in (*own, *self.folders):
            if os.path.isfile(os.path.join(folder, header)):
                return f"{folder} ({origin})"
        return "not found in any include folder"

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps([self.mode, self.language, self.arguments, self.cuda_path]).encode()).hexdigest()


@dataclass(frozen=True)
class HeaderReport:
    """Per file, in `-v` and the JSON report: which mode, and what became of it."""

    mode: HeaderMode
    outcome: HeaderOutcome
    detail: str = ""  # for people: where the flags came from, or why the headers were not used
    flags: HeaderFlags | None = field(default=None, compare=False)  # with USED: what the safety net parses with
    # With USED: clang's errors in that parse (message, count), which a rewrite must not add to.
    errors: tuple[tuple[str, int], ...] = field(default=(), compare=False)
    missing: str = ""  # with FAILED: the header these flags cannot find, when that is why
    # For -v: each of the file's own includes, and the folder (with its origin) the flags find it in.
    sources: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class CudaBuild:
    """Whether the build compiles a file with CUDA's headers, as far as its build files say."""

    known: bool
    evidence: str  # for people: which build file says so, or that none does
    inputs: tuple[FileInput, ...] = ()  # the build files read: a change to them changes the answer


@dataclass(frozen=True)
class HeaderSetup:
    """One run's answer to "where do headers come from": the scanned root and the command line's choice."""

    root: Path
    compile_commands: Path | None = None  # --compile-commands PATH
    enabled: bool = True  # False with --no-headers
    include_dirs: tuple[str, ...] = ()  # --include-dir and the `include-dirs` setting, searched first
    # This run, among those sharing the cache: a precompiled header one run put off, the next builds (cpp_pch.py).
    run: str = field(default="", compare=False)
    # Whether this run builds a precompiled header an earlier run put off: a run over the whole tree does; one
    # narrowed to some paths (pre-commit's, an editor's) puts it off again, and stays as fast as the first.
    builds_put_off: bool = field(default=True, compare=False)
    # The tiers whose fixes this run may apply (the policy's): only such a header-free fix must be confirmed by a
    # parse with headers now; a proposal's parse may be put off like a kept site's (cpp_second_look.py).
    applied_tiers: frozenset[Tier] = field(default=frozenset(Tier), compare=False)

    @classmethod
    def for_run(cls, root: Path, compile_commands: str | None, enabled: bool,
                include_dirs: tuple[str, ...] = (), builds_put_off: bool = True,
                applied_tiers: frozenset[Tier] = frozenset(Tier)) -> "HeaderSetup":
        """The setup of a new run: what an earlier run in this process found out is looked at again."""
        _project.cache_clear()
        _machine.cache_clear()
        forget_checks()
        folders = tuple(os.path.realpath(os.path.join(root, folder)) for folder in include_dirs)
        return cls(root.resolve(), Path(compile_commands).resolve() if compile_commands else None, enabled, folders,
                   uuid.uuid4().hex, builds_put_off, applied_tiers)

    def flags_for(self, path: Path) -> HeaderFlags | HeaderReport:
        """The flags to parse `path` with its headers, or the report of why there are none."""
        if not self.enabled:
            return HeaderReport(HeaderMode.NONE, HeaderOutcome.DISABLED, "--no-headers")
        return _flags_for(_project(self.root, self.compile_commands), _normal(path), self.include_dirs)

    def flags_input(self, path: Path) -> FlagsInput:
        """An input that holds while `flags_for(path)` gives the same answer."""
        return FlagsInput(self._flags_digest(path), partial(_flags_digest, self, str(path)))

    def _flags_digest(self, path: Path) -> str:
        return _flags_digest(self, str(path))

    def cuda_build(self, path: Path) -> CudaBuild:
        return _cuda_build(_project(self.root, self.compile_commands), _normal(path))


def _flags_digest(setup: HeaderSetup, path: str) -> str:
    answer = setup.flags_for(Path(path))
    if isinstance(answer, HeaderFlags):
        return answer.digest
    return hashlib.sha256(f"{answer.mode}\0{answer.outcome}\0{answer.detail}".encode()).hexdigest()


def _normal(path: Path) -> str:
    return os.path.realpath(path)


# -- what the repository and the machine say -------------------------------------------------------------


@dataclass
class _Entry:
    """One compile_commands.json entry, reduced to what a parse needs."""

    file: str
    language: str
    arguments: tuple[str, ...]
    cuda_path: str | None
    cuda_headers: bool


@dataclass
class _Project:
    root: str
    database: str | None  # the compile_commands.json in use
    database_error: str | None
    entries: dict[str, _Entry]
    # Inferred: the repository's own. Named: by its setup.py, CMakeLists.txt or compile_commands.json, searched as
    # the build searches them (-I). Guessed: only by their name (include, includes, csrc), searched after the
    # system's folders (-idirafter), so that none hides a system header: pytorch3d's pulsar/include/math.h is the
    # pulsar renderer's own, and as -I it stood in for <math.h> in every file, which then failed deep in torch.
    named_folders: tuple[str, ...]
    guessed_folders: tuple[str, ...]
    build_files: tuple[str, ...]  # setup.py and CMakeLists.txt that named include folders or CUDA sources
    cuda_sources: frozenset[str]  # setup.py CUDAExtension sources (real paths)
    setup_py: str | None


@cache
def _project(root: Path, compile_commands: Path | None) -> _Project:
    root_text = os.path.realpath(root)
    database, entries, error = _database(Path(root_text), compile_commands)
    setup = Path(root_text) / "setup.py"
    setup_reading = _read_setup_py(setup) if setup.is_file() else _SetupPy()
    conventional, lists_files = _repository_folders(root_text)
    cmake_folders, cmake_files = _cmake_include_folders(lists_files, Path(root_text))
    named = [*setup_reading.include_dirs, *cmake_folders, *_database_folders(entries, root_text)]
    named = _unique([f for f in named if _inside(f, root_text) and os.path.isdir(f)])[:MAX_INFERRED_FOLDERS]
    guessed = [f for f in conventional if f not in set(named)][: MAX_INFERRED_FOLDERS - len(named)]
    build_files = ([str(setup)] if setup_reading.include_dirs or setup_reading.cuda_sources else []) + cmake_files
    return _Project(
        root_text, database, error, entries, tuple(named), tuple(guessed), tuple(build_files),
        frozenset(setup_reading.cuda_sources), str(setup) if setup.is_file() else None,
    )


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _flags_for(project: _Project, path: str, include_dirs: tuple[str, ...] = ()) -> HeaderFlags | HeaderReport:
    entry = project.entries.get(path)
    user = [(folder, "--include-dir or include-dirs") for folder in include_dirs] + list(_machine().environment_folders)
    if entry is not None:
        machine = _machine()
        arguments = entry.arguments
        if entry.language == "c++" and machine.host_folders and not any(a.startswith("-nostdinc") for a in arguments):
            arguments = (*_host_arguments(machine), *arguments)
        database = os.path.relpath(project.database, project.root) if project.database else "compile_commands.json"
        arguments = (*_folder_arguments(user), *arguments)
        folders = (*user, *_named_folders(entry.arguments, database))
        return HeaderFlags(HeaderMode.COMPILE_COMMANDS, entry.language, arguments, f"{database}: its entry for the file",
                           entry.cuda_path or machine.cuda_path, folders)
    language = _inferred_language(path)
    machine = _machine()
    if language == "cuda" and machine.cuda_path is None:
        if Path(path).suffix in CUDA_SUFFIXES:
            return HeaderReport(HeaderMode.INFERRED, HeaderOutcome.UNAVAILABLE,
                                "no CUDA toolkit found (set CUDA_HOME or put nvcc on PATH)")
        language = "c++"
    arguments = [INFERRED_STANDARD, *_host_arguments(machine), *_folder_arguments(user)]
    for folder in project.named_folders:
        arguments += ["-I", folder]
    system = [*machine.torch_folders, *machine.python_folders, *machine.cuda_folders, *machine.wheel_folders]
    for folder, _origin in system:
        arguments += ["-isystem", folder]
    for folder in project.guessed_folders:
        arguments += ["-idirafter", folder]
    arguments += list(machine.torch_defines)
    if language == "cuda":
        arguments += list(TORCH_CUDA_DEFINES)
    origin = ""
    if project.database_error:
        origin = project.database_error
    elif project.database:
        origin = f"{os.path.relpath(project.database, project.root)} has no entry for it"
    named = [(folder, "the repository's include folders") for folder in project.named_folders]
    guessed = [(folder, "a repository folder named like an include folder, searched last") for folder in project.guessed_folders]
    host = [(folder, "the host compiler") for folder in machine.host_folders]
    folders = (*user, *named, *system, *host, *guessed)
    return HeaderFlags(HeaderMode.INFERRED, language, tuple(arguments), origin, machine.cuda_path, folders)


def _folder_arguments(folders: list[tuple[str, str]]) -> list[str]:
    return [word for folder, _origin in folders for word in ("-I", folder)]


def _named_folders(arguments: tuple[str, ...], database: str) -> list[tuple[str, str]]:
    return [(arguments[i + 1], database) for i, word in enumerate(arguments[:-1]) if word in _FOLDER_OPTIONS.values()]


def _inferred_language(path: str) -> str:
    """CUDA for .cu and .cuh, and for headers (they may hold device code, as header-free parses take every file);
    C++ for the .cpp/.cc/.cxx sources a host compiler builds."""
    suffix = Path(path).suffix.lower()
    return "cuda" if suffix in CUDA_SUFFIXES or suffix in HEADER_SUFFIXES else "c++"


def _host_arguments(machine: "_Machine") -> list[str]:
    """The host compiler's folders in its order; its own builtin headers (`lib/gcc/.../include`) last,
    after clang's, which parse where GCC's intrinsics headers do not."""
    if not machine.host_folders:
        return []
    arguments = ["-nostdinc++"]
    for folder in machine.host_folders:
        arguments += ["-idirafter" if "/lib/gcc/" in folder else "-isystem", folder]
    return arguments


def _cuda_build(project: _Project, path: str) -> CudaBuild:
    inputs = []
    if project.database:
        inputs.append(FileInput.of(project.database))
    entry = project.entries.get(path)
    if entry is not None:
        if entry.cuda_headers:
            return CudaBuild(True, "its compile_commands.json entry compiles it with CUDA's include folder", tuple(inputs))
        return CudaBuild(False, "its compile_commands.json entry has no CUDA include folder", tuple(inputs))
    if project.setup_py:
        inputs.append(FileInput.of(project.setup_py))
    if path in project.cuda_sources:
        return CudaBuild(True, "setup.py lists it among a CUDAExtension's sources", tuple(inputs))
    return CudaBuild(False, "no compile_commands.json entry or setup.py CUDAExtension names it", tuple(inputs))


# -- compile_commands.json -------------------------------------------------------------------------------------


def _database(root: Path, explicit: Path | None) -> tuple[str | None, dict[str, _Entry], str | None]:
    """(the database used, its entries by real path, why it could not be read)."""
    if explicit is not None:
        candidates = [explicit / "compile_commands.json" if explicit.is_dir() else explicit]
    else:
        candidates = [root / "compile_commands.json"]
        candidates += sorted(p / "compile_commands.json" for p in root.glob("build*") if p.is_dir())
    for candidate in candidates:
        if candidate.is_file():
            try:
                return str(candidate.resolve()), _entries(candidate), None
            except (OSError, ValueError, TypeError, KeyError) as error:
                return str(candidate.resolve()), {}, f"{candidate.name} could not be read: {error}"
    if explicit is not None:
        return None, {}, f"{explicit}: no compile_commands.json there"
    return None, {}, None


def _entries(database: Path) -> dict[str, _Entry]:
    found: dict[str, _Entry] = {}
    for item in json.loads(database.read_text(encoding="utf-8")):
        directory = item.get("directory", str(database.parent))
        arguments = item.get("arguments") or shlex.split(item["command"])
        file = os.path.realpath(os.path.join(directory, item["file"]))
        if file not in found and Path(file).suffix.lower() not in (".c",):
            found[file] = _entry(file, directory, list(arguments))
    return found


# Options whose value names an include folder, as clang spells them.
_FOLDER_OPTIONS = {
    "-I": "-I", "--include-path": "-I", "-isystem": "-isystem", "--system-include": "-isystem",
    "-iquote": "-iquote", "-idirafter": "-idirafter",
}


def _entry(file: str, directory: str, arguments: list[str]) -> _Entry:
    compiler = Path(arguments[0]).name if arguments else ""
    language = "cuda" if Path(file).suffix.lower() in CUDA_SUFFIXES else "c++"
    kept: list[str] = []
    cuda_path = None
    words = iter(_host_compiler_words(arguments[1:]))
    for word in words:
        if word in ("-x", "--x"):
            language = "cuda" if next(words, "") in ("cu", "cuda") else "c++"
            continue
        option, value = _split_option(word, words)
        if option in _FOLDER_OPTIONS:
            kept += [_FOLDER_OPTIONS[option], os.path.normpath(os.path.join(directory, value))]
        elif option in ("-D", "--define-macro"):
            kept.append(f"-D{value}")
        elif option in ("-U", "--undefine-macro"):
            kept.append(f"-U{value}")
        elif option in ("-std", "--std"):
            kept.append(f"-std={value}")
        elif option in ("-include", "--pre-include"):
            kept += ["-include", os.path.normpath(os.path.join(directory, value))]
        elif option == "--cuda-path":
            cuda_path = value
        elif word in ("-fopenmp", "-pthread"):
            kept.append(word)
    if cuda_path is None and "nvcc" in compiler:
        nvcc = arguments[0] if os.path.isabs(arguments[0]) else shutil.which(arguments[0])
        toolkit = str(Path(os.path.realpath(nvcc)).parent.parent) if nvcc else None
        if toolkit and os.path.isfile(os.path.join(toolkit, "include", "cuda_runtime_api.h")):
            cuda_path = toolkit  # not a wrapper script's folder
    folders = [kept[i + 1] for i, word in enumerate(kept[:-1]) if word in _FOLDER_OPTIONS.values()]
    # nvcc gives its own include folder to the host compiler of a .cpp too.
    cuda_headers = language == "cuda" or "nvcc" in compiler or any(
        os.path.isfile(os.path.join(f, "cuda_runtime_api.h")) for f in folders
    )
    return _Entry(file, language, tuple(kept), cuda_path, cuda_headers)


def _host_compiler_words(arguments: list[str]) -> list[str]:
    """nvcc's `-Xcompiler A,B` and `--compiler-options=A` hand flags to the host compiler: read them as flags too."""
    words = []
    iterator = iter(arguments)
    for word in iterator:
        if word in ("-Xcompiler", "--compiler-options"):
            words += next(iterator, "").split(",")
        elif word.startswith(("-Xcompiler=", "--compiler-options=")):
            words += word.split("=", 1)[1].split(",")
        else:
            words.append(word)
    return words


_VALUE_OPTIONS = (
    "--include-path", "--system-include", "--define-macro", "--undefine-macro", "--pre-include", "--cuda-path",
    "-isystem", "-iquote", "-idirafter", "-include", "--std", "-std", "-I", "-D", "-U",
)
_GLUED_OPTIONS = ("-isystem", "-iquote", "-idirafter", "-I", "-D", "-U")  # `-Idir`, `-isystem/usr/x`


def _split_option(word: str, rest: Iterator[str]) -> tuple[str, str]:
    """(`-I`, `dir`) from `-Idir`, `-I dir`, `--include-path=dir`; (word, "") for anything else."""
    for option in _VALUE_OPTIONS:
        if word == option:
            return option, next(rest, "")
        if word.startswith(option + "="):
            return option, word[len(option) + 1 :]
    for option in _GLUED_OPTIONS:
        if word.startswith(option) and not word.startswith("-include"):
            return option, word[len(option) :]
    return word, ""


def _database_folders(entries: dict[str, _Entry], root: str) -> list[str]:
    """The include folders of the database's entries: what a header without an entry of its own is built with."""
    folders = []
    for entry in entries.values():
        words = entry.arguments
        folders += [words[i + 1] for i, word in enumerate(words[:-1]) if word in ("-I", "-iquote")]
    return [f for f in folders if _inside(f, root)]


# -- the repository's own include folders ------------------------------------------------------------------------


def _repository_folders(root: str) -> tuple[list[str], list[Path]]:
    """(folders named include, includes or csrc, shallowest first; every CMakeLists.txt), in one walk that skips
    version control, environments and build output."""
    found, lists = [], []
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f not in _SKIPPED_FOLDERS and not f.startswith((".", "build")))
        found += [os.path.join(directory, f) for f in folders if f in _INCLUDE_FOLDER_NAMES]
        if "CMakeLists.txt" in files and len(lists) < MAX_INFERRED_FOLDERS:
            lists.append(Path(directory) / "CMakeLists.txt")
    return sorted(found, key=lambda f: (f.count(os.sep), f))[:MAX_INFERRED_FOLDERS], lists


@dataclass
class _SetupPy:
    include_dirs: list[str] = field(default_factory=list)
    cuda_sources: list[str] = field(default_factory=list)


def _read_setup_py(path: Path) -> _SetupPy:
    """`include_dirs` and CUDAExtension sources, read through `ast` and a small evaluator of paths: never run."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return _SetupPy()
    values = _PathEvaluator(path)
    reading = _SetupPy()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    values.bind(target.id, node.value)
                    if "include_dir" in target.id:
                        reading.include_dirs += values.paths(node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            values.extend(node.target.id, node.value)
            if "include_dir" in node.target.id:
                reading.include_dirs += values.paths(node.value)
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "include_dirs":
                    reading.include_dirs += values.paths(keyword.value)
            if _call_name(node).endswith("CUDAExtension"):
                sources = [k.value for k in node.keywords if k.arg == "sources"] or node.args[1:2]
                for source in sources:
                    reading.cuda_sources += [os.path.realpath(p) for p in values.paths(source, expand=True)]
    reading.include_dirs = [os.path.realpath(p) for p in reading.include_dirs]
    return reading


def _call_name(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""


class _PathEvaluator:
    """Strings and lists of paths built from literals, `__file__`, os.path, pathlib and glob; None for anything else.

    Names are bound in the order `ast.walk` meets assignments (the last binding wins), which is enough for the
    `this_dir = os.path.dirname(os.path.abspath(__file__))` and `sources += glob(...)` of real setup.py files.
    """

    def __init__(self, setup: Path):
        self.setup = setup
        self.names: dict[str, ast.expr | list] = {}

    def bind(self, name: str, value: ast.expr) -> None:
        self.names[name] = value

    def extend(self, name: str, value: ast.expr) -> None:
        previous = self.names.get(name)
        self.names[name] = ast.BinOp(previous, ast.Add(), value) if isinstance(previous, ast.expr) else value

    def paths(self, node: ast.expr, expand: bool = False) -> list[str]:
        value = self._value(node, 0)
        items = value if isinstance(value, list) else [value]
        found = []
        for item in items:
            if not isinstance(item, str):
                continue
            path = item if os.path.isabs(item) else str(self.setup.parent / item)
            found += sorted(glob.glob(path)) if expand and any(c in path for c in "*?[") else [path]
        return found

    def _value(self, node, depth: int):
        if depth > 20 or node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id == "__file__":
                return str(self.setup)
            bound = self.names.get(node.id)
            return self._value(bound, depth + 1) if isinstance(bound, ast.expr) else None
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self._value(e, depth + 1) for e in node.elts]
            return [x for item in items for x in (item if isinstance(item, list) else [item])]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self._value(node.left, depth + 1), self._value(node.right, depth + 1)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # pathlib's `/`
            left, right = self._value(node.left, depth + 1), self._value(node.right, depth + 1)
            return os.path.join(left, right) if isinstance(left, str) and isinstance(right, str) else None
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        return None

    def _call(self, node: ast.Call, depth: int):
        name = _call_name(node)
        if name in ("getcwd", "cwd") and not node.args:
            return str(self.setup.parent)  # pip builds a project from the folder of its setup.py
        arguments = [self._value(a, depth + 1) for a in node.args]
        if not arguments or any(not isinstance(a, str) for a in arguments):
            return None
        if name == "join":
            return os.path.join(*arguments)
        if name == "dirname" and len(arguments) == 1:
            return os.path.dirname(arguments[0])
        if name in ("abspath", "realpath", "normpath", "Path", "str", "fspath") and len(arguments) == 1:
            return os.path.normpath(arguments[0] if os.path.isabs(arguments[0]) else str(self.setup.parent / arguments[0]))
        if name in ("glob", "iglob") and len(arguments) == 1:
            pattern = arguments[0] if os.path.isabs(arguments[0]) else str(self.setup.parent / arguments[0])
            return sorted(glob.glob(pattern, recursive=True))
        return None


_CMAKE_INCLUDE = re.compile(r"\b(?:target_)?include_directories\s*\(([^)]*)\)", re.I)
_CMAKE_KEYWORDS = frozenset({"SYSTEM", "BEFORE", "AFTER", "PUBLIC", "PRIVATE", "INTERFACE"})
_CMAKE_DIRECTORY_VARIABLES = ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR")
_CMAKE_ROOT_VARIABLES = ("PROJECT_SOURCE_DIR", "CMAKE_SOURCE_DIR")


def _cmake_include_folders(lists_files: list[Path], root: Path) -> tuple[list[str], list[str]]:
    """(folders named by include_directories / target_include_directories, the CMakeLists.txt that named them)."""
    folders, files = [], []
    for lists in lists_files:
        try:
            text = lists.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        named = []
        for match in _CMAKE_INCLUDE.finditer(text):
            words = match.group(1).split()
            if match.group(0).lower().startswith("target_"):
                words = words[1:]  # the target
            for word in words:
                folder = _cmake_folder(word.strip('"'), lists.parent, root)
                if folder is not None:
                    named.append(folder)
        if named:
            folders += named
            files.append(str(lists))
    return folders, files


def _cmake_folder(word: str, directory: Path, root: Path) -> str | None:
    if word in _CMAKE_KEYWORDS or word.startswith("$<"):
        return None
    for variable in _CMAKE_DIRECTORY_VARIABLES:
        word = word.replace(f"${{{variable}}}", str(directory))
    for variable in _CMAKE_ROOT_VARIABLES:
        word = word.replace(f"${{{variable}}}", str(root))
    if "${" in word:
        return None
    return os.path.realpath(word if os.path.isabs(word) else directory / word)


# -- the machine: torch, CUDA, the host compiler ------------------------------------------------------------------


@dataclass(frozen=True)
class _Machine:
    """The machine's include folders, each with where it came from (for -v)."""

    torch_folders: tuple[tuple[str, str], ...]
    torch_defines: tuple[str, ...]
    python_folders: tuple[tuple[str, str], ...]
    cuda_path: str | None
    cuda_folders: tuple[tuple[str, str], ...]
    host_folders: tuple[str, ...]
    environment_folders: tuple[tuple[str, str], ...]  # CPATH, CPLUS_INCLUDE_PATH: as compilers read them
    wheel_folders: tuple[tuple[str, str], ...]  # nvidia/*/include of NVIDIA's pip wheels (cudnn, nccl, cublas...)


@cache
def _machine() -> _Machine:
    torch_folders, torch_defines = _torch_folders()
    cuda_path = _cuda_path()
    python = sysconfig.get_paths().get("include")
    pythons = ((python, "Python"),) if python and os.path.isfile(os.path.join(python, "Python.h")) else ()
    cuda_folders = tuple((folder, f"the CUDA toolkit at {cuda_path}") for folder in _cuda_folders(cuda_path))
    return _Machine(
        tuple((folder, "the installed torch") for folder in torch_folders), torch_defines, pythons,
        cuda_path, cuda_folders, _host_folders(), _environment_folders(), _wheel_folders(),
    )


INCLUDE_PATH_VARIABLES = ("CPATH", "CPLUS_INCLUDE_PATH")
MAX_WHEEL_FOLDERS = 64


def _environment_folders() -> tuple[tuple[str, str], ...]:
    """The folders of CPATH and CPLUS_INCLUDE_PATH, in that order, as gcc and clang search them (an empty entry,
    the current folder for a compiler, is left out: it would depend on where optpatch runs)."""
    found = []
    for variable in INCLUDE_PATH_VARIABLES:
        for folder in os.environ.get(variable, "").split(os.pathsep):
            if folder and os.path.isdir(folder):
                found.append((os.path.realpath(folder), variable))
    return tuple(dict.fromkeys(found))


def _wheel_folders() -> tuple[tuple[str, str], ...]:
    """`nvidia/*/include` under each site-packages folder: the headers NVIDIA's pip packages carry (cudnn, nccl,
    cublas, cusparse; CUDA 13's wheels gather them in `nvidia/cu13/include`)."""
    found = []
    for entry in sys.path:
        if entry and os.path.isdir(os.path.join(entry, "nvidia")):
            for folder in sorted(glob.glob(os.path.join(entry, "nvidia", "*", "include"))):
                package = Path(folder).parent.name
                found.append((os.path.realpath(folder), f"pip package nvidia-{package}"))
    return tuple(dict.fromkeys(found))[:MAX_WHEEL_FOLDERS]


def _torch_folders() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """torch's include folders from the package's location: `find_spec` does not import (or run) torch."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return (), ()
    if spec is None or spec.origin is None:
        return (), ()
    include = Path(spec.origin).parent / "include"
    if not include.is_dir():
        return (), ()
    folders = (str(include), str(include / "torch" / "csrc" / "api" / "include"))
    # A CPU wheel has c10's CUDA headers but not the configuration CMake writes for a CUDA build.
    defines = () if (include / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h").is_file() else ("-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE",)
    return folders, defines


def _cuda_path() -> str | None:
    candidates = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    candidates.append("/usr/local/cuda")
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, "include", "cuda_runtime_api.h")):
            return os.path.realpath(candidate)
    return None


def _cuda_folders(cuda_path: str | None) -> tuple[str, ...]:
    if cuda_path is None:
        return ()
    folders = [os.path.join(cuda_path, "include")]
    if os.path.isdir(os.path.join(cuda_path, "include", "cccl")):  # CUDA 13 keeps thrust and cub there
        folders.append(os.path.join(cuda_path, "include", "cccl"))
    library = _cuda_library_headers(folders)
    return tuple(folders + ([library] if library and library not in {f for f, _ in _wheel_folders()} else []))


def _cuda_library_headers(toolkit: list[str]) -> str | None:
    """A folder with cuBLAS/cuSPARSE/cuSOLVER's headers when the toolkit lacks them."""
    if all(any(os.path.isfile(os.path.join(f, h)) for f in toolkit) for h in CUDA_LIBRARY_HEADERS):
        return None
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates = [os.environ[LIBRARY_HEADERS_ENV]] if os.environ.get(LIBRARY_HEADERS_ENV) else []
    candidates += [os.path.join(entry, "nvidia", "cu13", "include") for entry in sys.path if entry]
    candidates.append(os.path.join(cache_home, "optpatch", "cuda-library-headers", "nvidia", "cu13", "include"))
    return next((c for c in candidates if all(os.path.isfile(os.path.join(c, h)) for h in CUDA_LIBRARY_HEADERS)), None)


def _host_folders() -> tuple[str, ...]:
    """The system include folders of the machine's C++ compiler, in its search order."""
    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        return ()
    try:
        listed = subprocess.run(
            [compiler, "-E", "-v", "-x", "c++", os.devnull], capture_output=True, text=True,
            timeout=_HOST_COMPILER_SECONDS, stdin=subprocess.DEVNULL,
        ).stderr
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(_search_list(listed))


def _search_list(listing: str) -> list[str]:
    """The `#include <...>` search list of `c++ -E -v` (what follows "search starts here:")."""
    folders, inside = [], False
    for line in listing.splitlines():
        if line.startswith("#include <...> search starts here:"):
            inside = True
        elif line.startswith("End of search list."):
            break
        elif inside and line.startswith(" "):
            folder = line.strip().removesuffix(" (framework directory)")
            if os.path.isdir(folder):
                folders.append(os.path.realpath(folder))
    return folders
