"""`optpatch validate` shows noise as noise: each row's spread, the kernels the rewrite left unchanged, and the
run's noise band, on synthetic timings (no GPU): a ratio inside the noise is never worded or drawn as a regression."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from optpatch.validation import kernel_chart, kernels
from optpatch.validation.kernel_changes import changed_kernels
from optpatch.validation.kernel_report import ComparisonRow, Reading, noise_bands, read_report, reading

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
BOUND = {"copy_blocks", "swap_blocks", "reshape_and_cache", "reshape_and_cache_flash"}
SVG = "{http://www.w3.org/2000/svg}"


def two_trees(tmp_path: Path, edit) -> tuple[Path, Path]:
    original, patched = tmp_path / "original", tmp_path / "patched"
    for tree in (original, patched):
        tree.mkdir(parents=True)
        for source in (KERNELS / "csrc").iterdir():
            (tree / source.name).write_text(source.read_text())
    target = patched / "cache_kernels.cu"
    target.write_text(edit(target.read_text()))
    return original, patched


def test_the_rewrite_of_copy_blocks_leaves_the_other_kernels_unchanged(tmp_path):
    def rewrite(text):  # what OPT201 does to copy_blocks, with the include it adds
        return (text.replace("#include <algorithm>\n", "#include <algorithm>\n#include <vector>\n")
                .replace("int64_t key_cache_ptrs[num_layers];", "std::vector<int64_t> key_cache_ptrs(num_layers);"))

    assert changed_kernels(*two_trees(tmp_path, rewrite), BOUND) == {
        "copy_blocks": True, "swap_blocks": False, "reshape_and_cache": False, "reshape_and_cache_flash": False}


def test_a_change_in_a_helper_changes_every_kernel_that_calls_it(tmp_path):
    def rewrite(text):  # check_scatter_inputs is called by both scatter kernels, not by the block copies
        return text.replace("slot_mapping must be a contiguous int64", "slot_mapping must be a contiguous long")

    assert changed_kernels(*two_trees(tmp_path, rewrite), BOUND) == {
        "copy_blocks": False, "swap_blocks": False, "reshape_and_cache": True, "reshape_and_cache_flash": True}


def test_a_change_outside_every_function_or_an_unknown_kernel_counts_as_changed(tmp_path):
    def rewrite(text):
        return text.replace("constexpr int kMaxThreadsPerBlock = 1024;", "constexpr int kMaxThreadsPerBlock = 512;")

    assert set(changed_kernels(*two_trees(tmp_path, rewrite), BOUND).values()) == {True}
    assert changed_kernels(*two_trees(tmp_path / "b", lambda text: text), {"no_such_kernel"}) == {"no_such_kernel": True}


def row(kernel, measure, original, patched, spread=0.03, changed=True, correct=True) -> ComparisonRow:
    return ComparisonRow(kernel, "s", measure, original, patched, original / patched, correct,
                         original * (1 - spread), original * (1 + spread), patched * (1 - spread), patched * (1 + spread),
                         changed)


HOST = "host us/call"
ROWS = [
    row("copy_blocks", HOST, 40.0, 20.0),  # 2x, far outside any noise
    row("copy_blocks", "gpu us/call", 100.0, 104.0),  # 0.96x: its quartiles overlap
    row("copy_blocks", "gpu us/call", 100.0, 300.0),  # 0.33x beyond noise: a real slowdown
    row("copy_blocks", "queued", 100.0, 180.0, spread=0.0),  # 0.56x, no spread, but inside the measure's noise band
    row("swap_blocks", HOST, 10.0, 20.4, changed=False),  # 0.49x of code the rewrite did not touch
    row("swap_blocks", "queued", 10.0, 20.0, spread=0.0, changed=False),  # 0.5x: the queued measure's noise
]


def test_unchanged_code_and_differences_inside_the_noise_are_never_slower():
    bands = noise_bands(ROWS)
    assert bands[HOST] == (ROWS[4].speedup, 1.0) and "gpu us/call" not in bands
    assert [reading(r, bands) for r in ROWS] == [Reading.FASTER, Reading.WITHIN_NOISE, Reading.SLOWER,
                                                 Reading.WITHIN_NOISE, Reading.UNCHANGED, Reading.UNCHANGED]


def test_a_report_saved_before_spreads_is_read_and_judged_by_no_one():
    old = read_report(Path(__file__).resolve().parents[2] / "docs" / "validate-h100-2026-11-26.json")
    assert all(r.original_q1 is None and r.code_changed is None for r in old.rows)
    assert {reading(r, noise_bands(old.rows)) for r in old.rows} == {Reading.NOT_JUDGED}


def report_of(rows) -> kernels.KernelReport:
    return kernels.KernelReport(environment={"device": "Test GPU"}, rows=list(rows))


def test_the_harness_quartiles_and_the_changed_kernels_reach_the_rows_and_the_saved_report(tmp_path):
    timings = [{"variant": variant, "kernel": kernel, "shape": "s", "measure": HOST, "microseconds": median,
                "q1": median - 1, "q3": median + 1}
               for kernel in ("copy_blocks", "swap_blocks") for variant, median in (("original", 40.0), ("patched", 20.0))]
    checks = {version: {"checks": []} for version in kernels.VERSIONS}
    report = kernels.KernelReport()
    kernels.compare_versions(checks, timings, report, {"copy_blocks": True, "swap_blocks": False})
    first, second = report.rows
    assert (first.original_q1, first.original_q3, first.patched_q1, first.patched_q3) == (39.0, 41.0, 19.0, 21.0)
    assert (first.code_changed, second.code_changed) == (True, False)
    saved = tmp_path / "report.json"
    with saved.open("w") as file:
        kernels.print_json(report, file=file)
    assert read_report(saved) == report


def test_the_table_gives_spreads_and_readings_and_never_calls_noise_slower():
    text = io.StringIO()
    kernels.print_text(report_of(ROWS), file=text)
    table = text.getvalue()
    lines = {line.split("│")[1].strip() + " " + line.split("│")[3].strip(): line for line in table.splitlines()
             if line.startswith("│")}
    assert "40.0 (38.8-41.2)" in lines["copy_blocks host us/call"] and "faster" in lines["copy_blocks host us/call"]
    assert "code unchanged" in lines["swap_blocks host us/call"] and "slower" not in lines["swap_blocks host us/call"]
    assert sum("slower" in line for line in lines.values()) == 1  # only the 0.33x beyond the noise
    assert "noise of host us/call: 0.49x-1.00x" in table


def test_the_chart_draws_noise_grey_against_the_band_and_only_a_real_slowdown_red(tmp_path):
    chart = tmp_path / "chart.svg"
    kernel_chart.draw_chart(report_of(ROWS), chart)
    root = ElementTree.parse(chart).getroot()
    elements = {element.get("id"): element for element in root.iter() if element.get("id")}
    assert kernel_chart.element_id("noise", HOST) in elements  # the band of the host panel
    for each in ROWS:
        assert kernel_chart.ratio_id(each) in elements
    texts = ["".join(text.itertext()) for text in root.iter(f"{SVG}text")]
    assert "0.49x, code unchanged" in texts and "0.96x, within noise" in texts and "0.33x" in texts
    assert "swap_blocks  s  (code unchanged)" in texts
    red = kernel_chart.FAILED_COLOUR.lower()
    coloured_red = ["".join(text.itertext()) for text in root.iter(f"{SVG}text") if red in (text.get("style") or "").lower()]
    assert coloured_red == ["0.33x"]
