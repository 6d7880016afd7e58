"""`optpatch validate --plot FILE` and `--from-report`: the chart drawn from a
report as the GPU flow builds it, through the real command line; the usage
errors and the missing extra, each before any work."""

import dataclasses
import json
import os
import struct
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from conftest import run_cli, run_cli_hooked

from optpatch.validation import kernel_chart, kernels
from optpatch.validation.kernel_report import read_report

SVG = "{http://www.w3.org/2000/svg}"
QUEUED = "us to return, 5 ms queued"
MEASURES = ["host us/call", "gpu us/call", QUEUED]
FAILING_CASE = ("copy_blocks", "layers=80 pairs=16")
# The sweep of kernels/cases.gpu_sweep, with made-up timings of the sizes a
# GPU gives (test data, not measurements): (kernel, shape, {measure: (original, patched)}).
CASES = [
    *[("copy_blocks", f"layers={layers} pairs={pairs}",
       {"host us/call": (30.0 + layers / 8, 16.0 + layers / 10), "gpu us/call": (40.0 + 2.4 * pairs * layers / 32, 25.0 + 2.4 * pairs * layers / 32),
        QUEUED: (5010.0 + pairs, 22.0 + layers / 4)})
      for layers in (32, 80) for pairs in (1, 16, 256)],
    *[("swap_blocks", f"{direction} pairs={pairs}", {"host us/call": (2.5 + 3.4 * pairs, 2.6 + 3.4 * pairs), "gpu us/call": (3.0 + 3.4 * pairs, 3.1 + 3.4 * pairs)})
      for direction in ("gpu->gpu", "gpu->cpu", "cpu->gpu") for pairs in (1, 16, 256)],
    *[(kernel, f"tokens={tokens}", {"host us/call": (6.0, 6.1), "gpu us/call": (10.5 + tokens / 100, 10.6 + tokens / 100)})
      for tokens in (1, 16, 256, 2048) for kernel in ("reshape_and_cache", "reshape_and_cache_flash")],
]


def gpu_report() -> kernels.KernelReport:
    """The report compare_versions makes of the harness's checks and timings, with one case failing in the patched build."""
    checks = {version: {"checks": [
        {"kernel": kernel, "shape": shape, "dtype": "float16", "detail": "output tensors [0] differ from the oracle",
         "ok": not (version == "patched" and (kernel, shape) == FAILING_CASE)}
        for kernel, shape, _ in CASES]} for version in kernels.VERSIONS}
    timings = [
        {"variant": version, "kernel": kernel, "shape": shape, "measure": measure, "microseconds": values[index]}
        for kernel, shape, measures in CASES for measure, values in measures.items()
        for index, version in enumerate(kernels.VERSIONS)
    ]
    report = kernels.KernelReport(environment={"device": "Test GPU 80GB", "torch": "2.13.0", "cuda": "13.0",
                                                        "date": "2026-11-26T12:00:00+00:00"})
    kernels.compare_versions(checks, timings, report)
    return report


@pytest.fixture
def saved_report(tmp_path) -> Path:
    path = tmp_path / "validate.json"
    with path.open("w") as file:
        kernels.print_json(gpu_report(), file=file)
    return path


def ids(root) -> dict[str, ElementTree.Element]:
    return {element.get("id"): element for element in root.iter() if element.get("id")}


def texts(element) -> list[str]:
    return ["".join(text.itertext()) for text in element.iter(f"{SVG}text")]


def test_the_svg_chart_has_a_panel_per_measure_with_both_bars_of_every_row(saved_report, tmp_path):
    chart = tmp_path / "chart.svg"
    result = run_cli("validate", "--from-report", str(saved_report), "--plot", str(chart))
    assert result.returncode == kernels.EXIT_CHECK_FAILED, result.stderr  # the saved run failed a check
    assert f"chart written to {chart}" in result.stderr
    root = ElementTree.parse(chart).getroot()
    elements = ids(root)
    panel_ids = [element_id for element_id in elements if element_id.startswith("panel-")]
    assert panel_ids == [kernel_chart.panel_id(measure) for measure in MEASURES]
    report = read_report(saved_report)
    assert len(report.rows) == 23 * 2 + 6
    for row in report.rows:
        panel = elements[kernel_chart.panel_id(row.measure)]
        for version in kernels.VERSIONS:
            bar = ids(panel)[kernel_chart.bar_id(row, version)]
            assert bar.find(f"{SVG}path") is not None
        assert f"{row.kernel}  {row.shape}" in " ".join(texts(panel))
    for measure in MEASURES:
        assert {measure, "microseconds, median (log scale)"} <= set(texts(elements[kernel_chart.panel_id(measure)]))
    everything = " ".join(texts(root))
    assert "Test GPU 80GB · torch 2.13.0 · CUDA 13.0" in everything
    assert "1 of 23 kernel and shape cases FAILED the bit-exact check" in everything
    assert "original" in everything and "patched" in everything


def style_of(bar) -> str:
    return bar.find(f"{SVG}path").get("style")


def test_the_failing_case_is_hatched_and_labelled_and_the_legend_says_why(saved_report, tmp_path):
    chart = tmp_path / "chart.svg"
    assert run_cli("validate", "--from-report", str(saved_report), "--plot", str(chart)).returncode == 4
    root = ElementTree.parse(chart).getroot()
    elements = ids(root)
    for row in read_report(saved_report).rows:
        failed = (row.kernel, row.shape) == FAILING_CASE
        assert row.correct is not failed
        for version in kernels.VERSIONS:
            style = style_of(elements[kernel_chart.bar_id(row, version)])
            assert ("url(#" in style) is failed, (row, version, style)  # a hatch is an SVG pattern fill
            assert (kernel_chart.FAILED_COLOUR in style) is failed
        labels = texts(elements[kernel_chart.panel_id(row.measure)])
        assert (f"{row.kernel}  {row.shape}  ({kernel_chart.FAILED_LABEL})" in labels) is failed
    legend = [text for text in texts(root) if text in ("original", "patched", kernel_chart.FAILED_LABEL)]
    assert legend == ["original", "patched", kernel_chart.FAILED_LABEL]


def test_a_report_that_passed_has_no_failure_mark_or_legend_entry(saved_report, tmp_path):
    payload = json.loads(saved_report.read_text())
    for row in payload["rows"]:
        row["correct"] = True
    payload["failures"] = []
    saved_report.write_text(json.dumps(payload))
    chart = tmp_path / "chart.svg"
    assert run_cli("validate", "--from-report", str(saved_report), "--plot", str(chart)).returncode == 0
    root = ElementTree.parse(chart).getroot()
    assert kernel_chart.FAILED_LABEL not in " ".join(texts(root))
    assert not any("url(#" in style_of(bar) for bar_id, bar in ids(root).items() if bar_id.startswith("bar-"))


def test_a_panel_gets_a_log_axis_only_when_its_range_is_over_thirty():
    def panel(low, high):
        row = kernels.ComparisonRow("k", "s", "m", high, low, high / low, True)
        return kernel_chart.Panel("m", (row,))

    assert not panel(1.0, 30.0).log_scale
    assert panel(1.0, 30.5).log_scale
    # In the realistic report: the scatters' GPU time alone stays linear, the whole GPU panel does not.
    rows = gpu_report().rows
    scatters = tuple(r for r in rows if r.kernel.startswith("reshape") and r.measure == "gpu us/call")
    assert not kernel_chart.Panel("gpu us/call", scatters).log_scale
    assert all(panel.log_scale for panel in kernel_chart.panels(rows))


def test_a_png_chart_is_a_png_of_the_figure_size(saved_report, tmp_path):
    chart = tmp_path / "chart.PNG"
    assert run_cli("validate", "--from-report", str(saved_report), "--plot", str(chart)).returncode == 4
    data = chart.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width == int(kernel_chart.WIDTH_INCHES * kernel_chart.PNG_DPI)
    rows = 23 * 2 + 6
    assert height >= rows * kernel_chart.INCHES_PER_BAR_PAIR * kernel_chart.PNG_DPI
    assert 50_000 < len(data) < 1_000_000


def test_one_report_gives_one_svg_byte_for_byte(tmp_path):
    first, second = tmp_path / "first.svg", tmp_path / "second.svg"
    kernel_chart.draw_chart(gpu_report(), first)
    kernel_chart.draw_chart(gpu_report(), second)
    assert first.read_bytes() == second.read_bytes()


def test_a_chart_that_fails_to_render_leaves_the_old_file(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    chart = tmp_path / "chart.svg"
    chart.write_text("old chart")

    def broken(*args, **kwargs):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError):
        kernel_chart.draw_chart(gpu_report(), chart)
    assert chart.read_text() == "old chart"
    assert [path.name for path in tmp_path.iterdir()] == ["chart.svg"]


def test_the_saved_report_reads_back_as_the_report_that_was_printed(saved_report, capsys):
    assert read_report(saved_report) == gpu_report() and gpu_report().rows
    assert kernels.replay_report(saved_report, "json") == kernels.EXIT_CHECK_FAILED
    assert json.loads(capsys.readouterr().out) == json.loads(saved_report.read_text())


def test_from_report_prints_the_table_without_torch_or_a_run(saved_report):
    hook = "import sys\nsys.modules['torch'] = None\n" + NO_WORK
    result = run_cli_hooked(hook, "validate", "--from-report", str(saved_report))
    assert result.returncode == 4, result.stderr
    assert "copy_blocks" in result.stdout and "Test GPU 80GB" in result.stdout and "NO" in result.stdout


# Makes any start of the real work (the copies, the rewrite, the builds) fail loudly.
NO_WORK = (
    "import optpatch.validation.kernels as kc\n"
    "def started(*args, **kwargs):\n"
    "    print('WORK STARTED', flush=True)\n"
    "    raise SystemExit(99)\n"
    "kc.check_kernels = started\n"
)
WITHOUT_MATPLOTLIB = "import sys\nsys.modules['matplotlib'] = None\n"  # `import matplotlib` raises ImportError


def test_without_matplotlib_plot_says_how_to_install_it_before_any_work(tmp_path):
    chart = tmp_path / "chart.svg"
    result = run_cli_hooked(WITHOUT_MATPLOTLIB + NO_WORK, "validate", "--plot", str(chart))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pip install matplotlib" in result.stderr
    assert "WORK STARTED" not in result.stdout and not chart.exists()


def test_without_matplotlib_from_report_with_plot_exits_2_too(saved_report, tmp_path):
    result = run_cli_hooked(WITHOUT_MATPLOTLIB, "validate", "--from-report", str(saved_report), "--plot",
                            str(tmp_path / "chart.svg"))
    assert result.returncode == 2 and "pip install matplotlib" in result.stderr
    assert result.stdout == ""


def test_the_no_work_hook_does_stop_a_real_run(tmp_path):
    # The two tests above prove nothing unless the hook catches a run that starts.
    result = run_cli_hooked(NO_WORK, "validate", "--plot", str(tmp_path / "chart.svg"))
    assert result.returncode == 99 and "WORK STARTED" in result.stdout


@pytest.mark.parametrize("name", ["chart.pdf", "chart.jpg", "chart", "chart.svg.txt"])
def test_a_chart_name_without_svg_or_png_is_a_usage_error_before_any_work(tmp_path, name):
    result = run_cli_hooked(NO_WORK, "validate", "--plot", str(tmp_path / name))
    assert result.returncode == 2
    assert "name the file *.svg or *.png" in result.stderr and "WORK STARTED" not in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_chart_in_a_missing_folder_is_a_usage_error_before_any_work(tmp_path):
    result = run_cli_hooked(NO_WORK, "validate", "--plot", str(tmp_path / "absent" / "chart.svg"))
    assert result.returncode == 2 and "does not exist" in result.stderr and "WORK STARTED" not in result.stdout


def test_a_chart_that_cannot_be_written_is_exit_2_after_the_report(tmp_path, capsys):
    code = kernels.publish(gpu_report(), "json", tmp_path / "gone" / "chart.svg")
    captured = capsys.readouterr()
    assert code == 2 and json.loads(captured.out)["rows"]
    assert f"the chart cannot be written to {tmp_path / 'gone' / 'chart.svg'}" in captured.err


def test_a_report_without_timings_writes_no_chart_and_says_so(tmp_path, capsys):
    chart = tmp_path / "chart.svg"
    code = kernels.publish(kernels.KernelReport(skipped=["GPU: none"]), "json", chart)
    assert code == 0 and not chart.exists()
    assert "no chart written" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ("{", "not JSON"),
    ("[]", "no list of `rows`"),
    ('{"rows": [{"kernel": "k"}]}', "row 1 has no `shape`"),
    ('{"rows": [{"kernel": "k", "shape": "s", "measure": "m", "original_us": "12", "patched_us": 1,'
     ' "speedup": null, "correct": true}]}', "`original_us` is '12', not int or float or null"),
    ('{"rows": [{"kernel": "k", "shape": "s", "measure": "m", "original_us": true, "patched_us": 1,'
     ' "speedup": null, "correct": true}]}', "`original_us` is True"),
    ('{"rows": [], "failures": "none"}', "`failures` is not a list"),
])
def test_a_file_that_is_not_a_saved_report_is_exit_2_naming_it(tmp_path, content, message):
    report = tmp_path / "report.json"
    report.write_text(content)
    result = run_cli("validate", "--from-report", str(report))
    assert result.returncode == 2
    assert str(report) in result.stderr and message in result.stderr and "--format json" in result.stderr


def test_from_report_and_workdir_together_are_a_usage_error(saved_report, tmp_path):
    result = run_cli("validate", "--from-report", str(saved_report), "--workdir", str(tmp_path / "work"))
    assert result.returncode == 2 and "--from-report runs nothing" in result.stderr


def test_a_row_without_a_patched_value_draws_only_the_original_bar(tmp_path):
    report = gpu_report()
    report.rows[0] = dataclasses.replace(report.rows[0], patched_us=None, speedup=None)
    chart = tmp_path / "chart.svg"
    kernel_chart.draw_chart(report, chart)
    elements = ids(ElementTree.parse(chart).getroot())
    assert kernel_chart.bar_id(report.rows[0], "original") in elements
    assert kernel_chart.bar_id(report.rows[0], "patched") not in elements


def test_the_recorded_h100_report_in_docs_is_the_table_beside_it():
    # docs/benchmarks.md prints the GPU run's report as a table: every row of the report, with its numbers as the
    # table rounds them, is one line of it, and the table has no row the report lacks.
    docs = Path(__file__).resolve().parents[2] / "docs"
    lines = set((docs / "benchmarks.md").read_text().splitlines())
    report = read_report(docs / "validate-h100-2026-11-26.json")
    assert report.environment["device"] == "NVIDIA H100 80GB HBM3" and report.rows
    for row in report.rows:
        line = (f"| {row.kernel} | {row.shape} | {row.measure} | {row.original_us:,.1f} | {row.patched_us:,.1f} "
                f"| {row.speedup:.2f}x | {'yes' if row.correct else 'NO'} |")
        assert line in lines, line


def test_the_chart_never_touches_a_window_backend(saved_report, tmp_path):
    # A GUI backend asked for by the environment is neither imported nor used:
    # the figure is drawn on Agg without pyplot, so no window and no display.
    program = (
        "import sys\nfrom pathlib import Path\n"
        "from optpatch.validation import kernel_chart\nfrom optpatch.validation.kernel_report import read_report\n"
        f"kernel_chart.draw_chart(read_report(Path({str(saved_report)!r})), Path({str(tmp_path / 'chart.png')!r}))\n"
        "print(sorted(name for name in sys.modules if name.startswith(('matplotlib.pyplot', 'matplotlib.backends.backend_tk', 'tkinter'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "MPLBACKEND": "TkAgg", "DISPLAY": ""})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"
