"""`--validate CMD`: run the user's tests with uninitialised memory poisoned, and back out every fix that breaks them.

The flow, top to bottom in `validate_fixes`:

1. Analyse with every candidate fix accepted: safe and validate tier (and
   unsafe with --unsafe-fixes).
2. Copy REPO to a temporary directory (everything, .git included: tests may
   need built extensions or git itself; REPO is never written) and run CMD
   there on the original files, once per poison pass ("nan", then
   "pattern"). It must pass, or validation stops with exit status 4.
3. Write every candidate fix into the copy and run CMD under both passes.
4. If that fails, bisect: fixes are ordered by file and position, and a
   binary search over prefixes of that order finds the first fix whose
   addition makes CMD fail; it is dropped and the search goes on with the
   rest. One bad fix among n costs about log2(n) runs.
5. The fixes that were never dropped form the result; they are analysed
   once more from REPO and must give exactly the tree that passed.

Each file's text for a set of fixes is derived by re-analysing that file
with only those fixes allowed (fix_texts.py), so fixes that overlap
(applied over several passes by the engine) are handled exactly as a
normal run would. The runs themselves are commands.py's, in the copy of
workspace.py; render.py prints the outcome on the console.

Poisoning reaches every Python process CMD starts through a
`sitecustomize.py` on PYTHONPATH (see `optpatch.poison`); a command that
clears PYTHONPATH (tox, `python -I`) is detected, because no process
reports being poisoned, and refused.
"""

from __future__ import annotations

import contextlib
import enum
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from optpatch.config import Settings
from optpatch.engine import run
from optpatch.model import Finding, Hold, Language, Refusal, Tier
from optpatch.passes import FindingFilter
from optpatch.poison import PoisonMode
from optpatch.policy import effective_tier, fix_id
from optpatch.results import RunResult
from optpatch.source import language_of
from optpatch.validation.bisect import Probe, bisect_fixes
from optpatch.validation.commands import CommandRun, run_command
from optpatch.validation.fix_choice import CandidateFixes, ChosenFixes
from optpatch.validation.fix_texts import FixRenderer
from optpatch.validation.workspace import Workspace

DEFAULT_TIMEOUT_S = 1800


class ValidationStatus(enum.StrEnum):
    """How a validation ended; the last three fail it (exit status 4)."""

    PASSED = "passed"
    NOTHING_TO_VALIDATE = "nothing to validate"
    BASELINE_FAILED = "baseline failed"
    NONE_SURVIVED = "none survived"
    NOT_CONFIRMED = "not confirmed"

    @property
    def failed(self) -> bool:
        return self in (ValidationStatus.BASELINE_FAILED, ValidationStatus.NONE_SURVIVED, ValidationStatus.NOT_CONFIRMED)


@dataclass
class ValidationOutcome:
    command: str
    status: ValidationStatus
    message: str
    result: RunResult | None  # the final analysis (None when the baseline failed)
    candidates: list[Finding] = field(default_factory=list)
    kept: list[Finding] = field(default_factory=list)
    dropped: list[tuple[Finding, CommandRun | None]] = field(default_factory=list)
    unexercised: list[Finding] = field(default_factory=list)  # validate tier, in files no test process imported
    runs: list[CommandRun] = field(default_factory=list)
    baseline_failure: CommandRun | None = None
    seconds: float = 0.0

    @property
    def failed(self) -> bool:
        """Exit status 4 (README.md, "Exit status"): the baseline failed, or no fix survived."""
        return self.status.failed

    @property
    def validated_passed(self) -> list[Finding]:
        return [f for f in self.kept if f.fix.tier is Tier.VALIDATE]

    def to_dict(self) -> dict:
        def run_dict(item: CommandRun | None) -> dict | None:
            if item is None:
                return None
            return {
                "label": item.label, "poison": None if item.mode is None else item.mode.value, "passed": item.passed, "returncode": item.returncode,
                "timed_out": item.timed_out, "seconds": round(item.seconds, 3),
                "failing_tests": list(item.failing_tests), "output_tail": item.tail,
            }

        return {
            "command": self.command,
            "status": self.status.value,
            "message": self.message,
            "runs": len(self.runs),
            "candidates": len(self.candidates),
            "kept": [fix_id(f) for f in self.kept],
            "validate_tier_passed": [fix_id(f) for f in self.validated_passed],
            "not_exercised": [fix_id(f) for f in self.unexercised],
            "dropped": [{"fix": fix_id(f), "failure": run_dict(r)} for f, r in self.dropped],
            "baseline_failure": run_dict(self.baseline_failure),
            "seconds": round(self.seconds, 3),
        }


Progress = Callable[[str], None]


def validate_fixes(
    root: Path,
    settings: Settings,
    command: str,
    *,
    paths: list[Path] | None = None,
    filters: tuple[FindingFilter, ...] = (),
    jobs: int | None = None,
    build_command: str | None = None,
    timeout_s: float | None = None,
    progress: Progress | None = None,
    use_cache: bool = True,
) -> ValidationOutcome:
    """Analyse ROOT, validate every candidate fix with COMMAND, and return the final analysis.

    ROOT is only read. TIMEOUT_S bounds each run of a command (default
    DEFAULT_TIMEOUT_S). Interrupts (SIGINT, SIGTERM) stop the command's
    process group and remove the temporary tree before propagating as
    KeyboardInterrupt.
    """
    started = time.monotonic()
    timeout_s = timeout_s or DEFAULT_TIMEOUT_S
    policy = CandidateFixes.of(settings)
    analysis = run(root, settings, policy, paths, jobs, use_cache=use_cache, filters=filters)
    unbuilt = tuple(
        (fix_id(f), Refusal(Hold.NOT_BUILT)) for f, decision in analysis.decided
        if decision.accepted and _needs_a_build(f, settings, build_command)
    )
    candidates = [f for f, decision in analysis.decided if decision.accepted and fix_id(f) not in dict(unbuilt)]
    if not candidates:
        if unbuilt:  # the candidate run applied them; the result must not
            analysis = run(root, settings, ChosenFixes.of(settings, held=unbuilt),
                           paths, jobs, use_cache=use_cache, filters=filters)
        return ValidationOutcome(command, ValidationStatus.NOTHING_TO_VALIDATE, f"no fix to validate: `{command}` was not run", analysis)
    report = progress or (lambda message: None)
    files = len({f.path for f in candidates})
    report(f"validate: {len(candidates)} candidate fixes in {files} files; copying {root} to a temporary directory")
    with _sigterm_as_interrupt():
        workspace = Workspace(root)
        try:
            renderer = FixRenderer(root, settings, policy, analysis, candidates)
            validation_run = ValidationRun(workspace, renderer, command, build_command, timeout_s, progress, settings.tiers)
            outcome = validation_run.validate(candidates)
        finally:
            workspace.remove()
    if outcome.status in (ValidationStatus.PASSED, ValidationStatus.NONE_SURVIVED, ValidationStatus.NOTHING_TO_VALIDATE):
        chosen = frozenset(fix_id(f) for f in outcome.kept)
        held = tuple((fix_id(f), Refusal(Hold.BACKED_OUT, _dropped_reason(r))) for f, r in outcome.dropped) + unbuilt
        held += tuple((fix_id(f), Refusal(Hold.NOT_EXERCISED)) for f in outcome.unexercised)
        final_policy = ChosenFixes.of(settings, chosen=chosen, held=held)
        outcome.result = run(root, settings, final_policy, paths, jobs, use_cache=use_cache, filters=filters)
        _check_final_matches(outcome, validation_run.passed_tree())
    outcome.seconds = time.monotonic() - started
    return outcome


def _needs_an_import(finding: Finding, tiers: tuple[tuple[str, str], ...]) -> bool:
    """A validate-tier Python fix counts as validated only if a poisoned process imported its file."""
    return effective_tier(finding, tiers) is Tier.VALIDATE and language_of(finding.path) is Language.PYTHON


def _needs_a_build(finding: Finding, settings: Settings, build_command: str | None) -> bool:
    """A validate-tier C++/CUDA fix is validated only by a run that rebuilt it: never without --build."""
    return (
        build_command is None and effective_tier(finding, settings.tiers) is Tier.VALIDATE
        and language_of(finding.path) is not Language.PYTHON
    )


def _dropped_reason(failure: CommandRun | None) -> str:
    if failure is None:
        return "backed out: the --validate command failed with this fix"
    return f"backed out: the --validate command {failure.describe()} with this fix ({failure.what()})"


def _check_final_matches(outcome: ValidationOutcome, passed: dict[str, tuple[bytes, bytes]]) -> None:
    """The patch must be exactly the tree that passed (PASSED: file -> (original, passed bytes)); else no fix is given."""
    final = {change.rel: change.new for change in outcome.result.changes}
    for rel, (original, expected) in passed.items():
        if final.get(rel, original) != expected:
            outcome.status, outcome.result = ValidationStatus.NOT_CONFIRMED, None
            outcome.message = (
                f"the final rewrite of {rel} differs from the tree that passed (was the repository edited "
                "during validation?); no fix is given"
            )
            return


class ValidationRun:
    """One validation: the copy, the fixes, and every run of the command."""

    def __init__(self, workspace: Workspace, renderer: FixRenderer, command: str, build_command: str | None,
                 timeout_s: float, progress: Progress | None, tiers: tuple[tuple[str, str], ...] = ()):
        self.workspace = workspace
        self.tiers = tiers  # the `tiers` setting: which fixes count as validate tier
        self.renderer = renderer
        self.command = command
        self.build_command = build_command
        self.timeout_s = timeout_s
        self.progress = progress or (lambda message: None)
        self.runs: list[CommandRun] = []
        self.tree_state: dict[str, bytes] = {}  # candidate files as the copy holds them now
        self.built_state: dict[str, bytes] | None = None  # C++ files as of the last build
        self.mode_order = list(PoisonMode)
        self.kept: list[Finding] = []
        self.poison_reports: list[tuple[PoisonMode, Path]] = []  # (mode, file each poisoned process appends to)

    def validate(self, candidates: list[Finding]) -> ValidationOutcome:
        outcome = ValidationOutcome(self.command, ValidationStatus.PASSED, "", None, candidates, runs=self.runs)
        baseline = self.probe([], "original tree")
        if not baseline.passed:
            outcome.status, outcome.baseline_failure = ValidationStatus.BASELINE_FAILED, baseline.failure
            outcome.message = _baseline_message(self.command, baseline.failure)
            return outcome
        unpoisoned = self._unpoisoned_modes()
        if unpoisoned:
            outcome.status = ValidationStatus.BASELINE_FAILED
            outcome.message = (
                f"`{self.command}` started no Python process that imported torch with the poison installed "
                f"(pass {', '.join(unpoisoned)}): validation would prove nothing. Run the tests directly "
                "(e.g. `python -m pytest`), not through a tool that clears PYTHONPATH (tox, nox, `python -I`)"
            )
            return outcome
        exercised = self.workspace.imported()
        outcome.unexercised = [f for f in candidates if _needs_an_import(f, self.tiers) and f.path not in exercised]
        candidates = [f for f in candidates if f not in outcome.unexercised]
        if not candidates:
            outcome.status = ValidationStatus.NOTHING_TO_VALIDATE
            outcome.message = f"`{self.command}` imported none of the files its {len(outcome.unexercised)} fixes are in"
            return outcome
        total = len(candidates)
        bisection = bisect_fixes(candidates, lambda chosen: self.probe(chosen, f"{len(chosen)} of {total} fixes"))
        if bisection.kept and bisection.last_probed != bisection.kept:
            confirmation = self.probe(bisection.kept, f"confirming {len(bisection.kept)} of {total} fixes")
            if not confirmation.passed:
                outcome.status = ValidationStatus.NOT_CONFIRMED
                outcome.message = (
                    "the fixes the bisection kept failed together on the confirming run "
                    f"({confirmation.failure.describe()}): the tests may be flaky; no fix is given"
                )
                return outcome
        outcome.kept, outcome.dropped = bisection.kept, bisection.dropped
        self.kept = bisection.kept
        if not outcome.kept:
            outcome.status = ValidationStatus.NONE_SURVIVED
            outcome.message = f"every one of the {total} fixes broke `{self.command}`: no fix survived"
        else:
            outcome.message = f"{len(outcome.kept)} of {total} fixes passed `{self.command}`"
        return outcome

    def passed_tree(self) -> dict[str, tuple[bytes, bytes]]:
        """Each candidate file's (original, validated) bytes: the kept fixes ran last, or none survived."""
        originals = {rel: self.renderer.file_bytes(rel, frozenset()) for rel in self.renderer.files}
        if not self.kept:
            return {rel: (data, data) for rel, data in originals.items()}
        return {rel: (originals[rel], self.tree_state[rel]) for rel in self.renderer.files}

    # -- one state of the tree --------------------------------------------------------------

    def probe(self, chosen: list[Finding], label: str) -> Probe:
        """Write CHOSEN into the copy, rebuild if C++ changed, and run the command under every poison pass."""
        ids = frozenset(fix_id(f) for f in chosen)
        for rel in self.renderer.files:
            data = self.renderer.file_bytes(rel, ids)
            self.workspace.write(rel, data)
            self.tree_state[rel] = data
        build = self._build_if_needed(label)
        if build is not None and not build.passed:
            return Probe(False, build)
        for mode in list(self.mode_order):
            result = self._run(self.command, label, mode)
            if not result.passed:
                self.mode_order.remove(mode)
                self.mode_order.insert(0, mode)  # a pass that caught a bad fix is the likeliest to catch it again
                return Probe(False, result)
        return Probe(True)

    def _build_if_needed(self, label: str) -> CommandRun | None:
        if not self.build_command:
            return None
        cpp = {rel: data for rel, data in self.tree_state.items() if self.renderer.is_cpp(rel)}
        if not cpp or cpp == self.built_state:
            return None
        result = self._run(self.build_command, label, None)
        self.built_state = cpp if result.passed else None
        return result

    def _run(self, command: str, label: str, mode: PoisonMode | None) -> CommandRun:
        env, log, report = self.workspace.prepare_run(mode)
        step = "build" if mode is None else f"poison {mode}"
        self.progress(f"validate: {label}, {step} ...")
        result = run_command(command, self.workspace.tree, env, self.timeout_s, log, label, mode)
        self.runs.append(result)
        if report is not None:
            self.poison_reports.append((mode, report))
        self.progress(f"validate: {label}, {step}: {result.describe()}")
        return result

    def _unpoisoned_modes(self) -> list[PoisonMode]:
        """Poison passes of the baseline in which no process reported poisoning torch."""
        reported = {mode for mode, path in self.poison_reports if path.is_file() and path.stat().st_size}
        return [mode for mode in PoisonMode if mode not in reported]


def _baseline_message(command: str, failure: CommandRun | None) -> str:
    if failure is None:
        return f"`{command}` failed on the original tree"
    if failure.mode is None:
        return f"the build command failed on the original tree ({failure.describe()}); fix the build first"
    if failure.timed_out:
        return (
            f"`{command}` timed out after {failure.timeout_s:g} s on the original tree (poison {failure.mode}); "
            "raise --validate-timeout or choose a faster command"
        )
    return (
        f"`{command}` fails on the original tree with uninitialised memory poisoned (poison {failure.mode}: "
        f"{failure.describe()}); it must pass before any fix can be validated"
    )


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM behaves like Ctrl-C while validating, so the same clean-up runs for both."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
