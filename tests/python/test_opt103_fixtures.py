"""OPT103's fixtures, executed before and after the rewrite under CudaOnCpu's pinned and stream stand-ins.

tests/test_fixtures.py runs every fixture as tests/python/annotated.py runs
each rule's: findings against the `# expect:` annotations, the goldens of
each tier, and every `case_*` before and after under both poison patterns. CudaOnCpu queues a
non-blocking copy from pinned memory and lands it as late as CUDA allows
(cuda_on_cpu.py), so a rewrite that lets the source be written, or the result
be read on another stream, before the copy lands changes a result.

`races.py` holds the sites kept because of such a race, each marked
`forced: fails`; `races.forced.py` is that file with each of them rewritten
anyway, as the rule would write it without the obligation that kept it. Its
cases must give different results: that is what shows the oracle catches
each race. benchmarks/gpu_opt103.py runs the same files on a GPU.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from annotated import GOLDEN_SUFFIXES, analyse, assert_same, changed_lines, expectations, run_cases, sites
from cuda_on_cpu import CudaOnCpu, EmulatedRace, device_of, is_emulated_pinned
from optpatch.policy import fix_id
from optpatch.rule import load_rules

FIXTURE_DIR = Path(__file__).parents[1] / "fixtures" / "python" / "opt103"
FIXTURES = sorted(p for p in FIXTURE_DIR.glob("*.py") if not p.name.endswith(GOLDEN_SUFFIXES))
RACES = FIXTURE_DIR / "races.py"
RULE = next(rule for rule in load_rules() if rule.code == "OPT103")


def test_fixtures_cover_every_verdict_and_keep_reason():
    found = [verdict for p in FIXTURES for (_, code, verdict) in expectations(p.read_text()) if code == "OPT103"]
    assert len(found) >= 50, len(found)
    assert {"fix", "validate", "keep", "advice", "none"} <= {s.verdict for p in FIXTURES for s in sites(p.read_text())}
    categories = set()
    for path in FIXTURES:
        categories |= {f.keep_category.name for f in analyse(path, ("OPT103",)).findings if f.keep_category}
    wanted = {"DEVICE_TO_HOST", "NOT_A_DEVICE", "NOT_CUDA", "SOURCE_WRITTEN", "OTHER_STREAM", "DELIBERATE", "NO_GAIN",
              "DISCARDED", "DEVICE_MEMORY", "CANNOT_SPELL", "OTHER"}
    assert wanted <= categories, wanted - categories


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_rewritten_fixtures_are_left_alone_on_a_second_run(path):
    fixed = path.with_suffix(".fixed.py")
    if fixed.exists():
        assert analyse(fixed, ("OPT103",)).new is None, f"{fixed.name} changes again"
    validated = path.with_suffix(".validate.py")
    if validated.exists():
        result = analyse(validated, ("OPT103",))
        accepted = frozenset(fix_id(f) for f in result.findings if f.fix is not None)
        assert not accepted, f"{validated.name} still offers fixes: {sorted(accepted)}"


# -- the races: kept sites whose rewrite the oracle must catch ------------------------------------------


def _forced_text() -> str:
    """races.py rewritten at every kept site as if the obligation that kept it held."""
    package = RULE.__module__.rpartition(".")[0]
    obligations, proof = sys.modules[f"{package}.obligations"], sys.modules[f"{package}.proof"]
    saved = obligations.written_after_copy, obligations.read_on_the_copy_stream
    obligations.written_after_copy = lambda m, site: None
    obligations.read_on_the_copy_stream = lambda m, site, readers: proof.Step(proof.Tier.SAFE, "forced")
    try:
        result = analyse(RACES, ("OPT103",))
    finally:
        obligations.written_after_copy, obligations.read_on_the_copy_stream = saved
    assert result.new is not None
    return result.new.decode()


def test_the_forced_races_are_the_rules_own_rewrite_of_each_kept_site():
    text = RACES.read_text()
    forced = RACES.with_suffix(".forced.py").read_text()
    assert forced == _forced_text()
    forced_lines = {site.line for site in sites(text) if site.forced_fails}
    kept_lines = {line for line, code, verdict in expectations(text) if verdict == "keep"}
    assert forced_lines == kept_lines and forced_lines
    assert forced_lines <= changed_lines(text, forced), "a kept site was not rewritten"


def test_each_forced_race_changes_its_result():
    original, forced = RACES.read_text(), RACES.with_suffix(".forced.py").read_text()
    before = run_cases(original, "races_before", "nan", CudaOnCpu)
    after = run_cases(forced, "races_forced", "nan", CudaOnCpu)
    assert before.keys() == after.keys() and len(before) >= 5
    for name in before:
        with pytest.raises(AssertionError):
            assert_same(before[name], after[name], name)


# -- the stand-ins themselves -----------------------------------------------------------------------------


def test_a_non_blocking_copy_from_pinned_memory_lands_late():
    with CudaOnCpu():
        source = torch.tensor([1.0, 2.0], pin_memory=True)
        assert source.is_pinned() and is_emulated_pinned(source[:1])
        copied = source.cuda(non_blocking=True)
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            early = copied * 2  # another stream: the copy has not landed
        late = copied * 2  # the copy's stream waits for it
    assert device_of(copied) == torch.device("cuda", 0)
    assert torch.isnan(early).all()
    assert late.tolist() == [2.0, 4.0]


def test_a_write_to_the_source_before_the_host_waited_is_a_race():
    with CudaOnCpu():
        source = torch.tensor([1, 2], pin_memory=True)
        total = source.cuda(non_blocking=True).sum()  # read on the copy's stream: landed, but not waited for
        with pytest.raises(EmulatedRace):
            source[0] = 5
        assert total.item() == 3  # the host waits here: writing is safe again
        source[0] = 5


def test_waiting_for_the_copy_stream_lands_it_and_pageable_copies_are_immediate():
    with CudaOnCpu():
        pinned = torch.tensor([1.0, 2.0]).pin_memory()
        copied = pinned.to("cuda", non_blocking=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            read = copied * 2
        pageable = torch.tensor([3.0])
        immediate = pageable.to("cuda", non_blocking=True)
        pageable[0] = 5.0  # no race: CUDA staged the pageable source before returning
        assert pinned.pin_memory() is pinned and not is_emulated_pinned(pageable)
    assert read.tolist() == [2.0, 4.0] and immediate.tolist() == [3.0]


def test_a_copy_to_the_host_is_an_untagged_cpu_tensor():
    with CudaOnCpu():
        on_device = torch.tensor([1, 2], device="cuda")
        back = on_device.to("cpu")
    assert device_of(on_device) == torch.device("cuda", 0) and device_of(back) == torch.device("cpu")


EXTENSION_CALLER = """\
import torch

from fairseq import ngram_repeat_block_cuda
from fairseq import ngram_helpers


def probe(lprobs):
    tokens = torch.tensor([[4, 4, 3, 2], [1, 2, 3, 4]], dtype=torch.long, device="cuda")
    outputs = {callee}(tokens, lprobs)
    outputs = outputs + 4
    return True


# The edit fits within this file's longest line: {padding}
"""


@pytest.mark.parametrize("callee, tier", [
    # fairseq's probe: the extension launches `banRepeatedTokens<<<blocks, threads, shared>>>`, on the legacy
    # default stream, which does not wait for a copy queued on a side stream (found in review)
    ("ngram_repeat_block_cuda.forward", "validate"),
    # a Python function is taken to queue its work on the current stream, as torch's ops do
    ("ngram_helpers.forward", "safe"),
])
def test_a_copy_read_by_a_compiled_extension_is_not_proven_safe(tmp_path, callee, tier):
    path = tmp_path / "ngram_repeat_block.py"
    analysis = analyse(path, ("OPT103",), text=EXTENSION_CALLER.format(callee=callee, padding="x" * 80))
    (finding,) = [f for f in analysis.findings if f.code == "OPT103"]
    assert (finding.verdict.value, finding.fix.tier.value) == ("fix", tier), finding.reason
    if tier == "validate":
        assert "`ngram_repeat_block_cuda`, named as compiled extensions are" in finding.reason
