"""How often the patch found from the edits equals a whole-file difflib's, on generated edits of real files.

    python benchmarks/line_diff_agreement.py TREE... [--files 300] [--seed 0]

The patch writer aligns only the lines the edits touched (src/optpatch/line_diff.py) and follows
difflib's own order where it can; this measures where it cannot. For each Python or C++ file of
2-60 KB in the trees (a seeded sample of `--files`), and each density of edits (one edited line in
500, in 50, in 10), it makes one or two passes of edits shaped like fixes: a word changed in a line
(most fixes), a line inserted (a new statement, a blank line, a copy of a neighbouring line), a line
deleted, a few lines replaced by a reflowed call. It then compares the opcodes of
`line_diff.opcodes` with `difflib.SequenceMatcher(autojunk=False).get_opcodes()` on the whole
file, and prints, per density, how many rewrites agree, and for those that do not, how many lines
difflib's alignment moves (a large number: difflib matched a distant repeated passage).
Nothing here is a test.
"""

from __future__ import annotations

import argparse
import difflib
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from optpatch.line_diff import LineBreaks, opcodes  # noqa: E402
from optpatch.model import Edit  # noqa: E402
from optpatch.offsets import changed_lines  # noqa: E402
from optpatch.planner import apply_edits  # noqa: E402

LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
WORD = re.compile(r"[A-Za-z_]\w*")
DENSITIES = (0.002, 0.02, 0.1)


def fix_like_edits(rng: random.Random, text: str, density: float) -> list[Edit]:
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: list[Edit] = []
    for number in sorted(rng.sample(range(len(lines)), min(len(lines), max(1, int(len(lines) * density))))):
        start, line = starts[number], lines[number]
        kind = rng.random()
        if kind < 0.55:
            words = list(WORD.finditer(line))
            if not words:
                continue
            word = rng.choice(words)
            edit = Edit(start + word.start(), start + word.end(), word.group() + "_x")
        elif kind < 0.7:
            indent = re.match(r"\s*", line).group()
            inserted = rng.choice([indent + "y = f(x)\n", "\n", line, lines[number - 1] if number else "\n"])
            edit = Edit(start, start, inserted)
        elif kind < 0.8:
            edit = Edit(start, start + len(line), "")
        else:
            stretch = "".join(lines[number : number + rng.randint(1, 4)])
            edit = Edit(start, start + len(stretch), stretch.replace("(", "(\n    ", 1).replace(",", ", z,", 1))
        if edits and (edit.start <= edits[-1].end or edits[-1].start == edits[-1].end == edit.start):
            continue
        edits.append(edit)
    return edits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    files = sorted(
        path for tree in args.trees for path in tree.rglob("*")
        if path.suffix in (".py", ".cpp", ".cu", ".h") and path.is_file() and 2_000 < path.stat().st_size < 60_000
    )
    random.Random(args.seed).shuffle(files)
    counts = {density: [0, 0, []] for density in DENSITIES}  # rewrites, agreeing, lines moved where not
    for path in files[: args.files]:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for density in DENSITIES:
            rng = random.Random(f"{args.seed}:{path}:{density}")
            final, passes = text, []
            for _ in range(rng.choice([1, 1, 2])):
                edits = fix_like_edits(rng, final, density)
                if edits:
                    passes.append(edits)
                    final = apply_edits(final, edits)
            if final == text:
                continue
            old, new = LINE.findall(text), LINE.findall(final)
            found = [tuple(code) for code in opcodes(old, new, changed_lines(text, final, passes, LineBreaks.LF))]
            expected = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
            counts[density][0] += 1
            if found == expected:
                counts[density][1] += 1
            else:
                changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in expected if tag != "equal")
                ours = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in found if tag != "equal")
                counts[density][2].append(changed - ours)
    print("| edited lines | rewrites | same opcodes as difflib | differing: extra lines difflib marks changed |")
    print("|---|---:|---:|---|")
    for density, (total, same, moved) in counts.items():
        share = f"{same:,} ({100 * same / total:.1f}%)" if total else "-"
        print(f"| 1 in {round(1 / density):,} | {total:,} | {share} | {', '.join(str(m) for m in sorted(moved)) or '-'} |")


if __name__ == "__main__":
    main()
