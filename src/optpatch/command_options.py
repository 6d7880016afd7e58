"""What one command line asked for, typed once from click's parameters (cli.py reads fields, never keys).

Every command that analyses a tree (apply, check, explain, bench) builds one
`CommandOptions` from its keyword parameters; an option a command does not
take keeps its default here, so the defaults live in one place. Codes are
split at commas, areas and impact levels become their enums and the output
format its registry entry before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from optpatch.model import CodeArea, Impact
from optpatch.reporters import OutputFormat, output_format

CONFIGURED_COMMAND = "\0validate-command"  # `--validate` with no CMD: the trusted configuration's command


def split_codes(values: tuple[str, ...]) -> tuple[str, ...]:
    """`--select OPT101,OPT102 --select OPT2` -> ('OPT101', 'OPT102', 'OPT2')."""
    return tuple(code.strip() for value in values for code in value.split(",") if code.strip())


@dataclass(frozen=True)
class CommandOptions:
    # which rules run, on which files, how (cli.selection_options)
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_ignore: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    fix_areas: tuple[CodeArea, ...] | None = None  # None: the settings' `fix-areas`
    force_exclude: bool = False
    strict: bool = False
    jobs: int | None = None  # None: every core
    no_cache: bool = False
    config_path: Path | None = None
    trust_config: bool = False
    quiet: bool = False
    verbose: bool = False
    # C++/CUDA headers (cli.header_options)
    compile_commands: Path | None = None
    no_headers: bool = False
    include_dirs: tuple[Path, ...] = ()
    # the report (cli.report_options)
    format_name: str = "full"  # as given, alias included: the deprecation note and error messages name it
    output_format: OutputFormat = field(default_factory=lambda: output_format("full"))
    statistics: bool = False
    show: frozenset[str] = frozenset()
    show_fixes: bool = False
    output_file: Path | None = None
    json_output: Path | None = None
    # --validate CMD and its companions (cli.validation_options)
    validate_command: str | None = None  # CONFIGURED_COMMAND: the configuration's validate-command
    build_command: str | None = None
    validate_timeout: float | None = None
    format_command: str | None = None
    profile: Path | None = None
    # the run's scope (cli.scope_options)
    changed_since: str | None = None
    changed_lines: bool = False
    baseline: Path | None = None
    write_baseline: Path | None = None
    min_impact: Impact | None = None

    @classmethod
    def from_click(cls, parameters: dict) -> CommandOptions:
        """The options of click's PARAMETERS (a command's **options); ConfigError for a --fix-areas that names no area."""
        typed = dict(parameters)
        for name in ("select", "extend_select", "ignore", "extend_ignore"):
            typed[name] = split_codes(typed.get(name) or ())
        if typed.get("fix_areas") is not None:
            from optpatch.config import code_areas

            typed["fix_areas"] = code_areas(split_codes((typed["fix_areas"],)), "--fix-areas")
        for name in ("unsafe_fixes", "force_exclude"):  # click's None: the flag not given
            typed[name] = bool(typed.get(name))
        if "output_format" in typed:
            typed["format_name"] = typed["output_format"] or "full"
            typed["output_format"] = output_format(typed["format_name"])
        typed["show"] = frozenset(typed.get("show") or ())
        typed["include_dirs"] = tuple(typed.get("include_dirs") or ())
        if typed.get("min_impact"):
            typed["min_impact"] = Impact(typed["min_impact"])
        return cls(**typed)
