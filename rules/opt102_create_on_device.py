from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import libcst as cst

from optpatch.planner import preview
from optpatch.python_edits import FormattedEdits, string_literal
from optpatch.python_frontend import PythonModule, walk
from optpatch.python_screen import CallIndex, callee_name
from optpatch.rule import Context, Edit, Example, Finding, Impact, KeepCategory, Rule, Tier
from optpatch.analysis.torch_api import (
    CONSTANT_FACTORIES,
    DATA_FACTORIES,
    LIKE_FACTORIES,
    RANDOM_FACTORIES,
    ZERO_ONE_FACTORIES,
    exact_in,
    keyword_arg,
)
from optpatch.analysis.torch_values import Kind, Move, classify, factory_name, move_method, on_cpu, parse_move, torch_callee

DEVICE_BASIS = (
    "generates the values on the device instead of on the host plus a blocking copy: `arange(1e6).cuda()` -> "
    "`device='cuda'` measured 846-1336 us -> 11-12 us (70-115x) on an H100 (RULES.md), 780 -> 11 us and "
    "`zeros(1e6)` 433 -> 11 us (docs/benchmarks.md, H100); the host form also waits for all queued GPU work "
    "(5864 -> 76 us with 5 ms queued)"
)
DATA_BASIS = (
    "`torch.tensor(list_of_1024).cuda()` -> `device='cuda'` measured no gain (5041 vs 5041 us with 5 ms of GPU "
    "work queued, H100, docs/benchmarks.md): the data starts in host memory and both forms wait; "
    "`pin_memory=True` + `non_blocking=True` measured 5035 -> 292 us (17x)"
)
FROM_NUMPY_BASIS = (
    "the array's data crosses from host memory either way: `from_numpy(a).cuda()` 415 us vs "
    "`as_tensor(a, device='cuda')` 399 us for 1e6 floats on an H200 (torch 2.11); saves one wrapper tensor"
)
ONCE_BASIS = "one-time creation (module level, __init__, set-up): the saving is paid once, not per step"
CPU_BASIS = "moves to the CPU, where the tensor already is: `.to('cpu')` returns it unchanged, nothing to save"


class CreateOnDevice(Rule):
    """
    Create tensors on their device (`torch.zeros(n, device=d)`) instead of on the host followed by `.to(d)`.

    ## What it does
    Finds a torch factory whose result is moved at once: `F(args).to(d)`,
    `F(args).to(device=d)`, `F(args).to(d, non_blocking=...)`,
    `F(args).cuda()`, `F(args).cuda(i)`, and the two-statement form
    `t = F(args)` followed by `t = t.to(d)` with no use of `t` in between,
    and rewrites it to `F(args, device=d)`. `F` is a real torch factory,
    resolved through imports: `zeros`, `ones`, `empty`, `full`, `eye`,
    `arange`, `linspace`, `logspace`, the `*_like` factories when the
    template is on the CPU, the random factories, `tensor` and `as_tensor`
    (advice only, see below). `torch.from_numpy(a).to(d)` becomes
    `torch.as_tensor(a, device=d)`.

    `d` must be a device: a device string (`"cuda:0"`), an f-string,
    `torch.device(...)`, `x.device`, an integer index, or a name whose every
    binding in scope is one of those or whose annotation says so
    (`torch.device`, `str`, `int`, their `Optional`/`Union`). `.cuda()`
    becomes `device="cuda"` (the current CUDA device, as `.cuda()` means),
    `.cuda(0)` becomes `device="cuda:0"`, `.cuda(i)` for an integer
    expression `device=f"cuda:{i}"`. `.to(d, dtype)` merges the dtype too
    (`device=d, dtype=dtype`) when the conversion is exact.

    ## Why is this bad
    `torch.arange(n).cuda()` computes the values on the CPU, then copies them
    to the GPU with a synchronous copy that first waits for every kernel
    already queued. `torch.arange(n, device="cuda")` launches one kernel and
    returns at once.

    ## Example
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n).to(device)
    ```

    ## Use instead
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n, device=device)
    ```

    ## Fix safety
    `safe` when every obligation holds: `F` is one of the factories above with
    no `device=`, `out=`, `generator=`, `**kwargs` or `pin_memory=True`; the
    move target is provably a device (never `.to(dtype)`,
    `.to(other_tensor)`, `.to(memory_format=...)`, `.to(None)`); the values do
    not depend on the device that computes them (zeros, ones, empty, full,
    eye, `arange` with integer start and step, `*_like` of a CPU template);
    and a merged dtype is exact. The two-statement form also needs the
    statements between the two to leave `t`, the names in `d` and the current
    device alone (no calls in between).

    `validate`: the target is a device only by its name (a parameter called
    `device` with no annotation, `get_accelerator().device_name()`);
    `.cuda(x)` with an `x` that may not name a CUDA device (`.cuda(x)`
    raises there, `device=x` would not); `linspace`, whose device kernel was
    measured bit-identical on an H200 but is not proven to be;
    `torch.from_numpy(a).to(d)` -> `torch.as_tensor(a, device=d)` (it
    accepts inputs that `from_numpy` rejects).

    `unsafe`: random factories (`rand`, `randn`, `randint`, `randperm`,
    `normal`, `*_like`) draw from the device's generator, so the numbers
    change; `logspace` and `arange` with a fractional start or step round
    differently on the device (measured on an H200: 964 of 1000 values of
    `logspace(-10, 10, 1000)` and 864 of 2702 of `arange(0.5, 1000, 0.37)`
    differ in the last bits); `requires_grad=True`, because
    `F(..., requires_grad=True).to(d)` is a non-leaf copy of a CPU leaf
    whereas `device=` makes the result itself the leaf that receives `.grad`.

    Kept, with the reason: a factory that already has `device=` (never a
    second one), a call that is not a factory (`torch.cat(...).to(d)`), a
    `*_like` whose template may already be on the device, a merged dtype
    that is not exact (`torch.full(s, 0.1).to(d, torch.float64)`: the
    float32 value widened is not the float64 value), `pin_memory=True`
    factories and `x.pin_memory().to(d, non_blocking=True)` (a pinned
    staging buffer for an asynchronous copy is deliberate, and
    `pin_memory=True` with a CUDA `device=` is an error).

    `torch.tensor(data)` / `torch.as_tensor(data)` followed by a move get
    advice, not a fix: the data starts in host memory, so `device=` saves
    nothing (measured); what helps is `pin_memory=True` on the host tensor
    and `.to(d, non_blocking=True)`, which stops the copy from waiting for
    queued GPU work.

    ## Known problems
    Names are resolved within one file and flow-insensitively: a name is a
    device only when every binding in its scope is one. Any `.device`
    attribute counts as a device (`self.device`, `args.device`): `.to()` and
    `device=` read a string, an index, a `torch.device` or None the same way.
    The default device is assumed to be the CPU when a `*_like` template
    comes from a factory without `device=` (`torch.set_default_device` is not
    tracked); that only affects whether the rewrite saves anything.

    Found on DeepSpeed and apex (34 and 38 rewrites, all read by hand):
    - `get_accelerator().device_name()` and `.current_device_name()`,
      DeepSpeed's usual device spellings, cannot be proven from one file:
      those sites are `validate`. `.to(int)` / `.to(bool)` are dtype
      conversions (Python scalar types), never devices; `.to(dtype)` with a
      parameter named `dtype` is read as a dtype.
    - A file that gets `torch` only through a star import
      (`deepspeed/runtime/zero/stage3.py`) has no resolvable factories: a
      false negative, never a wrong rewrite.
    - `torch.randn(...).half().cuda()` is not rewritten: the move's receiver
      is a conversion, and `randn(..., dtype=torch.half)` draws different
      numbers. Legacy constructors (`torch.LongTensor(...)`,
      `torch.Tensor([...])`) and `nn.Module`s are not factories and are not
      reported.
    - `device, dims = x.device, x.size(1)` is followed element by element;
      other unpacking (`device, dims = f()`) is not.
    - In the two-statement form, an exception raised between the two
      statements and caught in the same function would find `t` already on
      the device; statements with calls in between keep the site.
    - A rewrite that enables an OPT101 fix in the two-statement form
      (`t = torch.zeros(n)`; `t = t.to(d)`; `t.copy_(x)`) is seen by OPT101
      only on the next run; the chained form (`torch.zeros(n).cuda()`) gets
      both fixes at once.
    - RULES.md allows a merged dtype for "a float factory to a wider type";
      that is not exact (`torch.full(s, 0.1).to(d, torch.float64)` holds
      float32's 0.1, `dtype=torch.float64` holds float64's), so only 0/1
      factories (any dtype) and integer factories (to an equal or wider
      integer) merge.

    The edit is written the way the project's formatter would write it
    (docs/formatting.md): under black or ruff, the statement is laid out
    again as they lay it out, so `device=` joins a call kept exploded on a
    line of its own with a trailing comma, a line that would pass the limit
    is split, and a `.cuda()` literal takes the project's quotes. Where
    optpatch does not reproduce the formatter's layout of the statement (a
    lambda, nested conditional expressions or a tuple under ruff, a file the
    formatter would change anyway), the edit keeps the statement's own
    layout within the line limit; `--format-command` runs the formatter.

    ## Measured impact
    `torch.arange(1e6).cuda()` -> `torch.arange(1e6, device='cuda')`:
    846-1336 us -> 11-12 us (70-115x) on an H100 (RULES.md); 780 -> 11 us,
    and `zeros(1e6)` 433 -> 11 us, on an H100 in docs/benchmarks.md, where
    with 5 ms of GPU work queued the host form took 5864 us and `device=` 76
    us. On an H200 with torch 2.11: `arange(1e6)` 1253 -> 15 us, `zeros(1e6)`
    749 -> 15 us, `linspace(0, 1, 1e6)` 778 -> 16 us, `zeros(16)` 21 -> 16
    us. `torch.tensor(list_of_1024).cuda()`: no gain from `device=` (5041 vs
    5041 us with 5 ms queued), 5035 -> 292 us with `pin_memory=True` and
    `non_blocking=True` (H100, docs/benchmarks.md). `from_numpy(a).cuda()`
    415 us vs `as_tensor(a, device='cuda')` 399 us for 1e6 floats (H200).
    One-time creation (module level, `__init__`, set-up) is reported as low
    value.

    ## References
    - https://pytorch.org/docs/stable/tensor_attributes.html#torch.device
    - https://pytorch.org/docs/stable/generated/torch.Tensor.to.html
    - https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html#create-tensors-directly-on-the-target-device
    - https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html
    """

    code = "OPT102"
    name = "create-on-device"
    summary = "torch.zeros(n).to(d) -> torch.zeros(n, device=d) where d is provably a device"
    language = "python"
    default_tier = "safe"
    tags = ("performance", "transfer")
    trigger_words = (".to(", ".cuda(")

    VALID = [
        # A dtype conversion, not a device.
        "import torch\ndef f(n):\n    return torch.zeros(n).to(torch.float16)\n",
        # Python's int is a dtype in `.to()`.
        "import torch\ndef f(n):\n    return torch.arange(n).to(int)\n",
        # Not a factory.
        "import torch\ndef f(a, b, d: torch.device):\n    return torch.cat([a, b]).to(d)\n",
        # Already has device=: never a second one.
        "import torch\ndef f(n, d: torch.device):\n    return torch.zeros(n, device='cpu').to(d)\n",
        # Another tensor's device and dtype.
        "import torch\ndef f(n, other: torch.Tensor):\n    return torch.zeros(n).to(other)\n",
        # Deliberate pinned staging for an asynchronous copy.
        "import torch\ndef f(x, d: torch.device):\n    return x.pin_memory().to(d, non_blocking=True)\n",
        # numpy is not torch.
        "import numpy as np\ndef f(n, d: str):\n    return np.zeros(n).to(d)\n",
        # Not exact: float32(0.1) widened is not float64(0.1).
        "import torch\ndef f(d: torch.device):\n    return torch.full((4,), 0.1).to(d, torch.float64)\n",
    ]
    INVALID = [
        Example(
            "import torch\ndef f(n):\n    return torch.arange(n).cuda()\n",
            'import torch\ndef f(n):\n    return torch.arange(n, device="cuda")\n',
        ),
        Example(
            "import torch as t\ndef f(n, d: t.device):\n    return t.zeros(n, dtype=t.int32).to(d, non_blocking=True)\n",
            "import torch as t\ndef f(n, d: t.device):\n    return t.zeros(n, dtype=t.int32, device=d)\n",
        ),
        Example(
            "import torch\ndef f(x, n):\n    y = torch.ones(\n        n,\n    ).to(x.device)\n    return y\n",
            "import torch\ndef f(x, n):\n    y = torch.ones(\n        n,\n        device=x.device,\n    )\n    return y\n",
        ),
        Example(
            "import torch\ndef f(n):\n    dev = torch.device('cuda', 1)\n    t = torch.eye(n)\n    t = t.to(dev)\n    return t\n",
            "import torch\ndef f(n):\n    dev = torch.device('cuda', 1)\n    t = torch.eye(n, device=dev)\n    return t\n",
        ),
        Example(
            "import torch\ndef f(n, device):\n    return torch.zeros(n).to(device)\n",
            "import torch\ndef f(n, device):\n    return torch.zeros(n, device=device)\n",
            tier="validate",
        ),
        Example(
            "import torch\ndef f(n):\n    return torch.randn(n, 4).cuda(0)\n",
            'import torch\ndef f(n):\n    return torch.randn(n, 4, device="cuda:0")\n',
            tier="unsafe",
        ),
    ]

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files with a move `check` looks at (`needs`). Most files with `.to(` hold none
        (DeepSpeed 100 of 157, NeMo 269 of 426).
        """
        return bool(cls.needs(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The moves of the two forms `check` looks at: `<call>(...).to(...)` where the inner call is
        a torch function (through an import of torch) or `pin_memory()`, and `t = t.to(...)` where
        `t` is assigned a torch call somewhere in the module (`check` reads that assignment in the
        same block, so in the same function). Nothing else: devices and dtypes come from the
        function, its parameters, enclosing functions and module-level statements.
        """
        moves = []
        for move in calls.named("to", "cuda"):
            if not isinstance(move.func, ast.Attribute):
                continue
            receiver = move.func.value
            if isinstance(receiver, ast.Call):
                if calls.calls_torch(receiver) or callee_name(receiver) == "pin_memory":
                    moves.append(move)
            elif isinstance(receiver, ast.Name) and calls.assigned_to(move) == receiver.id:
                if any(calls.calls_torch(source) for source in calls.calls_assigned(receiver.id)):
                    moves.append(move)
        return moves

    def check(self, module: PythonModule) -> Iterator[Finding]:
        for call in module.calls():
            if move_method(call) is None:
                continue
            receiver = call.func.value
            if isinstance(receiver, cst.Call):
                finding = self._chained(module, call, receiver)
            elif isinstance(receiver, cst.Name):
                finding = self._two_statement(module, call, receiver)
            else:
                finding = None
            if finding is not None:
                yield finding

    # -- the two forms ---------------------------------------------------------------------------

    def _chained(self, module: PythonModule, move_call: cst.Call, inner: cst.Call) -> Finding | None:
        """`F(args).to(d)` / `F(args).cuda(i)`; also the keeps that look like it."""
        factory = factory_name(module, inner)
        callee = factory or torch_callee(module, inner)
        if callee is None:
            if _is_method(inner, "pin_memory"):
                site = Site(inner, move_call, "pin_memory", parse_move(module, move_call))
                if site.move.blocker is None:
                    return self._keep(module, site, Kept(
                        "`x.pin_memory().to(...)`: a pinned staging buffer for an asynchronous copy is deliberate",
                        KeepCategory.DELIBERATE))
            return None
        site = Site(inner, move_call, callee, parse_move(module, move_call))
        if factory is None and callee != "torch.from_numpy":
            if site.move.blocker is not None or not _is_function(callee):
                return None  # a conversion of some other tensor, or a module or legacy class: not this rule's business
            return self._keep(module, site, Kept(
                f"`{callee}` is not a factory: it has no `device=` to create its result on the device", KeepCategory.NOT_A_FACTORY))
        return self._judge(module, site)

    def _two_statement(self, module: PythonModule, move_call: cst.Call, receiver: cst.Name) -> Finding | None:
        """`t = F(args)` then, with no use of `t` in between, `t = t.to(d)`."""
        name = receiver.value
        assign = module.parent(move_call)
        if not (isinstance(assign, cst.Assign) and assign.value is move_call and len(assign.targets) == 1):
            return None
        target = assign.targets[0].target
        line = module.parent(assign)
        block = module.parent(line) if line is not None else None
        if not (isinstance(target, cst.Name) and target.value == name and isinstance(line, cst.SimpleStatementLine)
                and len(line.body) == 1 and isinstance(block, (cst.IndentedBlock, cst.Module))):
            return None
        index = next(i for i, statement in enumerate(block.body) if statement is line)
        device_names = {n.value for arg in move_call.args for n in walk(arg) if isinstance(n, cst.Name)}
        blocker = None
        for statement in reversed(block.body[:index]):
            if _mentions(module, statement, name):
                inner = _factory_assignment(statement, name)
                if inner is None:
                    return None
                callee = factory_name(module, inner) or torch_callee(module, inner)
                if callee not in _ALL_SOURCES:
                    return None
                site = Site(inner, move_call, callee, parse_move(module, move_call), second=line)
                if name in device_names:
                    return self._keep(module, site, Kept(f"the device expression reads `{name}` itself", KeepCategory.OTHER))
                if blocker is not None:
                    return self._keep(module, site, blocker)
                return self._judge(module, site)
            if blocker is None:
                blocker = _intervening_blocker(module, statement, device_names)
        return None

    # -- the verdict ----------------------------------------------------------------------------

    def _judge(self, module: PythonModule, site: Site) -> Finding:
        move = site.move
        if move.blocker is not None:
            return self._keep(module, site, Kept(move.blocker, move.blocker_category))
        device = _device_spelling(module, move)
        if isinstance(device, Kept):
            return self._keep(module, site, device)
        factory_problem = _factory_blocker(module, site)
        if factory_problem is not None:
            return self._keep(module, site, factory_problem)
        if site.callee in DATA_FACTORIES:
            return self._advice(module, site)
        tier, reasons = device.tier, [device.reason]
        for check in (_dtype_merge, _value_tier, _autograd_tier):
            outcome = check(module, site)
            if isinstance(outcome, Kept):
                return self._keep(module, site, outcome)
            if outcome is not None:
                tier = max(tier, outcome[0], key=lambda t: t.strictness)
                reasons.append(outcome[1])
        edits = _edits(module, site, device)
        if isinstance(edits, Kept):
            return self._keep(module, site, edits)
        return self._fix(module, site, device, tier, reasons, edits)

    # -- findings --------------------------------------------------------------------------------

    def _fix(self, module, site: Site, device: DeviceSpelling, tier: Tier, reasons: list[str], edits: list[Edit]) -> Finding:
        context = module.context(site.factory)
        impact, basis = _impact(site, device, context)
        start, end = module.span(site.factory)
        _, move_end = module.span(site.move_call)
        replacement = preview(module.source.text, start, move_end if site.second is None else end, edits)
        if site.second is None:
            form = f"`.{site.move.method}()` on the result"
        else:
            form = f"`{module.text(site.second.body[0])}` on L{module.start(site.second)[0]}"
        reason = f"`{site.callee}(...)` then {form}: create it on the device instead; " + "; ".join(reasons)
        return self.fix(module, module.start(site.factory), reason=reason, tier=tier, edits=edits, context=context,
                        impact=impact, basis=basis, replacement=replacement, proof=reasons)

    def _advice(self, module, site: Site) -> Finding:
        reason = (
            f"`{site.callee}(...)` copies host data: `device=` would save nothing (measured). To stop the copy "
            "from waiting for queued GPU work, create it with `pin_memory=True` and move it with "
            "`.to(device, non_blocking=True)` (measured 17x with 5 ms of GPU work queued)"
        )
        return self.advice(module, module.start(site.factory), reason=reason, context=module.context(site.factory),
                           basis=DATA_BASIS)

    def _keep(self, module, site: Site, kept: "Kept") -> Finding:
        return self.keep(module, module.start(site.factory), reason=kept.reason, category=kept.category,
                         context=module.context(site.factory))


class Kept(NamedTuple):
    """Why a site is kept, and which kind of reason that is."""

    reason: str
    category: KeepCategory


# -- what a site is -----------------------------------------------------------------------------------

_ALL_SOURCES = CONSTANT_FACTORIES | LIKE_FACTORIES | RANDOM_FACTORIES | DATA_FACTORIES | {
    "torch.arange", "torch.linspace", "torch.logspace", "torch.from_numpy"}


@dataclass(frozen=True)
class Site:
    factory: cst.Call  # the factory call, F(args)
    move_call: cst.Call  # `.to(...)` / `.cuda(...)`
    callee: str  # `torch.zeros`, `torch.from_numpy`, `pin_memory`
    move: Move
    second: cst.SimpleStatementLine | None = None  # `t = t.to(d)` in the two-statement form


@dataclass(frozen=True)
class DeviceSpelling:
    """The text of `device=` and how sure we are that it means what the move meant."""

    text: str
    tier: Tier
    reason: str
    device_type: str | None


def _device_spelling(module: PythonModule, move: Move) -> DeviceSpelling | Kept:
    """`device=` text for the move, or why it cannot be written."""
    if move.method == "cuda":
        return _cuda_spelling(module, move)
    value = move.device_value
    assert value is not None and move.device is not None
    if value.kind is Kind.NONE:
        return Kept("`.to(None)` moves nothing", KeepCategory.NOT_A_DEVICE)
    text = _expression_text(module, move.device)
    if value.proven:
        return DeviceSpelling(text, Tier.SAFE, f"`{text}` is a device: {value.evidence}", value.device_type)
    return DeviceSpelling(text, Tier.VALIDATE, f"`{text}` may not be a device: {value.evidence}", value.device_type)


def _cuda_spelling(module: PythonModule, move: Move) -> DeviceSpelling | Kept:
    value = move.device_value
    if move.device is None or (value is not None and value.kind is Kind.NONE):
        return DeviceSpelling(string_literal(module, "cuda"), Tier.SAFE,
                              "`.cuda()` means the current CUDA device, as `device=\"cuda\"` does", "cuda")
    assert value is not None
    text = _expression_text(module, move.device)
    if isinstance(move.device, cst.Integer):
        return DeviceSpelling(string_literal(module, f"cuda:{move.device.evaluated_value}"), Tier.SAFE,
                              f"`.cuda({text})` is CUDA device {text}", "cuda")
    if value.kind is Kind.INTEGER:
        if any(c in text for c in "\"\\\n{}") or "'" in text:
            return Kept(f"cannot spell `.cuda({text})` as an f-string device", KeepCategory.CANNOT_SPELL)
        tier = Tier.SAFE if value.proven else Tier.VALIDATE
        return DeviceSpelling(string_literal(module, f"cuda:{{{text}}}", prefix="f"), tier,
                              f"`{text}` is a device index: {value.evidence}", "cuda")
    if value.kind is Kind.DEVICE and value.proven and value.device_type == "cuda":
        return DeviceSpelling(text, Tier.SAFE, f"`{text}` is a CUDA device: {value.evidence}", "cuda")
    if value.kind is Kind.DEVICE:
        return DeviceSpelling(
            text, Tier.VALIDATE,
            f"`.cuda({text})` raises unless `{text}` names a CUDA device, `device={text}` would not ({value.evidence})",
            value.device_type,
        )
    return Kept(f"`.cuda({text})`: {value.evidence}", KeepCategory.NOT_A_DEVICE)


def _expression_text(module: PythonModule, node: cst.BaseExpression) -> str:
    text = module.text(node)
    return f"({text})" if isinstance(node, (cst.NamedExpr, cst.Lambda, cst.IfExp)) and not text.startswith("(") else text


def _factory_blocker(module: PythonModule, site: Site) -> Kept | None:
    """Why the factory call itself cannot take `device=`."""
    call = site.factory
    for keyword, reason, category in (
        ("device", "already has `device=`: `.{m}()` moves it afterwards; change that `device=` instead (never a second one)",
         KeepCategory.DEVICE_ALREADY_SET),
        ("out", "`out=` writes into an existing tensor, whose device is fixed", KeepCategory.OUT_TARGET),
        ("generator", "`generator=` names a generator, which is tied to one device", KeepCategory.OTHER),
    ):
        if keyword_arg(call, keyword) is not None:
            return Kept(reason.format(m=site.move.method), category)
    if any(arg.star == "**" for arg in call.args):
        return Kept("`**kwargs` may already carry `device=`", KeepCategory.OTHER)
    pinned = keyword_arg(call, "pin_memory")
    if pinned is not None and not _is_false(pinned.value):
        return Kept("`pin_memory=True`: a pinned staging buffer for an asynchronous copy is deliberate, and "
                    "`pin_memory=True` with a CUDA `device=` is an error", KeepCategory.DELIBERATE)
    positional = [arg for arg in call.args if arg.keyword is None]
    if site.callee == "torch.as_tensor" and len(positional) > 1:
        return Kept("`as_tensor` with positional dtype or device arguments", KeepCategory.CANNOT_SPELL)
    if site.callee == "torch.from_numpy" and (len(call.args) != 1 or positional != list(call.args)):
        return Kept("`from_numpy` with other than one positional argument", KeepCategory.CANNOT_SPELL)
    if site.callee in LIKE_FACTORIES | {"torch.rand_like", "torch.randn_like", "torch.randint_like"}:
        template = positional[0].value if positional else getattr(keyword_arg(call, "input"), "value", None)
        evidence = on_cpu(module, template) if template is not None else None
        if evidence is None:
            return Kept("the template's device is unknown: if it is already on the device, `.to()` is free and "
                        "`device=` saves nothing", KeepCategory.UNKNOWN_TEMPLATE)
    return None


def _dtype_merge(module: PythonModule, site: Site):
    """`.to(d, dtype)`: merged only when the factory has no dtype= and converting its values is exact."""
    move = site.move
    if move.dtype is None:
        return None
    dtype_text = module.text(move.dtype)
    value = move.dtype_value
    if keyword_arg(site.factory, "dtype") is not None:
        return Kept(f"the factory has `dtype=` and the move converts to `{dtype_text}`: two conversions, kept",
                    KeepCategory.INEXACT_CONVERSION)
    if site.callee in ZERO_ONE_FACTORIES and value is not None and value.kind is Kind.DTYPE:
        return Tier.SAFE, f"every value of `{site.callee}` is 0 or 1 (or unset), exact in any dtype ({value.evidence})"
    if value is None or value.kind is not Kind.DTYPE or value.dtype is None:
        return Kept(f"`.to(..., {dtype_text})`: the dtype is not known exactly ({value.evidence if value else 'unknown'})",
                    KeepCategory.INEXACT_CONVERSION)
    source = _integer_source_dtype(module, site)
    if source is not None and exact_in(source, value.dtype):
        return Tier.SAFE, f"`{site.callee}` makes {source} values here, exact in `{value.dtype}`"
    return Kept(f"`{site.callee}` computes its values in its own dtype before `.to(..., {dtype_text})` converts them; "
                "computing them in the new dtype is not proven to give the same values", KeepCategory.INEXACT_CONVERSION)


def _integer_source_dtype(module: PythonModule, site: Site) -> str | None:
    """torch.int64 when the factory's values are Python integers (arange of ints, full with an int)."""
    positional = [arg.value for arg in site.factory.args if arg.keyword is None]
    if site.callee == "torch.arange" and positional and all(classify(module, p).kind is Kind.INTEGER and classify(module, p).proven for p in positional):
        return "torch.int64"
    if site.callee == "torch.full" and len(positional) == 2 and isinstance(positional[1], cst.Integer):
        return "torch.int64"
    return None


def _value_tier(module: PythonModule, site: Site):
    """Do the values depend on the device that computes them?"""
    callee = site.callee
    if callee in RANDOM_FACTORIES:
        return Tier.UNSAFE, "random values: the device's generator draws different numbers than the CPU's"
    if callee == "torch.logspace":
        return Tier.UNSAFE, "logspace rounds differently on the device (964 of 1000 values differed on an H200)"
    if callee == "torch.linspace":
        return Tier.VALIDATE, "linspace is computed by the device's kernel: measured bit-identical on an H200, not proven"
    if callee == "torch.arange":
        fractional = _fractional_arange_argument(module, site.factory)
        if fractional is not None:
            return Tier.UNSAFE, (f"arange with a start or step `{fractional}` that may be fractional rounds differently on "
                                 "the device (864 of 2702 values of arange(0.5, 1000, 0.37) differed on an H200)")
        return Tier.SAFE, "arange with integer start and step: the same integers on every device"
    if callee == "torch.from_numpy":
        return Tier.VALIDATE, "`as_tensor` also accepts what `from_numpy` rejects (lists, scalars), so a failure would pass silently"
    return None


def _fractional_arange_argument(module: PythonModule, call: cst.Call) -> str | None:
    """The start or step of `arange` that is not provably an integer (the end only sets the count)."""
    positional = [arg.value for arg in call.args if arg.keyword is None]
    keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
    if len(positional) == 1:
        values = [keywords.get("step")]
    else:
        values = [positional[0], positional[2] if len(positional) > 2 else keywords.get("step")]
    values.append(keywords.get("start"))
    for value in values:
        if value is not None:
            found = classify(module, value)
            if not (found.kind is Kind.INTEGER and found.proven):
                return module.text(value)
    return None


def _autograd_tier(module: PythonModule, site: Site):
    requires_grad = keyword_arg(site.factory, "requires_grad")
    if requires_grad is None or _is_false(requires_grad.value):
        return None
    return Tier.UNSAFE, ("`requires_grad=True`: the moved copy is a non-leaf of a CPU leaf, while `device=` makes "
                         "the result itself the leaf that receives `.grad`")


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


# -- the edits ----------------------------------------------------------------------------------------


def _edits(module: PythonModule, site: Site, device: DeviceSpelling) -> list[Edit] | Kept:
    """Insert `device=` (and `dtype=`) into the factory, and remove the move, laid out as the file's formatter would."""
    call = site.factory
    if call.lpar:
        return Kept("the factory call is in parentheses of its own: the edit would have to move them", KeepCategory.CANNOT_SPELL)
    edits = FormattedEdits(module).insert_keyword(call, "device", device.text)
    if site.move.dtype is not None:
        edits.insert_keyword(call, "dtype", module.text(site.move.dtype))
    if site.callee == "torch.from_numpy":
        if not isinstance(call.func, cst.Attribute):
            return Kept("`from_numpy` imported by name: cannot spell `torch.as_tensor` here", KeepCategory.CANNOT_SPELL)
        edits.add(module.replace(call.func.attr, "as_tensor"))
    if site.second is None:
        _, factory_end = module.span(call)
        _, move_end = module.span(site.move_call)
        edits.add(Edit(factory_end, move_end, ""))
    else:
        edits.add(_delete_line(module, site.second))
    return edits.edits()


def _delete_line(module: PythonModule, line: cst.SimpleStatementLine) -> Edit:
    """The whole physical line of a statement: indentation, trailing comment and newline."""
    start, end = module.span(line)
    text = module.source.text
    newline = text.find("\n", end)
    return Edit(text.rfind("\n", 0, start) + 1, len(text) if newline < 0 else newline + 1, "")


def _impact(site: Site, device: DeviceSpelling, context: Context) -> tuple[Impact, str]:
    if device.device_type == "cpu":
        return Impact.NONE, CPU_BASIS
    if context is Context.ONCE:
        return Impact.LOW, ONCE_BASIS
    if site.callee == "torch.from_numpy":
        return Impact.LOW, FROM_NUMPY_BASIS
    return Impact.HIGH, DEVICE_BASIS


# -- small structural questions -------------------------------------------------------------------------


def _is_function(qualified: str) -> bool:
    """`torch.cat`, not `torch.nn.Linear` or `torch.LongTensor` (classes are capitalised)."""
    return qualified.rsplit(".", 1)[-1][:1].islower()


def _is_method(call: cst.Call, name: str) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == name


def _mentions(module: PythonModule, node: cst.CSTNode, name: str) -> bool:
    """True when `name` appears as a variable anywhere in `node` (not as an attribute or keyword)."""
    for found in walk(node):
        if isinstance(found, cst.Name) and found.value == name:
            parent = module.parent(found)
            if isinstance(parent, cst.Attribute) and parent.attr is found:
                continue
            if isinstance(parent, cst.Arg) and parent.keyword is found:
                continue
            return True
    return False


def _factory_assignment(statement, name: str) -> cst.Call | None:
    """The call in `name = F(...)` / `name: T = F(...)`, else None."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign):
        target, value = small.target, small.value
    else:
        return None
    if isinstance(target, cst.Name) and target.value == name and isinstance(value, cst.Call):
        return value
    return None


def _intervening_blocker(module: PythonModule, statement, device_names: set[str]) -> Kept | None:
    """Why moving the device expression above `statement` could change what it means."""
    line = module.start(statement)[0]
    if not isinstance(statement, cst.SimpleStatementLine):
        return Kept(f"L{line}: a compound statement between the two may leave early or change the device", KeepCategory.OTHER)
    if any(isinstance(node, cst.Call) for node in walk(statement)):
        return Kept(f"L{line}: a call between the two may change the current device or the names in the device expression",
                    KeepCategory.OTHER)
    bound = {n.value for small in statement.body for n in walk(small) if isinstance(n, cst.Name)
             and isinstance(module.parent(n), (cst.AssignTarget, cst.AnnAssign, cst.AugAssign))}
    if bound & device_names:
        return Kept(f"L{line}: rebinds `{sorted(bound & device_names)[0]}`, which the device expression reads", KeepCategory.OTHER)
    return None
