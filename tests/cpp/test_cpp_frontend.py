"""The C++/CUDA frontend: positions, host or device, macro arguments, includes, and the re-parse check."""

import codecs
from pathlib import Path

import pytest
from clang.cindex import CursorKind

from cpp_fixtures import FIXTURES, analyse, golden_path
from optpatch.cpp_frontend import CppUnit, Place, new_errors
from optpatch.rule import load_rules
from optpatch.source import SourceFile, read_source


def unit_of(code: str, name: str = "example.cu") -> CppUnit:
    return CppUnit(SourceFile(name, Path(name), code.encode(), code, "utf-8", False, "cpp"))


def source_of(code: str, name: str = "example.cpp") -> SourceFile:
    return SourceFile(name, Path(name), code.encode(), code, "utf-8", False, "cpp")


def rewrite(code: str, codes=("OPT201", "OPT202")) -> str:
    result = analyse(source_of(code), set(codes))
    assert result.error is None, result.error
    return result.new.decode() if result.new is not None else code


def test_the_prelude_parses_without_a_single_error():
    unit = unit_of("")
    assert [d.spelling for d in unit.tu.diagnostics if d.severity >= 3] == []


def test_the_extension_idioms_most_often_unknown_in_field_trees_parse_without_headers():
    # The errors the header-free parse gave most often on the field trees' files with candidates (docs/benchmarks.md):
    # `Tensor::dtype()` (142 times in 32 files), `sizes() ==` (126), a const optional's `value()`, `make_optional`,
    # `make_tuple`, the device's properties, and the C library's math.
    code = (
        "std::tuple<at::Tensor, at::Tensor> f(const at::Tensor& x, const at::Tensor& y, const c10::optional<at::Tensor>& w) {\n"
        "  TORCH_CHECK(x.dtype() == torch::kHalf && x.sizes() == y.sizes() && x.sizes().vec().size() == 2);\n"
        "  auto props = at::cuda::getCurrentDeviceProperties();\n"
        "  int blocks = props->multiProcessorCount * 2;\n"
        "  float scale = std::sqrt(2.0) * fabsf(1.5f);\n"
        "  auto bias = w.has_value() ? w.value() : x;\n"
        "  auto maybe = std::make_optional(bias);\n"
        "  auto out = at::zeros({blocks}, x.options());\n"
        "  out.fill_(scale);\n"
        "  return std::make_tuple(out, *maybe);\n"
        "}\n"
    )
    unit = unit_of(code, "example.cpp")
    assert [d.spelling for d in unit.tu.diagnostics if d.severity >= 3] == []
    # The math library is CUDA's too: a kernel calls it as host code does.
    kernel = "__global__ void k(float* out, int n) {\n  int i = threadIdx.x;\n  if (i < n) out[i] = expf(out[i]) + fabsf(out[i]);\n}\n"
    assert [d.spelling for d in unit_of(kernel).tu.diagnostics if d.severity >= 3] == []


def test_edits_are_in_characters_when_the_file_is_not_ascii():
    code = "// Größe → ✓\nvoid g(int* p);\nvoid f(int n) { /* ü */ int a[n]; g(a); }\n"
    assert rewrite(code) == (
        "// Größe → ✓\n#include <vector>\nvoid g(int* p);\nvoid f(int n) { /* ü */ std::vector<int> a(n); g(a.data()); }\n"
    )


def test_a_bom_and_crlf_line_endings_survive_the_rewrite(tmp_path):
    fixture = FIXTURES / "opt201" / "host_vla.cpp"
    converted = tmp_path / "host_vla.cpp"
    converted.write_bytes(codecs.BOM_UTF8 + fixture.read_bytes().replace(b"\n", b"\r\n"))
    source = read_source(converted, converted.name)
    result = analyse(source, {"OPT201"})
    expected = codecs.BOM_UTF8 + golden_path(fixture).read_bytes().replace(b"\n", b"\r\n")
    assert result.new == expected


@pytest.mark.parametrize(
    "head, place",
    [
        ("__global__ void k(int n)", Place.DEVICE),
        ("__device__ inline void k(int n)", Place.DEVICE),
        ("__host__ __device__ void k(int n)", Place.DEVICE),
        ("#define DEVICE_INLINE __device__ __forceinline__\nDEVICE_INLINE void k(int n)", Place.DEVICE),
        ("HEADER_DEFINED_QUALIFIER void k(int n)", Place.UNKNOWN),
        ("static HEADER_MACRO(x) void k(int n)", Place.UNKNOWN),
        ("void k(int n)", Place.HOST),
        ('extern "C" void k(int n)', Place.HOST),
        ("template <int N> void k(int n)", Place.HOST),
    ],
)
def test_host_or_device_is_judged_from_the_declaration(head, place):
    unit = unit_of(f"{head} {{ float a[n]; a[0] = 1; }}\n")
    (array,) = [n for n in unit.nodes if n.kind is CursorKind.VAR_DECL and n.spelling == "a"]
    assert unit.where(array).place is place


@pytest.mark.parametrize(
    "lambda_head, place",
    [("[&](int i)", Place.HOST), ("[=] __device__ (int i)", Place.DEVICE), ("[=] HEADER_MACRO (int i)", Place.UNKNOWN)],
)
def test_lambdas_inherit_or_declare_their_side(lambda_head, place):
    unit = unit_of(f"#define HEADER_MACRO\nvoid h(int n) {{ auto l = {lambda_head} {{ float a[n]; a[0] = i; }}; }}\n")
    (array,) = [n for n in unit.nodes if n.kind is CursorKind.VAR_DECL and n.spelling == "a"]
    assert unit.where(array).place is place


def test_references_inside_macro_arguments_are_edited_where_they_are_written():
    code = (
        "#define RUN(...) do { __VA_ARGS__ } while (0)\nvoid g(int* p);\n"
        "void f(int n) {\n  RUN(int a[n]; g(a););\n}\n"
    )
    assert "RUN(std::vector<int> a(n); g(a.data()););" in rewrite(code)


def test_a_use_spelled_inside_a_macro_body_blocks_the_rewrite():
    code = "#define FIRST (a[0])\nint f(int n) {\n  int a[n];\n  a[0] = n;\n  return FIRST;\n}\n"
    assert rewrite(code) == code


def test_includes_go_after_the_last_unconditional_include():
    code = (
        "#ifndef GUARD_H\n#define GUARD_H\n#include <cstring>\n#ifdef EXTRA\n#include <extra.h>\n#endif\n"
        "inline void f(int n) { int a[n]; a[0] = 1; }\n#endif\n"
    )
    assert rewrite(code).startswith("#ifndef GUARD_H\n#define GUARD_H\n#include <cstring>\n#include <vector>\n#ifdef EXTRA")


def test_without_includes_the_include_goes_after_the_leading_comment():
    code = "/* License\n * text */\n// more\nvoid f(int n) { int a[n]; a[0] = 1; }\n"
    assert rewrite(code).startswith("/* License\n * text */\n// more\n#include <vector>\nvoid f")


def test_an_existing_include_is_not_added_again():
    code = "#include <vector>\nvoid f(int n) { int a[n]; a[0] = 1; }\n"
    assert rewrite(code) == "#include <vector>\nvoid f(int n) { std::vector<int> a(n); a[0] = 1; }\n"


def test_a_rewrite_that_adds_an_error_is_detected():
    original = source_of("void f(int n) { int a[n]; a[0] = 1; }\n")
    broken = source_of("void f(int n) { std::vector<int> a(n; a[0] = 1; }\n")
    assert new_errors(original, broken)
    fine = source_of("#include <vector>\nvoid f(int n) { std::vector<int> a(n); a[0] = 1; }\n")
    assert new_errors(original, fine) == []


def test_findings_of_a_later_pass_report_lines_of_the_original_file():
    code = (
        "void f(const std::vector<torch::Tensor>& caches, torch::Device device) {\n"
        "  TORCH_CHECK(device.is_cuda());\n"
        "  const int n = caches.size();\n"
        "  int64_t table[n];\n"
        "  for (int i = 0; i < n; ++i) table[i] = i;\n"
        "  auto copy = torch::from_blob(table, {n}, torch::kInt64).to(device);\n"
        "  copy.zero_();\n"
        "}\n"
    )
    result = analyse(source_of(code, "example.cu"), {"OPT201", "OPT202"})  # a .cu: built with CUDA's headers
    lines = {(f.code, f.line, decision.accepted) for f, decision in result.decided}
    # The first pass adds `#include <vector>` and defers OPT202 (it overlaps `table.data()`);
    # the second pass applies it, and reports line 6 of the file the user has.
    assert lines == {("OPT201", 4, True), ("OPT202", 6, True)}


def test_looking_without_the_tree_sees_what_the_tree_sees():
    code = "// é\ntemplate <int N> void f(int n, float* out) {\n  constexpr int k = N * 2;\n  float a[k];\n  a[0] = out[n];\n}\n"
    lazy, full = unit_of(code), unit_of(code)
    full.nodes, full.tokens  # build both up front
    ranges = [(n.start, n.end) for n in full.nodes] + [(t.start, u.end) for t in full.tokens for u in full.tokens[::5]]
    for start, end in ranges:
        assert lazy.tokens_in(start, end) == full.tokens_in(start, end), (start, end)
    name = code.index("a[k]")
    declaration = lazy.cursor_at(name)
    assert declaration.kind is CursorKind.VAR_DECL and declaration.spelling == "a"
    detached = lazy.detached(declaration)
    assert [(n.kind, n.start, n.end) for n in detached.walk()] == [(n.kind, n.start, n.end) for n in full.node_of(full.cursor_at(name)).walk()]
    assert not lazy.has_tree


PARTS = (
    "#define DISPATCH_FLOAT(...) [&] { __VA_ARGS__(); }()\n"
    "__global__ void fill(float* out, int n) { int i = threadIdx.x; if (i < n) out[i] = 1.f; }\n"
    "namespace outer { namespace inner {\n"
    "__global__ void fill(double* out, int n) { out[threadIdx.x] = 2.0; }\n"
    "struct Holder {\n"
    "  torch::Tensor make(int n) { auto t = torch::zeros({n}, torch::kFloat); t.fill_(1); return t; }\n"
    "  int size() const { return 3; }\n"
    "};\n"
    "torch::Tensor launch(torch::Tensor x) {\n"
    "  auto out = at::zeros_like(x);\n"
    "  DISPATCH_FLOAT([&] { fill<<<1, 32>>>(out.data_ptr<float>(), 32); });\n"
    "  return out;\n"
    "}\n"
    "int unrelated(int n) { return n * 2; }\n"
    "}  // namespace inner\n"
    "extern \"C\" { torch::Tensor global_zeros = torch::zeros({4}, torch::kFloat); }\n"
    "}  // namespace outer\n"
)


def _shape(nodes) -> list[tuple]:
    return [(n.kind, n.spelling, n.start, n.end, len(n.children)) for n in nodes]


def test_looking_at_parts_of_the_tree_sees_what_the_tree_sees():
    lazy, full = unit_of(PARTS), unit_of(PARTS)
    by_place = {(n.kind, n.start, n.end): n for n in full.nodes}
    calling = lazy.nodes_calling(frozenset({"zeros", "zeros_like"}))
    roots = [n for n in calling if n.parent is None]
    # the method, the function and the global that call them, each whole, and nothing else
    assert [n.spelling for n in roots] == ["make", "launch", "global_zeros"]
    for root in roots:
        assert _shape(root.walk()) == _shape(by_place[(root.kind, root.start, root.end)].walk())
    assert _shape(lazy.functions_named("fill")) == _shape(full.functions_named("fill"))
    assert len(lazy.functions_named("fill")) == 2 and not lazy.functions_named("size")
    assert _shape(lazy.macro_uses) == _shape(full.macro_uses) and "DISPATCH_FLOAT" in [n.spelling for n in lazy.macro_uses]
    assert not lazy.has_tree


def test_opt203_reads_only_the_declarations_it_needs_and_judges_as_with_the_whole_tree():
    from optpatch.rule import select_rules

    rule = select_rules(load_rules(), ["OPT203"])[0]
    lazy, full = unit_of(PARTS), unit_of(PARTS)
    full.nodes  # the whole tree built first, as when another rule of the file built it
    judged = list(rule().check(lazy))
    assert judged == list(rule().check(full))
    assert len(judged) == 3 and not lazy.has_tree
    assert "kernel `fill` is defined 2 times in this file" in judged[1].verdict.reason  # which runs is not resolved


def test_tokens_read_in_bulk_are_clangs_tokens(monkeypatch):
    """The tokens read from clang_tokenize's array are those clang's accessors give, one by one: names whose
    letters a line splice separates, literals and punctuation that hold one, non-ASCII text, `>>`."""
    import optpatch.cpp_frontend as frontend

    code = (
        "// Größe\n#define LOOP(x) \\\n  d\\\no { x; } while (0)\n"
        'const char* s = "a \\\n b ✓";\nstd::vector<std::vector<int>> v; int u8 = 1\'000;\n'
        "void f(int n) { float a[n]; a[0] = n >> 1; LOOP(a[1] = 2) \\\n}\n"
    )
    bulk = unit_of(code).tokens
    monkeypatch.setattr(frontend, "_token_fields", lambda array_start, count: None)
    one_by_one = unit_of(code).tokens
    assert bulk == one_by_one
    assert "do" in [t.spelling for t in bulk] and len(bulk) > 40


# -- reparsing the spare translation unit -------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
# Each is parsed right after the one before it, so what a file declares (`#define N`, `int n`, a template)
# is there to leak into the next parse if a reparse kept any of it.
DECLARES = "#define N 4\nint n = 3;\ntemplate <int M> struct S { int a[M]; };\nvoid g(int* p);\n"
USES = "void f() {\n  int a[N];\n  float b[n];\n  S<2> s;\n  g(a);\n}\n"
_CPP_SUFFIXES = (".cpp", ".cu", ".h", ".cuh")


def _corpus_in_order() -> list[tuple[str, str]]:
    files = sorted(p for p in [*FIXTURES.rglob("*"), *(REPO / "kernels" / "csrc").glob("*")] if p.suffix in _CPP_SUFFIXES)
    examples = [
        code for rule in load_rules() if rule.language == "cpp"
        for code in [*rule.VALID, *(part for example in rule.INVALID for part in (example.code, example.fixed))]
    ]
    return (
        [("declares.cu", DECLARES), ("uses.cu", USES)] + [(p.name, p.read_text()) for p in files]
        + [(f"example{i}.cu", code) for i, code in enumerate(examples)]
    )


def _everything_a_rule_reads(unit: CppUnit) -> tuple:
    nodes = [(n.kind, n.spelling, n.start, n.end, n.type_kind) for n in unit.nodes]
    tokens = [(t.spelling, t.start, t.end) for t in unit.tokens]
    return nodes, tokens, unit.diagnostics


def test_a_reparsed_unit_sees_exactly_what_a_fresh_parse_sees(monkeypatch):
    import optpatch.cpp_frontend as frontend

    corpus = _corpus_in_order()
    assert len(corpus) > 30
    reparsed = []
    for name, code in corpus:  # each CppUnit is gone before the next parse, so the spare is reused
        reparsed.append(_everything_a_rule_reads(unit_of(code, name)))
    assert frontend._Spare.unit is not None
    monkeypatch.setattr(frontend._Spare, "take", classmethod(lambda cls: None))  # every parse fresh
    for (name, code), seen in zip(corpus, reparsed):
        assert _everything_a_rule_reads(unit_of(code, name)) == seen, name


def test_the_precompiled_prelude_changes_nothing_a_rule_reads(monkeypatch, tmp_path):
    import optpatch.cpp_frontend as frontend

    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(frontend._Spare, "take", classmethod(lambda cls: None))  # every parse fresh
    frontend._precompiled_prelude.cache_clear()
    corpus = _corpus_in_order()
    precompiled = [_everything_a_rule_reads(unit_of(code, name)) for name, code in corpus]
    assert len(list((tmp_path / "prelude").glob("*.pch"))) == 1  # built once, in the user's cache
    monkeypatch.setattr(frontend._Prelude, "refused", True)  # the prelude's text, as before it was precompiled
    frontend._precompiled_prelude.cache_clear()
    for (name, code), seen in zip(corpus, precompiled):
        assert _everything_a_rule_reads(unit_of(code, name)) == seen, name
    frontend._precompiled_prelude.cache_clear()


def test_a_precompiled_prelude_clang_refuses_is_read_as_text_instead(monkeypatch, tmp_path):
    import optpatch.cpp_frontend as frontend

    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(frontend._Spare, "take", classmethod(lambda cls: None))
    monkeypatch.setattr(frontend._Prelude, "refused", False)
    frontend._precompiled_prelude.cache_clear()
    expected = _everything_a_rule_reads(unit_of(DECLARES))
    (path,) = (tmp_path / "prelude").glob("*.pch")
    path.write_bytes(b"not a precompiled header")  # truncated, or written by something else
    frontend._precompiled_prelude.cache_clear()
    assert _everything_a_rule_reads(unit_of(DECLARES)) == expected
    assert frontend._Prelude.refused
    frontend._precompiled_prelude.cache_clear()


def test_building_the_prelude_removes_other_versions_unused_for_a_month_and_dead_temporaries(monkeypatch, tmp_path):
    import os
    import time

    import optpatch.cpp_frontend as frontend

    monkeypatch.setenv("OPTPATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(frontend._Prelude, "refused", False)
    folder = tmp_path / "prelude"
    folder.mkdir()
    stale, recent = folder / "0ld.pch", folder / "r3cent.pch"
    killed, writing = folder / ".k3y.abc.tmp", folder / ".k3y.def.tmp"  # a writer killed two days ago; one at work
    for path, days in ((stale, 40), (recent, 2), (killed, 2), (writing, 0)):
        path.write_bytes(b"another version's")
        os.utime(path, (time.time() - days * 86400,) * 2)
    frontend._precompiled_prelude.cache_clear()
    built = frontend._precompiled_prelude()
    frontend._precompiled_prelude.cache_clear()
    assert sorted(p.name for p in folder.iterdir()) == sorted([os.path.basename(built), "r3cent.pch", ".k3y.def.tmp"])


def test_the_spare_is_not_reparsed_while_its_unit_is_alive():
    first = unit_of(DECLARES, "declares.cu")
    second = unit_of(USES, "uses.cu")
    assert first.tu is not second.tu
    assert [n.spelling for n in first.nodes if n.kind is CursorKind.VAR_DECL] == ["n"]
    assert "use of undeclared identifier 'n'" in {d.message for d in second.diagnostics}


def test_vla_warnings_are_placed_the_same_alone_or_among_all_diagnostics():
    """`warned_vla` places only clang's VLA warnings until the file's diagnostics are needed anyway."""
    code = "void f(int n) {\n  int a[n];\n  undeclared_t x;\n  float b[n + 1];\n}\n"
    alone, full = unit_of(code), unit_of(code)
    assert full.diagnostics and "diagnostics" not in alone.__dict__
    a, b, x = code.index("int a"), code.index("float b"), code.index("undeclared_t")
    for start, end in [(0, len(code)), (a, a + 8), (x, b), (b, b + 15)]:
        assert alone.warned_vla(start, end) == full.warned_vla(start, end), (start, end)
    assert alone.warned_vla(a, a + 8) and alone.warned_vla(b, b + 15) and not alone.warned_vla(x, b)
