"""Read a crossover child's size routing as a tree (crossover.routes writes it flat).

The entry of a bucket crossover's child is a size dispatcher (crossover.source writes it): the bytes of the
tensor arguments pick one call or another, and a call may reach another dispatcher. Every leaf (a host
function, launched with the constants its call passes) runs on one interval of input bytes. `read_routing`
finds the leaves, takes the launch tables' keyword-only parameters out again (each function reads the module
constant its parameter defaulted to), and groups the leaves whose code is the same up to the names of its
module-level definitions and the values of constants only host (undecorated) functions read: one copy of
such code can serve them all, launched with each leaf's values. Nothing here runs candidate code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import libcst as cst

from evolution.mutators.crossover.source import literal, top_level


class RoutingError(Exception):
    """The block's routing is not one crossover.source writes (the block is then left as it is)."""


@dataclass(frozen=True)
class _Dispatch:
    bound: int  # inputs of at most this many bytes take `small`
    small: ast.Call
    large: ast.Call
    total: str  # the name of the byte count
    tensors: ast.expr  # what it sums over


@dataclass
class Leaf:
    low: int  # exclusive; -1 for "from nothing"
    high: int | None  # inclusive; None for no bound
    function: str
    call: ast.Call  # as a dispatcher wrote it
    overrides: dict[str, str] = field(default_factory=dict)  # module constant -> value (source text)


def _constants(defs: dict[str, ast.stmt]) -> dict[str, str]:
    """Module constants bound to a literal: name -> value (source text)."""
    return {
        name: ast.unparse(node.value)
        for name, node in defs.items()
        if isinstance(node, ast.Assign) and literal(node.value)
    }


def _dispatch(node: ast.stmt | None, constants: dict[str, str]) -> _Dispatch | None:
    """The routing of a size dispatcher as crossover.source writes it (sum the tensor arguments' bytes, then
    `if total <= BOUND: return small(...)` / `return large(...)`); None for any other statement."""
    if not isinstance(node, ast.FunctionDef) or node.decorator_list:
        return None
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    if len(body) != 4:
        return None
    start, loop, test, last = body
    if not (
        isinstance(start, ast.Assign)
        and isinstance(start.targets[0], ast.Name)
        and isinstance(loop, ast.For)
        and "element_size()" in ast.unparse(loop)
        and isinstance(test, ast.If)
        and not test.orelse
        and len(test.body) == 1
        and isinstance(test.body[0], ast.Return)
        and isinstance(test.body[0].value, ast.Call)
        and isinstance(last, ast.Return)
        and isinstance(last.value, ast.Call)
        and isinstance(test.test, ast.Compare)
        and len(test.test.ops) == 1
        and isinstance(test.test.ops[0], ast.LtE)
    ):
        return None
    total = start.targets[0].id
    left, bound = test.test.left, test.test.comparators[0]
    if not (isinstance(left, ast.Name) and left.id == total):
        return None
    if isinstance(bound, ast.Name) and bound.id in constants:
        value = ast.literal_eval(constants[bound.id])
    elif isinstance(bound, ast.Constant):
        value = bound.value
    else:
        return None
    if type(value) is not int:
        return None
    return _Dispatch(value, test.body[0].value, last.value, total, loop.iter)


def _leaves(
    call: ast.Call,
    low: int,
    high: int | None,
    defs: dict[str, ast.stmt],
    dispatchers: dict[str, _Dispatch],
    out: list[Leaf],
) -> None:
    """The leaves `call` reaches for inputs of (low, high] bytes, in increasing size, into `out`."""
    if not isinstance(call.func, ast.Name) or call.func.id not in defs:
        raise RoutingError("a route calls something other than a function of the block")
    name = call.func.id
    overrides = {kw.arg: ast.unparse(kw.value) for kw in call.keywords if kw.arg and literal(kw.value)}
    for kw in call.keywords:
        passed_on = isinstance(kw.value, ast.Name) and kw.value.id == kw.arg
        if kw.arg is None or not (passed_on or kw.arg in overrides):
            raise RoutingError("a route passes something other than its arguments and literal constants")
    if name in dispatchers:
        if overrides:
            raise RoutingError("a dispatcher is called with constants")
        route = dispatchers[name]
        small_high = route.bound if high is None else min(high, route.bound)
        if small_high > low:
            _leaves(route.small, low, small_high, defs, dispatchers, out)
        large_low = max(low, route.bound)
        if high is None or high > large_low:
            _leaves(route.large, large_low, high, defs, dispatchers, out)
        return
    function = defs[name]
    assert isinstance(function, (ast.FunctionDef, ast.ClassDef, ast.Assign))
    defaults = _threaded(function) if isinstance(function, ast.FunctionDef) else {}
    constants: dict[str, str] = {}
    for param, value in overrides.items():
        if param not in defaults:
            raise RoutingError(f"{name}() is passed {param}, not a constant it takes")
        constants[defaults[param]] = value
    out.append(Leaf(low, high, name, call, constants))


def _threaded(function: ast.FunctionDef) -> dict[str, str]:
    """The keyword-only parameters a launch table added to `function` (crossover.source.ThreadConstants),
    named as the constant they default to before it took a crossover suffix: param -> constant."""
    if function.decorator_list:
        return {}
    found: dict[str, str] = {}
    for arg, default in zip(function.args.kwonlyargs, function.args.kw_defaults, strict=True):
        if isinstance(default, ast.Name) and (default.id == arg.arg or default.id.startswith(arg.arg + "_")):
            found[arg.arg] = default.id
    return found


class _UnThread(cst.CSTTransformer):
    """The block with the launch tables' parameters taken out again: each function reads the module constant
    its parameter defaulted to, and the calls that passed the parameter on pass nothing. Dispatchers are
    left as they are (they are rewritten, and their calls may pass other values)."""

    def __init__(self, threaded: dict[str, dict[str, str]], dispatchers: set[str]) -> None:
        self.threaded = threaded
        self.dispatchers = dispatchers
        self.current: list[str] = []
        self.keywords: set[int] = set()  # Name nodes that name an argument, not a value

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.current.append(node.name.value)
        return node.name.value not in self.dispatchers

    def leave_FunctionDef(
        self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef
    ) -> cst.FunctionDef:
        name = self.current.pop()
        taken = self.threaded.get(name) if not self.current else None
        if not taken:
            return updated_node
        params = updated_node.params
        kwonly = [p for p in params.kwonly_params if p.name.value not in taken]
        star = params.star_arg
        plain = list(params.params)
        if not kwonly and isinstance(star, cst.ParamStar):
            star = cst.MaybeSentinel.DEFAULT
            if plain and not params.star_kwarg:  # no comma left dangling after the last parameter
                plain[-1] = plain[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if kwonly and not params.star_kwarg:
            kwonly[-1] = kwonly[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        params = params.with_changes(params=plain, kwonly_params=kwonly, star_arg=star)
        return updated_node.with_changes(params=params)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.keywords.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.keywords.add(id(node.name))  # a parameter's own name: removed, or another parameter's

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        taken = self.threaded.get(self.current[0]) if self.current else None
        if taken and original_node.value in taken and id(original_node) not in self.keywords:
            return updated_node.with_changes(value=taken[original_node.value])
        return updated_node

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.Call:
        callee = original_node.func
        if not isinstance(callee, cst.Name) or callee.value not in self.threaded:
            return updated_node
        taken = self.threaded[callee.value]
        args = []
        for arg in updated_node.args:
            key = arg.keyword.value if arg.keyword is not None else None
            if key is not None and key in taken:
                value = arg.value
                if not (isinstance(value, cst.Name) and value.value == taken[key]):
                    raise RoutingError(f"{callee.value}() is passed {key} other than as the module's")
                continue
            args.append(arg)
        if args:  # the last argument keeps no trailing comma of a removed one
            args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(args=args)


def _local_names(node: ast.stmt) -> set[str]:
    """What a function binds itself (parameters, assignment targets, loop variables): a name it reads that
    is one of these is not the module's, even where the module defines one alike (`ROWS: tl.constexpr`)."""
    if not isinstance(node, ast.FunctionDef):
        return set()
    bound = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    bound |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return bound


def _module_reads(node: ast.stmt, defs: dict[str, ast.stmt]) -> list[ast.Name]:
    """The Name nodes of `node` that read a module-level definition, in ast.walk order."""
    local = _local_names(node)
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs and n.id not in local]


def _closure(name: str, defs: dict[str, ast.stmt]) -> list[str]:
    """`name` and the module-level definitions it reads, directly or not, in the order first read."""
    order = [name]
    for current in order:
        for read in _module_reads(defs[current], defs):
            if read.id not in order:
                order.append(read.id)
    return order


def _launch_constants(order: list[str], defs: dict[str, ast.stmt], constants: dict[str, str]) -> set[str]:
    """The literal constants of a closure that only host functions read (a kernel, a class or another
    module statement reading one compiles or means something else with another value)."""
    structural: set[str] = set()
    for name in order:
        node = defs[name]
        if isinstance(node, ast.FunctionDef) and not node.decorator_list:
            continue
        structural |= {n.id for n in _module_reads(node, defs) if n.id != name}
    return {n for n in order if n in constants and n not in structural}


def _shape(order: list[str], defs: dict[str, ast.stmt], launch: set[str]) -> str:
    """The closure's code with its module-level names numbered in order, docstrings left out and the values of
    its launch constants blanked: equal for two copies of one code, whatever their suffixes and launch."""
    numbered = {name: f"_n{k}" for k, name in enumerate(order)}
    parts = []
    for name in order:
        node = ast.parse(ast.unparse(defs[name])).body[0]
        if isinstance(node, ast.Assign) and name in launch:
            node.value = ast.Constant(None)
        for read in _module_reads(node, defs):
            read.id = numbered.get(read.id, read.id)
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                sub.name = numbered.get(sub.name, sub.name)
                if ast.get_docstring(sub) is not None:
                    sub.body = sub.body[1:] or [ast.Pass()]
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store) and sub.id == name:
                sub.id = numbered[name]  # the constant's own target
        parts.append(ast.dump(node))
    return "\n".join(parts)


@dataclass
class Group:
    """Leaves that run one code: the first one's copy ships, the others launch it with their constants."""

    order: list[str]  # the shipped copy's closure
    launch: list[str]  # its launch constants, in closure order
    leaves: list[Leaf] = field(default_factory=list)
    calls: list[dict[str, str]] = field(default_factory=list)  # per leaf: constant -> value it differs in
    # Each name another leaf's copy gives a definition -> the shipped copy's name for it (its place in the
    # closure, the order _shape numbers them in).
    twins: dict[str, str] = field(default_factory=dict)


def _groups(leaves: list[Leaf], defs: dict[str, ast.stmt], constants: dict[str, str]) -> list[Group]:
    groups: dict[str, Group] = {}
    for leaf in leaves:
        order = _closure(leaf.function, defs)
        launch = _launch_constants(order, defs, constants)
        if set(leaf.overrides) - launch:
            raise RoutingError(f"{leaf.function}() is launched with a constant its kernels read")
        key = _shape(order, defs, launch)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(order, [n for n in order if n in launch])
        mine = [n for n in order if n in launch]  # positionally the group's constants (one shape)
        values = {
            ours: leaf.overrides.get(n, constants[n]) for ours, n in zip(group.launch, mine, strict=True)
        }
        group.twins.update((n, ours) for ours, n in zip(group.order, order, strict=True) if n != ours)
        group.leaves.append(leaf)
        group.calls.append({n: v for n, v in values.items() if v != constants[n]})
    return list(groups.values())


@dataclass(frozen=True)
class RoutingTree:
    text: str  # the block with the launch tables' parameters taken out
    dispatchers: int  # how many size dispatchers the block holds
    tensors: ast.expr  # what the entry's dispatcher counts the bytes of
    params: set[str]  # the entry's parameter names
    leaves: list[Leaf]  # in increasing size
    groups: list[Group]  # leaves that run one code, in the order of their first interval
    constants: dict[str, str]  # the literal module constants of `text`


def read_routing(block: str, entry: str) -> RoutingTree | None:
    """The routing of `block` (an EVOLVE-BLOCK) from its entry; None when the entry is no size dispatcher.
    Raises RoutingError when the routing is not the one crossover.source writes."""
    defs = top_level(block)
    constants = _constants(defs)
    dispatchers = {n: d for n, node in defs.items() if (d := _dispatch(node, constants)) is not None}
    entry_def = defs.get(entry)
    if entry not in dispatchers or not isinstance(entry_def, ast.FunctionDef):
        return None
    leaves: list[Leaf] = []
    _leaves(ast.Call(ast.Name(entry, ast.Load()), [], []), -1, None, defs, dispatchers, leaves)
    params = {a.arg for a in ast.walk(entry_def.args) if isinstance(a, ast.arg)}
    for leaf in leaves:
        if not {n.id for n in ast.walk(leaf.call) if isinstance(n, ast.Name)} - {leaf.function} <= params:
            raise RoutingError("a route passes names the entry does not take")
    threaded = {
        name: taken
        for name, node in defs.items()
        if isinstance(node, ast.FunctionDef) and name not in dispatchers and (taken := _threaded(node))
    }
    text = cst.parse_module(block).visit(_UnThread(threaded, set(dispatchers))).code
    defs = top_level(text)
    constants = _constants(defs)
    groups = sorted(_groups(leaves, defs, constants), key=lambda g: g.leaves[0].low)
    return RoutingTree(text, len(dispatchers), dispatchers[entry].tensors, params, leaves, groups, constants)
