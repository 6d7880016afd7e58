"""Small random PyTorch programs for differential testing of the Python rules (hypothesis strategies).

Every program is one function, `program(src, isrc, flag, n, sink)`, built
from three tables:

- `FACTORIES`: the allocations a rule examines (for OPT101: `zeros`,
  `zeros_like`, `new_zeros`, through `torch`, an alias of it and names
  imported from it), each tagged with the rule code it exercises;
- `USES`: what docs/rules/OPT101.md says can follow an allocation: full
  writes (complementary partial writes, a loop over the size, a whole view,
  `out=` by schema and `nn.init` among them), partial and masked writes,
  views, aliases, in-place reads, escapes, metadata, closures, returns,
  `del`;
- control flow: `if`/`elif`/`else`, `for` and `while` loops that may run
  zero times (with `else`, `break`, `continue`), `with` blocks that do and
  do not suppress exceptions, `try`/`except`/`finally`, `match`, early
  `return`, deliberate exceptions, and `yield`.

A rule's sites are `Factory` rows tagged with its code: OPT102's are
OPT101's allocations moved with `.to(...)`, some through views and copies,
to the device they are already on (the CPU here, named as a tensor's
`.device`: a move spelled `"cpu"` gets advice, not an edit), which OPT102
turns into `device=` and OPT101 into `empty`. Adding a rule means adding rows (and uses in `USES` if it needs
new ones) and its code to `campaign.RULE_CODES`; the generator, the oracle
and the tests are unchanged.

Draws are ordered simplest first, so hypothesis shrinks a failing program
towards a short one with the plainest statements.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

FLOAT, INT = "float", "int"


@dataclass(frozen=True)
class Factory:
    """One allocation expression: `{src}` is an input tensor of the buffer's kind, `{dtype}` its dtype keyword."""

    code: str
    template: str


FACTORIES: tuple[Factory, ...] = (
    Factory("OPT101", "torch.zeros(4, 3{dtype})"),
    Factory("OPT101", "torch.zeros_like({src})"),
    Factory("OPT101", "{src}.new_zeros((4, 3))"),
    Factory("OPT101", "tt.zeros({src}.shape{dtype})"),
    Factory("OPT101", "tt.zeros_like({src})"),
    Factory("OPT101", "tz((4, 3){dtype})"),
    Factory("OPT101", "tzl({src})"),
    Factory("OPT101", "{src}.new_zeros({src}.shape)"),
    Factory("OPT102", "torch.zeros(4, 3{dtype}).to({src}.device)"),
    Factory("OPT102", "tt.zeros((4, 3){dtype}).view(12).view(4, 3).to({src}.device)"),
    Factory("OPT102", "tz(4, 3{dtype}).clone().to({src}.device)"),
    Factory("OPT102", "torch.zeros_like({src}).view(4, 3).to(torch.ones(1).device)"),
)

PRELUDE = """\
import contextlib

import torch
import torch as tt
from torch import zeros as tz, zeros_like as tzl
"""
# Given to every program by the oracle rather than written in it: the analysis stays small and the
# printed minimal program short. `fail_if` raises on purpose; `record` is a call that reads its argument.
HELPERS = """\
import torch

INDEX = torch.tensor([0, 2])


def fail_if(condition):
    if condition:
        raise ValueError("failed on purpose")


def record(sink, value):
    sink.append(value.clone())
"""

# Placeholders: {x} the buffer, {src} an input of its kind, {v} a scalar of its kind, {t} a threshold.
FULL_WRITES = (
    "{x}.copy_({src})",
    "{x}.fill_({v})",
    "{x}[:] = {src}",
    "{x}[...] = {v}",
    "{x}.zero_()",
    "{x}.copy_({src}[1])",
    "{x}[:, :] = {src} * 2",
    "torch.add({src}, 1, out={x})",
    "tt.mul({src}, {src}, out={x})",
    "{x} = {src} + 1",
    "{x}[:2] = {src}[:2]\n{x}[2:] = {src}[2:] - 1",
    "{x}[:, 1::2] = {v}\n{x}[:, 0::2] = {src}[:, 0::2]",
    "{x}[0], {x}[1:] = {src}[0], {src}[1:]",
    "for row in range({x}.shape[0]):\n    {x}[row] = {src}[row] + row",
    "{x}.view(12).copy_({src}.reshape(12))",
    "torch.cumsum({src}, dim=0, out={x})",
    "torch.nn.init.constant_({x}, {v})",
)
FLOAT_FULL_WRITES = (
    "{x}.uniform_()", "{x}.normal_()", "{x}.bernoulli_(0.5)", "{x}.exponential_()", "{x}.geometric_(0.5)",
    "{x}.log_normal_()", "{x}.cauchy_()",
)
INT_FULL_WRITES = ("{x}.random_(0, 10)",)
USES: dict[str, tuple[str, ...]] = {
    "partial write": (
        "{x}[0] = {v}", "{x}[:2] = {src}[:2]", "{x}[:, 1:] = {v}", "{x}[::2] = {v}", "{x}[{src} > {t}] = {v}",
        "{x}[:1] = {v}\n{x}[2:] = {src}[2:]", "for row in range(n):\n    {x}[row] = {v}",
        "{x}.masked_fill_({src} > {t}, {v})", "{x}.index_fill_(0, INDEX, {v})", "{x}.index_put_((INDEX,), {src}[:2])",
    ),
    "view": (
        "{x}[:2].fill_({v})", "{x}.narrow(0, 1, 2).copy_({src}[1:3])", "{x}.view(-1)[:5] = {v}",
        "{x}.view(-1).fill_({v})", "{x}.t().copy_({src}.t())",
    ),
    "alias": ("alias = {x}\nalias.fill_({v})", "alias = {x}[1:]\nalias.zero_()", "alias = {x}\nsink.append(alias)"),
    "in-place read": (
        "{x} += {src}", "{x}.add_({src})", "{x}.mul_(2)", "{x}.index_add_(0, INDEX, {src}[:2])",
        "{x}.index_put_((INDEX,), {src}[:2], accumulate=True)", "{x}[:] += 1", "{x}.copy_({x} + {src})",
    ),
    "escape": (
        "sink.append({x}.clone())", "sink.append({x}.sum())", "record(sink, {x})", "sink.append({x})",
        "sink.append(({x} + 1).max())",
    ),
    "metadata": (
        "sink.append({x}.shape[0] + {x}.numel() + len({x}) + {x}.dim())", "sink.append({x}.dtype)",
        "sink.append(torch.empty_like({x}).shape)",
        "sink.append(tuple({x}.size()))", "assert {x}.device == {src}.device",
    ),
    "closure": ("peek = lambda: {x}.sum()\nsink.append(peek())",),
}
SCALARS = {FLOAT: ("1.5", "-2.0"), INT: ("3", "7")}
THRESHOLDS = {FLOAT: "0.0", INT: "5"}
SOURCES = {FLOAT: "src", INT: "isrc"}
CONDITIONS = ("flag", "not flag", "n > 0", "n == 1", "{x}.shape[0] > 2")
MANAGERS = ("torch.no_grad()", "contextlib.suppress(ValueError)", "tt.no_grad()", "contextlib.nullcontext()")
MAX_DEPTH = 2


class _Builder:
    """Draws one program's statements; `draw` is hypothesis's."""

    def __init__(self, draw, factories: tuple[Factory, ...]):
        self.draw = draw
        self.factories = factories
        self.kinds: dict[str, str] = {}
        self.loop_counters = 0

    # -- pieces --------------------------------------------------------------------

    def allocation(self, name: str) -> str:
        kind = self.kinds[name]
        factory = self.draw(st.sampled_from(self.factories))
        dtype = "" if kind == FLOAT else ", dtype=torch.int64"
        return f"{name} = " + factory.template.format(src=SOURCES[kind], dtype=dtype)

    def fill(self, template: str, name: str) -> list[str]:
        kind = self.kinds[name]
        text = template.format(
            x=name, src=SOURCES[kind], v=self.draw(st.sampled_from(SCALARS[kind])), t=THRESHOLDS[kind]
        )
        return text.splitlines()

    def full_write(self, name: str) -> list[str]:
        extra = FLOAT_FULL_WRITES if self.kinds[name] == FLOAT else INT_FULL_WRITES
        return self.fill(self.draw(st.sampled_from(FULL_WRITES + extra)), name)

    def use(self, name: str) -> list[str]:
        category = self.draw(st.sampled_from(("full write", *USES)))
        if category == "full write":
            return self.full_write(name)
        return self.fill(self.draw(st.sampled_from(USES[category])), name)

    # -- statements ------------------------------------------------------------------

    def block(self, depth: int, in_loop: bool) -> list[str]:
        lines: list[str] = []
        for _ in range(self.draw(st.integers(1, 3))):
            lines.extend(self.statement(depth, in_loop))
        return lines

    def statement(self, depth: int, in_loop: bool) -> list[str]:
        name = self.draw(st.sampled_from(sorted(self.kinds)))
        choices = ["use", "use", "allocate", "exit"]
        if depth < MAX_DEPTH:
            choices += ["if", "for", "while", "with", "try", "match"]
        if in_loop:
            choices.append("jump")
        choice = self.draw(st.sampled_from(choices))
        if choice == "use":
            return self.use(name)
        if choice == "allocate":
            return [self.allocation(name)]
        if choice == "exit":
            exits = ("fail_if(flag)", "fail_if(n == 1)", f"del {name}", f"yield {name}.clone()", "return sink", f"return {name}")
            return [self.draw(st.sampled_from(exits))]
        if choice == "jump":
            return self.draw(st.sampled_from(("if flag:\n    break", "if n == 1:\n    continue", "break", "continue"))).splitlines()
        return getattr(self, f"compound_{choice}")(name, depth, in_loop)

    def compound_if(self, name: str, depth: int, in_loop: bool) -> list[str]:
        condition = self.draw(st.sampled_from(CONDITIONS)).format(x=name)
        lines = [f"if {condition}:", *_indent(self.block(depth + 1, in_loop))]
        shape = self.draw(st.sampled_from(("else", "none", "elif")))
        if shape == "elif":
            lines += [f"elif {self.draw(st.sampled_from(CONDITIONS)).format(x=name)}:", *_indent(self.block(depth + 1, in_loop))]
        if shape in ("else", "elif"):
            lines += ["else:", *_indent(self.block(depth + 1, in_loop))]
        return lines

    def compound_for(self, name: str, depth: int, in_loop: bool) -> list[str]:
        lines = ["for i in range(n):", *_indent(self.block(depth + 1, True))]
        if self.draw(st.booleans()):
            lines += ["else:", *_indent(self.block(depth + 1, in_loop))]
        return lines

    def compound_while(self, name: str, depth: int, in_loop: bool) -> list[str]:
        self.loop_counters += 1
        counter = f"k{self.loop_counters}"
        # The counter moves first, so a `continue` in the body cannot loop forever.
        lines = [f"{counter} = 0", f"while {counter} < n:", f"    {counter} += 1", *_indent(self.block(depth + 1, True))]
        if self.draw(st.booleans()):
            lines += ["else:", *_indent(self.block(depth + 1, in_loop))]
        return lines

    def compound_with(self, name: str, depth: int, in_loop: bool) -> list[str]:
        manager = self.draw(st.sampled_from(MANAGERS))
        return [f"with {manager}:", *_indent(self.block(depth + 1, in_loop))]

    def compound_try(self, name: str, depth: int, in_loop: bool) -> list[str]:
        lines = ["try:", *_indent(self.block(depth + 1, in_loop))]
        shape = self.draw(st.sampled_from(("except", "finally", "both")))
        if shape in ("except", "both"):
            lines += ["except ValueError:", *_indent(self.block(depth + 1, in_loop) if self.draw(st.booleans()) else ["pass"])]
        if shape in ("finally", "both"):
            lines += ["finally:", *_indent(self.block(depth + 1, in_loop))]
        return lines

    def compound_match(self, name: str, depth: int, in_loop: bool) -> list[str]:
        return [
            "match n:",
            "    case 0:", *_indent(self.block(depth + 1, in_loop), 8),
            "    case _:", *_indent(self.block(depth + 1, in_loop), 8),
        ]

    # -- the whole program --------------------------------------------------------------

    def program(self) -> str:
        for name in self.draw(st.sampled_from((("x",), ("x", "y")))):
            self.kinds[name] = self.draw(st.sampled_from((FLOAT, INT)))
        body = [self.allocation(name) for name in self.kinds]
        # Half the time the first statement overwrites the buffer, so that provable sites are common.
        if self.draw(st.booleans()):
            body += self.full_write("x")
        body += self.block(0, False)
        final = self.draw(st.sampled_from(("return x, sink", "return sink", "return x.sum(), sink")))
        lines = ["def program(src, isrc, flag, n, sink):", *_indent(body + [final])]
        return PRELUDE + "\n" + "\n".join(lines) + "\n"


def _indent(lines: list[str], width: int = 4) -> list[str]:
    return [" " * width + line for line in lines]


def programs(codes: tuple[str, ...] = ("OPT101",)) -> st.SearchStrategy[str]:
    """The source of programs whose allocations come from the factories of `codes`."""
    factories = tuple(f for f in FACTORIES if f.code in codes)
    if not factories:
        raise ValueError(f"no factories registered for {codes}; add Factory rows to tests/fuzz/programs.py")

    @st.composite
    def build(draw):
        return _Builder(draw, factories).program()

    return build()
