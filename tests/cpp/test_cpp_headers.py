"""Where headers come from (cpp_headers.py), what an analysis that read them records (analysis_inputs.py), the
precompiled preambles (cpp_pch.py), the fallbacks (cpp_second_look.py) and the command line's options.

Parses here use the standard library and small project headers only (milliseconds to a second), never torch:
tests/cpp/test_header_modes.py holds the parses with torch's headers.
"""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
from pathlib import Path

import pytest
from clang.cindex import CursorKind

from conftest import REPO_ROOT, run_cli
from optpatch import cpp_headers, cpp_second_look
from optpatch.analysis_inputs import FileInput, HeaderSetInput, forget_checks, record_header_set
from optpatch.config import Settings
from optpatch.cpp_headers import HeaderMode, HeaderOutcome, HeaderSetup
from optpatch.cpp_frontend import file_preamble
from optpatch.cpp_pch import preamble_of
from optpatch.engine import run
from optpatch.passes import analyse_text
from optpatch.policy import FixPolicy
from optpatch.rule import load_rules
from optpatch.source import read_source

RULES = [rule for rule in load_rules() if rule.code in ("OPT201", "OPT202")]

# The first array's bound is constant only if `Vec2` is known: without headers clang types it variable-length and
# OPT201 advises std::array; with them it is a constant array, no finding. The second is a real VLA; the third's
# bound is a constant from the header, which a header-free parse drops.
KERNEL = textwrap.dedent("""\
    #include <cstring>
    #include "sizes.h"

    void pack(const float* src, int n, float* out) {
      constexpr int kWidth = 16 / sizeof(Vec2);
      float lanes[kWidth];
      float tmp[n];
      float spare[kSpare];
      std::memcpy(tmp, src, n * sizeof(float));
      std::memcpy(out, tmp, n * sizeof(float));
      lanes[0] = tmp[0];
      spare[0] = lanes[0];
      out[0] = spare[0];
    }
""")
SIZES = "#pragma once\nstruct Vec2 { float x, y; };\nconstexpr int kSpare = 2;\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def findings_of(root: Path, rel: str, setup: HeaderSetup) -> tuple[set, object]:
    analysis = analyse_text(read_source(root / rel, rel), RULES, headers=setup)
    assert analysis.error is None, analysis.error
    return {(f.line, f.code, f.verdict.value) for f in analysis.findings}, analysis


# -- where the flags come from ------------------------------------------------------------------------------


def test_a_compile_commands_entry_gives_the_file_its_own_folders_macros_and_standard(tmp_path):
    root = write(tmp_path / "repo", {"src/k.cu": "", "third/x.h": "", "src/host.cpp": ""})
    nvcc = "nvcc -c src/k.cu -Ithird --include-path=gen -DUSE_X=1 -std=c++17 -Xcompiler -fopenmp,-DHOST=2 -o k.o -gencode=x"
    gxx = "g++ -isystem /opt/ext -I third -U NDEBUG -o host.o -c src/host.cpp"
    write(root, {"build/compile_commands.json": json.dumps([
        {"directory": str(root), "file": "src/k.cu", "command": nvcc},
        {"directory": str(root), "file": "src/host.cpp", "arguments": gxx.split()},
    ])})
    setup = HeaderSetup.for_run(root, None, True)
    kernel = setup.flags_for(root / "src" / "k.cu")
    assert kernel.mode is HeaderMode.COMPILE_COMMANDS and kernel.language == "cuda"
    assert ["-I", str(root / "third")] == list(kernel.arguments[:2])
    for flag in ("-DUSE_X=1", "-std=c++17", "-fopenmp", "-DHOST=2", str(root / "gen")):
        assert flag in kernel.arguments
    assert not any(a.startswith("-gencode") or a == "-o" for a in kernel.arguments)
    host = setup.flags_for(root / "src" / "host.cpp")
    assert host.language == "c++" and "-UNDEBUG" in host.arguments
    assert host.arguments[host.arguments.index("/opt/ext") - 1] == "-isystem"
    assert setup.cuda_build(root / "src" / "k.cu").known  # nvcc builds it
    assert not setup.cuda_build(root / "src" / "host.cpp").known  # g++, no CUDA include folder


def test_without_an_entry_the_include_folders_are_inferred_from_the_repository(tmp_path):
    root = write(tmp_path / "repo", {
        "include/a.h": "", "csrc/b.h": "", "lib/deep/includes/c.h": "", "third/named/d.h": "", "cmake_named/e.h": "",
        "setup.py": textwrap.dedent("""\
            import os, glob
            from torch.utils.cpp_extension import CUDAExtension
            this_dir = os.path.dirname(os.path.abspath(__file__))
            include_dirs = [os.path.join(this_dir, "third", "named")]
            sources = glob.glob("kernels/*.cpp") + ["ops/bind.cpp"]
            ext = CUDAExtension("x", sources=sources, include_dirs=include_dirs)
        """),
        "CMakeLists.txt": "target_include_directories(x PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/cmake_named ${UNKNOWN}/y)\n",
        "kernels/k1.cpp": "", "ops/bind.cpp": "", "ops/cpu_only.cpp": "",
    })
    setup = HeaderSetup.for_run(root, None, True)
    flags = setup.flags_for(root / "ops" / "bind.cpp")
    assert flags.mode is HeaderMode.INFERRED and flags.language == "c++"
    real = os.path.realpath(root)
    assert _folders(flags, "-I") == [f"{real}/third/named", f"{real}/cmake_named"]  # what the build files name
    # Folders found only by their name are searched after the system's, so none hides a system header.
    guessed = [f"{real}/csrc", f"{real}/include", f"{real}/lib/deep/includes"]
    assert _folders(flags, "-idirafter")[-3:] == guessed
    system = max(i for i, word in enumerate(flags.arguments) if word in ("-isystem", "-I"))
    assert flags.arguments.index(guessed[0]) > system
    assert setup.flags_for(root / "kernels" / "k1.cu").language == "cuda" if cpp_headers._machine().cuda_path else True
    assert setup.cuda_build(root / "kernels" / "k1.cpp").known  # glob of a CUDAExtension's sources
    assert setup.cuda_build(root / "ops" / "bind.cpp").known
    assert not setup.cuda_build(root / "ops" / "cpu_only.cpp").known


NAMES_INCLUDE = "include_directories(${CMAKE_CURRENT_SOURCE_DIR}/include)\n"


def _folders(flags, option: str) -> list[str]:
    return [flags.arguments[i + 1] for i, word in enumerate(flags.arguments[:-1]) if word == option]


def test_the_host_compiler_s_search_list_is_read_in_order():
    listing = textwrap.dedent("""\
        ignoring nonexistent directory "/nowhere"
        #include "..." search starts here:
        #include <...> search starts here:
         /usr/include/c++/12
         /usr/lib/gcc/x86_64-linux-gnu/12/include
         /usr/include
        End of search list.
    """)
    assert cpp_headers._search_list(listing) == [
        p for p in ("/usr/include/c++/12", "/usr/lib/gcc/x86_64-linux-gnu/12/include", "/usr/include") if os.path.isdir(p)
    ]


def test_no_headers_disables_the_parse_with_headers(tmp_path):
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "include/sizes.h": SIZES})
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, False))
    assert analysis.headers.outcome is HeaderOutcome.DISABLED and analysis.inputs == ()
    assert found == {(6, "OPT201", "advice"), (7, "OPT201", "fix")}  # Vec2 is unknown without the header


# -- the second look, and what it records -----------------------------------------------------------------------


def test_with_headers_a_constant_from_a_header_is_no_finding_and_the_header_is_an_input(tmp_path):
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "include/sizes.h": SIZES})
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert (analysis.headers.mode, analysis.headers.outcome) == (HeaderMode.INFERRED, HeaderOutcome.USED)
    assert found == {(7, "OPT201", "fix")}
    local = [i for i in analysis.inputs if isinstance(i, FileInput)]
    assert [Path(i.path).name for i in local] == ["sizes.h"]
    assert any(isinstance(i, HeaderSetInput) for i in analysis.inputs)  # <cstring> and what it includes
    assert all(i.unchanged() for i in analysis.inputs)
    (root / "include" / "sizes.h").write_text(SIZES.replace("2;", "3;"))
    assert not local[0].unchanged()


def test_a_file_without_a_question_is_never_parsed_with_headers(tmp_path):
    root = write(tmp_path / "repo", {"k.cpp": "#include \"missing.h\"\nint f(const int* a) { return a[0]; }\n"})
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert found == set() and analysis.headers.outcome is HeaderOutcome.NOT_NEEDED


def test_a_parse_that_runs_out_of_time_leaves_the_header_free_findings(tmp_path, monkeypatch):
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "include/sizes.h": SIZES})
    monkeypatch.setattr(cpp_second_look, "TIME_LIMIT_S", 0.0)
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert analysis.headers.outcome is HeaderOutcome.TIMED_OUT
    assert (6, "OPT201", "advice") in found


def test_a_parser_that_dies_leaves_the_header_free_findings(tmp_path, monkeypatch):
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "include/sizes.h": SIZES})
    monkeypatch.setattr(cpp_second_look, "_look", lambda *arguments: os.kill(os.getpid(), signal.SIGKILL))
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert analysis.headers.outcome is HeaderOutcome.FAILED and "SIGKILL" in analysis.headers.detail
    assert (6, "OPT201", "advice") in found


def test_a_header_set_is_checked_by_stat_and_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    headers = [tmp_path / "ext" / f"h{i}.h" for i in range(3)]
    for header in headers:
        header.parent.mkdir(exist_ok=True)
        header.write_text(f"int h_{header.stem};\n")
    recorded = record_header_set(str(h) for h in headers)
    assert (tmp_path / "cache" / "headers").is_dir()
    forget_checks()
    assert recorded.unchanged()
    os.utime(headers[0], ns=(1, 1))  # touched, same bytes: still the same set
    forget_checks()
    assert recorded.unchanged()
    headers[1].write_text("int changed;\n")
    forget_checks()
    assert not recorded.unchanged()


# -- precompiled preambles ---------------------------------------------------------------------------------------


def test_the_preamble_is_the_leading_includes_up_to_the_last_heavy_one():
    text = "// c\n#pragma once\n#include <vector>\n#include <torch/extension.h>\n#include \"local.h\"\nint x;\n"
    preamble = preamble_of(text)
    assert preamble.lines == (2, 3)
    blanked = preamble.blank(text)
    assert len(blanked.encode()) == len(text.encode()) and "#include \"local.h\"" in blanked
    assert preamble_of("#include <vector>\nint x;\n") is None
    assert preamble.fits(text.replace("int x;", "#include <ATen/cuda/CUDAContext.h>\nint x;"))
    # A one-line #define or #undef before the heavy includes steers them: it goes into the preamble; a continued
    # one, or one after the last heavy include, stays in the file.
    steered = "#pragma once\n#define NOMINMAX  // c\n#undef X\n#include <torch/extension.h>\n#define Y 2\nint x;\n"
    assert preamble_of(steered).lines == (1, 2, 3)
    assert preamble_of("#define F(a) \\\n  a\n#include <torch/extension.h>\nint x;\n") is None


def test_a_block_of_conditional_includes_goes_into_the_preamble_whole():
    """pytorch3d opens files with `#ifdef WITH_CUDA` includes: without them in the preamble there was none, and the
    parse with headers read torch's whole (14 s of a first run)."""
    text = ("/* licence */\n#ifdef WITH_CUDA\n#include <ATen/cuda/CUDAContext.h>\n#else\n// CPU\n#endif\n"
            "#include <torch/extension.h>\nint x;\n")
    preamble = preamble_of(text)
    assert preamble.lines == (1, 2, 3, 4, 5, 6)
    assert preamble.text.startswith("#ifdef WITH_CUDA\n") and preamble.text.endswith("#include <torch/extension.h>\n")
    assert len(preamble.blank(text).encode()) == len(text.encode()) and "int x;" in preamble.blank(text)
    # Nested blocks and one-line macros are taken too; a block alone is heavy through its own includes.
    nested = "#if A\n#if B\n#define X 1\n#include <cuda_runtime.h>\n#endif\n#endif\nint x;\n"
    assert preamble_of(nested).lines == (0, 1, 2, 3, 4, 5)
    # A block that holds code is the file's, and ends the preamble; so does one that never closes.
    assert preamble_of("#include <torch/extension.h>\n#if A\nint y;\n#endif\n").lines == (0,)
    assert preamble_of("#if A\n#include <torch/extension.h>\nint y;\n") is None
    # Light includes alone make no precompiled header.
    assert preamble_of("#ifdef A\n#include <vector>\n#endif\nint x;\n") is None


def test_a_precompiled_preamble_is_reused_until_a_header_it_read_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    # A project stand-in named like torch's header: precompiled as torch's would be, in milliseconds.
    heavy = "#pragma once\nconstexpr int kWidth = 4;\n"
    root = write(tmp_path / "repo", {
        "include/torch/extension.h": heavy,
        "CMakeLists.txt": NAMES_INCLUDE,  # a stand-in for a system header: only a folder the build names hides one
        # `consume` is declared nowhere: it may be a macro of the headers, so the fix asks for them.
        "k.cpp": "#include <torch/extension.h>\nvoid f(int n) {\n  float a[kWidth];\n  float b[n];\n  a[0] = 1;\n"
                 "  consume(b);\n}\n",
    })
    found, analysis = findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert found == {(4, "OPT201", "fix")} and analysis.headers.outcome is HeaderOutcome.USED
    (pch,) = (tmp_path / "cache" / "pch").glob("*.pch")
    built = pch.stat().st_ino
    findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert pch.stat().st_ino == built  # loaded, not built again
    (root / "include" / "torch" / "extension.h").write_text(heavy.replace("4", "8"))
    findings_of(root, "k.cpp", HeaderSetup.for_run(root, None, True))
    assert pch.stat().st_ino != built


def test_a_quoted_include_that_reaches_a_heavy_library_is_precompiled(tmp_path, monkeypatch):
    """`"simd.h"` includes `<x86intrin.h>`: the file's leading includes up to it go into the precompiled header,
    and the file's findings are those of the parse without one."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = write(tmp_path / "repo", {
        "include/x86intrin.h": "#pragma once\nconstexpr int kLanes = 8;\n",
        "CMakeLists.txt": NAMES_INCLUDE,  # a stand-in for a system header: only a folder the build names hides one
        "csrc/simd.h": "#pragma once\n#include \"plain.h\"\n",
        "csrc/plain.h": "#pragma once\n#include <x86intrin.h>\n",
        "csrc/other.h": "#pragma once\nconstexpr int kOther = 2;\n",
        "csrc/k.cpp": "#include \"other.h\"\n#include \"simd.h\"\nvoid f(int n) {\n  float a[kLanes * kOther];\n"
                      "  float b[n];\n  a[0] = 1;\n  consume(b);\n}\n",
    })
    setup = HeaderSetup.for_run(root, None, True)
    flags = setup.flags_for(root / "csrc" / "k.cpp")
    text = (root / "csrc" / "k.cpp").read_text()
    assert preamble_of(text) is None  # no heavy name among its own includes
    assert file_preamble(text, str(root / "csrc" / "k.cpp"), flags).lines == (0, 1)
    found, analysis = findings_of(root, "csrc/k.cpp", setup)
    assert found == {(5, "OPT201", "fix")} and analysis.headers.outcome is HeaderOutcome.USED
    assert len(list((tmp_path / "cache" / "pch").glob("*.pch"))) == 1


def test_a_parse_that_loads_a_precompiled_header_sees_the_files_own_nodes(tmp_path, monkeypatch):
    """The parse that loads a precompiled header lists only the file's own declarations, plus the functions its
    templates' uses instantiate: its nodes are those of the parse that lists every declaration of the headers."""
    from optpatch import cpp_frontend

    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    heavy = "#pragma once\nnamespace at { struct Tensor { int size(int) const; }; }\ntemplate <typename T> T lib(T x) { return x; }\n"
    code = (
        "#include <torch/extension.h>\n"
        "template <typename T> T twice(T x) { return x + x; }\n"
        "namespace ns { template <typename T> T thrice(T x) { float t[x]; return 3 * t[0]; } }\n"
        "template <> float twice<float>(float x) { return 2 * x; }\n"
        "struct S { template <typename T> T m(T x) { return x; } };\n"
        "int use(const at::Tensor& t) { S s; return twice(1) + ns::thrice(2) + s.m(3) + lib(t.size(0)); }\n"
    )
    root = write(tmp_path / "repo", {"include/torch/extension.h": heavy, "CMakeLists.txt": NAMES_INCLUDE, "k.cpp": code})
    setup = HeaderSetup.for_run(root, None, True)
    source, flags = read_source(root / "k.cpp", "k.cpp"), setup.flags_for(root / "k.cpp")

    def seen(unit) -> list:
        return [(n.kind, n.spelling, n.start, n.end) for n in unit.nodes]

    local = cpp_frontend.CppUnit(source, flags, setup)
    assert list((tmp_path / "cache" / "pch").glob("*.pch"))  # it loaded a precompiled header
    monkeypatch.setattr(cpp_frontend, "_local_index", cpp_frontend._index)
    every = cpp_frontend.CppUnit(source, flags, setup)
    assert seen(local) == seen(every)
    assert [name for kind, name, _, _ in seen(local) if kind is CursorKind.FUNCTION_DECL] == ["twice", "use"]


# -- the command line --------------------------------------------------------------------------------------------


def test_the_report_says_per_file_which_mode_and_what_became_of_it(tmp_path, with_headers):
    root = write(tmp_path / "repo", {
        "k.cpp": KERNEL, "include/sizes.h": SIZES,
        "quiet.cpp": "int f(const int* a) { return a[0]; }\n",
    })
    document = json.loads(run_cli("check", str(root), "--format", "json", "--no-cache").stdout)
    reports = {entry["path"]: (entry["mode"], entry["outcome"]) for entry in document["cpp_headers"]}
    assert reports == {"k.cpp": ("inferred", "used"), "quiet.cpp": ("inferred", "not needed")}
    schema = (REPO_ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")
    section = schema.split("## `cpp_headers[]`\n", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M)) == set(document["cpp_headers"][0])
    verbose = run_cli("check", str(root), "-v", "--no-cache").stdout
    assert "headers k.cpp inferred, used" in verbose and "1 C++/CUDA file(s) needed none" in verbose
    disabled = json.loads(run_cli("check", str(root), "--format", "json", "--no-cache", "--no-headers").stdout)
    assert {(e["mode"], e["outcome"]) for e in disabled["cpp_headers"]} == {("none", "disabled")}
    assert (6, "OPT201") in {(f["line"], f["code"]) for f in disabled["findings"]}


def test_compile_commands_names_the_database_to_use(tmp_path, with_headers):
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "elsewhere/sizes.h": SIZES})
    database = tmp_path / "db" / "compile_commands.json"
    database.parent.mkdir()
    database.write_text(json.dumps([{
        "directory": str(root), "file": "k.cpp", "command": f"c++ -I{root / 'elsewhere'} -c k.cpp",
    }]))
    document = json.loads(run_cli("check", str(root), "--format", "json", "--no-cache",
                                  "--compile-commands", str(database.parent)).stdout)
    (entry,) = [e for e in document["cpp_headers"] if e["path"] == "k.cpp"]
    assert (entry["mode"], entry["outcome"]) == ("compile_commands", "used")
    assert {(f["line"], f["code"]) for f in document["findings"]} == {(7, "OPT201")}


def test_an_edited_header_makes_the_cached_analysis_stale(tmp_path, monkeypatch, with_headers):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    root = write(tmp_path / "repo", {"k.cpp": KERNEL, "include/sizes.h": SIZES})

    def lines() -> set:
        result = run(root, Settings(select=("OPT201",)), FixPolicy())
        return {f.line for f in result.findings}

    assert lines() == {7}
    assert lines() == {7}
    (root / "include" / "sizes.h").write_text(SIZES.replace("constexpr int kSpare = 2;", "extern int kSpare;"))
    assert lines() == {7, 8}  # no longer a constant: a keep
