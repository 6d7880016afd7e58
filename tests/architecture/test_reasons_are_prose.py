"""No control flow and no report grouping depends on the wording of a message (docs/architecture.md).

Every finding's reason and proof goes through judgements.finding_of, which
turns a rule's verdict into a finding; every hold message through
`Refusal.message`. The test rewords all of them (reverses every word, and prefixes a marker) and runs
the command line on real fixture trees: the patch, the exit status, the
summary counts and every typed field must come out the same. Only the
prose may differ.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil

import pytest
from click.testing import CliRunner

from conftest import FIXTURES, REPO_ROOT
from optpatch import cli, model, passes

PROSE_FIELDS = ("reason", "proof", "refused_because", "replacement")


def reword(text: str) -> str:
    return "REWORDED " + " ".join(word[::-1] for word in text.split())


def reword_everything(monkeypatch) -> None:
    """Every reason, proof step and hold message, reworded where it is made."""
    original = passes.finding_of

    def rewording(rule, unit, judgement, *rest):
        verdict = judgement.verdict
        proof = {"proof": tuple(reword(step) for step in verdict.proof)} if hasattr(verdict, "proof") else {}
        judgement = dataclasses.replace(judgement, verdict=dataclasses.replace(verdict, reason=reword(verdict.reason), **proof))
        finding = original(rule, unit, judgement, *rest)
        # A fix kept for its line's length gets its reason in finding_of itself.
        return finding if finding.reason.startswith("REWORDED") else dataclasses.replace(finding, reason=reword(finding.reason))

    monkeypatch.setattr(passes, "finding_of", rewording)
    monkeypatch.setattr(model, "_HOLD_MESSAGES", {hold: reword(text) for hold, text in model._HOLD_MESSAGES.items()})


def _tree(tmp_path):
    """The example repository plus every rule's fixtures: fixes, proposals, keeps and advice of every rule."""
    root = tmp_path / "tree"
    shutil.copytree(REPO_ROOT / "examples" / "minivllm", root)
    shutil.copytree(FIXTURES / "python", root / "fixtures" / "python")
    shutil.copytree(FIXTURES / "cpp", root / "fixtures" / "cpp")
    return root


def _run(root, *args):
    runner = CliRunner()
    patch = root.parent / "out.diff"
    json_run = runner.invoke(cli.main, ["apply", str(root), "-o", str(patch), "--format", "json", "--no-cache", "--no-headers", "-j", "1", *args])
    text_run = runner.invoke(cli.main, ["apply", str(root), "-o", str(patch), "--no-cache", "--no-headers", "-j", "1", *args])
    check_run = runner.invoke(cli.main, ["check", str(root), "--format", "json", "--no-cache", "--no-headers", "-j", "1", *args])
    document = json.loads(json_run.output)
    lines = text_run.output.splitlines()
    summary = lines[next(i for i, line in enumerate(lines) if line.startswith("Summary:")):]  # the counts by status, rule, tier, area, category
    return {
        "patch": patch.read_bytes(),
        "exit": (json_run.exit_code, text_run.exit_code, check_run.exit_code),
        "summary": json.dumps({k: v for k, v in document["summary"].items() if k != "seconds"}),
        "text summary": re.sub(r"in \d+\.\d+ s", "in N s", " ".join(summary)),
        "findings": [{k: v for k, v in f.items() if k not in PROSE_FIELDS} for f in document["findings"]],
        "prose": [f["reason"] for f in document["findings"]],
    }


def _differences(tmp_path, monkeypatch, args) -> list[str]:
    root = _tree(tmp_path)
    before = _run(root, *args)
    with monkeypatch.context() as patched:
        reword_everything(patched)
        after = _run(root, *args)
    assert before["findings"], "the tree should hold findings"
    assert all(reason.startswith("REWORDED") for reason in after["prose"]), "some reason escaped the rewording"
    return [key for key in ("patch", "exit", "summary", "text summary", "findings") if before[key] != after[key]]


@pytest.mark.parametrize("args", [(), ("--unsafe-fixes",)], ids=["default", "unsafe-fixes"])
def test_rewording_every_message_changes_nothing_but_the_prose(tmp_path, monkeypatch, args):
    assert _differences(tmp_path, monkeypatch, args) == []


def test_a_report_that_reads_its_reasons_is_caught(tmp_path, monkeypatch):
    """The check above can fail: group kept sites by a word of their reason, as the text summary once did."""
    from optpatch.reporters import text

    monkeypatch.setattr(text, "_keep_label", lambda finding: finding.reason.split()[0])
    assert "text summary" in _differences(tmp_path, monkeypatch, ())
