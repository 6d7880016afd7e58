"""One run of a command (the user's tests, or their build) in its own process group, and how it ended.

The command runs in a new session, so a timeout or an interrupt stops
every process it started, and daemons it left behind are killed after it
exits: they would hold the copied tree. Its output goes to a log, whose
tail and failing test names the report quotes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from optpatch.poison import PoisonMode

TAIL_LINES = 40
TAIL_BYTES = 64 * 1024
STOP_GRACE_S = 5  # how long a stopped command may take to exit before it is killed
# Failing tests as pytest ("FAILED path::test - ...") and unittest ("FAIL: test (module.Case.test)") name them.
_FAILED_TEST = re.compile(r"^(?:FAILED |ERROR |FAIL: |ERROR: )(\S+(?: \([\w.]+\))?)", re.MULTILINE)


@dataclass(frozen=True)
class CommandRun:
    """One execution of the test (or build) command, and how it ended."""

    label: str  # what the tree held: "original tree", "32 of 32 fixes", ...
    mode: PoisonMode | None  # the poison pass; None for the build command
    returncode: int | None
    timed_out: bool
    seconds: float
    timeout_s: float
    tail: str
    failing_tests: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.timed_out and self.returncode == 0

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.timeout_s:g} s (--validate-timeout)"
        if self.returncode == 0:
            return f"passed in {self.seconds:.1f} s"
        if self.returncode is not None and self.returncode < 0:
            return f"killed by signal {-self.returncode} after {self.seconds:.1f} s"
        return f"failed with exit status {self.returncode} after {self.seconds:.1f} s"

    def what(self) -> str:
        step = "build" if self.mode is None else f"poison {self.mode}"
        return f"{self.label}, {step}"


def run_command(command: str, cwd: Path, env: dict[str, str], timeout_s: float, log_path: Path, label: str, mode: PoisonMode | None) -> CommandRun:
    """Run COMMAND in its own process group; on timeout or interrupt the whole group is stopped."""
    started = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            process.wait(timeout=timeout_s)
            ended = time.monotonic()  # before the clean-up below: `optpatch bench` times the command alone
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(process)
        except BaseException:
            _stop_group(process)
            raise
        finally:
            _signal_group(process.pid, signal.SIGKILL)  # daemons the tests left behind would hold the tree
    tail, failing = _read_tail(log_path)
    seconds = (time.monotonic() if timed_out else ended) - started
    return CommandRun(label, mode, process.returncode, timed_out, seconds, timeout_s, tail, failing)


def _stop_group(process: subprocess.Popen) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _read_tail(log_path: Path) -> tuple[str, tuple[str, ...]]:
    with open(log_path, "rb") as log:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - TAIL_BYTES))
        text = log.read().decode("utf-8", errors="replace")
    failing = tuple(dict.fromkeys(_FAILED_TEST.findall(text)))
    return "\n".join(text.rstrip().splitlines()[-TAIL_LINES:]), failing
