"""The data every stage passes on: edits, findings, and files that failed.

Offsets in an `Edit` are indices into the decoded text of one file (a `str`),
so Python and C++ frontends speak the same unit and the patch writer never
has to think about bytes until it encodes the result.

Meaning lives in fields, never in sentences: a finding's verdict, fix (tier,
edits), keep category, code area, pass and regions are typed values, and what
a run decides about it is a typed `Decision` beside it. Its `reason` is for
people; no stage reads it back (tests/test_reasons_are_prose.py rewords
every reason and checks that nothing else changes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


class Language(enum.StrEnum):
    """The frontend that parses a file."""

    PYTHON = "python"
    CPP = "cpp"  # C++ and CUDA, through libclang


class Tier(enum.StrEnum):
    """How much proof stands behind a fix (docs/rules/README.md, "Fix tiers")."""

    SAFE = "safe"  # proof obligations hold statically: applied by default
    VALIDATE = "validate"  # plausible: applied only after a passing --validate run
    UNSAFE = "unsafe"  # a semantic change the user must accept: --unsafe-fixes

    @property
    def strictness(self) -> int:
        return list(Tier).index(self)


class Verdict(enum.StrEnum):
    """What the rule concluded about a site."""

    FIX = "fix"  # a replacement is offered, at some tier
    KEEP = "keep"  # the site was examined and is left alone, with the reason
    ADVICE = "advice"  # worth a human look, but no mechanical fix exists


class Context(enum.StrEnum):
    """Where a site runs: what a saving there is worth."""

    HOT = "hot"  # a model's per-step path: inside a loop, forward(), a per-step method
    CALL = "per-call"  # an ordinary function: runs as often as it is called
    ONCE = "one-time"  # __init__, module level, set-up code


class Impact(enum.StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    NONE = "none"

    @property
    def rank(self) -> int:
        return (Impact.NONE, Impact.LOW, Impact.MEDIUM, Impact.HIGH).index(self)


def frequency_not_known(path: str) -> str:
    """What a report says of a site the call graph does not reach, whose impact is then the rule's own class: a file
    the graph could not read (Python syntax newer than the running Python's parser, or nesting too deep for its
    walk). Every C++/CUDA file with findings is in the graph (cpp_calls.py)."""
    if path.endswith((".py", ".pyi")):
        return ("not known: this file is not in the project's call graph (Python's parser or the graph's walk could "
                "not read it), so the impact is the rule's own class")
    return "not known: this file is not in the project's call graph, so the impact is the rule's own class"


class Frequency(enum.StrEnum):
    """How often a function runs, from the project's call graph (frequency.py) or a profile: what a saving is worth."""

    PER_STEP = "per-step"  # every step of a model: forward, a step method, anything they call
    ONE_TIME = "one-time"  # set-up: __init__, module level, loading, warm-up, capture, entry points
    UNREACHED = "unreached"  # nothing in the project calls it

    @property
    def rank(self) -> int:
        """Higher runs more often: where several contexts reach a function, the highest wins."""
        return (Frequency.UNREACHED, Frequency.ONE_TIME, Frequency.PER_STEP).index(self)


class FrequencySource(enum.StrEnum):
    """Why the function at the head of a call path runs as often as it does: what the evidence starts from."""

    # per-step
    FORWARD = "forward of a module"
    AUTOGRAD = "autograd.Function forward/backward"
    CALL_METHOD = "__call__"
    STEP_METHOD = "step-style method"  # step, decode, generate, execute_model, prepare_inputs...
    COMPILED = "handed to torch.compile"
    HOOK = "registered as a hook"
    # one-time
    INIT = "constructor"
    MODULE_LEVEL = "module level"
    LOADING = "weight loading"
    WARMUP = "warm-up"
    CAPTURE = "CUDA-graph capture"
    SETUP = "set-up"  # setup, build_*, init_*, register_*, a lazily initialised attribute
    ENTRY_POINT = "entry point"  # main, a CLI command
    TEST = "test"
    CACHED = "cached per argument"
    # unreached
    NO_CALLER = "no caller in the project"
    PUBLIC_API = "public API, no caller in the project"
    MEASURED = "measured by the profile"
    STEP_LOOP = "the loop of a training, evaluation or serving loop"  # per-step
    CHECKPOINT = "checkpoint saving"  # one-time
    LAZY = "only while a cached attribute is missing or too small"  # one-time: `if self.x is None: self.x = ...`
    TESTS_ONLY = "called only from tests"  # unreached
    NOT_BOUND = "C++ that no Python binding or C++ caller in the project reaches"  # unreached


@dataclass(frozen=True)
class CallStep:
    """One function on a call path, and the line in it of the call to the next (or of its definition, last)."""

    function: str  # qualified name in its module: "LlamaAttention.forward"
    line: int
    path: str = ""  # the file it is defined in, relative to the root

    def __str__(self) -> str:
        return f"{self.function} (L{self.line})"


@dataclass(frozen=True)
class Measurement:
    """What a profile measured at one site (profile_trace.py): calls, and time in the ops the rule saves."""

    calls: int | None  # None from a sampling profile (py-spy), which counts time, not calls
    microseconds: float  # summed over the site's calls, in the ops that matter (aten::zeros + aten::fill_, ...)
    ops: tuple[str, ...]  # the ops counted
    profile: str  # the trace's file name


@dataclass(frozen=True)
class FrequencyEvidence:
    """A site's frequency and why: the call path from the context that reaches it, or a measurement."""

    frequency: Frequency
    source: FrequencySource
    path: tuple[CallStep, ...] = ()  # from the root context down to the site's own function
    static: Frequency | None = None  # with a measurement: what the call graph had said
    measured: Measurement | None = None

    def __str__(self) -> str:
        return self.describe("")

    def describe(self, site: str) -> str:
        """In words, naming the file of each step outside SITE's: "per-step (forward of a module): A.forward (L9) -> f (L3)"."""
        chain = " -> ".join(step_text(step, site) for step in self.path)
        static = f"{self.static.value}: " if self.static is not None else ""
        if self.measured is not None:
            calls = f"{self.measured.calls} call(s), " if self.measured.calls is not None else ""
            return (f"{self.frequency.value} (measured: {calls}{self.measured.microseconds:,.0f} us in "
                    f"{'+'.join(self.measured.ops)}, {self.measured.profile}; the call graph said {static}{chain})")
        return f"{self.frequency.value} ({self.source.value}): {chain}" if chain else f"{self.frequency.value} ({self.source.value})"


def step_text(step: CallStep, site: str) -> str:
    return str(step) if step.path in ("", site) else f"{step.path}:{step}"


class CodeArea(enum.StrEnum):
    """Which part of a project a file belongs to (areas.py): where a saving lands."""

    LIBRARY = "library"  # the code users run
    TESTS = "tests"
    BENCHMARKS = "benchmarks"  # benchmarks, examples, scripts, docs and tools around the library


class KeepCategory(enum.StrEnum):
    """Why a site was kept, as a closed set: what the summary counts and filters on.

    A rule picks one for every keep (`Rule.keep`); its reason sentence says
    the details. The value is the label the text summary prints.
    """

    # The value may be read before it is written (OPT101)
    READ_BEFORE_WRITE = "read before written"
    PARTIAL_WRITE = "partial write"
    READ_MODIFY_WRITE = "read-modify-write"
    VIEW_TAKEN = "view or slice taken"
    PASSED = "passed to a call"
    RETURNED = "returned or yielded"
    STORED = "stored elsewhere"
    LOOP = "loop may not run / loop-carried"
    EXCEPTION_PATH = "exception path"
    CAPTURED = "captured or read by name"
    CONDITION = "read in a condition"
    OUT_TARGET = "out= target"
    ATTRIBUTE_BUFFER = "attribute buffer without writer"
    # OPT101's "always keep" shapes (docs/rules/OPT101.md)
    PADDED = "padded buffer"
    INDEX_TENSOR = "index/id tensor"
    DUMMY_INPUT = "dummy input"
    TEST_FIXTURE = "test fixture"
    # Behaviour beyond the values
    DISCARDED = "result never read"
    EXPECTED_EXCEPTION = "inside an exception check"
    DELIBERATE = "deliberate as written"
    # What the call or its target is (Python)
    NOT_TORCH = "not torch's"
    NOT_A_FACTORY = "not a factory"
    NOT_A_DEVICE = "target not a device"
    DEVICE_ALREADY_SET = "device already set"
    UNKNOWN_TEMPLATE = "template's device unknown"
    INEXACT_CONVERSION = "conversion not exact"
    OP_BETWEEN = "op between factory and move"
    NO_GAIN = "nothing to gain"
    # Host-to-device copies (OPT103)
    NOT_CUDA = "not a CUDA device"
    DEVICE_TO_HOST = "device to host"
    SOURCE_WRITTEN = "source written after the copy"
    # C++/CUDA
    CONSTANT_BOUND = "constant bound"
    DEVICE_CODE = "device code"
    WHOLE_ARRAY_USED = "whole array used"
    UNRESOLVED = "not visible to the parser"
    UNKNOWN_SIZE = "element type or size unknown"
    DEVICE_MEMORY = "may be device memory"
    OTHER_STREAM = "another stream"
    # The edit itself
    CANNOT_SPELL = "the edit cannot be written"
    OTHER = "other use"
    DEAD_STORE = "value rebound before any read"  # advice: an edit of it gains nothing; delete the line instead


class Hold(enum.StrEnum):
    """Why a fix that was found is not applied in this run."""

    OVERLAP = "overlap"  # deferred: re-derived from the rewritten text on the next pass
    UNSAFE_TIER = "unsafe-tier"
    VALIDATE_TIER = "validate-tier"
    OUT_OF_SCOPE = "out-of-scope"  # --changed-lines, --baseline
    BACKED_OUT = "backed-out"  # --validate ran the tests with it, and they failed
    NOT_BUILT = "not-built"  # --validate without --build cannot validate C++/CUDA
    NOT_EXERCISED = "not-exercised"  # --validate ran, but no test process imported the fix's file
    NOT_CHOSEN = "not-chosen"  # a step of --validate's bisection left it out
    AREA = "area"  # in an area outside `fix-areas` (tests, benchmarks): reported, applied only when asked for


_HOLD_MESSAGES = {
    Hold.OVERLAP: "overlaps another fix; re-examined on the next pass",
    Hold.UNSAFE_TIER: "unsafe tier: applied only with --unsafe-fixes",
    Hold.VALIDATE_TIER: "validate tier: applied only after a passing --validate run",
    Hold.OUT_OF_SCOPE: "outside the run's scope",
    Hold.BACKED_OUT: "backed out: the --validate command failed with this fix",
    Hold.NOT_BUILT: "not validated: no --build (a C++/CUDA fix is validated only by a run that rebuilt it)",
    Hold.NOT_EXERCISED: "not validated: no process the --validate command started imported this file",
    Hold.NOT_CHOSEN: "not part of this validation step",
    Hold.AREA: "outside the areas this run fixes (fix-areas); include it with --fix-areas",
}


@dataclass(frozen=True)
class Refusal:
    """A hold, with the run's details for people (which command failed, which scope)."""

    hold: Hold
    detail: str = ""

    @property
    def message(self) -> str:
        return self.detail or _HOLD_MESSAGES[self.hold]


@dataclass(frozen=True, order=True)
class Edit:
    """Replace text[start:end] with `text`. An insertion has start == end."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Region:
    """One edit as lines and columns of the file as the user has it, all 1-based.

    Columns count characters (code points). The end is the position just
    after the replaced text, as in SARIF: an insertion has start == end.
    """

    start_line: int
    start_column: int
    end_line: int
    end_column: int
    inserted: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Fix:
    """What a `Proven` verdict rewrites: how much proof stands behind it, its edits, and the site rewritten."""

    tier: Tier
    edits: tuple[Edit, ...]
    replacement: str = ""  # the rewritten source of the site, for humans


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One examined site: a fix with its proof, a keep with its blocking use, or advice.

    A finding is a value: the engine builds it from a rule's judgement
    (judgements.py), and each later stage that places or weighs it builds a
    new one (`dataclasses.replace`), so an analysis in the result cache is
    never changed by a run. What a run decides about it (scope, the fix
    policy) is a `Decision` beside it, never a field of it.
    """

    code: str
    name: str
    path: str  # relative to the scanned root, with forward slashes
    line: int  # 1-based
    col: int  # 1-based, in characters
    verdict: Verdict
    reason: str  # for people: the proof (fix) or blocking use (keep), in one line
    context: Context
    impact: Impact
    impact_basis: str  # the measurement the impact class rests on
    area: CodeArea = CodeArea.LIBRARY
    fix: Fix | None = None  # set exactly for verdict FIX
    keep_category: KeepCategory | None = None  # set for verdict KEEP; for ADVICE, which kind when the rule says
    proof: tuple[str, ...] = ()  # the full argument, step by step, for `explain`
    # Where it sits, placed by the engine while the file's text is at hand (locations.py, passes.settle):
    line_text: str = ""  # the finding's line, for baselines and suggestions
    regions: tuple[Region, ...] = ()  # the fix's edits in lines and columns of the original file
    analysis_pass: int = 0  # 0, or the later pass that re-derived it after an overlapping fix
    # Weighed by the run from the project's call graph or a profile (frequency.py), after the cache:
    frequency: FrequencyEvidence | None = None  # None: not known (C++, or a file outside the index)
    size: Impact | None = None  # the rule's own class, before the frequency weighed it (`impact` after)

    def __post_init__(self) -> None:
        if (self.verdict is Verdict.FIX) != (self.fix is not None):
            raise ValueError(f"{self.code} at {self.location()}: a {self.verdict.value} finding "
                             f"{'without' if self.fix is None else 'with'} a fix")

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code)

    def location(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Decision:
    """What one run decided about a finding, after the cache (passes.settle): never part of an analysis.

    The JSON report (docs/json-schema.md) gives these facts the same names:
    `accepted`, `held`, `refused_because`. Whether the command then wrote an
    accepted fix (`written`) is the command's own fact (reporters/status.py).
    """

    out_of_scope: str | None = None  # why narrowing leaves it out (--changed-lines, --baseline, --min-impact)
    accepted: bool = False  # the fix policy applies the fix in this run
    refusal: Refusal | None = None  # why a fix is not accepted

    @property
    def held(self) -> Hold | None:
        return self.refusal.hold if self.refusal is not None else None

    @property
    def refused_because(self) -> str:
        return self.refusal.message if self.refusal is not None else ""

    @property
    def deferred(self) -> bool:
        """Held back by an overlapping fix, to be re-derived on the next pass."""
        return self.held is Hold.OVERLAP



class Decided(NamedTuple):
    """A finding with what the run decided about it: what results, reporters and integrations read."""

    finding: Finding
    decision: Decision


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed; the rest of the run goes on."""

    path: str
    reason: str
    line: int | None = None
    col: int | None = None  # 1-based, where known (a syntax error's)

    def location(self) -> str:
        if self.line and self.col:
            return f"{self.path}:{self.line}:{self.col}"
        return f"{self.path}:{self.line}" if self.line else self.path
