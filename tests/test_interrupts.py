"""An interrupt sent to optpatch's main process alone (SIGINT or SIGTERM) stops the run and leaves no worker behind.

A shell's Ctrl-C reaches the whole process group; a supervisor (CI, an
editor, `timeout`) often signals only the pid it started. The workers of
the process pool then hear nothing: the main process must end them.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

FIXABLE = "import torch\n\n\ndef step(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"
# Each file takes half a second in a worker: a worker is in the middle of a chunk of 25 files (12 s) when the
# signal comes, and the main process must not wait for it.
SLOW_FILES = """
import time
import optpatch.engine as engine

analyse = engine._FileTask.__call__
engine._FileTask.__call__ = lambda self, item: (time.sleep(0.5), analyse(self, item))[1]
"""


def children(pid: int) -> set[int]:
    found = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if re.search(rf"^PPid:\s+{pid}$", text, re.M):
            found.add(int(status.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return not re.search(r"^State:\s+Z", Path(f"/proc/{pid}/status").read_text(), re.M)
    except FileNotFoundError:
        return False


def wait_until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process table from /proc")
@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_main_process_alone_leaves_no_worker(tmp_path, sent, status):
    (tmp_path / "repo").mkdir()
    for index in range(400):
        (tmp_path / "repo" / f"m{index:03}.py").write_text(FIXABLE)
    program = f"{SLOW_FILES}\nimport sys\nfrom optpatch.cli import main\nsys.argv[0] = 'optpatch'\nmain()\n"
    process = subprocess.Popen(
        [sys.executable, "-c", program, "apply", str(tmp_path / "repo"), "-o", str(tmp_path / "p.diff"), "-j", "2", "--no-cache"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert wait_until(lambda: len(children(process.pid)) >= 2, 60), "the pool's workers never started"
        workers = children(process.pid)
        time.sleep(1)  # each worker is in the middle of its files
        process.send_signal(sent)  # to this pid only, not to its group
        started = time.monotonic()
        _, stderr = process.communicate(timeout=60)
        assert time.monotonic() - started < 5, "the main process waited for the queued files"
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, stderr
    assert "Interrupted" in stderr and "Traceback" not in stderr, stderr
    assert wait_until(lambda: not any(alive(pid) for pid in workers), 5), [pid for pid in workers if alive(pid)]
    assert not (tmp_path / "p.diff").exists()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process table from /proc")
def test_an_interrupt_does_not_wait_for_a_parse_in_a_child():
    """A parse with headers runs in a forked child (child_process.py); a precompiled header of torch's takes 30 s."""
    program = (
        "import time\nfrom optpatch.child_process import run_in_child\n"
        "try:\n    run_in_child(lambda: time.sleep(120), 300)\nexcept KeyboardInterrupt:\n    print('Interrupted')\n"
    )
    process = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: len(children(process.pid)) == 1, 60), "the parse's child never started"
        (child,) = children(process.pid)
        process.send_signal(signal.SIGINT)  # to the parent alone, as a supervisor sends it
        started = time.monotonic()
        stdout, stderr = process.communicate(timeout=150)
        assert time.monotonic() - started < 5, "the interrupted parent waited for its child's parse"
    finally:
        if process.poll() is None:
            process.kill()
    assert "Interrupted" in stdout, stderr
    assert not alive(child)
