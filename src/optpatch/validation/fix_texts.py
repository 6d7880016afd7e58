"""Each candidate file's bytes with a given set of its fixes applied, as a normal run would write them."""

from __future__ import annotations

from pathlib import Path

from optpatch.config import Settings
from optpatch.cpp_headers import HeaderSetup
from optpatch.formatter_config import read_formatter_config
from optpatch.model import Finding, Language
from optpatch.passes import FileRecord, rules_for, settle, text_digest
from optpatch.policy import FixPolicy, fix_id
from optpatch.results import RunResult
from optpatch.rule import load_rules, select_rules
from optpatch.source import SourceFile, read_source
from optpatch.validation.fix_choice import ChosenFixes
from optpatch.validation.workspace import ValidationSetupError


class FixRenderer:
    """Each candidate file's bytes with a given set of its fixes applied (memoised per file and set).

    Every set is settled from one analysis of the file (passes.FileRecord),
    so fixes that overlap (applied over several passes) are handled exactly
    as a normal run would, and no file is analysed twice for the same text.
    """

    def __init__(self, root: Path, settings: Settings, policy: FixPolicy, analysis: RunResult, candidates: list[Finding]):
        self.settings = settings
        self.policy = policy
        self.headers = HeaderSetup.for_run(root, settings.compile_commands, settings.headers)
        self.rules = select_rules(load_rules(), settings.select, settings.ignore)
        self.ids_by_file: dict[str, frozenset[str]] = {}
        for finding in candidates:
            self.ids_by_file[finding.path] = self.ids_by_file.get(finding.path, frozenset()) | {fix_id(finding)}
        self.sources: dict[str, SourceFile] = {}
        self.records: dict[str, FileRecord] = {}
        analysed = {r.rel: r.old for r in analysis.files}
        formatters = read_formatter_config(root, self.ids_by_file)
        for rel in self.ids_by_file:
            source = read_source(root / rel, rel, settings.max_file_size, settings.area_of(root / rel, rel))
            if not isinstance(source, SourceFile) or source.raw != analysed.get(rel):
                raise ValidationSetupError(f"{root / rel}: changed while optpatch was reading it; run optpatch again")
            self.sources[rel] = source
            self.records[rel] = FileRecord(text_digest(source.raw), style=formatters.style_of(rel, source.language))
        self._memo: dict[tuple[str, frozenset[str]], bytes] = {}

    @property
    def files(self) -> list[str]:
        return sorted(self.ids_by_file)

    def file_bytes(self, rel: str, chosen: frozenset[str]) -> bytes:
        own = chosen & self.ids_by_file[rel]
        key = (rel, own)
        if key not in self._memo:
            policy = ChosenFixes(unsafe_fixes=self.policy.unsafe_fixes, tiers=self.policy.tiers,
                                 fix_areas=self.policy.fix_areas, chosen=own)
            source, record = self.sources[rel], self.records[rel]
            rules = rules_for(rel, self.rules, self.settings)
            record.analysis_of(source, lambda: rules, self.headers)
            result = settle(record, lambda: source, lambda: rules, policy, rel=rel, headers=self.headers)
            self._memo[key] = result.new if result.new is not None else source.raw
        return self._memo[key]

    def is_cpp(self, rel: str) -> bool:
        return self.sources[rel].language is not Language.PYTHON
