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
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

LARGE_STACK_BYTES = 512 * 1024 * 1024

Result = TypeVar("Result")


def call_with_large_stack(function: Callable[..., Result], *args) -> Result:
    """`function(*args)`, run to completion on a thread with LARGE_STACK_BYTES of stack."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # handed to the caller, which raises it as its own
            outcome["error"] = error

    try:
        previous = threading.stack_size(LARGE_STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that refuses the size: the caller's stack it is
        return function(*args)
    try:
        thread = threading.Thread(target=target, name="optpatch-parser", daemon=True)
        thread.start()
    finally:
        threading.stack_size(previous)
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
