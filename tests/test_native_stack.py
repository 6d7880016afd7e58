"""The large-stack thread the native parsers run on: one per process, reused, and never a deadlock.

tests/test_deep_nesting.py shows that the stack is large enough; these show
how calls reach it: the same thread serves consecutive calls, a call from
inside a call or from another thread while it is busy gets a thread of its
own, an error is the caller's, and a forked child gets a thread of its own.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from optpatch.native_stack import call_with_large_stack


def _thread() -> threading.Thread:
    return threading.current_thread()  # the object, held by the test: an ident may be reused by the next thread


def test_consecutive_calls_share_one_thread_which_is_not_the_callers():
    first, second = call_with_large_stack(_thread), call_with_large_stack(_thread)
    assert first is second is not threading.current_thread()


def test_a_call_from_inside_a_call_runs_on_another_thread():
    outer, inner = call_with_large_stack(lambda: (_thread(), call_with_large_stack(_thread)))
    assert inner is not outer


def test_a_call_from_another_thread_while_the_thread_is_busy_is_served():
    started, release = threading.Event(), threading.Event()
    seen: list[threading.Thread] = []

    def busy() -> threading.Thread:
        started.set()
        assert release.wait(30)
        return _thread()

    holder = threading.Thread(target=lambda: seen.append(call_with_large_stack(busy)))
    holder.start()
    assert started.wait(30)
    seen.append(call_with_large_stack(_thread))  # would wait forever if it queued behind `busy`
    release.set()
    holder.join(30)
    assert len(seen) == 2 and seen[0] is not seen[1]


def test_an_error_is_raised_to_the_caller_and_the_thread_serves_the_next_call():
    def fail():
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        call_with_large_stack(fail)
    assert call_with_large_stack(lambda: 42) == 42


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_starts_its_own_thread():
    parents = call_with_large_stack(_thread)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: a parse must not wait on the parent's thread, which it did not inherit
        signal.alarm(30)  # a child that waits on a thread it does not have dies instead of hanging the test
        try:
            mine = call_with_large_stack(_thread)
            os.write(write, b"ok" if mine.is_alive() and mine is not threading.current_thread() else b"not its own")
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    assert os.read(read, 16) == b"ok" and status == 0
    assert call_with_large_stack(_thread) is parents
