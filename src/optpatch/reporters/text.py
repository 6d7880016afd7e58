"""The text reports, as ruff's users know them: `full`, a block per finding, and `concise`, a line per finding.

`full` (the default):

    minivllm/kv_cache.py:34:22: OPT101 zeros-to-empty [safe, in patch]
      impact: medium, per-call; rewrite: `torch.empty(cpu_blocks.shape,
        dtype=cpu_blocks.dtype, dev…`
      proof: every path overwrites `gpu_blocks` before reading it: L35: overwritten
        in full by `gpu_blocks.copy_(cpu_blocks, non_blocking=True)`

Fixes come first, then proposals, then advice (and kept sites with -v);
`--show` picks which of them. Within each, findings come highest impact
first (the impact weighed by how often the site runs: frequency.py; then
the time a --profile measured), and in path and line order within a class.
Paths are relative to the current folder where the file lies below it, to
be clicked and pasted. A finding's header line is never wrapped, so that a
grep for `OPT102 create-on-device [safe` finds every one; every other line
is wrapped at word boundaries to the width; only a single word longer than
the width (a long path) runs over it. Quoted code
(between backticks) is collapsed to one line and shortened with an
ellipsis, so source pasted into a reason cannot flood the screen, while the
prose of a reason is never cut. Kept sites are listed only with -v, in the
same form. The summary counts each status by rule, tier and area, and kept
sites by why they were kept (their `KeepCategory`), never by the words of a
reason.
"""

from __future__ import annotations

import re
from collections import Counter

from rich.text import Text

from optpatch.model import CodeArea, Decided, Finding, Impact, KeepCategory, Verdict, frequency_not_known
from optpatch.reporters import ReportOptions, counted
from optpatch.reporters.status import Status, area_note, status_of
from optpatch.reporters.wrapping import together, wrap
from optpatch.cpp_headers import HeaderOutcome
from optpatch.results import RunResult
from optpatch.source import LINE_BREAK

MIN_WIDTH = 40  # narrower than this, wrapping would leave a word or two a line
CODE_LIMIT = 60  # characters of quoted code shown before the ellipsis
MIN_CODE = 16  # the least of it worth showing
ELLIPSIS = "…"
_QUOTED = re.compile(r"`[^`]*`")
_STYLE = {
    Status.FIXED: "bold green", Status.IN_PATCH: "bold green", Status.FIXABLE: "bold green",
    Status.PROPOSED: "yellow", Status.KEPT: "dim", Status.ADVICE: "cyan",
}
_LABEL = {Verdict.FIX: "proof", Verdict.KEEP: "blocked by", Verdict.ADVICE: "advice"}
_COUNTED = {
    Status.FIXED: ("fixed", "fixed"), Status.IN_PATCH: ("fix in the patch", "fixes in the patch"),
    Status.FIXABLE: ("fixable", "fixable"), Status.PROPOSED: ("proposed (not applied)", "proposed (not applied)"),
    Status.KEPT: ("kept", "kept"), Status.ADVICE: ("advice", "advice"),
}
IMPACT_ORDER = (Impact.HIGH, Impact.MEDIUM, Impact.LOW, Impact.NONE)
SUMMARY_ORDER = (Status.FIXED, Status.IN_PATCH, Status.FIXABLE, Status.PROPOSED, Status.KEPT, Status.ADVICE)
# --show's names, and the statuses each lists, in the order the report lists them.
SHOWN = {
    "fixes": (Status.FIXED, Status.IN_PATCH, Status.FIXABLE), "proposals": (Status.PROPOSED,),
    "advice": (Status.ADVICE,), "kept": (Status.KEPT,),
}
CONCISE_WIDTH = 120  # a concise line's length where the path leaves room


# -- the two formats ----------------------------------------------------------------------


def render_full(result: RunResult, options: ReportOptions) -> list[Text]:
    width = max(MIN_WIDTH, options.width)
    lines: list[Text] = []
    for decided in shown_findings(result, options):
        lines += finding_block(decided, options, width)
        lines.append(Text())
    return lines + trailer(result, options, width)


def render_concise(result: RunResult, options: ReportOptions) -> list[Text]:
    """One line per finding, never wrapped (for grep), no proof, within CONCISE_WIDTH where the path allows; then the summary."""
    width = max(MIN_WIDTH, options.width)
    lines = []
    for decided in shown_findings(result, options):
        finding, status = decided.finding, status_of(decided, options.delivery)
        head = header(finding, status, options.display)
        line = Text(head)
        _style_header([line], finding, status, options.display)
        line.append(f" {concise_message(finding, CONCISE_WIDTH - len(head) - 1)}")
        lines.append(line)
    if lines:
        lines.append(Text())
    return lines + trailer(result, options, width)


def shown_findings(result: RunResult, options: ReportOptions) -> list[Decided]:
    """The findings `--show` asks for (default: fixes, proposals, advice; kept too with -v): fixes first, then
    proposals, advice and kept sites, each highest impact first (`ranking`)."""
    names = options.show or {"fixes", "proposals", "advice"} | ({"kept"} if options.verbose else set())
    order = [status for name in SHOWN if name in names for status in SHOWN[name]]
    rank = {status: index for index, status in enumerate(order)}
    chosen = [d for d in result.decided if status_of(d, options.delivery) in rank]
    return sorted(chosen, key=lambda d: (rank[status_of(d, options.delivery)], ranking(d.finding)))


def ranking(finding: Finding) -> tuple:
    """Fixes and advice before kept sites, then by impact, how often the site runs and measured time, highest
    first (a one-time site's first call may take longer than a per-step one's five)."""
    frequency = finding.frequency
    measured = frequency.measured if frequency is not None else None
    return (finding.verdict is Verdict.KEEP, -finding.impact.rank, -(frequency.frequency.rank if frequency else 0),
            -(measured.microseconds if measured else 0.0), finding.sort_key)


# -- one finding --------------------------------------------------------------------------


def finding_block(decided: Decided, options: ReportOptions, width: int) -> list[Text]:
    finding, decision = decided
    status = status_of(decided, options.delivery)
    limit = code_limit(width)
    head = [Text(header(finding, status, options.display))]  # never wrapped: one line to grep
    _style_header(head, finding, status, options.display)
    body = wrap(short_message(finding, limit), width, "  ", "    ")
    if status is Status.PROPOSED and decision.refused_because:
        body += wrap(f"not applied: {decision.refused_because}", width, "  ", "    ")
    body += wrap(f"{_LABEL[finding.verdict]}: {prose(finding.reason, limit)}", width, "  ", "    ")
    if finding.verdict is not Verdict.KEEP:
        frequency = finding.frequency
        runs = frequency.describe(finding.path) if frequency is not None else frequency_not_known(finding.path)
        body += wrap(f"runs: {runs}", width, "  ", "    ")
    if options.show_fixes and finding.verdict is Verdict.FIX:
        body += fix_diff(finding, options.original_text(finding.path), width)
    return head + [Text(line) for line in body]


def header(finding: Finding, status: Status, display=lambda rel: rel) -> str:
    """`path:line:col: CODE name [tier, status]`; kept sites and advice have no tier."""
    where = location(finding, display)
    if finding.verdict is Verdict.FIX:
        return f"{where}: {finding.code} {finding.name} [{finding.fix.tier.value}, {status}]"
    return f"{where}: {finding.code} {finding.name} [{status}]"


def location(finding: Finding, display) -> str:
    return f"{display(finding.path)}:{finding.line}:{finding.col}"


def error_line(error, display=lambda rel: rel) -> str:
    """`path:line:col: error: reason`, as compilers write it (line and column where known)."""
    where = display(error.path) + "".join(f":{n}" for n in (error.line, error.col if error.line else None) if n)
    return f"{where}: error: {error.reason}"


def _style_header(lines: list[Text], finding: Finding, status: Status, display) -> None:
    """Location and code in bold, `[tier, status]` in the status's colour."""
    end = len(location(finding, display)) + 1
    lines[0].stylize("bold", 0, end)
    lines[0].stylize("bold", end + 1, end + 1 + len(finding.code))
    last = lines[-1]
    last.stylize(_STYLE[status], last.plain.rfind("["))


def short_message(finding: Finding, limit: int) -> str:
    """What the finding is, from its typed fields: the rewrite and its impact, or why the site was kept."""
    runs = finding.frequency.frequency.value if finding.frequency is not None else finding.context.value
    where = f"{finding.impact.value}, {runs}"
    if finding.size is not None and finding.size is not finding.impact:
        where += f" (size {finding.size.value})"
    if finding.area is not CodeArea.LIBRARY:
        where += f"; in {finding.area.value}"
    if finding.verdict is Verdict.KEEP:
        return f"kept: {_keep_label(finding)}"
    if finding.fix is not None and finding.fix.replacement:
        return f"impact: {where}; rewrite: {quote(finding.fix.replacement, limit)}"
    return f"impact: {where}"


def concise_message(finding: Finding, room: int) -> str:
    """The one-line form: the short message (no proof: `explain` has it), its quoted code cut to fit ROOM where it can."""
    limit = CODE_LIMIT
    message = short_message(finding, limit)
    while len(message) > room and limit > MIN_CODE:
        limit = max(MIN_CODE, limit - (len(message) - room))
        message = short_message(finding, limit)
    return message


def _header_lines(result: RunResult) -> list[str]:
    """-v: each C++/CUDA file whose headers were looked for, with its mode and what became of the parse; a count
    of the files whose header-free parse left no question (the JSON report lists those too)."""
    lines, quiet = [], Counter()
    for path, report in result.header_reports:
        if report.outcome in (HeaderOutcome.NOT_NEEDED, HeaderOutcome.DISABLED):
            quiet[report.outcome] += 1
            continue
        detail = f": {report.detail}" if report.detail else ""
        fallback = "" if report.outcome is HeaderOutcome.USED else "; analysed without headers"
        lines.append(f"headers {path} {report.mode.value}, {report.outcome.value}{detail}{fallback}")
        lines += [f"  {source}" for source in report.sources]
    if quiet[HeaderOutcome.NOT_NEEDED]:
        lines.append(f"headers: {quiet[HeaderOutcome.NOT_NEEDED]} C++/CUDA file(s) needed none: the header-free parse "
                     "left no question")
    return lines  # files analysed under --no-headers are the user's choice: the JSON report lists them


def missing_header_lines(result: RunResult) -> list[str]:
    """One line per header the run's include folders lack, with the files analysed header-free for it; one line for
    the files whose parse with headers was put off until their precompiled header is built (cpp_second_look.py)."""
    missing = Counter(report.missing for _, report in result.header_reports if report.missing)
    lines = [f"{header} not found: {count} file(s) analysed header-free; pass -I or a compile_commands.json"
             for header, count in sorted(missing.items(), key=lambda item: (-item[1], item[0]))]
    put_off = sum(report.outcome is HeaderOutcome.PUT_OFF for _, report in result.header_reports)
    if put_off:
        lines.append(f"headers: {put_off} C++/CUDA file(s) analysed header-free this run, no fix resting on their "
                     "headers; the next run over the whole tree builds their precompiled headers and may find more "
                     "(-v lists them)")
    return lines


def _keep_label(finding: Finding) -> str:
    """How a kept site is named and counted: by its category, whatever its reason says."""
    return (finding.keep_category or KeepCategory.OTHER).value


# -- text that fits -----------------------------------------------------------------------


def code_limit(width: int) -> int:
    """Quoted code is cut to fit a continuation line, so that no word of it runs over the width."""
    return max(MIN_CODE, min(CODE_LIMIT, width - 6))


def quote(code: str, limit: int) -> str:
    return shorten_code(f"`{' '.join(code.split())}`", limit)


def shorten_code(quoted: str, limit: int) -> str:
    """A backticked span collapsed to one line and, past LIMIT characters, cut with an ellipsis."""
    collapsed = " ".join(quoted.split())
    if len(collapsed) <= limit:
        return collapsed
    return collapsed[: limit - 2].rstrip() + ELLIPSIS + "`"


def prose(text: str, limit: int) -> str:
    """A reason on one line, each quoted piece of code collapsed and shortened; the words around it untouched."""
    return " ".join(_QUOTED.sub(lambda match: shorten_code(match.group(), limit), text).split())


# -- the fix's diff (--show-fixes) -------------------------------------------------------


def fix_diff(finding: Finding, original: str | None, width: int) -> list[str]:
    """The lines the fix changes, before (`-`) and after (`+`), numbered as in the file; cut to the width."""
    hunks = _hunks(finding, original)
    if hunks is None:
        return wrap("diff: not shown, the file's text was not at hand; the patch has it", width, "  ", "    ")
    number_width = max(len(str(first + max(len(old), 1) - 1)) for first, old, _ in hunks)
    lines = ["  diff:"]
    for first, old, new in hunks:
        indent = _common_indent(old + new)
        lines += [f"    {first + offset:>{number_width}} - {line[indent:]}" for offset, line in enumerate(old)]
        lines += [f"    {'' if old else first:>{number_width}} + {line[indent:]}" for line in new]
    return [_cut(line.rstrip(), width) for line in lines]


def _hunks(finding: Finding, original: str | None) -> list[tuple[int, list[str], list[str]]] | None:
    """(first line, old lines, new lines) for each run of lines the fix's regions touch; None without the text.

    Regions are in the original file's lines and columns, also for a fix a
    later pass found; the text must be the one the run read, which the
    finding's own line confirms where it was read from that text (pass 0).
    """
    lines = LINE_BREAK.split(original) if original is not None else []
    regions = sorted(finding.regions, key=lambda r: (r.start_line, r.start_column))
    if not regions or max(r.end_line for r in regions) > len(lines):
        return None
    if finding.analysis_pass == 0 and lines[finding.line - 1] != finding.line_text:
        return None
    hunks, group = [], [regions[0]]
    for region in regions[1:]:
        if region.start_line > max(_last_line(r) for r in group):
            hunks.append(_hunk(group, lines))
            group = []
        group.append(region)
    hunks.append(_hunk(group, lines))
    return hunks


def _last_line(region) -> int:
    """The last line a region changes: one ending at the start of a line leaves that line alone."""
    return region.end_line - 1 if region.end_column == 1 and region.end_line > region.start_line else region.end_line


def _hunk(regions: list, lines: list[str]) -> tuple[int, list[str], list[str]]:
    """The lines REGIONS touch, before and after, less the lines they leave as they were at either end."""
    first, last = regions[0].start_line, max(_last_line(r) for r in regions)
    old = lines[first - 1 : last]
    starts = [0]
    for line in old:
        starts.append(starts[-1] + len(line) + 1)
    text = "\n".join(old) + "\n"
    for region in sorted(regions, key=lambda r: (r.start_line, r.start_column), reverse=True):
        start = starts[region.start_line - first] + region.start_column - 1
        end = starts[region.end_line - first] + region.end_column - 1
        text = text[:start] + LINE_BREAK.sub("\n", region.inserted) + text[end:]
    new = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    while old and new and old[0] == new[0]:
        old, new, first = old[1:], new[1:], first + 1
    while old and new and old[-1] == new[-1]:
        old, new = old[:-1], new[:-1]
    return first, old, new


def _common_indent(lines: list[str]) -> int:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    return min(indents, default=0)


def _cut(line: str, width: int) -> str:
    line = line.expandtabs(4)
    return line if len(line) <= width else line[: width - 1] + ELLIPSIS


# -- after the findings: failed files, unused suppressions, the summary ------------------


def trailer(result: RunResult, options: ReportOptions, width: int) -> list[Text]:
    lines: list[Text] = []
    for error in result.errors:
        for index, line in enumerate(wrap(error_line(error, options.display), width, "", "    ")):
            text = Text(line)
            if index == 0:
                start = line.find(": error:") + 2
                text.stylize("bold red", start, start + len("error"))
            lines.append(text)
    if result.unused_suppressions and options.verbose:
        places = ", ".join(f"{path}:{line}" for path, line in result.unused_suppressions)
        lines += [Text(line) for line in wrap(f"unused suppressions (they silence nothing): {places}", width, "", "    ")]
    if options.verbose:
        for text in _header_lines(result):
            lines += [Text(line) for line in wrap(text, width, "", "    ")]
    for text in missing_header_lines(result):
        lines += [Text(line, style="dim") for line in wrap(text, width, "", "    ")]
    return lines + summary_lines(result, options, width)


def summary_lines(result: RunResult, options: ReportOptions, width: int) -> list[Text]:
    """`Summary:` with the count of each status, then one line per status by rule, tier and area (and, kept, by category)."""
    by_status = _by_status(result, options)
    lines = summary_headline(result, options, width)
    label_width = max(len(str(status)) for status in by_status) + 1 if by_status else 0
    for status in SUMMARY_ORDER:
        if status in by_status:
            label = f"  {status}:".ljust(label_width + 3)
            detail = "; ".join(breakdown(by_status[status], status))
            lines += [Text(line) for line in wrap(detail, width, label, " " * len(label))]
    impacts = Counter(f.impact for f in result.findings if f.verdict is Verdict.FIX)
    if impacts:
        label = "  impact:".ljust(label_width + 3)
        counts = ", ".join(together(f"{impacts[level]} {level.value}") for level in IMPACT_ORDER if impacts[level])
        lines += [Text(line) for line in wrap(f"{counts} (fixes, highest first above)", width, label, " " * len(label))]

    if Status.FIXABLE in by_status:
        apply = (f"To apply the fixes: run this command again with {together('--fix')}, or with "
                 f"{together('--diff > model_patch.diff')} for a patch (or {together('optpatch apply REPO')}).")
        lines += [Text(line) for line in wrap(apply, width, "", "")]
    if note := area_note(result.decided, options.fix_areas):
        lines += [Text(line) for line in wrap(note, width, "", "  ")]
    if Status.KEPT in by_status and not options.verbose:
        hint = "Kept sites are listed with -v; `optpatch explain FILE:LINE:COL` shows any site's proof or blocking use."
        lines += [Text(line, style="dim") for line in wrap(hint, width, "", "")]
    return lines


def summary_headline(result: RunResult, options: ReportOptions, width: int) -> list[Text]:
    """The first line of the summary (all that -q prints): how many of each status, and how many files."""
    by_status = _by_status(result, options)
    counts = [counted(len(by_status[status]), *_COUNTED[status]) for status in SUMMARY_ORDER if status in by_status]
    if result.suppressed:
        counts.append(f"{result.suppressed} suppressed")
    if result.unused_suppressions and not options.verbose:
        counts.append(f"{len(result.unused_suppressions)} unused suppressions (-v lists them)")
    files = f"{counted(result.analysed, 'file')} analysed {together(f'in {result.seconds:.2f} s')}"
    if result.errors:
        files += f", {len(result.errors)} could not be analysed"
    counts = [together(count) for count in counts]  # each count on one line: "3 proposed (not applied)"
    lines = [Text(line) for line in wrap(f"Summary: {', '.join(counts) or 'nothing found'}; {files}.", width, "", "  ")]
    lines[0].stylize("bold", 0, len("Summary:"))
    return lines


def _by_status(result: RunResult, options: ReportOptions) -> dict[Status, list[Finding]]:
    by_status: dict[Status, list[Finding]] = {}
    for decided in result.decided:
        by_status.setdefault(status_of(decided, options.delivery), []).append(decided.finding)
    return by_status


def breakdown(findings: list[Finding], status: Status) -> list[str]:
    """Counts by rule, tier (fixes), area, and why kept (kept sites), most first."""
    groups = [Counter(f.code for f in findings)]
    if status not in (Status.KEPT, Status.ADVICE):
        groups.append(Counter(f.fix.tier.value for f in findings if f.fix is not None))
    groups.append(Counter(f.area.value for f in findings))
    if status is Status.KEPT:
        groups.append(Counter(_keep_label(f) for f in findings))
    return [
        ", ".join(together(f"{n} {label}") for label, n in sorted(group.items(), key=lambda item: (-item[1], item[0])))
        for group in groups
    ]


# -- --statistics -------------------------------------------------------------------------


def statistics(result: RunResult, options: ReportOptions) -> list[dict]:
    """Findings counted by rule, tier and status, most first (ruff's --statistics)."""
    counted = Counter(_counted_as(decided, options) for decided in result.decided)
    rows = [
        {"code": code, "name": name, "tier": tier, "status": str(status), "count": count}
        for (code, name, tier, status), count in counted.items()
    ]
    return sorted(rows, key=lambda row: (SUMMARY_ORDER.index(Status(row["status"])), -row["count"], row["code"], row["tier"] or ""))


def _counted_as(decided: Decided, options: ReportOptions) -> tuple[str, str, str | None, Status]:
    finding = decided.finding
    tier = finding.fix.tier.value if finding.fix is not None else None
    return finding.code, finding.name, tier, status_of(decided, options.delivery)


def render_statistics(result: RunResult, options: ReportOptions) -> list[Text]:
    """ruff's --statistics table, fixes first, then a total line."""
    rows = statistics(result, options)
    if not rows:
        return [Text("No findings.")]
    cells = [(str(row["count"]), row["code"], row["name"], row["tier"] or "-", row["status"]) for row in rows]
    widths = [max(len(cell[i]) for cell in cells) for i in range(5)]
    table = [
        Text(f"{count:>{widths[0]}}  {code:<{widths[1]}}  {name:<{widths[2]}}  {tier:<{widths[3]}}  {status}")
        for count, code, name, tier, status in cells
    ]
    by_status = Counter()
    for row in rows:
        by_status[Status(row["status"])] += row["count"]
    parts = ", ".join(counted(by_status[status], *_COUNTED[status]) for status in SUMMARY_ORDER if by_status[status])
    return table + [Text(f"Total: {counted(sum(by_status.values()), 'finding')} ({parts})")]
