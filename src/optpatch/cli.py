"""The `optpatch` command line (CONTRACT.md): apply, check, rules, explain.

Exit status: 0 ran to the end; 1 `check` found fixable findings; 2 usage or
configuration error (nothing written); 3 some files could not be analysed
(the rest was processed); 4 a validation failed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import cached_property
from pathlib import Path

import click

from optpatch import __version__
from optpatch.reporters import FORMATS

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FILE_ERRORS, EXIT_VALIDATION = 0, 1, 2, 3, 4
EXIT_INTERRUPTED = 130  # Ctrl-C during --validate, as a shell reports SIGINT
PROGRESS_MIN_FILES = 200


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select OPT101,OPT102 --select OPT2` -> ('OPT101', 'OPT102', 'OPT2')."""
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


def common_options(function):
    options = [
        click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated)."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes of the `unsafe` tier."),
        click.option("--force-exclude", is_flag=True, default=None,
                     help="Apply `exclude` also to files named on the command line (the pre-commit hooks pass it)."),
        click.option(
            "--format", "output_format", type=click.Choice(FORMATS),
            default="text", show_default=True,
        ),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache ($OPTPATCH_CACHE_DIR, else ~/.cache/optpatch)."),
        click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), help="Read settings from this TOML file."),
        click.option("--trust-config", is_flag=True, help="Allow the scanned repo's configuration to name commands to run."),
        click.option("-q", "--quiet", is_flag=True, help="Print only errors and the summary line."),
        click.option("-v", "--verbose", is_flag=True, help="List kept sites too."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def header_options(function):
    """--compile-commands and --no-headers: where C++/CUDA files' headers come from (docs/cpp-frontend.md)."""
    options = [
        click.option("--compile-commands", type=click.Path(path_type=Path, exists=True), metavar="PATH",
                     help="The compile_commands.json (or its folder) whose flags C++/CUDA files are parsed with "
                          "(default: REPO's own, or one in a build*/ folder; else include folders are inferred)."),
        click.option("--no-headers", is_flag=True,
                     help="Analyse C++/CUDA files without their headers (the header-free parse only)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def validation_options(function):
    """--validate CMD and its companions (apply and check)."""
    options = [
        click.option("--validate", "validate_command", metavar="CMD",
                     help="Run CMD on a temporary copy of the tree, first unchanged, then with the fixes, with "
                          "uninitialised memory poisoned; back out every fix that makes it fail."),
        click.option("--build", "build_command", metavar="CMD", help="With --validate: rebuild C++ extensions before the tests when C++ files changed."),
        click.option("--validate-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
                     help="With --validate: stop one run of CMD after this long (default: 1800)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


class Session:
    """What one invocation resolved: root, settings, consoles."""

    def __init__(self, root: Path, options: dict, report_to_stderr: bool = False):
        from optpatch.config import ConfigError, load_settings

        self.root = root.resolve()
        self.options = options
        try:
            settings = load_settings(self.root, options["config_path"], options["trust_config"])
        except ConfigError as error:
            raise click.UsageError(str(error)) from None
        overrides = {}
        if options["select"]:
            overrides["select"] = _codes(options["select"])
        if options["ignore"]:
            overrides["ignore"] = settings.ignore + _codes(options["ignore"])
        if options["unsafe_fixes"]:
            overrides["unsafe_fixes"] = True
        if options.get("force_exclude"):
            overrides["force_exclude"] = True
        if options.get("compile_commands"):
            overrides["compile_commands"] = str(options["compile_commands"].resolve())
        if options.get("no_headers"):
            overrides["headers"] = False
        self.settings = replace(settings, **overrides)
        self._check_codes()
        self.report_to_stderr = report_to_stderr
        self.patch_path: str | None = None  # the patch file `apply` wrote, for the JSON report
        self.scope_note: str | None = None

    @cached_property
    def console(self):
        """Where the text report goes. Made on first use: a quiet run in a machine format never imports rich."""
        return _console(stderr=self.report_to_stderr)

    @cached_property
    def stderr(self):
        return _console(stderr=True, fixed_width=False)

    def _check_codes(self) -> None:
        from optpatch.rule_facts import rule_facts  # not the rules themselves: importing them costs 0.2 s

        known = rule_facts()
        for code in self.settings.select + self.settings.ignore:
            if not any(rule.code.startswith(code) or rule.name == code for rule in known):
                raise click.UsageError(f"unknown rule code or prefix `{code}` (see `optpatch rules`)")

    def run(self, paths: list[Path] | None = None):
        from optpatch.engine import run
        from optpatch.narrowing import drop_out_of_scope
        from optpatch.policy import FixPolicy

        narrowing = self.narrowing(paths)
        policy = FixPolicy(unsafe_fixes=self.settings.unsafe_fixes, tiers=self.settings.tiers)
        progress = None
        if not self.options["quiet"] and self.stderr.is_terminal:
            progress = _ProgressBar(self.stderr)
        try:
            result = run(
                self.root, self.settings, policy, narrowing.paths, self.options["jobs"], progress,
                use_cache=not self.options["no_cache"], filters=narrowing.filters,
            )
        finally:
            if progress:
                progress.close()
        self.scope_note = narrowing.note(drop_out_of_scope(result))
        return result

    def narrowing(self, paths: list[Path] | None):
        """The files and finding filters that --changed-since, --changed-lines and --baseline ask for."""
        from optpatch.narrowing import NarrowingError, NarrowingRequest, narrow

        options = self.options
        request = NarrowingRequest(options.get("changed_since"), bool(options.get("changed_lines")), options.get("baseline"))
        try:
            return narrow(self.root, self.settings.exclude, paths, request)
        except NarrowingError as error:
            raise click.UsageError(str(error)) from None

    def report(self, result, patch_note: str | None = None, title: str | None = None) -> None:
        fmt = self.options["output_format"]
        if fmt != "text":  # beside a patch on stdout (`-o -`), the report goes to stderr like the text one
            from optpatch.reporters import machine_renderer

            if fmt == "json":
                report = machine_renderer(fmt)(result, self.patch_path)
            elif fmt == "sarif":  # kept sites are no alerts: with -v only, as in the text report
                report = machine_renderer(fmt)(result, include_kept=self.options["verbose"])
            else:
                report = machine_renderer(fmt)(result)
            click.echo(report, nl=False, err=self.report_to_stderr)
            return
        from optpatch.reporters.text import render_text

        patch_note = "\n".join(note for note in (self.scope_note, patch_note) if note) or None
        if self.options["quiet"]:
            result_findings = result.findings
            applied = sum(f.applied for f in result_findings)
            self.console.print(f"{applied} fixes, {len(result.errors)} files failed. {patch_note or ''}".strip())
            for error in result.errors:
                self.stderr.print(f"error {error.location()}: {error.reason}")
            return
        render_text(result, self.console, self.options["verbose"], patch_note, title)


def _console(stderr: bool = False, fixed_width: bool = True):
    """A terminal keeps its own width; logs and pipes get room for the reason column."""
    from rich.console import Console  # imported here: `--help` and `--version` do without it

    console = Console(stderr=stderr, highlight=False)
    if fixed_width and not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=160)
    return console


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


def _exit_status(result, findings_status: int = EXIT_OK) -> int:
    return EXIT_FILE_ERRORS if result.errors else findings_status


def scope_options(function):
    """--changed-since, --changed-lines, --baseline: narrow a run to what a change or a legacy repo needs."""
    options = [
        click.option("--changed-since", metavar="REF", help="Only files changed since git REF (its merge base with HEAD), plus untracked ones."),
        click.option("--changed-lines", is_flag=True, help="With --changed-since: only findings on changed lines."),
        click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False), help="Hide and leave unfixed the findings recorded in this file."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


class _Commands(click.Group):
    """Ctrl-C ends any command with exit status 130 and says what state it left, instead of click's "Aborted!" and 1."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("Interrupted: every file optpatch writes is replaced whole or not at all; none is half-written.", err=True)
            ctx.exit(EXIT_INTERRUPTED)


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
              help="Also write the JSON report (docs/json-schema.md) to PATH, whatever --format prints.")
@scope_options
@common_options
@header_options
@validation_options
def apply(repo: Path, output: str, write_in_place: bool, **options) -> None:
    """Analyse REPO and write the patch of every fix that applies."""
    from optpatch.patch import write_patch
    from optpatch.writer import write_fixes

    to_stdout = output == "-"
    session = Session(repo, options, report_to_stderr=to_stdout)
    output_path = None if to_stdout else Path(output).resolve()
    if output_path is not None:
        _check_output(output_path, "-o")
    if options["json_output"]:
        _check_output(options["json_output"].resolve(), "--json-output")
    validation = _run_validation(session)
    result = session.run() if validation is None else validation.result
    if result is None:
        _report_validation(session, None, None, validation)
        session.stderr.print("No patch written.")
        sys.exit(EXIT_VALIDATION)
    patch = write_patch(result.changes)
    if to_stdout:
        sys.stdout.buffer.write(patch)
        sys.stdout.flush()
        note = None if result.changes else "No changes: the patch on stdout is empty."
    else:
        _write_output(output_path, patch, "-o")
        session.patch_path = str(output_path)
        note = _patch_note(result, output, repo)
    if write_in_place:
        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"error {rel}: not written: {why}")
        note = (note or "") + f"\nWrote {len(report.written)} files in {repo}."
        if report.refused:
            _report_validation(session, result, note, validation)
            sys.exit(EXIT_FILE_ERRORS)
    _report_validation(session, result, note, validation)
    sys.exit(EXIT_VALIDATION if validation is not None and validation.failed else _exit_status(result))


def _check_output(path: Path, option: str) -> None:
    """Refuse an output path that cannot be written before any work is done (exit 2, nothing written)."""
    if path.is_dir():
        raise click.UsageError(f"{option} {path}: is a directory; give a file path")
    if not path.parent.is_dir():
        raise click.UsageError(f"{option} {path}: directory {path.parent} does not exist; create it first")


def _write_output(path: Path, data: bytes, option: str) -> None:
    from optpatch.writer import write_atomically

    try:
        write_atomically(path, data)
    except OSError as error:
        raise click.UsageError(f"{option} {path}: cannot be written: {error.strerror or error}") from None


def _patch_note(result, output: str, repo: Path) -> str:
    changes = result.changes
    if not changes:
        return f"No changes: wrote an empty patch to {output}."
    return (
        f"Patch for {len(changes)} file(s) written to {output}. "
        f"Check it with: git -C {repo} apply --check {Path(output).resolve()}"
    )


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--fix", is_flag=True, help="Apply the fixes in place (what the pre-commit hook `optpatch-fix` runs).")
@click.option(
    "--write-baseline", type=click.Path(path_type=Path, dir_okay=False),
    help="Record every finding in this file for later --baseline runs; exit 0.",
)
@click.option("--json-output", type=click.Path(path_type=Path, dir_okay=False), metavar="PATH",
              help="Also write the JSON report (docs/json-schema.md) to PATH, whatever --format prints.")
@scope_options
@common_options
@header_options
@validation_options
def check(paths: tuple[Path, ...], fix: bool, **options) -> None:
    """Report findings under PATHS (default: .); exit 1 if any fix would apply."""
    paths = paths or (Path("."),)
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    root = project_root([_resolve_parent(p) for p in paths])
    write_baseline = options["write_baseline"]
    if write_baseline and (fix or options["baseline"]):
        raise click.UsageError("--write-baseline records every finding: use it without --fix and --baseline")
    if write_baseline:
        _check_output(write_baseline.resolve(), "--write-baseline")
    if options["json_output"]:
        _check_output(options["json_output"].resolve(), "--json-output")
    session = Session(root, options)
    validation = _run_validation(session, [p.absolute() for p in paths])
    result = session.run([p.absolute() for p in paths]) if validation is None else validation.result
    if result is None:
        _report_validation(session, None, None, validation)
        sys.exit(EXIT_VALIDATION)
    fixable = [f for f in result.findings if f.applied]
    note = None
    refused_writes = False
    if write_baseline:
        _record_baseline(session, result, write_baseline)
    if fix:
        from optpatch.writer import write_fixes

        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"error {rel}: not written: {why}")
        note = f"Fixed {len(report.written)} file(s)."
        fixable = []
        refused_writes = bool(report.refused)
    _report_validation(session, result, note, validation)
    if validation is not None and validation.failed:
        sys.exit(EXIT_VALIDATION)
    if refused_writes:  # as `apply --write`: a fix left unwritten must not pass a pre-commit hook as clean
        sys.exit(EXIT_FILE_ERRORS)
    sys.exit(_exit_status(result, EXIT_FINDINGS if fixable else EXIT_OK))


def _run_validation(session: Session, paths: list[Path] | None = None):
    """The outcome of --validate CMD (or of a trusted config's validate-command); None when not asked for."""
    options = session.options
    if options["validate_command"] is not None and not options["validate_command"].strip():
        raise click.UsageError("--validate needs a command, e.g. --validate \"python -m pytest -q\"")
    command = options["validate_command"] or session.settings.validate_command
    if not command:
        if options["build_command"]:
            raise click.UsageError("--build CMD needs --validate CMD: the build runs only before validation runs")
        return None

    def progress(message: str) -> None:
        if not options["quiet"]:
            session.stderr.print(message, style="dim", markup=False, soft_wrap=True)

    from optpatch.narrowing import drop_out_of_scope
    from optpatch.poisoned_tests import ValidationSetupError, validate

    narrowing = session.narrowing(paths)
    try:
        outcome = validate(
            session.root, session.settings, command, paths=narrowing.paths, filters=narrowing.filters,
            jobs=options["jobs"], build_command=options["build_command"], timeout_s=options["validate_timeout"],
            progress=progress, use_cache=not options["no_cache"],
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


def _report_validation(session: Session, result, note: str | None, validation) -> None:
    """The usual report, plus what validation ran, dropped and accepted."""
    if session.options["json_output"]:
        _write_output(session.options["json_output"].resolve(), _json_report(session, result, validation).encode(), "--json-output")
    if validation is None:
        session.report(result, note)
        return
    from optpatch.poisoned_tests import render_validation
    from optpatch.reporters import machine_renderer
    from optpatch.reporters.markdown import render_markdown

    fmt = session.options["output_format"]
    if fmt == "json":
        click.echo(_json_report(session, result, validation), nl=False)
        return
    if result is not None and fmt != "text" and machine_renderer(fmt) is render_markdown:  # a PR body says what validation did
        click.echo(render_markdown(result, validation.to_dict()), nl=False)
        return
    if result is not None:
        session.report(result, note)
    if fmt != "text":
        render_validation(validation, session.stderr)
    elif session.options["quiet"] and not validation.failed:
        session.console.print(validation.message, markup=False, soft_wrap=True)
    else:
        render_validation(validation, session.console)


def _json_report(session: Session, result, validation) -> str:
    """The JSON report, with the `validation` object after --validate (only that when the baseline failed)."""
    import json

    from optpatch.reporters.json_report import SCHEMA_VERSION, render_json

    if validation is None:
        return render_json(result, session.patch_path)
    document = json.loads(render_json(result, session.patch_path)) if result is not None else {"schema_version": SCHEMA_VERSION}
    document["validation"] = validation.to_dict()
    return json.dumps(document, indent=2) + "\n"


def _record_baseline(session: Session, result, path: Path) -> None:
    from optpatch.baseline import baseline_document, recordable

    _write_output(path.resolve(), baseline_document(result.findings).encode("utf-8"), "--write-baseline")
    session.report(result, f"Recorded {len(recordable(result.findings))} finding(s) in {path}.")
    sys.exit(_exit_status(result))


def _resolve_parent(path: Path) -> Path:
    """The path with its directory resolved but not its last part: a link there is for discovery to judge."""
    absolute = path.absolute()
    return absolute.parent.resolve() / absolute.name if absolute.name not in ("", "..") else absolute.resolve()


def project_root(paths: list[Path]) -> Path:
    """The nearest directory above PATHS holding .git or pyproject.toml, else their common parent."""
    import os

    common = Path(os.path.commonpath([str(p) for p in paths]))
    if not common.is_dir():
        common = common.parent
    for candidate in (common, *common.parents):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").is_file():
            return candidate
    return common


@main.command()
@click.argument("code", required=False)
@click.option(
    "--write-docs", type=click.Path(path_type=Path, file_okay=False),
    help="Write every rule's page and an index into this directory (docs/rules), removing pages of rules that are gone.",
)
def rules(code: str | None, write_docs: Path | None) -> None:
    """List the rules, or print one rule's documentation."""
    from rich.markdown import Markdown
    from rich.table import Table

    from optpatch.rule import load_rules
    from optpatch.rule_docs import rule_docs, rule_page, write_rule_docs

    console = _console()
    known = load_rules()
    if write_docs:
        write_rule_docs(write_docs, rule_docs(known))
        console.print(f"Wrote {len(known)} rule page(s) and README.md to {write_docs}.")
        return
    if code is None:
        table = Table("code", "name", "language", "tier", "summary")
        for rule in known:
            table.add_row(rule.code, rule.name, rule.language, rule.default_tier, rule.summary)
        console.print(table)
        return
    matches = [r for r in known if r.code == code.upper() or r.name == code]
    if not matches:
        raise click.UsageError(f"unknown rule `{code}` (see `optpatch rules`)")
    console.print(Markdown(rule_page(matches[0])))


@main.command()
@click.argument("target")
@common_options
@header_options
def explain(target: str, **options) -> None:
    """Why each site in REPO[:FILE:LINE] was rewritten or kept: the proof, or the blocking use."""
    from optpatch.explain import explain_findings

    repo, file, line = _parse_target(target)
    if not repo.is_dir():
        raise click.UsageError(f"{target}: {repo} is not a directory; give REPO, REPO:FILE:LINE or FILE:LINE")
    session = Session(repo, options)
    paths = [repo / file] if file else None
    if file and not (repo / file).exists():
        raise click.UsageError(f"{repo / file}: no such file")
    result = session.run(paths)
    findings = [f for f in result.findings if line is None or f.line == line]
    if not findings:
        where = f"{file}:{line}" if file else str(repo)
        session.console.print(f"No site examined at {where}: no rule found an allocation or call it handles there.")
    explain_findings(findings, session.console)
    for error in result.errors:
        session.stderr.print(f"error {error.location()}: {error.reason}")
    sys.exit(_exit_status(result))


def _parse_target(target: str) -> tuple[Path, str | None, int | None]:
    parts = target.rsplit(":", 2)
    if len(parts) == 3 and parts[2].isdigit():
        return Path(parts[0] or "."), parts[1], int(parts[2])
    if len(parts) >= 2 and parts[-1].isdigit():
        file = Path(":".join(parts[:-1]))
        return project_root([file.resolve()]), str(file.resolve().relative_to(project_root([file.resolve()]))), int(parts[-1])
    return Path(target), None, None


def _plot_path(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
    """--plot FILE: an .svg or .png whose folder exists, checked before any work (exit 2)."""
    if path is None:
        return None
    from optpatch.kernel_chart import chart_format

    try:
        chart_format(path)
    except ValueError as error:
        raise click.BadParameter(str(error), ctx=ctx, param=param) from None
    _check_output(path.resolve(), "--plot")
    return path


@main.command()
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), help="Keep copies, builds and logs here.")
@click.option("--plot", "plot_path", type=click.Path(path_type=Path), callback=_plot_path, metavar="FILE",
              help="Also draw the timings as a chart, SVG or PNG by FILE's suffix (needs matplotlib: "
                   "pip install 'optpatch[plot]').")
@click.option("--from-report", "saved_report", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              metavar="REPORT.json",
              help="Run nothing: print (and with --plot, draw) a report saved from `--format json`, e.g. a GPU machine's.")
def validate(output_format: str, workdir: Path | None, plot_path: Path | None, saved_report: Path | None) -> None:
    """Build and run the bundled CUDA KV-cache kernels before and after optpatch's own rewrites.

    With a GPU: bit-exact checks against a PyTorch reference over a size
    sweep, then timings. Without one: nvcc compiles of both versions and the
    reference checks on the CPU, with every skip stated. Exit 4 when a check fails.
    """
    if saved_report is not None and workdir is not None:
        raise click.UsageError("--workdir keeps a run's files, and --from-report runs nothing: give one of them")
    if plot_path is not None:
        from optpatch.kernel_chart import ChartUnavailable, require_matplotlib

        try:
            require_matplotlib()
        except ChartUnavailable as missing:
            click.echo(f"optpatch validate --plot: {missing}", err=True)
            sys.exit(EXIT_USAGE)
    if saved_report is None:
        from optpatch.kernel_check import run_validate

        sys.exit(run_validate(output_format, workdir, plot=plot_path))
    from optpatch.kernel_check import replay_report
    from optpatch.kernel_report import ReportError

    try:
        status = replay_report(saved_report, output_format, plot_path)
    except ReportError as error:
        click.echo(f"optpatch validate --from-report: {error}", err=True)
        status = EXIT_USAGE
    sys.exit(status)
