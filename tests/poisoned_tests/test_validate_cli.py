"""`optpatch apply|check --validate CMD` end to end, through the real command line."""

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from decode_inputs_repo import write_decode_inputs
from validation_helpers import optpatch, snapshot, stops

TEST_COMMAND = "python -m pytest -q -p no:cacheprovider"


@pytest.fixture
def decode_repo(tmp_path) -> Path:
    return write_decode_inputs(tmp_path / "decode_inputs")


def stand_in_suite(breaks_on: str) -> str:
    """A fast stand-in for the repository's pytest run: it fails, as pytest reports it, when
    decoding/inputs.py contains BREAKS_ON, and reports itself poisoned without importing torch."""
    return (
        'printf "$$ %s\\n" "$OPTPATCH_POISON" >> "$OPTPATCH_POISON_LOG"; '
        'printf "decoding/inputs.py\\n" >> "$OPTPATCH_IMPORT_LOG"; '
        f"if grep -qF '{breaks_on}' decoding/inputs.py; then "
        "echo 'FAILED tests/test_inputs.py::test_mean_seq_len_with_free_slots - AssertionError'; exit 1; fi"
    )


def changed_lines(patch: str) -> list[str]:
    return [line for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_apply_keeps_the_full_overwrite_and_drops_the_prefix_write(decode_repo, tmp_path):
    before = snapshot(decode_repo)
    patch = tmp_path / "model_patch.diff"
    result = optpatch("apply", decode_repo, "-o", patch, "--validate", TEST_COMMAND)
    assert result.returncode == 0, result.stdout + result.stderr
    assert changed_lines(patch.read_text()) == [
        "-        self.hidden = torch.zeros(max_num_seqs, hidden_size, device=device)",
        "+        self.hidden = torch.empty(max_num_seqs, hidden_size, device=device)",
    ]
    report = result.stdout
    assert "dropped OPT101 decoding/inputs.py:10:" in report
    assert "failing: tests/test_inputs.py::test_mean_seq_len_with_free_slots" in report
    assert "passed OPT101 decoding/inputs.py:9:" in report and "(validate tier): applied" in report
    assert subprocess.run(["git", "apply", "--check", str(patch)], cwd=decode_repo).returncode == 0
    assert snapshot(decode_repo) == before


def test_check_validate_reports_the_same_in_json_and_exits_one(decode_repo):
    before = snapshot(decode_repo)
    result = optpatch("check", decode_repo, "--validate", stand_in_suite(breaks_on="self.seq_lens = torch.empty"),
                      "--format", "json", "-q")
    assert result.returncode == 1, result.stdout + result.stderr
    document = json.loads(result.stdout)
    validation = document["validation"]
    assert validation["status"] == "passed"
    assert [item.rsplit(":", 3)[1] for item in validation["validate_tier_passed"]] == ["9"]
    (dropped,) = validation["dropped"]
    assert dropped["fix"].startswith("decoding/inputs.py:10:")
    assert dropped["failure"]["failing_tests"] == ["tests/test_inputs.py::test_mean_seq_len_with_free_slots"]
    by_line = {f["line"]: f for f in document["findings"]}
    assert by_line[9]["accepted"] and not by_line[10]["accepted"]
    assert not by_line[9]["written"]  # check writes nothing
    assert by_line[10]["refused_because"].startswith("backed out:")
    assert snapshot(decode_repo) == before


def test_one_bad_fix_among_32_costs_a_logarithmic_number_of_runs(tmp_path):
    repo = tmp_path / "blocks"
    write_block_repo(repo, files=8, buffers_per_file=4, bad=(3, 1))
    count = tmp_path / "runs.txt"
    patch = tmp_path / "p.diff"
    before = snapshot(repo)
    result = optpatch("apply", repo, "-o", patch, "--validate", f"echo run >> {count}; python check.py")
    assert result.returncode == 0, result.stdout + result.stderr
    document_runs = len(count.read_text().split())
    # 2 baseline runs; then per probe one run if it fails (nan), two if it passes; log2(32) = 5 halvings
    # plus the run of everything and at most one run of the rest: 7 probes.
    assert 2 + 5 <= document_runs <= 2 + 2 * 7
    assert "dropped OPT101 blocks/block_3.py:" in result.stdout and "self.buffer_1 = " in (repo / "blocks" / "block_3.py").read_text()
    assert result.stdout.count("passed OPT101") == 31
    removed = [line for line in changed_lines(patch.read_text()) if line.startswith("-")]
    assert len(removed) == 31 and not any("buffer_1 = torch.zeros(" in line for line in removed if "block_3" in line)
    assert snapshot(repo) == before


def write_block_repo(repo: Path, files: int, buffers_per_file: int, bad: tuple[int, int]) -> None:
    """FILES modules of one class each, holding attribute buffers filled by copy_; one is filled only in part."""
    (repo / "blocks").mkdir(parents=True)
    (repo / "blocks" / "__init__.py").write_text("")
    checks = ["import torch", ""]
    for index in range(files):
        names = [f"buffer_{b}" for b in range(buffers_per_file)]
        lines = ["import torch", "", "", f"class Block{index}:", "    def __init__(self, n):"]
        lines += [f"        self.{name} = torch.zeros(n)" for name in names]
        lines += ["", "    def load(self, x):"]
        for b, name in enumerate(names):
            if (index, b) == bad:
                lines.append(f"        self.{name}[: x.shape[0] // 2].copy_(x[: x.shape[0] // 2])")
            else:
                lines.append(f"        self.{name}.copy_(x)")
        lines += ["", "    def total(self):", "        return " + " + ".join(f"self.{name}.sum()" for name in names), ""]
        (repo / "blocks" / f"block_{index}.py").write_text("\n".join(lines))
        expected = 4 * buffers_per_file - (2 if index == bad[0] else 0)
        checks += [
            f"from blocks.block_{index} import Block{index}",
            f"block = Block{index}(4)",
            "block.load(torch.ones(4))",
            f"assert block.total().item() == {expected}, ('block_{index}', block.total())",
        ]
    (repo / "check.py").write_text("\n".join(checks) + "\n")


def test_a_failing_baseline_exits_four_shows_its_output_and_writes_nothing(decode_repo, tmp_path):
    (decode_repo / "tests" / "test_broken.py").write_text("def test_broken():\n    assert False, 'broken before optpatch'\n")
    before = snapshot(decode_repo)
    patch = tmp_path / "p.diff"
    result = optpatch("apply", decode_repo, "-o", patch, "--validate", TEST_COMMAND)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "fails on the original tree" in result.stdout
    assert "broken before optpatch" in result.stdout
    assert "No patch written" in result.stderr
    assert not patch.exists()
    assert snapshot(decode_repo) == before


def test_a_timeout_stops_the_whole_command_and_says_so(decode_repo, tmp_path):
    before = snapshot(decode_repo)
    pids, temporary = tmp_path / "pids", tmp_path / "tmp"
    temporary.mkdir()
    command = f"sleep 300 & echo $! > {pids}; sleep 300"
    result = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff", "--validate", command, "--validate-timeout", "2",
                      TMPDIR=str(temporary))
    assert result.returncode == 4, result.stdout + result.stderr
    assert "timed out after 2 s on the original tree" in result.stdout
    assert "--validate-timeout" in result.stdout
    assert stops(int(pids.read_text()))
    assert list(temporary.iterdir()) == []
    assert snapshot(decode_repo) == before


def test_ctrl_c_stops_the_command_removes_the_copy_and_exits_130(decode_repo, tmp_path):
    before = snapshot(decode_repo)
    started, temporary = tmp_path / "started", tmp_path / "tmp"
    temporary.mkdir()
    command = f"echo $$ > {started}; sleep 300"
    process = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff", "--validate", command, wait=False,
                       TMPDIR=str(temporary))
    deadline = time.monotonic() + 120
    while not (started.exists() and started.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    shell = int(started.read_text())
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "Interrupted" in stderr and "is unchanged" in stderr
    assert stops(shell)
    assert list(temporary.iterdir()) == []
    assert not (tmp_path / "p.diff").exists()
    assert snapshot(decode_repo) == before


def test_no_surviving_fix_exits_four_with_an_empty_patch(decode_repo, tmp_path):
    patch = tmp_path / "p.diff"
    result = optpatch("apply", decode_repo, "-o", patch, "--validate", stand_in_suite(breaks_on="torch.empty"))
    assert result.returncode == 4, result.stdout + result.stderr
    assert "no fix survived" in result.stdout
    assert patch.read_bytes() == b""


def test_a_trusted_configuration_names_the_default_command(decode_repo, tmp_path):
    (decode_repo / "pyproject.toml").write_text("[tool.optpatch]\nvalidate-command = \"echo ran-from-config; exit 3\"\n")
    untrusted = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff")
    assert untrusted.returncode == 0 and "--trust-config" in untrusted.stderr
    not_asked = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff", "--trust-config")
    assert not_asked.returncode == 0 and "ran-from-config" not in not_asked.stdout  # nothing runs without --validate
    trusted = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff", "--trust-config", "--validate")
    assert trusted.returncode == 4
    assert "ran-from-config" in trusted.stdout


def test_build_without_validate_is_a_usage_error(decode_repo, tmp_path):
    result = optpatch("apply", decode_repo, "-o", tmp_path / "p.diff", "--build", "make")
    assert result.returncode == 2 and "--build CMD needs --validate CMD" in result.stderr
    assert not (tmp_path / "p.diff").exists()


def test_markdown_body_says_what_validation_did_and_json_output_keeps_a_copy(decode_repo, tmp_path):
    """One run gives a PR body (--format markdown) and the JSON report (--json-output), validation in both."""
    patch, copy = tmp_path / "p.diff", tmp_path / "report.json"
    result = optpatch("apply", decode_repo, "-o", patch, "--validate", stand_in_suite(breaks_on="self.seq_lens = torch.empty"),
                      "--format", "markdown", "--json-output", copy, "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    body = result.stdout
    section = body.split("#### Validation\n", 1)[1].split("\n#### ", 1)[0]
    assert "passed" in section.splitlines()[1]
    assert "- backed out `decoding/inputs.py:10:" in section
    assert "`tests/test_inputs.py::test_mean_seq_len_with_free_slots`" in section
    assert "- passed, so applied (validate tier): `decoding/inputs.py:9:" in section
    document = json.loads(copy.read_text())
    assert document["validation"]["status"] == "passed" and document["patch"] == str(patch)
    by_line = {f["line"]: f for f in document["findings"] if f["path"] == "decoding/inputs.py"}
    assert by_line[9]["written"] and not by_line[10]["written"]
    assert "<!-- optpatch-report -->" not in copy.read_text()
