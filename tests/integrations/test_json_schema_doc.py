"""docs/json-schema.md documents exactly the keys `--format json` emits."""

import json
import re

from conftest import REPO_ROOT, run_cli
from git_repos import FIXABLE, write_files

DOC = (REPO_ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")


def documented_keys(heading: str) -> set[str]:
    """The first-column keys of the table under `## heading`."""
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


def test_documented_keys_are_the_emitted_keys(tmp_path):
    write_files(tmp_path, {"a.py": FIXABLE, "broken.py": "def f(:\n    x = torch.zeros(3)\n", "g_pb2.py": "",
                           "quiet.py": "x = 1  # optpatch: ignore\n"})
    result = run_cli("apply", str(tmp_path), "-o", str(tmp_path / "p.diff"), "--format", "json")
    document = json.loads(result.stdout)
    assert documented_keys("Top level") == set(document)
    assert documented_keys("`summary`") == set(document["summary"])
    assert documented_keys("`findings[]`") == set(document["findings"][0])
    assert documented_keys("`findings[].edits[]`") == set(document["findings"][0]["edits"][0])
    assert documented_keys("`findings[].regions[]`") == set(document["findings"][0]["regions"][0])
    assert document["findings"][0]["regions"] == [
        {"start_line": 5, "start_column": 17, "end_line": 5, "end_column": 22, "text": "empty"}
    ]
    assert documented_keys("`errors[]`") == set(document["errors"][0])
    assert documented_keys("`skipped[]`") == set(document["skipped"][0])
    assert documented_keys("`unused_suppressions[]`") == set(document["unused_suppressions"][0])
    assert f"currently **{document['schema_version']}**" in DOC
