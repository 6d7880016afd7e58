"""Precompiled headers for the parse with headers: the heavy includes at the top of a file, parsed once.

A file that includes torch's headers costs 12-18 s of CPU to parse whole,
nearly all of it in the headers' function bodies and the templates they
instantiate. The rules look only at the file itself, so its leading
`#include` lines are parsed once into a precompiled header with function
bodies skipped (clang keeps those of constexpr functions, which constant
bounds need), and each parse of the file loads it:

    torch/extension.h, C++:  5-6 s to build, 99 MB, then 0.04 s a parse (was 12-17 s)
    + ATen/cuda/CUDAContext.h, CUDA host mode: 8 s, 131 MB, then 0.16 s

(2-core AMD EPYC VM, libclang 22, 2026-11-26; docs/benchmarks.md.)

What is precompiled is exactly the file's preamble: the `#include` lines
before its first code or other directive (comments, blank lines, `#pragma
once` and an include guard may come between; one-line `#define` and
`#undef` lines, which may steer the headers, join them, and so does an
`#if` block of includes alone, taken whole), up to the last
include that names a heavy library (torch, ATen, c10, pybind11, CUDA and
its libraries, the x86 intrinsics), or is a project header that reaches
one through its own quoted includes (`LocalHeaders`, read as text). The
file is then parsed with those lines blanked out, so its offsets do not
move and every header is still read once, in the file's order. Includes
optpatch itself adds go after the last include, outside that preamble, so
a rewritten file reuses its original's precompiled header.

Each precompiled header lives in the user's cache directory (never in the
scanned repository), named by a hash of libclang's version, the language
and flags, the preamble's text and, when it has a quoted include, the
file's folder (which those are relative to), beside the manifest of every header it read (their
paths, sizes, modification times and hashes; analysis_inputs.py). It is
used while that manifest holds, and built again when it does not; clang
itself also refuses a precompiled header whose inputs changed. Concurrent
processes take a lock per file, so one builds while the others wait.
Files unused for `STALE_AFTER_DAYS`, and the least recently used beyond
`MAX_TOTAL_BYTES`, are deleted whenever one is built.

A build costs 5-10 s of CPU for torch's headers, more than a header-free
scan of most trees: so a run may put one off (`readiness`, `put_off`,
cpp_second_look.py says when), leaving a marker (`KEY.wanted`) that makes
the next run that wants it build it.
"""

from __future__ import annotations

import enum
import fcntl
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from optpatch.analysis_inputs import HeaderSetInput, file_sha256, record_header_set
from optpatch.user_cache import cache_dir

FORMAT = 2  # bumped when what goes into a precompiled header or its key changes
STALE_AFTER_DAYS = 30
MAX_TOTAL_BYTES = 2 * 1024**3  # the default cap; OPTPATCH_PCH_MAX_MB sets another (docs/cpp-frontend.md)
MAX_MB_VARIABLE = "OPTPATCH_PCH_MAX_MB"
BUILD_SECONDS = "last-build.json"  # how long the last precompiled header took: the estimate a first run states
# Includes worth precompiling: torch and its libraries, CUDA and its libraries, Python (pulled in by torch/extension.h).
_HEAVY = re.compile(
    r"^(?:(?:torch|ATen|c10|caffe2|pybind11|cub|thrust|cuda|cutlass|cute|cooperative_groups|nv)/"
    r"|(?:cuda|cublas|cusparse|cusolver|curand|cufft|cudnn|nccl|Python|mma)\w*\.h$|\w*intrin\.h$)"
)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"][ \t]*(?://.*)?\r?\n?$')
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b")
_GUARD_OPEN = re.compile(r"^[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\r?\n?$")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]*\r?\n?$")
# A one-line `#define NAME [value]` or `#undef NAME` (a trailing comment allowed; no line continuation).
_MACRO = re.compile(r"^[ \t]*#[ \t]*(?:define[ \t]+\w+(?:\([^)]*\))?(?:[ \t][^\\\r\n]*)?|undef[ \t]+\w+[ \t]*(?://.*)?)\r?\n?$")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass(frozen=True)
class Preamble:
    """The include lines a precompiled header stands for, and the file's text with them blanked."""

    text: str  # the include lines, in order: the precompiled header's source
    lines: tuple[int, ...]  # their 0-based line numbers

    def fits(self, text: str) -> bool:
        """True when `text` has the same include lines at the same places (a rewrite of the same file)."""
        lines = _lines(text)
        return all(i < len(lines) for i in self.lines) and "".join(lines[i] for i in self.lines) == self.text

    def blank(self, text: str) -> str:
        """`text` with the preamble's lines blanked: a space per byte, so clang's byte offsets do not move."""
        lines = _lines(text)
        return "".join(_blanked(line) if index in self.lines else line for index, line in enumerate(lines))


def _blanked(line: str) -> str:
    return re.sub(r"[^\r\n]", lambda m: " " * len(m.group(0).encode("utf-8")), line)


def _lines(text: str) -> list[str]:
    """The lines as clang counts them (\\n, \\r\\n or \\r), each with its line break."""
    return _LINE.findall(text)


def preamble_of(text: str, local: "LocalHeaders | None" = None) -> Preamble | None:
    """The file's leading include lines up to its last heavy include; None when there is none. With `local`, a
    quoted include is heavy when a header it reaches through quoted includes names a heavy library."""
    lines = _lines(text)
    includes: list[int] = []
    heavy_end = 0
    in_comment = False
    guard: str | None = None
    block_end = -1  # the last line of a conditional block of includes taken whole
    for index, line in enumerate(lines):
        if index <= block_end:
            continue
        stripped = line.strip()
        if in_comment:
            in_comment = "*/" not in stripped
            continue
        if not stripped or stripped.startswith("//") or _PRAGMA_ONCE.match(line):
            continue
        if stripped.startswith("/*"):
            in_comment = "*/" not in stripped
            if not in_comment and not stripped.endswith("*/"):
                break  # code after the comment on the same line
            continue
        match = _INCLUDE.match(line)
        if match:
            includes.append(index)
            name = match.group(2).strip()
            if match.group(1) == "<" and _HEAVY.match(name) or match.group(1) == '"' and local and local.heavy(name):
                heavy_end = len(includes)
            continue
        opened = _GUARD_OPEN.match(line)
        if opened and guard is None and not includes:
            guard = opened.group(1)
            continue
        defined = _DEFINE.match(line)
        if defined and guard is not None and defined.group(1) == guard:
            continue
        if _MACRO.match(line) and "/*" not in line:  # `#define NOMINMAX` before torch's headers: it goes with them
            includes.append(index)
            continue
        block = _conditional_includes(lines, index, local)
        if block is not None:  # `#ifdef WITH_CUDA` / `#include <ATen/cuda/CUDAContext.h>` / `#endif`
            block_end, heavy = block
            includes.extend(range(index, block_end + 1))
            if heavy:
                heavy_end = len(includes)
            continue
        break
    chosen = tuple(includes[:heavy_end])
    if not chosen:
        return None
    return Preamble("".join(lines[i] for i in chosen), chosen)


# A line that opens or closes a conditional block (also read by cpp_frontend: the probe's unconditional includes).
CONDITIONAL_OPEN = re.compile(r"^[ \t]*#[ \t]*if(?:n?def)?\b")
_CONDITIONAL_MIDDLE = re.compile(r"^[ \t]*#[ \t]*(?:else|elif|elifn?def)\b")
CONDITIONAL_CLOSE = re.compile(r"^[ \t]*#[ \t]*endif\b")


def _conditional_includes(lines: list[str], start: int, local: "LocalHeaders | None") -> tuple[int, bool] | None:
    """The `#if`/`#ifdef` block opened at lines[start], when it holds only includes, one-line macros, blank lines
    and `//` comments (nested blocks too): its last line, and whether one of its includes is heavy. None
    otherwise. Such a block goes into the preamble whole: the precompiled header is built with the file's flags,
    so it takes the branch the file would. Without it, a file that opens with `#ifdef WITH_CUDA` includes had no
    preamble, and its parse with headers read torch's whole (pytorch3d: 14 s on a first run). 25 of DeepSpeed's
    234 C++/CUDA files open with such a block, 19 of CUTLASS's 2,381, 3 of pytorch3d's 146."""
    if not CONDITIONAL_OPEN.match(lines[start]):
        return None
    depth, heavy = 0, False
    for index in range(start, len(lines)):
        line = lines[index]
        stripped = line.strip()
        if CONDITIONAL_OPEN.match(line):
            depth += 1
        elif CONDITIONAL_CLOSE.match(line):
            depth -= 1
            if depth == 0:
                return index, heavy
        elif _CONDITIONAL_MIDDLE.match(line) or not stripped or stripped.startswith("//"):
            continue
        elif (match := _INCLUDE.match(line)) is not None:
            name = match.group(2).strip()
            heavy = heavy or bool(match.group(1) == "<" and _HEAVY.match(name)
                                  or match.group(1) == '"' and local and local.heavy(name))
        elif not (_MACRO.match(line) and "/*" not in line):
            return None
    return None


class LocalHeaders:
    """The project's headers a file's quoted includes name, read as text (never run): whether one reaches a heavy
    library through further quoted includes, as DeepSpeed's `"simd.h"` reaches `<x86intrin.h>`.

    A quoted include is looked for in the including file's folder, then in `folders` (the flags' -I and -iquote),
    as the compiler looks. At most `MAX_READ` headers are read for one file.
    """

    MAX_READ = 64

    def __init__(self, folder: str, folders: tuple[str, ...]):
        self.folder = folder
        self.folders = folders
        self._heavy: dict[str, bool] = {}  # real path -> reaches a heavy library
        self._read = 0

    def heavy(self, name: str) -> bool:
        path = self.find(name)
        return path is not None and self._reaches_heavy(path, set())

    def find(self, name: str, folder: str | None = None) -> str | None:
        """The real path of `#include "name"` written in a file of `folder` (the scanned file's by default)."""
        for candidate in (folder or self.folder, *self.folders):
            path = os.path.join(candidate, name)
            if os.path.isfile(path):
                return os.path.realpath(path)
        return None

    def _reaches_heavy(self, path: str, visiting: set[str]) -> bool:
        if path in self._heavy:
            return self._heavy[path]
        if path in visiting or self._read >= self.MAX_READ:
            return False
        visiting.add(path)
        self._read += 1
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        heavy = False
        for line in _lines(text):
            match = _INCLUDE.match(line)
            if match is None:
                continue
            bracket, name = match.group(1), match.group(2).strip()
            if bracket == "<":
                heavy = bool(_HEAVY.match(name))
            else:
                found = self.find(name, os.path.dirname(path))
                heavy = found is not None and self._reaches_heavy(found, visiting)
            if heavy:
                break
        self._heavy[path] = heavy
        return heavy


@dataclass(frozen=True)
class PrecompiledHeader:
    path: str
    headers: HeaderSetInput  # every header it read


class Readiness(enum.Enum):
    """What a parse with this precompiled header would cost first."""

    READY = "ready"  # built and valid, or its failure remembered: nothing to build
    WANTED = "wanted"  # to build; an earlier run put it off
    UNBUILT = "unbuilt"  # to build, and never wanted before


class PrecompileError(Exception):
    """The preamble could not be precompiled; the message says which header failed.

    `missing`: the header clang could not find, `includer` the file that includes it and `via` the preamble's
    include that led there; `headers`: what the failed parse read, which the failure is remembered with.
    """

    def __init__(self, message: str, missing: str | None = None, includer: str | None = None, via: str | None = None,
                 headers: HeaderSetInput | None = None):
        super().__init__(message)
        self.missing, self.includer, self.via, self.headers = missing, includer, via, headers


def precompiled(preamble: Preamble, directory: str, root: str, arguments: tuple[str, ...], parser: str, build,
                search_folders: tuple[str, ...] = ()) -> PrecompiledHeader:
    """The precompiled header of `preamble` for files in `directory` of the checkout at `root`, parsed with
    `arguments` by `parser` (its version): from the cache while its headers are unchanged, else made by
    `build(source_name, text, output)`, which returns the paths of the headers it read.

    A failure is remembered beside it (PrecompileError again, without a parse) while the headers the failed
    parse read are unchanged and a missing header is still in none of `search_folders`.
    """
    key = _key(preamble, directory, root, arguments, parser)
    folder = cache_dir() / "pch"
    target = folder / f"{key}.pch"
    manifest = folder / f"{key}.json"
    failure = folder / f"{key}.failed.json"
    with _locked(folder / f"{key}.lock"):
        current = _valid(target, manifest, root)
        if current is not None:
            return current
        _raise_remembered(failure, search_folders)
        _announce(folder)
        source_name = os.path.join(directory, f".optpatch-preamble-{key[:12]}.h")  # quoted includes resolve from here
        handle, temporary = tempfile.mkstemp(prefix=".pch-", dir=folder)
        os.close(handle)
        started = time.monotonic()
        try:
            headers = build(source_name, preamble.text, temporary)
            os.replace(temporary, target)
        except PrecompileError as error:
            _remember_failure(failure, error)
            (folder / f"{key}.wanted").unlink(missing_ok=True)
            raise
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        recorded = record_header_set(headers)
        _write_json(manifest, {"headers": recorded.digest, "root": root, "local": _local_hashes(headers, root)})
        (folder / f"{key}.wanted").unlink(missing_ok=True)
        _write_json(folder / BUILD_SECONDS, {"seconds": round(time.monotonic() - started, 1)})
        _evict(folder, keep=target)
        return PrecompiledHeader(str(target), recorded)


def readiness(preamble: Preamble, directory: str, root: str, arguments: tuple[str, ...], parser: str,
              search_folders: tuple[str, ...], run: str) -> Readiness:
    """Whether `precompiled` with these arguments would have to build (a few file reads and stats: no parse), and
    whether another run than `run` put that off."""
    folder, key = cache_dir() / "pch", _key(preamble, directory, root, arguments, parser)
    if _valid(folder / f"{key}.pch", folder / f"{key}.json", root, touch=False) is not None:
        return Readiness.READY
    if _remembered_failure(folder / f"{key}.failed.json", search_folders) is not None:
        return Readiness.READY
    try:
        put_off_by = (folder / f"{key}.wanted").read_text(encoding="utf-8")
    except OSError:
        return Readiness.UNBUILT
    return Readiness.UNBUILT if put_off_by == run else Readiness.WANTED


def put_off(preamble: Preamble, directory: str, root: str, arguments: tuple[str, ...], parser: str, run: str) -> str:
    """Note that `run` wanted this precompiled header and did not build it: the next run that wants it builds it
    (files of the same run put it off too). The path of the marker, which the build removes."""
    folder = cache_dir() / "pch"
    folder.mkdir(parents=True, exist_ok=True)
    marker = folder / f"{_key(preamble, directory, root, arguments, parser)}.wanted"
    marker.write_text(run, encoding="utf-8")
    return str(marker)


def discard(header: PrecompiledHeader) -> None:
    """Forget a precompiled header clang refused (its inputs changed behind the manifest's back)."""
    for path in (header.path, header.path.removesuffix(".pch") + ".json"):
        try:
            os.unlink(path)
        except OSError:
            pass


def max_total_bytes() -> int:
    """The cap on the precompiled headers' total size: `OPTPATCH_PCH_MAX_MB` (MiB), else 2 GiB."""
    try:
        return int(float(os.environ[MAX_MB_VARIABLE]) * 1024**2)
    except (KeyError, ValueError):
        return MAX_TOTAL_BYTES


def _key(preamble: Preamble, directory: str, root: str, arguments: tuple[str, ...], parser: str) -> str:
    """The cache key: libclang's version, the flags and the preamble's text, with the checkout's own paths written
    relative to it, so another checkout of the same project (a copy, a CI runner) shares the precompiled header;
    `_valid` then checks that the project headers it read have the same contents there. Only a quoted include is
    looked for in the file's folder: a preamble of <...> includes is shared by a project's folders."""
    folder = _relative(directory, root) if '"' in preamble.text else ""
    parts = [FORMAT, parser, folder, [_relative(a, root) for a in arguments], preamble.text]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]


def _relative(argument: str, root: str) -> str:
    if argument == root or argument.startswith(root + os.sep):
        return "<checkout>" + argument[len(root):]
    return argument


def _local_hashes(headers: list[str], root: str) -> dict[str, str]:
    """The checkout's own headers a precompiled header read, by path within the checkout and SHA-256."""
    prefix = root + os.sep
    return {path[len(prefix):]: file_sha256(path) or "" for path in sorted(set(headers)) if path.startswith(prefix)}


def _raise_remembered(failure: Path, search_folders: tuple[str, ...]) -> None:
    """Raise the remembered failure of this precompiled header, while what it read is unchanged."""
    error = _remembered_failure(failure, search_folders)
    if error is not None:
        raise error


def _remembered_failure(failure: Path, search_folders: tuple[str, ...]) -> PrecompileError | None:
    """The remembered failure of this precompiled header, while what it read is unchanged."""
    try:
        record = json.loads(failure.read_text(encoding="utf-8"))
        headers = HeaderSetInput(record["headers"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    missing = record.get("missing")
    if missing and any(os.path.isfile(os.path.join(f, missing)) for f in search_folders):
        return None  # the missing header is there now
    if not headers.unchanged():
        return None
    return PrecompileError(record.get("message", "failed before"), missing, record.get("includer"), record.get("via"),
                           headers)


def _remember_failure(failure: Path, error: PrecompileError) -> None:
    if error.headers is None:
        return
    _write_json(failure, {"message": str(error), "missing": error.missing, "includer": error.includer,
                          "via": error.via, "headers": error.headers.digest})


def _announce(folder: Path) -> None:
    """Say once per run, on a terminal, that precompiled headers are being built, where, and about how long each
    takes (a run may build several: DeepSpeed's second run builds five)."""
    if not sys.stderr.isatty():
        return
    marker = folder / f".announced-{os.getpgrp()}"
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return
    try:
        last = json.loads((folder / BUILD_SECONDS).read_text(encoding="utf-8"))["seconds"]
        estimate = f"about {max(1, round(float(last)))} s"
    except (OSError, ValueError, KeyError, TypeError):
        estimate = "5-30 s"
    print(f"optpatch: precompiling C++ headers once ({estimate} each; cached in {folder})", file=sys.stderr,
          flush=True)


def _valid(target: Path, manifest: Path, root: str, touch: bool = True) -> PrecompiledHeader | None:
    """The precompiled header while every header it read is unchanged, and, used from another checkout than the
    one it was built in, that checkout's copies of the project headers it read have the same contents."""
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
        headers = HeaderSetInput(record["headers"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not target.is_file() or not headers.unchanged():
        return None
    if record.get("root", root) != root:
        local = record.get("local", {})
        if not isinstance(local, dict) or any(file_sha256(os.path.join(root, rel)) != sha for rel, sha in local.items()):
            return None
    if touch:
        try:
            os.utime(target)  # in use: not stale
        except OSError:
            pass
    return PrecompiledHeader(str(target), headers)


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_json(path: Path, value: dict) -> None:
    handle, temporary = tempfile.mkstemp(prefix=".manifest-", dir=path.parent)
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        json.dump(value, stream)
    os.replace(temporary, path)


def _evict(folder: Path, keep: Path) -> None:
    """Delete precompiled headers unused for STALE_AFTER_DAYS, then the least recently used beyond MAX_TOTAL_BYTES."""
    entries = []
    for pch in folder.glob("*.pch"):
        try:
            status = pch.stat()
        except OSError:
            continue
        entries.append((status.st_mtime, status.st_size, pch))
    cutoff = time.time() - STALE_AFTER_DAYS * 86400
    old = [(marker, time.time() - 86400) for marker in folder.glob(".announced-*")]
    old += [(marker, cutoff) for marker in folder.glob("*.wanted")]  # a run put it off, and none wanted it since
    for marker, before in old:
        try:
            if marker.stat().st_mtime < before:
                marker.unlink()
        except OSError:
            pass
    total = sum(size for _, size, _ in entries)
    cap = max_total_bytes()
    for mtime, size, pch in sorted(entries):
        if pch == keep or (mtime >= cutoff and total <= cap):
            continue
        for path in (pch, pch.with_suffix(".json"), pch.with_suffix(".lock"), pch.with_suffix(".failed.json")):
            try:
                path.unlink()
            except OSError:
                pass
        total -= size
