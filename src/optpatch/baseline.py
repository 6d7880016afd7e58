"""Baselines for legacy code: record today's findings once, then report and fix only new ones.

A finding is matched by rule code, path and a fingerprint of its line's text
(whitespace-insensitive), never by line number, so edits elsewhere in a file
do not resurrect recorded findings. Identical lines are counted: a baseline
that recorded two `x = torch.zeros(n)` lines in one file hides two, and a
third one added later is new.

File format (JSON, sorted, stable under re-recording):

    {"optpatch_baseline": 1,
     "findings": [{"code": "OPT101", "path": "pkg/model.py", "fingerprint": "3f2a...", "count": 1}]}
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from optpatch.model import Finding, Verdict

FORMAT_VERSION = 1

Key = tuple[str, str, str]  # (code, path, fingerprint)


def fingerprint(finding: Finding) -> str:
    """A hash of the finding's line text with all whitespace removed: stable under reindentation."""
    normalised = "".join(finding.line_text.split())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:16]


def key_of(finding: Finding) -> Key:
    return (finding.code, finding.path, fingerprint(finding))


def recordable(findings: Iterable[Finding]) -> list[Finding]:
    """What a baseline records: fixes and advice. Kept sites are not problems to hide."""
    return [f for f in findings if f.verdict is not Verdict.KEEP]


class BaselineError(Exception):
    """The baseline file cannot be used; the message says how to record one."""


@dataclass(frozen=True)
class Baseline:
    """A filter: the first `count` findings with a recorded key in each file are out of scope."""

    counts: tuple[tuple[Key, int], ...]

    def out_of_scope(self, findings: Sequence[Finding]) -> list[str | None]:
        remaining = Counter(dict(self.counts))
        why: list[str | None] = [None] * len(findings)
        for index in sorted(range(len(findings)), key=lambda i: findings[i].sort_key):
            if findings[index].verdict is Verdict.KEEP:
                continue
            key = key_of(findings[index])
            if remaining[key] > 0:
                remaining[key] -= 1
                why[index] = "recorded in the baseline (--baseline)"
        return why


def baseline_document(findings: Iterable[Finding]) -> str:
    counts = Counter(key_of(f) for f in recordable(findings))
    entries = [
        {"code": code, "path": path, "fingerprint": digest, "count": count}
        for (code, path, digest), count in sorted(counts.items())
    ]
    return json.dumps({"optpatch_baseline": FORMAT_VERSION, "findings": entries}, indent=2) + "\n"


def load_baseline(path: Path) -> Baseline:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline; record one with `optpatch check --write-baseline {path}`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BaselineError(f"{path}: not a readable optpatch baseline: {error}") from None
    if not isinstance(document, dict) or document.get("optpatch_baseline") != FORMAT_VERSION:
        raise BaselineError(f"{path}: not an optpatch baseline of format {FORMAT_VERSION}; record it again")
    try:
        counts = tuple(
            ((entry["code"], entry["path"], entry["fingerprint"]), int(entry["count"])) for entry in document["findings"]
        )
    except (KeyError, TypeError, ValueError) as error:
        raise BaselineError(f"{path}: malformed baseline entry ({error}); record it again") from None
    return Baseline(counts)
