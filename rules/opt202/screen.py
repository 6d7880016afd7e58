"""Whether a file can hold a site at all: `from_blob(...)` followed by `.to`/`.cuda`, judged from tokens alone.

Runs before the file's tree is walked, and says False only where neither
path of `check` (the tree's calls, or the calls that did not parse) could
report anything.
"""

from __future__ import annotations

import re
from typing import Iterator

from optpatch.rule.cpp import LINE_BREAK, CppUnit, matching_bracket

_MENTION = re.compile(r"\bfrom_blob\b")
_MOVE = re.compile(r"(?:\.|->)\s*(?:to|cuda)\b")
_ARROWS, _MOVES = (".", "->"), ("to", "cuda")  # the tokens of `_MOVE`
_WINDOW = 4000  # characters lexed after a mention, at most, to find the end of its call
_FIRST_WINDOW = 250  # then 1,000 and 4,000: most calls close within the first (each token costs two clang calls)


def may_chain_a_copy(unit: CppUnit) -> bool:
    """False only when no `from_blob(...)` in the file can be followed by `.to`/`.cuda`: the one shape both
    `check` paths report (`chained_copy` in the tree, `_unparsed` in the tokens).

    Most files that mention `from_blob` never chain it (DeepSpeed 3 of 4, among them a 90 KB binding file
    whose tree and tokens cost 0.5 s). Judged from clang's tokens just after each mention, lexed on their
    own; anything unclear says True: a macro that mentions `from_blob` or a move (`#define TO(x) x.to(d)`
    then `TO(torch::from_blob(...))` chains out of sight), a mention on a directive line, a call that does
    not close within the window. A mention after `//` on its line, with no quote or `*/` before it, is in
    a comment (a line comment, or a block comment or raw string the line starts in) and is passed over;
    any other mention in a comment or a string is lexed as if it were code: at worst the file gets the
    full check. tests/cpp/test_opt202_screen.py holds the screened and the full
    check to the same findings.
    """
    text = unit.source.text
    if any(_MENTION.search(body) or _MOVE.search(body) for body in _macro_definitions(text)):
        return True
    for mention in _MENTION.finditer(text):
        line_start = text.rfind("\n", 0, mention.start()) + 1
        before = text[line_start : mention.start()]
        if before.lstrip().startswith("#"):
            return True
        if "//" in before and not any(mark in before for mark in ('"', "'", "*/")):
            continue  # after `//` with no quote or comment end before it: in a comment, whatever opened it
        window = _FIRST_WINDOW
        while True:
            end = min(len(text), mention.end() + window)
            tokens = unit.tokens_in(mention.start(), end)
            if not tokens or tokens[0].start != mention.start() or tokens[0].spelling != "from_blob":
                return True
            if len(tokens) < 2 or tokens[1].spelling != "(":
                break  # named, not called: `using torch::from_blob;`
            close = matching_bracket(tokens, 1)
            # clang hands out whole tokens that start in the window: a call that closes with two tokens after it
            # is judged at once; otherwise a wider window, and the widest judges as the screen always did.
            judged = close is not None and close + 2 < len(tokens)
            if not judged and window < _WINDOW and end < len(text):
                window *= 4
                continue
            if not judged or (tokens[close + 1].spelling in _ARROWS and tokens[close + 2].spelling in _MOVES):
                return True
            break
    return False


def _macro_definitions(text: str) -> Iterator[str]:
    """The text of each `#define`, its continuation lines included."""
    lines = LINE_BREAK.split(text)
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.lstrip().startswith("#") and line.lstrip()[1:].lstrip().startswith("define"):
            body = [line]
            while body[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                body.append(lines[index])
            yield "\n".join(body)
        index += 1
