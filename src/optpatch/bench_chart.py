"""`optpatch bench --plot FILE`: every tree's values, one dot a round, over a band of its quartiles and its median.

The title gives the speedup and its interval in words (bench_report.headline),
so the picture never says more than the statistics do. Drawn on the Agg
canvas and written atomically, as kernel_chart.py does (SVG or PNG by the
file's suffix; matplotlib from the `plot` extra).
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from optpatch.bench import ORIGINAL, BenchReport
from optpatch.bench_report import headline, speedup_text
from optpatch.validation.kernel_chart import PNG_DPI, VERSION_COLOURS, chart_format
from optpatch.writer import write_atomically

TITLE_WIDTH = 90


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    import statistics

    if len(values) < 2:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def _tree_label(report: BenchReport, label: str) -> str:
    """A tree's name, and for a patched one its speedup and interval."""
    comparison = next((c for c in report.comparisons if c.label == label), None)
    if comparison is None:
        return label
    return (f"{label}\n{speedup_text(comparison.speedup)} "
            f"({speedup_text(comparison.low)}-{speedup_text(comparison.high)})")


def draw_chart(report: BenchReport, path: Path) -> None:
    """Write the chart of REPORT's values to PATH."""
    file_format = chart_format(path)
    if not report.values or not report.comparisons:
        raise ValueError("the run has no values to draw")
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = list(report.values)
    style = {"svg.fonttype": "none", "svg.hashsalt": "optpatch", "font.size": 9, "font.sans-serif": ["DejaVu Sans"]}
    with matplotlib.rc_context(style):
        figure = Figure(figsize=(7.0, 1.6 + 0.55 * len(labels)), layout="constrained")
        FigureCanvasAgg(figure)
        ax = figure.subplots()
        for index, label in enumerate(labels, start=1):
            points = report.values[label]
            colour = VERSION_COLOURS["original" if label == ORIGINAL else "patched"]
            q1, median, q3 = _quartiles(points)
            ax.barh(index, q3 - q1, left=q1, height=0.5, color=colour, alpha=0.25, linewidth=0)
            ax.vlines(median, index - 0.25, index + 0.25, color="black", linewidth=1.2)
            offsets = [index + 0.09 * ((n % 5) - 2) for n in range(len(points))]  # spread out, so equal values show
            ax.scatter(points, offsets, s=14, color=colour, zorder=3).set_gid(f"values-{index}")
        ax.set_yticks(range(1, len(labels) + 1), [_tree_label(report, label) for label in labels])
        ax.set_ylim(len(labels) + 0.6, 0.4)
        ax.set_xlabel(report.metric.describe())
        ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
        ax.set_axisbelow(True)
        rounds = len(report.values[ORIGINAL])
        title = [f"optpatch bench: `{report.command}`, {rounds} rounds (ABBA)", headline(report.comparisons[0])]
        figure.suptitle("\n".join(line for text in title for line in textwrap.wrap(text, TITLE_WIDTH)), fontsize=9)
        buffer = io.BytesIO()
        metadata = {"Date": None} if file_format == "svg" else {"Software": None}
        figure.savefig(buffer, format=file_format, dpi=PNG_DPI, metadata=metadata)
    write_atomically(path, buffer.getvalue())
