"""Many mutants of many files through the oracle, each reproducible from (seed, index)."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mutants.mutations import mutate
from mutants.oracle import check_file


@dataclass
class Failure:
    """A broken promise, with what it takes to rebuild the mutant."""

    seed: int
    index: int
    original: str
    mutations: tuple[str, ...]
    mutant: bytes
    problems: list[str]

    def describe(self) -> str:
        head = f"mutant {self.index} (seed {self.seed}) of {self.original} by {', '.join(self.mutations)}"
        return head + "\n  " + "\n  ".join(self.problems)


@dataclass
class Tally:
    mutants: int = 0
    outcomes: Counter = field(default_factory=Counter)
    mutations: Counter = field(default_factory=Counter)
    failures: list[Failure] = field(default_factory=list)


def run_campaign(
    originals: list[tuple[str, bytes]],
    count: int,
    seed: int,
    workdir: Path,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """Mutate randomly chosen originals `count` times and check optpatch on every mutant."""
    tally = Tally()
    for index in range(count):
        rng = random.Random(f"{seed}:{index}")
        rel, data = rng.choice(originals)
        mutant, names = mutate(data, rng)
        path = workdir / Path(rel).name
        path.write_bytes(mutant)
        outcome = check_file(path, rel)
        tally.mutants += 1
        tally.outcomes[outcome.kind] += 1
        tally.mutations.update(names)
        if outcome.problems:
            tally.failures.append(Failure(seed, index, rel, names, mutant, outcome.problems))
        if progress:
            progress(tally)
    return tally
