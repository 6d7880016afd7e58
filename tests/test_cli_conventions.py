"""ruff's conventions on optpatch's command line, and the rough edges a new user hit (issue 21), through the console script."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli, run_cli_hooked

EXAMPLE = REPO_ROOT / "examples" / "minivllm"
FIXABLE = "import torch\n\n\ndef step(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"
# An OPT102 fix (the parameter is annotated as a device) beside FIXABLE's OPT101 one.
ON_DEVICE = "import torch\n\n\ndef ids(n: int, device: torch.device):\n    return torch.arange(n).to(device)\n"


@pytest.fixture
def example(tmp_path) -> Path:
    copy = tmp_path / "minivllm"
    shutil.copytree(EXAMPLE, copy)
    return copy


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def codes(stdout: str) -> list[str]:
    return [finding["code"] for finding in json.loads(stdout)["findings"]]


# -- formats ----------------------------------------------------------------------------------------


def untimed(text: str) -> str:
    return re.sub(r"in \d+\.\d+ s", "in N s", text)


def test_output_format_and_format_are_one_option_and_text_is_full(example):
    full = run_cli("check", str(example), "--output-format", "full")
    assert full.returncode == 1
    assert untimed(run_cli("check", str(example), "--format", "full").stdout) == untimed(full.stdout)
    assert untimed(run_cli("check", str(example), "--format", "text").stdout) == untimed(full.stdout)
    concise = run_cli("check", str(example), "--output-format", "concise").stdout
    assert re.search(r"^minivllm/kv_cache.py:34:22: OPT101 zeros-to-empty \[safe, fixable\] ", concise, re.M)


def test_every_format_the_help_names_is_accepted(example):
    from optpatch.reporters import CHOICES

    help_text = run_cli("check", "--help").stdout
    for name in ("full", "concise", "json", "sarif", "github", "markdown"):
        assert name in CHOICES and name in help_text
    assert "--output-format" in help_text and "--format" in help_text


def test_piped_text_fits_80_columns_without_padding(example):
    lines = run_cli("check", str(example), "--no-cache", "-v").stdout.splitlines()
    assert lines and all(line == line.rstrip() for line in lines), "trailing spaces"
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines)
    listing = run_cli("rules").stdout.splitlines()
    assert all(line == line.rstrip() for line in listing) and any(line.startswith("OPT101") for line in listing)
    explained = run_cli("explain", f"{example}:minivllm/kv_cache.py:34").stdout.splitlines()
    assert len(explained) > 5 and all(line == line.rstrip() and len(line) <= 80 for line in explained)


def test_columns_sets_the_width(example, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    wide = run_cli("check", str(example), "--no-cache").stdout.splitlines()
    monkeypatch.setenv("COLUMNS", "60")
    narrow = run_cli("check", str(example), "--no-cache").stdout.splitlines()
    headers = {line for line in wide if re.match(r"\S+:\d+:\d+: OPT\d+ ", line)}  # never wrapped: one line to grep
    assert max(map(len, wide)) > 120 and max(len(line) for line in narrow if line not in headers) <= 60
    assert len(narrow) > len(wide)


# -- what a command wrote: fixable, in patch, fixed ----------------------------------------------------


def test_check_says_fixable_and_applied_means_written(tmp_path):
    root = write(tmp_path / "repo", {"model.py": FIXABLE})
    text = run_cli("check", str(root), "--no-cache")
    assert "[safe, fixable]" in text.stdout and "Summary: 1 fixable" in text.stdout
    assert "fixed" not in text.stdout and "in patch" not in text.stdout
    (finding,) = json.loads(run_cli("check", str(root), "--no-cache", "--format", "json").stdout)["findings"]
    assert finding["accepted"] and not finding["written"]
    applied = json.loads(run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "json").stdout)
    assert applied["findings"][0]["written"] and applied["summary"]["written"] == 1
    (result,) = json.loads(run_cli("check", str(root), "--format", "sarif").stdout)["runs"][0]["results"]
    assert result["properties"]["accepted"] and not result["properties"]["written"]
    assert result["message"]["text"].endswith("(tier safe, fixable)")
    fixed = run_cli("check", str(root), "--fix", "--no-cache", "--format", "json")
    assert fixed.returncode == 0 and json.loads(fixed.stdout)["findings"][0]["written"]


def test_apply_says_in_patch_and_write_says_fixed_and_suggests_git_diff(tmp_path):
    root = write(tmp_path / "repo", {"model.py": FIXABLE})
    patched = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--no-cache")
    assert "[safe, in patch]" in patched.stdout and "git -C" in patched.stdout and "apply --check" in patched.stdout
    written = run_cli("apply", str(root), "-o", str(tmp_path / "q.diff"), "--no-cache", "--write")
    assert "[safe, fixed]" in written.stdout and "Summary: 1 fixed" in written.stdout
    assert f"git -C {root} diff" in written.stdout and "apply --check" not in written.stdout


# -- ruff's options ---------------------------------------------------------------------------------


def test_statistics_count_by_rule_tier_and_status_then_exit(example):
    result = run_cli("check", str(example), "--statistics", "--no-cache")
    assert result.returncode == 1  # as check: fixable findings
    rows = [line.split(None, 4) for line in result.stdout.splitlines()]
    assert ["5", "OPT101", "zeros-to-empty", "safe", "fixable"] in rows
    assert ["10", "OPT101", "zeros-to-empty", "-", "kept"] in rows
    assert not any("proof" in line for line in result.stdout.splitlines())
    document = json.loads(run_cli("check", str(example), "--statistics", "--format", "json", "--no-cache").stdout)
    assert {"code": "OPT102", "name": "create-on-device", "tier": "unsafe", "status": "proposed", "count": 1} in document
    refused = run_cli("check", str(example), "--statistics", "--format", "sarif")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "Usage" not in refused.stderr


def test_diff_prints_the_patch_and_changes_nothing(example, tmp_path):
    before = {p: p.read_bytes() for p in example.rglob("*") if p.is_file()}
    result = run_cli("check", str(example), "--diff", "--no-cache")
    assert result.returncode == 1
    assert run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"), "--no-cache").returncode == 0
    assert result.stdout == (tmp_path / "p.diff").read_text()  # the patch and nothing else
    assert "Summary:" in result.stderr
    assert {p: p.read_bytes() for p in example.rglob("*") if p.is_file()} == before
    both = run_cli("check", str(example), "--diff", "--fix")
    assert both.returncode == 2 and "--diff" in both.stderr


def test_show_fixes_shows_each_fix_as_the_patch_has_it(example, tmp_path):
    result = run_cli("apply", str(example), "-o", str(tmp_path / "p.diff"), "--show-fixes", "--no-cache")
    patch = (tmp_path / "p.diff").read_text().splitlines()
    changed = {line[1:].strip() for line in patch if line[:1] in "+-" and line[:3] not in ("+++", "---")}
    blocks = result.stdout.split("\n\n")
    in_patch = "\n".join(block for block in blocks if ", in patch]" in block.split("\n  ")[0])
    shown = [m.group(2).strip() for m in re.finditer(r"^ +(\d+ )? *([-+] .*)$", in_patch, re.M)]
    assert len(shown) >= 20
    assert all("  diff:" in block for block in blocks if ", proposed]" in block)  # a proposal's diff, for review
    def patched(line: str) -> bool:  # a line cut to the width ends in an ellipsis
        code = line[2:].strip()
        return code in changed or code.endswith("…") and any(c.startswith(code[:-1]) for c in changed)

    assert all(patched(line) for line in shown), [line for line in shown if not patched(line)]
    assert "+ #include <vector>" in shown  # OPT201's include, lines away from its site
    assert "diff:" not in run_cli("apply", str(example), "-o", str(tmp_path / "q.diff"), "--no-cache").stdout


def test_exit_zero_passes_fixable_findings_but_not_files_it_could_not_analyse(tmp_path):
    root = write(tmp_path / "repo", {"model.py": FIXABLE})
    assert run_cli("check", str(root), "--exit-zero").returncode == 0
    write(root, {"broken.py": "def f(:\n    x = torch.zeros(3)\n"})
    assert run_cli("check", str(root), "--exit-zero").returncode == 3


def test_extend_select_and_extend_ignore_on_the_command_line_and_in_config(tmp_path):
    root = write(tmp_path / "repo", {"a.py": FIXABLE, "b.py": ON_DEVICE})
    both = ["OPT101", "OPT102"]
    assert codes(run_cli("check", str(root), "--format", "json", "--no-cache").stdout) == both
    assert codes(run_cli("check", str(root), "--format", "json", "--select", "OPT101", "--extend-select", "OPT102").stdout) == both
    assert codes(run_cli("check", str(root), "--format", "json", "--extend-ignore", "OPT101").stdout) == ["OPT102"]
    write(root, {"pyproject.toml": '[tool.optpatch]\nselect = ["OPT101"]\nextend-select = ["OPT102"]\n'})
    assert codes(run_cli("check", str(root), "--format", "json", "--no-cache").stdout) == both
    write(root, {"pyproject.toml": '[tool.optpatch]\nextend-ignore = ["OPT102"]\n'})
    assert codes(run_cli("check", str(root), "--format", "json", "--no-cache").stdout) == ["OPT101"]
    unknown = run_cli("check", str(root), "--extend-select", "OPT999")
    assert unknown.returncode == 2 and "OPT999" in unknown.stderr


@pytest.mark.parametrize("fmt", ["full", "json"])
def test_output_file_takes_the_report_and_leaves_stdout_empty(example, tmp_path, fmt):
    report = tmp_path / f"report.{fmt}"
    result = run_cli("check", str(example), "--output-format", fmt, "--output-file", str(report), "--no-cache")
    assert result.returncode == 1 and result.stdout == ""
    text = report.read_text()
    if fmt == "json":
        assert json.loads(text)["summary"]["accepted"] == 11
    else:
        assert "Summary: 11 fixable" in text and "\x1b[" not in text
    missing = run_cli("check", str(example), "--output-file", str(tmp_path / "no" / "r.txt"))
    assert missing.returncode == 2 and "--output-file" in missing.stderr


def test_rules_as_json(cli):
    listing = json.loads(cli("rules", "--format", "json").stdout)
    assert [rule["code"] for rule in listing][:2] == ["OPT101", "OPT102"]
    one = json.loads(cli("rules", "OPT101", "--output-format", "json").stdout)
    assert one["name"] == "zeros-to-empty" and one["default_tier"] == "safe" and "## Fix safety" in one["explanation"]


# -- configuration ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["pyproject.toml", "optpatch.toml", ".optpatch.toml"])
def test_apply_and_check_find_the_configuration_above_the_scanned_path(tmp_path, name):
    table = "[tool.optpatch]\n" if name == "pyproject.toml" else ""
    root = write(tmp_path / "repo", {name: f'{table}ignore = ["OPT101"]\n', "pkg/a.py": FIXABLE, "pkg/b.py": ON_DEVICE})
    for command in (["apply", str(root / "pkg"), "-o", str(tmp_path / "p.diff")], ["check", str(root / "pkg")]):
        assert codes(run_cli(*command, "--format", "json", "--no-cache").stdout) == ["OPT102"], command


def test_a_pyproject_without_the_table_is_passed_over_and_optpatch_toml_comes_first(tmp_path):
    root = write(tmp_path / "repo", {
        "pyproject.toml": '[tool.optpatch]\nignore = ["OPT101"]\n',
        "pkg/pyproject.toml": "[project]\nname = 'pkg'\n",
        "pkg/a.py": FIXABLE, "pkg/b.py": ON_DEVICE,
    })
    assert codes(run_cli("apply", str(root / "pkg"), "-o", str(tmp_path / "p.diff"), "--format", "json").stdout) == ["OPT102"]
    write(root, {"optpatch.toml": 'ignore = ["OPT102"]\n'})  # beside the pyproject.toml: optpatch's own file wins
    assert codes(run_cli("apply", str(root / "pkg"), "-o", str(tmp_path / "p.diff"), "--format", "json").stdout) == ["OPT101"]


def test_a_configuration_error_is_one_line_without_the_usage_banner(tmp_path):
    root = write(tmp_path / "repo", {"a.py": FIXABLE, ".optpatch.toml": "select = ['OPT101']\nbogus = 1\n"})
    for command in (["check", str(root)], ["apply", str(root), "-o", str(tmp_path / "p.diff")], ["explain", str(root)]):
        result = run_cli(*command)
        assert result.returncode == 2, command
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and "unknown key `bogus`" in result.stderr
        assert "Usage:" not in result.stderr
    assert not (tmp_path / "p.diff").exists()


# -- optpatch validate ----------------------------------------------------------------------------------


def test_validate_without_torch_is_a_usage_error_with_the_install_command():
    missing = "import optpatch.validation.kernels as check\ncheck.torch_installed = lambda: False"
    result = run_cli_hooked(missing, "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pip install torch (" in result.stderr and result.stderr.count("\n") == 1


def test_the_engine_cites_the_projects_docs_not_the_specification_users_do_not_have():
    """RULES.md and CONTRACT.md are the developers' specification; users have README.md and docs/.

    Rule files and analysis/ (their proofs) are checked with the rules.
    """
    package = REPO_ROOT / "src" / "optpatch"
    citing = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py")) if path.parent.name != "analysis"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\b(RULES|CONTRACT)\.md\b", line)
    ]
    assert citing == []


def test_the_readme_shows_what_make_demo_prints(example, tmp_path, monkeypatch):
    """README's abridged demo: every block it shows is in a real run's output at 90 columns, as it says."""
    readme = (REPO_ROOT / "README.md").read_text()
    shown = readme.split("`make demo` prints a block per finding", 1)[1].split("```\n", 2)[1]
    monkeypatch.setenv("COLUMNS", "90")
    printed = run_cli("apply", str(example), "-o", str(tmp_path / "model_patch.diff"), "--no-cache").stdout

    def normal(text: str) -> str:
        text = re.sub(r"in \d+\.\d+ s", "in N s", text)
        return re.sub(r"Patch for .*", "Patch ...", text, flags=re.S)

    blocks = normal(shown).split("\n\n")
    assert len(blocks) >= 5
    for block in blocks:
        assert block.strip("\n") in normal(printed), block
