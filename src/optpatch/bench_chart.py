"""`optpatch bench --plot FILE`: every tree's values, one dot a round, beside a box of its quartiles.

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
from optpatch.bench_report import headline
from optpatch.kernel_chart import PNG_DPI, VERSION_COLOURS, chart_format
from optpatch.writer import write_atomically

TITLE_WIDTH = 90


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
        values = [report.values[label] for label in labels]
        ax.boxplot(values, vert=False, widths=0.5, showfliers=False, medianprops={"color": "black"})
        for index, (label, points) in enumerate(zip(labels, values), start=1):
            colour = VERSION_COLOURS["original" if label == ORIGINAL else "patched"]
            offsets = [index + 0.18 * ((n % 5) - 2) / 2 for n in range(len(points))]
            ax.scatter(points, offsets, s=14, color=colour, zorder=3, label=None)
        ax.set_yticks(range(1, len(labels) + 1), labels)
        ax.invert_yaxis()
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
