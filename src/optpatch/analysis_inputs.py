"""What an analysis read besides the file itself, and whether it is still the same.

A C++ analysis made with the project's headers depends on them: a cached
one may be used again only while every header it read is unchanged. A
header parse reads a thousand files or more (torch, the CUDA toolkit, the
standard library), and hashing them all for each file of each warm run
would cost more than the analysis saves. So an analysis records its inputs
in two kinds:

- `FileInput`: one file of the scanned repository (a local header, the
  `setup.py` or `compile_commands.json` that said how the file is built),
  with the SHA-256 of its bytes. These are few, small, and change often
  (and a checkout can keep their size and modification time), so they are
  hashed again whenever the cache entry is looked at.
- `HeaderSetInput`: every header from outside the repository, as one
  manifest in the user's cache directory (`headers/<digest>.json`): each
  header's path, size, modification time and SHA-256. Its digest covers
  the paths and hashes. It is checked by size and modification time first,
  hashing only a header whose stat changed, once per process for each
  manifest: a warm run costs a `stat` per header of each distinct set
  (~1,500 headers: ~10 ms), not a hash per header per file. Installing
  another torch or CUDA changes the stats, then the hashes, and so the
  analysis is made again.
- `FlagsInput`: the flags a file was parsed with (or the reason it could
  not be), which depend on the machine (where torch and CUDA are) and the
  repository's build files; recomputed once per process and compared.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable, Iterable

from optpatch.user_cache import cache_dir

_HASH_CHUNK = 1 << 20


def file_sha256(path: str) -> str | None:
    try:
        hasher = hashlib.sha256()
        with open(path, "rb") as stream:
            while chunk := stream.read(_HASH_CHUNK):
                hasher.update(chunk)
        return hasher.hexdigest()
    except OSError:
        return None


@dataclass(frozen=True)
class FileInput:
    """A file of the scanned repository, by the SHA-256 of its bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, path: str) -> "FileInput":
        return cls(path, file_sha256(path) or "")

    def unchanged(self) -> bool:
        return file_sha256(self.path) == self.sha256


@dataclass(frozen=True)
class HeaderSetInput:
    """Headers from outside the repository, as one manifest checked by stat first (see the module's docstring)."""

    digest: str

    def unchanged(self) -> bool:
        return _set_unchanged(self.digest)


@dataclass(frozen=True)
class FlagsInput:
    """The flags (or the reason for none) that `recompute` gives now must be the ones recorded."""

    digest: str
    recompute: Callable[[], str]  # a picklable callable: the digest of the current flags

    def unchanged(self) -> bool:
        return self.recompute() == self.digest


@dataclass(frozen=True)
class HeaderStat:
    """One header of a set: what `stat` and a hash said when the set was recorded."""

    path: str
    size: int
    mtime_ns: int
    sha256: str


# What this process knows of each header: from manifests it read or wrote, and hashes it made.
_KNOWN: dict[str, HeaderStat] = {}


def header_stat(path: str) -> HeaderStat | None:
    """The header's stat and hash; hashed only when this process knows no hash for the same stat."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    known = _KNOWN.get(path)
    if known is not None and (known.size, known.mtime_ns) == (status.st_size, status.st_mtime_ns):
        return known
    sha = file_sha256(path)
    if sha is None:
        return None
    _KNOWN[path] = HeaderStat(path, status.st_size, status.st_mtime_ns, sha)
    return _KNOWN[path]


def learn(stats: Iterable[HeaderStat]) -> None:
    """Take the stats and hashes of a manifest as known (a precompiled header's, for example)."""
    for stat in stats:
        _KNOWN.setdefault(stat.path, stat)


def record_header_set(paths: Iterable[str]) -> HeaderSetInput:
    """Write (or reuse) the manifest of these headers; the input that stands for all of them."""
    stats = sorted({stat for stat in map(header_stat, set(paths)) if stat is not None}, key=lambda s: s.path)
    digest = _set_digest(stats)
    manifest = _manifest_path(digest)
    if not manifest.is_file():
        _write_manifest(manifest, stats)
    return HeaderSetInput(digest)


def header_set_paths(digest: str) -> list[str]:
    """The headers of a recorded set (empty when its manifest is gone)."""
    return [stat.path for stat in _read_manifest(_manifest_path(digest)) or []]


def _set_digest(stats: list[HeaderStat]) -> str:
    hasher = hashlib.sha256()
    for stat in stats:
        hasher.update(f"{stat.path}\0{stat.sha256}\n".encode())
    return hasher.hexdigest()


def _manifest_path(digest: str) -> Path:
    return cache_dir() / "headers" / f"{digest[:40]}.json"


def _write_manifest(path: Path, stats: list[HeaderStat]) -> None:
    """Atomically: another process may read or write the same manifest."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".manifest-", dir=path.parent)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump([[s.path, s.size, s.mtime_ns, s.sha256] for s in stats], stream)
        os.replace(temporary, path)
    except OSError:
        return  # a manifest that cannot be written only means the analysis is made again next time


def _read_manifest(path: Path) -> list[HeaderStat] | None:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        return [HeaderStat(str(p), int(size), int(mtime), str(sha)) for p, size, mtime, sha in rows]
    except (OSError, ValueError, TypeError):
        return None


def forget_checks() -> None:
    """A new run looks at the header sets again (a process may run several times: tests, validation)."""
    _set_unchanged.cache_clear()


@cache
def _set_unchanged(digest: str) -> bool:
    """Every header of the set has its recorded content: by stat, else by hash (once per process)."""
    manifest = _manifest_path(digest)
    stats = _read_manifest(manifest)
    if stats is None or _set_digest(stats) != digest:
        return False
    learn(stats)
    refreshed = False
    for recorded in stats:
        current = header_stat(recorded.path)  # a stat; a hash only if the stat changed
        if current is None or current.sha256 != recorded.sha256:
            return False
        refreshed |= current != recorded
    if refreshed:  # same content, touched: record the new stats so that the next run only stats again
        _write_manifest(manifest, [header_stat(s.path) or s for s in stats])
    return True
