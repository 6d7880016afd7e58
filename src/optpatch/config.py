"""Settings: defaults, each file's configuration file, then the command line.

Every file has its own settings, as in ruff's hierarchical configuration
(`ConfigResolver`): from the file's folder upwards, the first folder holding
`.optpatch.toml`, `optpatch.toml` or a `pyproject.toml` with a
`[tool.optpatch]` table gives the configuration, in that order of preference
within a folder (ruff's order for its own files). A `pyproject.toml` without
the table is passed over, so a package's own pyproject does not hide its
repository's settings. `exclude`, `per-file-ignores` and `areas` patterns are
relative to the folder of the file that sets them, so a file gets the same verdict
whichever paths a command names. `--config PATH` gives every file PATH's
settings.

A command named in a scanned repository's configuration is never run unless
the user passes --trust-config, and `validate-command` only with --validate:
a CI bot scanning a fork must not execute what the fork asks for. Until then
such a setting is inert, with a note (`ConfigResolver.notes`), never an error.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from optpatch.areas import area_of
from optpatch.discovery import gitignore_spec, pattern_error
from optpatch.model import CodeArea, Tier
from optpatch.source import DEFAULT_MAX_BYTES


class ConfigError(Exception):
    """A usage or configuration mistake: exit status 2, nothing written."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # `exclude` also for paths named on the command line (pre-commit names every file)
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    tiers: tuple[tuple[str, str], ...] = ()  # (code, tier): may only make a rule stricter
    max_file_size: int = DEFAULT_MAX_BYTES
    unsafe_fixes: bool = False
    validate_command: str | None = None
    format_command: str | None = None  # run on the rewritten files of a copy (format_command.py); never by default
    compile_commands: str | None = None  # --compile-commands: the compile_commands.json (or its folder) to use
    headers: bool = True  # False with --no-headers: C++/CUDA files are analysed without their headers
    source: str = "defaults"  # where the settings came from, for messages
    fix_areas: tuple[CodeArea, ...] = (CodeArea.LIBRARY,)  # the areas whose fixes the run applies (policy.py)
    areas: tuple[tuple[str, CodeArea], ...] = ()  # (gitignore pattern, area): overrides areas.py's path heuristic
    include_dirs: tuple[str, ...] = ()  # `include-dirs` and -I: searched first for C++/CUDA headers (absolute paths)
    folder: str = ""  # the absolute folder `exclude`, `per-file-ignores` and `areas` are relative to; "": the scanned root
    inert_commands: tuple[str, ...] = ()  # command settings read but not trusted: kept out of every run, noted once

    def pattern_path(self, path: Path, rel: str) -> str | None:
        """PATH (REL under the scanned root) as `exclude`, `per-file-ignores` and `areas` see it: relative to `folder`;
        None outside it."""
        if not self.folder:
            return rel
        try:
            return Path(os.path.abspath(path)).relative_to(self.folder).as_posix()
        except ValueError:
            return None

    def area_of(self, path: Path, rel: str) -> CodeArea:
        """PATH's area: `areas` sees it relative to `folder`, as `exclude` does; areas.py's heuristic sees REL."""
        probe = self.pattern_path(path, rel)
        return area_of(rel, self.areas if probe is not None else (), probe)

    def excludes(self, path: Path, rel: str, is_dir: bool) -> bool:
        """Whether `exclude` names PATH (a folder when IS_DIR)."""
        probe = self.pattern_path(path, rel)
        if not probe or probe == "." or not self.exclude:
            return False
        return gitignore_spec(self.exclude).match_file(probe + "/" if is_dir else probe)


_KEYS = {
    "select": "select",
    "ignore": "ignore",
    "extend-select": "extend_select",
    "extend-ignore": "extend_ignore",
    "exclude": "exclude",
    "force-exclude": "force_exclude",
    "per-file-ignores": "per_file_ignores",
    "tiers": "tiers",
    "max-file-size": "max_file_size",
    "unsafe-fixes": "unsafe_fixes",
    "validate-command": "validate_command",
    "format-command": "format_command",
    "fix-areas": "fix_areas",
    "areas": "areas",
    "include-dirs": "include_dirs",
}


CONFIG_FILES = (".optpatch.toml", "optpatch.toml", "pyproject.toml")  # within one folder, the first one found wins


@dataclass
class ConfigResolver:
    """The settings of each file: its nearest configuration's (else defaults), with the command line on top.

    Looked up once a folder: a walk of a large tree reads each configuration
    file once. Every configuration met is checked when first read, so a
    mistake in one stops the run (exit 2) whichever file reached it first.
    """

    trust_config: bool = False
    on_top: Callable[[Settings], Settings] = lambda settings: settings  # the command line's options
    explicit: Path | None = None  # --config PATH: every file's configuration
    _by_folder: dict[str, Settings] = field(default_factory=dict)
    _by_file: dict[str, Settings] = field(default_factory=dict)

    @classmethod
    def fixed(cls, settings: Settings) -> "ConfigResolver":
        """Every file gets SETTINGS (a run given its settings directly)."""
        resolver = cls()
        resolver._by_file[""] = settings
        return resolver

    def for_path(self, path: Path) -> Settings:
        """The settings of a file, or of a folder's contents when PATH is a folder."""
        absolute = Path(os.path.abspath(path))
        return self.for_folder(absolute if absolute.is_dir() else absolute.parent)

    def for_file(self, path: Path) -> Settings:
        """`for_path` for a path known to be a file (discovery's): no look at the disk, no `Path` made (the engine
        asks once per file: NeMo 2,580 times)."""
        return self.for_folder(os.path.dirname(os.path.abspath(path)))

    def for_folder(self, folder: Path | str) -> Settings:
        if "" in self._by_file:
            return self._by_file[""]
        if self.explicit is not None:
            return self._load(self.explicit)
        key = os.path.abspath(folder)
        if key not in self._by_folder:
            config = _config_in(Path(key))
            parent = os.path.dirname(key)
            if config is not None:
                self._by_folder[key] = self._load(config)
            elif parent == key:
                self._by_folder[key] = self.on_top(Settings())
            else:
                self._by_folder[key] = self.for_folder(parent)
        return self._by_folder[key]

    def _load(self, path: Path) -> Settings:
        key = str(path)
        if key not in self._by_file:
            table = _table(_optpatch_table(path, _read_toml(path)), "tool.optpatch", key)
            settings = settings_from_table(table, key, self.trust_config)
            folder = os.path.abspath(path.parent)
            self._by_file[key] = self.on_top(replace(settings, folder=folder))
        return self._by_file[key]

    def excluded(self, path: Path, rel: str, is_dir: bool) -> bool:
        """discovery.Exclusions: PATH is judged by the configuration of the folder that holds it."""
        return self.for_folder(path.parent).excludes(path, rel, is_dir)

    def force_excluded(self, path: Path, rel: str) -> bool:
        """discovery.Exclusions: a named PATH, or a folder above it up to the root, that its folder's `exclude` names."""
        path = Path(os.path.abspath(path))
        parts = rel.split("/")
        for depth in range(len(parts), 0, -1):
            settings = self.for_folder(path.parent)
            if settings.force_exclude and settings.excludes(path, "/".join(parts[:depth]), depth < len(parts) or path.is_dir()):
                return True
            path = path.parent
        return False

    def notes(self) -> list[str]:
        """One line for each configuration read whose command settings this run leaves alone."""
        return [
            f"note: {settings.source} sets {', '.join(settings.inert_commands)}; not run: "
            + ("it runs only with --validate and --trust-config" if settings.inert_commands == ("validate-command",)
               else "pass --trust-config to allow it (validate-command: with --validate)")
            for settings in dict.fromkeys(self._by_file.values()) if settings.inert_commands
        ]


def find_config(start: Path) -> Path | None:
    """The configuration file nearest to START (a file or folder), looking upwards; None when there is none."""
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if (path := _config_in(candidate)) is not None:
            return path
    return None


def _config_in(folder: Path) -> Path | None:
    """FOLDER's own configuration file, if it has one."""
    for name in CONFIG_FILES:
        path = folder / name
        if path.is_file() and (name != "pyproject.toml" or _has_optpatch_table(path)):
            return path
    return None


def _has_optpatch_table(pyproject: Path) -> bool:
    """Whether a pyproject.toml configures optpatch; one that never says "optpatch" is not even parsed."""
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False  # another tool's file that optpatch cannot read is not optpatch's to refuse
    if "optpatch" not in text:
        return False
    tool = _parse_toml(pyproject, text).get("tool")
    return isinstance(tool, dict) and "optpatch" in tool


def _read_toml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}") from None
    return _parse_toml(path, text)


def _parse_toml(path: Path, text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _optpatch_table(path: Path, document: dict):
    """`[tool.optpatch]`; in optpatch's own files, also the settings at the top level (as ruff.toml has them)."""
    tool = document.get("tool", {})
    table = tool.get("optpatch") if isinstance(tool, dict) else None  # another tool's malformed `tool` is not ours
    if table is None:
        table = {} if path.name == "pyproject.toml" else document
    return table


def settings_from_table(table: dict, origin: str, trust_config: bool) -> Settings:
    values: dict = {}
    for key, value in table.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{origin}: unknown key `{key}` in [tool.optpatch] (known: {known})")
        values[_KEYS[key]] = value
    settings = Settings(source=origin)
    for name in ("select", "ignore", "exclude"):
        if name in values:
            settings = replace(settings, **{name: _string_list(values[name], name, origin)})
    if "extend_select" in values:
        settings = replace(settings, select=extend_selection(settings.select, _string_list(values["extend_select"], "extend-select", origin)))
    if "extend_ignore" in values:
        settings = replace(settings, ignore=settings.ignore + _string_list(values["extend_ignore"], "extend-ignore", origin))
    _check_patterns(settings.exclude, "exclude", origin)
    if "per_file_ignores" in values:
        table = _table(values["per_file_ignores"], "per-file-ignores", origin)
        _check_patterns(tuple(table), "per-file-ignores", origin)
        pairs = tuple((glob, _string_list(codes, f"per-file-ignores.{glob}", origin)) for glob, codes in table.items())
        settings = replace(settings, per_file_ignores=pairs)
    if "tiers" in values:
        tiers = _table(values["tiers"], "tiers", origin)
        for code, tier in tiers.items():
            if tier not in {t.value for t in Tier}:
                raise ConfigError(f"{origin}: tiers.{code} = {tier!r}; use one of {', '.join(Tier)}")
        settings = replace(settings, tiers=tuple(sorted(tiers.items())))
    if "fix_areas" in values:
        settings = replace(settings, fix_areas=code_areas(_string_list(values["fix_areas"], "fix-areas", origin), origin))
    if "areas" in values:
        table = _table(values["areas"], "areas", origin)
        _check_patterns(tuple(table), "areas", origin)
        if not all(isinstance(area, str) for area in table.values()):
            raise ConfigError(f"{origin}: `areas` maps patterns to one area each, e.g. {{\"mypkg/testing/**\" = \"tests\"}}")
        pairs = tuple(zip(table, code_areas(tuple(table.values()), origin)))
        settings = replace(settings, areas=pairs)
    if "max_file_size" in values:
        size = values["max_file_size"]
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise ConfigError(f"{origin}: max-file-size must be a positive number of bytes")
        settings = replace(settings, max_file_size=size)
    if "include_dirs" in values:  # relative to the configuration file's folder
        folders = _string_list(values["include_dirs"], "include-dirs", origin)
        settings = replace(settings, include_dirs=tuple(str(Path(origin).parent / f) for f in folders))
    for name in ("unsafe_fixes", "force_exclude"):
        if name in values:
            if not isinstance(values[name], bool):
                raise ConfigError(f"{origin}: {name.replace('_', '-')} must be true or false")
            settings = replace(settings, **{name: values[name]})
    # Settings that run a command from the scanned repository: inert unless trusted (module docstring).
    for name in ("validate_command", "format_command"):
        if name in values:
            if not isinstance(values[name], str):
                raise ConfigError(f"{origin}: {name.replace('_', '-')} must be a string (a shell command)")
            if trust_config:
                settings = replace(settings, **{name: values[name]})
            else:
                settings = replace(settings, inert_commands=settings.inert_commands + (name.replace("_", "-"),))
    return settings


def code_areas(names: tuple[str, ...], origin: str) -> tuple[CodeArea, ...]:
    """`("library", "tests")` as areas; a name that is none is a configuration error naming the known ones."""
    known = {area.value for area in CodeArea}
    for name in names:
        if name not in known:
            raise ConfigError(f"{origin}: unknown area `{name}`; use {', '.join(area.value for area in CodeArea)}")
    return tuple(CodeArea(name) for name in names)


def extend_selection(select: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """`extend-select`: SELECT plus MORE; an empty SELECT already means every rule, and stays so."""
    return select + more if select else select


def _check_patterns(patterns: tuple[str, ...], name: str, origin: str) -> None:
    for pattern in patterns:
        if why := pattern_error(pattern):
            raise ConfigError(f"{origin}: `{name}`: {pattern!r} is not a valid gitignore pattern ({why})")


def _string_list(value, name: str, origin: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{origin}: `{name}` must be a list of strings")
    return tuple(value)


def _table(value, name: str, origin: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{origin}: `{name}` must be a table")
    return value
