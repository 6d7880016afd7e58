"""The `optpatch` command line: apply, check, rules, explain, validate, bench (README.md, "Using it"; docs/bench.md).

Exit status: 0 ran to the end; 1 `check` found fixable findings (`bench`:
--require-speedup not met); 2 usage or configuration error (nothing written;
`bench`: also CMD failing on the original tree); 3 some files could not be
analysed (the rest was processed); 4 a validation failed (`bench`: also CMD
passing on the original tree and failing on a patched one).

The options follow ruff's where ruff has one: `--output-format` (`--format`
too), `--statistics`, `--show-fixes`, `--exit-zero`, `--extend-select`,
`--extend-ignore`, `--output-file`, and `check --diff`.
"""

from __future__ import annotations

import io
import os
import sys
from dataclasses import replace
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from optpatch import __version__
from optpatch.command_options import CONFIGURED_COMMAND, CommandOptions
from optpatch.reporters import CHOICES, FormatKind, ReportOptions, StatisticsForm, ValidationPlacement, counted, deprecation_note
from optpatch.reporters import output_format as registered_format
from optpatch.reporters.status import NOTHING_WRITTEN, PATCH_WRITTEN, Delivery
from optpatch.reporters.wrapping import together, wrap

if TYPE_CHECKING:
    from optpatch.validation.tests import ValidationOutcome

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FILE_ERRORS, EXIT_VALIDATION = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports SIGINT
EXIT_TERMINATED = 143  # SIGTERM, likewise
PROGRESS_MIN_FILES = 200
DEFAULT_WIDTH = 80  # the text report's width when neither COLUMNS nor a terminal says


class CommandError(click.ClickException):
    """A mistake in what was asked (a setting, a rule code, a path): one line on stderr, exit 2, nothing written.

    click's own usage errors (an unknown option, a missing argument) keep
    their usage banner; ours are about values, where the banner is noise.
    """

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _add_options(function, options):
    for option in reversed(options):
        function = option(function)
    return function


def selection_options(function):
    """Which rules run, on which files, how: every command that analyses a tree takes these."""
    return _add_options(function, [
        click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated); ALL: every rule."),
        click.option("--extend-select", multiple=True, metavar="CODES", help="These rules too, on top of `select`."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes."),
        click.option("--extend-ignore", multiple=True, metavar="CODES", help="Skip these too, on top of `ignore` (as --ignore)."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes of the `unsafe` tier."),
        click.option("--fix-areas", metavar="AREAS",
                     help="Apply fixes in these areas (comma-separated: library, tests, benchmarks; default: library). "
                          "Fixes elsewhere are reported, not applied."),
        click.option("--force-exclude", is_flag=True, default=None,
                     help="Apply `exclude` also to files named on the command line (the pre-commit hooks pass it)."),
        click.option("--strict", is_flag=True,
                     help="A file over max-file-size is a failure (exit 3), not a skip with a warning."),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache ($OPTPATCH_CACHE_DIR, else ~/.cache/optpatch)."),
        click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False),
                     help="Read settings from this TOML file instead of the nearest .optpatch.toml, optpatch.toml or "
                          "pyproject.toml with [tool.optpatch]."),
        click.option("--trust-config", is_flag=True, help="Allow the scanned repo's configuration to name commands to run."),
        click.option("-q", "--quiet", is_flag=True, help="Print only errors and the summary line."),
        click.option("-v", "--verbose", is_flag=True, help="List kept sites too."),
    ])


def report_options(function):
    """How the findings are reported (apply and check)."""
    return _add_options(function, [
        click.option("--output-format", "--format", "output_format", type=click.Choice(CHOICES), default="full",
                     show_default=True,
                     help="full: a block per finding; concise: a line per finding; json; sarif; github: GitHub Actions "
                          "annotations; markdown: a pull-request comment. (text = full; github-annotations: deprecated, = github.)"),
        click.option("--statistics", is_flag=True, help="Print the number of findings by rule, tier and status instead of the findings."),
        click.option("--show", multiple=True, type=click.Choice(["fixes", "proposals", "advice", "kept"]),
                     help="List only these (repeatable; full and concise). Default: fixes, proposals, advice; kept too with -v."),
        click.option("--show-fixes", is_flag=True, help="Show each fix's diff under its finding (--output-format full)."),
        click.option("--output-file", type=click.Path(path_type=Path, dir_okay=False), metavar="PATH",
                     help="Write the report to PATH instead of the terminal."),
    ])


FORMAT_COMMAND = click.option(
    "--format-command", metavar="CMD",
    help="Run CMD (e.g. \"ruff format\") on the changed files in a temporary copy of the tree before the patch "
         "is made; a file CMD would reformat anyway keeps optpatch's own edits. Never run unless asked for.",
)


def header_options(function):
    """--compile-commands and --no-headers: where C++/CUDA files' headers come from (docs/cpp-frontend.md)."""
    options = [
        click.option("--compile-commands", type=click.Path(path_type=Path, exists=True), metavar="PATH",
                     help="The compile_commands.json (or its folder) whose flags C++/CUDA files are parsed with "
                          "(default: REPO's own, or one in a build*/ folder; else include folders are inferred)."),
        click.option("--no-headers", is_flag=True,
                     help="Analyse C++/CUDA files without their headers (the header-free parse only)."),
        click.option("-I", "--include-dir", "include_dirs", multiple=True, metavar="DIR",
                     type=click.Path(path_type=Path, file_okay=False),
                     help="Search DIR first for C++/CUDA headers (repeatable; CPATH and CPLUS_INCLUDE_PATH are read too)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


VALIDATE_COMMAND = click.option(
    "--validate", "validate_command", metavar="CMD", is_flag=False, flag_value=CONFIGURED_COMMAND,
    help="Run CMD on a temporary copy of the tree, first unchanged, then with the fixes, with "
         "uninitialised memory poisoned; back out every fix that makes it fail. Without CMD (last, "
         "or before another option): the configuration's validate-command, with --trust-config.")
VALIDATE_TIMEOUT = click.option(
    "--validate-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
    help="With --validate: stop one run of CMD after this long (default: 1800).")


def validation_options(function):
    """--validate CMD and its companions (apply and check)."""
    return _add_options(function, [
        VALIDATE_COMMAND,
        click.option("--build", "build_command", metavar="CMD", help="With --validate: rebuild C++ extensions before the tests when C++ files changed."),
        VALIDATE_TIMEOUT,
    ])


class Session:
    """What one invocation resolved: root, settings, where the report goes and what the command wrote."""

    def __init__(self, root: Path, options: CommandOptions, report_to_stderr: bool = False):
        from optpatch.config import ConfigResolver

        self.root = root.resolve()
        self.options = options
        self.configs = ConfigResolver(
            trust_config=options.trust_config, on_top=lambda settings: _command_line_selection(settings, options),
            explicit=options.config_path.absolute() if options.config_path else None,
        )
        self.settings = self.settings_for(self.root)  # the scanned root's: the fix policy of --validate, the commands
        self._check_codes()
        self.format = options.output_format
        self._check_report_options()
        self.sink = ReportSink(report_to_stderr, options.output_file)
        self.delivery = NOTHING_WRITTEN  # what the command wrote, once it has
        self.patch_path: str | None = None  # the patch file `apply` wrote, for the JSON report
        self.scope_note: str | None = None
        if note := deprecation_note(options.format_name):
            click.echo(note, err=True)

    def settings_for(self, path: Path):
        """The settings of PATH's folder (its nearest configuration's, the command line on top); exit 2 for a bad configuration."""
        from optpatch.config import ConfigError

        try:
            return self.configs.for_path(path)
        except ConfigError as error:
            raise CommandError(str(error)) from None

    @cached_property
    def stderr(self):
        return _console(stderr=True)

    def _check_codes(self) -> None:
        from optpatch.rule import ALL_RULES
        from optpatch.rule_facts import rule_facts  # not the rules themselves: importing them costs 0.2 s

        known = rule_facts()
        for code in self.settings.select + self.settings.ignore + self.options.extend_select:
            if code != ALL_RULES and not any(rule.code.startswith(code) or rule.name == code for rule in known):
                raise CommandError(f"unknown rule code or prefix `{code}` (see `optpatch rules`)")

    def _check_report_options(self) -> None:
        options = self.options
        if options.statistics and self.format.statistics is None:
            raise CommandError(f"--statistics prints text or JSON, not {self.format.name}: drop --output-format {options.format_name}")
        if options.output_file:
            _check_output(options.output_file.resolve(), "--output-file")

    def run(self, paths: list[Path] | None = None):
        from optpatch.config import ConfigError
        from optpatch.engine import run
        from optpatch.narrowing import drop_out_of_scope
        from optpatch.policy import FixPolicy
        from optpatch.profile_trace import ProfileError

        narrowing = self.narrowing(paths)
        progress = None
        if not self.options.quiet and self.stderr.is_terminal:
            progress = _ProgressBar(self.stderr)
        try:
            result = run(  # each file's policy is its settings' (engine.run)
                self.root, self.configs, FixPolicy(), narrowing.paths, self.options.jobs, progress,
                use_cache=not self.options.no_cache, filters=narrowing.filters, profile=self.options.profile,
            )
        except (ConfigError, ProfileError) as error:
            raise CommandError(str(error)) from None
        finally:
            if progress:
                progress.close()
        self.scope_note = narrowing.note(drop_out_of_scope(result))
        return result

    def print_notes(self) -> None:
        """The configuration's notes (command settings left alone), once, unless --quiet."""
        if self.options.quiet:
            return
        for note in self.configs.notes():
            self.stderr.print(note, markup=False, soft_wrap=True)

    def print_warnings(self, result) -> None:
        """A line on stderr for each file skipped that the user would otherwise miss: over max-file-size, or named but not analysed."""
        for rel, why in result.warnings:
            self.stderr.print(f"warning: {rel}: skipped: {why}", markup=False, soft_wrap=True)

    def narrowing(self, paths: list[Path] | None):
        """The files and finding filters that --changed-since, --changed-lines and --baseline ask for."""
        from optpatch.narrowing import NarrowingError, NarrowingRequest, narrow

        options = self.options
        request = NarrowingRequest(options.changed_since, options.changed_lines, options.baseline, options.min_impact)
        try:
            return narrow(self.root, self.configs, paths, request)
        except NarrowingError as error:
            raise CommandError(str(error)) from None

    def report_options(self, result, validation: ValidationOutcome | None = None) -> ReportOptions:
        from optpatch.reporters.github import display_path

        return ReportOptions(
            delivery=self.delivery,
            verbose=self.options.verbose,
            show_fixes=self.options.show_fixes,
            width=self.sink.width,
            patch_path=self.patch_path,
            validation=validation,
            original_text=_original_texts(result) if result is not None else ReportOptions.original_text,
            fix_areas=self.settings.fix_areas,
            display=partial(display_path, self.root),
            show=self.options.show,
        )

    def report(self, result, note: str | None = None, validation=None) -> None:
        """The report in the chosen format; after --validate, with what validation ran, dropped and accepted."""
        self.print_notes()
        if result is not None:
            self.print_warnings(result)
        if self.options.json_output:
            text = _json_document(self, result, validation)
            _write_output(self.options.json_output.resolve(), text.encode(), "--json-output")
        options = self.report_options(result, validation)
        if self.options.statistics and result is not None:
            self._statistics(result, options)
        elif self.format.kind is FormatKind.MACHINE:
            self._machine_report(result, options)
        else:
            self._text_report(result, options, note)

    def _statistics(self, result, options: ReportOptions) -> None:
        from optpatch.reporters.text import render_statistics, statistics

        if self.format.statistics is StatisticsForm.JSON:
            import json

            self.sink.write(json.dumps(statistics(result, options), indent=2) + "\n")
        else:
            self.sink.lines(render_statistics(result, options))

    def _machine_report(self, result, options: ReportOptions) -> None:
        if result is not None or self.format.renders_without_result:
            self.sink.write(self.format.renderer()(result, options))
        if options.validation is not None and self.format.validation is ValidationPlacement.STDERR:
            from optpatch.validation.render import render_validation

            render_validation(options.validation, self.stderr)

    def _text_report(self, result, options: ReportOptions, note: str | None) -> None:
        from rich.text import Text

        from optpatch.reporters.github import display_path
        from optpatch.reporters.text import error_line, summary_headline

        note = "\n".join(part for part in (self.scope_note, note) if part) or None
        if result is not None:
            if self.options.quiet:
                self.sink.lines(summary_headline(result, options, options.width))
                for error in result.errors:
                    self.stderr.print(Text(error_line(error, partial(display_path, self.root))), soft_wrap=True)
            else:
                self.sink.lines(self.format.renderer()(result, options))
            if note:  # wrapped at words; a command stays whole, to be copied
                self.sink.lines([Text(line) for part in note.split("\n") for line in wrap(part, options.width, "", "")])
        validation = options.validation
        if validation is None:
            return
        from optpatch.validation.render import render_validation

        if self.options.quiet and not validation.failed:
            self.sink.lines([Text(validation.message)])
        else:
            render_validation(validation, self.sink.console)

    def exit(self, status: int) -> None:
        """Write the report file, if one was asked for, then end the command with STATUS."""
        self.sink.close()
        sys.exit(status)


def _command_line_selection(settings, options: CommandOptions):
    """The settings with the command line on top: --select replaces, --extend-select adds, the ignores add up."""
    from optpatch.config import extend_selection

    overrides = {}
    overrides["select"] = extend_selection(options.select or settings.select, options.extend_select)
    overrides["ignore"] = settings.ignore + options.ignore + options.extend_ignore
    if options.unsafe_fixes:
        overrides["unsafe_fixes"] = True
    if options.fix_areas is not None:
        overrides["fix_areas"] = options.fix_areas
    if options.force_exclude:
        overrides["force_exclude"] = True
    if options.compile_commands:
        overrides["compile_commands"] = str(options.compile_commands.resolve())
    if options.no_headers:
        overrides["headers"] = False
    if options.include_dirs:
        overrides["include_dirs"] = tuple(str(folder.resolve()) for folder in options.include_dirs) + settings.include_dirs
    return replace(settings, **overrides)


def command_options(parameters: dict) -> CommandOptions:
    """A command's options, typed once (exit 2 for a --fix-areas naming no area)."""
    from optpatch.config import ConfigError

    try:
        return CommandOptions.from_click(parameters)
    except ConfigError as error:
        raise CommandError(str(error)) from None


def _original_texts(result):
    """A function giving each file's text as this run read it, for --show-fixes: the bytes kept for a changed file, else the file."""
    from optpatch.model import FileError
    from optpatch.source import source_from_bytes

    old = {r.rel: r.old for r in result.files if r.old is not None}

    def text(rel: str) -> str | None:
        path = result.root / rel
        try:
            raw = old[rel] if rel in old else path.read_bytes()
        except OSError:
            return None
        source = source_from_bytes(path, rel, raw)
        return None if isinstance(source, FileError) else source.text

    return text


class ReportSink:
    """Where the report goes: stdout; stderr, beside a patch on stdout; or the file of --output-file, written whole at the end."""

    def __init__(self, to_stderr: bool, path: Path | None):
        self.to_stderr = to_stderr
        self.path = path.resolve() if path is not None else None
        self._buffer = io.StringIO() if path is not None else None

    @cached_property
    def width(self) -> int:
        """COLUMNS when set, else the terminal's width, else 80: a pipe or a file gets no padding and no guesswork."""
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit() and int(columns) > 0:
            return int(columns)
        stream = sys.stderr if self.to_stderr else sys.stdout
        if self._buffer is None and stream is not None:
            try:
                if stream.isatty():
                    return os.get_terminal_size(stream.fileno()).columns
            except (OSError, ValueError):
                pass
        return DEFAULT_WIDTH

    @cached_property
    def console(self):
        """A rich console for the text formats: colour on a terminal, plain text elsewhere, never re-wrapped."""
        from rich.console import Console  # imported here: machine formats do without it

        if self._buffer is not None:
            return Console(file=self._buffer, width=self.width, color_system=None, highlight=False, soft_wrap=True)
        return Console(stderr=self.to_stderr, width=self.width, highlight=False, soft_wrap=True)

    def lines(self, lines) -> None:
        for line in lines:
            self.console.print(line)

    def write(self, text: str) -> None:
        if self._buffer is not None:
            self._buffer.write(text)
        else:
            click.echo(text, nl=False, err=self.to_stderr)

    def close(self) -> None:
        if self._buffer is not None and self.path is not None:
            _write_output(self.path, self._buffer.getvalue().encode("utf-8"), "--output-file")


def _console(stderr: bool = False):
    from rich.console import Console  # imported here: `--help` and `--version` do without it

    return Console(stderr=stderr, highlight=False)


class _ProgressBar:
    """A progress bar on stderr, shown only for large trees on a terminal."""

    def __init__(self, console):
        self.console = console
        self.bar = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if total < PROGRESS_MIN_FILES:
            return
        if self.bar is None:
            from rich.progress import Progress

            self.bar = Progress(console=self.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("analysing", total=total)
        self.bar.update(self.task, completed=done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _exit_status(result, findings_status: int = EXIT_OK, strict: bool = False) -> int:
    """3 when a file could not be analysed (with --strict, also one skipped as over max-file-size), else FINDINGS_STATUS."""
    return EXIT_FILE_ERRORS if result.errors or (strict and result.oversized) else findings_status


def scope_options(function):
    """--changed-since, --changed-lines, --baseline: narrow a run to what a change or a legacy repo needs."""
    return _add_options(function, [
        click.option("--changed-since", metavar="REF", help="Only files changed since git REF (its merge base with HEAD), plus untracked ones."),
        click.option("--changed-lines", is_flag=True, help="With --changed-since: only findings on changed lines."),
        click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), help="Hide and leave unfixed the findings recorded in this file."),
        click.option("--min-impact", type=click.Choice(["low", "medium", "high"]), default=None,
                     help="Hide and leave unfixed the findings of a lower impact (size class times how often the "
                          "site runs: per-step, one-time or unreached, from the project's call graph or --profile)."),
    ])


PROFILE = click.option(
    "--profile", "profile", type=click.Path(path_type=Path, dir_okay=False, exists=True), metavar="TRACE",
    help="A torch.profiler Chrome trace (with_stack=True) or a py-spy speedscope profile: rank the findings by the "
         "time measured at each site, and take its frequency from the measurement (docs/profiling.md).",
)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main process is, so that the same clean-up runs as for Ctrl-C (no worker is left behind)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated


class _Commands(click.Group):
    """Ctrl-C or SIGTERM ends any command with exit status 130 or 143 and says what state it left, instead of click's "Aborted!"."""

    def invoke(self, ctx: click.Context):
        import signal
        import threading

        on_main_thread = threading.current_thread() is threading.main_thread()  # only it may set a handler
        previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main_thread else None
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            click.echo("Interrupted: every file optpatch writes is replaced whole or not at all; none is half-written.", err=True)
            ctx.exit(EXIT_TERMINATED if isinstance(interrupt, Terminated) else EXIT_INTERRUPTED)
        finally:
            if on_main_thread:
                signal.signal(signal.SIGTERM, previous)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="optpatch")
def main() -> None:
    """optpatch: rewrites PyTorch/CUDA code for performance, and proves every rewrite first.

    \b
    Start with:  optpatch apply REPO          (writes model_patch.diff; REPO untouched)
    Then:        git -C REPO apply --check ../model_patch.diff
    """


def entry() -> None:
    """The console script: `main`, then an exit that skips tearing the interpreter down.

    Freeing libcst's classes and a scan's objects one by one at interpreter
    exit cost 20-40 ms a run, a sixth of a one-file pre-commit run
    (docs/benchmarks.md). Every file a command writes is closed and replaced
    before `main` returns, the validation copy is removed in a `finally`, and
    the process pool is shut down, so only the output streams are left to
    flush, as the interpreter would: exit status 120 if that fails.
    """
    import os

    try:
        main()
        status = EXIT_OK  # click's standalone mode always raises SystemExit; this is in case it stops doing so
    except SystemExit as stop:
        status = stop.code
    if status is None:
        status = EXIT_OK
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None when the descriptor was closed before Python started (`>&-`)
                stream.flush()
        except (OSError, ValueError):
            status = 120
    os._exit(status)


@main.command()
@click.argument("repo", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("-o", "--output", default="model_patch.diff", show_default=True, help="Where to write the patch; `-` for stdout.")
@click.option("--write", "write_in_place", is_flag=True, help="Also apply the fixes to REPO in place (atomically).")
@click.option("--json-output", type=click.Path(path_type=Path, dir_okay=False), metavar="PATH",
              help="Also write the JSON report (docs/json-schema.md) to PATH, whatever --output-format prints.")
@scope_options
@selection_options
@header_options
@report_options
@validation_options
@FORMAT_COMMAND
@PROFILE
def apply(repo: Path, output: str, write_in_place: bool, **parameters) -> None:
    """Analyse REPO and write the patch of every fix that applies."""
    from optpatch.patch import write_patch
    from optpatch.writer import write_fixes

    options = command_options(parameters)
    to_stdout = output == "-"
    session = Session(repo, options, report_to_stderr=to_stdout)
    output_path = None if to_stdout else Path(output).resolve()
    if output_path is not None:
        _check_output(output_path, "-o")
    if options.json_output:
        _check_output(options.json_output.resolve(), "--json-output")
    validation = _run_validation(session)
    result = session.run() if validation is None else validation.result
    if result is None:
        session.report(None, validation=validation)
        session.stderr.print("No patch written.")
        session.exit(EXIT_VALIDATION)
    _run_format_command(session, result)
    patch = write_patch(result.changes)
    if to_stdout:
        sys.stdout.buffer.write(patch)
        sys.stdout.flush()
        note = None if result.changes else "No changes: the patch on stdout is empty."
    else:
        _write_output(output_path, patch, "-o")
        session.patch_path = str(output_path)
        note = _patch_note(result, output, repo, checkable=not write_in_place)
    session.delivery = PATCH_WRITTEN
    status = EXIT_VALIDATION if validation is not None and validation.failed else _exit_status(result, strict=options.strict)
    if write_in_place:
        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"{rel}: error: not written: {why}", markup=False, soft_wrap=True)
        session.delivery = Delivery(patch=True, files=frozenset(report.written))
        note = "\n".join(part for part in (note, _written_note(report.written, repo)) if part)
        if report.refused:
            status = EXIT_FILE_ERRORS
    session.report(result, note, validation)
    session.exit(status)


def _check_output(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written before any work is done (exit 2, nothing written)."""
    if path.is_dir():
        raise CommandError(f"{option} {path}: is a directory; give a file path")
    if not path.parent.is_dir():
        raise CommandError(f"{option} {path}: directory {path.parent} does not exist; create it first")


def _write_output(path: Path, data: bytes, option: str) -> None:
    from optpatch.writer import write_atomically

    try:
        write_atomically(path, data)
    except OSError as error:
        raise CommandError(f"{option} {path}: cannot be written: {error.strerror or error}") from None


def _patch_note(result, output: str, repo: Path, checkable: bool) -> str:
    """What was written, and the command that checks it (not after --write: the tree holds the fixes, so the patch no longer applies)."""
    changes = result.changes
    if not changes:
        return f"No changes: wrote an empty patch to {output}."
    written = f"Patch for {counted(len(changes), 'file')} written to {output}."
    if not checkable:
        return written
    return f"{written} Check it with: {together(f'git -C {repo} apply --check {Path(output).resolve()}')}"


def _written_note(written: list[str], repo: Path) -> str | None:
    if not written:
        return None
    return f"Wrote {counted(len(written), 'file')} in {repo}; review the changes with: {together(f'git -C {repo} diff')}"


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply the fixes in place (what the pre-commit hook `optpatch-fix` runs).")
@click.option("--diff", "show_diff", is_flag=True,
              help="Print the patch of the fixes on stdout, with paths from the repository's top as `git diff` writes "
                   "them, and change nothing (the report goes to stderr).")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when fixable findings exist (still 3 for files not analysed).")
@click.option(
    "--write-baseline", type=click.Path(path_type=Path, dir_okay=False),
    help="Record every finding in this file for later --baseline runs; exit 0.",
)
@click.option("--json-output", type=click.Path(path_type=Path, dir_okay=False), metavar="PATH",
              help="Also write the JSON report (docs/json-schema.md) to PATH, whatever --output-format prints.")
@scope_options
@selection_options
@header_options
@report_options
@validation_options
@FORMAT_COMMAND
@PROFILE
def check(paths: tuple[Path, ...], fix: bool, show_diff: bool, exit_zero: bool, **parameters) -> None:
    """Report findings under PATHS (default: .); exit 1 if any fix would apply."""
    paths = paths or (Path("."),)
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise CommandError(f"no such file or directory: {', '.join(missing)}")
    options = command_options(parameters)
    named = [_resolve_parent(p) for p in paths]
    root = project_root(named)
    write_baseline = options.write_baseline
    if write_baseline and (fix or options.baseline):
        raise CommandError("--write-baseline records every finding: use it without --fix and --baseline")
    if show_diff and fix:
        raise CommandError("--diff prints the fixes and writes nothing, --fix writes them: give one of them")
    if write_baseline:
        _check_output(write_baseline.resolve(), "--write-baseline")
    if options.json_output:
        _check_output(options.json_output.resolve(), "--json-output")
    session = Session(root, options, report_to_stderr=show_diff)
    validation = _run_validation(session, [p.absolute() for p in paths])
    result = session.run([p.absolute() for p in paths]) if validation is None else validation.result
    if result is None:
        session.report(None, validation=validation)
        session.exit(EXIT_VALIDATION)
    if write_baseline:
        _record_baseline(session, result, write_baseline)
    fixable = any(decision.accepted for _, decision in result.decided)
    note = None
    refused_writes = False
    if show_diff:
        from optpatch.discovery import repository_of
        from optpatch.patch import write_patch

        # Paths from the repository's top, as `git diff` writes them: `git apply` reads them so from any folder of
        # the repository. The root may be a project inside it (`server/`, with its own pyproject.toml).
        sys.stdout.buffer.write(write_patch(result.changes, repository_of(session.root)[1]))
        sys.stdout.flush()
    if fix:
        from optpatch.writer import write_fixes

        _run_format_command(session, result)
        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"{rel}: error: not written: {why}", markup=False, soft_wrap=True)
        session.delivery = Delivery(files=frozenset(report.written))
        note = f"Fixed {counted(len(report.written), 'file')}."
        fixable = False
        refused_writes = bool(report.refused)
    session.report(result, note, validation)
    if validation is not None and validation.failed:
        session.exit(EXIT_VALIDATION)
    if refused_writes:  # as `apply --write`: a fix left unwritten must not pass a pre-commit hook as clean
        session.exit(EXIT_FILE_ERRORS)
    session.exit(_exit_status(result, EXIT_FINDINGS if fixable and not exit_zero else EXIT_OK, options.strict))


def _run_format_command(session: Session, result) -> None:
    """--format-command CMD (or a trusted config's format-command): the rewritten files as CMD formats them."""
    command = session.options.format_command or session.settings.format_command
    if command is not None and not command.strip():
        raise click.UsageError("--format-command needs a command, e.g. --format-command \"ruff format\"")
    if not command or not result.changes:
        return
    from optpatch.format_command import format_changes

    outcome = format_changes(session.root, result, command)
    if outcome.error:
        session.stderr.print(f"warning: --format-command: {outcome.error}; the edits are as optpatch wrote them",
                             markup=False, soft_wrap=True)
        return
    if outcome.unformatted and not session.options.quiet:
        session.stderr.print(
            f"--format-command: {len(outcome.unformatted)} file(s) left as optpatch wrote them: `{command}` would "
            f"reformat them before the fixes too ({', '.join(outcome.unformatted[:3])}"
            f"{', ...' if len(outcome.unformatted) > 3 else ''})", markup=False, soft_wrap=True)
    for rel in outcome.refused:
        session.stderr.print(f"warning: --format-command: `{command}` made {rel} unparsable; kept optpatch's edits",
                             markup=False, soft_wrap=True)


def _run_validation(session: Session, paths: list[Path] | None = None, build_stands_alone: bool = False):
    """The outcome of --validate CMD (or of a trusted config's validate-command); None when not asked for.

    BUILD_STANDS_ALONE: --build has a use of its own in this command (bench builds every tree).
    """
    options = session.options
    command = options.validate_command
    if command is not None and not command.strip():
        raise CommandError("--validate needs a command, e.g. --validate \"python -m pytest -q\"")
    if command == CONFIGURED_COMMAND:
        command = session.settings.validate_command
        if command is None:
            where = session.settings.source
            raise CommandError(
                f"--validate without CMD runs the configuration's validate-command, and {where} sets none that is "
                "trusted: give --validate CMD" + (", or pass --trust-config" if session.settings.inert_commands else "")
            )
    if not command:
        if options.build_command and not build_stands_alone:
            raise CommandError("--build CMD needs --validate CMD: the build runs only before validation runs")
        return None

    def progress(message: str) -> None:
        if not options.quiet:
            session.stderr.print(message, style="dim", markup=False, soft_wrap=True)

    from optpatch.narrowing import drop_out_of_scope
    from optpatch.validation.tests import validate_fixes
    from optpatch.validation.workspace import ValidationSetupError

    narrowing = session.narrowing(paths)
    try:
        outcome = validate_fixes(
            session.root, session.settings, command, paths=narrowing.paths, filters=narrowing.filters,
            jobs=options.jobs, build_command=options.build_command, timeout_s=options.validate_timeout,
            progress=progress, use_cache=not options.no_cache,
        )
        if outcome.result is not None:
            session.scope_note = narrowing.note(drop_out_of_scope(outcome.result))
        return outcome
    except ValidationSetupError as error:
        session.stderr.print(f"error: {error}", markup=False, soft_wrap=True)
        sys.exit(EXIT_VALIDATION)
    except KeyboardInterrupt:
        session.stderr.print(
            f"Interrupted: stopped `{command}`, removed the temporary copy; {session.root} is unchanged. Nothing written.",
            markup=False, soft_wrap=True,
        )
        sys.exit(EXIT_INTERRUPTED)


def _json_document(session: Session, result, validation: ValidationOutcome | None) -> str:
    """The JSON report, with the `validation` object after --validate (only that when the baseline failed)."""
    from optpatch.reporters.json_report import render_json

    return render_json(result, session.report_options(result, validation))


def _record_baseline(session: Session, result, path: Path) -> None:
    from optpatch.baseline import baseline_document, recordable

    _write_output(path.resolve(), baseline_document(result.findings).encode("utf-8"), "--write-baseline")
    session.report(result, f"Recorded {len(recordable(result.findings))} finding(s) in {path}.")
    session.exit(_exit_status(result, strict=session.options.strict))


def _resolve_parent(path: Path) -> Path:
    """The path with its directory resolved but not its last part: a link there is for discovery to judge."""
    absolute = path.absolute()
    return absolute.parent.resolve() / absolute.name if absolute.name not in ("", "..") else absolute.resolve()


def project_root(paths: list[Path]) -> Path:
    """The nearest directory above PATHS holding .git or a configuration file (optpatch's or a pyproject.toml), else their common parent.

    Finding paths, `exclude` and `per-file-ignores` are relative to it.
    """
    from optpatch.config import CONFIG_FILES

    common = Path(os.path.commonpath([str(p) for p in paths]))
    if not common.is_dir():
        common = common.parent
    for candidate in (common, *common.parents):
        if (candidate / ".git").exists() or any((candidate / name).is_file() for name in CONFIG_FILES):
            return candidate
    return common


@main.command()
@click.argument("code", required=False)
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: every rule (or CODE's) with its metadata and manual, for tools.")
@click.option(
    "--write-docs", type=click.Path(path_type=Path, file_okay=False),
    help="Write every rule's page and an index into this directory (docs/rules), removing pages of rules that are gone.",
)
def rules(code: str | None, output_format: str, write_docs: Path | None) -> None:
    """List the rules, or print one rule's documentation."""
    from optpatch.rule import load_rules
    from optpatch.rule_docs import rule_docs, rule_page, write_rule_docs

    known = load_rules()
    if write_docs:
        write_rule_docs(write_docs, rule_docs(known))
        click.echo(f"Wrote {len(known)} rule page(s) and README.md to {write_docs}.")
        return
    chosen = known
    if code is not None:
        chosen = [r for r in known if r.code == code.upper() or r.name == code]
        if not chosen:
            raise CommandError(f"unknown rule `{code}` (see `optpatch rules`)")
    if registered_format(output_format).kind is FormatKind.MACHINE:  # json; `text` is the registry's `full`
        import json

        entries = [_rule_entry(rule, rule_page(rule)) for rule in chosen]
        click.echo(json.dumps(entries[0] if code is not None else entries, indent=2))
        return
    if code is None:
        click.echo(_rule_listing(chosen))
        return
    console = _console()
    if console.is_terminal:
        from rich.markdown import Markdown

        console.print(Markdown(rule_page(chosen[0])))
    else:  # a pipe or a file gets the page as written, not padded to a width
        click.echo(rule_page(chosen[0]), nl=False)


def _alias(command: click.Command, name: str) -> click.Command:
    """COMMAND under another name, left out of the help's list (ruff's `rule` for `rules`)."""
    from copy import copy

    alias = copy(command)
    alias.name, alias.hidden = name, True
    return alias


main.add_command(_alias(rules, "rule"))


def _rule_entry(rule, page: str) -> dict:
    """A rule for tools (`rules --output-format json`), after ruff's `rule --output-format json`."""
    return {
        "code": rule.code, "name": rule.name, "summary": rule.summary, "language": rule.language,
        "default_tier": rule.default_tier, "tags": list(rule.tags), "explanation": page,
    }


def _rule_listing(rules) -> str:
    """One line a rule, in aligned columns, with no trailing spaces."""
    rows = [("code", "name", "language", "tier", "summary")] + [
        (rule.code, rule.name, rule.language, rule.default_tier, rule.summary) for rule in rules
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + "  " + row[4] for row in rows)


@main.command()
@click.argument("target")
@selection_options
@header_options
@PROFILE
def explain(target: str, **parameters) -> None:
    """Why each site in REPO, FILE:LINE[:COL] or REPO:FILE:LINE[:COL] was rewritten or kept: the proof, or the blocking use.

    FILE:LINE:COL is the location every report prints, so it can be pasted here.
    """
    from optpatch.explain import explain_text
    from optpatch.reporters.github import display_path
    from optpatch.reporters.text import error_line

    repo, file, line, col = _parse_target(target)
    if not repo.is_dir():
        raise CommandError(f"{target}: {repo} is not a directory; give REPO, FILE:LINE[:COL] or REPO:FILE:LINE[:COL]")
    paths = [repo / file] if file else None
    if file and not (repo / file).exists():
        raise CommandError(f"{repo / file}: no such file")
    options = command_options(parameters)
    session = Session(repo, options)
    result = session.run(paths)
    findings = [d for d in result.decided if line is None or (d.finding.line == line and col in (None, d.finding.col))]
    if not findings:
        where = ":".join(str(part) for part in (file, line, col) if part is not None) if file else str(repo)
        click.echo(f"No site examined at {where}: no rule found an allocation or call it handles there.")
    for text in explain_text(findings, session.sink.width, partial(display_path, session.root)):
        click.echo(text)
    session.print_warnings(result)
    for error in result.errors:
        session.stderr.print(error_line(error, partial(display_path, session.root)), markup=False, soft_wrap=True)
    sys.exit(_exit_status(result, strict=options.strict))


def _parse_target(target: str) -> tuple[Path, str | None, int | None, int | None]:
    """(repo, file, line, col) of REPO, FILE:LINE[:COL] or REPO:FILE:LINE[:COL]."""
    col = None
    head, _, last = target.rpartition(":")
    before, _, middle = head.rpartition(":")
    if last.isdigit() and middle.isdigit() and before and _names_a_file(before):
        target, col = head, int(last)
    parts = target.rsplit(":", 2)
    named, _, line = target.rpartition(":")
    if line.isdigit() and Path(named).is_file():
        file = Path(named).resolve()
        root = project_root([file])
        return root, str(file.relative_to(root)), int(line), col
    if len(parts) == 3 and parts[2].isdigit():
        return Path(parts[0] or "."), parts[1], int(parts[2]), col
    return Path(target), None, None, None


def _names_a_file(text: str) -> bool:
    """Whether TEXT is FILE (a file) or REPO:FILE."""
    if Path(text).is_file():
        return True
    repo, _, file = text.rpartition(":")
    return bool(repo) and (Path(repo) / file).is_file()


def _plot_path(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
    """--plot FILE: an .svg or .png whose folder exists, checked before any work (exit 2)."""
    if path is None:
        return None
    from optpatch.validation.kernel_chart import chart_format

    try:
        chart_format(path)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    _check_output(path.resolve(), "--plot")
    return path


@main.command()
@click.option("--output-format", "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), help="Keep copies, builds and logs here.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), callback=_plot_path, metavar="FILE",
              help="Also draw the timings as a chart, SVG or PNG by FILE's suffix (needs matplotlib: "
                   "pip install matplotlib).")
@click.option("--from-report", "saved_report", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              metavar="REPORT.json",
              help="Run nothing: print (and with --plot, draw) a report saved from `--output-format json`, e.g. a GPU machine's.")
def validate(output_format: str, workdir: Path | None, plot_path: Path | None, saved_report: Path | None) -> None:
    """Build and run the bundled CUDA KV-cache kernels before and after optpatch's own rewrites.

    With a GPU: bit-exact checks against a PyTorch reference over a size
    sweep, then timings. Without one: nvcc compiles of both versions and the
    reference checks on the CPU, with every skip stated. Exit 4 when a check fails.
    """
    if saved_report is not None and workdir is not None:
        raise CommandError("--workdir keeps a run's files, and --from-report runs nothing: give one of them")
    if plot_path is not None:
        from optpatch.validation.kernel_chart import ChartUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except ChartUnavailable as missing:
            click.echo(f"optpatch validate --plot: {missing}", err=True)
            sys.exit(EXIT_USAGE)
    if saved_report is None:
        from optpatch.validation.kernels import TORCH_INSTALL_HINT, run_kernel_check, torch_installed

        if not torch_installed():  # a missing dependency is a usage error, not a failed validation
            click.echo(f"error: optpatch validate needs torch, which is not installed: {TORCH_INSTALL_HINT}", err=True)
            sys.exit(EXIT_USAGE)
        sys.exit(run_kernel_check(output_format, workdir, plot=plot_path))
    from optpatch.validation.kernel_report import ReportError
    from optpatch.validation.kernels import replay_report

    try:
        status = replay_report(saved_report, output_format, plot_path)
    except ReportError as error:
        click.echo(f"optpatch validate --from-report: {error}", err=True)
        status = EXIT_USAGE
    sys.exit(status)


@main.command()
@click.argument("command", metavar="CMD")
@click.option("--repo", type=click.Path(path_type=Path, exists=True, file_okay=False), default=".", show_default=True,
              help="The folder (in a git repository: cloned, else copied) to patch and bench; CMD starts in its copy.")
@click.option("--rounds", type=click.IntRange(min=5), default=None, metavar="N",  # bench.MIN_ROUNDS
              help="Measured rounds, each running CMD once in every tree (default: 10; at least 5: fewer give an "
                   "interval that means nothing; with --time, at most N).")
@click.option("--time", "time_s", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Run rounds until SECONDS have passed (at least 5 rounds).")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True, metavar="K",
              help="Rounds run first and discarded (caches, compilation, clocks).")
@click.option("--metric", metavar="REGEX",
              help="Read each run's value from CMD's output: the first group of REGEX's last match (default: wall time).")
@click.option("--higher-is-better", is_flag=True, help="With --metric: a higher value is better (tokens/s, not ms/step).")
@click.option("--build", "build_command", metavar="CMD",
              help="Run CMD in each tree before the rounds (e.g. build the C++ extensions); with --validate, also before its tests.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop one run of CMD or of the build after this long; the bench fails (default: 1800).")
@click.option("--per-rule", is_flag=True, help="Also a tree per rule with fixes, and its speedup alone.")
@click.option("--require-speedup", type=click.FloatRange(min=0, min_open=True), metavar="X",
              help="Exit 1 when the patch's 95% interval reaches below X (e.g. 1.0: no proven gain).")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), callback=_plot_path, metavar="FILE",
              help="Draw every tree's values, SVG or PNG by FILE's suffix (needs matplotlib).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (docs/bench.md) instead of text.")
@selection_options
@header_options
@VALIDATE_COMMAND
@VALIDATE_TIMEOUT
def bench(command: str, repo: Path, rounds: int | None, time_s: float | None, warmup: int, metric: str | None,
          higher_is_better: bool, timeout_s: float | None, per_rule: bool, require_speedup: float | None,
          plot_path: Path | None, as_json: bool, **parameters) -> None:
    """Run CMD on the original and the patched tree in alternating rounds; report the speedup with its 95% interval.

    \b
    The patched tree is what `optpatch apply REPO` would write (same options).
    Exit status: 0 measured; 1 --require-speedup not met; 2 usage error, or
    CMD fails on the original tree; 4 CMD passes on the original tree and
    fails on a patched one, or --validate failed.
    """
    from optpatch.bench import Metric, Schedule, statistics_missing

    if not command.strip():
        raise CommandError('optpatch bench needs a command, e.g. optpatch bench "python serve_step.py"')
    if missing := statistics_missing():
        raise CommandError(missing)
    if plot_path is not None:
        from optpatch.validation.kernel_chart import ChartUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except ChartUnavailable as unavailable:
            raise CommandError(f"--plot: {unavailable}") from None
    try:
        chosen_metric = Metric.parse(metric, higher_is_better)
    except ValueError as error:
        raise CommandError(str(error)) from None
    schedule = Schedule(warmup, rounds if rounds is not None or time_s is not None else Schedule.rounds, time_s)
    session = Session(repo, command_options(parameters))
    variants = _bench_variants(session, per_rule)
    _bench_and_report(session, command, variants, chosen_metric, schedule, timeout_s, require_speedup, plot_path, as_json)


def _bench_variants(session: Session, per_rule: bool) -> list:
    """The patched versions to bench: `apply`'s patch (after --validate, when given), then one per rule with --per-rule."""
    from optpatch.bench import variants_of
    from optpatch.engine import run
    from optpatch.validation.render import render_validation

    validation = _run_validation(session, build_stands_alone=True)
    if validation is not None and (validation.failed or not session.options.quiet):
        render_validation(validation, session.stderr)
    if validation is not None and validation.failed:  # as `apply`: exit 4, and no tree is timed
        session.stderr.print("No patch to bench: --validate failed.")
        sys.exit(EXIT_VALIDATION)
    result = session.run() if validation is None else validation.result
    for error in result.errors:
        session.stderr.print(f"warning {error.location()}: {error.reason}; not analysed", markup=False, soft_wrap=True)

    def rerun(policy):
        return run(session.root, session.settings, policy, None, session.options.jobs,
                   use_cache=not session.options.no_cache)

    variants = variants_of(result, per_rule, session.settings, rerun)
    if per_rule and len(variants) == 1:
        session.stderr.print("--per-rule: fewer than two rules have fixes; the patched tree is the one rule's tree",
                             markup=False, soft_wrap=True)
    return variants


def _bench_and_report(session: Session, command: str, variants: list, metric, schedule, timeout_s: float | None,
                      require_speedup: float | None, plot_path: Path | None, as_json: bool) -> None:
    import json

    from optpatch.bench import BenchReport, run_bench
    from optpatch.bench_report import exit_status, payload, render_text
    from optpatch.bench_trees import TreeSetupError
    from optpatch.validation.tests import DEFAULT_TIMEOUT_S

    def progress(message: str) -> None:
        if not session.options.quiet:
            session.stderr.print(message, style="dim", markup=False, soft_wrap=True)

    report = BenchReport(command, str(session.root), metric, schedule, variants, session.options.build_command)
    try:
        run_bench(session.root, report, timeout_s or DEFAULT_TIMEOUT_S, progress)
    except TreeSetupError as error:
        raise CommandError(str(error)) from None
    except KeyboardInterrupt as interrupt:
        session.stderr.print(f"Interrupted: stopped `{command}` and removed the temporary trees; {session.root} is unchanged.",
                             markup=False, soft_wrap=True)
        sys.exit(EXIT_TERMINATED if isinstance(interrupt, Terminated) else EXIT_INTERRUPTED)
    if as_json:
        click.echo(json.dumps(payload(report, require_speedup), indent=2))
    else:
        click.echo(render_text(report, require_speedup), nl=False)
    status = exit_status(report, require_speedup)
    if plot_path is not None and report.comparisons:
        from optpatch.bench_chart import draw_chart

        try:
            draw_chart(report, plot_path)
        except OSError as error:
            raise CommandError(f"--plot {plot_path}: cannot be written: {error.strerror or error}") from None
        progress(f"bench: chart written to {plot_path}")
    sys.exit(status)
