"""Names from the reference for the kernels of a winner seeded from torch.compile's code.

Inductor names what it writes for its own bookkeeping: a kernel for the aten ops it fuses
(`_poi_fused_add_copy_mul_neg_slice_unsqueeze_0`), a pointer for its place in the kernel's signature
(`in_ptr0`, `out_ptr0`), a buffer for its number (`buf8`), a value for its order (`tmp15`). A reviewer reads
the module against the reference, so the module that ships names
- a kernel for the op (`_apply_rotary_emb_kernel`), or for what it does where that is only a copy
  (`_copy_kernel`: Inductor writes an in-place result back with one);
- a pointer for the argument its launches pass (`query_ptr`; `query_or_key_ptr` for a kernel launched
  for both, `query_or_key_out_ptr` where both end alike), a value Inductor also calls `in_ptrN` but the
  kernel never loads from, stores to or computes an address from (a float: `variance_epsilon`) for the
  argument alone, and a size for the host's size its launches pass (`ks0` -> `HEAD_DIM` for a constexpr
  the host reads as `head_dim`);
- a buffer for the input whose result it holds (`query_out`), else, where the host returns it, for the
  value the reference returns in its place (SGLang's RMSNorm returns `x, residual`: `residual_out`, with
  `_out` where the host has the reference's name already, as the fusion writer names its outputs);
- a value loaded from a pointer for what it points at (`cos`), where it is the pointer's one load, its
  one load of the lane's own element (`query_or_key`; the other half the rotary reads stays `tmp6`), or
  its load in each pass of a looped reduction (`x` in both loops of an RMSNorm, each read in its own
  loop), a value stored through a pointer for where it goes (`query_or_key_out`), and a norm's sum of
  squares and the reciprocal root of it as the fusion writer names them (`sum_sq`, `inv_rms`).
Names that cannot be told this way (a pointer whose launches pass three arguments or an expression, a size
Inductor's host computes (`ps0`), the other loads of a pointer loaded more than once in one pass,
Inductor's index and temporary arithmetic) stay as Inductor wrote them rather than be guessed; so does any
name whose new one is taken.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from evolution.mutators.crossover.alike import jit_functions
from evolution.mutators.crossover.alike import names as all_names
from kernelbot.integrate.count_names import read_counts
from kernelbot.integrate.gather_returned_names import GatherReturnedNamesVisitor
from kernelbot.integrate.rename_function import (
    CommentWordsRenamer,
    RenameFunctionTransformer,
    with_seeded_names,
)

INDUCTOR_KERNEL = re.compile(r"_?(?:triton_)?(?:poi|red|per)_fused_\w*")
_POINTER = re.compile(r"(?:in_out|in|out)_ptr\d+")
_IN_POINTER = re.compile(r"in_ptr\d+")
_OUT_POINTER = re.compile(r"(?:in_out|out)_ptr\d+")
_BUFFER = re.compile(r"buf\d+")
_SIZE = re.compile(r"ks\d+")
# What Inductor's host names for itself: a size it computed (`ps0`), a launch's count (`k0_xnumel`).
_HOST_SIZE = re.compile(r"ps\d+|k\d+_\w+|s\d+|u\d+")
_TEMPORARY = re.compile(r"tmp\d+")
_VARIANT = re.compile(r"(?:_(?:bf16|fp16|fp32|fp64|int\d+|bool))+$")
# What a copy kernel calls: its index arithmetic, one load and one store.
_COPY_CALLS = frozenset({"tl.program_id", "tl.arange", "tl.load", "tl.store", "to"})


@dataclass(frozen=True)
class _Launch:
    kernel: str
    args: tuple[str | None, ...]  # positional arguments, by name where one is a plain name


class _LaunchCollector(cst.CSTVisitor):
    """`kernel[grid](...)` calls of the given kernels, in source order."""

    def __init__(self, kernels: set[str]) -> None:
        super().__init__()
        self.kernels = kernels
        self.launches: list[_Launch] = []

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if (
            isinstance(func, cst.Subscript)
            and isinstance(func.value, cst.Name)
            and func.value.value in self.kernels
        ):
            args = tuple(
                a.value.value if isinstance(a.value, cst.Name) else None
                for a in node.args
                if a.keyword is None and a.star == ""
            )
            self.launches.append(_Launch(func.value.value, args))


class _CallCollector(cst.CSTVisitor):
    """What a kernel calls (`tl.load`, `to`), and its loads as (target, pointer) where a load's value is bound
    to one name and its address is `pointer` or `pointer + offset`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.loads: list[tuple[str | None, str | None]] = []
        self.stored: list[str | None] = []
        self.stores: list[tuple[str | None, str | None]] = []  # (value, pointer)
        self.elements: list[str | None] = []  # targets of loads at `pointer + index`, the lane's own element
        self.passes: list[tuple[cst.For | None, str]] = []  # per load: its innermost loop, its address
        self._loops: list[cst.For] = []

    def visit_For(self, node: cst.For) -> None:
        self._loops.append(node)

    def leave_For(self, original_node: cst.For) -> None:
        self._loops.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = _dotted(node.func)
        self.calls.append(name)
        if name == "tl.store" and len(node.args) >= 2:
            value = node.args[1].value
            self.stored.append(value.value if isinstance(value, cst.Name) else None)
            self.stores.append((self.stored[-1], _base_pointer(node.args[0].value)))

    def visit_Assign(self, node: cst.Assign) -> None:
        load = _load_call(node.value)
        if load is None:
            return
        target = node.targets[0].target if len(node.targets) == 1 else None
        bound = target.value if isinstance(target, cst.Name) else None
        address = load.args[0].value if load.args else None
        self.loads.append((bound, _base_pointer(address) if address else None))
        loop = self._loops[-1] if self._loops else None
        self.passes.append((loop, cst.Module(body=[]).code_for_node(address) if address else ""))
        if address is not None and _is_element(address):
            self.elements.append(bound)


class _AddressCollector(cst.CSTVisitor):
    """The names a kernel uses as an address: those in the pointer of a `tl.load`, `tl.store` or
    `tl.atomic_*` call, those a call of another function is passed (what it does with them is not seen
    here), and those an address is computed from where the address is bound to a name first
    (`p = in_ptr0 + x0`, `tl.make_block_ptr(in_ptr0, ...)`)."""

    def __init__(self) -> None:
        super().__init__()
        self.direct: set[str] = set()
        self.sources: dict[str, set[str]] = {}  # name -> the names the values bound to it are made from

    @property
    def addresses(self) -> set[str]:
        found = set(self.direct)
        grown = True
        while grown:
            before = len(found)
            for name, sources in self.sources.items():
                if name in found:
                    found |= sources
            grown = len(found) > before
        return found

    def visit_Call(self, node: cst.Call) -> None:
        name = _dotted(node.func)
        if name in ("tl.load", "tl.store") or name.startswith("tl.atomic_"):
            pointer = next((a for a in node.args if a.keyword and a.keyword.value == "pointer"), None)
            positional = [a for a in node.args if a.keyword is None]
            pointer = pointer or (positional[0] if positional else None)
            if pointer is not None:
                self.direct |= all_names(pointer.value)
        elif isinstance(node.func, cst.Name):  # a @triton.jit helper's: it may load through any of them
            self.direct |= {n for arg in node.args for n in all_names(arg.value)}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for name in all_names(target.target):
                self.sources.setdefault(name, set()).update(all_names(node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        for name in all_names(node.target):
            self.sources.setdefault(name, set()).update(all_names(node.value))


def inductor_names(
    module: cst.Module, stem: str, reference_returns: Sequence[tuple[str | None, ...]] = ()
) -> cst.Module:
    """`module` with its Inductor-named kernels, their pointers and loads, and the buffers their launches
    fill named as the module docstring says; `stem` is the op's name (`apply_rotary_emb`),
    `reference_returns` what the reference's return statements return by name (GatherReturnedNamesVisitor)."""
    kernels = {name: f for name, f in jit_functions(module).items() if INDUCTOR_KERNEL.fullmatch(name)}
    if not kernels:
        return module
    hosts = [s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value not in kernels]
    launches: list[_Launch] = []
    renamed_hosts: dict[str, cst.FunctionDef] = {}
    for host in hosts:
        collector = _LaunchCollector(set(kernels))
        host.visit(collector)
        if not collector.launches:
            continue
        buffers = _buffer_names(collector.launches, kernels, all_names(host))
        buffers.update(_returned_buffer_names(host, reference_returns, buffers))
        launches += [
            _Launch(launch.kernel, tuple(buffers.get(a, a) if a else a for a in launch.args))
            for launch in collector.launches
        ]
        renamed_hosts[host.name.value] = _renamed(host, buffers)
    renamed_kernels = {
        name: _renamed(kernel, _kernel_local_names(kernel, [la for la in launches if la.kernel == name]))
        for name, kernel in kernels.items()
    }
    module = module.with_changes(
        body=[
            renamed_kernels.get(s.name.value, renamed_hosts.get(s.name.value, s))
            if isinstance(s, cst.FunctionDef)
            else s
            for s in module.body
        ]
    )
    new_names = _kernel_names(renamed_kernels, stem, all_names(module))
    for old, new in new_names.items():
        module = module.visit(RenameFunctionTransformer(old, new))
    if not new_names:
        return module
    return module.visit(CommentWordsRenamer(with_seeded_names(new_names, set(kernels))))


def _buffer_names(
    launches: list[_Launch], kernels: dict[str, cst.FunctionDef], taken: set[str]
) -> dict[str, str]:
    """bufN -> `<input>_out`, for each buffer a launch fills from an input it reads first."""
    names: dict[str, str] = {}
    for launch in launches:
        params = _positional_params(kernels[launch.kernel])
        pairs = list(zip(params, launch.args, strict=False))
        source = next(
            (
                names.get(arg, arg)
                for param, arg in pairs
                if arg and _IN_POINTER.fullmatch(param) and not (_BUFFER.fullmatch(arg) and arg not in names)
            ),
            None,
        )
        for param, arg in pairs:
            if (
                source
                and arg
                and _OUT_POINTER.fullmatch(param)
                and _BUFFER.fullmatch(arg)
                and arg not in names
            ):
                new = f"{source}_out"
                if new not in taken and new not in names.values():
                    names[arg] = new
    return names


def _returned_buffer_names(
    host: cst.FunctionDef, reference_returns: Sequence[tuple[str | None, ...]], named: dict[str, str]
) -> dict[str, str]:
    """bufN -> the reference's name for the value the host returns in its place, for each buffer `named`
    (the input rule's) leaves unnamed: that name, or with `_out` where the host has it (an argument the
    reference rebinds, `residual`). Only where the host has one return statement and every return of the
    reference with as many values returns one plain name at that place; no name the host has is reused."""
    gatherer = GatherReturnedNamesVisitor(host.name.value)
    host.visit(gatherer)
    if len(gatherer.returns) != 1:
        return {}
    returned = gatherer.returns[0]
    theirs = {r for r in reference_returns if len(r) == len(returned)}
    taken = all_names(host) | set(named.values())
    names: dict[str, str] = {}
    for position, buffer in enumerate(returned):
        agreed = {r[position] for r in theirs}
        reference = agreed.pop() if len(agreed) == 1 else None
        if reference is None or buffer is None or not _BUFFER.fullmatch(buffer) or buffer in named:
            continue
        new = next((n for n in (reference, f"{reference}_out") if n not in taken), None)
        if new and buffer not in names:
            names[buffer] = new
            taken.add(new)
    return names


def _kernel_local_names(kernel: cst.FunctionDef, launches: list[_Launch]) -> dict[str, str]:
    """The kernel's pointers named for what its launches pass, a value loaded from one of them for what it
    points at and the value stored through one for where it goes (the module docstring's rules)."""
    taken = all_names(kernel)  # attribute members and keywords too: a new name clashes with none
    addresses = _AddressCollector()
    kernel.visit(addresses)
    used_as_address = addresses.addresses
    names: dict[str, str] = {}
    for index, param in enumerate(_positional_params(kernel)):
        if not _POINTER.fullmatch(param) or not launches:
            continue
        passed = [la.args[index] if index < len(la.args) else None for la in launches]
        base = _shared_name([p for p in passed if p is not None]) if None not in passed else None
        if base is None:
            continue
        # Inductor calls a float the host passes (the norm's epsilon) `in_ptrN` too: one the kernel only
        # reads as a value is named for the argument alone, where that name is free.
        wanted = [f"{base}_ptr"] if param in used_as_address else [base, f"{base}_ptr"]
        new = next((w for w in wanted if w not in taken and w not in names.values()), None)
        if new:
            names[param] = new
    names.update(_size_names(kernel, launches, taken))
    collector = _CallCollector()
    kernel.visit(collector)
    pointers = Counter(pointer for _, pointer in collector.loads)
    targets = Counter(target for target, _ in collector.loads)
    elements = Counter(pointer for target, pointer in collector.loads if target in collector.elements)
    for target, pointer in collector.loads:
        new = names.get(pointer or "", "").removesuffix("_ptr")
        # A pointer loaded more than once (the rotary's other half): its lane's own element takes the name.
        once = pointers[pointer] == 1 or (target in collector.elements and elements[pointer] == 1)
        if (
            new
            and target
            and _TEMPORARY.fullmatch(target)
            and once
            and targets[target] == 1
            and new not in taken
            and new not in names.values()
        ):
            names[target] = new
    names.update(_pass_load_names(kernel, collector, names, taken))
    # The value a kernel stores once through a pointer it stores nothing else through (`tmp17`, the result).
    through = Counter(pointer for _, pointer in collector.stores)
    for value, pointer in collector.stores:
        new = names.get(pointer or "", "").removesuffix("_ptr")
        if (
            new
            and value
            and _TEMPORARY.fullmatch(value)
            and through[pointer] == 1
            and collector.stored.count(value) == 1
            and new not in taken
            and new not in names.values()
        ):
            names[value] = new
    names.update(_norm_names(kernel, taken | set(names.values())))
    return names


def _norm_names(kernel: cst.FunctionDef, taken: set[str]) -> dict[str, str]:
    """A norm's values, as the fusion writer names them: a sum of a value's squares (`sum_sq`, its loop's
    accumulator `_sum_sq`) and the reciprocal root of one, with what is added or divided (`inv_rms`)."""
    values: dict[str, list[cst.BaseExpression]] = {}
    for assign in m.findall(kernel, m.Assign(targets=[m.AssignTarget(m.Name())])):
        assign = cst.ensure_type(assign, cst.Assign)
        name = cst.ensure_type(assign.targets[0].target, cst.Name).value
        values.setdefault(name, []).append(assign.value)
    found: dict[str, str] = {}
    for name, (value, *more) in values.items():
        if more or not _TEMPORARY.fullmatch(name):
            continue
        call = value.value if isinstance(value, cst.Subscript) else value  # `tl.sum(...)[:, None]`
        if not (isinstance(call, cst.Call) and call.args):
            continue
        kind = _dotted(call.func)
        if kind == "tl.sum" and _squares(call.args[0].value, values, depth=8):
            found[name] = "sum_sq"
            accumulator = call.args[0].value
            if isinstance(accumulator, cst.Name) and accumulator.value == f"_{name}":
                found[accumulator.value] = "_sum_sq"
        elif kind == "tl.rsqrt":
            found[name] = "inv_rms"
    if list(found.values()).count("sum_sq") != 1:
        return {}
    sums = {old for old, new in found.items() if new == "sum_sq"}
    found = {
        old: new
        for old, new in found.items()
        if new != "inv_rms" or _reads_sum(values[old][0], values, sums, depth=8)
    }
    if list(found.values()).count("inv_rms") > 1 or set(found.values()) & taken:
        return {}
    return found


def _squares(expr: cst.BaseExpression, values: dict[str, list[cst.BaseExpression]], depth: int) -> bool:
    """Whether `expr` is, through Inductor's masking, broadcasting, accumulating and naming, a value times
    itself: `tl.where(mask, tl.broadcast_to(t * t, ...), 0)`, or an accumulator adding one."""
    if depth == 0:
        return False
    if isinstance(expr, cst.Name):
        bound = values.get(expr.value, [])
        if len(bound) == 1:
            return _squares(bound[0], values, depth - 1)
        # A loop's accumulator: its zeros, then `tl.where(mask, acc + term, acc)` each trip.
        return any(_squares(v, values, depth - 1) for v in bound if not _is_full(v))
    if isinstance(expr, cst.Call) and expr.args:
        kind = _dotted(expr.func)
        if kind == "tl.where" and len(expr.args) == 3:
            return _squares(expr.args[1].value, values, depth - 1)
        if kind == "tl.broadcast_to":
            return _squares(expr.args[0].value, values, depth - 1)
        return False
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        # The accumulator's own trip: the term added to it.
        left, right = expr.left, expr.right
        term = right if isinstance(left, cst.Name) and left.value.startswith("_tmp") else left
        return _squares(term, values, depth - 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        code = cst.Module(body=[]).code_for_node
        return code(expr.left) == code(expr.right)
    return False


def _reads_sum(
    expr: cst.BaseExpression, values: dict[str, list[cst.BaseExpression]], sums: set[str], depth: int
) -> bool:
    """Whether `expr` (an rsqrt's argument) is a sum of squares, divided or with something added."""
    if depth == 0:
        return False
    if isinstance(expr, cst.Call) and _dotted(expr.func) == "tl.rsqrt" and expr.args:
        return _reads_sum(expr.args[0].value, values, sums, depth)
    if isinstance(expr, cst.Name):
        if expr.value in sums:
            return True
        bound = values.get(expr.value, [])
        return len(bound) == 1 and _reads_sum(bound[0], values, sums, depth - 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Divide)):
        return _reads_sum(expr.left, values, sums, depth - 1)
    return False


def _is_full(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Call) and _dotted(expr.func) == "tl.full"


def _pass_load_names(
    kernel: cst.FunctionDef, collector: _CallCollector, names: dict[str, str], taken: set[str]
) -> dict[str, str]:
    """A pointer's loads, one of the same address in each of several loops (a looped reduction reads the
    row again in each pass), each named for what the pointer points at: each value lives in its own loop,
    read only there, so the one name holds one of them at a time."""
    reads = read_counts(kernel)
    by_pointer: dict[str, list[tuple[str | None, cst.For | None, str]]] = {}
    for (target, pointer), (loop, address) in zip(collector.loads, collector.passes, strict=True):
        by_pointer.setdefault(pointer or "", []).append((target, loop, address))
    targets = Counter(target for target, _ in collector.loads)
    found: dict[str, str] = {}
    for pointer, loads in by_pointer.items():
        new = names.get(pointer, "").removesuffix("_ptr")
        loops = [loop for _, loop, _ in loads]
        if (
            len(loads) < 2
            or not new
            or new in taken
            or new in names.values()
            or len({address for *_, address in loads}) != 1
            or None in loops
            or len({id(loop) for loop in loops}) != len(loops)
        ):
            continue
        own = [
            target
            for target, loop, _ in loads
            if target
            and loop is not None
            and _TEMPORARY.fullmatch(target)
            and targets[target] == 1
            and read_counts(loop.body).get(target, 0) == reads.get(target, 0)
        ]
        if len(own) == len(loads):
            found |= dict.fromkeys(own, new)
    return found


def _size_names(kernel: cst.FunctionDef, launches: list[_Launch], taken: set[str]) -> dict[str, str]:
    """A size parameter (`ks0`) named for the host's size every launch passes it (`head_dim`), upper case
    where it is a `tl.constexpr` (`HEAD_DIM`, as hand-written kernels spell one); one computed by
    Inductor's host (`ps0`) or passed as two sizes keeps its name."""
    names: dict[str, str] = {}
    params = (*kernel.params.posonly_params, *kernel.params.params)
    for index, param in enumerate(params):
        if not _SIZE.fullmatch(param.name.value) or not launches:
            continue
        passed = {la.args[index] if index < len(la.args) else None for la in launches}
        base = passed.pop() if len(passed) == 1 else None
        if base is None or _HOST_SIZE.fullmatch(base):
            continue
        annotation = param.annotation.annotation if param.annotation else None
        constexpr = isinstance(annotation, cst.Attribute) and annotation.attr.value == "constexpr"
        new = base.upper() if constexpr else base
        if new not in taken and new not in names.values():
            names[param.name.value] = new
    return names


def _shared_name(passed: list[str]) -> str | None:
    """One name for what the launches pass: the argument itself, or for two, both joined by `or` with the
    words they end on shared (`query_out`, `key_out` -> `query_or_key_out`)."""
    distinct = list(dict.fromkeys(passed))
    if len(distinct) == 1:
        return distinct[0]
    if len(distinct) != 2:
        return None
    a, b = (name.split("_") for name in distinct)
    shared: list[str] = []
    while len(a) > 1 and len(b) > 1 and a[-1] == b[-1]:
        shared.insert(0, a.pop())
        b.pop()
    return "_".join(["_".join(a), "or", "_".join(b), *shared])


def _kernel_names(kernels: dict[str, cst.FunctionDef], stem: str, taken: set[str]) -> dict[str, str]:
    """Each kernel's new name: `_copy_kernel` for a copy, `_<op>_kernel` for the first that computes, with
    a dtype specialisation's suffix; the Inductor name kept where the new one is taken."""
    names: dict[str, str] = {}
    for old, kernel in kernels.items():
        variant = _VARIANT.search(old)  # the Inductor seed's dtype specialisation (`_bf16`)
        new = ("_copy_kernel" if _is_copy(kernel) else f"_{stem}_kernel") + (variant[0] if variant else "")
        if new not in taken and new not in names.values():
            names[old] = new
    return names


def _is_copy(kernel: cst.FunctionDef) -> bool:
    collector = _CallCollector()
    kernel.visit(collector)
    loaded = [target for target, _ in collector.loads]
    return (
        set(collector.calls) <= _COPY_CALLS
        and len(loaded) == 1
        and collector.stored == loaded
        and loaded[0] is not None
    )


def _renamed(function: cst.FunctionDef, names: dict[str, str]) -> cst.FunctionDef:
    for old, new in names.items():
        renamed = function.visit(RenameFunctionTransformer(old, new))
        assert isinstance(renamed, cst.FunctionDef)  # the transformer renames; it never removes
        function = renamed
    return function


def _positional_params(function: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*function.params.posonly_params, *function.params.params)]


def _dotted(node: cst.BaseExpression) -> str:
    """`tl.load` for tl.load, `to` for any `<value>.to` (a cast), "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        if isinstance(node.value, cst.Name):
            return f"{node.value.value}.{node.attr.value}"
        return node.attr.value
    return ""


def _load_call(value: cst.BaseExpression) -> cst.Call | None:
    """The `tl.load(...)` call of `tl.load(...)` or `tl.load(...).to(dtype)`, else None."""
    if isinstance(value, cst.Call) and _dotted(value.func) == "to" and isinstance(value.func, cst.Attribute):
        value = value.func.value
    return value if isinstance(value, cst.Call) and _dotted(value.func) == "tl.load" else None


def _is_element(address: cst.BaseExpression) -> bool:
    """Whether `address` is `pointer + index`, two plain names (Inductor's load of a lane's own element)."""
    return (
        isinstance(address, cst.BinaryOperation)
        and isinstance(address.operator, cst.Add)
        and isinstance(address.left, cst.Name)
        and isinstance(address.right, cst.Name)
    )


def _base_pointer(address: cst.BaseExpression) -> str | None:
    """`ptr` for an address `ptr` or `ptr + offset` (Inductor's form), else None."""
    while isinstance(address, cst.BinaryOperation) and isinstance(address.operator, cst.Add):
        address = address.left
    return address.value if isinstance(address, cst.Name) else None
