"""`optpatch validate --plot FILE`: the report's timings as a chart.

One panel per measure the report holds (host time per call, GPU time per
call, time to return with GPU work queued), in the order the table shows
them. In each, an original and a patched bar per kernel and shape, grouped
by kernel, with the speedup at the end of the pair and each bar's
interquartile range as its whisker. Beside each panel, its speedups on a
log axis, each with the range its quartiles allow, against the run's noise:
a grey band spanning the ratios of the kernels whose code the rewrite left
unchanged (kernel_report.noise_bands). A ratio inside the noise, or of an
unchanged kernel, is drawn grey and labelled so, never as a regression
(kernel_report.reading). A panel whose largest
value is over LOG_SCALE_RANGE times its smallest gets a log axis, so that
5,000 us beside 20 us stays readable. A row whose bit-exact check failed is
hatched in red, its label says so, and the legend explains the mark.

matplotlib comes from the optional `plot` extra and is imported only here.
The figure is drawn on the Agg canvas (no window, no display) and written
atomically, as every file optpatch writes. SVG keeps its text as text
(smaller, searchable) and carries no date, so one report gives one file.
"""

from __future__ import annotations

import io
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from optpatch.validation.kernel_report import ComparisonRow, KernelReport, Reading, noise_bands, reading
from optpatch.writer import write_atomically

INSTALL_HINT = "pip install matplotlib"  # optpatch is on no registry: its `plot` extra is only matplotlib
CHART_FORMATS = {".svg": "svg", ".png": "png"}
LOG_SCALE_RANGE = 30.0
VERSION_COLOURS = {"original": "#a0a0a0", "patched": "#2a6fb0"}
FAILED_COLOUR = "#c62828"
FAILED_HATCH = "xxx"
FAILED_LABEL = "bit-exact check failed"
WIDTH_INCHES = 10.0
INCHES_PER_BAR_PAIR = 0.34
PANEL_FRAME_INCHES = 0.9
TITLE_INCHES = 1.3  # title, subtitle and legend
PNG_DPI = 110
BAR_HEIGHT = 0.38
KERNEL_GAP = 0.6  # extra space between kernels in a panel, in bar pairs
SUBTITLE_WIDTH = 110  # characters a line under the title
NOISE_COLOUR = "#8a8a8a"
NOISE_LABEL = "noise: the ratios of kernels whose code is unchanged"
BAND_COLOUR = "#e8e8e8"
READING_COLOURS = {Reading.FASTER: VERSION_COLOURS["patched"], Reading.SLOWER: FAILED_COLOUR}  # the rest: NOISE_COLOUR
RATIO_WIDTH_SHARE = 0.32  # of the figure's width: the speedup column beside the bars
# Keys of the report's environment shown first in the subtitle, in this order.
ENVIRONMENT_ORDER = (("device", ""), ("torch", "torch "), ("cuda", "CUDA "), ("date", ""))


class ChartUnavailable(Exception):
    """matplotlib cannot be imported; the message says how to install it."""


def chart_format(path: Path) -> str:
    """'svg' or 'png', from the file's suffix; ValueError for any other."""
    try:
        return CHART_FORMATS[path.suffix.lower()]
    except KeyError:
        raise ValueError(f"{path}: a chart is written as SVG or PNG; name the file *.svg or *.png") from None


def require_matplotlib() -> None:
    """Raise ChartUnavailable unless matplotlib imports: called before any
    work, so that a missing extra never costs a run."""
    try:
        import matplotlib.figure  # noqa: F401
        from matplotlib.backends import backend_agg  # noqa: F401
    except ImportError as error:
        raise ChartUnavailable(f"drawing a chart needs matplotlib ({error}); install it with: {INSTALL_HINT}") from None


@dataclass(frozen=True)
class Panel:
    """The rows of one measure, grouped by kernel in order of first appearance."""

    measure: str
    rows: tuple[ComparisonRow, ...]

    @property
    def log_scale(self) -> bool:
        values = [value for row in self.rows for value in (row.original_us, row.patched_us) if value and value > 0]
        return bool(values) and max(values) / min(values) > LOG_SCALE_RANGE


def panels(rows: list[ComparisonRow]) -> list[Panel]:
    measures = list(dict.fromkeys(row.measure for row in rows))
    kernels = list(dict.fromkeys(row.kernel for row in rows))
    return [
        Panel(measure, tuple(row for kernel in kernels for row in rows if row.measure == measure and row.kernel == kernel))
        for measure in measures
    ]


def element_id(*parts: str) -> str:
    """An SVG id for a panel or bar: its parts, lowercase, runs of anything
    but letters and digits as one hyphen ("bar-host-us-call-copy-blocks-...")."""
    return re.sub(r"[^a-z0-9]+", "-", " ".join(parts).lower()).strip("-")


def bar_id(row: ComparisonRow, version: str) -> str:
    return element_id("bar", row.measure, row.kernel, row.shape, version)


def panel_id(measure: str) -> str:
    return element_id("panel", measure)


def subtitle(report: KernelReport) -> list[str]:
    """Lines under the title: the machine, any other note of the report's
    environment, and the correctness verdict."""
    environment = report.environment
    known = {key for key, _ in ENVIRONMENT_ORDER}
    machine = " · ".join(f"{prefix}{environment[key]}" for key, prefix in ENVIRONMENT_ORDER if environment.get(key))
    notes = [f"{key}: {value}" for key, value in environment.items() if key not in known and value]
    cases = {(row.kernel, row.shape): row.correct for row in report.rows}  # a case's rows share its verdict
    failed = sum(not correct for correct in cases.values())
    verdict = (f"{failed} of {len(cases)} kernel and shape cases FAILED the bit-exact check (hatched in red)" if failed
               else f"all {len(cases)} kernel and shape cases passed the bit-exact checks")
    lines = [line for line in (machine, *notes, verdict) if line]
    return [wrapped for line in lines for wrapped in textwrap.wrap(line, SUBTITLE_WIDTH)]


def speedup_label(speedup: float) -> str:
    """As the text table rounds it: 1.92x, 214x."""
    return f"{speedup:.2f}x" if speedup < 10 else f"{speedup:.0f}x"


def draw_chart(report: KernelReport, path: Path) -> None:
    """Write the chart of report.rows to `path` (SVG or PNG by its suffix)."""
    file_format = chart_format(path)
    if not report.rows:
        raise ValueError("the report has no timings to draw (they need a CUDA GPU)")
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    chart_panels = panels(report.rows)
    heights = [len(panel.rows) * INCHES_PER_BAR_PAIR + PANEL_FRAME_INCHES for panel in chart_panels]
    # One font name per text element instead of matplotlib's list of eleven: a third smaller SVG.
    style = {"svg.fonttype": "none", "svg.hashsalt": "optpatch", "font.size": 9, "font.sans-serif": ["DejaVu Sans"]}
    with matplotlib.rc_context(style):
        figure = Figure(figsize=(WIDTH_INCHES, sum(heights) + TITLE_INCHES), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(len(chart_panels), 2, squeeze=False, height_ratios=heights,
                               width_ratios=[1 - RATIO_WIDTH_SHARE, RATIO_WIDTH_SHARE])
        bands = noise_bands(report.rows)
        for panel, (ax, ratio_ax) in zip(chart_panels, axes):
            positions = _draw_panel(panel, ax, bands)
            _draw_ratios(panel, ratio_ax, positions, bands.get(panel.measure))
        title = ["optpatch validate: the bundled kernels before and after optpatch", *subtitle(report)]
        figure.suptitle("\n".join(title), fontsize=10)
        figure.legend(handles=_legend_handles(report.rows), loc="outside lower center", ncols=4, frameon=False)
        buffer = io.BytesIO()
        metadata = {"Date": None} if file_format == "svg" else {"Software": None}
        figure.savefig(buffer, format=file_format, dpi=PNG_DPI, metadata=metadata)
    write_atomically(path, buffer.getvalue())


def _row_label(row: ComparisonRow) -> str:
    label = f"{row.kernel}  {row.shape}"
    if not row.correct:
        return f"{label}  ({FAILED_LABEL})"
    return f"{label}  (code unchanged)" if row.code_changed is False else label


def _quartiles(row: ComparisonRow, version: str) -> tuple[float | None, float | None, float | None]:
    if version == "original":
        return row.original_q1, row.original_us, row.original_q3
    return row.patched_q1, row.patched_us, row.patched_q3


def _speedup_note(row: ComparisonRow, judged: Reading) -> str:
    """The label at the end of a pair: the ratio, and when it is no difference, why."""
    if judged in (Reading.WITHIN_NOISE, Reading.UNCHANGED):
        return f"{speedup_label(row.speedup)}, {judged.value}"
    return speedup_label(row.speedup)


def _reading_colour(row: ComparisonRow, judged: Reading) -> str:
    """Red for a failed check or a slowdown beyond the noise, blue for a gain, grey for no difference; black unjudged."""
    if not row.correct:
        return FAILED_COLOUR
    return "black" if judged is Reading.NOT_JUDGED else READING_COLOURS.get(judged, NOISE_COLOUR)


def _draw_panel(panel: Panel, ax, bands: dict[str, tuple[float, float]]) -> list[float]:
    """The bars of PANEL with their quartiles as whiskers; returns each row's position."""
    positions, position = [], 0.0
    for index, row in enumerate(panel.rows):
        if index and row.kernel != panel.rows[index - 1].kernel:
            position += KERNEL_GAP
        positions.append(position)
        position += 1.0
    for offset, version in ((-BAR_HEIGHT / 2, "original"), (BAR_HEIGHT / 2, "patched")):
        for row, y in zip(panel.rows, positions):
            q1, value, q3 = _quartiles(row, version)
            if value is None:
                continue
            failed = not row.correct
            whisker = None if q1 is None or q3 is None else [[max(0.0, value - q1)], [max(0.0, q3 - value)]]
            bars = ax.barh(y + offset, value, height=BAR_HEIGHT, color=VERSION_COLOURS[version], xerr=whisker,
                           error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "#404040"},
                           edgecolor=FAILED_COLOUR if failed else "none", hatch=FAILED_HATCH if failed else None,
                           linewidth=0.8 if failed else 0)
            bars.patches[0].set_gid(bar_id(row, version))
    for row, y in zip(panel.rows, positions):
        longest = max((value for value in (row.original_q3 or row.original_us, row.patched_q3 or row.patched_us)
                       if value is not None), default=None)
        if longest is not None and row.speedup is not None:
            judged = reading(row, bands)
            ax.annotate(_speedup_note(row, judged), xy=(longest, y), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8, color=_reading_colour(row, judged))
    labels = [_row_label(row) for row in panel.rows]
    ax.set_yticks(positions, labels)
    for label, row in zip(ax.get_yticklabels(), panel.rows):
        if not row.correct:
            label.set_color(FAILED_COLOUR)
    ax.set_ylim(*panel_limits(positions))
    ax.set_title(panel.measure, loc="left", fontsize=10, fontweight="bold")
    if panel.log_scale:
        ax.set_xscale("log")
    ax.set_xlabel("microseconds, median" + (" (log scale)" if panel.log_scale else ""))
    ax.margins(x=0.12)
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_gid(panel_id(panel.measure))
    return positions


def ratio_id(row: ComparisonRow) -> str:
    return element_id("ratio", row.measure, row.kernel, row.shape)


def ratios_id(measure: str) -> str:
    return element_id("ratios", measure)


def _draw_ratios(panel: Panel, ax, positions: list[float], band: tuple[float, float] | None) -> None:
    """Each row's speedup with its quartile range, on a log axis, over the measure's noise band and the 1.0 line."""
    ax.set_xscale("log")
    if band is not None:
        ax.axvspan(*band, color=BAND_COLOUR, zorder=0).set_gid(element_id("noise", panel.measure))
    ax.axvline(1.0, color="#606060", linewidth=0.7, zorder=1)
    bands = {panel.measure: band} if band is not None else {}
    for row, y in zip(panel.rows, positions):
        if row.speedup is None:
            continue
        judged = reading(row, bands)
        colour = _reading_colour(row, judged)
        spread = row.speedup_range
        whisker = None if spread is None else [[row.speedup - spread[0]], [spread[1] - row.speedup]]
        hollow = judged is Reading.UNCHANGED
        container = ax.errorbar(row.speedup, y, xerr=whisker, fmt="o", markersize=3.5, color=colour, elinewidth=0.8,
                                capsize=1.5, markerfacecolor="white" if hollow else colour, zorder=3)
        container.lines[0].set_gid(ratio_id(row))
    from matplotlib.ticker import NullFormatter, NullLocator

    ax.set_ylim(*panel_limits(positions))
    ax.set_yticks([])
    ax.margins(x=0.15)
    ticks = ratio_ticks(*ax.get_xlim())
    ax.set_xticks(ticks, [f"{tick:g}x" for tick in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_title("speedup", loc="left", fontsize=10, fontweight="bold")
    ax.set_xlabel("original / patched, log scale")
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_gid(ratios_id(panel.measure))


RATIO_TICKS = (0.1, 0.2, 0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0)
MAX_RATIO_TICKS = 5


def ratio_ticks(low: float, high: float) -> list[float]:
    """Round ratios within [LOW, HIGH] for the speedup axis, 1.0 always among them, at most MAX_RATIO_TICKS spread out."""
    import math

    inside = [tick for tick in RATIO_TICKS if low <= tick <= high] or [1.0]
    gap = math.log(high / low) / MAX_RATIO_TICKS  # the least distance between two labels, on the log axis
    chosen = [1.0] if 1.0 in inside else []
    for tick in sorted(inside, key=lambda tick: abs(math.log(tick))):  # outwards from 1.0
        if all(abs(math.log(tick / other)) >= gap for other in chosen):
            chosen.append(tick)
    return sorted(chosen)


def panel_limits(positions: list[float]) -> tuple[float, float]:
    """The y limits that put the rows where the bar panel beside has them (inverted: first row on top)."""
    return max(positions) + 0.5, min(positions) - 0.5


def _legend_handles(rows: list[ComparisonRow]) -> list:
    from matplotlib.patches import Patch

    handles = [Patch(color=colour, label=version) for version, colour in VERSION_COLOURS.items()]
    if noise_bands(rows):
        handles.append(Patch(color=BAND_COLOUR, label=NOISE_LABEL))
    if any(not row.correct for row in rows):
        handles.append(Patch(facecolor="white", edgecolor=FAILED_COLOUR, hatch=FAILED_HATCH, label=FAILED_LABEL))
    return handles
