"""--write-baseline / --baseline: legacy findings are recorded once; later runs report and fix only new ones."""

import json

from conftest import run_cli
from git_repos import FIXABLE, FIXED, write_files

SECOND_SITE = "\n\ndef other(y):\n    buf = torch.zeros(y.shape)\n    buf.copy_(y)\n    return buf\n"


def findings(result) -> list[tuple[str, int]]:
    assert result.returncode in (0, 1), result.stderr
    return [(f["path"], f["line"]) for f in json.loads(result.stdout)["findings"]]


def record(root, baseline) -> None:
    result = run_cli("check", str(root), "--write-baseline", str(baseline))
    assert result.returncode == 0, result.stderr
    assert "Recorded" in result.stdout


def test_recorded_findings_are_hidden_and_new_ones_reported(tmp_path):
    root, baseline = tmp_path / "repo", tmp_path / "baseline.json"
    write_files(root, {"legacy.py": FIXABLE})
    record(root, baseline)
    assert run_cli("check", str(root), "--baseline", str(baseline)).returncode == 0

    write_files(root, {"legacy.py": FIXABLE + SECOND_SITE, "new.py": FIXABLE})
    result = run_cli("check", str(root), "--baseline", str(baseline), "--format", "json")
    assert result.returncode == 1
    assert findings(result) == [("legacy.py", 11), ("new.py", 5)]


def test_matching_survives_moved_and_reindented_lines(tmp_path):
    root, baseline = tmp_path / "repo", tmp_path / "baseline.json"
    write_files(root, {"legacy.py": FIXABLE})
    record(root, baseline)
    respaced = FIXABLE.replace("    out = torch.zeros(x.shape)", "    out  =  torch.zeros( x.shape )")
    moved = "# a header comment\n# pushes every line down\n" + respaced
    write_files(root, {"legacy.py": moved})
    result = run_cli("check", str(root), "--baseline", str(baseline), "--format", "json")
    assert findings(result) == [] and result.returncode == 0


def test_identical_lines_are_counted(tmp_path):
    root, baseline = tmp_path / "repo", tmp_path / "baseline.json"
    write_files(root, {"legacy.py": FIXABLE})
    record(root, baseline)
    twice = FIXABLE + "\n\ndef step2(x):\n    out = torch.zeros(x.shape)\n    out.copy_(x)\n    return out\n"
    write_files(root, {"legacy.py": twice})
    assert findings(run_cli("check", str(root), "--baseline", str(baseline), "--format", "json")) == [("legacy.py", 11)]


def test_baselined_findings_are_not_fixed(tmp_path):
    root, baseline = tmp_path / "repo", tmp_path / "baseline.json"
    write_files(root, {"legacy.py": FIXABLE})
    record(root, baseline)
    write_files(root, {"new.py": FIXABLE})
    patch = tmp_path / "p.diff"
    result = run_cli("apply", str(root), "--baseline", str(baseline), "--write", "-o", str(patch))
    assert result.returncode == 0, result.stderr
    assert (root / "new.py").read_text() == FIXED
    assert (root / "legacy.py").read_text() == FIXABLE
    assert "1 finding(s) recorded in the baseline" in result.stdout


def test_baseline_file_is_stable_and_names_no_line_numbers(tmp_path):
    root = tmp_path / "repo"
    write_files(root, {"b.py": FIXABLE, "a.py": FIXABLE})
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    record(root, first)
    record(root, second)
    assert first.read_bytes() == second.read_bytes()
    document = json.loads(first.read_text())
    assert document["optpatch_baseline"] == 1
    assert [(e["code"], e["path"], e["count"]) for e in document["findings"]] == [("OPT101", "a.py", 1), ("OPT101", "b.py", 1)]
    assert all(set(e) == {"code", "path", "fingerprint", "count"} for e in document["findings"])


def test_missing_or_malformed_baseline_is_a_usage_error(tmp_path):
    write_files(tmp_path, {"a.py": FIXABLE})
    missing = run_cli("check", str(tmp_path), "--baseline", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "--write-baseline" in missing.stderr
    (tmp_path / "bad.json").write_text("{}")
    malformed = run_cli("check", str(tmp_path), "--baseline", str(tmp_path / "bad.json"))
    assert malformed.returncode == 2 and "not an optpatch baseline" in malformed.stderr
