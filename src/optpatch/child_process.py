"""Running one native parse in a forked child, with a time limit.

A parse with a project's headers goes through thousands of lines of code
optpatch has never seen; libclang offers no way to stop it, and a crash in
it would take the whole run down. So it runs in a child forked from the
current process (which shares everything already loaded, copy-on-write,
for a few milliseconds), and the result comes back pickled through a pipe.
A child that runs past its time is killed; one that dies is reported; the
caller falls back to what it knew without the parse. The child's memory,
libclang's included, is returned to the system when it exits.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from typing import Callable, TypeVar

Result = TypeVar("Result")
_CHUNK = 1 << 16


class TimeLimitExceeded(Exception):
    """The child ran past its time and was killed."""


class ChildFailed(Exception):
    """The child raised (the message is its error) or died."""


def run_in_child(function: Callable[[], Result], seconds: float) -> Result:
    """`function()`, computed in a forked child that is killed after `seconds`."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send, leave without running the parent's exit handlers
        os.close(reader)
        try:
            payload = pickle.dumps((True, function()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # everything goes back to the parent, which decides
            payload = pickle.dumps((False, f"{type(error).__name__}: {error}"))
        try:
            with os.fdopen(writer, "wb") as stream:
                stream.write(payload)
        finally:
            os._exit(0)
    os.close(writer)
    try:
        data = _read_until(reader, time.monotonic() + seconds, pid)
    except BaseException:  # Ctrl-C or SIGTERM: the child's parse (a precompiled header: 30 s and more) is not waited for
        os.kill(pid, signal.SIGKILL)
        raise
    finally:
        os.close(reader)
        _, status = os.waitpid(pid, 0)
    if not data:
        raise ChildFailed(_death(status))
    succeeded, value = pickle.loads(data)
    if not succeeded:
        raise ChildFailed(value)
    return value


def _read_until(reader: int, deadline: float, pid: int) -> bytes:
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os.kill(pid, signal.SIGKILL)
            raise TimeLimitExceeded()
        ready, _, _ = select.select([reader], [], [], remaining)
        if not ready:
            continue
        chunk = os.read(reader, _CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _death(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return f"the parser died ({signal.Signals(number).name})"
    return f"the parser exited with status {os.waitstatus_to_exitcode(status)} and no result"
