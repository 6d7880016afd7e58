"""Running the native parsers on a thread with a large stack.

libcst's parser (Rust) and libclang recurse on the C stack once per level of
nesting. On the 8 MiB of a main thread (libclang parses on a thread of its
own, also 8 MiB) a C++ `else if` chain of 10,000 branches, 1,500 nested
parentheses, or a Python `a and b and ...` of 8,000 operands overflows it:
the process dies with SIGSEGV, and with it the whole run, its report and
its patch. A thread whose stack is reserved large (only the pages a parse
touches are ever committed) turns those into ordinary parses. Measured on
the development machine: 512 MiB holds more than 100,000 levels of C++
unary minus; no real code comes near that.

One such thread serves every parse of a process: a thread started for each
parse cost 0.4 ms on a two-line file whose parse takes 0.07 ms, and 3 ms on
a 14 KB one (its stack's pages faulted in again, the parser's per-thread
state built again; docs/benchmarks.md). A call that finds it busy (another
thread's parse, or a parse asked from inside one) gets a thread of its own,
as every call once did. A forked child starts its own on first use. The
thread keeps the stack pages its deepest parse touched: 11 MB more resident
after the 10,000-branch chain above than when each parse's thread went away.
"""

from __future__ import annotations

import os
import threading
from queue import SimpleQueue
from typing import Callable, TypeVar

LARGE_STACK_BYTES = 512 * 1024 * 1024

Result = TypeVar("Result")


def call_with_large_stack(function: Callable[..., Result], *args) -> Result:
    """`function(*args)`, run to completion on a thread with LARGE_STACK_BYTES of stack."""
    if not _PARSER.lock.acquire(blocking=False):
        return _on_a_new_thread(function, args)
    try:
        requests = _PARSER.requests()
        if requests is None:  # a platform that refuses the size: the caller's stack it is
            return function(*args)
        reply: SimpleQueue = SimpleQueue()
        requests.put((function, args, reply))
        failed, value = reply.get()
    finally:
        _PARSER.lock.release()
    if failed:
        raise value
    return value


class _ParserThread:
    """The process's one large-stack thread, started on first use (and again in a forked child, where it is gone)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held by the one caller whose request the thread serves
        self._queue: SimpleQueue | None = None
        self._thread: threading.Thread | None = None
        self._pid = 0

    def requests(self) -> SimpleQueue | None:
        """The running thread's queue of requests; None where the platform refuses the stack size."""
        if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
            queue: SimpleQueue = SimpleQueue()
            thread = _started(lambda: _serve(queue))
            if thread is None:
                return None
            self._queue, self._thread, self._pid = queue, thread, os.getpid()
        return self._queue

    def reset_after_fork(self) -> None:
        """A forked child inherits neither the thread nor a lock its parent's caller may hold at that moment."""
        self.lock = threading.Lock()
        self._thread = None


def _serve(requests: SimpleQueue) -> None:
    while True:
        function, args, reply = requests.get()
        try:
            reply.put((False, function(*args)))
        except BaseException as error:  # handed to the caller, which raises it as its own
            reply.put((True, error))
        del function, args, reply  # nothing of one parse outlives it on this thread


def _on_a_new_thread(function: Callable[..., Result], args: tuple) -> Result:
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the caller, which raises it as its own
            outcome["error"] = error

    thread = _started(target)
    if thread is None:
        return function(*args)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _started(target: Callable[[], None]) -> threading.Thread | None:
    """A daemon thread running TARGET on a LARGE_STACK_BYTES stack, or None where the platform refuses the size."""
    try:
        previous = threading.stack_size(LARGE_STACK_BYTES)
    except (ValueError, RuntimeError):
        return None
    try:
        thread = threading.Thread(target=target, name="optpatch-parser", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    return thread


_PARSER = _ParserThread()
os.register_at_fork(after_in_child=_PARSER.reset_after_fork)
