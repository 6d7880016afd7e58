"""How often each function runs, from the project's call graph; and what that makes a finding's impact worth.

A run-level fact, decided after the cache as the fix policy is (passes.settle):
a file's cached analysis never holds it, since an edit anywhere in the
project may change who calls what.

Every function gets the most frequent context that reaches it, with the call
path from that context as evidence:

- **per-step**: a module's `forward` and `__call__`, an autograd.Function's
  `forward`/`backward`, step-style methods (`step`, `*_step`, `decode`,
  `generate`, `execute_model`, `prepare_inputs`, and the hooks transformers'
  generation calls every token: `prepare_inputs_for_generation`,
  `_update_model_kwargs_for_generation`, `_reorder_cache`, ...), a data iterator's
  `__next__` and a dataset's `__getitem__`, a function handed to
  `torch.compile` or registered as a hook; and whatever they call, except
  through a CUDA-graph capture (`with torch.cuda.graph(g):` runs its Python
  once) or a lazy initialisation (`if self.x is None: self.x = ...`).
- **one-time**: constructors, module level and class bodies, weight loading,
  warm-up, CUDA-graph capture, set-up (`setup`, `build_*`, `init_*`,
  `register_*`), `main` and CLI commands, tests, functions cached per
  argument; and whatever they call that nothing per-step reaches. A
  function named for one of these stays one-time even where a per-step path
  calls it (a `load_weights` or a `build_cache` under `forward` is a
  first-call branch; a per-step constructor is rare and holds no model
  state): the labels err towards one-time, never towards per-step.
- Inside the loop of a training, evaluation or serving loop (`train`,
  `evaluate`, `*_loop`, `generate`, ...) and inside any `while True:` (a
  server's or a worker's loop) each iteration is a step: the sites in that
  loop, and what it calls, are per-step.
- Code that runs only while a cached attribute is missing or too small is
  one-time, in a per-step function too: the body of `if self.x is None:`
  (or `if not hasattr(self, "x"):`, a memo's `if key not in self.cache:`)
  that assigns it, and what follows a growth guard, `if self.pe is not None
  and self.pe.size(1) >= n: return`, that assigns `self.pe` (fairseq's and
  NeMo's `extend_pe`). A state's early return (`if self.state not in ...:
  return`) is no such guard. So is an optimizer's per-parameter state,
  filled under `if len(state) == 0:` (or `if not state:`) where `state =
  self.state[p]`: made on the parameter's first step and kept.
- **unreached**: no caller in the project ("public API" when its name is
  public), only tests as callers (a test's calls are not followed into the
  code it tests), and what only such functions call.

What a call reaches (call_graph.py): the function, and the wrapper its
project decorator returns (`@timed def f` runs `timed.wrapper`); the closure
a factory returns, where the result is called (`make_op(2.0)(x)`); a function
handed on, by name or through a local bound to it (`collate_fn=collate_fn`
after `collate_fn = fast_collate if p else default_collate`), as often as the
call that hands it; and an operator named by a string, through a function
that looks it up by its first parameter (`getattr(torch.ops.ns, name)`).

C++ functions (cpp_calls.py) take the label of the Python that calls their
binding, through the C++ calls between: `FusedAdam.step -> amp_C.multi_tensor_adam
-> multi_tensor_adam_cuda`. Their names decide nothing (a launcher named
`*_forward` runs as often as what calls its binding), but `main`. One that
no binding or C++ caller reaches is unreached ("C++ that no Python binding
or C++ caller in the project reaches"); a binding no Python calls is
public API.

Per-step roots are searched first, then one-time, then unreached, each
breadth-first, so every function is labelled once, by the shortest path from
the most frequent context: linear in the graph.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from optpatch.call_graph import MODULE, CallGraph, Definition, Edge, Node
from optpatch.cpp_calls import TEST_MACROS
from optpatch.areas import area_of
from optpatch.model import (CallStep, CodeArea, Finding, Frequency, FrequencyEvidence, FrequencySource, Impact,
                            Measurement)

MAX_PATH = 8  # call steps kept in the evidence: the root's end and the site's end of a longer path

_STEP = re.compile(
    r"^(step|_step|.+_step|decode|_?decode_.*|prefill.*|_?generate|generate_step|_?execute_model|run_model|"
    r"_?prepare_(model_)?inputs?|prepare_inputs_for_generation|_update_model_kwargs_for_generation|_reorder_cache|"
    r"_?sample|forward_.+|_forward.*|.+_forward|_?schedule)$"
)
# A loop in one of these runs a step per iteration: what it calls is per-step (a loop in __init__ is not).
_STEP_LOOPS = re.compile(
    r"^(_?train|_?train_(epoch|loop|model|one_epoch)|fit|_?evaluate.*|_?eval|.+_loop|_?run_training|serve|"
    r"_?generate.*|run_inference|predict|_?run_engine.*|_?benchmark.*|__call__)$"
)
_ONE_TIME_NAMES: tuple[tuple[FrequencySource, re.Pattern], ...] = (
    (FrequencySource.TEST, re.compile(r"^(test_.*|test|setUp|setUpClass|tearDown|tearDownClass)$")),
    (FrequencySource.INIT, re.compile(r"^(__init__|__post_init__|__new__|__init_subclass__|__set_name__)$")),
    (FrequencySource.LOADING, re.compile(
        r"^(from_pretrained|from_hf.*|_?load_(state_dict|from_state_dict|weights?|checkpoint|model|pretrained.*|"
        r"params|parameters|sharded.*|ckpt.*|hf.*)|_load_from_state_dict|load|_load)$")),
    (FrequencySource.WARMUP, re.compile(r"^.*warm_?up.*$", re.IGNORECASE)),
    (FrequencySource.CAPTURE, re.compile(r"^.*capture.*$")),
    (FrequencySource.ENTRY_POINT, re.compile(r"^(_?main|cli|run_cli|parse_args)$")),
    (FrequencySource.CHECKPOINT, re.compile(r"^_?save_.*(checkpoint|ckpt|state_dict|model|weights).*$")),
    (FrequencySource.SETUP, re.compile(
        r"^(_?setup.*|set_up|_?build|_?build_.+|_?init_.+|_?initiali[sz]e.*|_?reset_parameters|_init_weights|"
        r"_?register_(?!.*hook).+|_?configure_.+)$")),
)
# `_STEP`, then each of `_ONE_TIME_NAMES` in order, as one pattern of alternatives named by their source: the first
# that matches the whole name wins, as in a loop over them, for one call per function (NeMo: 20,000 a run).
_NAMED = re.compile("|".join(
    f"(?P<{source.name}>{'(?i:' + pattern.pattern + ')' if pattern.flags & re.IGNORECASE else pattern.pattern})"
    for source, pattern in ((FrequencySource.STEP_METHOD, _STEP), *_ONE_TIME_NAMES)
))
# Set-up names a per-step path may still call every step: `_build_attention_mask` under `get_batch` builds one a batch.
_SOFT = re.compile(r"^_?build_.+$")
_PER_STEP = frozenset({FrequencySource.FORWARD, FrequencySource.AUTOGRAD, FrequencySource.CALL_METHOD,
                       FrequencySource.STEP_METHOD, FrequencySource.COMPILED, FrequencySource.HOOK,
                       FrequencySource.STEP_LOOP})
_CACHES = ("cache", "lru_cache", "cached_property")
_COMMANDS = ("command", "group")  # click's and typer's decorators
_COMPILERS = ("compile",)  # torch.compile (torch.jit.script compiles, but says nothing of how often)


def source_of(definition: Definition, bases: tuple[str, ...] = ()) -> FrequencySource | None:
    """What the function is, from its name, decorators and class: a context of its own, or None (its callers')."""
    name = definition.name
    if name.startswith("test"):
        return FrequencySource.TEST
    if definition.decorators:
        decorators = [d.rsplit(".", 1)[-1] for d in definition.decorators]
        if any(d in _COMPILERS for d in decorators):
            return FrequencySource.COMPILED
        if any(d in _COMMANDS for d in decorators):
            return FrequencySource.ENTRY_POINT
        if any(d in _CACHES for d in decorators):
            return FrequencySource.CACHED
    if definition.cls is not None:
        autograd = any(base.rsplit(".", 1)[-1] == "Function" for base in bases)
        if name in ("forward", "backward") and autograd:
            return FrequencySource.AUTOGRAD
        if name == "forward":
            return FrequencySource.FORWARD
        if name == "__call__" and any(base.endswith(("Module", "Layer")) for base in bases):
            return FrequencySource.CALL_METHOD  # a module's; a pipeline's __call__ runs once a generation
        if name in ("__next__", "__getitem__"):  # a data iterator's or dataset's: a batch or a sample a step
            return FrequencySource.STEP_METHOD
    named = _NAMED.match(name)
    return FrequencySource[named.lastgroup] if named is not None else None


def _native_source(definition: Definition) -> FrequencySource | None:
    """A C++ function's own context: `main`, and a googletest body (`TEST(Suite, Name) { ... }`) only. Its name says
    nothing else of how often Python calls it (a launcher `*_forward` runs as often as what calls its binding), so
    the graph's paths decide."""
    if definition.name == "main":
        return FrequencySource.ENTRY_POINT
    return FrequencySource.TEST if definition.name in TEST_MACROS else None


def _orphan(graph: CallGraph, node: Node) -> FrequencySource:
    """Why a function nothing in the project calls is unreached."""
    if graph.exported(node):
        return FrequencySource.PUBLIC_API
    return FrequencySource.NOT_BOUND if graph.files[node.rel].native else FrequencySource.NO_CALLER


@dataclass(slots=True)
class _Label:
    frequency: Frequency
    source: FrequencySource
    arc: object | None = None  # the Arc it was reached by; None at a root
    root: bool = False  # a root by its own name, or by how it is called (then `arc` says where)


@dataclass
class Frequencies:
    """Every function's frequency with its evidence, for one run."""

    graph: CallGraph
    labels: dict[Node, _Label] = field(default_factory=dict)
    # caller -> the arcs `_spread` follows from it, in their order (`classify` finds them once for its three spreads)
    _followed: dict[Node, list] = field(default_factory=dict, init=False, repr=False)
    # rel -> whether the file is a test's: each file's area looked up once (NeMo: 65,000 arcs ask)
    _test_files: dict[str, bool] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def classify(cls, graph: CallGraph) -> "Frequencies":
        frequencies = cls(graph)
        bases: dict[tuple[str, str], tuple[str, ...]] = {}  # a class's bases: the first class of that name in its file
        for rel, calls in graph.files.items():
            for info in calls.classes:
                bases.setdefault((rel, info.qualname), info.bases)
        sources = {node: source_of(d, bases.get((node.rel, d.cls), ()) if d.cls is not None else ())
                   if not graph.files[node.rel].native else _native_source(d)
                   for node, d in graph.definitions.items()}
        _from_tests, followed = frequencies._from_tests, frequencies._followed
        arcs, tested = [], set()  # the arcs users run; the functions outside tests that a test calls
        for arc in (arc for arcs in graph.callees.values() for arc in arcs):
            if _from_tests(arc):
                tested.add(arc.callee)
                continue
            arcs.append(arc)
            if arc.edge is not Edge.CAPTURE and arc.edge is not Edge.LAZY:
                followed.setdefault(arc.caller, []).append(arc)
        handed = {Edge.COMPILED: FrequencySource.COMPILED, Edge.HOOK: FrequencySource.HOOK}
        def enterable(node: Node) -> bool:
            return sources.get(node) is None or bool(_SOFT.match(node.qualname.rsplit(".", 1)[-1]))

        per_step = [(node, source, None) for node, source in sources.items() if source in _PER_STEP]
        per_step += [(arc.callee, handed[arc.edge], arc) for arc in arcs if arc.edge in handed and enterable(arc.callee)]
        step_loops = {node: loops for node, d in graph.definitions.items() if (loops := _step_loops(d))}
        per_step += [(arc.callee, FrequencySource.STEP_LOOP, arc) for arc in arcs
                     if _in_loops(arc.line, step_loops.get(arc.caller, ())) and enterable(arc.callee)]
        frequencies._spread(Frequency.PER_STEP, per_step, enterable)
        once = [(node, source, None) for node, source in sources.items() if source is not None and source not in _PER_STEP]
        once += [(Node(rel, MODULE), FrequencySource.MODULE_LEVEL, None) for rel in graph.files]
        once += [(caller, FrequencySource.MODULE_LEVEL, None) for caller in graph.callees
                 if caller not in graph.definitions]  # class bodies
        once += [(arc.callee, FrequencySource.CAPTURE if arc.edge is Edge.CAPTURE else FrequencySource.LAZY, arc)
                 for arc in arcs if arc.edge in (Edge.CAPTURE, Edge.LAZY)]
        frequencies._spread(Frequency.ONE_TIME, once, lambda node: True)
        orphans = [(node, _orphan(graph, node), None) for node in graph.definitions if not graph.callers.get(node)]
        orphans += [(node, FrequencySource.TESTS_ONLY, None) for node in graph.definitions if node in tested]
        frequencies._spread(Frequency.UNREACHED, orphans, lambda node: True)
        labels = frequencies.labels
        for node in graph.definitions:  # in a cycle nothing outside calls
            if node not in labels:
                labels[node] = _Label(Frequency.UNREACHED, _orphan(graph, node))
        return frequencies

    def _from_tests(self, arc) -> bool:
        """A call from a test file into a file that is not one."""
        return self._is_test(arc.caller.rel) and not self._is_test(arc.callee.rel)

    def _is_test(self, rel: str) -> bool:
        known = self._test_files.get(rel)
        if known is None:
            known = self._test_files[rel] = area_of(rel) is CodeArea.TESTS
        return known

    def _spread(self, frequency: Frequency, roots, enterable) -> None:
        """Label the roots, then breadth-first whatever they call that is still unlabelled and enterable.

        A test's calls are not followed into the code it tests: a library
        function that only tests call has no caller users run.
        """
        queue = []
        for node, source, arc in roots:
            if node not in self.labels:
                self.labels[node] = _Label(frequency, source, arc, root=True)
                queue.append(node)
        labels, followed = self.labels, self._followed
        for node in queue:  # grows as it goes: each node is queued once
            source = labels[node].source
            for arc in followed.get(node, ()):  # neither a capture's nor a lazy set-up's, nor a test's into the code
                if arc.callee in labels or not enterable(arc.callee):
                    continue
                labels[arc.callee] = _Label(frequency, source, arc)
                queue.append(arc.callee)

    def evidence(self, node: Node) -> FrequencyEvidence | None:
        label = self.labels.get(node)
        if label is None:
            return None
        return FrequencyEvidence(label.frequency, label.source, self._path(node))

    def _path(self, node: Node) -> tuple[CallStep, ...]:
        """From the root context down to NODE: each function and the line of its call to the next; NODE at its def."""
        steps = [CallStep(node.qualname, self._line(node), node.rel)]
        seen = {node}
        label = self.labels[node]
        while label.arc is not None and len(steps) < 4 * MAX_PATH:
            caller = label.arc.caller
            steps.append(CallStep(caller.qualname, label.arc.line, caller.rel))
            if label.root or caller in seen or caller not in self.labels:
                break  # a root by how it is called: the path starts at that call
            seen.add(caller)
            label = self.labels[caller]
        steps.reverse()
        if len(steps) > MAX_PATH:
            steps = steps[: MAX_PATH // 2] + steps[-MAX_PATH // 2 :]
        return tuple(steps)

    def _line(self, node: Node) -> int:
        definition = self.graph.definitions.get(node)
        return definition.line if definition is not None else 0

    def of_file(self, rel: str, measured: "FileMeasurements | None" = None) -> "FileFrequencies | None":
        """What `settle` needs to weigh one file's findings; None for a file outside the call graph."""
        calls = self.graph.files.get(rel)
        if calls is None:
            return None
        functions = tuple(
            FunctionFrequency(d.line, d.end_line, d.first_line, self.evidence(Node(rel, d.qualname)), _step_loops(d),
                              d.lazy) for d in calls.definitions
        )
        module = FrequencyEvidence(Frequency.ONE_TIME, FrequencySource.MODULE_LEVEL, (CallStep(MODULE, 0, rel),))
        return FileFrequencies(functions, module, measured)


def _in_loops(line: int, loops: tuple[tuple[int, int], ...]) -> bool:
    return any(start <= line <= end for start, end in loops)


def _step_loops(definition: Definition) -> tuple[tuple[int, int], ...]:
    """The lines of the loops in which a call runs once a step: the outermost loops of a training, evaluation or
    serving loop's function, and any `while True:` loop (a server's or a worker's)."""
    return (definition.loops if definition.loops and _STEP_LOOPS.match(definition.name) else ()) + definition.forever


# -- weighing a finding -------------------------------------------------------------------------


def weighed(size: Impact, frequency: Frequency) -> Impact:
    """Size class times frequency: a per-step site keeps its size; one-time and unreached code is low at most."""
    if frequency is Frequency.PER_STEP or size is Impact.NONE:
        return size
    return Impact.LOW


HIGH_SHARE = 0.01  # of the profiled time: a site over 1% is high, over 0.1% medium
MEDIUM_SHARE = 0.001


@dataclass(frozen=True)
class FileMeasurements:
    """A profile's times in one file (profile_trace.py): by the first line of a function, the ops it ran."""

    by_function: dict[int, dict[str, tuple[int, float, int]]]  # first line -> op -> (calls, microseconds, steps)
    ops: dict[str, tuple[str, ...]]  # rule code -> the ops its fix saves
    total_us: float
    profile: str
    sampled: bool = False  # py-spy: time by line, no call counts


class FunctionFrequency(NamedTuple):
    """One function of a file, with what weighs the findings in it."""

    line: int  # of its `def`
    end_line: int
    first_line: int  # of its first decorator, or its `def`: where a profiler's frame names it
    evidence: FrequencyEvidence | None
    step_loops: tuple[tuple[int, int], ...]  # the lines of its loops when each iteration is a step
    lazy: tuple[tuple[int, int], ...]  # the lines that run only while a cached attribute is missing or too small


@dataclass(frozen=True)
class FileFrequencies:
    """One file's functions, each with its frequency evidence; what `settle` weighs the findings with."""

    functions: tuple[FunctionFrequency, ...]
    module: FrequencyEvidence
    measured: FileMeasurements | None = None

    def weigh(self, finding: Finding) -> Finding:
        """The finding with its frequency and its honest impact; its own impact becomes its size class."""
        enclosing = self._enclosing(finding.line)
        evidence = self.module if enclosing is None else enclosing.evidence
        if evidence is None:
            return finding
        if evidence.path:
            last = evidence.path[-1]
            evidence = replace(evidence, path=evidence.path[:-1] + (replace(last, line=finding.line),))
        in_a_step_loop = enclosing is not None and _in_loops(finding.line, enclosing.step_loops)
        if in_a_step_loop and evidence.frequency is not Frequency.PER_STEP:
            evidence = FrequencyEvidence(Frequency.PER_STEP, FrequencySource.STEP_LOOP, evidence.path[-1:])
        if enclosing is not None and evidence.frequency is Frequency.PER_STEP and _in_loops(finding.line, enclosing.lazy):
            evidence = FrequencyEvidence(Frequency.ONE_TIME, FrequencySource.LAZY, evidence.path)
        size = finding.impact if finding.size is None else finding.size
        measurement = self._measured(finding, enclosing)
        if measurement is None:
            return replace(finding, size=size, frequency=evidence, impact=weighed(size, evidence.frequency))
        reading, steps = measurement
        frequency = Frequency.PER_STEP if steps > 1 else Frequency.ONE_TIME
        measured = FrequencyEvidence(frequency, FrequencySource.MEASURED, evidence.path, static=evidence.frequency,
                                     measured=reading)
        share = reading.microseconds / self.measured.total_us if self.measured.total_us else 0.0
        by_time = Impact.HIGH if share >= HIGH_SHARE else Impact.MEDIUM if share >= MEDIUM_SHARE else Impact.LOW
        return replace(finding, size=size, frequency=measured,
                       impact=weighed(by_time, frequency) if size is not Impact.NONE else Impact.NONE)

    def _enclosing(self, line: int) -> FunctionFrequency | None:
        best = None
        for function in self.functions:
            if function.line <= line <= function.end_line and (best is None or function.line >= best.line):
                best = function
        return best

    def _measured(self, finding: Finding, enclosing) -> tuple[Measurement, int] | None:
        """The profile's calls and time in the finding's ops at its function (at its line, for a sampled profile)."""
        measured = self.measured
        if measured is None:
            return None
        ops = measured.ops.get(finding.code, ())
        key = finding.line if measured.sampled else (enclosing.first_line if enclosing is not None else 0)
        times = measured.by_function.get(key, {})
        wanted = [op for op in ops if op in times] if not measured.sampled else list(times)
        if not wanted:
            return None
        calls = max(times[op][0] for op in wanted)
        microseconds = sum(times[op][1] for op in wanted)
        steps = max(times[op][2] for op in wanted)
        return Measurement(None if measured.sampled else calls, microseconds, tuple(wanted), measured.profile), steps
