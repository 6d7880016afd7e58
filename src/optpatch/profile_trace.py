"""`--profile TRACE`: what a profile measured, by file and line of the project (docs/profiling.md).

Two formats, told apart by their content:

- a `torch.profiler` Chrome trace recorded with `with_stack=True`
  (`prof.export_chrome_trace(path)`): its `python_function` events name each
  Python frame as `path(first line): name`, where the first line is the
  function's (its first decorator's, or its `def`'s). Each op (a `cpu_op` or
  `cuda_runtime` event: `aten::zeros`, `aten::fill_`, `aten::to`,
  `aten::copy_`, `cudaMemcpyAsync`, `cudaStreamSynchronize`, ...) is given
  to the innermost frame on its thread whose file is one of the project's;
  an op inside another op of the same thread is counted with its outer op
  only. A function's count for an op is the number of its frames that ran
  it, and its steps the number of `ProfilerStep#N` spans they fell in (the
  number of frames, where the trace has no steps).
- a py-spy profile (`py-spy record --format speedscope`): its samples, by
  the line of the innermost frame in the project, as time; py-spy samples,
  so it gives no call counts and no ops.

Files are matched by the longest tail of their path that is a file of the
project, so a trace recorded in another checkout (a GPU machine) maps too.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from optpatch.frequency import FileMeasurements

_FRAME = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\): (?P<name>.*)$")
_OP_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver", "operator", "runtime")
_STEP = re.compile(r"^ProfilerStep#\d+$")


class ProfileError(Exception):
    """The file is neither a Chrome trace nor a speedscope profile optpatch can read."""


@dataclass
class Profile:
    """Measured ops by (project file, first line of the function or sampled line)."""

    name: str
    sampled: bool
    total_us: float = 0.0
    # rel -> key line -> op -> [frames or samples, microseconds, steps]
    sites: dict[str, dict[int, dict[str, tuple[int, float, int]]]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path, project_files: list[str]) -> "Profile":
        try:
            document = json.loads(path.read_bytes())
        except (OSError, ValueError) as error:
            raise ProfileError(f"{path}: cannot read a profile: {error}") from None
        files = _FileMatcher(project_files)
        if isinstance(document, dict) and "shared" in document and "profiles" in document:
            return _read_speedscope(path.name, document, files)
        events = document.get("traceEvents") if isinstance(document, dict) else document
        if not isinstance(events, list):
            raise ProfileError(f"{path}: neither a Chrome trace (traceEvents) nor a speedscope profile")
        return _read_chrome_trace(path.name, events, files)

    def for_file(self, rel: str, ops: dict[str, tuple[str, ...]]) -> FileMeasurements | None:
        sites = self.sites.get(rel)
        if not sites:
            return None
        return FileMeasurements(sites, ops, self.total_us, self.name, self.sampled)


class _FileMatcher:
    """A path as the profile wrote it -> the project file it names (the longest matching tail), or None."""

    def __init__(self, project_files: list[str]):
        self.files = set(project_files)
        self.cache: dict[str, str | None] = {}

    def __call__(self, written: str) -> str | None:
        if written not in self.cache:
            parts = written.replace("\\", "/").split("/")
            self.cache[written] = next(
                (rel for rel in ("/".join(parts[start:]) for start in range(len(parts))) if rel in self.files), None)
        return self.cache[written]


def _read_chrome_trace(name: str, events: list, files: _FileMatcher) -> Profile:
    threads: dict[tuple, list[tuple]] = defaultdict(list)
    steps: list[tuple[float, float]] = []
    first = last = None
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        try:
            start, duration = float(event["ts"]), float(event.get("dur", 0))
        except (KeyError, TypeError, ValueError):
            continue
        category, label = event.get("cat"), str(event.get("name", ""))
        first = start if first is None else min(first, start)
        last = start + duration if last is None else max(last, start + duration)
        if category == "user_annotation" and _STEP.match(label):
            steps.append((start, start + duration))
        elif category == "python_function":
            frame = _FRAME.match(label)
            rel = files(frame["file"]) if frame else None
            threads[event.get("pid"), event.get("tid")].append((start, 0, start + duration, rel, int(frame["line"]) if frame else 0))
        elif category in _OP_CATEGORIES:
            threads[event.get("pid"), event.get("tid")].append((start, 1, start + duration, label, 0))
    profile = Profile(name, sampled=False, total_us=(last - first) if first is not None else 0.0)
    counts: dict[tuple[str, int, str], list] = {}
    steps.sort()
    for items in threads.values():
        _attribute(sorted(items, key=lambda item: (item[0], item[1], -item[2])), steps, counts)
    for (rel, line, op), (frames, microseconds, spans) in counts.items():
        profile.sites.setdefault(rel, {}).setdefault(line, {})[op] = (len(frames), microseconds, len(spans) or len(frames))
    return profile


def _attribute(items: list[tuple], steps: list[tuple[float, float]], counts: dict) -> None:
    """One thread's frames and ops in time order: each outermost op to the innermost project frame around it."""
    frames: list[tuple[float, str | None, int, int]] = []  # open frames: (end, rel, first line, frame number)
    op_end = float("-inf")
    for number, (start, kind, end, what, line) in enumerate(items):
        while frames and frames[-1][0] < start:
            frames.pop()
        if kind == 0:
            frames.append((end, what, line, number))
            continue
        if start < op_end:
            continue  # inside an op already counted
        op_end = end
        frame = next((f for f in reversed(frames) if f[1] is not None), None)
        if frame is None:
            continue
        entry = counts.setdefault((frame[1], frame[2], what), [set(), 0.0, set()])
        entry[0].add(frame[3])
        entry[1] += end - start
        step = _step_of(start, steps)
        if step is not None:
            entry[2].add(step)


def _step_of(moment: float, steps: list[tuple[float, float]]) -> int | None:
    for index, (start, end) in enumerate(steps):  # a trace has a handful of steps
        if start <= moment <= end:
            return index
    return None


def _read_speedscope(name: str, document: dict, files: _FileMatcher) -> Profile:
    try:
        frames = document["shared"]["frames"]
        profiles = document["profiles"]
    except (KeyError, TypeError):
        raise ProfileError(f"{name}: a speedscope profile without shared frames or profiles") from None
    located = [(files(str(frame.get("file", ""))), frame.get("line")) for frame in frames]
    profile = Profile(name, sampled=True)
    counts: dict[tuple[str, int], list] = {}
    for sampled in profiles:
        unit = {"seconds": 1e6, "milliseconds": 1e3, "microseconds": 1.0, "nanoseconds": 1e-3}.get(sampled.get("unit"), 1.0)
        for stack, weight in zip(sampled.get("samples", ()), sampled.get("weights", ())):
            microseconds = float(weight) * unit
            profile.total_us += microseconds
            site = next((located[index] for index in reversed(stack) if located[index][0] is not None
                         and isinstance(located[index][1], int)), None)
            if site is not None:
                entry = counts.setdefault(site, [0, 0.0])
                entry[0] += 1
                entry[1] += microseconds
    for (rel, line), (samples, microseconds) in counts.items():
        profile.sites.setdefault(rel, {}).setdefault(line, {})["samples"] = (samples, microseconds, samples)
    return profile
