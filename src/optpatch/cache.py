"""The result cache: a file whose bytes did not change is not analysed again.

Where: `$OPTPATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/optpatch`, else
`~/.cache/optpatch`; never inside the scanned repository, which `apply`
promises to leave untouched (and a cache there would show up in its `git
status`). `--no-cache` neither reads nor writes it; deleting the directory
is always safe.

What: analysis only, never a decision. One pack per (scanned root,
optpatch's code, rules, analysis settings, formatter configuration), holding for every analysed file
the SHA-256 of its bytes and its `FileRecord` (passes.py): the rules'
findings for each text the file went through, and the safety net's verdict
on each rewrite. The fix policy (tiers, --unsafe-fixes, validated fixes)
and narrowing (--changed-lines, --baseline) are applied after the cache, in
every run, so a decision never carries from one kind of run to another and
flipping `--unsafe-fixes` re-analyses nothing. The pack's key changes with
the optpatch version, the bytes of every file of the package and of the
rules (so an edited rule or C++ prelude invalidates its results even before
a `version` is bumped), the selected rules' codes and versions, every
setting that can change an analysis, and the bytes of the repository's
formatter configuration files (its pre-commit config, pyproject.toml, ruff
and clang-format files: they shape the edits). A file's entry is used only
when its bytes hash the same (one exception: a file a narrowed run does not
check, only reads for its part of the call graph, is trusted unchanged
where its size and modification time are those recorded: `known_digest`);
a frontend that read other files (C++
headers, build files) lists them in the analysis's `inputs`, and each must
still be unchanged (analysis_inputs.py: the repository's files by hash, the
headers from outside it as one set checked by stat first, the flags
recomputed).

Packs are written atomically (a temporary file renamed over the old one),
so concurrent runs cannot corrupt one: the last writer wins. Packs unused
for `STALE_AFTER_DAYS` are deleted when a pack is saved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from optpatch import __version__
from optpatch.user_cache import cache_dir

if TYPE_CHECKING:
    from optpatch.config import Settings
    from optpatch.passes import FileRecord

FORMAT = 5  # bumped when the pack layout changes
STALE_AFTER_DAYS = 30
# Settings that cannot change one file's analysis: which files are found, where the settings came from,
# and the fix policy and commands, which are applied after the cache.
_NOT_IN_KEY = frozenset({"exclude", "force_exclude", "source", "tiers", "unsafe_fixes", "validate_command",
                         "format_command", "fix_areas"})


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def code_fingerprint(*directories: Path) -> str:
    """A hash of every file of optpatch's package and of the rules directory (sources, the C++ prelude, data)."""
    hasher = hashlib.sha256()
    for directory in directories:
        for path in sorted(directory.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            hasher.update(path.relative_to(directory).as_posix().encode() + b"\0")
            hasher.update(path.read_bytes() + b"\0")
    return hasher.hexdigest()


def pack_key(root: Path, rules: Iterable, settings: "Settings", code: str,
             formatters: tuple[tuple[str, str], ...] = ()) -> str:
    """What a cached analysis depends on besides the file itself.

    Every field of the settings is in it (fields added later included),
    except those that cannot change one file's analysis; and the repository's
    formatter configuration files with their SHA-256 (formatter_config.py),
    which shape the edits.
    """
    parts = {
        "format": FORMAT,
        "optpatch": __version__,
        "code": code,
        "root": str(root),
        "rules": sorted((rule.code, rule.version) for rule in rules),
        "settings": _fields(settings, _NOT_IN_KEY),
        "formatters": [list(source) for source in formatters],
    }
    return digest(json.dumps(parts, sort_keys=True, default=repr).encode())


def _fields(instance, left_out: frozenset[str]) -> dict:
    return {
        f.name: _canonical(getattr(instance, f.name)) for f in dataclasses.fields(instance) if f.name not in left_out
    }


def _canonical(value):
    """The same JSON for equal values in every process (sets are unordered, and hashing varies by process)."""
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    return value


class ResultCache:
    """The pack of one (root, code, rules, settings): relative path -> (digest, inputs, record)."""

    def __init__(self, path: Path, entries: dict):
        self.path = path
        self.entries = entries
        self.changed = False

    @classmethod
    def open(cls, key: str, directory: Path | None = None) -> "ResultCache":
        path = (directory or cache_dir()) / f"v{FORMAT}" / f"{key[:40]}.pickle"
        try:
            with open(path, "rb") as stream:
                entries = pickle.load(stream)
            if not isinstance(entries, dict):
                entries = {}
            os.utime(path)  # in use: not stale
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            entries = {}  # missing, unreadable or from incompatible code: start afresh
        return cls(path, entries)

    def get(self, rel: str, file_digest: str) -> "FileRecord | None":
        entry = self.entries.get(rel)
        if entry is None:
            return None
        cached_digest, inputs, record, _ = entry
        if cached_digest != file_digest or not _inputs_unchanged(inputs):
            return None
        return record

    def put(self, rel: str, record: "FileRecord", seen: os.stat_result | None = None) -> None:
        """Keep REL's record; SEEN: the file's status when its bytes were read, for `known_digest`."""
        record.changed = False
        self.entries[rel] = (record.digest, record.inputs, record, _settled_stat(seen))
        self.changed = True

    def holds(self, rel: str) -> bool:
        """Whether the pack has an entry for REL, whatever its bytes were."""
        return rel in self.entries

    def known_digest(self, rel: str, seen: os.stat_result) -> str | None:
        """The digest of REL's bytes, without reading them, where its size and modification time are those recorded
        with its record, and it had not changed for `SETTLED_SECONDS` when they were (a later change within one tick
        of a coarse clock would not show); None otherwise, and the caller reads the file.

        For what a narrowed run only indexes (engine._cached_index): a pre-commit run in NeMo reads none of the 2,576
        files it does not check, where it read and hashed them all (0.1 s). A change that keeps a file's size and
        modification time (a tool that restores them) is not seen there, as by make or ruff's cache; the files a
        run checks are always read."""
        entry = self.entries.get(rel)
        if entry is None or entry[3] is None or entry[3] != (seen.st_size, seen.st_mtime_ns):
            return None
        return entry[0]

    def remember(self, rel: str, seen: os.stat_result) -> None:
        """Record SEEN with REL's entry, read and found unchanged, so that the next run need not read it."""
        entry = self.entries.get(rel)
        stat = _settled_stat(seen)
        if entry is not None and stat is not None and entry[3] != stat:
            self.entries[rel] = (*entry[:3], stat)
            self.changed = True

    def save(self) -> None:
        """Write the pack if anything changed; a cache that cannot be written only costs speed."""
        if not self.changed:
            return
        if not _write_atomically(self.path, self.entries, ".pack-"):
            return
        self.changed = False
        _remove_stale_packs(self.path.parent)


class ResolutionCache:
    """The call graph's last resolution for one scanned root (call_graph.Resolution), beside the packs: a run
    whose project changed only in a few files' bodies resolves only their calls again.

    Keyed by the root and optpatch's code (a change to the resolver
    changes every arc), not by settings: the graph spans every group. A
    resolution that reused another is saved again only when it resolved
    more than `RESAVE_AFTER` files, so a pre-commit run that changed one
    file reads it and writes nothing.
    """

    RESAVE_AFTER = 16

    def __init__(self, root: Path, code: str):
        key = digest(f"{root}\0{code}".encode())
        self.path = cache_dir() / f"v{FORMAT}" / f"graph-{key[:40]}.pickle"

    def load(self):
        from optpatch.call_graph import Resolution

        try:
            with open(self.path, "rb") as stream:
                found = pickle.load(stream)
            os.utime(self.path)  # in use: not stale
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError):
            return None
        return found if isinstance(found, Resolution) else None

    def save(self, resolution, resolved_files: int, reused: bool) -> None:
        """Keep RESOLUTION, unless it reused the one kept and resolved few files anew."""
        if reused and resolved_files <= self.RESAVE_AFTER:
            return
        _write_atomically(self.path, resolution, ".graph-")


def _write_atomically(path: Path, value, prefix: str) -> bool:
    """Pickle VALUE to a temporary file renamed over PATH; False, and no temporary left, where it cannot be written
    (a full disk): a cache that cannot be written only costs speed."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=prefix, dir=path.parent)
        with os.fdopen(handle, "wb") as stream:
            pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(temporary, path)
        return True
    except OSError:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        return False


SETTLED_SECONDS = 2


def _settled_stat(seen: os.stat_result | None) -> tuple[int, int] | None:
    """(size, modification time) of a file unchanged for SETTLED_SECONDS, else None: one a later change must alter."""
    if seen is None or seen.st_mtime_ns > time.time_ns() - SETTLED_SECONDS * 1_000_000_000:
        return None
    return seen.st_size, seen.st_mtime_ns


def _inputs_unchanged(inputs: tuple) -> bool:
    """Each input (analysis_inputs.py: a file, a set of headers, a file's flags) says whether it still holds."""
    return all(item.unchanged() for item in inputs)


def _remove_stale_packs(directory: Path) -> None:
    cutoff = time.time() - STALE_AFTER_DAYS * 86400
    for pack in directory.glob("*.pickle"):
        try:
            if pack.stat().st_mtime < cutoff:
                pack.unlink()
        except OSError:
            continue
