"""The fast paths of the engine: same patch for every --jobs, rule facts read without importing, rule screens."""

import sys
from pathlib import Path

import pytest

from conftest import REPO_ROOT, run_cli
from optpatch.config import Settings
from optpatch.passes import analyse_file
from optpatch.policy import FixPolicy
from optpatch.rule import Context, Edit, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier, builtin_rules_dir, load_rules, rule_modules
from optpatch.analysis.torch_api import CUDA_LEGACY_TENSOR_TYPES
from optpatch.rule_facts import RuleFacts, _declared_rules, rule_facts
from optpatch.source import SourceFile

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
from synthetic_tree import write_tree  # noqa: E402


def test_the_patch_is_byte_identical_for_every_jobs_count(tmp_path):
    tree = tmp_path / "repo"
    write_tree(tree, files=120, seed=5)
    patches = []
    for jobs in ("1", "2", "3"):
        out = tmp_path / f"jobs{jobs}.diff"
        result = run_cli("apply", str(tree), "-o", str(out), "--jobs", jobs, "--no-cache", "-q")
        assert result.returncode == 0, result.stderr
        patches.append(out.read_bytes())
    assert patches[0].count(b"\n+++ b/") >= 16, "too few changed files to exercise the process pool"
    assert patches[1] == patches[0] and patches[2] == patches[0]


def test_rule_facts_read_from_source_match_the_imported_rules():
    assert rule_facts() == tuple(RuleFacts.of(rule) for rule in load_rules())


def test_every_built_in_rule_declares_its_facts_literally():
    # One computed trigger word makes every run import every rule (and libcst): 0.3 s on each pre-commit call.
    unread = [path.parent.name for path in rule_modules(builtin_rules_dir()) if _declared_rules(path) is None]
    assert unread == []


def test_opt103_triggers_on_every_legacy_cuda_constructor():
    (opt103,) = [facts for facts in rule_facts() if facts.code == "OPT103"]
    legacy = {f"{name.removeprefix('torch.')}(" for name in CUDA_LEGACY_TENSOR_TYPES}
    assert legacy <= set(opt103.trigger_words)


@pytest.mark.parametrize(
    "source",
    [
        "from optpatch.rule import Rule\nWORDS = ('zeros',)\nclass R(Rule):\n    code = 'OPT990'\n    name = 'n'\n"
        "    language = 'python'\n    trigger_words = WORDS\n",
        "from optpatch.rule import Rule\nclass R(Rule):\n    code = 'OPT990'\n    name = 'n'\n    language = 'python'\n"
        "    @classmethod\n    def wants(cls, source):\n        return True\n",
        "from optpatch.rule import Rule as Base\nclass R(Base):\n    code = 'OPT990'\n    name = 'n'\n    language = 'python'\n",
        "try:\n    import x\nexcept ImportError:\n    if True:\n        from optpatch.rule import Rule as Base\n"
        "class R(Base):\n    code = 'OPT990'\n    name = 'n'\n    language = 'python'\n",
        "def _bind():\n    global Base\n    from optpatch.rule import Rule as Base\n_bind()\n"
        "class R(Base):\n    code = 'OPT990'\n    name = 'n'\n    language = 'python'\n",
    ],
    ids=["computed-trigger-words", "own-wants", "renamed-base", "renamed-base-in-a-handler", "renamed-base-by-global"],
)
def test_rules_whose_facts_are_not_literal_are_imported(tmp_path, source):
    rules = tmp_path / "rules"
    (rules / "opt990").mkdir(parents=True)
    (rules / "opt990" / "rule.py").write_text(source)
    facts = rule_facts(rules)
    assert [f.code for f in facts] == ["OPT990"]
    imported = [name for name in sys.modules if name.startswith("optpatch_rules_") and name.endswith(".opt990.rule")]
    assert imported, "the rule was not imported"


def test_a_run_of_the_cpp_rules_alone_imports_neither_the_python_rules_nor_libcst(tmp_path):
    """The workers inherit what the main process imported before the fork: the selected rules, and nothing else.

    Python files a Python rule would want (`torch.zeros(...)`) and enough
    files for a process pool: with `--select OPT2`, no Python rule runs, so
    importing them and libcst (0.15-0.25 s) would only delay the first file.
    """
    from conftest import run_cli_hooked

    for index in range(12):
        (tmp_path / f"m{index}.py").write_text(f"import torch\ndef f(n):\n    return torch.zeros(n).cuda() + {index}\n")
        (tmp_path / f"k{index}.cpp").write_text(f"void f{index}(int n) {{ int a[n]; a[0] = 1; }}\n")
    hook = ("import atexit, sys\natexit.register(lambda: print('imported:', sorted(n for n in sys.modules "
            "if n == 'libcst' or n.startswith('optpatch_rules.opt')), file=sys.stderr))")
    cpp = run_cli_hooked(hook, "check", str(tmp_path), "--no-cache", "--no-headers", "--jobs", "2", "--select", "OPT2",
                         "--format", "json")
    assert cpp.returncode in (0, 1), cpp.stderr
    assert "OPT201" in cpp.stdout, "the C++ rule must still run"
    imported = cpp.stderr.split("imported:", 1)[1]
    assert "libcst" not in imported and "opt10" not in imported, imported
    assert "opt201" in imported, imported
    every = run_cli_hooked(hook, "check", str(tmp_path), "--no-cache", "--no-headers", "--jobs", "2", "--format", "json")
    assert "'libcst'" in every.stderr.split("imported:", 1)[1], "the Python rules must still import libcst"


class _ScreenedRule(Rule):
    """A rule that would report every call, but screens out files without a `zeros(...)` call."""

    code = "OPT999"
    name = "screened"
    summary = "test rule"
    language = "python"
    default_tier = "safe"
    trigger_words = ("zeros",)

    @classmethod
    def screen(cls, calls) -> bool:
        return bool(calls.named("zeros"))

    def check(self, module):
        for call in module.calls():
            yield Judgement(module.start(call), Context.ONCE, Kept("seen", KeepCategory.OTHER))


def _python(code: str) -> SourceFile:
    return SourceFile("f.py", Path("f.py"), code.encode(), code, "utf-8", False, "python")


def test_a_screen_that_rejects_a_file_spares_the_parse(monkeypatch):
    from optpatch import passes

    def no_parse(source, calls=None, outline=None):
        raise AssertionError("libcst parsed a file the screen rejected")

    monkeypatch.setattr(passes, "parse", no_parse)
    result = analyse_file(_python("# zeros only in a comment\nprint(1)\n"), [_ScreenedRule], Settings(), FixPolicy())
    assert result.findings == [] and result.error is None


def test_a_screen_that_accepts_a_file_lets_the_rule_run():
    result = analyse_file(_python("import torch\nx = torch.zeros(3)\nprint(x)\n"), [_ScreenedRule], Settings(), FixPolicy())
    assert [f.line for f in result.findings] == [2, 3]


def test_a_file_ast_cannot_parse_is_left_to_libcst_to_report():
    result = analyse_file(_python("zeros(\n"), [_ScreenedRule], Settings(), FixPolicy())
    assert result.error is not None and "syntax error" in result.error.reason


class _BreakingRule(Rule):
    """A buggy rule: its one safe fix deletes the file's last `;`, which must never reach the user."""

    code = "OPT998"
    name = "breaking"
    summary = "test rule"
    default_tier = "safe"

    def check(self, unit):
        end = unit.source.text.rindex(";")
        yield Judgement((1, 1), Context.ONCE, Proven("deletes a ;", Tier.SAFE, (Edit(end, end + 1, ""),), Impact.LOW, "test"))


@pytest.mark.parametrize(
    "name,language,code",
    [("f.py", "python", "x = 1; y = 2\n"), ("f.cpp", "cpp", "int f(int n) { int a = n; return a; }\n")],
)
def test_a_fix_that_breaks_the_file_is_withheld_as_an_internal_error(name, language, code):
    rule = type("BreakingRule", (_BreakingRule,), {"language": language})
    source = SourceFile(name, Path(name), code.encode(), code, "utf-8", False, language)
    result = analyse_file(source, [rule], Settings(), FixPolicy())
    assert result.new is None, result.new
    assert result.error is not None and "the rewritten file would not parse" in result.error.reason


class _TabRule(_BreakingRule):
    """Re-indents `g = 1` with a tab: CPython reads the result as consistent, libcst refuses it."""

    language = "python"

    def check(self, unit):
        start = unit.source.text.index("        g = 1")
        edit = Edit(start, start + 8, "   \t     ")
        yield Judgement((4, 1), Context.ONCE, Proven("re-indents", Tier.SAFE, (edit,), Impact.LOW, "test"))


def test_a_fix_only_libcst_cannot_parse_is_withheld_too():
    """The safety net parses what a fix wrote with libcst as well as CPython: the next run must read the file."""
    code = "import torch\n\ndef f(c):\n    if c:\n        g = 1\n    return 2\n\ndef other():\n    return 3\n"
    source = SourceFile("f.py", Path("f.py"), code.encode(), code, "utf-8", False, "python")
    rewritten = code.replace("        g = 1", "   \t     g = 1")
    compile(rewritten, "f.py", "exec")  # CPython takes the rewrite
    result = analyse_file(source, [_TabRule], Settings(), FixPolicy())
    assert result.new is None, result.new
    assert result.error is not None and "syntax error (libcst)" in result.error.reason


def test_the_lines_a_rewrite_wrote_follow_every_pass():
    """What the safety net hands libcst: each pass's edits, carried through the passes after it."""
    from optpatch.offsets import written_lines
    from optpatch.model import Edit
    from optpatch.planner import apply_edits

    original = "a\nb\nc\nd\ne\nf\ng\nh\n"
    first = [Edit(original.index("f"), original.index("f") + 1, "F1\nF2")]
    middle = apply_edits(original, first)
    second = [Edit(0, 0, "z\n"), Edit(middle.index("h"), middle.index("h") + 2, "")]  # a line before a; h deleted
    final = apply_edits(middle, second)
    assert final == "z\na\nb\nc\nd\ne\nF1\nF2\ng\n"
    source = SourceFile("f.py", Path("f.py"), final.encode(), final, "utf-8", False, "python")
    # z (up to where a starts), F1 and F2 (moved down a line by z), g and the end (either side of the deleted h)
    assert written_lines(source, [first, second]) == {1, 2, 7, 8, 9, 10}


def _collector_state(_item) -> bool:
    import gc

    return gc.isenabled()


def test_workers_collect_garbage_though_the_main_process_pauses_while_it_gathers():
    # A worker is forked while the main process has paused collection (engine._map); a C++ file's tree is a web
    # of cycles, so a worker that never collected would grow with every kernel file it reads.
    import gc

    from optpatch import engine

    files = [(Path(__file__), f"file{index}.py") for index in range(engine.PARALLEL_THRESHOLD * 2)]
    frozen = gc.get_freeze_count()
    states = list(engine._map(_collector_state, files, 2, None))
    assert states and all(states)
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # only a run freezes what it gathers, and unfreezes it


def _inherited_objects_frozen(_item) -> bool:
    import gc

    return gc.get_freeze_count() > 10_000  # the modules and functions it was forked with


def test_workers_leave_what_they_inherited_out_of_their_collections():
    # Each collection would walk the main process's heap again in every worker, and copy the pages it touches.
    import gc

    from optpatch import engine

    files = [(Path(__file__), f"file{index}.py") for index in range(engine.PARALLEL_THRESHOLD * 2)]
    frozen = gc.get_freeze_count()
    assert all(engine._map(_inherited_objects_frozen, files, 2, None))
    assert gc.get_freeze_count() == frozen  # frozen in the workers, not here


class _UnpicklableTask:
    """A task that says which object ran each file; pickling it is an error."""

    def __call__(self, _item) -> tuple[int, int]:
        import os

        return os.getpid(), id(self)

    def __reduce__(self):
        raise AssertionError("the task was pickled")


def test_each_worker_keeps_one_task_for_all_its_batches():
    # A task pickled with every batch arrives as a new object each time, and loses what it worked out for the last
    # one: the formatters' parsed configuration was parsed again for each of xformers's 61 batches.
    from optpatch import engine

    files = [(Path(__file__), f"file{index}.py") for index in range(engine.PARALLEL_THRESHOLD * 8)]
    assert len(engine._batches(files, 2)) > 2
    ran = list(engine._map(_UnpicklableTask(), files, 2, None))
    tasks_by_worker: dict[int, set[int]] = {}
    for pid, task in ran:
        tasks_by_worker.setdefault(pid, set()).add(task)
    assert all(len(tasks) == 1 for tasks in tasks_by_worker.values())


def test_a_run_leaves_the_collector_as_it_found_it(tmp_path):
    import gc

    from optpatch.config import ConfigResolver
    from optpatch.engine import PARALLEL_THRESHOLD as engine_threshold, run

    tree = tmp_path / "repo"
    write_tree(tree, files=40, seed=3)
    frozen = gc.get_freeze_count()
    result = run(tree, ConfigResolver.fixed(Settings()), FixPolicy(), jobs=2, use_cache=False)
    assert len(result.files) >= engine_threshold
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_workers_take_the_costliest_files_first_and_every_file_once(tmp_path):
    from optpatch import engine

    files = []
    for index, size in enumerate([10, 50_000, 30, 200_000, 5, 10_000] + [100] * 200):
        path = tmp_path / f"f{index}.cu"
        path.write_bytes(b"x" * size)
        files.append((path, path.name))
    batches = engine._batches(files, 2)
    flat = [index for batch in batches for index in batch]
    assert sorted(flat) == list(range(len(files)))
    assert batches[0] == [3] and batches[1] == [1]  # 200 KB, then 50 KB, each alone
    assert all(len(batch) <= engine.BATCH_FILES for batch in batches)
    sizes = [len(batch) for batch in batches]
    assert max(sizes) > 1 and sizes[-1] == 1  # the cheap ones share batches, fewer as the work runs out


def test_a_cache_pack_loads_with_collection_paused_and_stays_out_of_later_collections(tmp_path, monkeypatch):
    # Unpickling a pack builds every record's objects at once: with collection running, a NeMo pack took 0.93 s to
    # load, 0.29 s without (docs/benchmarks.md). Its records are values; frozen after loading, no later collection
    # of the run walks them.
    import gc

    from optpatch import cache
    from optpatch.config import ConfigResolver
    from optpatch.engine import run

    tree = tmp_path / "repo"
    write_tree(tree, files=6, seed=5)
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    run(tree, ConfigResolver.fixed(Settings()), FixPolicy(), jobs=1)  # writes the pack
    opened = cache.ResultCache.open
    seen = []

    def observed(*args, **kwargs):
        pack = opened(*args, **kwargs)
        seen.append((gc.isenabled(), len(pack.entries)))
        return pack

    monkeypatch.setattr(cache.ResultCache, "open", observed)
    from optpatch import engine

    analyse = engine._Group.analyse
    frozen_then = []
    monkeypatch.setattr(engine._Group, "analyse", lambda group, *a: frozen_then.append(gc.get_freeze_count()) or analyse(group, *a))
    frozen = gc.get_freeze_count()
    run(tree, ConfigResolver.fixed(Settings()), FixPolicy(), jobs=1)
    assert seen and all(not enabled and entries for enabled, entries in seen)
    assert frozen_then and frozen_then[0] > frozen  # the loaded records, frozen before step 1
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_the_call_graph_is_built_only_when_a_file_has_findings_to_weigh(tmp_path, monkeypatch):
    # A pre-commit run on files without findings needs no frequencies: the project's call graph (most of a warm
    # run on a large project) is not built. A file with findings gets them, from one build.
    from optpatch import call_graph
    from optpatch.config import ConfigResolver
    from optpatch.engine import run

    (tmp_path / "clean.py").write_text("def f(x):\n    return x + 1\n")
    (tmp_path / "model.py").write_text(
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
        "        t = torch.zeros(4)\n        t.fill_(1)\n        return x + t\n")
    built = []
    build = call_graph.CallGraph.build
    monkeypatch.setattr(call_graph.CallGraph, "build",
                        classmethod(lambda cls, *args: built.append(1) or build(*args)))
    clean = run(tmp_path, ConfigResolver.fixed(Settings()), FixPolicy(), paths=[tmp_path / "clean.py"], jobs=1,
                use_cache=False)
    assert [r.rel for r in clean.files] == ["clean.py"] and not built
    model = run(tmp_path, ConfigResolver.fixed(Settings()), FixPolicy(), paths=[tmp_path / "model.py"], jobs=1,
                use_cache=False)
    (finding,) = model.files[0].findings
    assert built == [1] and finding.frequency is not None and finding.frequency.frequency.value == "per-step"


def test_step_one_hands_back_the_bytes_only_of_files_with_findings(tmp_path):
    # A worker's result travels to the main process pickled; a file with no finding is settled without its text,
    # so its bytes stay behind (half of what xformers' workers sent).
    from optpatch import engine

    (tmp_path / "plain.py").write_text("import torch\n\n\ndef f(n):\n    return torch.ones(n) + 1\n")
    (tmp_path / "moved.py").write_text("import torch\n\n\ndef f(n):\n    return torch.ones(n).cuda()\n")
    task = engine._FileTask(codes=tuple(rule.code for rule in load_rules()), settings=Settings(), policy=FixPolicy())
    plain, moved = task((tmp_path / "plain.py", "plain.py")), task((tmp_path / "moved.py", "moved.py"))
    assert plain.raw is None and moved.raw == (tmp_path / "moved.py").read_bytes()
    settled = task.settle(plain.record, plain.path, plain.rel, plain.raw)
    assert settled.error is None and settled.decided == [] and settled.new is None
    fixed = task.settle(moved.record, moved.path, moved.rel, moved.raw)
    assert fixed.new is not None and b"device=" in fixed.new
