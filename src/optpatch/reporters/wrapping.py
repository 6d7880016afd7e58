"""Text wrapped at word boundaries to a width, for the text reports and the notes around them (no rich needed)."""

from __future__ import annotations

import re
import textwrap

KEEP = "\u00a0"  # joins words that must stay on one line; printed as a plain space
_SPACES = re.compile(r"[ \t\n\r\x0b\x0c]+")  # the ASCII whitespace textwrap breaks at; not KEEP


def wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """TEXT wrapped at spaces to WIDTH; a word longer than a line gets a line of its own, uncut.

    Words joined by `KEEP` (a no-break space) stay on one line, and are printed with a plain space.
    """
    lines = textwrap.wrap(
        _SPACES.sub(" ", text).strip(), width=width, initial_indent=first, subsequent_indent=rest,
        break_long_words=False, break_on_hyphens=False,
    ) or [first.rstrip()]
    return [line.replace(KEEP, " ") for line in lines]


def together(text: str) -> str:
    """TEXT as one unbreakable piece for `wrap`."""
    return text.replace(" ", KEEP)
