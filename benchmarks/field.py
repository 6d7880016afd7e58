"""Field benchmark: optpatch run as a user runs it on public PyTorch repositories, its patch checked as a maintainer would.

    PYTHONPATH=src python benchmarks/field.py /work/field/DeepSpeed /work/field/NeMo ... [--json field.json]
        [--jobs 2] [--tests] [--review-list]

For each TREE (only read: everything that writes works on a copy under $TMPDIR):

1. `optpatch apply TREE -o PATCH --format json --no-cache` (this checkout's
   CLI, a cold run): files, wall time, fixes applied by rule, tier and area
   (library / tests / benchmarks), proposals, keeps, advice.
2. The patch on a pristine copy of TREE: `git apply --check`.
3. Every patched file compiles: Python with `py_compile`; C++ with
   `g++ -fsyntax-only` and CUDA with nvcc against the installed torch's
   headers and the tree's include folders, when the original compiles that
   way here; otherwise (and always as well) the header-free comparison of
   clang errors (`cpp_frontend.new_errors`), with the reason it could not be
   compiled.
4. Formatter regressions, with the formatters the tree pins: the black,
   ruff-format, ufmt, yapf and clang-format hooks of its
   `.pre-commit-config.yaml` (their `rev`, `args`, `additional_dependencies`,
   `files` and `exclude`), else an exact pin in its requirement files or
   setup.py for a formatter its pyproject.toml configures; C++/CUDA files
   of a tree with a `.clang-format` go through clang-format (the version a
   hook or requirement file pins, else `UNPINNED_CLANG_FORMAT`). Each
   formatter is installed with pip, exactly as pinned, into a cached folder
   (`--cache`, default ~/.cache/optpatch-field), and checks each patched file
   it covers before and after the patch; the formatters read their settings
   ([tool.black], [tool.ruff], ruff.toml, .style.yapf, .clang-format) from
   the copy. Nothing the scanned tree names is ever executed.
5. Where the fixes land and the line limits: fixes in the patch in library
   code against the rest, the fixes left out by area (`fix-areas`), the
   fraction of the patch's default-tier fixes in library code (at least
   `MIN_LIBRARY_FRACTION`); and every line the patch writes against the
   limit optpatch keeps (optpatch.line_limits: the formatter's, else the
   file's longest line but at least 79 columns for Python): a line past it
   and longer than the longest line it replaces is a failure. Lines past
   the file's own longest line with no formatter, but within 79 columns,
   are counted apart.
6. With `--tests`, for the trees in `PROJECT_TESTS`: `optpatch apply TREE
   --validate "python -m pytest ..."` on the tests that touch patched files
   (the patched test files, and test files that import a patched module or
   name a class it defines), their extra requirements installed into a cached
   folder on the tests' PYTHONPATH.

Prints markdown tables (`--review-list` adds every default-tier fix in
library code: the hand review's worklist); `--json PATH` writes the raw data.
Exits 1 when a patch does not apply, a patched file no longer compiles, a
file that passed its formatter fails it after the patch, a patched line
passes the line limit, or less than `MIN_LIBRARY_FRACTION` of the patch's
default-tier fixes are in library code.
"""

from __future__ import annotations

import argparse
import ast
import enum
import hashlib
import json
import os
import platform
import py_compile
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
sys.path[:0] = [str(SRC), str(ROOT)]

import yaml  # noqa: E402  (PyYAML comes with pre-commit, a test dependency)

from kernels.build_check import NVCC_FLAGS, ToolchainMissing, find_toolchain, torch_include_dirs  # noqa: E402
from optpatch.cpp_frontend import new_errors  # noqa: E402
from optpatch.discovery import discover  # noqa: E402
from optpatch.formatter_config import read_formatter_config  # noqa: E402
from optpatch.line_limits import line_limit, longest_line  # noqa: E402
from optpatch.python_layout import width  # noqa: E402
from optpatch.model import FileError, Language  # noqa: E402
from optpatch.source import language_of, read_source  # noqa: E402

DEFAULT_CACHE = Path.home() / ".cache" / "optpatch-field"
# xformers' CI runs `pip install clang-format` (the newest) and pins nothing: take the newest release on PyPI
# when this benchmark was written (2026-11-26), so that reruns compare like with like.
UNPINNED_CLANG_FORMAT = "23.1.5"
COMMAND_TIMEOUT_S = 600
MIN_LIBRARY_FRACTION = 0.9  # of the default-tier fixes in the patch (issue 28)
OUTPUT_TAIL = 1500


class Tool(enum.StrEnum):
    """A formatter the benchmark knows how to run in check mode."""

    BLACK = "black"
    RUFF = "ruff-format"
    UFMT = "ufmt"  # usort + black, as one check
    YAPF = "yapf"
    CLANG_FORMAT = "clang-format"

    @property
    def language(self) -> Language:
        return Language.CPP if self is Tool.CLANG_FORMAT else Language.PYTHON


# pre-commit hooks by (repository owner/name, hook id): the tool, and the PyPI package its `rev` is a version of.
KNOWN_HOOKS = {
    ("psf/black", "black"): (Tool.BLACK, "black"),
    ("psf/black-pre-commit-mirror", "black"): (Tool.BLACK, "black"),
    ("astral-sh/ruff-pre-commit", "ruff-format"): (Tool.RUFF, "ruff"),
    ("charliermarsh/ruff-pre-commit", "ruff-format"): (Tool.RUFF, "ruff"),
    ("omnilib/ufmt", "ufmt"): (Tool.UFMT, "ufmt"),
    ("google/yapf", "yapf"): (Tool.YAPF, "yapf"),
    ("pre-commit/mirrors-yapf", "yapf"): (Tool.YAPF, "yapf"),
    ("pre-commit/mirrors-clang-format", "clang-format"): (Tool.CLANG_FORMAT, "clang-format"),
}
# Hook arguments that make a formatter write files; the check runs without them.
WRITING_ARGS = {"-i", "--in-place", "--fix"}
# Where a project pins its tools when no hook does (read as text, never executed).
PIN_FILES = ("requirements*.txt", "requirements/*.txt", "*requirements*.txt", "setup.py", "pyproject.toml")
VERSION = re.compile(r"\d+(?:\.\d+)+(?:\.?post\d+)?")


@dataclass(frozen=True)
class Formatter:
    """A formatter a tree pins, and which of its files it checks."""

    tool: Tool
    requirements: tuple[str, ...]  # what pip installs, as pinned
    pinned_by: str  # where the pin was read, in words
    args: tuple[str, ...] = ()  # the hook's arguments that bear on the check
    files: str | None = None  # pre-commit's `files` pattern
    exclude: tuple[str, ...] = ()  # the hook's and the configuration's `exclude` patterns

    @property
    def version(self) -> str:
        return self.requirements[0].split("==")[-1].strip()

    def covers(self, rel: str) -> bool:
        if language_of(rel) is not self.tool.language:
            return False
        if self.files is not None and not re.search(self.files, rel):
            return False
        return not any(re.search(pattern, rel) for pattern in self.exclude)


def hook_repository(url: str) -> str:
    """`https://github.com/psf/black.git` -> `psf/black`."""
    return "/".join(url.removesuffix(".git").rstrip("/").split("/")[-2:])


def pinned_version(tree: Path, package: str) -> tuple[str, str] | None:
    """An exact pin `package==X` in the tree's requirement files, setup.py or pyproject.toml: (version, file)."""
    pin = re.compile(rf"(?<![\w-]){re.escape(package)}\s*==\s*({VERSION.pattern})", re.I)
    for pattern in PIN_FILES:
        for path in sorted(tree.glob(pattern)):
            match = pin.search(path.read_text(errors="replace")) if path.is_file() else None
            if match:
                return match.group(1), path.relative_to(tree).as_posix()
    return None


def formatters_of(tree: Path) -> list[Formatter]:
    """The formatters TREE pins, Python's from its pre-commit hooks or requirement pins, C++'s for a .clang-format."""
    found: list[Formatter] = []
    config_path = tree / ".pre-commit-config.yaml"
    config = yaml.safe_load(config_path.read_text()) if config_path.is_file() else None
    config = config if isinstance(config, dict) else {}
    top_exclude = (config["exclude"],) if config.get("exclude") else ()
    for repo in config.get("repos") or []:
        for hook in repo.get("hooks") or []:
            known = KNOWN_HOOKS.get((hook_repository(str(repo.get("repo", ""))), hook.get("id")))
            if known is None and hook.get("id") == "clang-format":
                found += clang_format(tree, f"hook {repo.get('repo')} runs the clang-format on PATH", hook, top_exclude)
            if known is None:
                continue
            tool, package = known
            match = VERSION.search(str(repo.get("rev", "")))
            if match is None:
                continue
            extra = tuple(str(d) for d in hook.get("additional_dependencies") or ()) if tool is Tool.UFMT else ()
            found.append(Formatter(
                tool, (f"{package}=={match.group()}", *extra),
                f".pre-commit-config.yaml: {hook_repository(repo['repo'])} rev {repo['rev']}",
                *hook_scope(hook, top_exclude),
            ))
    if not any(f.tool.language is Language.PYTHON for f in found):
        found += python_formatter_pinned_elsewhere(tree)
    if (tree / ".clang-format").is_file() and not any(f.tool is Tool.CLANG_FORMAT for f in found):
        found += clang_format(tree, "no hook", {}, top_exclude)
    return found


def python_formatter_pinned_elsewhere(tree: Path) -> list[Formatter]:
    """ruff or black pinned in a requirement file or setup.py, for a tree whose configuration sets that formatter up."""
    settings = "\n".join(p.read_text(errors="replace") for p in (tree / "pyproject.toml", tree / "ruff.toml") if p.is_file())
    for tool, package, section in ((Tool.RUFF, "ruff", "[tool.ruff"), (Tool.BLACK, "black", "[tool.black]")):
        configured = section in settings or (tool is Tool.RUFF and (tree / "ruff.toml").is_file())
        pin = pinned_version(tree, package) if configured else None
        if pin:
            return [Formatter(tool, (f"{package}=={pin[0]}",), f"{pin[1]} (no pre-commit hook)")]
    return []


def clang_format(tree: Path, why: str, hook: dict, top_exclude: tuple[str, ...]) -> list[Formatter]:
    """A clang-format hook that does not pin a version: the one pinned in the tree's requirement files, else ours."""
    pin = pinned_version(tree, "clang-format")
    version, source = pin if pin else (UNPINNED_CLANG_FORMAT, "not pinned by the tree: the newest release in 2026-11")
    return [Formatter(Tool.CLANG_FORMAT, (f"clang-format=={version}",), f"{why}; {source}", *hook_scope(hook, top_exclude))]


def hook_scope(hook: dict, top_exclude: tuple[str, ...]) -> tuple[tuple[str, ...], str | None, tuple[str, ...]]:
    """A hook's arguments for a check (without those that write), its `files` and every `exclude` that applies."""
    args = tuple(str(a) for a in hook.get("args") or () if a not in WRITING_ARGS)
    return args, hook.get("files"), top_exclude + ((hook["exclude"],) if hook.get("exclude") else ())


# ---------------------------------------------------------------- installing and running formatters


class InstallFailed(Exception):
    """pip could not install a pinned requirement; the message holds pip's words."""


def pip_install(requirements: tuple[str, ...], cache: Path, with_dependencies: bool = True) -> Path:
    """REQUIREMENTS installed once with pip into CACHE/<requirements>/ (`--target`); a finished folder is reused.

    Without dependencies for packages that require torch: pip's `--target` would install another torch beside
    the one this interpreter has."""
    slug = "+".join(re.sub(r"\s+", "", r) for r in requirements).replace("==", "-")
    slug += "" if with_dependencies else "+no-deps"
    folder = cache / "packages" / slug
    if (folder / ".installed").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{slug}-", dir=folder.parent))
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(staging),
         *([] if with_dependencies else ["--no-deps"]), *requirements],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
    )
    if completed.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise InstallFailed(f"pip install {' '.join(requirements)} failed: {completed.stderr.strip()[-OUTPUT_TAIL:]}")
    (staging / ".installed").write_text("\n".join(requirements) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return folder


@dataclass(frozen=True)
class InstalledFormatter:
    formatter: Formatter
    folder: Path | None  # pip's --target folder; None when the install failed
    problem: str = ""  # why it could not be installed

    @classmethod
    def install(cls, formatter: Formatter, cache: Path) -> InstalledFormatter:
        try:
            return cls(formatter, pip_install(formatter.requirements, cache))
        except InstallFailed as failure:
            return cls(formatter, None, str(failure))

    def check_command(self, path: Path) -> list[str]:
        """The command that exits 0 when PATH is formatted, 1 when the formatter would change it."""
        args, folder = list(self.formatter.args), self.folder
        match self.formatter.tool:
            case Tool.BLACK:
                return [sys.executable, "-m", "black", "--check", "--diff", "--quiet", *args, str(path)]
            case Tool.RUFF:
                return [str(folder / "bin" / "ruff"), "format", "--diff", "--force-exclude", *args, str(path)]
            case Tool.UFMT:
                return [sys.executable, "-m", "ufmt", "diff", *args, str(path)]
            case Tool.YAPF:
                return [sys.executable, "-m", "yapf", "--diff", *args, str(path)]
            case Tool.CLANG_FORMAT:
                binary = next(folder.glob("clang_format/data/bin/clang-format*"))
                return [str(binary), "--dry-run", "--Werror", *args, str(path)]

    def environment(self) -> dict[str, str]:
        """The tool's own modules first, and a cache folder of its own: yapf and black keep their grammar tables
        there (`warm_up` writes them once; processes that generate them at the same time can read each other's
        half-written file and fail). Black's file cache is not consulted with --diff; ruff's is switched off."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        env.update(PYTHONPATH=str(self.folder), XDG_CACHE_HOME=str(self.folder / ".home-cache"), RUFF_NO_CACHE="true",
                   NO_COLOR="1")
        return env

    def warm_up(self) -> None:
        """One check of a one-line file, alone, so that the caches `environment` names exist before checks run in
        parallel."""
        language = self.formatter.tool.language
        with tempfile.TemporaryDirectory(prefix="optpatch-field-warm-up-") as scratch:
            sample = Path(scratch) / ("sample.py" if language is Language.PYTHON else "sample.cpp")
            sample.write_text("x = 1\n" if language is Language.PYTHON else "int x = 1;\n")
            subprocess.run(self.check_command(sample), cwd=scratch, capture_output=True, env=self.environment(),
                           timeout=COMMAND_TIMEOUT_S)


class Verdict(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"  # the formatter would change the file
    ERROR = "error"  # the formatter could not check it (a parse error, a refused version)


@dataclass
class FormatterCheck:
    path: str
    tool: Tool
    version: str
    before: Verdict
    after: Verdict | None = None
    output: str = ""  # the end of what the formatter printed after the patch, when it did not pass
    output_before: str = ""  # the same before the patch

    @property
    def regression(self) -> bool:
        return self.before is Verdict.PASS and self.after is not Verdict.PASS


def run_check(installed: InstalledFormatter, copy: Path, rel: str) -> tuple[Verdict, str]:
    completed = subprocess.run(
        installed.check_command(copy / rel), cwd=copy, capture_output=True, text=True,
        env=installed.environment(), timeout=COMMAND_TIMEOUT_S,
    )
    verdict = {0: Verdict.PASS, 1: Verdict.FAIL}.get(completed.returncode, Verdict.ERROR)
    output = (completed.stdout + completed.stderr).strip()
    return verdict, output[-OUTPUT_TAIL:] if verdict is not Verdict.PASS else ""


@dataclass(frozen=True)
class VerdictStore:
    """Formatter verdicts kept across runs: a file's verdict depends only on the formatter, its arguments, the
    tree's configuration (fixed by the tree's commit) and the file's bytes, so a rerun checks only new texts."""

    folder: Path
    tree_commit: str  # the full commit of a clean git tree

    @classmethod
    def for_tree(cls, tree: Path, cache: Path) -> VerdictStore | None:
        """None for a tree whose configuration is not pinned by a commit (not git, or with local changes)."""
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
        if head.returncode != 0 or dirty.returncode != 0 or dirty.stdout.strip():
            return None
        return cls(cache / "verdicts", head.stdout.strip())

    def _path(self, formatter: Formatter, rel: str, text: bytes) -> Path:
        key = json.dumps([formatter.requirements, formatter.args, self.tree_commit, rel]).encode()
        digest = hashlib.sha256(key + b"\0" + text).hexdigest()
        return self.folder / digest[:2] / f"{digest}.json"

    def get(self, formatter: Formatter, rel: str, text: bytes) -> tuple[Verdict, str] | None:
        path = self._path(formatter, rel, text)
        if not path.is_file():
            return None
        kept = json.loads(path.read_text())
        return Verdict(kept["verdict"]), kept["output"]

    def put(self, formatter: Formatter, rel: str, text: bytes, outcome: tuple[Verdict, str]) -> None:
        path = self._path(formatter, rel, text)
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}")
        staging.write_text(json.dumps({"verdict": outcome[0].value, "output": outcome[1]}))
        staging.replace(path)


def check_formatting(pairs: list[tuple[InstalledFormatter, str]], copy: Path, pool: ThreadPoolExecutor,
                     store: VerdictStore | None) -> list[tuple[Verdict, str]]:
    """Each (formatter, file) pair's verdict on the file as it is now in COPY, from STORE when it has one."""

    def verdict(pair: tuple[InstalledFormatter, str]) -> tuple[Verdict, str]:
        installed, rel = pair
        text = (copy / rel).read_bytes()
        kept = store.get(installed.formatter, rel, text) if store else None
        if kept is not None:
            return kept
        outcome = run_check(installed, copy, rel)
        if store and outcome[0] is not Verdict.ERROR:  # an error may be the machine's (memory), not the file's
            store.put(installed.formatter, rel, text, outcome)
        return outcome

    return list(pool.map(verdict, pairs))


# ---------------------------------------------------------------- compiling patched files


@dataclass
class CompileCheck:
    path: str
    compiles: bool | None  # None: could not be compiled here (`how` says why); the header-free check still ran
    how: str
    detail: str = ""


def python_compiles(path: Path, scratch: Path) -> str | None:
    """None when PATH byte-compiles, else the error."""
    try:
        py_compile.compile(str(path), cfile=str(scratch / "compiled.pyc"), doraise=True)
    except py_compile.PyCompileError as error:
        return str(error.msg).strip().splitlines()[-1]
    return None


def check_python(rel: str, original: Path, patched: Path, scratch: Path) -> CompileCheck:
    how = f"py_compile (Python {platform.python_version()})"
    if (before := python_compiles(original, scratch)) is not None:
        return CompileCheck(rel, None, how, f"the original does not compile here either: {before}")
    after = python_compiles(patched, scratch)
    return CompileCheck(rel, after is None, how, after or "")


CPP_UNITS = {".cpp", ".cc", ".cxx"}
CUDA_UNITS = {".cu"}
# What torch.utils.cpp_extension defines for every extension source.
EXTENSION_DEFINES = ("-DTORCH_EXTENSION_NAME=field_check", "-DTORCH_API_INCLUDE_EXTENSION_H")


@dataclass(frozen=True)
class CppToolchain:
    """How this machine compiles a tree's C++ and CUDA files: compilers, torch's and CUDA's headers."""

    gxx: str | None
    nvcc_command: tuple[str, ...] | None  # nvcc and its flags, or None
    include_dirs: tuple[Path, ...]  # torch, Python, CUDA libraries
    missing: str = ""  # what is absent, in words

    @classmethod
    def find(cls) -> CppToolchain:
        missing, dirs, nvcc = [], [Path(sysconfig.get_paths()["include"])], None
        try:
            dirs[:0] = torch_include_dirs()
        except ToolchainMissing as absent:
            missing.append(str(absent))
        try:
            toolchain = find_toolchain()
            nvcc = (str(toolchain.nvcc), *NVCC_FLAGS)
            dirs += [d for d in toolchain.include_dirs if d not in dirs]
            dirs += cuda_include(toolchain.nvcc)
        except ToolchainMissing as absent:
            missing.append(str(absent))
        gxx = shutil.which("g++")
        if gxx is None:
            missing.append("g++ not found")
        return cls(gxx, nvcc, tuple(dirs), "; ".join(missing))


def cuda_include(nvcc: Path) -> list[Path]:
    """The CUDA toolkit's include folder (nvcc may be a wrapper script elsewhere), for C++ files that include
    cuda_runtime.h."""
    candidates = [Path(os.environ[v]) / "include" for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates += [nvcc.resolve().parent.parent / "include", Path("/usr/local/cuda/include")]
    return [c for c in candidates if (c / "cuda_runtime_api.h").is_file()][:1]


def tree_include_dirs(root: Path, rel: str) -> list[Path]:
    """Where a tree's own headers may be: the file's folder and those above it, and every `include(s)` folder."""
    folders = [root / p for p in Path(rel).parents]
    for parent, names, _ in os.walk(root):
        names[:] = sorted(n for n in names if n != ".git")
        folders += [Path(parent) / n for n in names if n in ("include", "includes")]
    return folders


def compile_command(toolchain: CppToolchain, root: Path, rel: str, scratch: Path) -> list[str] | None:
    suffix = Path(rel).suffix.lower()
    includes = [f"-I{d}" for d in (*tree_include_dirs(root, rel), *toolchain.include_dirs)]
    if suffix in CPP_UNITS and toolchain.gxx:
        return [toolchain.gxx, "-std=c++20", "-fsyntax-only", "-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE", *EXTENSION_DEFINES,
                *includes, str(root / rel)]
    if suffix in CUDA_UNITS and toolchain.nvcc_command:
        return [*toolchain.nvcc_command, *EXTENSION_DEFINES, "-c", str(root / rel), "-o", str(scratch / "unit.o"), *includes]
    return None


def check_cpp(rel: str, tree: Path, copy: Path, toolchain: CppToolchain, scratch: Path) -> CompileCheck:
    before, after = read_source(tree / rel, rel), read_source(copy / rel, rel)
    if isinstance(before, FileError) or isinstance(after, FileError):
        return CompileCheck(rel, False, "read", getattr(after, "reason", getattr(before, "reason", "")))
    added = new_errors(before, after)
    if added:
        return CompileCheck(rel, False, "header-free clang comparison", "; ".join(added[:3]))
    header_free = "header-free clang comparison only (no new error)"
    original_command = compile_command(toolchain, tree, rel, scratch)
    if original_command is None:
        why = "a header compiles only inside the files that include it" if Path(rel).suffix.lower() not in (
            CPP_UNITS | CUDA_UNITS) else f"no compiler for it here: {toolchain.missing}"
        return CompileCheck(rel, None, header_free, why)
    original = subprocess.run(original_command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S * 2)
    if original.returncode != 0:
        errors = [line for line in original.stderr.splitlines() if "error" in line]
        first_error = errors[0] if errors else original.stderr.strip()[-300:]
        return CompileCheck(rel, None, header_free, f"the original does not compile here: {first_error.strip()}")
    patched = subprocess.run(compile_command(toolchain, copy, rel, scratch), capture_output=True, text=True,
                             timeout=COMMAND_TIMEOUT_S * 2)
    compiler = Path(original_command[0]).name
    return CompileCheck(rel, patched.returncode == 0, f"{compiler} with torch's and the tree's headers",
                        patched.stderr.strip()[-OUTPUT_TAIL:] if patched.returncode else "")


# ---------------------------------------------------------------- the patch on a copy


@dataclass
class PatchCheck:
    applies: bool = True
    apply_error: str = ""
    patched_files: list[str] = field(default_factory=list)
    compiles: list[CompileCheck] = field(default_factory=list)
    formatting: list[FormatterCheck] = field(default_factory=list)
    unformatted_scope: list[str] = field(default_factory=list)  # patched files no pinned formatter checks
    lines_written: int = 0  # lines the patch adds or changes
    overlong: list[dict] = field(default_factory=list)  # those past the line limit, longer than what they replace
    past_own_longest: int = 0  # with no formatter: past the file's longest line, but within 79 columns

    @property
    def compile_failures(self) -> list[CompileCheck]:
        return [c for c in self.compiles if c.compiles is False]

    @property
    def regressions(self) -> list[FormatterCheck]:
        return [c for c in self.formatting if c.regression]


def changed_blocks(patch: str) -> list[tuple[str, int, list[str], list[str]]]:
    """(file, first old line, old lines, new lines) of each run of `-`/`+` lines in a git-style patch."""
    blocks, rel, old_line = [], None, 0
    current: tuple[str, int, list[str], list[str]] | None = None
    for line in patch.splitlines():
        if line.startswith("+++ b/"):
            rel = line[6:]
        elif line.startswith("@@"):
            old_line = int(re.match(r"@@ -(\d+)", line).group(1))
        elif rel is not None and line[:1] in ("-", "+") and not line.startswith(("---", "+++")):
            if current is None:
                current = (rel, old_line, [], [])
                blocks.append(current)
            (current[2] if line[0] == "-" else current[3]).append(line[1:].rstrip("\r"))
            old_line += line[0] == "-"
        else:
            current = None
            old_line += line[:1] == " "
    return blocks


def check_line_limits(tree: Path, patch: str, outcome: PatchCheck) -> None:
    """Every line the patch writes, against the limit optpatch keeps for its file (optpatch.line_limits)."""
    blocks = changed_blocks(patch)
    rels = sorted({rel for rel, *_ in blocks})
    styles = read_formatter_config(tree, rels)
    texts = {rel: read_source(tree / rel, rel) for rel in rels}
    for rel, first, old, new in blocks:
        source = texts[rel]
        if isinstance(source, FileError) or not new:
            continue
        style = styles.style_of(rel, source.language)
        limit = line_limit(style, source.text)
        outcome.lines_written += len(new)
        replaced = max((width(line) for line in old), default=0)
        for offset, line in enumerate(new):
            written = width(line)
            if limit is not None and written > limit.columns and written > replaced:
                outcome.overlong.append({"path": rel, "near_line": first + offset, "width": written,
                                         "limit": limit.columns, "basis": limit.basis})
            elif source.language is Language.PYTHON and getattr(style, "formatter", None) is None \
                    and written > max(longest_line(source.text), replaced):
                outcome.past_own_longest += 1


def patched_paths(patch: str) -> list[str]:
    """The files a git-style patch changes, from its `+++ b/...` lines."""
    return sorted({line[6:].rstrip("\n") for line in patch.splitlines() if line.startswith("+++ b/")})


def copy_tree(tree: Path, where: Path) -> Path:
    """TREE without its history, in a fresh git repository (formatters find the project's root by `.git`)."""
    shutil.copytree(tree, where, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    return where


def check_patch(tree: Path, patch: Path, formatters: list[InstalledFormatter], toolchain: CppToolchain,
                scratch: Path, jobs: int, store: VerdictStore | None = None) -> PatchCheck:
    """Apply PATCH to a pristine copy of TREE: does it apply, does every patched file compile, and format as before?"""
    outcome = PatchCheck(patched_files=patched_paths(patch.read_text(errors="replace")))
    if not outcome.patched_files:
        return outcome
    check_line_limits(tree, patch.read_text(errors="replace"), outcome)
    copy = copy_tree(tree, scratch / "tree")
    applied = subprocess.run(["git", "apply", "--check", str(patch)], cwd=copy, capture_output=True, text=True)
    if applied.returncode != 0:
        outcome.applies, outcome.apply_error = False, applied.stderr.strip()[-OUTPUT_TAIL:]
        return outcome
    usable = [f for f in formatters if f.folder is not None]
    pairs = [(f, rel) for rel in outcome.patched_files for f in usable if f.formatter.covers(rel)]
    outcome.unformatted_scope = [rel for rel in outcome.patched_files if not any(f.formatter.covers(rel) for f in usable)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        before = check_formatting(pairs, copy, pool, store)
        subprocess.run(["git", "apply", str(patch)], cwd=copy, check=True, capture_output=True)
        after = check_formatting(pairs, copy, pool, store)
    for (installed, rel), (verdict_before, output_before), (verdict_after, output) in zip(pairs, before, after):
        outcome.formatting.append(FormatterCheck(
            rel, installed.formatter.tool, installed.formatter.version, verdict_before, verdict_after, output,
            output_before))
    for rel in outcome.patched_files:
        if language_of(rel) is Language.PYTHON:
            outcome.compiles.append(check_python(rel, tree / rel, copy / rel, scratch))
        elif language_of(rel) is Language.CPP:
            outcome.compiles.append(check_cpp(rel, tree, copy, toolchain, scratch))
    return outcome


# ---------------------------------------------------------------- optpatch, as a user runs it


def optpatch_environment(extra_path: tuple[Path, ...] = ()) -> dict[str, str]:
    paths = [str(SRC), *map(str, extra_path), os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))


def run_optpatch(tree: Path, patch: Path, jobs: int, extra: list[str] = (),
                 extra_path: tuple[Path, ...] = ()) -> tuple[int, dict | None, str, float]:
    """`optpatch apply TREE` once: (exit status, JSON report or None, stderr, wall seconds)."""
    command = [sys.executable, "-m", "optpatch", "apply", str(tree), "-o", str(patch), "--format", "json",
               "--no-cache", "-j", str(jobs), *extra]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, env=optpatch_environment(extra_path))
    seconds = time.perf_counter() - started
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        report = None
    return completed.returncode, report, completed.stderr, seconds


@dataclass(frozen=True)
class ReviewItem:
    """A default-tier fix in library code: what the hand review judges."""

    path: str
    line: int
    code: str
    reason: str
    replacement: str | None


@dataclass
class TreeReport:
    name: str
    path: str
    commit: str
    files: int = 0
    python_files: int = 0
    cpp_files: int = 0
    seconds: float = 0.0  # optpatch's run
    check_seconds: float = 0.0  # the patch's checks: copy, apply, compile, formatters
    status: int = 0
    problem: str = ""  # no report, or a traceback
    applied: dict[str, int] = field(default_factory=dict)  # "code tier area" -> fixes in the patch
    proposed: dict[str, int] = field(default_factory=dict)  # "code tier held" -> fixes left out
    kept: dict[str, int] = field(default_factory=dict)  # code -> sites kept
    advice: dict[str, int] = field(default_factory=dict)  # code -> advice
    errors: int = 0
    formatters: list[dict] = field(default_factory=list)
    patch: PatchCheck = field(default_factory=PatchCheck)
    review: list[ReviewItem] = field(default_factory=list)
    library_files: list[str] = field(default_factory=list)  # files the patch changes in library code
    validation: dict | None = None
    held_by_area: dict[str, int] = field(default_factory=dict)  # fixes `fix-areas` left out, by area
    safe_found: dict[str, int] = field(default_factory=dict)  # default-tier fixes found, by area, in the patch or not

    @property
    def library_fixes(self) -> int:
        return sum(count for key, count in self.applied.items() if key.endswith(" library"))

    @property
    def library_fraction(self) -> float | None:
        """The fraction of the patch's default-tier fixes that are in library code; None for an empty patch."""
        safe = {key: count for key, count in self.applied.items() if key.split()[1] == "safe"}
        total = sum(safe.values())
        return sum(count for key, count in safe.items() if key.endswith(" library")) / total if total else None

    @property
    def failed(self) -> bool:
        fraction = self.library_fraction
        return bool(self.problem or not self.patch.applies or self.patch.compile_failures or self.patch.regressions
                    or self.patch.overlong or (fraction is not None and fraction < MIN_LIBRARY_FRACTION))


def tree_commit(tree: Path) -> str:
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() if head.returncode == 0 else "not a git tree"


def count_findings(report: TreeReport, findings: list[dict]) -> None:
    def count(counts: dict[str, int], key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    for f in findings:
        if f["verdict"] == "fix" and f["tier"] == "safe" and f["held"] in (None, "area", "overlap"):
            count(report.safe_found, f["area"])
        if f["verdict"] == "fix" and f["written"]:
            count(report.applied, f"{f['code']} {f['tier']} {f['area']}")
            if f["area"] == "library" and f["tier"] == "safe":
                report.review.append(ReviewItem(f["path"], f["line"], f["code"], f["reason"], f["replacement"]))
            if f["area"] == "library" and f["path"] not in report.library_files:
                report.library_files.append(f["path"])
        elif f["verdict"] == "fix":
            count(report.proposed, f"{f['code']} {f['tier']} {f['held']}")
        elif f["verdict"] == "keep":
            count(report.kept, f["code"])
        else:
            count(report.advice, f["code"])


def benchmark_tree(tree: Path, installed: list[InstalledFormatter], toolchain: CppToolchain, jobs: int,
                   cache: Path, extra: tuple[str, ...] = ()) -> TreeReport:
    report = TreeReport(tree.name, str(tree), tree_commit(tree))
    languages = Counter(language_of(rel) for _, rel in discover(tree).files)
    report.python_files, report.cpp_files = languages[Language.PYTHON], languages[Language.CPP]
    report.formatters = [dict(asdict(i.formatter), version=i.formatter.version, problem=i.problem) for i in installed]
    with tempfile.TemporaryDirectory(prefix=f"optpatch-field-{tree.name}-") as scratch:
        patch = Path(scratch) / "model_patch.diff"
        report.status, json_report, stderr, report.seconds = run_optpatch(tree, patch, jobs, list(extra))
        if json_report is None or "Traceback" in stderr:
            report.problem = f"exit status {report.status}, no JSON report or a traceback: {stderr.strip()[-OUTPUT_TAIL:]}"
            return report
        summary = json_report["summary"]
        report.files = summary["files_analysed"] + summary["files_failed"] + len(json_report["skipped"])
        report.errors = summary["files_failed"]
        report.held_by_area = summary.get("held_by_area", {})
        count_findings(report, json_report["findings"])
        started = time.perf_counter()
        report.patch = check_patch(tree, patch, installed, toolchain, Path(scratch), jobs, VerdictStore.for_tree(tree, cache))
        report.check_seconds = time.perf_counter() - started
    return report


# ---------------------------------------------------------------- the projects' own tests, before and after


@dataclass(frozen=True)
class ProjectTests:
    """How a tree's CPU tests run here: where they are, what they need beyond this venv, what cannot run."""

    roots: tuple[str, ...]  # folders of test files
    requirements: tuple[str, ...]  # pip-installed with their dependencies into a cached folder on the tests' PYTHONPATH
    torch_dependent: tuple[str, ...] = ()  # the same without dependencies: their torch is this interpreter's
    pytest_args: tuple[str, ...] = ()
    not_here: tuple[tuple[str, str], ...] = ()  # (test file, why it cannot run on this machine)


# The trees whose tests touching patched files run on a CPU here (docs/field.md says why the others do not).
PROJECT_TESTS = {
    "ao": ProjectTests(("test",), ("expecttest==0.3.0", "parameterized==0.9.0", "packaging==26.4")),
    "diffusers": ProjectTests(
        ("tests/models", "tests/schedulers"),
        ("huggingface-hub==1.33.0", "httpx==0.28.1", "regex==2026.11.19", "safetensors==0.8.0", "Pillow==13.0.0",
         "parameterized==0.9.0", "importlib_metadata==10.2.0", "filelock==4.3.1", "requests==2.34.2", "psutil==7.1.3"),
        torch_dependent=("accelerate==1.15.0",),
        pytest_args=("-k", "not pretrained and not hub"),  # these download models from the Hugging Face Hub
    ),
}


def library_modules(rel: str) -> set[str]:
    """Names a test would use for the module at REL: its dotted path (without a leading `src.`)."""
    parts = list(Path(rel).with_suffix("").parts)
    parts = parts[1:] if parts[0] == "src" else parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return {".".join(parts)}


def defined_classes(path: Path) -> set[str]:
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError):
        return set()
    return {node.name for node in tree.body if isinstance(node, ast.ClassDef) and not node.name.startswith("_")}


def select_tests(tree: Path, suite: ProjectTests, patched: list[str], library: list[str]) -> list[str]:
    """The patched test files, and test files that import a patched LIBRARY module or name a class it defines.

    Only library modules: an example that defines its own `UNet2DConditionModel` would select every test of it."""
    skipped = {path for path, _ in suite.not_here}
    tests = sorted(
        p.relative_to(tree).as_posix() for root in suite.roots for p in (tree / root).rglob("*.py")
        if p.name.startswith("test_") or p.name.endswith("_test.py")
    )
    library = [rel for rel in library if rel.endswith(".py")]
    names = set().union(*(library_modules(rel) for rel in library), *(defined_classes(tree / rel) for rel in library))
    mentions = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None

    def touches(rel: str) -> bool:
        return rel in patched or (mentions is not None and mentions.search((tree / rel).read_text(errors="replace")))

    return [rel for rel in tests if rel not in skipped and touches(rel)]


def validate_tree(tree: Path, suite: ProjectTests, report: TreeReport, cache: Path, jobs: int) -> dict:
    """`optpatch apply TREE --validate CMD` with the selected tests: what ran, what passed, what was backed out."""
    selection = select_tests(tree, suite, report.patch.patched_files, report.library_files)
    outcome = {"selection": selection, "not_here": [list(p) for p in suite.not_here]}
    if not selection:
        outcome["status"] = "no test touches a patched file"
        return outcome
    try:
        deps = tuple(pip_install(reqs, cache, with_dependencies=full) for reqs, full in (
            (suite.requirements, True), (suite.torch_dependent, False)) if reqs)
    except InstallFailed as failure:
        outcome["status"] = str(failure)
        return outcome
    command = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *suite.pytest_args, *selection])
    outcome["command"] = command
    with tempfile.TemporaryDirectory(prefix=f"optpatch-field-validate-{tree.name}-") as scratch:
        status, validated, stderr, seconds = run_optpatch(
            tree, Path(scratch) / "validated.diff", jobs, ["--validate", command, "--validate-timeout", "1200"], deps)
    outcome.update(exit_status=status, seconds=round(seconds, 1))
    if validated is None or "validation" not in validated:
        outcome["status"] = f"no validation report: {stderr.strip()[-OUTPUT_TAIL:]}"
        return outcome
    validation = validated["validation"]
    outcome.update(status=validation["status"], validation=validation)
    # A fix in a file that is neither a selected test nor a library file the selection was made for passed
    # validation without a test that could see it.
    covered = set(selection) | set(report.library_files)
    outcome["passed_unexercised"] = [fix for fix in validation["kept"] if fix.split(":")[0] not in covered]
    return outcome


# ---------------------------------------------------------------- tables


def markdown_table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(" ".join(str(cell).split()).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def yes_no(flag: bool) -> str:
    return "yes" if flag else "**no**"


def runs_table(reports: list[TreeReport]) -> str:
    rows = []
    for r in reports:
        check = r.patch
        compiled = [c for c in check.compiles if c.compiles is not None]
        rows.append([
            r.name, r.commit, f"{r.files:,} ({r.python_files:,} + {r.cpp_files:,})", f"{r.seconds:.1f}",
            f"{r.check_seconds:.1f}",
            sum(r.applied.values()), sum(r.proposed.values()), sum(r.kept.values()), sum(r.advice.values()),
            len(check.patched_files), yes_no(check.applies) if check.patched_files else "(empty patch)",
            f"{sum(bool(c.compiles) for c in compiled)} of {len(check.compiles)}"
            + (f", **{len(check.compile_failures)} fail**" if check.compile_failures else ""),
            f"{len(check.regressions)} of {sum(c.before is Verdict.PASS for c in check.formatting)}",
        ])
    return markdown_table(
        ["repository", "commit", "files (Python + C++/CUDA)", "optpatch wall (s)", "checks wall (s)", "fixes applied",
         "proposed", "kept", "advice", "files patched", "patch applies", "patched files compile", "formatter regressions"],
        rows)


def applied_table(reports: list[TreeReport]) -> str:
    rows = []
    for r in reports:
        by_rule: dict[tuple[str, str], Counter] = {}
        for key, count in r.applied.items():
            code, tier, area = key.split()
            by_rule.setdefault((code, tier), Counter())[area] += count
        rows += [[r.name, code, tier, areas["library"], areas["tests"], areas["benchmarks"]]
                 for (code, tier), areas in sorted(by_rule.items())]
    return markdown_table(["repository", "rule", "tier", "library", "tests", "benchmarks"], rows)


def areas_table(reports: list[TreeReport]) -> str:
    """Where the fixes land (library or not), what `fix-areas` left out, and the lines the patch writes."""
    rows = []
    for r in reports:
        fraction = r.library_fraction
        found = sum(r.safe_found.values())
        check = r.patch
        rows.append([
            r.name, r.library_fixes, sum(r.applied.values()) - r.library_fixes,
            ", ".join(f"{count} {area}" for area, count in sorted(r.held_by_area.items())) or "-",
            "-" if fraction is None else f"{fraction:.2f}" + ("" if fraction >= MIN_LIBRARY_FRACTION else " **low**"),
            f"{r.safe_found.get('library', 0)} of {found}" if found else "-",
            check.lines_written, len(check.overlong) if not check.overlong else f"**{len(check.overlong)}**",
            check.past_own_longest,
        ])
    return markdown_table(
        ["repository", "library fixes", "other fixes in the patch", "left out by area", "library fraction of the "
         "patch's default tier", "default-tier fixes found in library (any area)", "lines written",
         "past the line limit", "past the file's longest line, within 79 (no formatter)"], rows)


def proposed_table(reports: list[TreeReport]) -> str:
    rows = [[r.name, *key.split(), count] for r in reports for key, count in sorted(r.proposed.items())]
    return markdown_table(["repository", "rule", "tier", "held", "fixes"], rows)


def kept_table(reports: list[TreeReport]) -> str:
    rows = [[r.name, code, r.kept.get(code, 0), r.advice.get(code, 0)] for r in reports for code in sorted(r.kept | r.advice)]
    return markdown_table(["repository", "rule", "kept", "advice"], rows)


def formatter_table(reports: list[TreeReport]) -> str:
    rows = []
    for r in reports:
        for f in r.formatters:
            checks = [c for c in r.patch.formatting if c.tool == f["tool"] and c.version == f["version"]]
            settings = " ".join(f["args"]) or "-"
            scope = ", ".join(filter(None, [f["files"] and f"files `{f['files']}`"]
                                     + [f"exclude `{e}`" for e in f["exclude"]])) or "all"
            rows.append([
                r.name, f["tool"], " ".join(f["requirements"]), f["pinned_by"], settings, scope,
                f["problem"] or len(checks), sum(c.before is Verdict.PASS for c in checks),
                sum(c.before is not Verdict.PASS for c in checks), sum(c.regression for c in checks),
            ])
        if not r.formatters:
            rows.append([r.name, "none pinned", "-", "-", "-", "-", "-", "-", "-", "-"])
    return markdown_table(
        ["repository", "formatter", "installed", "pinned by", "hook args", "scope", "patched files checked",
         "passed before", "failed before", "regressions"], rows)


def compile_table(reports: list[TreeReport]) -> str:
    rows = []
    for r in reports:
        for language, suffixes in (("Python", (".py",)), ("C++/CUDA", None)):
            checks = [c for c in r.patch.compiles if c.path.endswith(".py") == (suffixes is not None)]
            if not checks:
                continue
            not_compiled = sorted({f"{c.how}: {c.detail}" for c in checks if c.compiles is None})
            rows.append([r.name, language, len(checks), sum(c.compiles is True for c in checks),
                         sum(c.compiles is False for c in checks),
                         "; ".join(not_compiled) or "-"])
    return markdown_table(["repository", "language", "patched files", "compile", "fail", "not compiled here (why)"], rows)


def problems_section(reports: list[TreeReport]) -> list[str]:
    lines = []
    for r in reports:
        if r.problem:
            lines.append(f"- {r.name}: optpatch failed: {r.problem}")
        if not r.patch.applies:
            lines.append(f"- {r.name}: the patch does not apply: {r.patch.apply_error.splitlines()[0]}")
        for c in r.patch.compile_failures:
            lines.append(f"- {r.name}: `{c.path}` no longer compiles ({c.how}): {c.detail.splitlines()[-1]}")
        for line in r.patch.overlong:
            lines.append(f"- {r.name}: `{line['path']}` near L{line['near_line']}: a line of {line['width']} columns, "
                         f"past the limit of {line['limit']} ({line['basis']})")
        if r.library_fraction is not None and r.library_fraction < MIN_LIBRARY_FRACTION:
            lines.append(f"- {r.name}: {r.library_fraction:.2f} of the patch's default-tier fixes are in library code")
        for c in r.patch.regressions:
            lines.append(f"- {r.name}: `{c.path}` passed {c.tool} {c.version} before the patch, not after ({c.after}):")
            lines += ["      " + line for line in c.output.splitlines()[:20]]
    return lines


def validation_table(reports: list[TreeReport]) -> str:
    rows = []
    for r in reports:
        v = r.validation
        if v is None:
            continue
        details = v.get("validation") or {}
        dropped = "; ".join(f"{d['fix']} ({', '.join(d['failure']['failing_tests'][:3]) or 'see output'})"
                            for d in details.get("dropped", [])) or "-"
        rows.append([
            r.name, len(v["selection"]), v["status"], details.get("candidates", "-"), len(details.get("kept", [])),
            dropped, len(details.get("validate_tier_passed", [])), len(v.get("passed_unexercised", [])),
            details.get("runs", "-"), v.get("seconds", "-"),
        ])
    return markdown_table(["repository", "test files", "validation", "candidate fixes", "kept", "backed out (failing tests)",
                           "validate tier passed", "kept, in files no selected test covers", "runs of the tests",
                           "wall (s)"], rows)


def review_table(reports: list[TreeReport]) -> str:
    rows = [[r.name, f"{i.path}:{i.line}", i.code, f"`{i.replacement}`" if i.replacement else "-"]
            for r in reports for i in sorted(r.review, key=lambda i: (i.code, i.path, i.line))]
    return markdown_table(["repository", "file:line", "rule", "replacement"], rows)


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    model = models[0] if models else platform.machine()
    return f"{os.cpu_count()}-core {model}, Python {platform.python_version()}"


def optpatch_commit() -> str:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src", "rules"],
                           capture_output=True, text=True).stdout.strip()
    return head.stdout.strip() + (" (with uncommitted changes to src/ or rules/)" if dirty else "")


def render(reports: list[TreeReport], header: str, review_list: bool) -> str:
    sections = [
        header, "", "### Runs", "", runs_table(reports),
        "", "### Fixes in the patch, by rule, tier and area", "", applied_table(reports),
        "", "### Library fixes, the rest, and the line limits", "", areas_table(reports),
        "", "### Fixes proposed, not applied", "", proposed_table(reports),
        "", "### Sites kept, and advice", "", kept_table(reports),
        "", "### Formatters (each patched file checked before and after the patch)", "", formatter_table(reports),
        "", "### Patched files compile", "", compile_table(reports),
    ]
    if any(r.validation is not None for r in reports):
        sections += ["", "### The projects' tests, before and after (`--validate`)", "", validation_table(reports)]
    problems = problems_section(reports)
    sections += ["", "### Problems", ""] + (problems or ["none"])
    if review_list:
        sections += ["", "### Default-tier fixes in library code (the hand review's worklist)", "", review_table(reports)]
    return "\n".join(sections)


def install_all(trees: dict[Path, list[Formatter]], cache: Path) -> dict[Formatter, InstalledFormatter]:
    """Every pinned formatter, each set of requirements installed and warmed up once, in parallel (pip mostly
    waits on the network)."""
    unique = sorted({f for formatters in trees.values() for f in formatters}, key=lambda f: (f.requirements, str(f)))
    by_requirements = {f.requirements: f for f in unique}
    with ThreadPoolExecutor(max_workers=4) as pool:
        installed = dict(zip(by_requirements, pool.map(
            lambda f: InstalledFormatter.install(f, cache), by_requirements.values())))
        list(pool.map(InstalledFormatter.warm_up, [i for i in installed.values() if i.folder is not None]))
    return {f: InstalledFormatter(f, installed[f.requirements].folder, installed[f.requirements].problem)
            for f in unique}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path, help="repositories to run on (only read)")
    parser.add_argument("--json", type=Path, help="write the raw data here")
    parser.add_argument("--jobs", type=int, default=2, help="optpatch --jobs, and formatter checks at once (default 2)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"pip installs kept here (default {DEFAULT_CACHE})")
    parser.add_argument("--tests", action="store_true", help="also run the trees' CPU tests with --validate (PROJECT_TESTS)")
    parser.add_argument("--review-list", action="store_true", help="list every default-tier fix in library code")
    parser.add_argument("--fix-areas", help="passed to optpatch: patch these areas too (the default patch is library code)")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    trees = {tree.resolve(): formatters_of(tree.resolve()) for tree in args.trees}
    installed = install_all(trees, args.cache)
    toolchain = CppToolchain.find()
    reports = []
    for tree, formatters in trees.items():
        extra = ("--fix-areas", args.fix_areas) if args.fix_areas else ()
        report = benchmark_tree(tree, [installed[f] for f in formatters], toolchain, args.jobs, args.cache, extra)
        if args.tests and tree.name in PROJECT_TESTS:
            report.validation = validate_tree(tree, PROJECT_TESTS[tree.name], report, args.cache, args.jobs)
        reports.append(report)
    header = f"optpatch {optpatch_commit()}; {machine()}; {date.today().isoformat()}"
    print(render(reports, header, args.review_list))
    if args.json:
        document = {"optpatch": optpatch_commit(), "machine": machine(), "date": date.today().isoformat(),
                    "trees": [asdict(r) for r in reports]}
        args.json.write_text(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n")
    return 1 if any(r.failed for r in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
