"""run_command: exit status, output tail, failing test names, timeouts that stop the whole process group."""

import os

from validation_helpers import stops

from optpatch.validation.commands import TAIL_LINES, run_command


def run(tmp_path, command, timeout_s=60.0):
    return run_command(command, tmp_path, dict(os.environ), timeout_s, tmp_path / "run.log", "original tree", "nan")


def test_a_failing_run_keeps_the_tail_of_its_output_and_the_failing_tests(tmp_path):
    command = (
        "for i in $(seq 1 100); do echo line $i; done; "
        "echo 'FAILED tests/test_a.py::test_one - AssertionError'; "
        "echo 'FAIL: test_two (pkg.tests.CaseTest.test_two)' >&2; exit 2"
    )
    result = run(tmp_path, command)
    assert not result.passed and result.returncode == 2
    assert result.failing_tests == ("tests/test_a.py::test_one", "test_two (pkg.tests.CaseTest.test_two)")
    lines = result.tail.splitlines()
    assert len(lines) == TAIL_LINES and lines[-1].startswith("FAIL: test_two") and "line 100" in result.tail
    assert "line 50" not in result.tail
    assert result.describe().startswith("failed with exit status 2")


def test_a_timeout_kills_the_command_and_what_it_started(tmp_path):
    pid_file = tmp_path / "pid"
    result = run(tmp_path, f"sleep 300 & echo $! > {pid_file}; wait", timeout_s=1)
    assert result.timed_out and not result.passed
    assert result.describe() == "timed out after 1 s (--validate-timeout)"
    assert stops(int(pid_file.read_text()))


def test_processes_left_behind_by_a_passing_command_are_stopped(tmp_path):
    pid_file = tmp_path / "pid"
    result = run(tmp_path, f"sleep 300 > /dev/null 2>&1 & echo $! > {pid_file}")
    assert result.passed
    assert stops(int(pid_file.read_text()))
