"""Memory: masked loads of input tensors at any index (an affine index is a contiguous or strided read, a
computed one a gather), and the stores of outputs and in-place writes. It takes the emitter, not the
Evaluator: the Evaluator loads through it and the kernel writer stores through it, and neither is imported.

Offsets are `sum(index_d * stride_d)`. A tensor laid out row-major on every traced case (fresh outputs, and
inputs the trace found contiguous) has strides that are products of its sizes, which the kernel already
takes: they are no arguments. Other inputs' strides are passed at run time (Triton specialises a stride of
1, so the innermost axis of a contiguous tensor is read with vector loads). A grid index is widened to int64
before it meets a stride: rows times row stride overflow int32 on large tensors; with `index32` a row-major
tensor's are not (its offsets stay below its element count, which the shipped guard keeps under 2**31, as
Inductor's int32 indexing assumes), an argument-strided one's still are.
"""

from __future__ import annotations

import re

import sympy

from evolution.writers.fusion import symbols
from evolution.writers.fusion.emit import Emitter
from evolution.writers.fusion.model import Placeholder
from evolution.writers.fusion.params import Param
from evolution.writers.fusion.tiles import STORAGE_DTYPE, TL_DTYPE, Index, Tile, compute_dtype


def tensor_name(source: str) -> str:
    return re.sub(r"\W+", "_", source).strip("_")


def pointer(emitter: Emitter, source: str) -> str:
    name = tensor_name(source)
    return emitter.params.add(Param(f"{name}_ptr", source, "pointer"))


def offsets(
    emitter: Emitter, source: str, index: Index, sizes: list[int], shape: tuple[sympy.Expr, ...] = ()
) -> Tile | None:
    """sum(index_d * stride_d) over the dims of size > 1; None for a single element. With `shape` (a
    tensor laid out row-major) the strides are products of its sizes, not arguments."""
    name = tensor_name(source)
    terms: list[Tile] = []
    formats: list[str] = []
    for dim, (entry, size) in enumerate(zip(index, sizes, strict=True)):
        if size == 1:
            continue
        tile = emitter.index_tile(entry)
        narrow = bool(shape) and emitter.options.index32  # offsets below the tensor's numel fit int32
        if tile.grid and tile.dtype != "i64" and not narrow and (tile.is_scalar or _rows(emitter, tile)):
            tile = emitter.unary("{a}.to(tl.int64)", tile, "i64")
        if shape:
            # A size as stride scales its index within the offsets' one expression (`row * N + col`).
            stride = emitter.params.size(sympy.Mul(*shape[dim + 1 :]))
            if stride == "1" and terms and terms[0].dtype == "i64":
                tile = emitter.unwidened(tile)  # added to an int64 sum: widened there, not before
            terms.append(tile)
            formats.append("{}" if stride == "1" else f"{{}} * {stride}")
            continue
        stride = emitter.params.add(Param(f"{name}_stride{dim}", f"{source}.stride({dim})", "stride"))
        terms.append(emitter.binary("{a} * {b}", tile, Tile(stride, (), "i64"), tile.dtype))
        formats.append("{}")
    if not terms:
        return None
    if formats == ["{}"]:
        return terms[0]
    parts = [f if f == "{}" or len(terms) == 1 else f"({f})" for f in formats]
    return emitter.combine(" + ".join(parts), terms, "i64")


def _rows(emitter: Emitter, tile: Tile) -> bool:
    """`tile` is a program's `ROWS` rows (a few indices, widened as cheaply as one): a block along the
    innermost axis stays int32, its offsets being added to the widened row's."""
    binding = emitter.region.bindings.get(tile.atoms[0]) if len(tile.atoms) == 1 else None
    return binding is not None and binding.rows


def load_tensor(emitter: Emitter, p: Placeholder, index: Index, sizes: list[int], guard: Tile | None) -> Tile:
    """tl.load of input `p` (of `sizes`, the trace's hints) at `index`, masked to the atoms and `guard`, in
    the compute dtype."""
    assert p.meta is not None
    base = pointer(emitter, p.source)
    shape = tuple(symbols.parse(s) for s in p.meta.shape) if p.meta.contiguous else ()
    offset = offsets(emitter, p.source, index, sizes, shape)
    storage = p.meta.dtype
    dtype = compute_dtype(storage)
    if offset is None:
        raw = emitter.let(f"tl.load({base})", (), dtype, frozenset(), prefix=f"{tensor_name(p.source)}_")
        return _to_compute(emitter, raw, storage, dtype)
    mask = emitter.mask(set(offset.atoms), guard)
    atoms = emitter.union(offset, *([mask] if mask is not None else []))
    if offset.atoms != atoms:  # a guard over more axes than the address: one address per masked lane
        offset = emitter.full(offset, atoms)
    arguments = [f"{base} + {emitter.align(offset, atoms)}"]
    if mask is not None:
        arguments += [f"mask={emitter.align(mask, atoms)}", "other=0"]
    if emitter.options.eviction:
        # Row-invariant values, and what a first pass reads that the pass after it reads again, stay in L2.
        again = any(b.preloop for b in emitter.stack)
        streamed = offset.grid and not again
        arguments.append('eviction_policy="evict_first"' if streamed else 'eviction_policy="evict_last"')
    grid = offset.grid | (mask.grid if mask is not None else frozenset())
    raw = emitter.let(
        f"tl.load({', '.join(arguments)})", atoms, dtype, grid, prefix=f"{tensor_name(p.source)}_"
    )
    if atoms:
        emitter.region.load_shapes.add(tuple(emitter.extent_code(a) for a in atoms))
    return _to_compute(emitter, raw, storage, dtype)


def _to_compute(emitter: Emitter, raw: Tile, storage: str, dtype: str) -> Tile:
    if storage in ("bfloat16", "float16"):
        widened = emitter.unary("{a}.to(tl.float32)", raw, dtype)
        emitter.exact_in(widened, storage)  # rounding a widened load back is the identity
        return widened
    return raw


def store_tensor(
    emitter: Emitter,
    source: str,
    index: Index,
    sizes: list[int],
    value: Tile,
    storage: str,
    shape: tuple[sympy.Expr, ...] = (),
) -> None:
    """tl.store of `value` into `source` at `index`, cast to the tensor's dtype, masked to the atoms; `shape`
    for a tensor laid out row-major (its strides follow from it)."""
    base = pointer(emitter, source)
    offset = offsets(emitter, source, index, sizes, shape)
    if storage not in STORAGE_DTYPE:
        raise KeyError(storage)
    target = STORAGE_DTYPE[storage]
    if storage == "float16" and value.dtype in ("fp32", "fp64"):
        value = emitter.rounded(value, storage)
    atoms = emitter.union(value, *([offset] if offset is not None else []))
    mask = emitter.mask(set(atoms))
    code = emitter.align(value, atoms) if atoms else value.code
    if storage in ("float32", "bfloat16", "float16") and emitter.options.stores_by_pointer:
        # The pointer's own element type: kernels of specialisations that differ only in the output's
        # float dtype are then one kernel (generate.py shares equal kernels).
        code = f"{_paren(code)}.to({base}.dtype.element_ty)"
    elif not (storage == "bool" and value.dtype == "i1") and TL_DTYPE.get(value.dtype) != target:
        code = f"{_paren(code)}.to({target})"
    address = f"{base} + {emitter.align(offset, atoms)}" if offset is not None else base
    arguments = [address, code]
    if mask is not None:
        arguments.append(f"mask={emitter.align(mask, atoms)}")
    emitter.store(f"tl.store({', '.join(arguments)})")


def _paren(code: str) -> str:
    return code if code.isidentifier() else f"({code})"
