"""What a parse with headers costs, and when one starts (issue 30): a header the machine lacks is paid for once,
include folders are found where compilers find them, device code starts no parse, a precompiled header that
failed is not built again until its inputs change, another checkout reuses one, and clang's wording decides
nothing.

Parses and precompiled-header builds happen in forked children: they are counted by appending to a file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import clang.cindex
import pytest

from cpp_fixtures import FIXTURES
from optpatch import cpp_frontend
from optpatch.config import Settings
from optpatch.cpp_headers import HeaderOutcome, HeaderSetup
from optpatch.cpp_second_look import NOT_PARSED
from optpatch.engine import run
from optpatch.model import KeepCategory
from optpatch.passes import analyse_text
from optpatch.policy import FixPolicy
from optpatch.reporters.text import missing_header_lines
from optpatch.rule import load_rules
from optpatch.source import read_source

RULES = [rule for rule in load_rules() if rule.code in ("OPT201", "OPT202")]
HOST_VLA = "void f(int n) {\n  float a[n];\n  consume(a, n);  // undeclared here: perhaps a macro from a header\n}\n"
ABSENT = "cudnn_optpatch_absent.h"  # a cudnn.h no machine has


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A fresh cache; a function giving how many parses with headers and precompiled-header builds began."""
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))
    for variable in ("CPATH", "CPLUS_INCLUDE_PATH"):
        monkeypatch.delenv(variable, raising=False)
    log = tmp_path / "parses.log"
    parse_file, precompile = cpp_frontend._parse_file, cpp_frontend._precompile

    def counting_parse(*args, **kwargs):
        with open(log, "a") as stream:
            stream.write("parse\n")
        return parse_file(*args, **kwargs)

    def counting_precompile(arguments):
        build = precompile(arguments)

        def counting_build(*args):
            with open(log, "a") as stream:
                stream.write("build\n")
            return build(*args)

        return counting_build

    monkeypatch.setattr(cpp_frontend, "_parse_file", counting_parse)
    monkeypatch.setattr(cpp_frontend, "_precompile", counting_precompile)

    def count(kind: str) -> int:
        return log.read_text().split().count(kind) if log.exists() else 0

    return count


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def analysed(root: Path, rel: str, include_dirs: tuple[str, ...] = ()):
    setup = HeaderSetup.for_run(root, None, True, include_dirs)
    return analyse_text(read_source(root / rel, rel), RULES, headers=setup)


def test_a_missing_header_that_many_files_include_costs_no_parse(tmp_path, counted):
    files = {f"csrc/k{i}.cpp": f"#include <{ABSENT}>\n{HOST_VLA}" for i in range(6)}
    root = write(tmp_path / "repo", files)
    reports = [(rel, analysed(root, rel).headers) for rel in files]
    assert {report.missing for _, report in reports} == {ABSENT}
    assert all(report.outcome is HeaderOutcome.FAILED for _, report in reports)
    assert counted("parse") == counted("build") == 0  # clang's __has_include said so, in milliseconds

    class Result:
        header_reports = reports

    assert missing_header_lines(Result) == [
        f"{ABSENT} not found: 6 file(s) analysed header-free; pass -I or a compile_commands.json"
    ]


def test_a_header_missing_inside_an_include_costs_one_failed_parse(tmp_path, counted):
    files = {f"csrc/k{i}.cpp": f"#include <vendor/api.h>\n{HOST_VLA}" for i in range(6)}
    root = write(tmp_path / "repo", {"include/vendor/api.h": f"#pragma once\n#include <{ABSENT}>\n", **files})
    reports = [analysed(root, rel).headers for rel in files]
    assert [r.missing for r in reports] == [ABSENT] * 6
    assert counted("parse") == 1
    # The header arrives: the memory no longer applies, and the parse with headers is used.
    write(tmp_path / "extra", {ABSENT: "#pragma once\n"})
    report = analysed(root, "csrc/k0.cpp", include_dirs=(str(tmp_path / "extra"),)).headers
    assert report.outcome is HeaderOutcome.USED, report


def test_include_folders_from_cpath_and_include_dir_are_searched(tmp_path, counted, monkeypatch):
    root = write(tmp_path / "repo", {"csrc/k.cpp": f'#include "{ABSENT}"\n{HOST_VLA}'})
    write(tmp_path / "cpath", {ABSENT: "#pragma once\n"})
    write(tmp_path / "option", {ABSENT: "#pragma once\n"})
    assert analysed(root, "csrc/k.cpp").headers.missing == ABSENT
    report = analysed(root, "csrc/k.cpp", include_dirs=(str(tmp_path / "option"),)).headers
    assert report.outcome is HeaderOutcome.USED, report
    assert f"{ABSENT}: {tmp_path / 'option'} (--include-dir or include-dirs)" in report.sources
    monkeypatch.setenv("CPATH", str(tmp_path / "cpath"))
    report = analysed(root, "csrc/k.cpp").headers
    assert report.outcome is HeaderOutcome.USED, report
    assert f"{ABSENT}: {tmp_path / 'cpath'} (CPATH)" in report.sources


def test_a_folder_named_include_hides_no_system_header(tmp_path, counted):
    # pytorch3d's pulsar renderer has its own include/math.h. Searched before the system's folders, it stood in for
    # <math.h> in every file, and their parses failed deep in torch's headers.
    root = write(tmp_path / "repo", {
        "lib/pulsar/include/math.h": '#error "the renderer\'s own math.h"\n',
        "lib/pulsar/include/render.h": '#pragma once\n#include "math.h"\n',
        "lib/pulsar/include/steps.h": "#pragma once\nconstexpr int kSteps = 4;\n",
        "csrc/k.cpp": f"#include <math.h>\n#include <steps.h>\n{HOST_VLA}",
        "lib/pulsar/render.cpp": f'#include "include/render.h"\n{HOST_VLA}',
    })
    report = analysed(root, "csrc/k.cpp").headers
    assert report.outcome is HeaderOutcome.USED, report
    # <math.h> is the system's; <steps.h>, which only that folder has, is found
    assert [message for message, _count in report.errors] == ["use of undeclared identifier 'consume'"], report.errors
    assert any(line.startswith("math.h: /usr/") for line in report.sources), report.sources
    # A quoted include still finds the renderer's own header, next to the file that names it.
    report = analysed(root, "lib/pulsar/render.cpp").headers
    assert '"the renderer\'s own math.h"' in [message for message, _count in report.errors], report.errors


def test_device_code_and_shared_arrays_start_no_parse(tmp_path, counted):
    root = write(tmp_path / "repo", {
        "csrc/k.cu": (
            '#include "vendor_sizes.h"\n'
            "__global__ void scale(float* out) {\n  float staged[kPerThread];\n  staged[0] = 1;\n"
            "  out[0] = staged[0];\n}\n"
            "__global__ void tiles(float* out) {\n  __shared__ char smem_[SMEM_BYTES];\n  out[0] = smem_[0];\n}\n"
        ),
        "csrc/plain.cpp": "int twice(int x) {\n  int a[4];\n  a[0] = x;\n  return 2 * a[0];\n}\n",
    })
    # plain.cpp's only array has a literal bound: OPT201's screen spares it even the header-free parse
    for rel, why in (("csrc/k.cu", "no host-code candidate"), ("csrc/plain.cpp", NOT_PARSED)):
        analysis = analysed(root, rel)
        assert analysis.findings == (), analysis.findings
        assert analysis.headers.outcome is HeaderOutcome.NOT_NEEDED
        assert analysis.headers.detail == why
    assert counted("parse") == counted("build") == 0


# A function clang drops without the headers (its code is in an `#if` of a macro only the build defines, as
# DeepSpeed's `Step_AVX` is), holding `AVX_Data grad_4[span]` of a type from a header: only a bound the function
# itself declares can be a run-time value.
DROPPED_STEP = (
    "#include \"simd.h\"\n#if defined(__AVX512__)\ntemplate <int span>\n"
    "void step(float* grads, size_t size, {parameter}bool parallel) {{\n"
    "  size_t rounded = ROUND_DOWN(size, SIMD_WIDTH * span);\n"
    "  for (size_t i = 0; i < rounded; i += SIMD_WIDTH * span) {{\n"
    "    AVX_Data grad_4[{bound}];\n    simd_load<span>(grad_4, grads + i);\n  }}\n}}\n#endif\n"
)


@pytest.mark.parametrize("parameter, bound, parses", [
    ("", "span", False),  # a template's parameter, though `* span)` reads like a pointer parameter's declarator
    ("int lanes, ", "lanes", True),  # a parameter: perhaps a variable-length array once the headers declare the type
])
def test_a_dropped_function_asks_for_headers_only_for_a_bound_it_declares(tmp_path, counted, parameter, bound, parses):
    root = write(tmp_path / "repo", {"csrc/step.h": DROPPED_STEP.format(parameter=parameter, bound=bound)})
    analysis = analysed(root, "csrc/step.h")
    assert analysis.findings == ()
    assert (analysis.headers.outcome is not HeaderOutcome.NOT_NEEDED) == parses, analysis.headers


# A statement clang drops inside a function it builds: an unknown macro (CUTLASS's `CUTLASS_PRAGMA_UNROLL`) takes
# the loop after it along. `Element values[kPerLoad]` has a constant size when `kPerLoad` is the class's static
# constant or the template's parameter, unless the function declares that name itself.
DROPPED_LOOP = (
    "template <{parameters}>\nstruct Sum {{\n  static const int kPerLoad = 2;\n"
    "  void run(const Element* in, int n{parameter}) {{\n{local}    PRAGMA_UNROLL\n"
    "    for (int i = 0; i < n; i += 2) {{\n      Element values[{bound}];\n      load(values, in + i);\n    }}\n"
    "  }}\n}};\n"
)


@pytest.mark.parametrize("parameters, parameter, local, bound, parses", [
    ("class Element", "", "", "kPerLoad", False),  # the class's static constant
    ("class Element, int kLanes", "", "", "kLanes * kPerLoad", False),  # and the template's parameter
    ("class Element", ", int kPerLoad", "", "kPerLoad", True),  # a parameter hides the member
    ("class Element", "", "    const int kPerLoad = n * 2;\n", "kPerLoad", True),  # and so does a local
    ("class Element", "", "", "n", True),  # a parameter of the function
    # A local `const` initialised with integer literals alone is a constant expression (bitsandbytes' `const int
    # request_solutions = 8;`); one initialised otherwise, not const, or a reference, may not be.
    ("class Element", "", "    const int kCount = 8;\n", "kCount", False),
    ("class Element", "", "    static const size_t kCount = (1 << 3) * 2u;\n", "kCount", False),
    ("class Element", "", "    const int kCount = kPerLoad + n;\n", "kCount", True),
    ("class Element", "", "    int kCount = 8;\n", "kCount", True),
    ("class Element", "", "    const int& kCount = 8;\n", "kCount", True),
])
def test_a_dropped_statement_asks_for_headers_only_where_its_bound_may_not_be_constant(
        tmp_path, counted, parameters, parameter, local, bound, parses):
    text = DROPPED_LOOP.format(parameters=parameters, parameter=parameter, local=local, bound=bound)
    root = write(tmp_path / "repo", {"csrc/sum.h": text})
    analysis = analysed(root, "csrc/sum.h")
    assert analysis.findings == ()
    assert (analysis.headers.outcome is not HeaderOutcome.NOT_NEEDED) == parses, analysis.headers


def test_a_long_literal_in_a_local_initialiser_is_read_in_one_pass():
    # `const uint64_t kSeed = 1234...9 + n;` is no constant; telling so once tried every split of the digits into
    # shorter literals (2**80 of them here): a hang, which the alarm turns into a failure.
    import signal
    import sys

    candidates = sys.modules[RULES[0].__module__.rsplit(".", 1)[0] + ".candidates"]

    def hung(*_):
        raise TimeoutError("the initialiser's pattern backtracks")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        text = "const uint64_t kSeed = " + "1" * 80 + " + n;"
        assert not candidates._constant_initialiser("const uint64_t", text, text.index("="))
        text = "const uint64_t kSeed = " + "1" * 80 + "ull;"
        assert candidates._constant_initialiser("const uint64_t", text, text.index("="))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_an_outer_classs_constant_is_not_taken_for_an_inner_classs(tmp_path, counted):
    # Inside `Inner`, a base of its own may declare `kPerLoad` at run time: only the innermost class's constants
    # (and any template's parameters) are known constants, so the dropped declaration still asks.
    text = DROPPED_LOOP.format(parameters="class Element", parameter="", local="", bound="kPerLoad").replace(
        "  void run(", "  struct Inner : Base {\n  void run(").replace("  }\n};\n", "  }\n  };\n};\n")
    assert "struct Inner" in text and text.count("{") == text.count("}")
    root = write(tmp_path / "repo", {"csrc/sum.h": text})
    analysis = analysed(root, "csrc/sum.h")
    assert analysis.findings == ()
    assert analysis.headers.outcome is not HeaderOutcome.NOT_NEEDED, analysis.headers


def test_a_reworded_diagnostic_changes_no_finding(tmp_path, counted, monkeypatch):
    fixtures = sorted((FIXTURES / "opt201").glob("*.c*"))
    fixtures = [f for f in fixtures if ".fixed." not in f.name]
    before = {f.name: _header_free(f) for f in fixtures}
    direct = write(tmp_path / "repo", {"csrc/k.cpp": f"#include <{ABSENT}>\n{HOST_VLA}"})
    deep = write(tmp_path / "deep", {"include/vendor/api.h": f"#include <{ABSENT}>\n",
                                      "csrc/k.cpp": f"#include <vendor/api.h>\n{HOST_VLA}"})
    monkeypatch.setattr(clang.cindex.Diagnostic, "spelling", property(lambda self: "something else entirely"))
    assert {f.name: _header_free(f) for f in fixtures} == before
    assert analysed(direct, "csrc/k.cpp").headers.missing == ABSENT
    assert analysed(deep, "csrc/k.cpp").headers.missing == ABSENT


def _header_free(path: Path) -> list:
    analysis = analyse_text(read_source(path, path.name), RULES)
    return sorted((f.line, f.code, f.verdict.value, f.fix and f.fix.tier.value, f.reason) for f in analysis.findings)


# A library header the preamble precompiles (a `cutlass/` include is a heavy one), broken or not.
BROKEN = "#pragma once\n#error this header is broken\n"
FIXED = "#pragma once\nconstexpr int kWidth = 4;\n"


def test_a_failed_precompiled_header_is_not_built_again_until_its_inputs_change(tmp_path, counted):
    root = write(tmp_path / "repo", {"include/cutlass/lib.h": BROKEN,
                                     "csrc/k.cpp": f"#include <cutlass/lib.h>\n{HOST_VLA}"})
    for _ in range(3):
        report = analysed(root, "csrc/k.cpp").headers
        assert report.outcome is HeaderOutcome.FAILED and not report.missing, report
    assert counted("build") == 1
    write(root, {"include/cutlass/lib.h": FIXED})
    assert analysed(root, "csrc/k.cpp").headers.outcome is HeaderOutcome.USED
    assert counted("build") == 2


def test_another_checkout_reuses_the_precompiled_header(tmp_path, counted):
    first = write(tmp_path / "first", {"include/cutlass/lib.h": FIXED,
                                       "csrc/k.cpp": f"#include <cutlass/lib.h>\n{HOST_VLA}"})
    assert analysed(first, "csrc/k.cpp").headers.outcome is HeaderOutcome.USED
    second = tmp_path / "second"
    shutil.copytree(first, second)
    assert analysed(second, "csrc/k.cpp").headers.outcome is HeaderOutcome.USED
    assert counted("build") == 1
    assert len(list((tmp_path / "cache" / "pch").glob("*.pch"))) == 1
    # A checkout whose copy of a header the precompiled header read differs gets one of its own.
    write(second, {"include/cutlass/lib.h": FIXED + "constexpr int kOther = 2;\n"})
    assert analysed(second, "csrc/k.cpp").headers.outcome is HeaderOutcome.USED
    assert counted("build") == 2


def test_a_precompiled_header_no_fix_rests_on_is_put_off_to_the_next_run(tmp_path, counted):
    """A run builds a precompiled header only for a fix the headers may keep; a file whose header-free verdicts
    are kept sites keeps them (sound: the headers could only make them fixes or nothing), is never taken from the
    result cache, and the next run builds it."""
    root = write(tmp_path / "repo", {
        "include/cutlass/widget.h": "#pragma once\ntemplate <class T> struct Widget { explicit Widget(T* data); };\n",
        "csrc/kept.cpp": "#include <cutlass/widget.h>\nvoid f(int n) {\n  float a[n];\n  Widget<float> w(a);\n}\n",
    })
    header_free = analyse_text(read_source(root / "csrc/kept.cpp", "csrc/kept.cpp"), RULES)
    assert [(f.verdict.value, f.keep_category) for f in header_free.findings] == [("keep", KeepCategory.UNRESOLVED)]
    run = HeaderSetup.for_run(root, None, True)
    first, same_run = (analyse_text(read_source(root / "csrc/kept.cpp", "csrc/kept.cpp"), RULES, headers=run)
                       for _ in range(2))  # another file of the run that wants the same precompiled header
    assert first.headers.outcome is same_run.headers.outcome is HeaderOutcome.PUT_OFF, first.headers
    assert first.findings == header_free.findings
    assert counted("parse") == counted("build") == 0

    class Result:
        header_reports = [("csrc/kept.cpp", first.headers), ("csrc/other.cpp", same_run.headers)]

    (said,) = missing_header_lines(Result)  # the summary says why a second run may find more, without -v
    assert said.startswith("headers: 2 C++/CUDA file(s) analysed header-free this run")
    assert "next run over the whole tree" in said
    assert not all(item.unchanged() for item in first.inputs)  # not taken from the result cache next run
    second = analysed(root, "csrc/kept.cpp")
    assert second.headers.outcome is HeaderOutcome.USED, second.headers
    assert [f.verdict.value for f in second.findings] == ["fix"]  # with the header, `w(a)` takes a pointer
    assert counted("build") == 1
    assert not list((tmp_path / "cache" / "pch").glob("*.wanted"))
    # A fix the headers may keep (`consume` may be a macro from a header) is never put off.
    write(root, {"csrc/fix.cpp": f"#include <cutlass/widget.h>\n{HOST_VLA}"})
    assert analysed(root, "csrc/fix.cpp").headers.outcome is HeaderOutcome.USED
    assert counted("build") == 1  # the same includes: the same precompiled header


def test_a_narrowed_run_never_builds_a_precompiled_header_an_earlier_run_put_off(tmp_path, counted, with_headers):
    """Pre-commit's runs name files: a precompiled header put off stays put off there, so the second commit is as
    fast as the first (DeepSpeed: a second run built five, 30 s); the next run over the whole tree builds it."""
    root = write(tmp_path / "repo", {
        "include/cutlass/widget.h": "#pragma once\ntemplate <class T> struct Widget { explicit Widget(T* data); };\n",
        "csrc/kept.cpp": "#include <cutlass/widget.h>\nvoid f(int n) {\n  float a[n];\n  Widget<float> w(a);\n}\n",
    })
    settings, named = Settings(select=("OPT201",)), [root / "csrc" / "kept.cpp"]
    for _ in range(3):  # three commits that touch the file
        narrowed = run(root, settings, FixPolicy(), paths=named, jobs=1, use_cache=False)
        assert [f.verdict.value for f in narrowed.findings] == ["keep"]
        assert [report.outcome for _, report in narrowed.header_reports] == [HeaderOutcome.PUT_OFF]
    assert counted("build") == 0
    whole = run(root, settings, FixPolicy(), jobs=1, use_cache=False)
    assert [f.verdict.value for f in whole.findings] == ["fix"]  # with the header, `w(a)` takes a pointer
    assert counted("build") == 1


def test_a_put_off_parse_says_which_rule_wanted_it_and_for_which_lines(tmp_path, counted):
    # OPT203 asks for the headers for a `zeros` call this parse could not type, whose next use may write it in
    # full: the report names the rule, the site and the use, not "a rule asked".
    root = write(tmp_path / "repo", {
        "include/cutlass/widget.h": "#pragma once\nstruct Options {};\n",
        "csrc/acc.cpp": "#include <cutlass/widget.h>\nvoid f(torch::Tensor x) {\n  auto out = torch::zeros({4}, Options{});\n"
                        "  out.fill_(1);\n}\n",
    })
    rules = [rule for rule in load_rules() if rule.code == "OPT203"]
    run = HeaderSetup.for_run(root, None, True)
    analysis = analyse_text(read_source(root / "csrc/acc.cpp", "csrc/acc.cpp"), rules, headers=run)
    assert [(f.code, f.line, f.verdict.value) for f in analysis.findings] == [("OPT203", 3, "keep")]
    assert analysis.headers.outcome is HeaderOutcome.PUT_OFF, analysis.headers
    assert analysis.headers.detail.startswith(
        "wanted for OPT203 L3: a `zeros` call this parse could not type; L4: `out` is written by `fill_`"), \
        analysis.headers.detail
    assert counted("build") == 0


def test_a_build_is_announced_once_a_run_on_a_terminal_with_its_cost_each(tmp_path, monkeypatch):
    import io
    import json

    from optpatch import cpp_pch

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    said = Terminal()
    monkeypatch.setattr("sys.stderr", said)
    (tmp_path / cpp_pch.BUILD_SECONDS).write_text(json.dumps({"seconds": 6.6}))
    cpp_pch._announce(tmp_path)
    cpp_pch._announce(tmp_path)  # another build of the same run
    assert said.getvalue() == f"optpatch: precompiling C++ headers once (about 7 s each; cached in {tmp_path})\n"


VALIDATE_TIER_FIX = (
    "#include <cutlass/widget.h>\n"
    "__global__ void twice_kernel(float* out, const float* in, int64_t n) {\n"
    "  const int64_t i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  out[i] = 2 * in[i];\n}\n"
    "torch::Tensor twice(torch::Tensor x) {\n  auto out = torch::zeros_like(x);\n"
    "  twice_kernel<<<1, 128>>>(out.data_ptr<float>(), x.data_ptr<float>(), out.numel());\n  return out;\n}\n"
)


def test_a_proposal_the_run_does_not_apply_waits_for_its_precompiled_header(tmp_path, counted):
    """A validate-tier fix is only proposed outside a validation run: its parse with headers is put off like a kept
    site's (pytorch3d: four such proposals cost 4.6 s of a first run). A run that applies the tier parses first."""
    from optpatch.model import Tier

    root = write(tmp_path / "repo", {"include/cutlass/widget.h": "#pragma once\nconstexpr int kWidth = 4;\n",
                                     "csrc/k.cu": VALIDATE_TIER_FIX})
    rules = [rule for rule in load_rules() if rule.code == "OPT203"]
    source = read_source(root / "csrc/k.cu", "csrc/k.cu")
    proposed = analyse_text(source, rules, headers=HeaderSetup.for_run(root, None, True,
                                                                      applied_tiers=frozenset({Tier.SAFE})))
    assert [(f.verdict.value, f.fix.tier) for f in proposed.findings] == [("fix", Tier.VALIDATE)]
    assert proposed.headers.outcome is HeaderOutcome.PUT_OFF, proposed.headers
    assert counted("build") == 0
    applied = analyse_text(source, rules, headers=HeaderSetup.for_run(root, None, True, applied_tiers=frozenset(Tier)))
    assert applied.headers.outcome is not HeaderOutcome.PUT_OFF, applied.headers
    assert counted("build") + counted("parse") >= 1
