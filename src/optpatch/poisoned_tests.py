"""`--validate CMD`: run the user's tests with uninitialised memory poisoned, and back out every fix that breaks them.

The flow, top to bottom in `validate`:

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
with only those fixes allowed, so fixes that overlap (applied over several
passes by the engine) are handled exactly as a normal run would.

Poisoning reaches every Python process CMD starts through a
`sitecustomize.py` on PYTHONPATH (see `optpatch.poison`); a command that
clears PYTHONPATH (tox, `python -I`) is detected, because no process
reports being poisoned, and refused.
"""

from __future__ import annotations

import contextlib
import enum
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Generic, Sequence, TypeVar

from optpatch import poison
from optpatch.config import Settings
from optpatch.cpp_headers import HeaderSetup
from optpatch.engine import run
from optpatch.formatter_config import read_formatter_config
from optpatch.model import Finding, Hold, Language, Refusal, Tier
from optpatch.passes import FileRecord, FindingFilter, rules_for, settle, text_digest
from optpatch.policy import FixPolicy, effective_tier, fix_id
from optpatch.results import RunResult
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile, language_of, read_source

DEFAULT_TIMEOUT_S = 1800
TAIL_LINES = 40
TAIL_BYTES = 64 * 1024
STOP_GRACE_S = 5  # how long a stopped command may take to exit before it is killed
# Failing tests as pytest ("FAILED path::test - ...") and unittest ("FAIL: test (module.Case.test)") name them.
_FAILED_TEST = re.compile(r"^(?:FAILED |ERROR |FAIL: |ERROR: )(\S+(?: \([\w.]+\))?)", re.MULTILINE)

T = TypeVar("T")


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


# -- which fixes a run applies ------------------------------------------------------------


@dataclass(frozen=True)
class CandidateFixes(FixPolicy):
    """Every fix a validation run may accept: the validate tier too, unsafe only with --unsafe-fixes."""

    def refuse(self, finding: Finding) -> Refusal | None:
        if effective_tier(finding, self.tiers) is Tier.VALIDATE and self.outside(finding) is None:
            return None
        return super().refuse(finding)


@dataclass(frozen=True)
class ChosenFixes(FixPolicy):
    """Exactly the fixes in `chosen`; `held` says why each fix validation set aside was refused."""

    chosen: frozenset[str] = frozenset()
    held: tuple[tuple[str, Refusal], ...] = ()

    def refuse(self, finding: Finding) -> Refusal | None:
        key = fix_id(finding)
        if key in self.chosen:
            return None
        return dict(self.held).get(key) or super().refuse(finding) or Refusal(Hold.NOT_CHOSEN)


# -- running the command ------------------------------------------------------------------


@dataclass(frozen=True)
class CommandRun:
    """One execution of the test (or build) command, and how it ended."""

    label: str  # what the tree held: "original tree", "32 of 32 fixes", ...
    mode: str | None  # the poison pass; None for the build command
    returncode: int | None
    timed_out: bool
    seconds: float
    timeout_s: float
    tail: str
    failing_tests: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.timed_out and self.returncode == 0

    def describe(self) -> str:
        if self.timed_out:
            return f"timed out after {self.timeout_s:g} s (--validate-timeout)"
        if self.returncode == 0:
            return f"passed in {self.seconds:.1f} s"
        if self.returncode is not None and self.returncode < 0:
            return f"killed by signal {-self.returncode} after {self.seconds:.1f} s"
        return f"failed with exit status {self.returncode} after {self.seconds:.1f} s"

    def what(self) -> str:
        step = "build" if self.mode is None else f"poison {self.mode}"
        return f"{self.label}, {step}"


def run_command(command: str, cwd: Path, env: dict[str, str], timeout_s: float, log_path: Path, label: str, mode: str | None) -> CommandRun:
    """Run COMMAND in its own process group; on timeout or interrupt the whole group is stopped."""
    started = time.monotonic()
    timed_out = False
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            command, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            process.wait(timeout=timeout_s)
            ended = time.monotonic()  # before the clean-up below: `optpatch bench` times the command alone
        except subprocess.TimeoutExpired:
            timed_out = True
            _stop_group(process)
        except BaseException:
            _stop_group(process)
            raise
        finally:
            _signal_group(process.pid, signal.SIGKILL)  # daemons the tests left behind would hold the tree
    tail, failing = _read_tail(log_path)
    seconds = (time.monotonic() if timed_out else ended) - started
    return CommandRun(label, mode, process.returncode, timed_out, seconds, timeout_s, tail, failing)


def _stop_group(process: subprocess.Popen) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()


def _signal_group(group: int, signum: int) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _read_tail(log_path: Path) -> tuple[str, tuple[str, ...]]:
    with open(log_path, "rb") as log:
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - TAIL_BYTES))
        text = log.read().decode("utf-8", errors="replace")
    failing = tuple(dict.fromkeys(_FAILED_TEST.findall(text)))
    return "\n".join(text.rstrip().splitlines()[-TAIL_LINES:]), failing


# -- bisection ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    passed: bool
    failure: CommandRun | None = None


@dataclass
class Bisection(Generic[T]):
    kept: list[T]
    dropped: list[tuple[T, CommandRun | None]]
    probes: int
    last_probed: list[T] | None  # the set the last probe ran; the tree holds it now


def bisect_fixes(candidates: Sequence[T], probe: Callable[[list[T]], Probe]) -> Bisection[T]:
    """Split CANDIDATES into fixes that pass together and fixes that break the command.

    Requires that the empty set passes (the baseline). Each round runs all
    remaining fixes on top of those already kept; if that fails, a binary
    search over prefixes finds the first fix whose addition fails, which is
    dropped. Every kept prefix has passed as a whole, so interactions
    between fixes are caught too.
    """
    kept: list[T] = []
    dropped: list[tuple[T, CommandRun | None]] = []
    remaining = list(candidates)
    probes = 0
    last: list[T] | None = None
    while remaining:
        trial = kept + remaining
        outcome = probe(trial)
        probes, last = probes + 1, trial
        if outcome.passed:
            kept = trial
            break
        passing, failing, failure = 0, len(remaining), outcome.failure  # prefix lengths
        while failing - passing > 1:
            middle = (passing + failing) // 2
            trial = kept + remaining[:middle]
            outcome = probe(trial)
            probes, last = probes + 1, trial
            if outcome.passed:
                passing = middle
            else:
                failing, failure = middle, outcome.failure
        kept += remaining[:passing]
        dropped.append((remaining[passing], failure))
        remaining = remaining[failing:]
    return Bisection(kept, dropped, probes, last)


# -- the temporary copy -------------------------------------------------------------------


class Workspace:
    """A temporary directory holding the copy of REPO, the sitecustomize per poison pass, and logs."""

    def __init__(self, root: Path):
        temporary = Path(tempfile.gettempdir()).resolve()
        if temporary == root.resolve() or root.resolve() in temporary.parents:
            raise ValidationSetupError(
                f"the temporary directory {temporary} is inside {root}, which optpatch must not write to; "
                "set TMPDIR to a directory outside it"
            )
        self.base = Path(tempfile.mkdtemp(prefix="optpatch-validate-"))
        self.tree = self.base / (root.name or "repo")
        self.logs = self.base / "logs"
        self._stamps: dict[str, int] = {}
        self._runs = 0
        try:
            self.logs.mkdir()
            _copy_tree(root, self.tree)
            for mode in poison.MODES:
                site = self.base / f"poison-{mode}"
                site.mkdir()
                (site / "sitecustomize.py").write_text(poison.sitecustomize_source(mode), encoding="utf-8")
        except BaseException:
            self.remove()
            raise

    def write(self, rel: str, data: bytes) -> None:
        """Write a file of the copy, with an mtime no earlier version had.

        A fix such as zeros -> empty keeps the file's size; if the mtime
        second were also equal, Python would run a stale .pyc.
        """
        path = self.tree / rel
        if path.read_bytes() == data:
            return
        status = path.stat()
        previous = self._stamps.get(rel, int(status.st_mtime))
        if not status.st_mode & 0o200:
            path.chmod(status.st_mode | 0o200)  # a read-only source file; the copy is ours to change
        path.write_bytes(data)
        second = max(int(time.time()), previous + 1)
        self._stamps[rel] = second
        os.utime(path, (second, second))

    def prepare_run(self, mode: str | None) -> tuple[dict[str, str], Path, Path | None]:
        """The environment, output log and poison report of the next run (mode None: unpoisoned, for the build)."""
        self._runs += 1
        log = self.logs / f"run-{self._runs}.log"
        env = dict(os.environ)
        if mode is None:
            return env, log, None
        site = str(self.base / f"poison-{mode}")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
        env["OPTPATCH_POISON"] = mode
        report = self.logs / f"poisoned-{self._runs}.txt"
        env[poison.LOG_VARIABLE] = str(report)
        env[poison.IMPORT_LOG_VARIABLE] = str(self.import_log)
        env[poison.TREE_VARIABLE] = str(self.tree)
        return env, log, report

    @property
    def import_log(self) -> Path:
        """The tree's source files any poisoned process imported (poison.record_imports_at_exit), one per line."""
        return self.logs / "imported.txt"

    def imported(self) -> frozenset[str]:
        try:
            return frozenset(line for line in self.import_log.read_text(encoding="utf-8").splitlines() if line)
        except OSError:
            return frozenset()

    def remove(self) -> None:
        _remove_tree(self.base)


def _copy_tree(root: Path, destination: Path) -> None:
    """Copy REPO as it is, less sockets and fifos; absolute links into REPO are pointed at the copy,
    so nothing writes through to REPO."""

    def copy_regular(source: str, target: str) -> None:
        if Path(source).is_file():
            shutil.copy2(source, target)

    try:
        shutil.copytree(root, destination, symlinks=True, copy_function=copy_regular)
    except (shutil.Error, OSError) as error:
        raise ValidationSetupError(f"cannot copy {root} to a temporary directory: {error}") from None
    spellings = {root.absolute(), root.resolve()}
    for directory, dirnames, filenames in os.walk(destination):
        for name in dirnames + filenames:
            link = Path(directory) / name
            if not link.is_symlink():
                continue
            target = Path(os.readlink(link))
            inside = next((r for r in spellings if target == r or r in target.parents), None)
            if target.is_absolute() and inside is not None:
                link.unlink()
                link.symlink_to(destination / target.relative_to(inside))


def _remove_tree(path: Path) -> None:
    """Remove the temporary tree even where the tests left read-only files or directories."""

    def make_writable(function, failed_path, _):
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(failed_path), 0o700)
            if os.path.isdir(failed_path) and not os.path.islink(failed_path):
                os.chmod(failed_path, 0o700)
            function(failed_path)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=make_writable)
    else:
        shutil.rmtree(path, onerror=make_writable)
    if path.exists():
        sys.stderr.write(f"optpatch: could not remove the temporary copy {path}; remove it by hand\n")


class ValidationSetupError(Exception):
    """The validation could not start: the message says what to do."""


# -- file texts for a set of fixes ----------------------------------------------------------


class FixRenderer:
    """Each candidate file's bytes with a given set of its fixes applied (memoised per file and set).

    Every set is settled from one analysis of the file (passes.FileRecord),
    so fixes that overlap (applied over several passes) are handled exactly
    as a normal run would, and no file is analysed twice for the same text.
    """

    def __init__(self, root: Path, settings: Settings, policy: FixPolicy, analysis: RunResult, candidates: list[Finding]):
        self.settings = settings
        self.policy = policy
        self.headers = HeaderSetup.for_run(root, settings.compile_commands, settings.headers)
        self.rules = select_rules(load_rules(), settings.select, settings.ignore)
        self.ids_by_file: dict[str, frozenset[str]] = {}
        for finding in candidates:
            self.ids_by_file[finding.path] = self.ids_by_file.get(finding.path, frozenset()) | {fix_id(finding)}
        self.sources: dict[str, SourceFile] = {}
        self.records: dict[str, FileRecord] = {}
        analysed = {r.rel: r.old for r in analysis.files}
        formatters = read_formatter_config(root, self.ids_by_file)
        for rel in self.ids_by_file:
            source = read_source(root / rel, rel, settings.max_file_size, settings.area_of(root / rel, rel))
            if not isinstance(source, SourceFile) or source.raw != analysed.get(rel):
                raise ValidationSetupError(f"{root / rel}: changed while optpatch was reading it; run optpatch again")
            self.sources[rel] = source
            self.records[rel] = FileRecord(text_digest(source.raw), style=formatters.style_of(rel, source.language))
        self._memo: dict[tuple[str, frozenset[str]], bytes] = {}

    @property
    def files(self) -> list[str]:
        return sorted(self.ids_by_file)

    def file_bytes(self, rel: str, chosen: frozenset[str]) -> bytes:
        own = chosen & self.ids_by_file[rel]
        key = (rel, own)
        if key not in self._memo:
            policy = ChosenFixes(unsafe_fixes=self.policy.unsafe_fixes, tiers=self.policy.tiers,
                                 fix_areas=self.policy.fix_areas, chosen=own)
            source, record = self.sources[rel], self.records[rel]
            rules = rules_for(rel, self.rules, self.settings)
            record.analysis_of(source, lambda: rules, self.headers)
            result = settle(record, lambda: source, lambda: rules, policy, rel=rel, headers=self.headers)
            self._memo[key] = result.new if result.new is not None else source.raw
        return self._memo[key]

    def is_cpp(self, rel: str) -> bool:
        return self.sources[rel].language is not Language.PYTHON


# -- the validation -----------------------------------------------------------------------


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
                "label": item.label, "poison": item.mode, "passed": item.passed, "returncode": item.returncode,
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


def validate(
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
        self.mode_order = list(poison.MODES)
        self.kept: list[Finding] = []
        self.poison_reports: list[tuple[str, Path]] = []  # (mode, file each poisoned process appends to)

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

    def _run(self, command: str, label: str, mode: str | None) -> CommandRun:
        env, log, report = self.workspace.prepare_run(mode)
        step = "build" if mode is None else f"poison {mode}"
        self.progress(f"validate: {label}, {step} ...")
        result = run_command(command, self.workspace.tree, env, self.timeout_s, log, label, mode)
        self.runs.append(result)
        if report is not None:
            self.poison_reports.append((mode, report))
        self.progress(f"validate: {label}, {step}: {result.describe()}")
        return result

    def _unpoisoned_modes(self) -> list[str]:
        """Poison passes of the baseline in which no process reported poisoning torch."""
        reported = {mode for mode, path in self.poison_reports if path.is_file() and path.stat().st_size}
        return [mode for mode in poison.MODES if mode not in reported]


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


# -- the report ---------------------------------------------------------------------------


def render_validation(outcome: ValidationOutcome, console) -> None:
    """The validation section of the text report: what ran, what was dropped and why, what passed."""
    from rich.text import Text

    header = f"Validation with `{outcome.command}`: {len(outcome.runs)} runs in {outcome.seconds:.1f} s"
    console.print(Text(header, style="bold"), soft_wrap=True)
    if outcome.baseline_failure is not None:
        console.print(Text("Output of the failing baseline run:", style="bold red"), soft_wrap=True)
        console.print(Text(_indent(outcome.baseline_failure.tail)), soft_wrap=True)
    for finding, failure in outcome.dropped:
        console.print(Text.assemble(("dropped ", "bold red"), f"{finding.code} {finding.location()} ({finding.fix.tier.value}): ",
                                    failure.describe() if failure else "failed", f" [{failure.what()}]" if failure else ""), soft_wrap=True)
        if failure is not None:
            if failure.failing_tests:
                console.print(Text("  failing: " + ", ".join(failure.failing_tests)), soft_wrap=True)
            console.print(Text(_indent(failure.tail), style="dim"), soft_wrap=True)
    for finding in outcome.validated_passed:
        console.print(Text.assemble(("passed ", "bold green"), f"{finding.code} {finding.location()} (validate tier): applied"), soft_wrap=True)
    for finding in outcome.unexercised:
        console.print(Text.assemble(("not exercised ", "yellow"), f"{finding.code} {finding.location()} (validate tier): "
                                    "no process the command started imported this file; not applied"), soft_wrap=True)
    style = "bold red" if outcome.failed else "bold"
    console.print(Text(outcome.message, style=style), soft_wrap=True)


def _indent(text: str) -> str:
    return "\n".join("    | " + line for line in text.splitlines()) or "    | (no output)"
