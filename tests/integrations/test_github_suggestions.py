"""Review suggestions from JSON findings, the diff lines GitHub accepts comments on, and the bundle's checks."""

import json

import pytest

from optpatch.integrations.github_review import BundleError, load_bundle
from optpatch.integrations.pr_diff import DiffLines, hunk_ranges
from optpatch.integrations.suggestions import review_items, span


def fix(line: int, regions: list[tuple[int, int, int, int, str]], applied: bool = True, path: str = "m.py") -> dict:
    return {
        "code": "OPT101", "name": "zeros-to-empty", "path": path, "line": line, "column": 1, "verdict": "fix",
        "tier": "safe" if applied else "validate", "written": applied,
        "refused_because": None if applied else "validate tier: needs a passing --validate run",
        "reason": "proof", "context": "hot", "impact": "low", "replacement": None,
        "regions": [dict(zip(("start_line", "start_column", "end_line", "end_column", "text"), r)) for r in regions],
    }


def items(tmp_path, text: str | bytes, *findings: dict):
    target = tmp_path / "m.py"
    target.write_bytes(text if isinstance(text, bytes) else text.encode())
    return review_items({"findings": list(findings)}, tmp_path)


def test_a_region_ending_at_column_one_keeps_that_line():
    assert span([fix(3, [(3, 1, 4, 1, "")])]) == (3, 3)  # deletes line 3 with its line break
    assert span([fix(3, [(3, 1, 3, 1, "x = 1\n")])]) == (3, 3)  # an insertion before line 3


def test_deleting_a_whole_line_is_an_empty_suggestion(tmp_path):
    (item,) = items(tmp_path, "a\nb\nc\n", fix(2, [(2, 1, 3, 1, "")]))
    assert (item.suggestion.start_line, item.suggestion.end_line, item.suggestion.text) == (2, 2, "")


def test_a_last_line_without_line_break(tmp_path):
    (item,) = items(tmp_path, "a\nzeros(1)", fix(2, [(2, 1, 2, 6, "empty")]))
    assert item.suggestion.text == "empty(1)"


def test_overlapping_fixes_share_a_suggestion_and_a_proposal_over_them_gets_none(tmp_path):
    text = "from torch import zeros\nx = zeros(1)\ny = zeros(2)\n"
    first = fix(2, [(1, 24, 1, 24, ", empty"), (2, 5, 2, 10, "empty")])
    second = fix(3, [(1, 24, 1, 24, ", empty"), (3, 5, 3, 10, "empty")])  # the same import edit
    proposal = fix(3, [(3, 1, 3, 1, "# ")], applied=False)
    shared, blocked = items(tmp_path, text, first, second, proposal)
    assert shared.suggestion.text == "from torch import zeros, empty\nx = empty(1)\ny = empty(2)"
    assert blocked.suggestion is None and blocked.no_suggestion_because == "its lines overlap a fix that applies"


def test_a_proposal_alone_gets_its_suggestion(tmp_path):
    (item,) = items(tmp_path, "a\nzeros(1)\n", fix(2, [(2, 1, 2, 6, "empty")], applied=False))
    assert not item.applied and item.suggestion.text == "empty(1)"


@pytest.mark.parametrize("text, because", [
    ("a\r\nzeros(1)\r\n", "the file has CR line endings; a suggestion is LF text"),
    (b"a\n\xff zeros(1)\n", "the file cannot be read as UTF-8 (UnicodeDecodeError)"),
])
def test_files_a_suggestion_cannot_reproduce(tmp_path, text, because):
    (item,) = items(tmp_path, text, fix(2, [(2, 1, 2, 6, "empty")]))
    assert item.suggestion is None and item.no_suggestion_because == because


def test_joining_the_last_line_with_the_next_is_no_suggestion(tmp_path):
    (item,) = items(tmp_path, "a\nb\nc\n", fix(2, [(2, 2, 3, 1, "")]))
    assert item.suggestion is None and "joins its last line" in item.no_suggestion_because


def test_a_byte_order_mark_is_no_column(tmp_path):
    (item,) = items(tmp_path, "\ufeffzeros(1)\n", fix(1, [(1, 1, 1, 6, "empty")]))
    assert item.suggestion.text == "empty(1)"


def test_the_key_names_the_change_not_its_position(tmp_path):
    (here,) = items(tmp_path, "a\nzeros(1)\n", fix(2, [(2, 1, 2, 6, "empty")]))
    (moved,) = items(tmp_path, "a\n\nzeros(1)\n", fix(3, [(3, 1, 3, 6, "empty")]))
    (other,) = items(tmp_path, "a\nzeros(2)\n", fix(2, [(2, 1, 2, 6, "empty")]))
    assert here.key == moved.key != other.key


def test_hunks_give_the_new_side_lines():
    patch = "@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n@@ -20 +21,0 @@\n-gone\n@@ -30,2 +31,2 @@\n x\n-y\n+z\n"
    assert hunk_ranges(patch) == (range(1, 5), range(31, 33))
    diff = DiffLines.from_pull_files([("m.py", patch), ("binary.bin", None)])
    assert diff.holds("m.py", 2, 4) and diff.holds("m.py", 32, 32)
    assert not diff.holds("m.py", 4, 31) and not diff.holds("m.py", 5, 5) and not diff.holds("binary.bin", 1, 1)


def bundle_dir(tmp_path, **changes) -> object:
    document = {"format": "optpatch-review/1", "pull_request": 7, "head_sha": "a" * 40, "unsuggested": [],
                "counts": {"fixes": 1}, "comments": [{"path": "m.py", "start_line": 2, "line": 2, "key": "k" * 20,
                                                      "body": "<!-- optpatch-suggestion key=x -->", "applied": True}]}
    document.update(changes)
    (tmp_path / "review.json").write_text(json.dumps(document))
    return tmp_path


@pytest.mark.parametrize("changes, message", [
    ({"format": "optpatch-review/0"}, "format is not optpatch-review/1"),
    ({"pull_request": "7; rm -rf /"}, "`pull_request` is missing or not a int"),
    ({"pull_request": True}, "`pull_request` is missing or not a int"),
    ({"head_sha": "HEAD"}, "head_sha is not a commit id"),
    ({"comments": [{"path": "m.py", "start_line": 3, "line": 2, "key": "k", "body": "<!-- optpatch-suggestion", "applied": True}]},
     "impossible lines or body"),
    ({"comments": [{"path": "m.py", "start_line": 1, "line": 1, "key": "k", "body": "text", "applied": True}]},
     "impossible lines or body"),
])
def test_a_bundle_that_is_not_what_prepare_writes_is_refused(tmp_path, changes, message):
    with pytest.raises(BundleError, match=message.replace("(", r"\(").replace("`", "`")):
        load_bundle(bundle_dir(tmp_path, **changes))
    assert load_bundle(bundle_dir(tmp_path)).pull_request == 7
