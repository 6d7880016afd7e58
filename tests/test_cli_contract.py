"""CONTRACT.md, pinned down through the real command line."""

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli, run_cli_hooked

EXAMPLE = REPO_ROOT / "examples" / "minivllm"


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def example(tmp_path) -> Path:
    copy = tmp_path / "minivllm"
    shutil.copytree(EXAMPLE, copy)
    return copy


def git_apply_check(repo: Path, patch: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, text=True)


def test_apply_writes_a_patch_git_accepts_and_leaves_repo_untouched(example, tmp_path):
    before = snapshot(example)
    patch = tmp_path / "out.diff"
    result = run_cli("apply", str(example), "-o", str(patch))
    assert result.returncode == 0, result.stderr
    assert patch.read_bytes().startswith(b"diff --git a/")
    assert snapshot(example) == before
    checked = git_apply_check(example, patch)
    assert checked.returncode == 0, checked.stderr


def test_patched_tree_gives_an_empty_patch(example, tmp_path):
    patch = tmp_path / "first.diff"
    assert run_cli("apply", str(example), "-o", str(patch)).returncode == 0
    subprocess.run(["git", "apply", str(patch)], cwd=example, check=True)
    second = tmp_path / "second.diff"
    result = run_cli("apply", str(example), "-o", str(second))
    assert result.returncode == 0
    assert second.read_bytes() == b""
    assert "No changes" in result.stdout


def test_patch_is_identical_for_any_number_of_jobs(example, tmp_path):
    # Enough files that the process pool really runs.
    for index in range(40):
        shutil.copy(example / "minivllm" / "sampler.py", example / f"sampler_{index}.py")
    patches = []
    for jobs in ("1", "2"):
        out = tmp_path / f"jobs{jobs}.diff"
        assert run_cli("apply", str(example), "-o", str(out), "--jobs", jobs).returncode == 0
        patches.append(out.read_bytes())
    assert patches[0] == patches[1] and patches[0]


def test_patch_to_stdout_keeps_the_report_off_stdout(example):
    result = run_cli("apply", str(example), "-o", "-")
    assert result.returncode == 0
    assert result.stdout.startswith("diff --git a/")
    assert "Summary" in result.stderr


def test_an_empty_patch_to_stdout_still_says_no_changes(example):
    result = run_cli("apply", str(example / "tests"), "-o", "-")
    assert result.returncode == 0
    assert result.stdout == ""
    assert "No changes" in result.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "markdown", "github-annotations"])
def test_patch_to_stdout_keeps_a_machine_report_off_stdout(example, fmt, tmp_path):
    result = run_cli("apply", str(example), "-o", "-", "--format", fmt)
    assert result.returncode == 0
    assert run_cli("apply", str(example), "-o", str(tmp_path / "p.diff")).returncode == 0
    assert result.stdout == (tmp_path / "p.diff").read_text()  # the patch and nothing else
    assert "OPT101" in result.stderr
    if fmt in ("json", "sarif"):
        json.loads(result.stderr)


def test_force_exclude_applies_exclude_to_named_files(example):
    (example / "pyproject.toml").write_text('[tool.optpatch]\nexclude = ["minivllm/kv_cache.py"]\n')
    named = str(example / "minivllm" / "kv_cache.py")
    assert "OPT101" in run_cli("check", named, "--no-cache").stdout  # named on the command line: analysed, as ruff does
    forced = run_cli("check", named, "--no-cache", "--force-exclude")
    assert forced.returncode == 0 and "OPT101" not in forced.stdout, forced.stdout
    (example / "pyproject.toml").write_text('[tool.optpatch]\nexclude = ["minivllm/"]\nforce-exclude = true\n')
    configured = run_cli("check", named, "--no-cache")
    assert configured.returncode == 0 and "OPT101" not in configured.stdout, configured.stdout


def test_unused_suppressions_are_reported(example, tmp_path):
    kv_cache = example / "minivllm" / "kv_cache.py"
    lines = kv_cache.read_text().splitlines(keepends=True)
    lines.insert(0, "# optpatch: ignore[OPT102]\n")  # nothing to silence on the first two lines
    kv_cache.write_text("".join(lines))
    (example / "notes.py").write_text("x = 1  # optpatch: ignore\n")  # no rule looks at this file at all
    found = {("minivllm/kv_cache.py", 1), ("notes.py", 1)}
    document = json.loads(run_cli("check", str(example), "--format", "json", "--no-cache").stdout)
    assert {(u["path"], u["line"]) for u in document["unused_suppressions"]} == found
    text = run_cli("check", str(example), "--no-cache")
    assert "2 unused suppressions (-v lists them)" in text.stdout
    assert "notes.py:1" in run_cli("check", str(example), "--no-cache", "-v").stdout


def test_write_applies_fixes_in_place(example, tmp_path):
    result = run_cli("apply", str(example), "--write", "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 0, result.stderr
    assert "torch.empty(cpu_blocks.shape" in (example / "minivllm" / "kv_cache.py").read_text()
    again = run_cli("apply", str(example), "-o", str(tmp_path / "again.diff"))
    assert (tmp_path / "again.diff").read_bytes() == b""


def test_check_exits_one_on_fixable_findings_and_zero_when_clean(example):
    assert run_cli("check", str(example)).returncode == 1
    assert run_cli("check", str(example / "tests")).returncode == 0


def test_json_report_carries_every_finding_field(example, tmp_path):
    result = run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"), "--format", "json")
    document = json.loads(result.stdout)
    assert document["schema_version"] == 4
    assert document["patch"] == str((tmp_path / "p.diff").resolve())
    finding = next(f for f in document["findings"] if f["written"])
    for key in ("code", "name", "path", "line", "column", "tier", "reason", "context", "impact", "impact_basis", "replacement"):
        assert finding[key] not in (None, ""), key


def test_bad_files_are_named_and_the_rest_is_patched_as_without_them(example, tmp_path):
    clean = tmp_path / "clean.diff"
    assert run_cli("apply", str(example), "-o", str(clean)).returncode == 0
    (example / "broken.py").write_text("def f(:\n    x = torch.zeros(3)\n")
    (example / "latin.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\nx = torch.zeros(3)\n")
    (example / "blob.py").write_bytes(b"\x00\x01torch.zeros\x00" * 10)
    dirty = tmp_path / "dirty.diff"
    result = run_cli("apply", str(example), "-o", str(dirty))
    assert result.returncode == 3
    assert "Traceback" not in result.stdout + result.stderr
    assert re.search(r"^broken.py:1:\d+: error: syntax error", result.stdout, re.M)  # with its column, as compilers write it
    assert "latin.py:2: error: not valid utf-8" in result.stdout
    assert "blob.py: error: binary file" in result.stdout
    assert dirty.read_bytes() == clean.read_bytes()


def test_usage_errors_exit_two_and_write_nothing(example, tmp_path):
    out = tmp_path / "p.diff"
    result = run_cli("apply", str(example), "-o", str(out), "--select", "NOPE9")
    assert result.returncode == 2 and "unknown rule" in result.stderr
    (example / "pyproject.toml").write_text("[tool.optpatch]\nselect = ['OPT101']\nbogus = 1\n")
    result = run_cli("apply", str(example), "-o", str(out))
    assert result.returncode == 2 and "unknown key `bogus`" in result.stderr
    assert not out.exists()


def test_repo_config_naming_a_command_is_inert_with_a_note(example, tmp_path):
    marker = tmp_path / "ran"
    (example / "pyproject.toml").write_text(f"[tool.optpatch]\nvalidate-command = 'touch {marker}'\n")
    result = run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"))
    assert result.returncode == 0, result.stderr
    assert "sets validate-command; not run" in result.stderr and not marker.exists()
    trusted = run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"), "--trust-config")
    assert trusted.returncode == 0 and not marker.exists()  # only --validate runs it
    asked = run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"), "--validate")
    assert asked.returncode == 2 and "--trust-config" in asked.stderr and not marker.exists()


def test_suppression_comments_are_honoured_in_write_mode(example, tmp_path):
    path = example / "minivllm" / "kv_cache.py"
    text = path.read_text().replace(
        "gpu_blocks = torch.zeros(", "gpu_blocks = torch.zeros(  # optpatch: ignore[OPT101]\n            "
    )
    path.write_text(text)
    run_cli("apply", str(example), "--write", "-o", str(tmp_path / "p.diff"))
    assert "torch.zeros(" in path.read_text().split("def swap_in")[1]


def test_rules_command_lists_and_documents(cli):
    listing = cli("rules")
    assert listing.returncode == 0 and "OPT101" in listing.stdout
    page = cli("rules", "OPT101")
    assert "Fix safety" in page.stdout and "Measured impact" in page.stdout


def test_explain_prints_the_proof_and_the_blocker(cli):
    fixed = cli("explain", f"{EXAMPLE}:minivllm/kv_cache.py:34")
    assert "Proof: every path overwrites `gpu_blocks`" in fixed.stdout
    kept = cli("explain", f"{EXAMPLE}:minivllm/sampler.py:32")
    assert "Kept because: L33: read-modify-write" in kept.stdout


@pytest.mark.parametrize("suffix", [":minivllm/kv_cache.py", ":minivllm/kv_cache.py:x", ":minivllm/kv_cache.py:-1", "-missing"])
def test_explain_with_a_malformed_target_is_a_usage_error(example, suffix):
    result = run_cli("explain", str(example) + suffix)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "REPO:FILE:LINE" in result.stderr


@pytest.mark.parametrize(
    ("raised", "status", "stderr"),
    [(SystemExit(3), 3, ""), (SystemExit(None), 0, ""), (SystemExit("no luck"), 1, "no luck\n")],
    ids=["status", "none", "message"],
)
def test_the_console_script_exits_with_mains_status_after_flushing(monkeypatch, capsys, raised, status, stderr):
    from optpatch import cli

    def main():
        print("report")
        raise raised

    exits = []
    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr("os._exit", exits.append)
    cli.entry()
    assert exits == [status]
    assert capsys.readouterr() == ("report\n", stderr)


def test_the_console_script_exits_120_when_its_output_cannot_be_flushed(monkeypatch):
    """As the interpreter does when flushing stdout fails at exit (a full disk, a closed pipe)."""
    from optpatch import cli

    class Full:
        def flush(self):
            raise OSError(28, "No space left on device")

    def main():
        raise SystemExit(0)

    exits = []
    monkeypatch.setattr(cli, "main", main)
    monkeypatch.setattr("os._exit", exits.append)
    monkeypatch.setattr("sys.stdout", Full())
    cli.entry()
    assert exits == [120]


def test_a_quiet_run_in_a_machine_format_does_without_rich(example):
    """rich (30 ms of imports) is for the text report and the progress bar: CI bots reading JSON never wait for it."""
    hook = "import atexit, sys\natexit.register(lambda: print('rich imported:', 'rich' in sys.modules, file=sys.stderr))"
    machine = run_cli_hooked(hook, "check", str(example), "--no-cache", "-q", "--format", "json")
    text = run_cli_hooked(hook, "check", str(example), "--no-cache", "-q")
    assert json.loads(machine.stdout)["findings"], machine.stderr
    assert "rich imported: False" in machine.stderr
    assert "rich imported: True" in text.stderr


def test_the_console_script_runs_with_its_output_closed(tmp_path):
    """`optpatch ... >&-`: Python starts with sys.stdout None; the exit must not trip over it."""
    closed = subprocess.run(
        f"{shlex.quote(sys.executable)} -m optpatch --version >&- 2>{shlex.quote(str(tmp_path / 'err'))}",
        shell=True, cwd=REPO_ROOT,
    )
    assert closed.returncode == 0, (tmp_path / "err").read_text()
