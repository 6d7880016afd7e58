"""--output-format github (workflow annotations, as ruff's) and --output-format markdown (a pull-request comment)."""

import json
import re

from conftest import run_cli
from git_repos import FIXABLE, FIXED, write_files

from optpatch.reporters.github import escape_data, escape_property, workflow_command
from optpatch.reporters.markdown import fenced

ANNOTATION = re.compile(r"^::(warning|notice|error) ((?:[a-zA-Z]+=[^,:]*,?)+)::(.*)$")
# The fix needs `empty` imported: two edits on two lines, so it is no one-line suggestion.
IMPORTED = "from torch import zeros\n\n\ndef step(x):\n    out = zeros(x.shape)\n    out.copy_(x)\n    return out\n"


def annotations(stdout: str) -> list[tuple[str, dict[str, str], str]]:
    found = []
    for line in stdout.splitlines():
        match = ANNOTATION.match(line)
        if match:
            properties = dict(item.split("=", 1) for item in match.group(2).split(","))
            found.append((match.group(1), properties, match.group(3)))
    return found


def test_escaping_follows_githubs_rules():
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("dir:a,b%\n") == "dir%3Aa%2Cb%25%0A"
    line = workflow_command("warning", {"file": "a,b.py", "line": 3, "title": "OPT101 x: y"}, "one\ntwo")
    assert line == "::warning file=a%2Cb.py,line=3,title=OPT101 x%3A y::one%0Atwo"
    assert "\n" not in line


def test_github_annotations_point_at_each_fix(tmp_path):
    write_files(tmp_path, {"pkg/model.py": FIXABLE, "pkg/other, odd.py": FIXABLE})
    result = run_cli("check", "pkg", "--output-format", "github", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""
    found = annotations(result.stdout)
    assert [(kind, props["file"], props["line"], props["col"]) for kind, props, _ in found] == [
        ("warning", "pkg/model.py", "5", "11"),
        ("warning", "pkg/other%2C odd.py", "5", "11"),
    ]
    kind, props, message = found[0]
    assert props["title"] == "OPT101 zeros-to-empty"
    assert "%0AFix (safe, fixable): torch.empty(x.shape)" in message  # check writes nothing: fixable, not fixed


def test_markdown_comment_has_table_suggestion_and_folded_patch(tmp_path):
    root = tmp_path / "repo"
    write_files(root, {"model.py": FIXABLE, "imported.py": IMPORTED})
    result = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    body = result.stdout
    assert body.startswith("<!-- optpatch-report -->\n### optpatch: 2 fix(es) in 2 file(s)")
    assert "| fix | `OPT101` zeros-to-empty | `model.py:5:11` | safe |" in body
    suggestions = re.findall(r"```suggestion\n(.*?)\n```", body, re.S)
    assert suggestions == ["    out = torch.empty(x.shape)"]  # imported.py's fix spans two lines: patch only
    folded = re.search(r"<details>\n<summary>.*?</summary>\n\n```diff\n(.*?)\n```\n\n</details>", body, re.S)
    assert folded and folded.group(1) + "\n" == (tmp_path / "p.diff").read_text()


def test_github_annotations_keeps_its_old_name_for_one_release_with_a_note(tmp_path):
    """`github` is ruff's name for workflow annotations; `github-annotations` still works, and says it is going."""
    write_files(tmp_path, {"pkg/model.py": FIXABLE})
    github = run_cli("check", "pkg", "--output-format", "github", cwd=tmp_path)
    old = run_cli("check", "pkg", "--format", "github-annotations", cwd=tmp_path)
    assert old.stdout == github.stdout and annotations(old.stdout)
    (note,) = old.stderr.splitlines()
    assert "deprecated" in note and "use github" in note


def test_suggested_line_applies_to_the_file(tmp_path):
    root = tmp_path / "repo"
    write_files(root, {"model.py": FIXABLE})
    body = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "markdown").stdout
    suggestion = re.search(r"\*\*`model.py:(\d+):\d+`\*\*.*?```suggestion\n(.*?)\n```", body, re.S)
    lines = FIXABLE.splitlines(keepends=True)
    lines[int(suggestion.group(1)) - 1] = suggestion.group(2) + "\n"
    assert "".join(lines) == FIXED


def test_markdown_with_nothing_to_fix_says_so(tmp_path):
    write_files(tmp_path, {"clean.py": "x = 1\n"})
    body = run_cli("apply", str(tmp_path), "-o", str(tmp_path / "p.diff"), "--format", "markdown").stdout
    assert "### optpatch: no changes" in body and "<details>" not in body


def test_fences_outgrow_backticks_inside_the_text():
    assert fenced("a ``` b", "diff") == ["````diff", "a ``` b", "````"]
    assert fenced("plain", "suggestion") == ["```suggestion", "plain", "```"]


def comment_for(tmp_path, files: dict[str, str]) -> str:
    write_files(tmp_path / "repo", files)
    result = run_cli("apply", str(tmp_path / "repo"), "-o", str(tmp_path / "p.diff"), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_patch_too_long_for_a_comment_is_left_to_the_artifact(tmp_path):
    # Long paths weigh most in the patch, whose headers repeat each path four times.
    deep = "/".join(["a_rather_long_directory_name"] * 5)
    body = comment_for(tmp_path, {f"{deep}/module_{index:02d}.py": FIXABLE for index in range(80)})
    assert len(body) <= 65_536 < len(body) + len((tmp_path / "p.diff").read_text())
    assert "```diff" not in body and "download `model_patch.diff`" in body
    assert body.count("```suggestion") == 80 and body.count("| fix |") == 80


def test_a_table_too_long_for_a_comment_is_cut_with_a_count(tmp_path):
    body = comment_for(tmp_path, {f"pkg/module_{index:03d}.py": FIXABLE for index in range(400)})
    assert len(body) <= 65_536
    assert "```suggestion" not in body and "```diff" not in body
    shown = body.count("| fix |")
    assert 100 < shown < 400 and f"{400 - shown} more finding(s)" in body


def test_json_output_writes_the_json_report_beside_another_format(tmp_path):
    root = tmp_path / "repo"
    write_files(root, {"model.py": FIXABLE})
    copy = tmp_path / "report.json"
    result = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "markdown", "--json-output", str(copy))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<!-- optpatch-report -->")
    plain = run_cli("apply", str(root), "-o", str(tmp_path / "p.diff"), "--format", "json")
    document, expected = json.loads(copy.read_text()), json.loads(plain.stdout)
    for report in (document, expected):
        report["summary"].pop("seconds")
    assert document == expected and document["patch"] == str(tmp_path / "p.diff")
    missing = run_cli("check", str(root), "--json-output", str(tmp_path / "no" / "such.json"))
    assert missing.returncode == 2 and "--json-output" in missing.stderr


def test_markdown_opens_with_the_fixes_by_rule_and_area(tmp_path):
    on_device = "import torch\n\n\ndef ids(n: int, device: torch.device):\n    return torch.arange(n).to(device)\n"
    body = comment_for(tmp_path, {"pkg/a.py": FIXABLE, "pkg/b.py": FIXABLE, "pkg/c.py": on_device,
                                  "tests/test_a.py": FIXABLE, "benchmarks/bench_a.py": FIXABLE})
    head, rest = body.split("| | rule | location |", 1)
    summary = head[head.index("| rule |"):].strip().splitlines()
    assert summary == [
        "| rule | library | tests | benchmarks | total |",
        "|---|---:|---:|---:|---:|",
        "| `OPT101` zeros-to-empty | 2 | 0 + 1 proposed | 0 + 1 proposed | 2 + 2 proposed |",
        "| `OPT102` create-on-device | 1 | - | - | 1 |",
        "",
        "2 fix(es) left out by area (1 in benchmarks, 1 in tests): this run fixes library (fix-areas); include them "
        "with `--fix-areas library,tests,benchmarks`.",
    ]
    assert head.index("### optpatch:") < head.index("| rule |")


def _fixes_of_many_rules(count: int):
    from pathlib import Path

    from optpatch.model import Context, Decided, Decision, Finding, Fix, Impact, Tier, Verdict
    from optpatch.results import FileResult, RunResult

    findings = [
        Decided(Finding(code=f"OPT{900 + index}", name=f"rule-{index}", path="m.py", line=index + 1, col=1,
                        verdict=Verdict.FIX, reason="why", context=Context.CALL, impact=Impact.LOW, impact_basis="basis",
                        fix=Fix(tier=Tier.SAFE, edits=())), Decision(accepted=True))
        for index in range(count)
    ]
    return RunResult(Path("/repo"), [FileResult("m.py", findings)], [], [])


def test_a_summary_longer_than_a_screen_is_folded():
    from optpatch.reporters.markdown import SCREEN_ROWS, render_markdown

    short = render_markdown(_fixes_of_many_rules(3))
    assert "<details>" not in short.split("| | rule |")[0]
    long = render_markdown(_fixes_of_many_rules(SCREEN_ROWS + 1))
    folded = long.split("| | rule |")[0]
    assert f"<details>\n<summary>Fixes by rule and area ({SCREEN_ROWS + 1} rules)</summary>\n\n| rule | library |" in folded
    assert folded.count("| `OPT9") == SCREEN_ROWS + 1 and folded.rstrip().endswith("</details>")
