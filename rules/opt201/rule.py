from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator

from optpatch.rule import Context, Edit, Example, Finding, Impact, Judgement, KeepCategory, Rule, Tier
from optpatch.rule.cpp import FUNCTION_KINDS, LOOP_KINDS, CppUnit, Node, Place, is_callee, statement_lines

_ARRAY_KINDS = frozenset({"VARIABLEARRAY", "DEPENDENTSIZEDARRAY"})
_NESTED_ARRAY_KINDS = frozenset({"CONSTANTARRAY", "VARIABLEARRAY", "DEPENDENTSIZEDARRAY", "INCOMPLETEARRAY"})
_INTEGER_KINDS = frozenset({
    "BOOL", "CHAR_U", "UCHAR", "CHAR16", "CHAR32", "USHORT", "UINT", "ULONG", "ULONGLONG", "UINT128",
    "CHAR_S", "SCHAR", "WCHAR", "SHORT", "INT", "LONG", "LONGLONG", "INT128", "ENUM",
})
_LITERAL_KINDS = frozenset({"INTEGER_LITERAL", "CHARACTER_LITERAL", "CXX_BOOL_LITERAL_EXPR", "FLOATING_LITERAL"})
# Expressions that evaluate all of their operands: a runtime operand makes them runtime.
_TRANSPARENT_KINDS = frozenset({
    "PAREN_EXPR", "UNEXPOSED_EXPR", "CSTYLE_CAST_EXPR", "CXX_STATIC_CAST_EXPR", "CXX_FUNCTIONAL_CAST_EXPR",
    "BINARY_OPERATOR", "UNARY_OPERATOR", "ARRAY_SUBSCRIPT_EXPR",
})
_SHORT_CIRCUIT = frozenset({"&&", "||"})
# Built-in operators that read both operands (not `,`, not assignments).
_READING_OPERATORS = frozenset({
    "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", ">", "<=", ">=", "==", "!=", "<=>",
})
_REFERENCE_KINDS = frozenset({"LVALUEREFERENCE", "RVALUEREFERENCE"})
_UNEVALUATED_WORDS = frozenset({"sizeof", "alignof", "_Alignof", "__alignof__", "decltype", "typeof", "__typeof__", "__typeof"})
_DECLARATION_BLOCKERS = frozenset({
    "static", "extern", "thread_local", "register", "const", "volatile", "constexpr", "alignas", "__attribute__",
    "__shared__", "__constant__", "__device__", "(", ")", "&", "&&", ",", "=", "{", "[",
})
# Device memory (`__shared__`, `__constant__`): never a host array, whatever its bound.
_DEVICE_MEMORY_ATTRIBUTES = frozenset({"CUDASHARED_ATTR", "CUDACONSTANT_ATTR"})
_BEFORE_CALL_ARGUMENT = frozenset({"(", ","})
_AFTER_CALL_ARGUMENT = frozenset({",", ")"})

PORTABILITY_BASIS = (
    "portability: ISO C++ has no variable-length arrays (MSVC and -pedantic reject them); std::vector costs "
    "one heap allocation and a zero fill per call. A speed-up was measured only for this rule together with "
    "OPT202 on the same buffer: copy_blocks 32.1 -> 16.8 us host time per call (H100, docs/benchmarks.md)"
)
ADVICE_BASIS = "no runtime change: a constant-size array is already ISO C++"


@dataclass
class BoundProof:
    """What the array bound depends on: runtime values (witnesses), and what could not be resolved."""

    witnesses: list[str] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    constexpr_names: list[str] = field(default_factory=list)

    def merge(self, other: "BoundProof") -> "BoundProof":
        self.witnesses += [w for w in other.witnesses if w not in self.witnesses]
        self.unresolved += [u for u in other.unresolved if u not in self.unresolved]
        self.constexpr_names += [c for c in other.constexpr_names if c not in self.constexpr_names]
        return self

    @property
    def runtime(self) -> bool:
        return bool(self.witnesses) and not self.unresolved


@dataclass(frozen=True)
class Use:
    """One reference to the array: the edit it needs, or why it blocks the rewrite."""

    node: Node
    edit: Edit | None = None
    blocker: str = ""
    category: KeepCategory = KeepCategory.WHOLE_ARRAY_USED  # what kind of blocker, when there is one
    unresolved_callee: bool = False  # a decay into a call clang could not resolve (a macro from a header?)


class VlaToVector(Rule):
    """
    Replace a variable-length array in host code with `std::vector`.

    ## What it does
    Finds `T name[n];` whose bound `n` is provably a run-time value (a
    function parameter, a non-constant variable, a call to a non-constexpr
    function, or a constant initialised from one of those) in host code, and
    rewrites it to `std::vector<T> name(n);`. Uses where the array decays to
    a pointer (a function argument such as `memcpy(name, ...)` or
    `torch::from_blob(name, ...)`, a pointer initialisation or assignment,
    pointer arithmetic, `return name`) become `name.data()`; indexing
    `name[i]` stays as it is. `#include <vector>` is added once if missing.

    ## Why is this bad
    Variable-length arrays are not ISO C++: MSVC rejects them, and GCC and
    Clang accept them only as an extension (`-pedantic` and
    `-Wvla-cxx-extension` say so). A large or attacker-controlled bound also
    overflows the stack without any error.

    ## Example
    ```cpp
    void copy_blocks(std::vector<torch::Tensor> const& caches) {
      const int num_layers = caches.size();
      int64_t ptrs[num_layers];
      for (int i = 0; i < num_layers; ++i) ptrs[i] = reinterpret_cast<int64_t>(caches[i].data_ptr());
      auto table = torch::from_blob(ptrs, {num_layers}, torch::kInt64);
    }
    ```

    ## Use instead
    ```cpp
    void copy_blocks(std::vector<torch::Tensor> const& caches) {
      const int num_layers = caches.size();
      std::vector<int64_t> ptrs(num_layers);
      for (int i = 0; i < num_layers; ++i) ptrs[i] = reinterpret_cast<int64_t>(caches[i].data_ptr());
      auto table = torch::from_blob(ptrs.data(), {num_layers}, torch::kInt64);
    }
    ```

    ## Fix safety
    `safe`, with a proof: clang types the declaration as a variable-length
    array (and warns so), the bound parses without errors and depends on a
    run-time value on every evaluation, the site is in host code (no
    enclosing `__global__`, `__device__` or `__host__ __device__` function or
    lambda, and a declaration head without unresolved macros), and every
    reference to the array is understood: indexing, a decay to a pointer, a
    range-for, or a by-reference lambda capture. A VLA cannot bind to a
    deduced reference parameter, so an argument of a call whose declaration
    is not visible is still a pointer. `std::vector` value-initialises its
    elements, where the array left them indeterminate: reading them was
    undefined behaviour before, so no defined program changes. An array of
    pointers to const (`const float* rows[n]`) is an ordinary VLA of
    pointers; a const array of objects (`const int a[n]`, `T* const p[n]`)
    is kept: `std::vector` cannot hold const elements.

    `validate` where the allocation would be repeated: a declaration inside
    a loop, in a lambda handed to a call that may run it per element or tile
    (`at::parallel_for`, `std::for_each`; not a dtype dispatch, which runs
    it once), or in a function this file calls inside a loop or hands to
    another call as a callback (not a registration: pybind11's `m.def` or
    the torch library's `m.impl` hands it to Python, which calls it once
    per call). `std::vector` allocates on the heap every
    time; PyTorch reverted such a change on a hot path (pytorch #134140).

    Kept, with the reason: `sizeof(name)` or `decltype(name)`, `&name` (the
    address of the whole array), a reference bound to it (`auto& r = name`),
    use as a truth value, a multi-dimensional array, `bool` elements
    (`std::vector<bool>` is a bitset without `.data()`), a declaration with
    several declarators, qualifiers or attributes, a use the parser could not
    see (inside code that did not parse without the project's headers, or
    through a macro), and any bound that did not resolve (a constant from a
    header the parse could not see names the undeclared names, and the
    missing header when the parse with headers could not find one). Device
    code is never rewritten: an array there whose bound the parse could not
    evaluate is not reported at all (nvcc has no variable-length arrays in
    device code, so it is a constant), and `__shared__` and `__constant__`
    arrays are never candidates. A bound that is really a compile-time
    constant gets an advice to use `std::array`, never a rewrite.

    ## Known problems
    optpatch first parses each file without the project's headers, against
    a small stand-in for torch, CUDA and the standard library, and parses it
    again with its headers where that leaves a question (a finding, or a
    declaration the parse dropped; docs/cpp-frontend.md, "Header modes").
    Where the headers cannot be found, an array whose element type or bound
    comes from them (a project's own dispatch macro, a `constexpr` from a
    header) is kept or not seen: a false negative, never a wrong
    rewrite. A parse with headers starts only for a host candidate whose
    verdict a header may change; a bound made only of names from headers,
    in a function whose host or device side an unknown macro hides
    (`CUTLASS_HOST_DEVICE`), is kept without one. A per-element caller in another file is not seen: the fix is
    then `safe` although the function may run per tile.

    With a `.clang-format`, the `std::vector` declaration keeps to its
    `ColumnLimit` (docs/formatting.md); a `.data()` added at a decayed use
    can push that line past it, and `#include <vector>` goes after the last
    include, where `SortIncludes` may want it elsewhere.

    ## Measured impact
    None on its own: this is a portability fix, and `std::vector` adds a heap
    allocation and a zero fill per call. The measurement of the copy_blocks
    host code (VLA plus `torch::from_blob(...).to(device)`, rewritten to a
    vector plus `cudaMemcpyAsync`: 32.1 -> 16.8 us host time per call with 1
    block pair on an H100, docs/benchmarks.md) belongs to this rule and
    OPT202 together, and comes from OPT202's asynchronous copy.

    ## References
    - https://clang.llvm.org/docs/DiagnosticsReference.html#wvla-cxx-extension
    - https://en.cppreference.com/w/cpp/container/vector
    - vLLM's `copy_blocks_mla` uses `std::vector` with `.data()`; pytorch #134140.
    """

    code = "OPT201"
    name = "vla-to-vector"
    summary = "variable-length array in host code -> std::vector, decayed uses -> .data()"
    language = "cpp"
    default_tier = "safe"
    version = 5  # 2: fast path; 3: line markers; 4: attributes keep; 5: const pointers, repeated calls, headers
    tags = ("portability", "c++")
    trigger_words = ("[",)

    VALID = [
        # A constant bound is not a VLA.
        "void f() {\n  constexpr int n = 4;\n  int a[n];\n  a[0] = 1;\n}\n",
        # Device code is never rewritten.
        "__global__ void k(int n) {\n  float a[n];\n  a[0] = 1;\n}\n",
        # sizeof of the array would change meaning.
        "void f(int n) {\n  int a[n];\n  int s = sizeof(a);\n}\n",
        # A bound that does not resolve without headers: keep.
        "void f() {\n  constexpr int n = 16 / sizeof(some_vector_t);\n  float a[n];\n  a[0] = 1;\n}\n",
        # Multi-dimensional.
        "void f(int n) {\n  int a[n][4];\n  a[0][0] = 1;\n}\n",
        # An alignment or another attribute: std::vector's buffer would not keep it.
        "void g(float* p);\nvoid f(int n) {\n  alignas(64) float a[n];\n  g(a);\n}\n",
        "void g(float* p);\nvoid f(int n) {\n  [[gnu::aligned(64)]] float a[n];\n  g(a);\n}\n",
        "void g(float* p);\nvoid f(int n) {\n  float a [[maybe_unused]] [n];\n  g(a);\n}\n",
    ]
    INVALID = [
        Example(
            "#include <cstring>\nvoid f(int n, const int* src) {\n  int a[n];\n  memcpy(a, src, n * sizeof(int));\n  a[0] += 1;\n}\n",
            "#include <cstring>\n#include <vector>\nvoid f(int n, const int* src) {\n  std::vector<int> a(n);\n  memcpy(a.data(), src, n * sizeof(int));\n  a[0] += 1;\n}\n",
        ),
        Example(
            "#include <vector>\nvoid g(float* p);\nvoid f(const std::vector<float>& v) {\n  const int n = v.size();\n  float a[n];\n  g(a);\n}\n",
            "#include <vector>\nvoid g(float* p);\nvoid f(const std::vector<float>& v) {\n  const int n = v.size();\n  std::vector<float> a(n);\n  g(a.data());\n}\n",
        ),
        # An array of pointers to const is an ordinary VLA.
        Example(
            "#include <vector>\nvoid g(const float** rows, int n);\nvoid f(const float* base, int n) {\n"
            "  const float* rows[n];\n  for (int i = 0; i < n; ++i) rows[i] = base + i;\n  g(rows, n);\n}\n",
            "#include <vector>\nvoid g(const float** rows, int n);\nvoid f(const float* base, int n) {\n"
            "  std::vector<const float*> rows(n);\n  for (int i = 0; i < n; ++i) rows[i] = base + i;\n  g(rows.data(), n);\n}\n",
        ),
        # Inside a loop std::vector allocates per iteration: validate tier.
        Example(
            "#include <vector>\nvoid g(float* p, int n);\nvoid f(int rows, int n) {\n"
            "  for (int r = 0; r < rows; ++r) {\n    float scratch[n];\n    g(scratch, n);\n  }\n}\n",
            "#include <vector>\nvoid g(float* p, int n);\nvoid f(int rows, int n) {\n"
            "  for (int r = 0; r < rows; ++r) {\n    std::vector<float> scratch(n);\n    g(scratch.data(), n);\n  }\n}\n",
            tier="validate",
        ),
    ]

    @classmethod
    def needs_headers(cls, unit: CppUnit, findings: list[Finding]) -> bool:
        """A host candidate whose verdict may change with a declaration this parse could not see (`check` notes
        each: a fix that passes the array to a call clang could not resolve, an unresolved bound or use, a
        run-time bound where host and device cannot be told apart; a fix proven from the file's own facts needs
        no headers),
        and any `name[n]` that reads as a host declaration the header-free parse dropped (`std::complex<float>
        buf[n];` with no declaration of std::complex). Device code and `__shared__` arrays never need them."""
        if any(question.startswith(f"{cls.code} ") for question in unit.header_questions):
            return True
        if _hidden_declaration(unit):
            unit.ask_headers(f"{cls.code}: a `name[n]` that reads as a host declaration the parse dropped")
            return True
        return False

    def check(self, unit: CppUnit) -> Iterator[Judgement]:
        for node in _array_declarations(unit):
            finding = self._examine(unit, node)
            if finding is not None:
                yield finding

    # -- the verdict --------------------------------------------------------------------

    def _examine(self, unit: CppUnit, declaration: Node) -> Judgement | None:
        if any(child.kind in _DEVICE_MEMORY_ATTRIBUTES for child in declaration.children):
            return None  # `__shared__`, `__constant__`: device memory, never a host array
        dependent = declaration.type_kind == "DEPENDENTSIZEDARRAY"
        nested = declaration.cursor.type.element_type.get_canonical().kind.name in _NESTED_ARRAY_KINDS
        if nested and dependent:
            return None
        bound = _bound(declaration)
        if bound is None:
            return None
        if nested:  # `T a[n][4]`: a run-time value in any bound makes it variable-length
            bound = next((b for b in declaration.expressions() if _prove_runtime(unit, b, set()).runtime), bound)
        proof = _prove_runtime(unit, bound, set())
        if bound.cursor.type.get_canonical().kind.name not in _INTEGER_KINDS:
            proof.unresolved.insert(0, f"`{unit.node_text(bound)}` is not known to be an integer")
        if unit.errors_in(bound.start, bound.end):
            proof.unresolved.insert(0, f"`{unit.node_text(bound)}` has errors without the project's headers")
        if dependent and not proof.runtime:
            return None  # a template-dependent bound is a constant per instantiation unless proven otherwise
        where = unit.where(declaration)
        if where.place is Place.DEVICE and not proof.runtime:
            return None  # device code has no VLAs (nvcc rejects them): a constant this parse could not evaluate
        context = unit.run_context(declaration, where.function)
        if where.place is Place.DEVICE:
            return self._keep(unit, declaration, context, f"device code ({where.reason}): std::vector cannot be used there",
                              KeepCategory.DEVICE_CODE)
        if where.place is Place.UNKNOWN:
            if proof.witnesses:  # a run-time bound: host (a fix) or device (a keep) is the macro's to say
                _ask_headers(unit, declaration, f"cannot tell host from device code: {where.reason}")
                return self._keep(unit, declaration, context, f"cannot tell host from device code: {where.reason}",
                                  KeepCategory.UNRESOLVED)
            if proof.constexpr_names or not proof.unresolved:
                return None  # a constant-size array, in code that may be device code: no advice to give there
            return self._unproven(unit, declaration, bound, proof, context, ask=False)
        if not proof.runtime:
            return self._unproven(unit, declaration, bound, proof, context)
        if nested:
            return self._keep(unit, declaration, context, "multi-dimensional array: std::vector<std::vector<T>> would change its layout",
                              KeepCategory.CANNOT_SPELL)
        if not dependent and not unit.warned_vla(declaration.start, declaration.end):
            _ask_headers(unit, declaration, "clang did not warn that this is a variable-length array")
            return self._keep(unit, declaration, context, "clang did not warn that this is a variable-length array",
                              KeepCategory.UNRESOLVED)
        shape = _declaration_shape(unit, declaration)
        if isinstance(shape, str):
            return self._keep(unit, declaration, context, shape, KeepCategory.CANNOT_SPELL)
        uses = [_classify(unit, declaration, reference) for reference in unit.references_to(declaration)]
        blocking = next((u for u in uses if u.blocker), None)
        if blocking is not None:
            if blocking.category is KeepCategory.UNRESOLVED:
                _ask_headers(unit, declaration, blocking.blocker)
            return self._keep(unit, declaration, context, blocking.blocker, blocking.category)
        unseen = _unseen_use(unit, declaration, uses)
        if unseen:
            _ask_headers(unit, declaration, unseen)
            return self._keep(unit, declaration, context, unseen, KeepCategory.UNRESOLVED)
        unresolved = next((u for u in uses if u.unresolved_callee), None)
        if unresolved is not None:  # the callee may be a macro from a header (`CHECK(a)` -> `sizeof(a)`)
            _ask_headers(unit, declaration, f"L{unit.line_of(unresolved.node.start)}: passed to a call this parse "
                                            "could not resolve")
        return self._fix(unit, declaration, shape, uses, proof, context)

    def _unproven(self, unit, declaration: Node, bound: Node, proof: BoundProof, context: Context,
                  ask: bool = True) -> Judgement:
        bound_text = unit.node_text(bound)
        if ask:
            _ask_headers(unit, declaration, f"the bound `{bound_text}` did not resolve")
        if proof.constexpr_names or not proof.unresolved:
            names = ", ".join(f"`{n}`" for n in proof.constexpr_names)
            origin = f"declared constexpr ({names})" if names else "a constant expression"
            reason = (
                f"the bound `{bound_text}` is {origin}: a constant-size array, not a VLA, so nothing to rewrite; "
                f"if a container is wanted, use `std::array<{_element_text(unit, declaration)}, {bound_text}>`"
            )
            return self.advice(unit, unit.position(declaration.start), reason=reason, context=context, basis=ADVICE_BASIS)
        unseen = _undeclared_names(unit, bound)
        if unseen and not proof.witnesses:
            names = ", ".join(f"`{n}`" for n in unseen)
            reason = (f"the bound `{bound_text}` reads {names}, which this file does not declare: a constant from a "
                      f"header the parse could not see, not shown to be a run-time value")
            return self._keep(unit, declaration, context, reason, KeepCategory.UNRESOLVED)
        reason = f"bound `{bound_text}` is not proven to be a run-time value: " + "; ".join(proof.unresolved)
        return self._keep(unit, declaration, context, reason, KeepCategory.UNRESOLVED)

    # -- findings ---------------------------------------------------------------------------

    def _fix(self, unit: CppUnit, declaration: Node, shape: tuple[str, str], uses: list[Use], proof: BoundProof, context: Context) -> Judgement:
        element, bound_text = shape
        edits, replacement = _rewrite(unit, declaration, element, bound_text, uses)
        decayed = sum(1 for use in uses if use.edit is not None)
        reason = (
            f"`{declaration.spelling}` is a variable-length array in host code: its bound `{bound_text}` depends on "
            f"{', '.join(proof.witnesses)}; {len(uses)} use(s) understood, {decayed} decayed to a pointer (-> `.data()`)"
        )
        steps = [f"bound `{bound_text}` depends on {w}" for w in proof.witnesses]
        steps += [f"L{unit.line_of(u.node.start)}: `{u.node.spelling}` -> `{u.edit.text}`" for u in uses if u.edit]
        tier = Tier.SAFE
        repeated = _repeated_call(unit, declaration, context)
        if repeated:
            # std::vector allocates on the heap each time: a cost the array never had, on a path that may be hot.
            tier = Tier.VALIDATE
            note = f"{repeated}: std::vector heap-allocates on every call there (pytorch #134140 reverted such a change)"
            reason += f"; {note}"
            steps.append(note)
        return self.fix(unit, unit.position(declaration.start), reason=reason, tier=tier, edits=sorted(edits),
                        context=context, impact=Impact.LOW, basis=PORTABILITY_BASIS, replacement=replacement, proof=steps)

    def _keep(self, unit: CppUnit, declaration: Node, context: Context, reason: str, category: KeepCategory) -> Judgement:
        return self.keep(unit, unit.position(declaration.start), reason=reason, category=category, context=context)


def _ask_headers(unit: CppUnit, declaration: Node, why: str) -> None:
    """Note that the file's headers may change this host candidate's verdict (cpp_second_look.py reads it)."""
    unit.ask_headers(f"OPT201 L{unit.line_of(declaration.start)} `{declaration.spelling}`: {why}")


def _undeclared_names(unit: CppUnit, bound: Node) -> list[str]:
    """The names in `bound` that resolve to nothing (declared, if anywhere, in a header the parse did not read)."""
    names = []
    for node in bound.walk():
        if node.kind in ("DECL_REF_EXPR", "MEMBER_REF_EXPR", "OVERLOADED_DECL_REF") and unit.referenced(node) is None:
            names.append(node.spelling or unit.node_text(node))
    if not names:  # clang dropped the unresolved name from the tree: its tokens still spell it
        names = [t.spelling for t in unit.tokens_in(bound.start, bound.end) if t.kind == "identifier"
                 and unit.errors_in(t.start, t.end)]
    return list(dict.fromkeys(n for n in names if n))


# -- the edit text ----------------------------------------------------------------------------------


def _rewrite(unit: CppUnit, declaration: Node, element: str, bound_text: str, uses: list[Use]) -> tuple[list[Edit], str]:
    """The edits of the rewrite (the declaration, each decayed use, the include) and the new declaration's text."""
    replacement = f"std::vector<{element}> {declaration.spelling}({bound_text})"
    edits = [_declaration_edit(unit, declaration, replacement)]
    edits += [use.edit for use in uses if use.edit is not None]
    include = unit.include_edit("vector")
    if include is not None:
        edits.append(include)
    return edits, replacement + ";"


# -- how often the declaration runs ----------------------------------------------------------------

# Calls known not to run their callback per element or tile: ATen's dtype dispatch (and the projects that copy
# it) and call_once run it once; pybind11's `m.def`/`def_static` and the torch library's `m.impl`/`TORCH_FN`
# register a function that Python then calls once per call, as any host function.
_ONCE_CALLERS = re.compile(r"DISPATCH|call_once|^(?:def|def_static|impl|TORCH_FN)$", re.I)


def _repeated_call(unit: CppUnit, declaration: Node, context: Context) -> str:
    """Why the declaration may run per element or per tile (so that an allocation there costs), or ""."""
    if context is Context.HOT:
        return "it is declared inside a loop"
    for ancestor in declaration.ancestors():
        if ancestor.kind == "LAMBDA_EXPR":
            caller = _caller_of_argument(unit, ancestor)
            if caller and not _ONCE_CALLERS.search(caller):
                return f"it is in a lambda handed to `{caller}`, which may call it per element or per tile"
            holder = _holder(ancestor)
            if holder is not None:
                return _called_repeatedly(unit, holder)
            if caller is None:
                continue  # called where it is written: the function around it decides
            return ""
        if ancestor.kind in FUNCTION_KINDS:
            return _called_repeatedly(unit, ancestor)
    return ""


def _holder(lambda_expr: Node) -> Node | None:
    """The variable a lambda is stored in (`auto body = [&] {...};`), if any."""
    node = lambda_expr.parent
    while node is not None and node.kind in ("UNEXPOSED_EXPR", "CALL_EXPR") and node.start == lambda_expr.start:
        node = node.parent
    return node if node is not None and node.kind == "VAR_DECL" else None


def _caller_of_argument(unit: CppUnit, node: Node) -> str | None:
    """The name of the call that `node` (a lambda or a function's name) is an argument of; None when it is
    called right there (`[&] {...}()`, `f(x)`) or is no argument. Read from the tokens, which a macro's
    expansion (`AT_DISPATCH_...(..., [&] {...})`) leaves as written."""
    tokens = unit.tokens
    first = unit.token_index(node.start)
    last = unit.token_index(node.end)
    if last < len(tokens) and tokens[last].spelling in ("(", "<"):
        return None
    depth = 0
    for index in range(first - 1, -1, -1):
        spelling = tokens[index].spelling
        if spelling in (")", "]", "}"):
            depth += 1
        elif spelling in ("(", "[", "{"):
            if depth:
                depth -= 1
                continue
            if spelling != "(" or index == 0 or tokens[index - 1].kind != "identifier":
                return None
            return tokens[index - 1].spelling
        elif spelling == ";" and not depth:
            return None
    return None


def _called_repeatedly(unit: CppUnit, callable_: Node) -> str:
    """Where this file calls a function (or a variable holding a lambda) inside a loop, or hands it to another
    call as a callback; else ""."""
    name = callable_.spelling
    if not name or callable_.kind == "LAMBDA_EXPR":
        return ""
    if callable_.kind == "VAR_DECL":
        references = unit.references_to(callable_)
    else:
        references = [
            node for node in unit.nodes
            if node.kind == "DECL_REF_EXPR" and node.spelling == name and not callable_.start <= node.start < callable_.end
            and (target := unit.referenced(node)) is not None and target.canonical == callable_.cursor.canonical
        ]
    for node in references:
        line = unit.line_of(node.start)
        if any(a.kind in LOOP_KINDS and not unit.runs_once(a) for a in node.ancestors()):
            return f"`{name}` is called inside a loop (L{line})"
        caller = _caller_of_argument(unit, node)
        if caller and not _ONCE_CALLERS.search(caller):
            return f"`{name}` is handed to `{caller}` as a callback (L{line})"
    return ""
def _declaration_edit(unit: CppUnit, declaration: Node, replacement: str) -> Edit:
    """The declaration rewritten; with a .clang-format, its statement kept within the column limit."""
    text = unit.source.text
    line_start = text.rfind("\n", 0, declaration.start) + 1
    indentation = text[line_start : declaration.start]
    if not unit.style.column_limit or indentation.strip() or text[declaration.end : declaration.end + 1] != ";":
        return Edit(declaration.start, declaration.end, replacement)
    line_end = text.find("\n", declaration.end)
    trailing = text[declaration.end + 1 : len(text) if line_end < 0 else line_end].rstrip("\r")
    laid_out = statement_lines(replacement + ";", indentation, unit.style, unit.newline(), trailing)
    return Edit(declaration.start, declaration.end + 1, laid_out)


# -- the bound ------------------------------------------------------------------------------------


# -- finding the declarations ----------------------------------------------------------------

# A name right before `[`: every array declarator spells one (`float a[n]`, `T a[2][n]`).
_NAME_BEFORE_BRACKET = re.compile(r"\b([A-Za-z_]\w*)\s*\[")
# `[16]`, `[0x10u]`: a declarator with such a bound declares a constant-size array, whatever its element type,
# in the text or in a macro body (`#define HOST char hostname[1024]`), so it is never a candidate.
_CONSTANT_BOUND = re.compile(r"[ \t]*(?:0[xX][0-9a-fA-F]+|[0-9]+)[uUlLzZ]*[ \t]*\]")
# What can silence clang's VLA warning, which the fast path relies on: a diagnostic pragma (`#pragma clang
# diagnostic ignored`, `_Pragma`, `__pragma`, the digraph `%:pragma`) or a GNU line marker whose flag makes
# what follows a system header (`# 1 "x.h" 3`). Matched loosely: a false match costs only the walk.
_LINE_MARKER = re.compile(r"(?:#|%:)[ \t]*\d")
_PRAGMA_LINE = re.compile(r"^[^\n]*#[^\n]*pragma(?:[^\n]*\\\r?\n)*[^\n]*", re.M)  # with its continuation lines


def _may_silence_the_vla_warning(text: str) -> bool:
    if _LINE_MARKER.search(text):
        return True
    if "diagnostic" not in text:
        return False
    if "_Pragma" in text or "__pragma" in text or "%:" in text:
        return True
    # A block comment may carry a directive over to the next line.
    return any("diagnostic" in line or "/*" in line for line in _PRAGMA_LINE.findall(text))


def _array_declarations(unit: CppUnit) -> list[Node]:
    """Every VAR_DECL of variable or template-dependent size that `_examine` may have a verdict on.

    The plain way walks `unit.nodes`, a Python mirror of every cursor: ten
    times the cost of the parse. Most files need none of it: a variable-length
    array makes clang warn (its `-Wvla-cxx-extension` warning), and a template-dependent one matters
    only when its bound is provably a run-time value. So, unless clang warned
    or a pragma or line marker may have silenced it, each `name[` of the text
    that may be a declarator and has no integer literal for a bound is looked
    up with `cursor_at`, and a dependent declaration found there is judged on its
    own subtree; the whole tree is built only when one may be fixed or kept,
    or when a `name[` lies in a macro body (its expansions are declared where
    the macro is used, which no `name[` of the text shows).
    tests/cpp/test_opt201_fast_path.py checks that both ways agree.
    """
    text = unit.source.text
    if unit.warned_vla(0, len(text)) or _may_silence_the_vla_warning(text):
        return _all_array_declarations(unit)
    for match in _NAME_BEFORE_BRACKET.finditer(text):
        if _never_declared_here(text, match.start(1)) or _CONSTANT_BOUND.match(text, match.end()):
            continue
        cursor = unit.cursor_at(match.start(1))
        if cursor is not None and cursor.kind.name == "MACRO_DEFINITION":
            return _all_array_declarations(unit)  # a macro body may declare an array wherever it is used
        if cursor is None or cursor.kind.name != "VAR_DECL" or cursor.type.kind.name not in _ARRAY_KINDS:
            continue
        if cursor.type.kind.name != "DEPENDENTSIZEDARRAY" or _may_have_verdict(unit, unit.detached(cursor)):
            return _all_array_declarations(unit)
    return []


# What may come right before the name a declaration declares: a type, `*`, `&`, `(`, `,`, `::`, `>`, a comment
# (`/`), a macro's name or arguments. These characters never do: they end an expression or a statement.
_NOT_BEFORE_A_DECLARATOR = frozenset("=[+-%!~^|?{};.")


def _never_declared_here(text: str, start: int) -> bool:
    """True when the `name[` at `start` is an expression (`x = a[i]`, `p->a[i]`, `; a[i] = 0`), so
    `cursor_at` there cannot find a VAR_DECL: more than half of the `name[` of CUDA code, each a clang lookup.

    A line that holds or continues a directive is always looked up: `cursor_at` finds the macro definitions
    `_array_declarations` must see there.
    """
    line_start = text.rfind("\n", 0, start) + 1
    if "#" in text[line_start:start] or text[max(0, line_start - 3) : line_start].rstrip("\r\n").endswith("\\"):
        return False
    at = start - 1
    while at >= 0 and text[at] in " \t\r\n":
        if text[at] == "\n" and "//" in text[text.rfind("\n", 0, at) + 1 : at]:
            return False  # the line before may end in a comment, whose last character says nothing
        at -= 1
    if at < 0:
        return False
    before = text[at]
    if before == ".":
        return text[max(0, at - 2) : at + 1] != "..."
    if before == ">":
        return at > 0 and text[at - 1] == "-"
    return before in _NOT_BEFORE_A_DECLARATOR


# Keywords that may end the type before a declarator's name (`unsigned long a[n]`, `const char* p[n]`).
_TYPE_KEYWORDS = frozenset({
    "bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int", "long", "signed", "unsigned",
    "float", "double", "void", "auto", "const", "volatile",
})
_DECLARED_KINDS = frozenset({"VAR_DECL", "FIELD_DECL", "PARM_DECL"})


# Right before the name of a local array's declarator these never stand (a parameter or an argument does).
_NOT_BEFORE_A_STATEMENT_DECLARATOR = frozenset("(,)<")
# Before a declaration, these say it is no candidate: device memory, or an array that cannot be variable-length.
_NOT_A_HOST_VLA = frozenset({"__shared__", "__constant__", "__device__", "static", "extern", "constexpr", "constinit"})


def _hidden_declaration(unit: CppUnit) -> bool:
    """A `name[` with a non-literal bound and no initialiser that reads as a declaration clang did not build:
    after something that can end a type (a name, `>`, a type keyword, or a `*`/`&` that follows one), with
    neither a declaration nor an expression at the name, outside any device function: code the header-free
    parse dropped. Where clang dropped the function itself (an unknown macro or type in its head:
    `CUTLASS_DEVICE void f()`, `py::array f(...)`), only a bound that names something the function itself
    spells before the array (a parameter, a local) may be a run-time value; one made only of names from
    elsewhere (`kRank`, a template's `N`) is a constant: no parse for it."""
    text = unit.source.text
    for match in _NAME_BEFORE_BRACKET.finditer(text):
        start = match.start(1)
        if _never_declared_here(text, start) or _CONSTANT_BOUND.match(text, match.end()):
            continue
        if _SIZED_BY_INITIALISER.match(text, match.end()) or _initialised(text, match.end()):
            continue  # `T a[] = {...}`, `T a[n] = {}`: a constant-size array (a VLA cannot be initialised)
        if text[:start].rstrip()[-1:] in _NOT_BEFORE_A_STATEMENT_DECLARATOR:
            continue  # `f(a[i])`, `g(x, a[i])`: an argument, or a parameter, never a local declaration
        cursor = unit.cursor_at(start)
        if cursor is None or cursor.kind.name in _DECLARED_KINDS or cursor.kind.is_expression():
            continue
        in_dropped_function = not cursor.kind.is_statement()
        # The statement's tokens up to the name, lexed alone (not the whole file's): back to a `;`, `{` or `}`.
        boundary = max(text.rfind(";", 0, start), text.rfind("{", 0, start), text.rfind("}", 0, start)) + 1
        before = unit.tokens_in(boundary, match.end(1))
        if cursor.kind.name.startswith("MACRO_") or not before or before[-1].start != start:
            continue  # a macro, a comment or a string
        name, before = before[-1], before[:-1]
        if name.kind != "identifier":
            continue  # `operator[]`
        if _ends_a_type(before) and not _device_or_static(before) and not unit.in_device_function(start):
            if not in_dropped_function or _bound_named_in_function(text, start, match.end()):
                return True
    return False


_SIZED_BY_INITIALISER = re.compile(r"\s*\]")


def _initialised(text: str, after_bracket: int) -> bool:
    """Whether the `[...]` opened just before `after_bracket` (and any `[...]` after it) is followed by an
    initialiser (`=` or `{`)."""
    depth, at = 1, after_bracket
    while at < len(text) and (depth or text[at] in " \t["):
        depth += {"[": 1, "]": -1}.get(text[at], 0)
        at += 1
    rest = text[at : at + 80].lstrip()
    return rest.startswith(("=", "{")) and not rest.startswith("==")


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_BRACE = re.compile(r"[{}]")
_AFTER_PARAMETERS = re.compile(r"\)\s*(?:(?:const|noexcept|override|final|mutable)\s*)*$")


def _bound_named_in_function(text: str, start: int, after_bracket: int) -> bool:
    """Whether a name in the bound of the `name[` at `start` is declared earlier in the function around it, as a
    parameter or a local (`int n)`, `const int64_t n =`; read as text: clang dropped the function)."""
    end = text.find("]", after_bracket)
    names = set(_IDENTIFIER.findall(text[after_bracket:end])) - _UNEVALUATED_WORDS if end > 0 else set()
    body = _function_body_start(text, start)
    if not names or body is None:
        return False
    head = max(text.rfind("(", 0, text.rfind(")", 0, body)), 0)
    for name in names:
        for declared in re.finditer(rf"[\w>*&]\s+{name}\s*[=;,)({{\[]", text[head:start]):
            statement = re.split(r"[;{}(,]", text[head : head + declared.start()])[-1]
            if "constexpr" not in statement:  # a constexpr local is a constant
                return True
    return False


def _function_body_start(text: str, start: int) -> int | None:
    """The `{` of the outermost unclosed block around `start` that follows a `)` (a function's body), or None."""
    depth, found = 0, None
    for brace in reversed(list(_BRACE.finditer(text, 0, start))):
        at = brace.start()
        if text[at] == "}":
            depth += 1
        else:
            if depth:
                depth -= 1
                continue
            if _AFTER_PARAMETERS.search(text, max(0, at - 200), at):
                found = at
    return found


def _ends_a_type(before: list) -> bool:
    """The tokens before the name spell a type that starts a statement: `T a[`, `ns::T<int>* a[`,
    `const char* a[`; not `x * a[`, `f(&a[` or `return a[`."""
    depth, seen_type = 0, False
    for token in reversed(before):
        spelling = token.spelling
        if spelling in (">", ">>"):
            depth += len(spelling)
        elif spelling == "<":
            depth -= 1
            if depth < 0:
                return False
        elif depth == 0 and spelling in (";", "{", "}", ":"):
            return seen_type
        elif token.kind == "identifier" or token.kind == "keyword" and spelling in _TYPE_KEYWORDS:
            seen_type = True
        elif depth == 0 and spelling not in ("::", "*", "&", "&&"):
            return False  # `=`, `(`, `,`, an operator, `return`: an expression
        elif depth > 0 and spelling not in ("::", "*", "&", ",") and token.kind not in ("literal",):
            return False
    return seen_type and depth == 0  # `ss >> a[i]`: no `<` opens what `>>` would close


def _device_or_static(before: list) -> bool:
    """A qualifier of the statement the name is declared in (its tokens `before` the name)."""
    for token in reversed(before):
        if token.spelling in (";", "{", "}"):
            return False
        if token.spelling in _NOT_A_HOST_VLA:
            return True
    return False


def _all_array_declarations(unit: CppUnit) -> list[Node]:
    return [node for node in unit.nodes if node.kind == "VAR_DECL" and node.type_kind in _ARRAY_KINDS]


def _may_have_verdict(unit: CppUnit, declaration: Node | None) -> bool:
    """False when `_examine` would say nothing of this dependent-size declaration (its first returns)."""
    if declaration is None:
        return True
    if declaration.cursor.type.element_type.get_canonical().kind.name in _NESTED_ARRAY_KINDS:
        return False
    bound = _bound(declaration)
    return bound is not None and _prove_runtime(unit, bound, set()).runtime


def _bound(declaration: Node) -> Node | None:
    expressions = declaration.expressions()
    return expressions[0] if expressions else None


def _prove_runtime(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    """Which run-time values `node` depends on whenever it is evaluated, and what did not resolve.

    Only facts of the file itself count as evidence: a function declared by
    optpatch's prelude might be constexpr in the real headers, so calling it
    proves nothing unless its arguments do.
    """
    proof = BoundProof()
    kind = node.kind
    canonical = node.cursor.type.get_canonical().kind.name
    if canonical == "INVALID":
        proof.unresolved.append(f"`{unit.node_text(node)}` has no type")
        return proof
    if kind in _LITERAL_KINDS:
        return proof
    if kind == "CXX_UNARY_EXPR":  # sizeof / alignof: never evaluated
        if any(n.type_kind in _ARRAY_KINDS for n in node.walk() if n is not node):
            proof.unresolved.append(f"`{unit.node_text(node)}` measures a variable-length array")
        return proof
    if kind == "CXX_THIS_EXPR":
        proof.witnesses.append("`this`")
        return proof
    if kind == "CONDITIONAL_OPERATOR":
        return _prove_conditional(unit, node, visiting)
    if kind == "BINARY_OPERATOR" and node.spelling in _SHORT_CIRCUIT:
        left = _prove_runtime(unit, node.expressions()[0], visiting)
        return left if left.witnesses or left.unresolved else left.merge(_unresolved(unit, node, "short-circuit operand"))
    if kind == "UNARY_OPERATOR" and unit.node_text(node).startswith("&"):
        return _unresolved(unit, node, "an address, not a value")
    if kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR") and node.spelling not in _READING_OPERATORS:
        return _unresolved(unit, node, f"the operator `{node.spelling}`")
    if kind in _TRANSPARENT_KINDS:
        for child in node.expressions():
            proof.merge(_prove_runtime(unit, child, visiting))
        if proof.witnesses:  # every operand is read: one run-time operand suffices
            proof.unresolved = []
        return proof
    if kind == "DECL_REF_EXPR":
        return _prove_reference(unit, node, visiting)
    if kind == "MEMBER_REF_EXPR":
        return _prove_member(unit, node, visiting)
    if kind == "CALL_EXPR":
        return _prove_call(unit, node, visiting)
    return _unresolved(unit, node, f"a {kind.lower().replace('_', ' ')}")


def _unresolved(unit: CppUnit, node: Node, what: str) -> BoundProof:
    return BoundProof(unresolved=[f"`{unit.node_text(node)}` ({what}) is not understood"])


def _prove_conditional(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    condition, *branches = node.expressions()
    proof = _prove_runtime(unit, condition, visiting)
    if proof.witnesses or proof.unresolved:
        return proof
    # A constant condition picks one branch: runtime only if both are.
    both = [_prove_runtime(unit, branch, visiting) for branch in branches]
    if all(b.runtime for b in both):
        for branch in both:
            proof.merge(branch)
        return proof
    for branch in both:
        proof.unresolved += branch.unresolved
    if not proof.unresolved:
        proof.unresolved.append(f"`{unit.node_text(node)}` may select a constant branch")
    return proof


def _prove_reference(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    target = unit.referenced(node)
    if target is None:
        return _unresolved(unit, node, "an unresolved name")
    kind = target.kind.name
    name = node.spelling
    if kind == "PARM_DECL":
        return BoundProof(witnesses=[f"parameter `{name}`"])
    if kind in ("ENUM_CONSTANT_DECL", "TEMPLATE_NON_TYPE_PARAMETER"):
        return BoundProof()
    if kind != "VAR_DECL" or unit.in_prelude(target):
        return _unresolved(unit, node, "not a variable of this file")
    declaration = unit.node_of(target)
    if declaration is None:
        return _unresolved(unit, node, "declared outside this file")
    constexpr = any(t.spelling in ("constexpr", "constinit") for t in unit.tokens_in(declaration.start, declaration.end))
    reference = target.type.kind.name in ("LVALUEREFERENCE", "RVALUEREFERENCE")
    if not (constexpr or reference or target.type.is_const_qualified()):
        return BoundProof(witnesses=[f"the non-constant variable `{name}`"])
    initialiser = declaration.expressions()
    if not initialiser or unit.errors_in(declaration.start, declaration.end) or id(declaration) in visiting:
        proof = _unresolved(unit, node, "a constant whose initialiser did not resolve")
        if constexpr:
            proof.constexpr_names.append(name)
        return proof
    inner = _prove_runtime(unit, initialiser[-1], visiting | {id(declaration)})
    if constexpr:
        inner.constexpr_names.append(name)
    if inner.runtime:
        inner.witnesses = [f"`{name}` = `{unit.node_text(initialiser[-1])}` ({', '.join(inner.witnesses)})"]
    return inner


def _prove_member(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    target = unit.referenced(node)
    if target is None:
        return _unresolved(unit, node, "an unresolved member")
    if target.kind.name == "VAR_DECL":  # a static data member: like any variable
        return _prove_reference(unit, node, visiting)
    base = node.expressions()
    if target.kind.name == "FIELD_DECL" and not base:
        return BoundProof(witnesses=[f"the member `{node.spelling}` of `this`"])
    proof = BoundProof()
    for child in base:
        proof.merge(_prove_runtime(unit, child, visiting))
    if target.kind.name == "FIELD_DECL" and proof.runtime:
        proof.witnesses = [f"`{unit.node_text(node)}`"]
    return proof


def _prove_call(unit: CppUnit, node: Node, visiting: set[int]) -> BoundProof:
    """A call is a run-time value when it reads one, or when it cannot be constant-evaluated.

    A constexpr function need not read what it is given by reference
    (`std::array::size()` on a local array is a constant), so a run-time
    argument counts only when passed by value, and a run-time object only
    when the member function is not constexpr.
    """
    callee = unit.referenced(node)
    if callee is None:
        return _unresolved(unit, node, "an unresolved call")
    constexpr = _is_constexpr(callee)
    parameters = _parameter_kinds(callee)
    proof = BoundProof()
    arguments = [child for child in node.expressions() if not is_callee(child)]
    for child in arguments:
        if child.kind == "MEMBER_REF_EXPR":  # the object of a member call
            for base in child.expressions():
                inner = _prove_runtime(unit, base, visiting)
                proof.unresolved += inner.unresolved
                if inner.witnesses and not constexpr:
                    proof.witnesses += inner.witnesses
            continue
    values = [child for child in arguments if child.kind != "MEMBER_REF_EXPR"]
    for index, child in enumerate(values):
        inner = _prove_runtime(unit, child, visiting)
        proof.unresolved += inner.unresolved
        by_value = parameters is not None and index < len(parameters) and parameters[index] not in _REFERENCE_KINDS
        if inner.witnesses and (by_value or not constexpr):
            proof.witnesses += inner.witnesses
    if proof.witnesses:
        proof.witnesses = [f"`{unit.node_text(node)}` ({', '.join(proof.witnesses)})"]
        proof.unresolved = []  # every argument is evaluated: one run-time value suffices
        return proof
    if proof.unresolved:
        return proof
    if unit.in_prelude(callee) or unit.node_of(callee) is None:
        return _unresolved(unit, node, "a call optpatch cannot see into")
    if constexpr:
        return _unresolved(unit, node, "a constexpr call with constant arguments")
    return BoundProof(witnesses=[f"the call `{unit.node_text(node)}` to the non-constexpr `{node.spelling}`"])


def _is_constexpr(callee) -> bool:
    """`constexpr` or `consteval` in the head of the callee's declaration (the file's or the prelude's)."""
    for token in callee.get_tokens():
        if token.spelling in ("{", ";", "="):
            return False
        if token.spelling in ("constexpr", "consteval"):
            return True
    return False


def _parameter_kinds(callee) -> list[str] | None:
    """The canonical type kinds of the callee's parameters; None when its type has no prototype."""
    if callee.type.kind.name != "FUNCTIONPROTO":
        return None
    return [argument.get_canonical().kind.name for argument in callee.type.argument_types()]


# -- the declaration --------------------------------------------------------------------------------


def _declaration_shape(unit: CppUnit, declaration: Node) -> tuple[str, str] | str:
    """(element type text, bound text) of `T name[bound]`, or why it cannot be rewritten."""
    statement = declaration.parent
    if statement is None or statement.kind != "DECL_STMT" or statement.parent is None or statement.parent.kind != "COMPOUND_STMT":
        return "not a declaration statement of its own block"
    if len([c for c in statement.children if c.kind == "VAR_DECL"]) != 1:
        return "declared together with other variables; split the declaration first"
    element_type = declaration.cursor.type.element_type
    if element_type.get_canonical().kind.name == "BOOL":
        return "`bool` elements: std::vector<bool> is a packed bitset without `.data()`"
    if element_type.get_canonical().kind.name in ("UNEXPOSED", "DEPENDENT"):
        return "the element type depends on a template parameter: std::vector<bool> would be a packed bitset"
    if statement.start != declaration.start or any(child.kind.endswith("_ATTR") for child in declaration.children):
        # `alignas(64)`, `[[gnu::aligned(64)]]`: std::vector's buffer would not keep them.
        return "the declaration has attributes: only a plain `T name[n];` is rewritten"
    tokens = unit.tokens_in(declaration.start, declaration.end)
    names = [i for i, t in enumerate(tokens) if t.spelling == declaration.spelling and t.kind == "identifier"]
    if len(names) != 1 or unit.token_at(declaration.start) is None:
        return "the declaration is spelled through a macro"
    name_index = names[0]
    type_tokens, rest = tokens[:name_index], tokens[name_index + 1 :]
    if element_type.is_const_qualified() or element_type.is_volatile_qualified():
        return "a const or volatile array of objects: std::vector cannot hold const elements"
    # `const float* ptrs[n]` is an ordinary array of pointers (to const): its qualifiers belong to the pointees.
    qualifiers = {"const", "volatile"} if element_type.get_canonical().kind.name == "POINTER" else set()
    blocking = [t.spelling for t in type_tokens if t.spelling in _DECLARATION_BLOCKERS and t.spelling not in qualifiers]
    if blocking or not type_tokens:
        return f"the declaration has `{blocking[0] if blocking else declaration.spelling}`: only a plain `T name[n];` is rewritten"
    if not rest or rest[0].spelling != "[" or rest[-1].spelling != "]":
        return "the declaration has an initialiser or attributes"
    after = unit.token_after(declaration.end)
    if after is None or after.spelling != ";":
        return "the declaration has an initialiser or attributes"
    element = unit.text(type_tokens[0].start, type_tokens[-1].end)
    bound = unit.text(rest[0].end, rest[-1].start).strip()
    return element, bound


def _element_text(unit: CppUnit, declaration: Node) -> str:
    tokens = unit.tokens_in(declaration.start, declaration.end)
    names = [i for i, t in enumerate(tokens) if t.spelling == declaration.spelling]
    if names and names[0] > 0:
        return unit.text(tokens[0].start, tokens[names[0] - 1].end)
    return declaration.cursor.type.element_type.spelling


# -- the uses ---------------------------------------------------------------------------------------


def _classify(unit: CppUnit, declaration: Node, reference: Node) -> Use:
    name = declaration.spelling
    line = unit.line_of(reference.start)
    token = unit.token_at(reference.start)
    if token is None or token.spelling != name:
        return Use(reference, blocker=f"L{line}: `{name}` is used through a macro", category=KeepCategory.UNRESOLVED)
    before, after = unit.token_before(token.start), unit.token_after(token.end)
    if reference.kind == "VARIABLE_REF":  # a lambda capture
        if before is not None and before.spelling == "&":
            return Use(reference)
        return Use(reference, blocker=f"L{line}: captured by copy")
    if after is not None and after.spelling == "[":
        return Use(reference)
    if _in_unevaluated_operand(unit, reference):
        return Use(reference, blocker=f"L{line}: `sizeof`/`decltype` of `{name}` would measure a std::vector")
    if before is not None and before.spelling == "&":
        return Use(reference, blocker=f"L{line}: `&{name}` takes the address of the whole array")
    parent = reference.parent
    while parent is not None and parent.kind == "PAREN_EXPR":
        parent = parent.parent
    if parent is None:
        return Use(reference, blocker=f"L{line}: a use the parser did not place", category=KeepCategory.UNRESOLVED)
    if parent.kind == "CXX_FOR_RANGE_STMT":
        return Use(reference)  # a std::vector is a range with the same elements
    decay = Edit(token.start, token.end, f"{name}.data()")
    if parent.kind == "UNEXPOSED_EXPR" and parent.cursor.type.get_canonical().kind.name == "POINTER":
        user = parent.parent
        if user is not None and user.kind == "UNEXPOSED_EXPR" and user.cursor.type.get_canonical().kind.name == "BOOL":
            return Use(reference, blocker=f"L{line}: `{name}` used as a truth value")
        return Use(reference, edit=decay)
    if _is_unresolved_call_argument(parent, before, after):
        return Use(reference, edit=decay, unresolved_callee=True)
    return Use(reference, blocker=f"L{line}: `{unit.text(*_line_span(unit, reference.start)).strip()}` uses the array itself")


def _in_unevaluated_operand(unit: CppUnit, reference: Node) -> bool:
    for ancestor in reference.ancestors():
        if ancestor.kind.endswith("_STMT"):
            break
        if ancestor.kind == "CXX_UNARY_EXPR":  # sizeof, alignof
            return True
    before = unit.token_before(reference.start)
    return before is not None and before.spelling in _UNEVALUATED_WORDS


def _is_unresolved_call_argument(parent: Node, before, after) -> bool:
    """An argument of a call clang could not resolve: the callee's parameter is unknown, but a VLA
    cannot bind to a deduced reference, so a call that compiles receives a pointer."""
    dependent = parent.cursor.type.kind.name in ("DEPENDENT", "INVALID")
    return (
        dependent and parent.kind in ("UNEXPOSED_EXPR", "CALL_EXPR")
        and before is not None and before.spelling in _BEFORE_CALL_ARGUMENT
        and after is not None and after.spelling in _AFTER_CALL_ARGUMENT
    )


def _unseen_use(unit: CppUnit, declaration: Node, uses: list[Use]) -> str:
    """A token spelling the array's name that no parsed reference accounts for (code that did not parse)."""
    block = declaration.parent.parent if declaration.parent is not None else None
    end = block.end if block is not None else declaration.end
    seen = {use.node.start for use in uses}
    for token in unit.tokens_in(declaration.end, end):
        if token.spelling != declaration.spelling or token.start in seen:
            continue
        before = unit.token_before(token.start)
        if before is not None and before.spelling in (".", "->", "::"):
            continue  # a member of something else
        return f"L{unit.line_of(token.start)}: a use of `{declaration.spelling}` the parser could not see (code that does not parse without the project's headers)"
    return ""


def _line_span(unit: CppUnit, offset: int) -> tuple[int, int]:
    line = unit.line_of(offset)
    starts = unit.source.line_starts
    return starts[line - 1], starts[line] if line < len(starts) else len(unit.source.text)
