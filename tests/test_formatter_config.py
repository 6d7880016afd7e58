"""Which formatter governs a file, with which settings: read from the repository's configuration as text."""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch.formatter_config import CppStyle, PythonFormatter, PythonStyle, Quotes, read_formatter_config
from optpatch.model import Language


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _python(root: Path, rel: str) -> PythonStyle:
    return read_formatter_config(root, [rel]).python_style(rel)


def test_no_configuration_means_no_formatter(tmp_path):
    assert _python(_tree(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n"}), "a.py") == PythonStyle()


def test_black_table_with_its_settings(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black]\nline_length = 100\nskip-string-normalization = true\n"
                                       "skip-magic-trailing-comma = true\ntarget-version = ['py310']\n"})
    style = _python(tmp_path, "pkg/a.py")
    assert (style.formatter, style.line_length, style.quotes, style.magic_trailing_comma) == (
        PythonFormatter.BLACK, 100, Quotes.PRESERVE, False)
    assert style.black_targets_known


def test_black_defaults(tmp_path):
    style = _python(_tree(tmp_path, {"pyproject.toml": "[tool.black]\n"}), "a.py")
    assert (style.line_length, style.quotes, style.magic_trailing_comma) == (88, Quotes.DOUBLE, True)


def test_black_takes_the_nearest_project_root(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black]\nline-length = 100\n",
                     "sub/pyproject.toml": "[tool.black]\nline-length = 70\n",
                     "other/pyproject.toml": "[project]\nname = 'o'\n"})
    assert _python(tmp_path, "sub/deep/a.py").line_length == 70
    assert _python(tmp_path, "other/a.py").line_length == 100  # no [tool.black] there: not black's root


def test_black_force_exclude_leaves_a_file_unformatted(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black]\nforce-exclude = '^/generated/'\n"})
    assert _python(tmp_path, "generated/a.py").formatter is None
    assert _python(tmp_path, "src/a.py").formatter is PythonFormatter.BLACK


def test_ruff_configuration_nearest_to_the_file(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 100\n[tool.ruff.format]\nquote-style = 'single'\n",
                     "lib/ruff.toml": "line-length = 72\n[format]\nskip-magic-trailing-comma = true\n",
                     "lib/.ruff.toml": "line-length = 60\n[format]\n"})
    top = _python(tmp_path, "a.py")
    assert (top.formatter, top.line_length, top.quotes) == (PythonFormatter.RUFF, 100, Quotes.SINGLE)
    nested = _python(tmp_path, "lib/x/b.py")  # .ruff.toml before ruff.toml in one directory; no inheritance
    assert (nested.line_length, nested.quotes, nested.magic_trailing_comma) == (60, Quotes.DOUBLE, True)


def test_ruff_extend_reads_the_base_first(tmp_path):
    _tree(tmp_path, {"base.toml": "line-length = 111\n[format]\nquote-style = 'preserve'\n",
                     "ruff.toml": "extend = 'base.toml'\n[format]\nskip-magic-trailing-comma = true\n"})
    style = _python(tmp_path, "a.py")
    assert (style.line_length, style.quotes, style.magic_trailing_comma) == (111, Quotes.PRESERVE, False)


def test_ruff_excludes(tmp_path):
    _tree(tmp_path, {"ruff.toml": "extend-exclude = ['third_party']\n[format]\nexclude = ['*_pb2.py']\n"})
    assert _python(tmp_path, "third_party/x/a.py").formatter is None
    assert _python(tmp_path, "pkg/msg_pb2.py").formatter is None
    assert _python(tmp_path, "pkg/a.py").formatter is PythonFormatter.RUFF


def test_a_ruff_table_without_format_is_only_a_linter(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.ruff]\nline-length = 120\n[tool.ruff.lint]\nselect = ['E']\n"})
    assert _python(tmp_path, "a.py").formatter is None


PRE_COMMIT = """\
exclude: '^vendor/'
repos:
  - repo: https://github.com/psf/black
    rev: 'refs/tags/22.12.0:refs/tags/22.12.0'
    hooks:
      - id: black
        files: ^(core|tests)/
        args: ["--line-length", "101", "-S", "--skip-magic-trailing-comma"]
  - repo: https://github.com/pre-commit/pre-commit-hooks
    rev: v5.0.0
    hooks:
      - id: double-quote-string-fixer
        files: ^tests/
"""


def test_pre_commit_hooks_decide_and_their_arguments_count(tmp_path):
    _tree(tmp_path, {".pre-commit-config.yaml": PRE_COMMIT, "pyproject.toml": "[tool.black]\nline-length = 80\n"})
    core = _python(tmp_path, "core/a.py")
    assert (core.formatter, core.line_length, core.quotes, core.magic_trailing_comma) == (
        PythonFormatter.BLACK, 101, Quotes.PRESERVE, False)
    assert core.black_before_23
    assert _python(tmp_path, "tests/t.py").quotes is Quotes.SINGLE  # the fixer turns preserved quotes single
    assert _python(tmp_path, "scripts/s.py").formatter is None  # no formatter hook takes it
    assert _python(tmp_path, "vendor/core/a.py").formatter is None  # the config's top-level exclude


def test_a_root_below_the_repository_top_reads_the_top_s_hooks_with_the_top_s_paths(tmp_path):
    # pre-commit runs at the repository's top and matches its patterns there: a run rooted at `server/` (a
    # pyproject.toml of its own, as text-generation-inference has) must see the top's hooks, and see `m.py` as
    # `server/m.py`; a folder with no `.git` above it reads only its own configuration.
    hooks = "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.2.0\n    hooks:\n      - id: black\n" \
            "        files: ^server/\n        args: [--line-length=100]\n"
    _tree(tmp_path, {".pre-commit-config.yaml": hooks, "server/pyproject.toml": "[project]\nname = 's'\n"})
    (tmp_path / ".git").mkdir()
    server = read_formatter_config(tmp_path / "server", ["m.py", "tools/t.py"])
    assert (server.python_style("m.py").formatter, server.python_style("m.py").line_length) == (PythonFormatter.BLACK, 100)
    assert server.python_style("tools/t.py").formatter is PythonFormatter.BLACK
    assert read_formatter_config(tmp_path, ["server/m.py"]).python_style("server/m.py") == server.python_style("m.py")
    assert read_formatter_config(tmp_path, ["other/m.py"]).python_style("other/m.py").formatter is None  # `files`
    (tmp_path / ".git").rmdir()
    assert read_formatter_config(tmp_path / "server", ["m.py"]).python_style("m.py").formatter is None


def test_ruff_hook_with_config_overrides(tmp_path):
    _tree(tmp_path, {".pre-commit-config.yaml": """\
repos:
  - repo: https://github.com/astral-sh/ruff-pre-commit
    rev: v0.11.6
    hooks:
      - id: ruff
      - id: ruff-format
        args: [--line-length=64, --config, "format.quote-style = 'single'"]
""", "pyproject.toml": "[tool.ruff]\nline-length = 100\n"})
    style = _python(tmp_path, "a.py")
    assert (style.formatter, style.line_length, style.quotes) == (PythonFormatter.RUFF, 64, Quotes.SINGLE)


def test_ufmt_is_black_at_its_pinned_version(tmp_path):
    _tree(tmp_path, {".pre-commit-config.yaml": """\
repos:
  - repo: https://github.com/omnilib/ufmt
    rev: v2.8.0
    hooks:
      - id: ufmt
        additional_dependencies: [black == 26.3.1, usort == 1.0.8]
""", "pyproject.toml": "[tool.black]\nline-length = 90\n"})
    style = _python(tmp_path, "a.py")
    assert (style.formatter, style.line_length, style.black_before_23) == (PythonFormatter.BLACK, 90, False)


def test_yapf_column_limit(tmp_path):
    _tree(tmp_path, {".style.yapf": "[style]\nbased_on_style = pep8\ncolumn_limit = 119\n"})
    assert (_python(tmp_path, "a.py").formatter, _python(tmp_path, "a.py").line_length) == (PythonFormatter.YAPF, 119)


@pytest.mark.parametrize("files, splits", [
    ({"pyproject.toml": "[tool.yapf]\nbased_on_style = \"pep8\"\nsplit_before_named_assigns = false\n"}, False),
    ({".style.yapf": "[style]\nbased_on_style = pep8\nSPLIT_BEFORE_NAMED_ASSIGNS = False\n"}, False),
    ({"setup.cfg": "[yapf]\nbased_on_style = google\n"}, True),
])
def test_yapf_split_before_named_assigns(tmp_path, files, splits):
    # pytorch_geometric turns it off: yapf then packs a split call's keywords with the arguments before them
    _tree(tmp_path, files)
    style = _python(tmp_path, "a.py")
    assert (style.formatter, style.yapf_splits_before_keywords) == (PythonFormatter.YAPF, splits)


def test_an_unreadable_configuration_governs_nothing(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black\n", ".pre-commit-config.yaml": "repos: [\n"})
    assert _python(tmp_path, "a.py") == PythonStyle()


@pytest.mark.parametrize("text, expected", [
    ("BasedOnStyle: Google\n", CppStyle(80, 2, 4, True, "Align")),
    ("BasedOnStyle: LLVM\nIndentWidth: 4\nColumnLimit: 100\nBinPackArguments: false\n", CppStyle(100, 4, 4, False, "Align")),
    ("---\nColumnLimit: 90\n---\nLanguage: Cpp\nIndentWidth: 3\n---\nLanguage: JavaScript\nColumnLimit: 50\n",
     CppStyle(90, 3, 4, True, "Align")),
    ("BasedOnStyle: WebKit\n", CppStyle(0, 4, 4, True, "DontAlign")),
    ("DisableFormat: true\n", CppStyle()),
])
def test_clang_format(tmp_path, text, expected):
    _tree(tmp_path, {".clang-format": text})
    assert read_formatter_config(tmp_path, ["src/a.cu"]).cpp_style("src/a.cu") == expected


def test_clang_format_inherits_its_parents_settings(tmp_path):
    _tree(tmp_path, {".clang-format": "BasedOnStyle: Google\nColumnLimit: 120\n",
                     "sub/.clang-format": "BasedOnStyle: InheritParentConfig\nIndentWidth: 4\n"})
    assert read_formatter_config(tmp_path, ["sub/a.cpp"]).cpp_style("sub/a.cpp") == CppStyle(120, 4, 4, True, "Align")


def test_a_clang_format_hook_limits_the_files(tmp_path):
    _tree(tmp_path, {".clang-format": "ColumnLimit: 100\n", ".pre-commit-config.yaml": """\
repos:
  - repo: https://github.com/pre-commit/mirrors-clang-format
    rev: v22.1.5
    hooks:
      - id: clang-format
        exclude: ^third_party/
"""})
    config = read_formatter_config(tmp_path, ["csrc/a.cu", "third_party/b.cpp"])
    assert config.cpp_style("csrc/a.cu").column_limit == 100
    assert config.cpp_style("third_party/b.cpp") == CppStyle()


def test_sources_list_every_file_read_with_its_digest(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black]\n", "pkg/ruff.toml": "line-length = 80\n"})
    first = read_formatter_config(tmp_path, ["pkg/a.py"]).sources
    assert [rel for rel, _ in first] == ["pkg/ruff.toml", "pyproject.toml"]
    (tmp_path / "pkg" / "ruff.toml").write_text("line-length = 81\n")
    assert read_formatter_config(tmp_path, ["pkg/a.py"]).sources != first


def test_style_of_a_file_by_its_language(tmp_path):
    _tree(tmp_path, {"pyproject.toml": "[tool.black]\n", ".clang-format": "ColumnLimit: 99\n"})
    config = read_formatter_config(tmp_path, ["a.py", "b.cu"])
    assert isinstance(config.style_of("a.py", Language.PYTHON), PythonStyle)
    assert config.style_of("b.cu", Language.CPP).column_limit == 99


def test_a_changed_setting_is_not_served_from_the_cache(tmp_path, monkeypatch):
    from optpatch.config import Settings
    from optpatch.engine import run
    from optpatch.policy import FixPolicy

    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = _tree(tmp_path / "repo", {
        "pyproject.toml": "[tool.black]\nline-length = 88\n",
        "m.py": "import torch\n\n\ndef f(rows, columns, device: torch.device):\n"
                "    return torch.ones(rows, columns).to(device)\n",
    })

    def rewritten() -> str:
        (change,) = run(root, Settings(), FixPolicy(), jobs=1).changes
        return change.new.decode()

    assert "    return torch.ones(rows, columns, device=device)\n" in rewritten()
    (root / "pyproject.toml").write_text("[tool.black]\nline-length = 48\n")
    assert "    return torch.ones(\n        rows, columns, device=device\n    )\n" in rewritten()


@pytest.mark.parametrize("files", [
    {"pyproject.toml": 'tool = "none"\n'},
    {"pyproject.toml": "[tool]\nruff = 3\nblack = 'x'\n"},
    {".pre-commit-config.yaml": "repos: 3\n"},
    {".pre-commit-config.yaml": "repos:\n  - repo: local\n    hooks: [{id: black, files: '(', args: 5}]\n"},
    {"pyproject.toml": "[tool.black]\nforce-exclude = '['\nline-length = 'long'\n"},
    {".clang-format": "- just\n- a list\n"},
])
def test_malformed_configuration_is_read_as_its_tool_would_refuse_it(tmp_path, files):
    _tree(tmp_path, files)
    config = read_formatter_config(tmp_path, ["a.py", "b.cpp"])
    assert isinstance(config.python_style("a.py"), PythonStyle) and isinstance(config.cpp_style("b.cpp"), CppStyle)


NESTED_PROJECT_MODULE = """\
import torch


def mask_of(batch_size, pixel_values, patch_size):
    mask = torch.ones(
        (
            batch_size,
            pixel_values.size(2) // patch_size,
            pixel_values.size(3) // patch_size,
        )
    )
    mask = mask.to(dtype=torch.bool, device=pixel_values.device)
    return mask
"""


def test_a_file_named_alone_in_a_nested_project_is_fixed_as_black_lays_it_out(tmp_path):
    # As pre-commit names it: `server/pkg/m.py` from the repository's top, where the black hook is; the nearest
    # pyproject.toml makes `server/` optpatch's root. The fix merges the `.to` into the call, laid out as black
    # would (text-generation-inference's idefics2.py: once `), device=..., dtype=torch.bool` on one line).
    import subprocess

    from conftest import run_cli
    from formatters import black

    hooks = "repos:\n  - repo: https://github.com/psf/black\n    rev: 24.2.0\n    hooks:\n      - id: black\n"
    _tree(tmp_path, {".pre-commit-config.yaml": hooks, "server/pyproject.toml": "[project]\nname = 's'\n",
                     "server/pkg/m.py": NESTED_PROJECT_MODULE})
    (tmp_path / ".git").mkdir()
    assert subprocess.run([str(black()), "--check", "-q", "server/pkg/m.py"], cwd=tmp_path).returncode == 0
    fixed = run_cli("check", "server/pkg/m.py", "--fix", "--no-cache", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    text = (tmp_path / "server/pkg/m.py").read_text()
    assert "mask.to(" not in text and "device=pixel_values.device" in text, text
    checked = subprocess.run([str(black()), "--check", "--diff", "-q", "server/pkg/m.py"], cwd=tmp_path,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout
