"""Writing files safely: the patch, and fixes applied in place with --write.

Each file is replaced atomically (a temporary file in the same directory,
then `os.replace`), so an interrupt leaves every file either old or new. A
file whose bytes changed since optpatch read it is refused, not overwritten;
so is one that cannot be written, and the other files are still written.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step, keeping its permission bits."""
    if path.exists() and not path.is_file():
        # A device, FIFO or terminal (`-o /dev/null`, `/dev/stdout`): replacing it would destroy it.
        with open(path, "wb") as stream:
            stream.write(data)
        return
    directory = path.parent
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".optpatch-tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def write_fixes(root: Path, changes: list[tuple[str, bytes, bytes]]) -> WriteReport:
    """Apply rewritten files under ROOT, refusing any that changed since they were read."""
    root = root.resolve()
    report = WriteReport()
    for rel, old, new in sorted(changes):
        path = root / rel
        if path.is_symlink() or root not in path.resolve().parents:
            report.refused.append((rel, "not a regular file inside the tree"))
            continue
        try:
            current = path.read_bytes()
        except OSError as error:
            report.refused.append((rel, f"cannot be read again: {error.strerror or error}"))
            continue
        if current != old:
            report.refused.append((rel, "changed since optpatch read it; run optpatch again"))
            continue
        try:
            write_atomically(path, new)
        except OSError as error:  # a read-only directory or a full disk: the file stays as it was
            report.refused.append((rel, f"cannot be written: {error.strerror or error}; the file is unchanged"))
            continue
        report.written.append(rel)
    return report
