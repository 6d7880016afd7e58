"""The `optpatch` command line (CONTRACT.md): apply, check, rules, explain.

Exit status: 0 ran to the end; 1 `check` found fixable findings; 2 usage or
configuration error (nothing written); 3 some files could not be analysed
(the rest was processed); 4 a validation failed.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console

from optpatch import __version__

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_FILE_ERRORS, EXIT_VALIDATION = 0, 1, 2, 3, 4
PROGRESS_MIN_FILES = 200


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select OPT101,OPT102 --select OPT2` -> ('OPT101', 'OPT102', 'OPT2')."""
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


def common_options(function):
    options = [
        click.option("--select", multiple=True, metavar="CODES", help="Only these rule codes or prefixes (comma-separated)."),
        click.option("--ignore", multiple=True, metavar="CODES", help="Skip these rule codes or prefixes."),
        click.option("--unsafe-fixes", is_flag=True, default=None, help="Also apply fixes of the `unsafe` tier."),
        click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True),
        click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: all cores)."),
        click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), help="Read settings from this TOML file."),
        click.option("--trust-config", is_flag=True, help="Allow the scanned repo's configuration to name commands to run."),
        click.option("-q", "--quiet", is_flag=True, help="Print only errors and the summary line."),
        click.option("-v", "--verbose", is_flag=True, help="List kept sites too."),
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
        self.settings = replace(settings, **overrides)
        self._check_codes()
        self.console = _console(stderr=report_to_stderr)
        self.stderr = Console(stderr=True, highlight=False)

    def _check_codes(self) -> None:
        from optpatch.rule import load_rules

        known = load_rules()
        for code in self.settings.select + self.settings.ignore:
            if not any(rule.code.startswith(code) or rule.name == code for rule in known):
                raise click.UsageError(f"unknown rule code or prefix `{code}` (see `optpatch rules`)")

    def run(self, paths: list[Path] | None = None):
        from optpatch.engine import FixPolicy, run

        policy = FixPolicy(unsafe_fixes=self.settings.unsafe_fixes, tiers=self.settings.tiers)
        progress = None
        if self.stderr.is_terminal and not self.options["quiet"]:
            progress = _ProgressBar(self.stderr)
        try:
            return run(self.root, self.settings, policy, paths, self.options["jobs"], progress)
        finally:
            if progress:
                progress.close()

    def report(self, result, patch_note: str | None = None, title: str | None = None) -> None:
        from optpatch.reporters import MACHINE_FORMATS
        from optpatch.reporters.text import render_text

        fmt = self.options["output_format"]
        if fmt != "text":
            click.echo(MACHINE_FORMATS[fmt](result), nl=False)
            return
        if self.options["quiet"]:
            result_findings = result.findings
            applied = sum(f.applied for f in result_findings)
            self.console.print(f"{applied} fixes, {len(result.errors)} files failed. {patch_note or ''}".strip())
            for error in result.errors:
                self.stderr.print(f"error {error.location()}: {error.reason}")
            return
        render_text(result, self.console, self.options["verbose"], patch_note, title)


def _console(stderr: bool = False) -> Console:
    """A terminal keeps its own width; logs and pipes get room for the reason column."""
    console = Console(stderr=stderr, highlight=False)
    if not console.is_terminal:
        console = Console(stderr=stderr, highlight=False, width=160)
    return console


class _ProgressBar:
    """A progress bar on stderr, shown only for large trees on a terminal."""

    def __init__(self, console: Console):
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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="optpatch")
def main() -> None:
    """optpatch: rewrites PyTorch/CUDA code for performance, and proves every rewrite first.

    \b
    Start with:  optpatch apply REPO          (writes model_patch.diff; REPO untouched)
    Then:        git -C REPO apply --check ../model_patch.diff
    """


@main.command()
@click.argument("repo", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("-o", "--output", default="model_patch.diff", show_default=True, help="Where to write the patch; `-` for stdout.")
@click.option("--write", "write_in_place", is_flag=True, help="Also apply the fixes to REPO in place (atomically).")
@common_options
def apply(repo: Path, output: str, write_in_place: bool, **options) -> None:
    """Analyse REPO and write the patch of every fix that applies."""
    from optpatch.patch import write_patch
    from optpatch.writer import write_atomically, write_fixes

    to_stdout = output == "-"
    session = Session(repo, options, report_to_stderr=to_stdout)
    output_path = None if to_stdout else Path(output).resolve()
    if output_path is not None and output_path.is_dir():
        raise click.UsageError(f"-o {output}: is a directory; give a file path")
    result = session.run()
    patch = write_patch(result.changes)
    if to_stdout:
        sys.stdout.buffer.write(patch)
        sys.stdout.flush()
        note = None
    else:
        write_atomically(output_path, patch)
        note = _patch_note(result, output, repo)
    if write_in_place:
        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"error {rel}: not written: {why}")
        note = (note or "") + f"\nWrote {len(report.written)} files in {repo}."
        if report.refused:
            session.report(result, note)
            sys.exit(EXIT_FILE_ERRORS)
    session.report(result, note)
    sys.exit(_exit_status(result))


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
@common_options
def check(paths: tuple[Path, ...], fix: bool, **options) -> None:
    """Report findings under PATHS (default: .); exit 1 if any fix would apply."""
    from optpatch.writer import write_fixes

    paths = paths or (Path("."),)
    missing = [str(p) for p in paths if not p.exists() and not p.is_symlink()]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    root = project_root([p.resolve() for p in paths])
    session = Session(root, options)
    result = session.run([p.absolute() for p in paths])
    fixable = [f for f in result.findings if f.applied]
    note = None
    if fix:
        report = write_fixes(session.root, result.changes)
        for rel, why in report.refused:
            session.stderr.print(f"error {rel}: not written: {why}")
        note = f"Fixed {len(report.written)} file(s)."
        fixable = []
    session.report(result, note)
    sys.exit(_exit_status(result, EXIT_FINDINGS if fixable else EXIT_OK))


def project_root(paths: list[Path]) -> Path:
    """The nearest directory above PATHS holding .git or pyproject.toml, else their common parent."""
    import os

    common = Path(os.path.commonpath([str(p) for p in paths]))
    if common.is_file() or not common.exists():
        common = common.parent
    for candidate in (common, *common.parents):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").is_file():
            return candidate
    return common


@main.command()
@click.argument("code", required=False)
def rules(code: str | None) -> None:
    """List the rules, or print one rule's documentation."""
    from rich.markdown import Markdown
    from rich.table import Table

    from optpatch.rule import load_rules

    console = _console()
    known = load_rules()
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


def rule_page(rule) -> str:
    """A rule's documentation page, as Markdown (also what docs/rules/*.md hold)."""
    sections = rule.documentation()
    lines = [f"# {rule.code} {rule.name}", "", sections.pop("Summary", rule.summary), ""]
    lines.append(f"Language: {rule.language} · default tier: `{rule.default_tier}` · tags: {', '.join(rule.tags) or '-'}")
    for heading, body in sections.items():
        lines += ["", f"## {heading}", "", body]
    return "\n".join(lines).rstrip() + "\n"


@main.command()
@click.argument("target")
@common_options
def explain(target: str, **options) -> None:
    """Why each site in REPO[:FILE:LINE] was rewritten or kept: the proof, or the blocking use."""
    from optpatch.explain import explain_findings

    repo, file, line = _parse_target(target)
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


@main.command()
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), help="Keep copies, builds and logs here.")
def validate(output_format: str, workdir: Path | None) -> None:
    """Build and run the bundled CUDA KV-cache kernels before and after optpatch's own rewrites.

    With a GPU: bit-exact checks against a PyTorch reference over a size
    sweep, then timings. Without one: nvcc compiles of both versions and the
    reference checks on the CPU, with every skip stated. Exit 4 when a check fails.
    """
    from optpatch.kernel_validation import run_validate

    sys.exit(run_validate(output_format, workdir))
