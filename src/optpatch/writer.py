"""Writing files safely: the patch, and fixes applied in place with --write.

Each file is replaced atomically (a temporary file in the same directory,
then `os.replace`), so an interrupt leaves every file either old or new;
Ctrl-C or SIGTERM that comes while one file is being replaced takes effect
once it is, so no temporary file is left behind either. A
file whose bytes changed since optpatch read it is refused, not overwritten;
so is one that cannot be written or has other hard links (a replacement
would leave them with the old text), and the other files are still written.
The new file keeps the old one's permission bits, and its owner and group
where the process may set them.
"""

from __future__ import annotations

import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.results import FileChange


@dataclass
class WriteReport:
    written: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (relative path, why)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` in one step, keeping its permission bits and, where allowed, its owner."""
    if path.exists() and not path.is_file():
        # A device, FIFO or terminal (`-o /dev/null`, `/dev/stdout`): replacing it would destroy it.
        with open(path, "wb") as stream:
            stream.write(data)
        return
    directory = path.parent
    status = path.stat() if path.exists() else None
    mode = status.st_mode & 0o7777 if status is not None else 0o644
    with _interrupts_held():
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".optpatch-tmp", dir=directory)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                stream.flush()
                os.fsync(stream.fileno())
            if status is not None:
                _keep_owner(temporary, status)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise


_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def _interrupts_held():
    """Ctrl-C and SIGTERM wait until the block is done, then act as they would have (a KeyboardInterrupt).

    Python raises KeyboardInterrupt between any two bytecodes: between
    `mkstemp` and the `try` that would remove its file, one would be left.
    Only the main thread receives Python's signal handlers; elsewhere the
    block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {number: signal.signal(number, lambda signum, frame: received.append(signum)) for number in _HELD_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if received:
            signal.raise_signal(received[0])  # now handled as it would have been


def _keep_owner(temporary: str, status: os.stat_result) -> None:
    """Give the new file the old one's owner and group when this process may (root may; others only their groups)."""
    try:
        os.chown(temporary, status.st_uid, status.st_gid)
    except OSError:
        try:
            os.chown(temporary, -1, status.st_gid)
        except OSError:
            pass  # the writer's own user and group, as any editor that saves by replacing would leave


def write_fixes(root: Path, changes: list[FileChange]) -> WriteReport:
    """Apply rewritten files under ROOT, refusing any that changed since they were read."""
    root = root.resolve()
    report = WriteReport()
    for rel, old, new in sorted((change.rel, change.old, change.new) for change in changes):
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
        links = path.stat().st_nlink
        if links > 1:  # a replacement is a new file: the other names would keep the old text
            report.refused.append((rel, f"has {links - 1} other hard link(s), which replacing it would leave unfixed; "
                                        "apply the patch with git apply instead"))
            continue
        try:
            write_atomically(path, new)
        except OSError as error:  # a read-only directory or a full disk: the file stays as it was
            report.refused.append((rel, f"cannot be written: {error.strerror or error}; the file is unchanged"))
            continue
        report.written.append(rel)
    return report
