"""docs/rules/ is generated from the rule files: it must match them exactly."""

from conftest import REPO_ROOT, run_cli

from optpatch.rule_docs import rule_docs
from optpatch.rule import load_rules

DOCS = REPO_ROOT / "docs" / "rules"
REGENERATE = "docs/rules is stale: run `optpatch rules --write-docs docs/rules` (or `make docs`) and commit the result"


def test_committed_rule_docs_match_the_rules():
    expected = rule_docs(load_rules())
    committed = {path.name: path.read_text(encoding="utf-8") for path in DOCS.glob("*.md")}
    assert committed.keys() == expected.keys(), REGENERATE
    for name, text in expected.items():
        assert committed[name] == text, f"{name}: {REGENERATE}"


def test_write_docs_creates_every_page_and_removes_pages_of_rules_that_are_gone(tmp_path):
    (tmp_path / "OPT999.md").write_text("# a rule that no longer exists\n")
    (tmp_path / "notes.md").write_text("kept: not a rule page\n")
    result = run_cli("rules", "--write-docs", str(tmp_path))
    assert result.returncode == 0, result.stderr
    names = {path.name for path in tmp_path.glob("*.md")}
    assert names == set(rule_docs(load_rules())) | {"notes.md"}
    assert (tmp_path / "OPT101.md").read_text().startswith("# OPT101 zeros-to-empty\n")
