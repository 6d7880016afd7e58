"""A local stand-in for the few GitHub REST endpoints the action calls, recording every request.

It listens on 127.0.0.1 (a free port), answers in GitHub's JSON shapes (the
fields PyGithub reads), and stops by itself after `lifetime_s` even if a test
never stops it. It checks what GitHub checks where a mistake would otherwise
go unseen:

- a token on every request (401 without);
- review comments only on lines the pull request's diff shows, a multi-line
  one within one hunk, found by walking the hunks' lines (422 otherwise, as
  GitHub's "Line could not be resolved"), and `commit_id` the head;
- a pull request only from a branch that exists in the git repository that
  stands for the remote (422 otherwise).

Outdated comments: a comment keeps its `line` while the lines it covers read
the same at the pull request's current head as at its commit; otherwise
`line` is null, as GitHub reports an outdated comment. (GitHub also moves a
comment whose lines moved; this stand-in does not.)
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

TOKEN = "test-token"
BOT = "github-actions[bot]"


@dataclass
class Request:
    method: str
    path: str
    query: dict
    body: object

    @property
    def writes(self) -> bool:
        return self.method != "GET"


@dataclass
class PullState:
    number: int
    head_sha: str
    head_ref: str
    base_ref: str
    title: str = ""
    body: str = ""
    state: str = "open"
    files: list[tuple[str, str]] = field(default_factory=list)  # (filename, patch)


class FakeGitHub:
    def __init__(self, repository: str = "owner/project", remote: Path | None = None, lifetime_s: float = 120):
        self.repository = repository
        self.remote = remote  # a git repository standing for the remote (branches for pull requests)
        self.requests: list[Request] = []
        self.pulls: dict[int, PullState] = {}
        self.reviews: list[dict] = []
        self.review_comments: list[dict] = []
        self.issue_comments: list[dict] = []
        self.file_texts: dict[str, dict[str, str]] = {}  # commit -> path -> text, for outdated comments
        self._ids = iter(range(1000, 10**6))
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._timer = threading.Timer(lifetime_s, self.stop)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeGitHub":
        self._thread.start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def writes(self) -> list[Request]:
        return [r for r in self.requests if r.writes]

    # -- JSON shapes ---------------------------------------------------------------------------------
    def _repo_url(self) -> str:
        return f"{self.url}/repos/{self.repository}"

    def _user(self, login: str = BOT) -> dict:
        return {"login": login, "id": 41898282, "type": "Bot"}

    def pull_json(self, pull: PullState) -> dict:
        owner = self.repository.split("/")[0]
        return {
            "number": pull.number, "id": pull.number, "state": pull.state, "title": pull.title, "body": pull.body,
            "url": f"{self._repo_url()}/pulls/{pull.number}",
            "issue_url": f"{self._repo_url()}/issues/{pull.number}",
            "head": {"sha": pull.head_sha, "ref": pull.head_ref, "label": f"{owner}:{pull.head_ref}"},
            "base": {"ref": pull.base_ref, "sha": "0" * 40, "label": f"{owner}:{pull.base_ref}"},
        }

    def comment_json(self, comment: dict) -> dict:
        pull = self.pulls[comment["pull"]]
        current = self._lines(pull.head_sha, comment)
        standing = current is not None and current == self._lines(comment["commit_id"], comment)
        return {
            **{k: v for k, v in comment.items() if k != "pull"},
            "line": comment["original_line"] if standing else None,
            "start_line": comment["original_start_line"] if standing else None,
            "url": f"{self._repo_url()}/pulls/comments/{comment['id']}",
            "pull_request_url": f"{self._repo_url()}/pulls/{comment['pull']}",
            "user": self._user(comment["login"]),
        }

    def _lines(self, commit: str, comment: dict) -> list[str] | None:
        text = self.file_texts.get(commit, {}).get(comment["path"])
        if text is None:
            return None
        first = comment["original_start_line"] or comment["original_line"]
        return text.split("\n")[first - 1 : comment["original_line"]]

    def review_json(self, review: dict) -> dict:
        return {
            **{k: v for k, v in review.items() if k != "pull"},
            "pull_request_url": f"{self._repo_url()}/pulls/{review['pull']}",
            "user": self._user(review["login"]),
        }

    # -- endpoints -----------------------------------------------------------------------------------
    def handle(self, method: str, path: str, query: dict, body) -> tuple[int, object]:
        prefix = f"/repos/{self.repository}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}
        route = path[len(prefix):]
        for pattern, verb, function in self._routes():
            match = re.fullmatch(pattern, route)
            if match and verb == method:
                return function(query, body, *[int(g) if g.isdigit() else g for g in match.groups()])
        return 404, {"message": f"Not Found: {method} {route}"}

    def _routes(self):
        return [
            (r"/pulls/(\d+)", "GET", lambda q, b, n: (200, self.pull_json(self.pulls[n]))),
            (r"/pulls/(\d+)", "PATCH", self._edit_pull),
            (r"/pulls/(\d+)/files", "GET", lambda q, b, n: (200, [{"filename": f, "patch": p, "status": "modified"} for f, p in self.pulls[n].files])),
            (r"/pulls/(\d+)/comments", "GET", lambda q, b, n: (200, [self.comment_json(c) for c in self.review_comments if c["pull"] == n])),
            (r"/pulls/(\d+)/reviews", "GET", lambda q, b, n: (200, [self.review_json(r) for r in self.reviews if r["pull"] == n])),
            (r"/pulls/(\d+)/reviews", "POST", self._create_review),
            (r"/pulls/(\d+)/reviews/(\d+)", "PUT", self._edit_review),
            (r"/pulls/comments/(\d+)", "PATCH", self._edit_comment),
            (r"/commits/([0-9a-f]{40})", "GET", lambda q, b, sha: (200, {"sha": sha, "url": f"{self._repo_url()}/commits/{sha}"})),
            (r"/pulls", "GET", self._list_pulls),
            (r"/pulls", "POST", self._create_pull),
            (r"/issues/(\d+)/comments", "POST", self._comment_on_issue),
        ]

    def _create_review(self, query, body, number):
        pull = self.pulls[number]
        if body.get("commit_id", pull.head_sha) != pull.head_sha:
            return 422, {"message": "commit_id is not the pull request's head"}
        if body.get("event") != "COMMENT" or not body.get("body"):
            return 422, {"message": "a COMMENT review needs a body"}
        hunks = {name: hunk_lines(patch) for name, patch in pull.files}
        review = {"id": next(self._ids), "pull": number, "login": BOT, "body": body["body"], "state": "COMMENTED",
                  "commit_id": pull.head_sha}
        comments = []
        for comment in body.get("comments", []):
            first = comment.get("start_line", comment["line"])
            if comment.get("side") != "RIGHT" or not any({first, comment["line"]} <= hunk for hunk in hunks.get(comment["path"], [])):
                return 422, {"message": "Unprocessable Entity", "errors": [f"Line could not be resolved: {comment['path']}:{first}-{comment['line']}"]}
            comments.append({
                "id": next(self._ids), "pull": number, "login": BOT, "path": comment["path"], "body": comment["body"],
                "original_line": comment["line"], "original_start_line": comment.get("start_line"),
                "commit_id": pull.head_sha, "pull_request_review_id": review["id"],
            })
        self.reviews.append(review)
        self.review_comments += comments
        return 200, self.review_json(review)

    def _edit_review(self, query, body, number, review_id):
        review = next(r for r in self.reviews if r["id"] == review_id and r["pull"] == number)
        review["body"] = body["body"]
        return 200, self.review_json(review)

    def _edit_comment(self, query, body, comment_id):
        comment = next(c for c in self.review_comments if c["id"] == comment_id)
        comment["body"] = body["body"]
        return 200, self.comment_json(comment)

    def _list_pulls(self, query, body):
        owner = self.repository.split("/")[0]
        found = [
            p for p in self.pulls.values()
            if query.get("state", ["open"])[0] in (p.state, "all")
            and ("head" not in query or query["head"][0] == f"{owner}:{p.head_ref}")
            and ("base" not in query or query["base"][0] == p.base_ref)
        ]
        return 200, [self.pull_json(p) for p in found]

    def _create_pull(self, query, body):
        head = body["head"]
        if self.remote is None or subprocess.run(["git", "rev-parse", "--verify", "-q", f"refs/heads/{head}"],
                                                 cwd=self.remote, capture_output=True).returncode != 0:
            return 422, {"message": f"Validation Failed: head {head} does not exist"}
        head_sha = subprocess.run(["git", "rev-parse", f"refs/heads/{head}"], cwd=self.remote, capture_output=True,
                                  text=True).stdout.strip()
        number = max(self.pulls, default=0) + 1
        self.pulls[number] = PullState(number, head_sha, head, body["base"], body.get("title", ""), body.get("body", ""))
        return 201, self.pull_json(self.pulls[number])

    def _edit_pull(self, query, body, number):
        pull = self.pulls[number]
        for key in ("title", "body", "state"):
            if key in body:
                setattr(pull, key, body[key])
        return 200, self.pull_json(pull)

    def _comment_on_issue(self, query, body, number):
        comment = {"id": next(self._ids), "issue": number, "body": body["body"], "user": self._user()}
        self.issue_comments.append(comment)
        return 201, {**comment, "url": f"{self._repo_url()}/issues/comments/{comment['id']}"}


def hunk_lines(patch: str) -> list[set[int]]:
    """Per hunk, the new-side line numbers it shows: walked line by line (context and added lines count)."""
    hunks: list[set[int]] = []
    line = 0
    for text in patch.split("\n"):
        header = re.match(r"@@ -\S+ \+(\d+)", text)
        if header:
            hunks.append(set())
            line = int(header.group(1))
        elif hunks and text[:1] in (" ", "+"):
            hunks[-1].add(line)
            line += 1
    return hunks


def _handler(fake: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self):
            parsed = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            with fake._lock:
                fake.requests.append(Request(self.command, parsed.path, parse_qs(parsed.query), body))
                if self.headers.get("Authorization") not in (f"token {TOKEN}", f"Bearer {TOKEN}"):
                    status, answer = 401, {"message": "Bad credentials"}
                else:
                    status, answer = fake.handle(self.command, parsed.path, parse_qs(parsed.query), body)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, *args):  # the test reads fake.requests, not stderr
            pass

    return Handler
