"""The result cache (src/optpatch/cache.py): same results as a cold run, and invalidated by what it depends on."""

import dataclasses
import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli
from optpatch import cache as result_cache
from optpatch import engine
from optpatch.config import Settings
from optpatch.engine import FileResult, FixPolicy
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
    """Counts the files the engine analyses for real (cache misses)."""

    def __init__(self, monkeypatch):
        self.files: list[str] = []
        original = engine.analyse_file

        def counting(source, *args, **kwargs):
            self.files.append(source.rel)
            return original(source, *args, **kwargs)

        monkeypatch.setattr(engine, "analyse_file", counting)


def _run(root, settings=Settings(), policy=FixPolicy(), use_cache=True):
    return engine.run(root, settings, policy, jobs=1, use_cache=use_cache)


def _outcome(result) -> tuple:
    """Everything a report or a patch is made from."""
    return (
        [dataclasses.astuple(f) for f in result.findings],
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
    "settings, policy",
    [
        (Settings(per_file_ignores=(("synthetic/pkg0/**", ("OPT101",)),)), FixPolicy()),
        (Settings(tiers=(("OPT101", "validate"),)), FixPolicy(tiers=(("OPT101", "validate"),))),
        (Settings(), FixPolicy(unsafe_fixes=True)),
        (Settings(select=("OPT101",)), FixPolicy()),
    ],
    ids=["per-file-ignores", "tiers", "unsafe-fixes", "select"],
)
def test_other_settings_or_policy_are_not_served_from_the_cache(tree, monkeypatch, settings, policy):
    _run(tree)
    counter = AnalysisCounter(monkeypatch)
    changed = _run(tree, settings, policy)
    assert counter.files, "nothing was analysed again"
    assert _outcome(changed) == _outcome(_run(tree, settings, policy, use_cache=False))


def test_the_key_covers_code_rules_settings_and_policy(tmp_path):
    facts = rule_facts()
    key = result_cache.pack_key(tmp_path, facts, Settings(), FixPolicy(), "code")
    assert key == result_cache.pack_key(tmp_path, facts, Settings(source="elsewhere"), FixPolicy(), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(), FixPolicy(), "other code")
    assert key != result_cache.pack_key(tmp_path / "other", facts, Settings(), FixPolicy(), "code")
    assert key != result_cache.pack_key(tmp_path, facts[:1], Settings(), FixPolicy(), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(max_file_size=10), FixPolicy(), "code")
    assert key != result_cache.pack_key(tmp_path, facts, Settings(), FixPolicy(validated=frozenset({"a"})), "code")
    many = frozenset(f"f{i}.py:1:1:OPT101" for i in range(50))  # set order varies between processes
    assert result_cache.pack_key(tmp_path, facts, Settings(), FixPolicy(validated=many), "code") == (
        result_cache.pack_key(tmp_path, facts, Settings(), FixPolicy(validated=frozenset(sorted(many))), "code")
    )


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
    result = FileResult("kernel.cu", inputs=((str(header), result_cache.digest(header.read_bytes())),))
    store.put("kernel.cu", "d1", result)
    store.save()
    reopened = result_cache.ResultCache.open("k" * 64, tmp_path / "cache")
    assert reopened.get("kernel.cu", "d1") is not None
    assert reopened.get("kernel.cu", "d2") is None
    header.write_text("#define N 8\n")
    assert reopened.get("kernel.cu", "d1") is None


def test_a_damaged_pack_is_ignored(tmp_path, tree, cache_dir):
    _run(tree)
    (pack,) = cache_dir.rglob("*.pickle")
    pack.write_bytes(b"not a pickle")
    assert _outcome(_run(tree)) == _outcome(_run(tree, use_cache=False))


def test_runs_with_screens_do_not_use_the_cache(tree, cache_dir):
    class Nothing:
        def screen(self, findings):
            pass

    _run(tree, policy=FixPolicy(screens=(Nothing(),)))
    assert not cache_dir.exists()


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
