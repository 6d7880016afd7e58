"""OPT102 create-on-device: a torch factory created on the host and moved at once is created on the device.

The class below is the rule: its docstring is the manual. The steps after it judge a site; beside it sit
site.py, reads.py, device.py, chain.py, impact.py, factory.py, purpose.py, gain.py, edits.py and examples.py.
"""

from __future__ import annotations

import ast
from typing import Container, Iterator

import libcst as cst
from libcst.metadata import Assignment

from optpatch.rule import Advice, Context, Edit, Impact, Judgement, KeepCategory, Kept, Proven, Rule, Tier
from optpatch.rule.python import CallIndex, PythonModule, SCOPE_NODES, called_functions, dotted_name, preview, walk
from optpatch.analysis.no_gain import rebound_before_read
from optpatch.analysis.torch_values import (
    Kind,
    classify,
    factory_name,
    method_chain,
    move_method,
    on_cpu,
    parse_move,
    torch_callee,
)

from . import examples
from .chain import chain_casts, dtype_merge, evaluation_order, legacy_casts, op_between
from .device import device_spelling
from .edits import keyword_edits, site_edits
from .factory import autograd_tier, factory_blocker, fractional_arange_argument, subclass_tier, value_tier
from .gain import DEAD_STORE_BASIS, SAME_DEVICE_BASIS, already_there, nothing_to_gain
from .impact import ONCE_BASIS, arange_impact, measured_impact
from .purpose import discarded, exception_expected
from .reads import FunctionReads
from .site import ALL_SOURCES, HOST_DATA_CLASSES, Site, may_start_a_site, op_text


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
    `arange`, `linspace`, `logspace`, the `*_like` factories, the random
    factories; `tensor`, `as_tensor` and `from_numpy` get advice only (see
    below).

    Between the factory and the move may stand views, copies and dtype
    conversions: `torch.arange(n).view(-1, 1).repeat(1, k).to(d)` becomes
    `torch.arange(n, device=d).view(-1, 1).repeat(1, k)`, the chain kept.
    A factory created on the CPU on purpose and then moved,
    `torch.zeros(n, device="cpu").to(d)` (also `torch.device("cpu")`),
    gets its `device=` changed. `torch.zeros_like(x).to(d)` becomes
    `torch.zeros_like(x, device=d)`, whatever device `x` is on.

    `d` must be a device: a device string (`"cuda:0"`), an f-string,
    `torch.device(...)`, `x.device`, an integer index, a name whose every
    binding in scope is one of those or whose annotation says so
    (`torch.device`, `str`, `int`, their `Optional`/`Union`), or a call of a
    plain function of this file whose return annotation says so or whose
    every `return` gives one of those on a body that cannot end without one
    (`get_current_device()` returning `torch.device("cuda", rank)`). The
    proof states which; where only a name says it (a parameter `device`,
    any `.device` attribute), it says so. `.cuda()`
    becomes `device="cuda"` (the current CUDA device, as `.cuda()` means),
    `.cuda(0)` becomes `device="cuda:0"`, `.cuda(i)` for an integer
    expression `device=f"cuda:{i}"`. `.to(d, dtype)` merges the dtype too
    (`device=d, dtype=dtype`) when the conversion is exact.

    A dtype conversion in the chain may be spelled `.type(torch.float16)`
    (as `.to(torch.float16)`) or with a legacy CPU type,
    `.type(torch.IntTensor)`, which converts and also moves to the CPU: on
    the device it is written as its dtype, `.type(torch.int32)`, or, alone
    after a factory whose values are 0 or 1, as the factory's `dtype=`:
    `torch.zeros(b, n).type(torch.IntTensor).to(d)` becomes
    `torch.zeros(b, n, dtype=torch.int32, device=d)`. A `.type(...)` with
    no move after it is left alone: it puts the tensor on the CPU as asked.

    An index tensor built on the host for a tensor on a device,
    `idx = torch.arange(n)` read only as an index of one tensor `t`
    (`t[idx]`, `t[:, idx] = v`), is copied to `t`'s device at each use; it
    becomes `idx = torch.arange(n, device=t.device)`.

    Host data created for a device is examined in every spelling:
    `torch.tensor(data)`, `torch.as_tensor(data)`, `torch.from_numpy(a)` and
    the legacy constructors of a list (`torch.LongTensor(ids)`,
    `torch.FloatTensor(vals)`), each followed by a move; they get advice or
    are OPT103's (see below).

    Every factory-then-move site it examines is reported, kept ones with
    the reason (`-v`, the JSON report).

    ## Why is this bad
    `torch.arange(n).cuda()` computes the values on the CPU, then copies them
    to the GPU with a synchronous copy that first waits for every kernel
    already queued. `torch.arange(n, device="cuda")` launches one kernel and
    returns at once.

    ## Example
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n).to(device)

    def rows(n, k, x):
        return torch.arange(n).view(-1, 1).repeat(1, k).view(-1).to(x.device)
    ```

    ## Use instead
    ```python
    def positions(n, device: torch.device):
        return torch.arange(n, device=device)

    def rows(n, k, x):
        return torch.arange(n, device=x.device).view(-1, 1).repeat(1, k).view(-1)
    ```

    ## Fix safety
    `safe` when every obligation holds: `F` is one of the factories above
    with no `device=` (or a `device=` that provably names the CPU), `out=`,
    `generator=`, `**kwargs` or `pin_memory=True`; the move target is
    provably a device (never `.to(dtype)`, `.to(other_tensor)`,
    `.to(memory_format=...)`, `.to(None)`); the values do not depend on the
    device that computes them (zeros, ones, empty, full, eye, `arange` with
    integer start and step, any `*_like` of them); a merged dtype is exact;
    and every method between the factory and the move gives the same result
    on every device. Those are the views and copies `view` (not
    `view(dtype)`), `reshape`, `repeat`, `unsqueeze`, `squeeze`, `flatten`,
    `permute`, `transpose`, `t`, `contiguous`, `clone`, `detach`, `expand`
    where it repeats no element (`expand(1, -1)`) or a copy follows it (the
    move copied the view into a tensor of its own, where the device form
    would return the view itself), and the dtype conversions (`.int()`, `.float()`, ..., `.to(dtype)`) that
    are exact: anything from 0/1-valued factories (zeros, ones, empty, eye,
    a fill of 0 or 1); integers to integers, which wrap the same way on every
    device; integers to a floating dtype where the factory's literals bound
    them within its exact integers (2048 for float16, 256 for bfloat16,
    2**24 for float32); a float to a wider float. The two-statement form also
    needs the statements between the two to leave `t`, the names in `d` and
    the current device alone (no calls in between). The index form needs
    `idx` bound once, by an `arange` of integer start and step without
    `device=`; every read of `idx` in the function, after it, an element of a
    subscript of the same local name `t`, whose other elements are slices, integers,
    `None` or `...`; every binding of `t` before `idx` is created and every
    use after it; and `t` a tensor: a parameter annotated `torch.Tensor` or
    a torch factory's result.

    `validate`: the target is a device only by its name (a parameter called
    `device` with no annotation, `get_accelerator().device_name()`); an
    index tensor's `t` that nothing shows to be a tensor (`t.device` raises
    for a list, a tuple or a module), or that is an attribute
    (`self.table[idx]`: a call between may rebind it);
    `.cuda(x)` with an `x` that may not name a CUDA device (`.cuda(x)`
    raises there, `device=x` would not); `linspace`, whose device kernel was
    measured bit-identical on an H100 and an H200 but is not proven to be;
    an integer factory converted to a floating dtype where nothing bounds
    its values (`torch.arange(n).float()`: exact up to 2**24, and the H100
    rounded `arange(2**25, ...)` the same way as the CPU, but that is a
    measurement, not a proof).

    `unsafe`: random factories (`rand`, `randn`, `randint`, `randperm`,
    `normal`, `*_like`) draw from the device's generator, so the numbers
    change; `logspace` and `arange` with a fractional start or step round
    differently on the device (measured on an H200: 964 of 1000 values of
    `logspace(-10, 10, 1000)` and 864 of 2702 of `arange(0.5, 1000, 0.37)`
    differ in the last bits); `requires_grad=True`, because
    `F(..., requires_grad=True).to(d)` is a non-leaf copy of a CPU leaf
    whereas `device=` makes the result itself the leaf that receives `.grad`.

    Advice, not a fix, where the rewrite gains nothing: a move to the device
    the factory already creates the tensor on (`F(..., device=d).to(d)`:
    the move can go), and a moved tensor assigned to a local that is
    assigned again before anything reads it (a dead store: delete the line).

    Kept, with the reason: a factory that already has a `device=` other than
    the CPU (never a second one); a legacy constructor whose argument is not
    provably a list or tuple (`torch.FloatTensor(n)` with an integer makes
    an uninitialised tensor of size n, `torch.LongTensor(t)` shares the
    tensor `t`); a legacy `.type(...)` whose type is not spelled
    `torch.<Type>` (its dtype cannot be written), a type string, a CUDA
    type (`.type(torch.cuda.FloatTensor)`, a move of its own), or a value
    that is not a dtype known exactly (`.type(self.dtype)`, which old code
    sets to a legacy type, CUDA ones included); an index
    tensor that indexes several tensors (they may be on different devices),
    is read before it is created (a loop's earlier pass), or indexes a `t`
    bound after it is created (an attribute the function assigns included)
    or on the CPU (nothing to gain); a call that is not a factory
    (`torch.cat(...).to(d)`); a method between the factory and the move that
    computes new values (`.sum()`, `.fill_(v)`), an `expand` that repeats
    elements with no copy after it, or a dtype conversion that
    is not exact (`torch.full(s, 0.1).half()`); a merged dtype that is not
    exact (`torch.full(s, 0.1).to(d, torch.float64)`: the float32 value
    widened is not the float64 value); `pin_memory=True` factories and
    `x.pin_memory().to(d, non_blocking=True)` (a pinned staging buffer for
    an asynchronous copy is deliberate, and `pin_memory=True` with a CUDA
    `device=` is an error). Two keeps are about what the statement is for:
    a moved tensor that is never read (`torch.zeros(2).cuda()` as a
    statement, `_ = ...`, a local nothing reads), where the blocking copy is
    the point (a probe that a wedged GPU fails) and nothing is gained; and a
    site inside a block that expects or swallows an exception
    (`pytest.raises`, `self.assertRaises*`, `assertWarns*`,
    `contextlib.suppress`, a `try` whose handler may catch what torch
    raises), where the rewrite could change which call raises and with what
    message (`.cuda(-1)` and `device="cuda:-1"` raise different errors).

    Advice, not a fix, where `device=` saves nothing measurable: a move to
    the CPU (`.to("cpu")` returns the tensor unchanged); `zeros_like(x)` moved
    to `x.device`; `torch.tensor(data)` / `torch.as_tensor(data)` moved to a
    device that is not provably CUDA, where the data starts in host memory
    and what helps is `pin_memory=True` on the host tensor and
    `.to(d, non_blocking=True)`; `torch.from_numpy(a).to(d)`, where
    `torch.as_tensor(a, device=d)` only saves a wrapper tensor (measured
    within noise). Where the device is provably CUDA and nothing stands
    between them, `tensor(...)`, `as_tensor(...)` and `from_numpy(...)`
    followed by the move are OPT103's (pinned-async-h2d): OPT102 keeps them,
    saying so, and writes no edit there.

    ## Known problems
    Names are resolved within one file and flow-insensitively: a name is a
    device only when every binding in its scope is one. Any `.device`
    attribute counts as a device (`self.device`, `args.device`): `.to()` and
    `device=` read a string, an index, a `torch.device` or None the same way.
    The default device is assumed to be the CPU and the default dtype
    float32 (`torch.set_default_device` and `torch.set_default_dtype` are
    not tracked); that affects whether a `*_like` rewrite saves anything,
    and which dtype a conversion in a chain starts from.

    Found on DeepSpeed and apex (34 and 38 rewrites, all read by hand):
    - `get_accelerator().device_name()` and `.current_device_name()`,
      DeepSpeed's usual device spellings, cannot be proven from one file:
      those sites are `validate`. `.to(int)` / `.to(bool)` are dtype
      conversions (Python scalar types), never devices; `.to(dtype)` with a
      parameter named `dtype` is read as a dtype.
    - A file that gets `torch` only through a star import
      (`deepspeed/runtime/zero/stage3.py`) has no resolvable factories: a
      false negative, never a wrong rewrite.
    - `torch.randn(...).half().cuda()` is kept: the values are real numbers,
      and converting them to float16 is not proven exact (it is correctly
      rounded on both devices, but the numbers differ anyway).
    - `nn.Module`s and `torch.Tensor(...)` (whose dtype follows the default
      tensor type) are not factories and are not reported; the legacy
      constructors of a list are host data (advice, or OPT103's).
    - A device returned by a function of another module
      (`from .utils import get_current_device`) is not followed: the site is
      kept. An index tensor read in any other way (`idx + 1`, passed to a
      call) is no index site and is not reported.
    - `device, dims = x.device, x.size(1)` is followed element by element;
      other unpacking (`device, dims = f()`) is not.
    - In the two-statement form, an exception raised between the two
      statements and caught in the same function would find `t` already on
      the device; statements with calls in between keep the site.
    - In a chain, `device=` is evaluated before the arguments of the methods
      between the factory and the move, and a `device=` that replaces
      `device="cpu"` before the factory's arguments after it: where both
      hold calls, the site is kept.
    - A rewrite that enables an OPT101 fix in the two-statement form
      (`t = torch.zeros(n)`; `t = t.to(d)`; `t.copy_(x)`) is seen by OPT101
      only on the next run; the chained form (`torch.zeros(n).cuda()`) gets
      both fixes at once.
    - A merged dtype (`.to(d, dtype)`) is exact for 0/1 factories (any
      dtype) and integer factories (to an equal or wider integer) only: a
      float factory computed in a wider type is not its value widened
      (`torch.full(s, 0.1).to(d, torch.float64)`).

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
    Host time per call on an H100 80GB HBM3 (torch 2.11, 2026-11-26,
    docs/benchmarks.md), built on the host and moved vs built on the
    device, idle: `zeros(1)` 17.0 -> 12.2 us, `zeros(1024)` 14.2 -> 8.4 us,
    `zeros(65536)` 57.7 -> 8.3 us, `zeros(1048576)` 520.5 -> 12.2 us
    (43x); `arange(1048576)` 850.7 -> 8.4 us (101x), `full` 843.3 -> 11.6
    us, `linspace` 609.3 -> 12.7 us, `eye(1024)` 483.2 -> 15.1 us, but
    `eye` at 1,024 elements or fewer gains nothing; `randn(1048576)` 6510
    -> 9.8 us. Chains: `arange(n).int()` 522.3 -> 21.2 us at 1,048,576
    elements and nothing at 1,024 (the device runs the conversion too).
    With 5 ms of GPU work queued, every host form waited for all of it
    (5.0-5.7 ms) and the device form returned in 7-100 us, at every size.
    The impact class follows the size where the call's literals give it:
    low up to 1,024 elements, medium up to 65,536, high beyond (and where
    the size is unknown); one-time creation (module level, `__init__`,
    set-up) is low, and so is a `*_like` whose template may already be on
    the device (then `.to()` was free). No gain: `zeros_like` of a template already on the
    device (12.1 vs 11.7 us), `from_numpy(a).cuda()` vs
    `as_tensor(a, device="cuda")` (381.5 vs 356.1 us for 1,048,576
    floats), `torch.tensor(list_of_1024).cuda()` vs `device="cuda"` (163.4
    vs 162.1 us; 5014 vs 5014 us with 5 ms queued), while
    `pin_memory=True` and `non_blocking=True` took that to 292 us.

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
    version = 3  # `.type(...)` in chains, legacy constructors, devices from project functions, index tensors
    trigger_words = (".to(", ".cuda(", "arange(")
    profiled_ops = ("aten::to", "aten::_to_copy", "aten::copy_", "cudaMemcpy", "cudaMemcpyAsync")

    VALID = examples.VALID
    INVALID = examples.INVALID

    @classmethod
    def screen(cls, calls: CallIndex) -> bool:
        """Only files with a move `check` looks at (`needs`). Most files with `.to(` hold none
        (DeepSpeed 100 of 157, NeMo 269 of 426).
        """
        return bool(cls.needs(calls))

    @classmethod
    def needs(cls, calls: CallIndex) -> list[ast.AST]:
        """The moves of the forms `check` looks at: `<call>(...).to(...)` where the inner call is a
        torch function (through an import of torch) or `pin_memory()`; `F(...).op(...).to(...)`,
        a chain of method calls that starts from a torch call named like a factory (or imported by
        name from torch); and `t = t.to(...)` where `t` is assigned such a call somewhere in the
        module (`check` reads that assignment in the same block, so in the same function). Nothing
        else: devices and dtypes come from the function, its parameters, enclosing functions and
        module-level statements, and the blocks around a site (`try`, `with`) from its function.
        """
        moves = []
        for move in calls.named("to", "cuda"):
            if not isinstance(move.func, ast.Attribute):
                continue
            receiver = move.func.value
            if isinstance(receiver, ast.Call):
                if may_start_a_site(calls, receiver):
                    moves.append(move)
            elif isinstance(receiver, ast.Name) and calls.assigned_to(move) == receiver.id:
                if any(may_start_a_site(calls, source) for source in calls.calls_assigned(receiver.id)):
                    moves.append(move)
        arguments = [a for move in moves for a in (*move.args, *(keyword.value for keyword in move.keywords))]
        return moves + called_functions(calls.tree, arguments) + index_candidates(calls)

    def check(self, module: PythonModule) -> Iterator[Judgement]:
        # One finding per factory. `module.calls()` gives the outermost call of a chain first, so the move at the
        # end of `F(...).to(torch.int32).to(d)` judges `F`, not the conversion inside it; and `t = t.to(d)` comes
        # after `t = F(...).to(torch.int32)`, whose conversion it judges again as part of the two-statement form.
        judged: dict[int, Judgement] = {}
        reads = FunctionReads(module)
        for call in module.calls():
            if move_method(call) is None:
                verdict = index_verdict(module, call, reads)
                if verdict is not None:
                    judged[id(call)] = Judgement(module.start(call), module.context(call), verdict)
                continue
            receiver = call.func.value
            if isinstance(receiver, cst.Call):
                found = chained(module, call, receiver, judged, reads)
            elif isinstance(receiver, cst.Name):
                found = two_statement(module, call, receiver, reads)
            else:
                found = None
            if found is not None:
                factory, verdict = found
                judged[id(factory)] = Judgement(module.start(factory), module.context(factory), verdict)
        yield from judged.values()


def judge(module: PythonModule, site: Site, reads: FunctionReads) -> Proven | Kept | Advice:
    """The fix of a factory-then-move site with its tier and proof, or the first obligation that keeps it, or advice
    where the rewrite gains nothing."""
    move = site.move
    if move.blocker is not None:
        return Kept(move.blocker, move.blocker_category)
    between = op_between(module, site)
    if between is not None:
        return between
    device = device_spelling(module, move)
    if isinstance(device, Kept):
        return device
    already = already_there(module, site)
    if already is not None:
        return Advice(already, SAME_DEVICE_BASIS)
    for kept in (exception_expected(module, site), discarded(module, site, reads), factory_blocker(module, site)):
        if kept is not None:
            return kept
    no_gain = nothing_to_gain(module, site, device)
    if isinstance(no_gain, Kept):
        return no_gain
    if no_gain is not None:
        return Advice(*no_gain)
    tier, reasons = device.tier, [device.reason]
    for check in (chain_casts, legacy_casts, dtype_merge, value_tier, autograd_tier, subclass_tier, evaluation_order):
        outcome = check(module, site)
        if isinstance(outcome, Kept):
            return outcome
        if outcome is not None:
            tier = max(tier, outcome[0], key=lambda t: t.strictness)
            reasons.append(outcome[1])
    rebound = rebound_before_read(module, site.move_call)
    if rebound is not None:
        return Advice(rebound.advice("the moved tensor"), DEAD_STORE_BASIS, category=KeepCategory.DEAD_STORE)
    edits = site_edits(module, site, device)
    if isinstance(edits, Kept):
        return edits
    return _proven(module, site, tier, reasons, edits)


def _proven(module: PythonModule, site: Site, tier: Tier, reasons: list[str], edits: list[Edit]) -> Proven:
    """The fix: what the site is, what it becomes, and every obligation's reason as its proof."""
    impact, basis = measured_impact(module, site, module.context(site.factory))
    start, _ = module.span(site.factory)
    _, end = module.span(site.move_call if site.second is None else site.ops[-1].call if site.ops else site.factory)
    replacement = preview(module.source.text, start, end, edits)
    ops = "".join(op_text(module, op) for op in site.ops)
    if site.second is None:
        form = f"`{ops}.{site.move.method}()` on the result"
    else:
        form = f"`{module.text(site.second.body[0])}` on L{module.start(site.second)[0]}"
    where = "create it on the device instead, keeping the chain" if ops else "create it on the device instead"
    reason = f"`{site.callee}(...)` then {form}: {where}; " + "; ".join(reasons)
    return Proven(reason, tier, tuple(edits), impact, basis, replacement, tuple(reasons))


def chained(module: PythonModule, move_call: cst.Call, receiver: cst.Call, judged: Container[int],
            reads: FunctionReads) -> tuple[cst.Call, Proven | Kept | Advice] | None:
    """`F(args).to(d)`, `F(args).op(...).to(d)`, `F(args).cuda(i)`; also the keeps that look like them.

    None where the chain starts from no call, from a factory already judged (`judged`, by `id`), or from a
    call that is not this rule's business."""
    root, ops = method_chain(module, receiver)
    if not isinstance(root, cst.Call) or id(root) in judged:
        return None
    factory = factory_name(module, root)
    callee = factory or torch_callee(module, root)
    if callee is None:
        if not ops and _is_method(root, "pin_memory") and parse_move(module, move_call).blocker is None:
            return root, Kept("`x.pin_memory().to(...)`: a pinned staging buffer for an asynchronous copy is deliberate",
                              KeepCategory.DELIBERATE)
        return None
    site = Site(root, move_call, callee, parse_move(module, move_call), ops=tuple(ops))
    if factory is None and callee not in HOST_DATA_CLASSES:
        if ops or site.move.blocker is not None or not _is_function(callee):
            return None  # a conversion of some other tensor, or a module or legacy class: not this rule's business
        return root, Kept(f"`{callee}` is not a factory: it has no `device=` to create its result on the device",
                          KeepCategory.NOT_A_FACTORY)
    return root, judge(module, site, reads)


def two_statement(module: PythonModule, move_call: cst.Call, receiver: cst.Name,
                  reads: FunctionReads) -> tuple[cst.Call, Proven | Kept | Advice] | None:
    """`t = F(args)` (or `t = F(args).op(...)`) then, with no use of `t` in between, `t = t.to(d)`."""
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
            value = factory_assignment(statement, name)
            root, ops = method_chain(module, value) if value is not None else (None, [])
            if not isinstance(root, cst.Call):
                return None
            callee = factory_name(module, root) or torch_callee(module, root)
            if callee not in ALL_SOURCES:
                return None
            if name in device_names:
                return root, Kept(f"the device expression reads `{name}` itself", KeepCategory.OTHER)
            if blocker is not None:
                return root, blocker
            site = Site(root, move_call, callee, parse_move(module, move_call), second=line, ops=tuple(ops))
            return root, judge(module, site, reads)
        if blocker is None:
            blocker = _intervening_blocker(module, statement, device_names)
    return None

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


def factory_assignment(statement, name: str) -> cst.Call | None:
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


def index_verdict(module: PythonModule, call: cst.Call, reads: FunctionReads) -> Proven | Kept | None:
    """The verdict on `call` as an index tensor's `arange`, or None where it is no index site."""
    found = _index_uses(module, call, reads)
    if found is None:
        return None
    name, tables = found
    kept = _index_blocker(module, call, name, tables)
    if isinstance(kept, Kept):
        return kept
    tier, evidence = kept
    table = module.text(tables[0])
    edits = keyword_edits(module, call, {"device": f"{table}.device"}).edits()
    impact, basis = (Impact.LOW, ONCE_BASIS) if module.context(call) is Context.ONCE else arange_impact(module, call)
    start, end = module.span(call)
    proof = [f"`{name}` is read only as an index of `{table}` ({len(tables)} use(s)), which copies it to "
             f"`{table}`'s device each time", evidence, "arange with integer start and step: the same integers on "
             "every device"]
    if isinstance(tables[0], cst.Name):
        proof.append(f"`{table}` is bound before `{name}` and not rebound after it")
    reason = f"`{name} = torch.arange(...)` indexes `{table}`: create it on `{table}.device`; " + "; ".join(proof)
    return Proven(reason, tier, tuple(edits), impact, basis, preview(module.source.text, start, end, edits), tuple(proof))

def index_candidates(calls: CallIndex) -> list[ast.AST]:
    """`needs` for the index form: `name = torch.arange(...)` without `device=`, in a function that indexes with
    `name` (`t[name]`, `t[:, name]`)."""
    found = []
    for call in calls.named("arange"):
        name = calls.assigned_to(call)
        function = calls.outermost_function(call) if name is not None and calls.calls_torch(call) else None
        if function is None or any(keyword.arg in (None, "device") for keyword in call.keywords):
            continue
        if any(isinstance(node, ast.Subscript) and _ast_indexes_with(node.slice, name) for node in ast.walk(function)):
            found.append(call)
    return found


def _ast_indexes_with(index: ast.expr, name: str) -> bool:
    elements = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(element, ast.Name) and element.id == name for element in elements)


def _index_uses(module: PythonModule, call: cst.Call, reads: FunctionReads) -> tuple[str, list[cst.BaseExpression]] | None:
    """(`name`, the indexed expression of each use) for `name = torch.arange(...)` alone on its line in a function,
    bound nowhere else, every read of which is a plain index element; None for anything else."""
    if factory_name(module, call) != "torch.arange" or any(arg.star or arg.keyword is not None and arg.keyword.value in (
            "device", "out", "requires_grad", "pin_memory") for arg in call.args):
        return None
    assign = module.parent(call)
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)):
        return None
    target = assign.targets[0].target
    function = module.enclosing_function(assign)
    if function is None or module.enclosing(assign, SCOPE_NODES) is not function or len(module.bindings(target) or ()) != 1:
        return None
    uses = reads.of(function, target.value)
    if not uses:
        return None
    tables = []
    for use in uses:
        table = _indexed(module, use)
        if table is None or module.enclosing(use, SCOPE_NODES) is not function:
            return None
        tables.append(table)
    return target.value, tables


def _indexed(module: PythonModule, use: cst.Name) -> cst.BaseExpression | None:
    """`t` in `t[use]` / `t[:, use, None]`, where the other elements are slices, integers, `None` or `...`."""
    index = module.parent(use)
    element = module.parent(index) if isinstance(index, cst.Index) else None
    subscript = module.parent(element) if isinstance(element, cst.SubscriptElement) else None
    if not isinstance(subscript, cst.Subscript) or subscript.value is use:
        return None
    for other in subscript.slice:
        if other is element:
            continue
        value = other.slice.value if isinstance(other.slice, cst.Index) else None
        if not (isinstance(other.slice, cst.Slice) or isinstance(value, (cst.Integer, cst.Ellipsis))
                or isinstance(value, cst.Name) and value.value == "None"):
            return None
    return subscript.value


def _index_blocker(module: PythonModule, call: cst.Call, name: str,
                   tables: list[cst.BaseExpression]) -> Kept | tuple[Tier, str]:
    """(tier, evidence that the indexed tensor is one), or why the index stays where it is."""
    texts = {module.text(table) for table in tables}
    if len(texts) > 1:
        return Kept(f"`{name}` indexes {', '.join(f'`{t}`' for t in sorted(texts))}, which may be on different devices",
                    KeepCategory.OTHER)
    fractional = fractional_arange_argument(module, call)
    if fractional is not None:
        return Kept(f"arange with a start or step `{fractional}` that may be fractional is no index", KeepCategory.OTHER)
    start, end = module.span(module.parent(call))
    if any(module.span(use)[0] < end for use in tables):
        return Kept(f"`{name}` is read before it is created (a loop's earlier pass)", KeepCategory.OTHER)
    table = tables[0]
    if isinstance(table, cst.Attribute):
        return _attribute_table(module, call, table)
    if not isinstance(table, cst.Name):
        return Kept(f"`{module.text(table)}` is not a name: what it holds at each use is not known here",
                    KeepCategory.OTHER)
    for binding in module.bindings(table) or ():
        node = binding.node if isinstance(binding, Assignment) else None
        if not isinstance(node, (cst.Name, cst.Param)) or module.span(node)[0] >= start:
            return Kept(f"`{table.value}` may be bound after `{name}` is created: `device={table.value}.device` would "
                        "read another tensor", KeepCategory.OTHER)
    if not module.bindings(table):
        return Kept(f"`{table.value}` is bound nowhere this file shows", KeepCategory.OTHER)
    cpu = on_cpu(module, table)
    if cpu is not None:
        return Kept(f"`{table.value}` is on the CPU ({cpu}): the index is already where it is used", KeepCategory.NO_GAIN)
    evidence = _tensor_evidence(module, table)
    if evidence is not None:
        return Tier.SAFE, f"`{table.value}` is a tensor: {evidence}"
    return Tier.VALIDATE, (f"`{table.value}` is indexed like a tensor, but nothing here shows it is one: "
                           f"`{table.value}.device` raises for a list, a tuple or a module")


def _attribute_table(module: PythonModule, call: cst.Call, table: cst.Attribute) -> Kept | tuple[Tier, str]:
    """`self.table[idx]`: validate at best, since a call between may rebind the attribute and nothing here shows
    it holds a tensor; kept where the function itself assigns it."""
    spelled = dotted_name(table)
    if spelled is None:
        return Kept(f"`{module.text(table)}` is not a name: what it holds at each use is not known here",
                    KeepCategory.OTHER)
    function = module.enclosing_function(call)
    for node in walk(function.body):
        targets = node.targets if isinstance(node, cst.Assign) else [node] if isinstance(node, (cst.AnnAssign, cst.AugAssign)) else []
        if any(dotted_name(t.target) == spelled or dotted_name(t.target) == spelled.split(".", 1)[0] for t in targets):
            return Kept(f"`{spelled}` is assigned in this function: `device={spelled}.device` may read another tensor",
                        KeepCategory.OTHER)
    return Tier.VALIDATE, (f"`{spelled}` is an attribute: nothing here shows it holds a tensor (`.device` raises for a "
                           "list or a module), or that no call between rebinds it")


def _tensor_evidence(module: PythonModule, name: cst.Name) -> str | None:
    """Evidence that every binding of `name` is a tensor: a parameter annotated `torch.Tensor`, or a torch factory's
    result (other torch functions may return tuples, modules or numbers)."""
    evidence = []
    for binding in module.bindings(name) or ():
        node = binding.node if isinstance(binding, Assignment) else None
        if isinstance(node, cst.Param):
            value = classify(module, node.name)
            if value.kind is not Kind.TENSOR or not value.proven:
                return None
            evidence.append(value.evidence)
            continue
        statement = module.parent(module.parent(node)) if isinstance(node, cst.Name) else None
        value = factory_assignment(module.parent(statement), name.value) if statement is not None else None
        if value is None or factory_name(module, value) is None:
            return None
        evidence.append(f"`{name.value}` = `{module.text(value.func)}(...)` (L{module.start(node)[0]})")
    return "; ".join(evidence) or None
