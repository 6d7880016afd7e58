"""Frequency from the project's call graph (call_graph.py, frequency.py), and the impact it weighs.

The fixture package tests/fixtures/frequency/minillm marks every site with
the frequency a reader gives it from its callers (`# expect: per-step`).
"""

from __future__ import annotations

import json
import re
import sys
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, run_cli
from optpatch import call_graph, engine
from optpatch.config import Settings
from optpatch.discovery import discover
from optpatch.model import Frequency, FrequencySource, Impact
from optpatch.policy import FixPolicy

PROJECT = FIXTURES / "frequency" / "minillm"
_EXPECT = re.compile(r"# expect: (per-step|one-time|unreached)")


def expected(root: Path) -> dict[tuple[str, int], Frequency]:
    marks = {}
    for path in sorted(root.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if match := _EXPECT.search(line):
                marks[path.relative_to(root).as_posix(), number] = Frequency(match[1])
    return marks


def frequencies(result) -> dict[tuple[str, int], Frequency]:
    return {(f.path, f.line): f.frequency.frequency for f in result.findings if f.frequency is not None}


@pytest.fixture
def project(tmp_path) -> Path:
    return Path(shutil.copytree(PROJECT, tmp_path / "minillm"))


def test_every_site_has_the_frequency_its_callers_give_it(project):
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    assert frequencies(result) == expected(project)
    for finding in result.findings:
        if finding.frequency.frequency is not Frequency.PER_STEP:
            assert finding.impact.rank <= Impact.LOW.rank, finding.location()


def test_the_evidence_is_the_call_path_across_files(project):
    result = engine.run(project, Settings(), FixPolicy(), use_cache=False)
    rope = next(f for f in result.findings if (f.path, f.line) == ("rope.py", 5))
    assert [(step.path, step.function) for step in rope.frequency.path] == [
        ("model.py", "Attention.forward"), ("model.py", "Attention._rotate"), ("rope.py", "apply_rope")]
    assert [step.line for step in rope.frequency.path] == [17, 25, 5]
    assert rope.frequency.describe("rope.py") == (
        "per-step (forward of a module): model.py:Attention.forward (L17) -> model.py:Attention._rotate (L25) -> "
        "apply_rope (L5)")
    public = next(f for f in result.findings if (f.path, f.line) == ("rope.py", 17))
    assert public.size is Impact.MEDIUM and public.impact is Impact.LOW
    assert "public API, no caller in the project" in public.frequency.describe("rope.py")


def test_a_caller_edited_changes_the_frequency_of_a_cached_file(project, tmp_path, monkeypatch):
    """The frequency is decided per run: rope.py's analysis comes from the cache, its callers' edit still counts."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    first = engine.run(project, Settings(), FixPolicy(), jobs=1)
    assert frequencies(first)["rope.py", 5] is Frequency.PER_STEP
    model = project / "model.py"
    model.write_text(model.read_text().replace("return rope.apply_rope(x)", "return x"))
    indexed = []
    monkeypatch.setattr(call_graph, "index_tree", lambda rel, tree: indexed.append(rel) or _index(rel, tree))
    second = engine.run(project, Settings(), FixPolicy(), jobs=1)
    assert indexed == ["model.py"]  # every other file's part of the graph came from its cached record
    assert frequencies(second)["rope.py", 5] is Frequency.UNREACHED


_index = call_graph.index_tree


def test_a_narrowed_run_still_reads_the_callers_in_the_rest_of_the_project(project, tmp_path, monkeypatch):
    """As pre-commit runs: the other files' parts of the graph are kept, and the next run reads none again."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    indexed = []
    monkeypatch.setattr(call_graph, "index_tree", lambda rel, tree: indexed.append(rel) or _index(rel, tree))
    result = engine.run(project, Settings(), FixPolicy(), paths=[project / "rope.py"], jobs=1)
    assert frequencies(result)["rope.py", 5] is Frequency.PER_STEP
    assert sorted(indexed) == ["__init__.py", "model.py", "rope.py", "runner.py"]
    indexed.clear()
    again = engine.run(project, Settings(), FixPolicy(), paths=[project / "model.py"], jobs=1)
    # model.py is analysed now for the first time: its index comes with its analysis, from the same `ast`; the others'
    # were kept by the first run
    assert indexed == ["model.py"]
    assert frequencies(again)["model.py", 20] is Frequency.ONE_TIME
    full = engine.run(project, Settings(), FixPolicy(), jobs=1)
    assert frequencies(full) == expected(project)  # a record holding only the index is analysed when its file is


def test_a_run_named_for_the_root_itself_walks_the_tree_once(project, monkeypatch):
    """`optpatch check .` names the root: not a narrowed run, whose call graph walks the project again."""
    walks = []
    monkeypatch.setattr(engine, "discover", lambda *args: walks.append(args[2]) or discover(*args))
    result = engine.run(project, Settings(), FixPolicy(), paths=[project], jobs=1, use_cache=False)
    assert walks == [None]
    assert frequencies(result) == expected(project)
    walks.clear()
    engine.run(project, Settings(), FixPolicy(), paths=[project / "rope.py"], jobs=1, use_cache=False)
    assert walks == [[project / "rope.py"], None]  # narrowed: the rest of the project is walked for its callers


def test_min_impact_hides_and_leaves_unfixed_the_lower_impacts_and_the_report_ranks_them(project):
    shown = run_cli("check", str(project), "--no-cache", "--output-format", "concise", "--exit-zero")
    lines = shown.stdout.splitlines()
    order = [line.split(": OPT")[0] for line in lines[: lines.index("")]]
    assert order[:2] == ["model.py:51:15", "rope.py:5:15"]  # the two medium per-step fixes first, in path order
    assert re.search(r"impact: +2 medium, 8 low", shown.stdout)
    diff = run_cli("check", str(project), "--no-cache", "--min-impact", "medium", "--diff")
    changed = [line for line in diff.stdout.splitlines() if line.startswith("+") and "torch.empty" in line]
    assert len(changed) == 2
    report = json.loads(run_cli("check", str(project), "--no-cache", "--min-impact", "medium", "--output-format",
                                "json", "--exit-zero").stdout)
    assert [(f["path"], f["line"]) for f in report["findings"]] == [("model.py", 51), ("rope.py", 5)]
    assert report["summary"]["fixes_by_impact"] == {"high": 0, "medium": 2, "low": 0, "none": 0}
    assert report["findings"][1]["frequency"]["path"][0] == {"function": "Attention.forward", "path": "model.py",
                                                             "line": 17}


def test_explain_gives_the_call_path():
    shown = " ".join(line.strip() for line in run_cli("explain", f"{PROJECT}:runner.py:22", "--no-cache").stdout.splitlines())
    assert "Runs: one-time (CUDA-graph capture): Runner.step (L18) -> Runner._graph_inputs (L22)" in shown


def test_the_index_resolves_imports_methods_and_attributes():
    files = {rel: call_graph.index_file(rel, (PROJECT / rel).read_text()) for rel in
             ("__init__.py", "model.py", "rope.py", "runner.py")}
    graph = call_graph.CallGraph.build(files)
    arcs = {(arc.caller.qualname, arc.callee.rel, arc.callee.qualname, arc.edge.value)
            for arcs in graph.callees.values() for arc in arcs}
    assert ("Attention.__init__", "rope.py", "build_rope_cache", "call") in arcs  # from .rope import name
    assert ("Attention._rotate", "rope.py", "apply_rope", "call") in arcs  # from . import module; module.name
    assert ("Attention.forward", "model.py", "Attention._allocate", "lazy") in arcs  # if self.x is None: self.x = ...
    assert ("Block.forward", "model.py", "Attention.forward", "call") in arcs  # self.attn = Attention(); self.attn(x)
    assert ("Runner.__init__", "model.py", "LlamaModel.__init__", "call") in arcs  # a class called
    assert ("Runner.step", "runner.py", "Runner._graph_inputs", "capture") in arcs
    assert ("<module>", "runner.py", "_fused_update", "compiled") in arcs


STORED = """\
import torch
from torch import nn


def gumbel_noise(t):
    noise = torch.zeros(t.shape, device=t.device)  # expect: per-step
    noise.copy_(t)
    return noise


def gelu_table(t):
    table = torch.zeros(t.shape, device=t.device)  # expect: per-step
    table.copy_(t)
    return table


def made_elsewhere(t):
    out = torch.zeros(t.shape, device=t.device)  # expect: unreached
    out.copy_(t)
    return out


optional_kernel = None  # `from fla.ops import fused_kernel` where the package is installed


def reference_kernel(t):
    out = torch.zeros(t.shape, device=t.device)  # expect: per-step
    out.copy_(t)
    return out


class Quantizer(nn.Module):
    def __init__(self, sample=gumbel_noise, act=None, fused=False):
        super().__init__()
        assert callable(sample)  # looks at the function, does not call it
        self.sample = sample  # a parameter: its default is what it holds, unless a caller passes another
        self.act = gelu_table
        self.run = self._fused if fused else self._plain
        self.other = act  # a parameter without a default: not known
        maker = made_elsewhere
        self.made = maker  # a local: not known either
        self.kernel = optional_kernel or reference_kernel  # the fallback, when the fused kernel is missing

    def _fused(self, t):
        out = torch.zeros(t.shape, device=t.device)  # expect: per-step
        out.copy_(t)
        return out

    def _plain(self, t):
        return t

    def forward(self, t):
        return self.sample(t) + self.act(t) + self.run(t) + self.other(t) + self.made(t) + self.kernel(t)
"""


def test_a_function_a_method_stores_runs_where_the_attribute_is_called(tmp_path):
    # vector-quantize-pytorch stores `gumbel_sample` (a parameter's default) in `self.gumbel_sample` and calls it
    # in forward: its fix was "one-time", from an `assert callable(...)` in __init__ read as a call.
    (tmp_path / "quantize.py").write_text(STORED)
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    assert frequencies(result) == expected(tmp_path)
    noise = next(f for f in result.findings if f.line == 6)
    assert [step.function for step in noise.frequency.path] == ["Quantizer.forward", "gumbel_noise"]


GROWN = """\
import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.pe = None
        self.scratch = None

    def extend_pe(self, x):
        if self.pe is not None:
            if self.pe.size(1) >= x.size(1):
                return
        pe = torch.zeros(x.size(1), self.dim, device=x.device)  # expect: one-time
        pe.copy_(x[0])
        self.pe = pe

    def forward(self, x):
        self.extend_pe(x)
        if self.scratch is None:
            scratch = torch.zeros(x.shape, device=x.device)  # expect: one-time
            scratch.copy_(x)
            self.scratch = scratch
        if x.size(0) > 1:
            return x
        out = torch.zeros(x.shape, device=x.device)  # expect: per-step
        out.copy_(x)
        return out + self.pe[:, : x.size(1)]
"""


STATE = """\
import torch


class Adam(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros(p.shape, device=p.device)  # expect: one-time
                    state["exp_avg"].copy_(p)
                scratch = {}
                if not scratch:
                    buffer = torch.zeros(p.shape, device=p.device)  # expect: per-step
                    buffer.copy_(p)
                    scratch["b"] = buffer
"""


def test_an_optimizer_s_state_made_on_its_first_step_is_one_time(tmp_path):
    # timm's nvnovograd and every Adam-like optimizer: `state = self.state[p]; if len(state) == 0:` fills the
    # parameter's state once; a local dict filled under `if not scratch:` is made again every call.
    (tmp_path / "adam.py").write_text(STATE)
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    assert frequencies(result) == expected(tmp_path)


def test_code_that_runs_only_while_a_cached_attribute_is_missing_or_too_small_is_one_time(tmp_path):
    # fairseq's and NeMo's extend_pe: `if self.pe is not None and self.pe.size(1) >= n: return`, then build a longer
    # self.pe. forward calls it every step; its allocation runs only when a longer sequence arrives.
    (tmp_path / "encoding.py").write_text(GROWN)
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    assert frequencies(result) == expected(tmp_path)
    grown = next(f for f in result.findings if f.line == 16)
    assert grown.frequency.source is FrequencySource.LAZY
    assert [step.function for step in grown.frequency.path] == ["PositionalEncoding.forward", "PositionalEncoding.extend_pe"]
    assert "one-time (only while a cached attribute is missing or too small)" in grown.frequency.describe("encoding.py")


def test_a_function_handed_on_by_keyword_is_called_by_the_callee():
    # timm hands `checkpoint_filter_fn` as `pretrained_filter_fn=`, NeMo its collate functions as `collate_fn=`.
    text = ("from torch.utils.data import DataLoader\n\n\ndef collate(batch):\n    return batch\n\n\n"
            "def loader(ds):\n    return DataLoader(ds, batch_size=2, collate_fn=collate, **extra)\n")
    files = {"data.py": call_graph.index_file("data.py", text)}
    arcs = {(arc.caller.qualname, arc.callee.qualname) for arcs in call_graph.CallGraph.build(files).callees.values()
            for arc in arcs}
    assert ("loader", "collate") in arcs


def test_a_function_bound_to_a_local_before_it_is_handed_on_is_called_by_the_callee():
    # timm's create_loader: `collate_fn = fast_collate if use_prefetcher else default_collate`, then `collate_fn=`.
    text = ("import torch\nfrom torch.utils.data import DataLoader\n\n\ndef fast_collate(batch):\n    return batch\n\n\n"
            "def loader(ds, prefetch, collate_fn=None):\n    if collate_fn is None:\n"
            "        collate_fn = fast_collate if prefetch else torch.utils.data.default_collate\n"
            "    kept = collate_fn\n    other = torch.zeros(1)\n"
            "    return DataLoader(ds, collate_fn=collate_fn, sampler=other)\n")
    files = {"data.py": call_graph.index_file("data.py", text)}
    arcs = {(arc.caller.qualname, arc.callee.qualname) for arcs in call_graph.CallGraph.build(files).callees.values()
            for arc in arcs}
    assert ("loader", "fast_collate") in arcs
    handed = {site.callee for site in files["data.py"].calls if site.handed}
    assert handed == {"ds", "collate_fn", "fast_collate", "torch.utils.data.default_collate", "other"}, handed


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs syntax this Python's `ast` cannot read")
def test_a_python_file_the_call_graph_cannot_read_says_so(tmp_path):
    # Python 3.12's `type` statement: libcst reads it, this Python's `ast` (which the call graph reads) does not.
    (tmp_path / "new_syntax.py").write_text(
        "import torch\n\ntype Alias = list[int]\n\n\ndef f(n, device):\n    x = torch.zeros(n)\n    x.fill_(1.0)\n"
        "    return x.to(device)\n")
    shown = " ".join(run_cli("check", str(tmp_path), "--no-cache", "--exit-zero").stdout.split())
    assert "OPT101 zeros-to-empty [safe, fixable]" in shown
    assert "runs: not known: this file is not in the project's call graph" in shown


WRAPPED = """\
import functools

import torch


def with_buffer(fn):
    @functools.wraps(fn)
    def wrapper(x):
        buf = torch.zeros(x.shape[0])
        buf.copy_(x)
        return fn(buf)

    return wrapper


def traced(name):
    def decorator(fn):
        def inner(x):
            marks = torch.zeros(1)
            marks.fill_(1.0)
            return fn(x) + marks

        return inner

    return decorator


def make_op(scale):
    def op(x):
        out = torch.zeros(x.shape)
        out.copy_(x * scale)
        return out

    return op


def unused_factory(scale):
    def never(x):
        idle = torch.zeros(x.shape)
        idle.copy_(x)
        return idle

    return never


def copy_doc(source):
    def decorator(target):
        flags = torch.zeros(1)
        flags.fill_(0.0)
        target.flags = flags
        return target

    return decorator


@with_buffer
def double(x):
    return x * 2


@traced("half")
@copy_doc(double)
def half(x):
    return x / 2


class Model(torch.nn.Module):
    def forward(self, x):
        return double(x) + half(x) + make_op(2.0)(x) + unused_factory(1.0) is None
"""


def test_a_decorators_wrapper_and_a_factorys_closure_run_where_their_result_is_called(tmp_path):
    # `@with_buffer def double`: calling `double` runs `wrapper`; `make_op(2.0)(x)` runs the `op` it returns; a
    # decorator factory's `inner` runs on each call of what it decorates, not its `decorator`; a factory whose result
    # is not called
    # (`unused_factory(1.0)`) runs nothing it returns.
    (tmp_path / "ops.py").write_text(WRAPPED)
    result = engine.run(tmp_path, Settings(), FixPolicy(), use_cache=False)
    labels = {f.line: (f.frequency.frequency, [step.function for step in f.frequency.path]) for f in result.findings}
    assert labels[9] == (Frequency.PER_STEP, ["Model.forward", "with_buffer.wrapper"]), labels
    assert labels[19] == (Frequency.PER_STEP, ["Model.forward", "traced.decorator.inner"]), labels
    assert labels[30] == (Frequency.PER_STEP, ["Model.forward", "make_op.op"]), labels
    assert labels[39][0] is Frequency.UNREACHED, labels
    # `@copy_doc(double)` runs `decorator` once, as the module is imported; it returns no wrapper: a call of
    # `half` runs nothing of it
    assert labels[48][0] is not Frequency.PER_STEP, labels


SET_UP_NAMES = """\
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.ids = torch.zeros(1048576).cuda()  # one-time: low, its size kept

    def prepare_inputs_for_generation(self, x):
        return torch.zeros(1048576).cuda() + x  # per-step: its size

    def make_causal_mask(self, n):
        return torch.ones(1048576).cuda()[:n]

    def forward(self, x):
        return self.prepare_inputs_for_generation(x) + self.make_causal_mask(4)
"""


def test_a_set_up_name_on_a_per_step_path_keeps_its_sites_size():
    # ktransformers' `prepare_inputs_for_generation` (runs every decoding step) read as set-up by its name, inside
    # the rule: its fix was low whatever the call graph said. The graph's frequency now weighs the rule's class.
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "decoder.py").write_text(SET_UP_NAMES)
        result = engine.run(Path(folder), Settings(), FixPolicy(), use_cache=False)
    by_line = {f.line: f for f in result.findings if f.code == "OPT102"}
    assert by_line[8].frequency.frequency is Frequency.ONE_TIME
    assert (by_line[8].impact, by_line[8].size) == (Impact.LOW, Impact.HIGH)
    for line in (11, 14):
        assert by_line[line].frequency.frequency is Frequency.PER_STEP, line
        assert (by_line[line].impact, by_line[line].size) == (Impact.HIGH, Impact.HIGH), line


def test_a_set_up_site_outside_the_call_graph_is_low_with_its_size_kept():
    from optpatch.passes import analyse_file
    from optpatch.rule import load_rules
    from optpatch.source import SourceFile

    source = SourceFile("decoder.py", Path("decoder.py"), SET_UP_NAMES.encode(), SET_UP_NAMES, "utf-8", False, "python")
    result = analyse_file(source, load_rules(), Settings(), FixPolicy())
    by_line = {d.finding.line: d.finding for d in result.decided if d.finding.code == "OPT102"}
    for line in (8, 11, 14):  # set-up names all, read inside their functions: low, the rule's class kept
        assert by_line[line].frequency is None
        assert (by_line[line].impact, by_line[line].size) == (Impact.LOW, Impact.HIGH), line
