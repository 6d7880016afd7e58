"""--format sarif: valid SARIF 2.1.0 whose fixes[] reproduce the patch."""

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO_ROOT, run_cli
from git_repos import FIXABLE, write_files

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
EXAMPLE = REPO_ROOT / "examples" / "minivllm"
# CRLF endings, and characters of 2 and 4 UTF-8 bytes (2 UTF-16 units) before the edit on its
# line: columns must count code points, as the run's columnKind says.
CRLF_UNICODE = (
    'import torch\r\n\r\n\r\ndef step(x):\r\n    tag = "\U0001F642"; ñame = torch.zeros(x.shape)\r\n'
    "    ñame.copy_(x)\r\n    return ñame, tag\r\n"
)


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(EXAMPLE, root)
    write_files(root, {"unicode_crlf.py": CRLF_UNICODE, "plain.py": FIXABLE, "broken.py": "def f(:\n    x = torch.zeros(3)\n"})
    return root


def sarif_of(*args: str) -> dict:
    result = run_cli(*args, "--format", "sarif")
    assert result.returncode in (0, 3), result.stderr
    return json.loads(result.stdout)


def apply_replacements(text: str, replacements: list[dict]) -> str:
    """Apply SARIF replacements the way a SARIF consumer would: lines and columns to offsets."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]

    def offset(line: int, column: int) -> int:
        return starts[line - 1] + column - 1

    edits = set()
    for replacement in replacements:
        region = replacement["deletedRegion"]
        start = offset(region["startLine"], region["startColumn"])
        end = offset(region["endLine"], region["endColumn"])
        edits.add((start, end, replacement["insertedContent"]["text"]))
    for start, end, inserted in sorted(edits, reverse=True):
        text = text[:start] + inserted + text[end:]
    return text


def test_sarif_validates_against_the_official_schema(tree, tmp_path):
    document = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"))
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    assert document["version"] == "2.1.0"


def test_every_fix_carries_replacements_that_reproduce_the_written_files(tree, tmp_path):
    original = {p.relative_to(tree).as_posix(): p.read_bytes().decode() for p in tree.rglob("*") if p.suffix in (".py", ".cu")}
    document = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"))
    results = document["runs"][0]["results"]
    fixes = [r for r in results if r["properties"]["verdict"] == "fix"]
    assert fixes and all(r["fixes"] for r in fixes)
    applied_by_file: dict[str, list[dict]] = {}
    for result in fixes:
        if result["properties"]["written"]:
            for change in result["fixes"][0]["artifactChanges"]:
                applied_by_file.setdefault(change["artifactLocation"]["uri"], []).extend(change["replacements"])
    assert {"unicode_crlf.py", "plain.py", "minivllm/sampler.py"} <= set(applied_by_file)

    assert run_cli("apply", str(tree), "--write", "-o", str(tmp_path / "p2.diff")).returncode == 3  # broken.py
    for uri, replacements in applied_by_file.items():
        written = (tree / uri).read_bytes().decode()
        assert apply_replacements(original[uri], replacements) == written, uri
        assert written != original[uri]


def test_results_carry_rule_location_and_optpatch_fields(tree, tmp_path):
    run = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"))["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    opt101 = next(rule for rule in rules if rule["id"] == "OPT101")
    assert "## Fix safety" in opt101["help"]["markdown"] and opt101["shortDescription"]["text"]
    result = next(r for r in run["results"] if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "unicode_crlf.py")
    assert result["ruleId"] == "OPT101" and rules[result["ruleIndex"]]["id"] == "OPT101"
    assert result["level"] == "warning"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    properties = result["properties"]
    assert properties["tier"] == "safe" and properties["verdict"] == "fix"
    assert properties["context"] and properties["impact"] and properties["impact_basis"] and properties["proof"]
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_and_json_carry_the_same_findings(tree, tmp_path):
    """Kept sites too, with -v: as results of kind `pass`, which dashboards do not raise as alerts."""
    run = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"), "-v")["runs"][0]
    document = json.loads(run_cli("apply", str(tree), "-o", str(tmp_path / "q.diff"), "--format", "json").stdout)
    sarif = sorted(
        (r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
        for r in run["results"]
    )
    assert sarif == sorted((f["path"], f["line"], f["code"]) for f in document["findings"])
    kept = [r for r in run["results"] if r["properties"]["verdict"] == "keep"]
    assert kept and all(r["kind"] == "pass" and r["level"] == "none" and "fixes" not in r for r in kept)
    assert all("kind" not in r for r in run["results"] if r["properties"]["verdict"] != "keep")


def test_files_that_failed_are_error_notifications(tree, tmp_path):
    run = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"))["runs"][0]
    notifications = run["invocations"][0]["toolExecutionNotifications"]
    broken = [n for n in notifications if n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"]
    assert broken and broken[0]["level"] == "error" and "syntax error" in broken[0]["message"]["text"]


def test_kept_sites_are_left_out_without_verbose(tree, tmp_path):
    run = sarif_of("apply", str(tree), "-o", str(tmp_path / "p.diff"))["runs"][0]
    verdicts = {r["properties"]["verdict"] for r in run["results"]}
    assert "keep" not in verdicts and "fix" in verdicts
    assert run["properties"]["summary"]["kept"] > 0  # still counted
