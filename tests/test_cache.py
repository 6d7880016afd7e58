"""The result cache (src/optpatch/cache.py): same results as a cold run, invalidated by what the analysis depends on,
and never carrying a decision (tiers, --unsafe-fixes, validation, narrowing) from one run to another."""

import dataclasses
import sys

import pytest

from conftest import REPO_ROOT, run_cli
from optpatch import cache as result_cache
from optpatch import engine, passes
from optpatch.analysis_inputs import FileInput
from optpatch.config import Settings
from optpatch.passes import Analysis, FileRecord
from optpatch.policy import FixPolicy
from optpatch.rule_facts import rule_facts

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from synthetic_tree import write_tree  # noqa: E402


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "repo"
    write_tree(root, files=40, seed=3)
    return root


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(directory))
    return directory


class AnalysisCounter:
    """Counts the texts the engine analyses for real (cache misses): first passes and later ones."""

    def __init__(self, monkeypatch):
        self.files: list[str] = []
        original = passes.analyse_text

        def counting(source, *args, **kwargs):
            self.files.append(source.rel)
            return original(source, *args, **kwargs)

        monkeypatch.setattr(engine, "analyse_text", counting)
        monkeypatch.setattr(passes, "analyse_text", counting)


def _run(root, settings=Settings(), policy=FixPolicy(), use_cache=True, filters=()):
    return engine.run(root, settings, policy, jobs=1, use_cache=use_cache, filters=filters)


def _outcome(result) -> tuple:
    """Everything a report or a patch is made from."""
    return (
        [(dataclasses.astuple(f), decision) for f, decision in result.decided],
        result.changes,
        [(e.path, e.reason) for e in result.errors],
        [(r.rel, r.skipped, r.suppressed, r.unused_suppressions) for r in result.files],
    )


def test_warm_run_gives_the_cold_results_without_analysing(tree, monkeypatch):
    cold = _run(tree, use_cache=False)
    assert cold.changes and cold.findings, "the synthetic tree should hold fixes"
    first = _run(tree)
    counter = AnalysisCounter(monkeypatch)
    warm = _run(tree)
    assert counter.files == []
    assert _outcome(first) == _outcome(cold)
    assert _outcome(warm) == _outcome(cold)


def test_a_changed_file_is_analysed_again_and_only_it(tree, monkeypatch):
    _run(tree)
    changed = next(p for p in sorted(tree.rglob("*.py")) if "torch.zeros_like" in p.read_text())
    changed.write_text(changed.read_text().replace("buf.copy_(y)", "buf.add_(y)"))
    counter = AnalysisCounter(monkeypatch)
    warm = _run(tree)
    assert counter.files == [changed.relative_to(tree).as_posix()]
    assert _outcome(warm) == _outcome(_run(tree, use_cache=False))


def test_a_new_rule_version_invalidates_every_result(tree, monkeypatch):
    _run(tree)
    bumped = tuple(dataclasses.replace(facts, version=facts.version + 1) for facts in rule_facts())
    monkeypatch.setattr(engine, "rule_facts", lambda: bumped)
    counter = AnalysisCounter(monkeypatch)
    _run(tree)
    assert len(counter.files) > 0
    counter.files.clear()
    _run(tree)
    assert counter.files == []


@pytest.mark.parametrize(
    "settings",
    [Settings(per_file_ignores=(("synthetic/pkg0/**", ("OPT101",)),)), Settings(select=("OPT101",))],
    ids=["per-file-ignores", "select"],
)
def test_settings_that_change_the_analysis_are_not_served_from_the_cache(tree, monkeypatch, settings):
    _run(tree)
    counter = AnalysisCounter(monkeypatch)
    changed = _run(tree, settings)
    assert counter.files, "nothing was analysed again"
    assert _outcome(changed) == _outcome(_run(tree, settings, use_cache=False))


@pytest.mark.parametrize(
    "settings, policy",
    [
        (Settings(tiers=(("OPT101", "validate"),)), FixPolicy(tiers=(("OPT101", "validate"),))),
        (Settings(unsafe_fixes=True), FixPolicy(unsafe_fixes=True)),
    ],
    ids=["tiers", "unsafe-fixes"],
)
def test_a_policy_flip_reuses_the_analysis_and_decides_afresh(tree, monkeypatch, settings, policy):
    """The cache holds analysis only: another fix policy re-analyses no file it has seen, and gives the cold
    run's outcome (a later pass over a text no run produced before is the only analysis left to do)."""
    (tree / "random_numbers.py").write_text("import torch\n\ndef noise(n):\n    return torch.randn(n).cuda()\n")
    default = _run(tree)
    counter = AnalysisCounter(monkeypatch)
    nets = []
    original_net = passes.rewrite_error
    monkeypatch.setattr(passes, "rewrite_error", lambda *args: nets.append(args[1].rel) or original_net(*args))
    flipped = _run(tree, settings, policy)
    assert set(counter.files) <= _rewritten(flipped), "a file the default run analysed was analysed again"
    if policy.unsafe_fixes:  # the cold run anticipated this flip: its rewrites were checked then
        assert counter.files == [] and nets == [], (counter.files, nets)
    assert _outcome(flipped) == _outcome(_run(tree, settings, policy, use_cache=False))
    assert _outcome(flipped) != _outcome(default), "the two policies should decide differently on this tree"
    counter.files.clear()
    assert _outcome(_run(tree)) == _outcome(default)  # and back: nothing of the flipped run's decisions stays
    assert counter.files == []


def _rewritten(result) -> set[str]:
    return {change.rel for change in result.changes}


def test_narrowing_applies_after_the_cache(tree, monkeypatch):
    """A filter (--changed-lines, --baseline) marks findings in every run, from cached analyses too."""

    class EvenLinesOnly:
        def out_of_scope(self, findings):
            return ["odd line" if finding.line % 2 else None for finding in findings]

    _run(tree)
    counter = AnalysisCounter(monkeypatch)
    narrowed = _run(tree, filters=(EvenLinesOnly(),))
    assert counter.files == [] or set(counter.files) <= _rewritten(narrowed)
    assert _outcome(narrowed) == _outcome(_run(tree, filters=(EvenLinesOnly(),), use_cache=False))
    odd = [decision for f, decision in narrowed.decided if f.line % 2]
    assert odd and all(decision.out_of_scope and not decision.accepted for decision in odd)
    assert _outcome(_run(tree)) == _outcome(_run(tree, use_cache=False))


def test_the_key_covers_code_rules_and_analysis_settings_only(tmp_path):
    facts = rule_facts()
    key = result_cache.pack_key(tmp_path, facts, Settings(), "code")
    assert key == result_cache.pack_key(tmp_path, facts, Settings(source="elsewhere"), "code")
    assert key == result_cache.pack_key(tmp_path, facts, Settings(unsafe_fixes=True), "code")
    assert key == result_cache.pack_key(tmp_path, facts, Settings(tiers=(("OPT1", "unsafe"),)), "code")
    assert key == result_cache.pack_key(tmp_path, facts, Settings(validate_command="pytest"), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(), "other code")
    assert key != result_cache.pack_key(tmp_path / "other", facts, Settings(), "code")
    assert key != result_cache.pack_key(tmp_path, facts[:1], Settings(), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(max_file_size=10), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(per_file_ignores=(("a/**", ("OPT1",)),)), "code")


def test_editing_a_rule_source_changes_the_code_fingerprint(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    rule = rules / "opt999_example.py"
    rule.write_text("X = 1\n")
    before = result_cache.code_fingerprint(rules)
    rule.write_text("X = 2\n")
    result_cache.code_fingerprint.cache_clear()
    assert result_cache.code_fingerprint(rules) != before


def test_an_entry_is_refused_when_another_file_it_read_changed(tmp_path):
    header = tmp_path / "kernel.cuh"
    header.write_text("#define N 4\n")
    store = result_cache.ResultCache.open("k" * 64, tmp_path / "cache")
    record = FileRecord("d1", {"d1": Analysis(inputs=(FileInput.of(str(header)),))})
    store.put("kernel.cu", record)
    store.save()
    reopened = result_cache.ResultCache.open("k" * 64, tmp_path / "cache")
    assert reopened.get("kernel.cu", "d1") is not None
    assert reopened.get("kernel.cu", "d2") is None
    header.write_text("#define N 8\n")
    assert reopened.get("kernel.cu", "d1") is None


@pytest.mark.parametrize("kind", ["the result pack", "the call graph's resolution"])
def test_a_damaged_pack_is_ignored(tmp_path, tree, cache_dir, kind):
    _run(tree)
    (pack,) = [p for p in cache_dir.rglob("*.pickle") if p.name.startswith("graph-") == (kind != "the result pack")]
    pack.write_bytes(b"not a pickle")
    assert _outcome(_run(tree)) == _outcome(_run(tree, use_cache=False))


def test_no_cache_writes_nothing_and_apply_leaves_the_repository_untouched(tree, tmp_path, cache_dir):
    before = sorted((p.relative_to(tree), p.read_bytes()) for p in tree.rglob("*") if p.is_file())
    result = run_cli("apply", str(tree), "-o", str(tmp_path / "first.diff"), "--no-cache", "-q")
    assert result.returncode == 0, result.stderr
    assert not cache_dir.exists()
    result = run_cli("apply", str(tree), "-o", str(tmp_path / "second.diff"), "-q")
    assert result.returncode == 0, result.stderr
    assert list(cache_dir.rglob("*.pickle")), "the cache was not written where OPTPATCH_CACHE_DIR says"
    after = sorted((p.relative_to(tree), p.read_bytes()) for p in tree.rglob("*") if p.is_file())
    assert after == before
    assert (tmp_path / "first.diff").read_bytes() == (tmp_path / "second.diff").read_bytes()


def test_the_cache_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "explicit"))
    assert result_cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("OPTPATCH_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert result_cache.cache_dir() == tmp_path / "xdg" / "optpatch"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert result_cache.cache_dir() == tmp_path / "home" / ".cache" / "optpatch"


def test_a_narrowed_run_reads_no_unchanged_file_it_only_indexes(tmp_path, monkeypatch):
    # Pre-commit checks one file, but the call graph needs every file's calls: those unchanged since the cache
    # recorded their size and modification time are not read again; a changed one is.
    import os
    import time

    root = tmp_path / "project"
    root.mkdir()
    (root / "layers.py").write_text("import torch\n\ndef grow(n):\n    t = torch.zeros(n)\n    t.fill_(1)\n    return t\n")
    model = "import torch\nfrom layers import grow\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return grow(4) + x\n"
    (root / "model.py").write_text(model)
    (root / "other.py").write_text("def helper():\n    return 1\n")
    settled = time.time() - 10  # unchanged for longer than cache.SETTLED_SECONDS
    for path in root.iterdir():
        os.utime(path, (settled, settled))
    narrowed = dict(paths=[root / "layers.py"], jobs=1)
    engine.run(root, Settings(), FixPolicy(), **narrowed)  # reads and records every file
    engine.run(root, Settings(), FixPolicy(), **narrowed)  # the pack now holds their size and time
    read = []
    original = engine.read_source
    monkeypatch.setattr(engine, "read_source", lambda path, *args: read.append(path.name) or original(path, *args))
    first = engine.run(root, Settings(), FixPolicy(), **narrowed)
    assert read == []  # (the checked file is read by the analysis, always)
    (root / "model.py").write_text(model.replace("def forward", "def helper"))
    read.clear()
    second = engine.run(root, Settings(), FixPolicy(), **narrowed)
    assert read == ["model.py"]
    (before,), (after,) = first.findings, second.findings
    assert before.frequency.frequency.value == "per-step" and after.frequency.frequency.value != "per-step"


def test_a_first_narrowed_run_indexes_the_rest_of_the_project_in_its_workers(tmp_path, monkeypatch):
    # A first pre-commit run needs every file's part of the call graph (NeMo: 2,575 files, 4.7 s in one process):
    # the files the cache has never seen are indexed by the run's workers, in the files' order for the graph.
    import os

    root = tmp_path / "project"
    root.mkdir()
    (root / "layers.py").write_text("import torch\n\ndef grow(n):\n    t = torch.zeros(n)\n    t.fill_(1)\n    return t\n")
    (root / "model.py").write_text("import torch\nfrom layers import grow\n\nclass M(torch.nn.Module):\n"
                                   "    def forward(self, x):\n        return grow(4) + x\n")
    for index in range(2 * engine.PARALLEL_THRESHOLD):
        (root / f"util{index:02}.py").write_text(f"def helper{index}():\n    return {index}\n")
    log = tmp_path / "indexed.log"
    index_file = engine.call_graph.index_file

    def logged(rel, text):
        with open(log, "a") as stream:
            stream.write(f"{os.getpid()}\n")
        return index_file(rel, text)

    monkeypatch.setattr(engine.call_graph, "index_file", logged)
    narrowed = engine.run(root, Settings(), FixPolicy(), paths=[root / "layers.py"], jobs=2)
    indexers = log.read_text().split()
    assert len(indexers) == 2 * engine.PARALLEL_THRESHOLD + 1 and str(os.getpid()) not in indexers
    whole = engine.run(root, Settings(), FixPolicy(), jobs=1, use_cache=False)
    assert [f.frequency for f in narrowed.findings] == [f.frequency for f in whole.findings if f.path == "layers.py"]
    assert narrowed.findings[0].frequency.frequency.value == "per-step"


def test_a_cache_that_cannot_be_written_leaves_no_partial_file(tree, cache_dir, monkeypatch):
    # A full disk while a pack or the call graph's resolution is written: the run goes on, and no half-written
    # file stays beside the packs (a `.pack-*` or `.graph-*` temporary nobody would remove).
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(result_cache.pickle, "dump", full_disk)
    assert _outcome(_run(tree)) == _outcome(_run(tree, use_cache=False))
    assert [p.name for p in cache_dir.rglob(".*-*")] == []
