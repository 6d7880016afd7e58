"""OPT203 asks for the project's headers only for a kept site they could make a fix (issue 30; the rule's
header_questions.py): a first use the file's tokens show is a full-write form, on no branch. apex's second
header-mode run built seven precompiled headers (35-54 s on the 2-core VM) for 21 kept sites that stayed kept.

Each case is analysed without headers (is a parse with them started?), and then parsed with them, through
the stand-in torch of the C++ fixtures, to show what the headers would have said: a site the tokens call final
stays kept, and a site that asks may become a fix there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from optpatch import cpp_frontend
from optpatch.cpp_headers import HeaderOutcome, HeaderSetup
from optpatch.passes import analyse_text
from optpatch.rule import Kept, Proven, load_rules
from optpatch.source import read_source

STUBS = Path(__file__).resolve().parents[1] / "fixtures" / "cpp" / "stubs"
OPT203 = [rule for rule in load_rules() if rule.code == "OPT203"]
# The project's header: what the parse without headers cannot see.
API = (
    "#pragma once\n#include <torch/all.h>\n"
    "struct Params { float* out; };\n"
    "using Options = torch::TensorOptions;\n"
    "void launch(const Params& params);\n"
    "void consume(const torch::Tensor& t);\n"
    "torch::Tensor convert(const torch::Tensor& t);\n"
    "#define USE_FAST_PATH 1\n"
    "#define MY_API  // an export macro: the parse without headers cannot tell what the function is\n"
    "#define MY_DISPATCH(TYPE, ...) __VA_ARGS__()  // a project's own dispatch macro: runs the lambda once\n"
    "#ifdef __CUDACC__\n__global__ void fill_kernel(float* out, int n);\n#endif\n"
)
HEAD = "#include <torch/all.h>\n#include \"api.h\"\n"


def body(lines: str) -> str:
    return f"{HEAD}void f(torch::Tensor x, bool b) {{\n  auto out = torch::zeros_like(x);\n{lines}}}\n"


UNTYPED = f"{HEAD}void f(torch::Tensor x, bool b) {{\n  auto out = torch::zeros({{4}}, Options{{}});\n"
API_FUNCTION = f"{HEAD}MY_API void f(torch::Tensor x, bool b) {{\n  auto out = torch::zeros_like(x);\n"
LAUNCH = "MY_DISPATCH(x.scalar_type(), [&] { fill_kernel<<<1, 128>>>(out.data_ptr<float>(), 4); });\n"

# Kept without the headers, and kept with them: the tokens settle it, so no parse with headers starts.
FINAL = {
    # apex's group_norm_nhwc_op.cpp: the pointer is stored in a launcher's parameters
    "stored": ("k.cpp", body("  Params params;\n  params.out = out.data_ptr<float>();\n  launch(params);\n")),
    # a full write on one branch only
    "branch": ("k.cpp", body("  if (b) {\n    out.copy_(convert(x));\n  }\n  consume(out);\n")),
    "loop": ("k.cpp", body("  for (int i = 0; i < 2; ++i) out.copy_(convert(x));\n  consume(out);\n")),
    # apex's welford.cu: `grid.y > 1 ? semaphores.data_ptr<int>() : nullptr`
    "ternary": ("k.cpp", body("  float* p = b ? out.data_ptr<float>() : nullptr;\n  consume(convert(out));\n")),
    "passed": ("k.cpp", body("  consume(convert(out));\n")),
    # DeepSpeed's sparse_attention/utils.cpp: a nested element loop, which OPT203 does not prove
    "nested loop": ("k.cpp", body("  float* p = out.data_ptr<float>();\n  for (int i = 0; i < 2; ++i)\n"
                                  "    for (int j = 0; j < 2; ++j) p[2 * i + j] = 1;\n")),
    # a launch given a part of the tensor's data (pytorch3d's interp_face_attrs.cu: `pix_attrs.contiguous()...`)
    "launch of a part": ("k.cu", body("  fill_kernel<<<1, 128>>>(out.data_ptr<float>() + 4, 4);\n")),
    # apex's focal_loss_cuda_kernel.cu: the launch is in a dispatch macro's lambda, on one branch
    "launch on a branch": ("k.cu", body(f"  if (b) {{\n    {LAUNCH}  }}\n")),
    # the `zeros` call itself does not parse without the headers (`Options` is the project's)
    "untyped, stored": ("k.cpp", UNTYPED + "  Params params;\n  params.out = out.data_ptr<float>();\n"
                                           "  launch(params);\n}\n"),
    # gsplat's `SphericalHarmonics.cpp`: a function whose head the parse without headers cannot read is no proven
    # host code; but the tokens show its `zeros` is passed on, whatever the function is
    "in a function of unknown kind": ("k.cpp", API_FUNCTION + "  consume(convert(out));\n}\n"),
    # gsplat's `at::cat({at::zeros({1}, int_opts), tail})`: no local holds it
    "untyped, an argument": ("k.cpp", f"{HEAD}void f(torch::Tensor x, bool b) {{\n"
                                      "  consume(torch::zeros({4}, Options{}));\n}\n"),
}
# Kept without the headers, which make them fixes: a parse with headers is wanted.
ASKED = {
    "untyped, then filled": ("k.cpp", UNTYPED + "  out.fill_(1);\n}\n"),
    "in a function of unknown kind, then copied into": ("k.cpp", API_FUNCTION + "  out.copy_(convert(x));\n}\n"),
    "untyped, initialised directly": ("k.cpp", f"{HEAD}void f(torch::Tensor x, bool b) {{\n"
                                               "  torch::Tensor out(torch::zeros({4}, Options{}));\n  out.fill_(1);\n}\n"),
    # the parse without headers reads `consume(out)`: the full write is in the branch only the headers take
    "an #if before the use": ("k.cpp", body("#if USE_FAST_PATH\n  out.copy_(convert(x));\n#else\n  consume(out);\n"
                                            "#endif\n")),
    # the kernel is the project's: without its declaration the launch is dropped, and the site looks unused
    "launch": ("k.cu", body("  fill_kernel<<<1, 128>>>(out.data_ptr<float>(), 4);\n")),
    # the lambda of a dispatch macro, which only the headers show is run once
    "launch in a dispatch": ("k.cu", body(f"  {LAUNCH}")),
}


def setup_for(root: Path) -> HeaderSetup:
    return HeaderSetup.for_run(root, None, True, (str(STUBS), "include"))


def analysed(root: Path, name: str, text: str):
    (root / "include").mkdir(parents=True, exist_ok=True)
    (root / "include" / "api.h").write_text(API)
    (root / name).write_text(text)
    return analyse_text(read_source(root / name, name), OPT203, headers=setup_for(root))


def verdicts_with_headers(root: Path, name: str) -> list:
    """OPT203's verdicts on the file parsed with its headers."""
    setup = setup_for(root)
    unit = cpp_frontend.CppUnit(read_source(root / name, name), setup.flags_for(root / name), setup)
    assert unit.with_headers and not unit.error_signature(), unit.error_signature()
    return [judgement.verdict for judgement in OPT203[0]().check(unit)]


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path / "cache"))


@pytest.mark.parametrize("case", sorted(FINAL))
def test_a_site_its_tokens_keep_starts_no_parse_with_headers(tmp_path, fresh_cache, case):
    name, text = FINAL[case]
    analysis = analysed(tmp_path, name, text)
    assert [(f.code, f.verdict.value) for f in analysis.findings] == [("OPT203", "keep")], analysis.findings
    assert analysis.headers.outcome is HeaderOutcome.NOT_NEEDED, analysis.headers
    assert not list((tmp_path / "cache").glob("pch/*.wanted"))
    # What the headers would have said: the same keep.
    (verdict,) = verdicts_with_headers(tmp_path, name)
    assert isinstance(verdict, Kept), verdict


@pytest.mark.parametrize("case", sorted(ASKED))
def test_a_site_the_headers_make_a_fix_asks_for_them(tmp_path, fresh_cache, case):
    name, text = ASKED[case]
    analysis = analysed(tmp_path, name, text)
    assert [(f.code, f.verdict.value) for f in analysis.findings] == [("OPT203", "keep")], analysis.findings
    assert analysis.headers.outcome is HeaderOutcome.PUT_OFF, analysis.headers  # the next whole-tree run parses
    assert analysis.headers.detail.startswith("wanted for OPT203 L4: "), analysis.headers.detail
    (verdict,) = verdicts_with_headers(tmp_path, name)
    assert isinstance(verdict, Proven), verdict  # and there it is a fix
