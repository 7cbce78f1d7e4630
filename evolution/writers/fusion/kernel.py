"""The kernel of one specialisation: its stores planned on a grid, each region's code, the @triton.jit text.

pid = tl.program_id(0)                       (a persistent kernel loops over pid instead)
pid_<row> = pid % GRID_<row> ...             (one index per grid atom, innermost fastest)
<region>                                     (values first, then the stores)
if pid_<row> == 0:                           (a store that lacks a grid atom, or spans it)
    <region>
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from evolution.writers.fusion import naming, symbols
from evolution.writers.fusion.code_text import (
    inline_single_use,
    rounding_explained,
    without_redundant_parentheses,
    without_round_trips,
)
from evolution.writers.fusion.emit import Emitter, Options
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.evaluate import Evaluator
from evolution.writers.fusion.in_place import barriers_explained, fence_in_place_stores
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.lower import LOWERINGS
from evolution.writers.fusion.memory import store_tensor
from evolution.writers.fusion.model import Graph
from evolution.writers.fusion.params import KernelParams, Param
from evolution.writers.fusion.rebind_order import reads_before_rebinding, stored_values
from evolution.writers.fusion.region import ROWS_BLOCK, Block
from evolution.writers.fusion.rows import (
    GridAxis,
    Plan,
    StorePlan,
    check_cross_reads,
    dry_run,
    plan_grid,
    plan_loop,
    plan_regions,
)
from evolution.writers.fusion.schedule import issue_loads_early
from evolution.writers.fusion.stores import Store, build_stores
from evolution.writers.fusion.tiles import Affine, Atom, AtomTable


@dataclass
class KernelCode:
    name: str
    text: str
    params: list[Param]
    grid: list[tuple[str, str]]  # (kernel parameter, host expression) of every grid axis' program count
    stores: list[Store]
    holders: dict[int, str]  # graph output -> host expression holding it
    tile_elements: str  # host expression: elements of the largest register tile (sizes num_warps)
    persistent: bool = False  # the grid is at most PROGRAMS programs, each looping over grid indices
    split_block: str = ""  # the block a launch of fewer than SMALL_GRID programs shrinks to SMALL_BLOCK
    notes: list[str] = field(default_factory=list)


def build_kernel(
    graph: Graph, knobs: Knobs, name: str, line_length: int = 110, *, shared_stores: bool = True
) -> KernelCode:
    """The kernel of `graph`; `shared_stores`: its float stores cast to their pointer's element type, as
    every specialisation's do where there are several (see Options)."""
    stores, holders = build_stores(graph)
    if not stores:
        raise LoweringError("the reference computes nothing a kernel would write (it returns its inputs)")
    table = AtomTable()
    params = KernelParams(graph.symbols, set(graph.dynamic_symbols), graph.size_names)
    plans = dry_run(graph, stores, table, params)
    grid = plan_grid(plans, graph, knobs)
    loop = plan_loop(plans, grid, graph, knobs)
    regions = plan_regions(plans, grid, loop)
    check_cross_reads(graph, regions)
    plan = Plan(plans, grid, regions)
    # the dry run's parameters are dropped
    params = KernelParams(graph.symbols, set(graph.dynamic_symbols), graph.size_names)
    options = Options(
        emulate_rounding=knobs.rounding,
        eviction=knobs.eviction,
        topk=knobs.topk,
        reload=knobs.reload,
        index32=knobs.index32,
        stores_by_pointer=shared_stores,
    )
    names = itertools.count()
    hints = naming.Hints()
    guarded = {atom for region, _ in plan.regions for atom in region.guarded}
    grid_params = _grid_params(params, grid, guarded)
    split_block = _split_block(grid, grid_params, knobs)
    if loop is not None:
        extent = params.host_size(loop.extent)
        host = f"min(BLOCK, triton.next_power_of_2({extent}))"
        params.add(Param(f"BLOCK_{loop.name.upper()}", host, "size", True, "elements per chunk (a knob)"))
    persistent = knobs.persistent > 0
    for region, members in plan.regions:
        region.hoist = persistent and not region.guarded
        emitter = Emitter(params, region, table, names, options, hints)
        evaluator = Evaluator(graph, emitter, table, LOWERINGS)
        looped = loop is not None and any(loop in m.atoms for m in members)
        with emitter.loop(loop) if loop is not None and looped else contextlib.nullcontext():
            values = [evaluator.eval(m.store.value, m.index) for m in members]
            for member, value in zip(members, values, strict=True):
                _store(evaluator, member, value)
    text = _kernel_text(name, params, plan, grid_params, persistent)
    tile_elements = _tile_elements(params, plan, knobs)
    # Readable names: values after what they hold, axes after their role (naming.py).
    atoms = _atom_names(table, plan, params)
    _name_row_blocks(text, plan, hints)
    # In the reference's order where a value is rebound: `x` again, not `x_2` (rebind_order.py).
    text, stored = stored_values(text, hints.from_reference())
    for stored_name, base in stored.items():
        hints.add(stored_name, base, 3)
    text = reads_before_rebinding(text, hints.from_reference())
    value_names = naming.rename_map(text, hints, atoms)
    renamed = {p: naming.atom_text(p, atoms) for p in params.params if p.startswith(("GRID_", "BLOCK_"))}
    text = naming.apply(naming.apply(text, value_names), renamed)
    # What the reference named keeps its name; other values read once, and address arithmetic, are
    # inlined within the line limit, with room where a building block's name may grow (a crossover's
    # `_small`).
    named = {new for old, new in value_names.items() if (hint := hints.get(old)) and hint[0] >= 3}
    text = without_redundant_parentheses(text)
    text = without_round_trips(inline_single_use(text, line_length, named=named, call_margin=10))
    text = naming.names_freed_by_loops(text)
    text = barriers_explained(rounding_explained(text, line_length), line_length)
    text = _rows_widened_where_bound(text)
    for param in params.params.values():
        param.name = renamed.get(param.name, param.name)
        param.host = naming.apply(param.host, renamed)  # a grid count divides by its block
    return KernelCode(
        name=name,
        text=text,
        params=list(params.params.values()),  # in the order the host binds them
        grid=[(renamed.get(n, n), naming.apply(host, renamed)) for n, host, _ in grid_params],
        stores=stores,
        holders=holders,
        tile_elements=naming.apply(tile_elements, renamed),
        persistent=persistent,
        split_block=renamed.get(split_block, split_block),
    )


def _atom_names(table: AtomTable, plan: Plan, params: KernelParams) -> dict[str, str]:
    """Atom -> a name for its role: `row` for the one row axis of the grid (one row a program or ROWS),
    `col` for the one axis a program holds (or blocks) along a row, else the size parameter of its extent
    (`topk`; `experts` for `num_experts`)."""
    grid = {axis.atom.name: axis for axis in plan.grid}
    # A grid axis a program takes ROWS of (a knob) is still the rows' axis.
    row_axes = {name for name, axis in grid.items() if not axis.block or axis.rows}
    rows = [a for a in table.atoms if a.name in row_axes]
    cols = [a for a in table.atoms if a.name not in row_axes]
    names: dict[str, str] = {}
    taken: set[str] = set()
    for group, single in ((rows, "row"), (cols, "col")):
        for atom in group:
            if len(group) == 1:
                base = single
            elif atom.extent.is_Integer:
                base = f"n{int(atom.extent)}"
            else:
                base = naming.identifier(params.size(atom.extent))
                if re.fullmatch(r"size_\d+", base):
                    base = f"{single}_dim"
                # an axis over a count is named for what it counts: `offs_experts`, `experts_mask`
                base = re.sub(r"^(num|n)_(?=[a-z])", "", base)
            name = base
            k = 2
            while name in taken:
                name, k = f"{base}_{k}", k + 1
            taken.add(name)
            names[atom.name] = name
    return names


def _name_row_blocks(text: str, plan: Plan, hints: naming.Hints) -> None:
    """Where a program takes ROWS rows (`rows = pid * ROWS + tl.arange(0, ROWS)`, named by the emitter),
    its index is the block's: `pid`, or `block` where the kernel's `pid` is the launch's flat index; not a
    `row` that is a block."""
    for axis in plan.grid:
        if axis.rows:
            hints.add(f"pid_{axis.atom.name}", "block" if re.search(r"\bpid\b", text) else "pid", 3)


def _store(ev: Evaluator, plan: StorePlan, value: object) -> None:
    store = plan.store
    index = [Affine.constant(0)] * store.target_rank
    for value_dim, (target_dim, start, step) in enumerate(store.placement):
        index[target_dim] = plan.entries[value_dim].scaled(step).offset(start)
    sizes = [symbols.evaluate(e, ev.graph.hints) for e in store.full_shape]
    shape = store.full_shape if store.fresh or store.contiguous else ()
    store_tensor(ev.emitter, store.target, tuple(index), sizes, value, store.storage, shape)  # type: ignore[arg-type]


def _grid_params(
    params: KernelParams, grid: list[GridAxis], guarded: set[Atom]
) -> list[tuple[str, str, str]]:
    """Per grid axis: the parameter of its program count, the host expression, and the kernel's code for
    it. A count over constexpr sizes only is computed in the kernel (`tl.cdiv(N, BLOCK_N)`, folded at
    compile time), so its parameter is not passed. A blocked axis that a region runs only at block 0 of
    (`guarded`: stores that lack it, a cumsum beside per-page writes) has at least one block, so that region
    runs when the axis is empty too (its lanes are all masked then)."""
    counts = []
    for axis in grid:
        extent = params.host_size(axis.atom.extent)
        dynamic = bool(symbols.symbols_of(axis.atom.extent) & params.dynamic)
        if axis.rows:
            params.add(Param(ROWS_BLOCK, ROWS_BLOCK, "size", True, "rows per program (a knob)"))
        elif axis.block:
            # A dynamic extent keeps the knob's block (a block sized by it would compile one kernel per size).
            host = "BLOCK" if dynamic else f"min(BLOCK, triton.next_power_of_2({extent}))"
            params.add(Param(axis.block, host, "size", True, "elements per program (a knob)"))
        host = extent if not axis.block else f"triton.cdiv({extent}, {axis.block})"
        at_least_one = bool(axis.block) and not axis.rows and axis.atom in guarded
        if at_least_one:
            host = f"max({host}, 1)"
        name = f"GRID_{axis.atom.name.upper()}"
        params.add(Param(name, host, "size", False, f"programs along {axis.atom.name}"))
        code = name
        if not dynamic and not at_least_one:
            size = params.size(axis.atom.extent)
            code = size if not axis.block else f"tl.cdiv({size}, {axis.block})"
        counts.append((name, host, code))
    return counts


def _split_block(grid: list[GridAxis], grid_params: list[tuple[str, str, str]], knobs: Knobs) -> str:
    """The block a small launch may split (knob `small_grid`): that of the one blocked axis, when its
    program count is computed in the kernel (a count passed as an argument is bound before the split)."""
    blocked = [
        (axis.block, name == code)
        for axis, (name, _, code) in zip(grid, grid_params, strict=True)
        if axis.block and not axis.rows
    ]
    if knobs.small_grid <= 0 or knobs.persistent or len(blocked) != 1 or blocked[0][1]:
        return ""
    return blocked[0][0]


def prune(blocks: Sequence[list[str] | list[str | Block]]) -> None:
    """Drop assignments nothing reads (a view's unused remainder, a mask no load needs), in place. A
    region's prologue holds text only; its body's items nest blocks."""
    assignment = re.compile(r"^\s*(\w+) = ")
    pair = re.compile(r"^\s*(\w+), (\w+) = ")

    def texts(items: Sequence[str | Block]) -> list[str]:
        found: list[str] = []
        for item in items:
            if isinstance(item, Block):
                found.append(item.header)
                found.extend(texts(item.items))
            else:
                found.append(item)
        return found

    every = [items for lines in blocks for items in _item_lists(lines)]
    while True:
        counts: dict[str, int] = {}
        for text in (t for lines in blocks for t in texts(lines)):
            for word in re.findall(r"\b\w+\b", text):
                counts[word] = counts.get(word, 0) + 1
        removed = False
        for items in every:
            for k in reversed(range(len(items))):
                item = items[k]
                if not isinstance(item, str):
                    continue
                match = assignment.match(item)
                if match and counts.get(match.group(1), 0) == 1:
                    del items[k]
                    removed = True
                elif match := pair.match(item):  # an output of a pair that nothing reads is `_`
                    for name in (n for n in match.groups() if n != "_" and counts.get(n, 0) == 1):
                        item = re.sub(rf"\b{name}\b", "_", item, count=1)
                    items[k] = item
        if not removed:
            return


def _item_lists(items: list[str] | list[str | Block]) -> list[list[str] | list[str | Block]]:
    """The list itself and the items of every block nested in it: where prune removes lines."""
    return [items, *(b.items for item in items if isinstance(item, Block) for b in item.walk())]


def _kernel_text(
    name: str, params: KernelParams, plan: Plan, grid: list[tuple[str, str, str]], persistent: bool
) -> str:
    ordered = in_signature_order(list(params.params.values()))
    signature = ", ".join(f"{p.name}: tl.constexpr" if p.constexpr else p.name for p in ordered)
    lines = ["@triton.jit", f"def {name}({signature}):"]
    prune([region.prologue for region, _ in plan.regions] + [region.root.items for region, _ in plan.regions])
    for region, _ in plan.regions:
        issue_loads_early(region.root)
    prologue = [line for region, _ in plan.regions for line in region.prologue]
    fence_in_place_stores(prologue, [region.root for region, _ in plan.regions])
    body: list[str] = []
    decomposition: list[str] = []
    if grid:
        # A launch's outermost index needs no modulo: pid is below the product of the counts. A persistent
        # loop keeps it (its pid is a plain integer under the interpreter, the modulo makes it a tensor).
        inner: list[str] = []  # the counts of the axes inside this one (innermost first)
        for k, ((_, _, count), axis) in reversed(list(enumerate(zip(grid, plan.grid, strict=True)))):
            index = "pid" if not inner else f"pid // {_product(inner)}"
            if k > 0 or persistent:
                index = f"{index} % {count}" if not inner else f"({index}) % {count}"
            decomposition.append(f"pid_{axis.atom.name} = {index}")
            inner.append(count)
    for region, _ in plan.regions:
        if region.guarded:
            test = " & ".join(f"(pid_{a.name} == 0)" for a in region.guarded)
            body.append("# These outputs do not span the whole launch: one program writes them")
            body.append(f"if {test}:")
            body.extend(region.root.render("    "))
        else:
            body.extend(region.root.render())
    if persistent:
        total = " * ".join(code for _, _, code in grid) or "1"
        lines.append("    first = tl.program_id(0)")
        lines.extend(f"    {line}" for line in prologue)
        lines.append(f"    for pid in range(first, {total}, tl.num_programs(0)):")
        lines.extend(f"        {line}" for line in decomposition + body)
    elif len(grid) == 1 and not re.search(r"\bpid\b", "\n".join(prologue + body)):
        index = f"pid_{plan.grid[0].atom.name}"
        reads = [line for line in prologue + body if re.search(rf"\b{index}\b", line)]
        widened = re.fullmatch(rf"(\w+) = {index}\.to\(tl\.int64\)", reads[0]) if len(reads) == 1 else None
        if widened:
            # The index read only as int64 (for offsets): the program id is widened where it is bound.
            lines.append(f"    {index} = tl.program_id(0).to(tl.int64)")
            prologue, body = (
                [re.sub(rf"\b{widened[1]}\b", index, line) for line in part if line != widened[0]]
                for part in (prologue, body)
            )
        else:
            lines.append(f"    {index} = tl.program_id(0)")
        lines.extend(f"    {line}" for line in prologue + body)
    else:
        lines.append("    pid = tl.program_id(0)")
        lines.extend(f"    {line}" for line in prologue + decomposition + body)
    text = "\n".join(lines[2:])
    # Only the parameters the code reads (a grid count the decomposition no longer needs stays host-side).
    used = [p for p in ordered if re.search(rf"\b{p.name}\b", text)]
    derived = params.derived({p.name for p in used})
    if derived:
        defined = [f"    {name}: tl.constexpr = {code}" for name, code in derived.items()]
        lines[2:2] = defined
        used = [p for p in used if p.name not in derived]
    for param in ordered:
        if param not in used:
            del params.params[param.name]
    signature = ", ".join(f"{p.name}: tl.constexpr" if p.constexpr else p.name for p in used)
    lines[1] = f"def {name}({signature}):"
    return "\n".join(lines)


_ROWS_BINDING = re.compile(rf"^(\s+)(rows\w*) = (\w+ \* {ROWS_BLOCK} \+ tl\.arange\(0, {ROWS_BLOCK}\))$")


def _rows_widened_where_bound(text: str) -> str:
    """A program's rows that some offsets read widened (`rows.to(tl.int64)`, rows times a row stride
    overflowing int32) are widened once, where they are bound: one line that says the kernel's offsets are
    int64, and the form crossover.index_width merges with the int32 kernel. Their other reads (the row mask)
    take int64 as they take int32."""
    lines = text.split("\n")
    for k, line in enumerate(lines):
        bound = _ROWS_BINDING.match(line)
        if bound is None:
            continue
        widened = re.compile(rf"\b{bound[2]}\.to\(tl\.int64\)")
        if not any(widened.search(other) for other in lines[k + 1 :]):
            continue
        lines[k] = f"{bound[1]}{bound[2]} = ({bound[3]}).to(tl.int64)"
        lines[k + 1 :] = [widened.sub(bound[2], other) for other in lines[k + 1 :]]
    return "\n".join(lines)


def _product(counts: list[str]) -> str:
    return counts[0] if len(counts) == 1 else f"({' * '.join(counts)})"


def in_signature_order(params: list[Param]) -> list[Param]:
    """Pointers, strides, scalars, run-time sizes, then the constexprs: the kernel's signature, and the
    order its launch passes them in."""
    rank = {"pointer": 0, "stride": 1, "scalar": 2, "size": 3}
    return sorted(params, key=lambda p: (p.constexpr, rank[p.kind]))


def _tile_elements(params: KernelParams, plan: Plan, knobs: Knobs) -> str:
    """Expression (over the launch's own size variables) for the elements of the largest tile a program
    loads (what its threads share; a top-k's compare tiles do not need more warps), else of any tile."""
    tiles = {tuple(shape) for region, _ in plan.regions for shape in region.load_shapes}
    if not tiles:
        tiles = {tuple(shape) for region, _ in plan.regions for shape in region.shapes}
    largest = [shape for shape in tiles if not _within_another(shape, tiles)]
    if not largest:
        return "1"
    if len(largest) == 1:
        return " * ".join(largest[0])
    # An extent every tile has (a program's ROWS) multiplies the maximum once: `ROWS * max(E, G * S)`.
    common = Counter(largest[0])
    for shape in largest[1:]:
        common &= Counter(shape)
    rests = sorted(" * ".join((Counter(shape) - common).elements()) or "1" for shape in largest)
    factor = "".join(f"{extent} * " for extent in sorted(common.elements()))
    return f"{factor}max({', '.join(rests)})"


def _within_another(shape: tuple[str, ...], shapes: set[tuple[str, ...]]) -> bool:
    """Whether another tile has every extent of `shape` and more: it is never smaller (extents are at
    least 1), so the largest tile's expression need not name `shape`."""
    own = Counter(shape)
    return any(other != shape and not own - Counter(other) for other in shapes)
