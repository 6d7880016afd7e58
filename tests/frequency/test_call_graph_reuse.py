"""A call graph built from the last run's resolution (call_graph.Resolution) must be the graph a fresh build
makes, and must resolve again only the files whose bodies changed: that is all it is for."""

from __future__ import annotations

import hashlib

from optpatch import call_graph, engine
from optpatch.config import ConfigResolver, Settings
from optpatch.policy import FixPolicy

LAYERS = (
    "import torch\nfrom .ops import scale, shift\n\n"
    "class Layer(torch.nn.Module):\n    def forward(self, x):\n        return scale(x) + shift(x)\n"
)
OPS = "def scale(x):\n    return x * 2\n\n\ndef shift(x):\n    return x + 1\n"
MODEL = (
    "from .layers import Layer\n\nclass Model:\n    def __init__(self):\n        self.layer = Layer()\n\n"
    "    def step(self, x):\n        return self.layer(x)\n"
)


def indexed(texts: dict[str, str]) -> tuple[dict, dict]:
    files = {rel: call_graph.index_file(rel, text) for rel, text in texts.items()}
    return files, {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in texts.items()}


def arcs(graph: call_graph.CallGraph) -> dict:
    return {"callers": graph.callers, "callees": graph.callees, "definitions": graph.definitions}


def rebuilt(before: dict[str, str], after: dict[str, str]) -> call_graph.CallGraph:
    """AFTER's graph, built from BEFORE's resolution; it must equal AFTER's fresh build."""
    files, digests = indexed(before)
    previous = call_graph.CallGraph.build(files, digests).resolution
    files, digests = indexed(after)
    graph = call_graph.CallGraph.build(files, digests, previous)
    assert arcs(graph) == arcs(call_graph.CallGraph.build(files))
    return graph


def test_a_body_changed_in_one_file_resolves_that_file_alone():
    before = {"pkg/layers.py": LAYERS, "pkg/ops.py": OPS, "pkg/model.py": MODEL}
    edited = LAYERS.replace("return scale(x) + shift(x)", "y = shift(x)\n        return scale(y)")
    graph = rebuilt(before, {**before, "pkg/layers.py": "# moved down a line\n" + edited})
    assert graph.resolved_files == 1


def test_an_unchanged_project_resolves_nothing():
    project = {"pkg/layers.py": LAYERS, "pkg/ops.py": OPS, "pkg/model.py": MODEL}
    assert rebuilt(project, project).resolved_files == 0


def test_a_changed_interface_resolves_every_file_again():
    before = {"pkg/layers.py": LAYERS, "pkg/ops.py": OPS, "pkg/model.py": MODEL}
    # `shift` renamed: layers.py's call to it, unchanged text, no longer resolves; an arc kept from before would lie.
    renamed = {**before, "pkg/ops.py": OPS.replace("def shift", "def shifted")}
    assert rebuilt(before, renamed).resolved_files == 3
    based = {**before, "pkg/model.py": MODEL.replace("class Model:", "class Model(Layer):")}
    assert rebuilt(before, based).resolved_files == 3


def test_a_file_added_or_removed_resolves_every_file_again():
    before = {"pkg/layers.py": LAYERS, "pkg/ops.py": OPS, "pkg/model.py": MODEL}
    assert rebuilt(before, {**before, "pkg/extra.py": OPS}).resolved_files == 4
    assert rebuilt(before, {rel: before[rel] for rel in ("pkg/layers.py", "pkg/ops.py")}).resolved_files == 2


def test_a_narrowed_run_reuses_the_cached_resolution(tmp_path, monkeypatch):
    # A pre-commit run after an edit of one body resolves that file's calls again, not the project's; its
    # frequencies are those of a run without the cache.
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    layers = LAYERS.replace("import scale, shift", "import scale, shift, table")
    ops = OPS + "\n\ndef table(n):\n    import torch\n    t = torch.zeros(n)\n    t.fill_(1)\n    return t\n"
    for rel, text in {"pkg/__init__.py": "", "pkg/layers.py": layers, "pkg/ops.py": ops, "pkg/model.py": MODEL}.items():
        (root / rel).write_text(text)
    settings = ConfigResolver.fixed(Settings())
    engine.run(root, settings, FixPolicy(), jobs=1)  # the whole project: builds and keeps the resolution
    (root / "pkg" / "layers.py").write_text("# edited\n" + layers.replace("scale(x) + shift(x)", "table(4) + x"))
    built = []
    build = call_graph.CallGraph.build
    monkeypatch.setattr(call_graph.CallGraph, "build",
                        classmethod(lambda cls, *args: built.append(graph := build(*args)) or graph))
    paths = [root / "pkg" / "ops.py", root / "pkg" / "layers.py"]
    cached = engine.run(root, settings, FixPolicy(), paths=paths, jobs=1)
    fresh = engine.run(root, settings, FixPolicy(), paths=paths, jobs=1, use_cache=False)
    assert [graph.resolved_files for graph in built] == [1, 4]
    (finding,) = [f for result in cached.files for f in result.findings]
    assert finding.frequency.frequency.value == "per-step"  # Layer.forward -> table, through the edited body
    assert [f.frequency for r in cached.files for f in r.findings] == [f.frequency for r in fresh.files for f in r.findings]


def test_a_file_s_call_sites_come_back_from_the_cache_undecoded_until_its_calls_are_resolved():
    # The result cache loads every file's part of the call graph on every run; a reused resolution reads no
    # unchanged file's call sites, so they stay one string of bytes (NeMo: 60% of the pack).
    import pickle

    before = {"pkg/layers.py": LAYERS, "pkg/ops.py": OPS, "pkg/model.py": MODEL}
    files, digests = indexed(before)
    previous = call_graph.CallGraph.build(files, digests).resolution
    cached = pickle.loads(pickle.dumps(files))
    assert cached == files and all(calls.calls == files[rel].calls for rel, calls in cached.items())
    cached = pickle.loads(pickle.dumps(files))
    edited = LAYERS.replace("return scale(x) + shift(x)", "return shift(scale(x))")
    changed, changed_digests = indexed({"pkg/layers.py": edited})
    project = {**cached, **changed}
    graph = call_graph.CallGraph.build(project, {**digests, **changed_digests}, previous)
    assert graph.resolved_files == 1
    assert [rel for rel, calls in project.items() if type(calls.sites) is bytes] == ["pkg/ops.py", "pkg/model.py"]
    assert pickle.loads(pickle.dumps(cached["pkg/model.py"])) == files["pkg/model.py"]  # pickled again as it came
