"""Damage a source file the ways files really arrive damaged, reproducibly.

Each mutation takes the file's bytes and a seeded `random.Random` and returns
new bytes: a file cut off mid-write, a token or line lost in an edit, a line
pasted twice, stray or NUL bytes, line endings converted, the final newline
stripped. `mutate` chains a few of them; the same seed gives the same mutant.
"""

from __future__ import annotations

import random
import re
from typing import Callable

# Identifiers, numbers, string quotes, operators and brackets: what an editing slip removes or repeats.
_TOKEN = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|\d[\w.]*|\"|'|<<<|>>>|::|->|\*\*|//|[-+*/%=<>!&|^~]=?|[()\[\]{}:;,.@#\\]")


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _tokens(data: bytes) -> list[re.Match]:
    return list(_TOKEN.finditer(data))


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def delete_token(data: bytes, rng: random.Random) -> bytes:
    tokens = _tokens(data)
    if not tokens:
        return data
    token = rng.choice(tokens)
    return data[: token.start()] + data[token.end() :]


def duplicate_token(data: bytes, rng: random.Random) -> bytes:
    """A token copied to another token's place: mostly wrong, sometimes still valid code."""
    tokens = _tokens(data)
    if not tokens:
        return data
    token, place = rng.choice(tokens), rng.choice(tokens)
    return data[: place.start()] + token.group() + data[place.start() :]


def delete_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    start = rng.randrange(len(lines))
    del lines[start : start + rng.choice((1, 1, 2, 5))]
    return b"".join(lines)


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    if not lines:
        return data
    start = rng.randrange(len(lines))
    block = lines[start : start + rng.choice((1, 1, 3))]
    if not block[-1].endswith((b"\n", b"\r")):
        block[-1] += b"\n"
    return b"".join(lines[:start] + block + lines[start:])


def insert_bytes(data: bytes, rng: random.Random) -> bytes:
    """Random bytes, high ones included: mostly not UTF-8 any more."""
    place = rng.randrange(len(data) + 1)
    noise = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 4))))
    return data[:place] + noise + data[place:]


def insert_nul(data: bytes, rng: random.Random) -> bytes:
    place = rng.randrange(len(data) + 1)
    return data[:place] + b"\0" + data[place:]


def insert_invisible(data: bytes, rng: random.Random) -> bytes:
    """Characters editors and the web leave behind: BOM, form feed, NBSP, a lone CR, a tab."""
    place = rng.randrange(len(data) + 1)
    character = rng.choice((b"\xef\xbb\xbf", b"\x0c", b"\xc2\xa0", b"\r", b"\t", b"\x1a", b"\xe2\x80\xa8"))
    return data[:place] + character + data[place:]


def swap_line_endings(data: bytes, rng: random.Random) -> bytes:
    """LF -> CRLF, CRLF -> LF, or a mix of both in one file."""
    if b"\r\n" in data and rng.random() < 0.5:
        return data.replace(b"\r\n", b"\n")
    if rng.random() < 0.5:
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    lines = _lines(data)
    return b"".join(
        line[:-1].rstrip(b"\r") + b"\r\n" if line.endswith(b"\n") and rng.random() < 0.5 else line for line in lines
    )


def strip_final_newline(data: bytes, rng: random.Random) -> bytes:
    return data.rstrip(b"\r\n")


def reindent_line(data: bytes, rng: random.Random) -> bytes:
    """One line's indentation changed: tabs for spaces, or one space more or less."""
    lines = _lines(data)
    if not lines:
        return data
    index = rng.randrange(len(lines))
    line = lines[index]
    body = line.lstrip(b" \t")
    indent = line[: len(line) - len(body)]
    changed = [other for other in (indent.replace(b"    ", b"\t"), indent + b" ", indent[1:], b"") if other != indent]
    lines[index] = rng.choice(changed) + body
    return b"".join(lines)


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    function.__name__: function
    for function in (
        truncate, delete_token, duplicate_token, delete_lines, duplicate_lines, insert_bytes, insert_nul,
        insert_invisible, swap_line_endings, strip_final_newline, reindent_line,
    )
}


def mutate(data: bytes, rng: random.Random) -> tuple[bytes, tuple[str, ...]]:
    """One to three mutations in a row, and their names."""
    names = tuple(rng.choice(sorted(MUTATIONS)) for _ in range(rng.choice((1, 1, 1, 2, 3))))
    for name in names:
        data = MUTATIONS[name](data, rng)
    return data, names
