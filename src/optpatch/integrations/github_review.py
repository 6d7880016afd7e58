"""`mode: review`: one pull-request review whose comments carry a ```suggestion per fix, in two steps.

`prepare` runs in the `pull_request` job, on the pull request's code, with a
read-only token: it makes no request at all. It writes a bundle (the review's
comments, the JSON report, the patch) that the job uploads as an artifact.

`post` runs in a `workflow_run` job of the base repository, which may write
but never checks out the pull request's code. It treats the bundle as
untrusted data: it accepts the pull-request number only if that pull
request's head is still the analysed commit, and each comment only where
GitHub's diff of the pull request shows its lines. A comment whose lines lie
outside the diff (GitHub would refuse it) is listed in the review's body
instead, with its location; the patch in the artifact holds its fix.

Re-runs add no duplicates. A comment posted earlier that still stands (same
change, same lines) is left as it is; one whose change optpatch no longer
proposes is edited to say it is resolved, its suggestion removed. New
comments go into a new review, and earlier optpatch reviews' bodies then say
they are superseded; with nothing new, the latest review's body is updated.
A pull request with nothing to say and no earlier review gets no review.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from optpatch.integrations.pr_diff import DiffLines
from optpatch.integrations.suggestions import COMMENT_MARKER, comment_body, finding_line, review_items

BUNDLE_FORMAT = "optpatch-review/1"
BUNDLE_FILE = "review.json"
PATCH_FILE = "model_patch.diff"
REPORT_FILE = "report.json"
REVIEW_MARKER = "<!-- optpatch-review"
BODY_LIMIT = 65_536  # GitHub refuses longer comment and review bodies
_KEY = re.compile(r"^<!-- optpatch-suggestion key=([0-9a-f]{20})( resolved)? -->")
_SHA = re.compile(r"^[0-9a-f]{40}$")


class BundleError(Exception):
    """The artifact is not a review bundle this version can post; nothing was written."""


@dataclass(frozen=True)
class PlannedComment:
    path: str
    start_line: int
    line: int
    key: str
    body: str
    applied: bool

    def api_form(self) -> dict:
        comment = {"path": self.path, "line": self.line, "side": "RIGHT", "body": self.body}
        if self.start_line != self.line:
            comment.update(start_line=self.start_line, start_side="RIGHT")
        return comment


@dataclass(frozen=True)
class Bundle:
    pull_request: int
    head_sha: str
    comments: tuple[PlannedComment, ...]
    unsuggested: tuple[str, ...]  # one markdown line per fix that has no suggestion, with why
    counts: dict[str, int]


def prepare(report: dict, root: Path, pull_request: int, head_sha: str, patch: Path, out_dir: Path) -> Bundle:
    """Write the bundle for REPORT (optpatch's JSON report of the pull request's changed lines) into OUT_DIR.

    The bundle is review.json, the patch and the report: the artifact a user downloads holds all three.
    """
    items = review_items(report, root)
    comments, unsuggested = [], []
    for item in items:
        if item.suggestion is None:
            unsuggested += [f"- `{f['path']}:{f['line']}` " + finding_line(f, item.applied) + f" (no suggestion: {item.no_suggestion_because})"
                            for f in item.findings]
        else:
            comments.append(PlannedComment(item.path, item.suggestion.start_line, item.suggestion.end_line,
                                           item.key, comment_body(item), item.applied))
    summary = report["summary"]
    counts = {
        "fixes": summary["written"],
        "proposals": summary["refused"],
        "advice": summary["advice"],
        "files_failed": summary["files_failed"],
    }
    bundle = Bundle(pull_request, head_sha, tuple(comments), tuple(unsuggested), counts)
    out_dir.mkdir(parents=True, exist_ok=True)
    document = {
        "format": BUNDLE_FORMAT,
        "pull_request": pull_request,
        "head_sha": head_sha,
        "comments": [vars(comment) for comment in comments],
        "unsuggested": list(unsuggested),
        "counts": counts,
    }
    (out_dir / BUNDLE_FILE).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    shutil.copyfile(patch, out_dir / PATCH_FILE)
    (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return bundle


def load_bundle(directory: Path) -> Bundle:
    """The bundle in DIRECTORY, checked field by field: it comes from a run of the pull request's code."""
    path = directory / BUNDLE_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BundleError(f"{path}: not a readable review bundle ({error}); was the artifact uploaded by mode: review?") from None

    def field(container: dict, name: str, kind: type):
        value = container.get(name) if isinstance(container, dict) else None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BundleError(f"{path}: `{name}` is missing or not a {kind.__name__}")
        return value

    if not isinstance(document, dict) or document.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{path}: format is not {BUNDLE_FORMAT}; use the same optpatch ref in both workflows")
    head_sha = field(document, "head_sha", str)
    if not _SHA.match(head_sha):
        raise BundleError(f"{path}: head_sha is not a commit id")
    comments = []
    for entry in field(document, "comments", list):
        comment = PlannedComment(
            field(entry, "path", str), field(entry, "start_line", int), field(entry, "line", int),
            field(entry, "key", str), field(entry, "body", str), field(entry, "applied", bool),
        )
        if not 0 < comment.start_line <= comment.line or len(comment.body) > BODY_LIMIT or not comment.body.startswith(COMMENT_MARKER):
            raise BundleError(f"{path}: a comment on {comment.path} has impossible lines or body")
        comments.append(comment)
    unsuggested = tuple(str(line) for line in field(document, "unsuggested", list))
    counts = {name: int(value) for name, value in field(document, "counts", dict).items() if isinstance(value, int)}
    return Bundle(field(document, "pull_request", int), head_sha, tuple(comments), unsuggested, counts)


@dataclass(frozen=True)
class PostOutcome:
    posted: int  # new comments
    standing: int  # earlier comments left as they are, still current
    resolved: int  # earlier comments marked resolved
    outside_diff: int
    review: str  # "created", "updated", "unchanged" or "none"


def post(bundle: Bundle, repo, expected_head: str, bot_login: str, run_url: str) -> PostOutcome:
    """Post BUNDLE's review on its pull request of REPO (a PyGithub repository), if its head is EXPECTED_HEAD."""
    if bundle.head_sha != expected_head:
        raise BundleError(f"the bundle was made at {bundle.head_sha}, but the run that made it analysed {expected_head}")
    pull = repo.get_pull(bundle.pull_request)
    if pull.head.sha != expected_head:
        # The pull request moved on (the newer push's run will review it), or the artifact names another one.
        print(f"pull request #{bundle.pull_request} is no longer at the analysed commit {expected_head}: not reviewing")
        return PostOutcome(0, 0, 0, 0, "none")
    diff = DiffLines.from_pull_files([(f.filename, f.patch) for f in pull.get_files()])
    placed = [c for c in bundle.comments if diff.holds(c.path, c.start_line, c.line)]
    outside = [c for c in bundle.comments if c not in placed]
    wanted = {(c.key, c.path, c.start_line, c.line) for c in placed}

    earlier = [c for c in pull.get_review_comments() if c.user.login == bot_login and _KEY.match(c.body or "")]
    standing = set()
    resolved = 0
    resolved_before = 0
    for comment in earlier:
        key, was_resolved = _KEY.match(comment.body).groups()
        if was_resolved:
            resolved_before += 1
            continue
        position = (key, comment.path, comment.start_line or comment.line, comment.line)
        if comment.line is not None and position in wanted:
            standing.add(position)
        else:
            comment.edit(resolved_body(comment.body, key, expected_head))
            resolved += 1
    new = [c for c in placed if (c.key, c.path, c.start_line, c.line) not in standing]

    body = review_body(bundle, placed, outside, resolved_before + resolved, run_url)
    reviews = [r for r in pull.get_reviews() if r.user.login == bot_login and (r.body or "").startswith(REVIEW_MARKER)]
    current = [r for r in reviews if not r.body.startswith(f"{REVIEW_MARKER} superseded")]
    if new or (not reviews and (placed or outside or bundle.unsuggested)):
        commit = repo.get_commit(expected_head)
        pull.create_review(commit=commit, body=body, event="COMMENT", comments=[c.api_form() for c in new])
        for review in current:
            review.edit(f"{REVIEW_MARKER} superseded -->\nSuperseded by optpatch's review of `{expected_head[:7]}`.")
        outcome = "created"
    elif current and current[-1].body != body:
        current[-1].edit(body)
        outcome = "updated"
    else:
        outcome = "unchanged" if current else "none"
    return PostOutcome(len(new), len(standing), resolved, len(outside), outcome)


def resolved_body(body: str, key: str, head_sha: str) -> str:
    """The comment without its suggestion (no more "Commit suggestion" button), struck through and marked resolved."""
    headings = [line for line in body.splitlines()[1:] if line.startswith("**optpatch")]
    struck = "\n".join(f"~~{line}~~" for line in headings)
    return (
        f"{COMMENT_MARKER} key={key} resolved -->\n{struck}\n\n"
        f"Resolved at `{head_sha[:7]}`: optpatch no longer proposes this change here."
    )


def review_body(bundle: Bundle, placed: list[PlannedComment], outside: list[PlannedComment], resolved: int,
                run_url: str) -> str:
    """The state of the pull request, not what this run changed: an identical re-run gives the same body."""
    if placed or outside or bundle.unsuggested:
        title = (f"### optpatch: {bundle.counts.get('fixes', 0)} fix(es) and {bundle.counts.get('proposals', 0)} "
                 "proposal(s) on the lines this pull request changed")
    else:
        title = "### optpatch: nothing to change on the lines this pull request changed"
    lines = [f"{REVIEW_MARKER} -->", title, ""]
    lines.append(
        f"Analysed at `{bundle.head_sha[:7]}`. Each comment gives the rule, its tier and its proof; committing every "
        f"suggestion marked *fix* gives `{PATCH_FILE}`, which the run's artifact holds ({run_url})."
    )
    if resolved:
        lines += ["", f"{resolved} earlier comment(s) resolved: optpatch no longer proposes their change."]
    if outside:
        lines += ["", "**Outside this pull request's diff** (GitHub takes review comments only on lines its diff shows; "
                      "the patch holds these):", ""]
        lines += [f"- `{c.path}:{c.start_line}-{c.line}`: " + _headings(c.body) for c in outside]
    if bundle.unsuggested:
        lines += ["", "**No suggestion possible** (the patch holds these):", "", *bundle.unsuggested]
    counts = bundle.counts
    if counts.get("advice") or counts.get("files_failed"):
        lines += ["", f"Also: {counts.get('advice', 0)} advice, {counts.get('files_failed', 0)} file(s) not analysed "
                      "(the JSON report in the artifact lists them)."]
    body = "\n".join(lines) + "\n"
    return body if len(body) <= BODY_LIMIT else body[: BODY_LIMIT - 200] + f"\n\n(cut to GitHub's limit; see {run_url})\n"


def _headings(body: str) -> str:
    return "; ".join(line for line in body.splitlines()[1:] if line.startswith("**optpatch"))
