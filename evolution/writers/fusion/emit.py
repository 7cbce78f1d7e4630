"""The code builder of one kernel region: statements with common subexpressions shared, tiles aligned by
inserting `None` axes, atom indices and masks, kernel parameters for sizes.

Statements that depend on no grid index are row-invariant (a weight, a bias, a constant): in a persistent
kernel they go to the prologue, before the loop over rows, so each program loads them once. What a region
is lives in region.py, the kernel's parameters in params.py.
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import sympy

from evolution.writers.fusion.code_text import is_literal, is_simple, literal, literal_value, wrapped
from evolution.writers.fusion.errors import LoweringError
from evolution.writers.fusion.naming import Hints
from evolution.writers.fusion.params import KernelParams, Param, next_pow2
from evolution.writers.fusion.region import ROWS_BLOCK, Binding, Block, Region
from evolution.writers.fusion.tiles import TL_DTYPE, Affine, Atom, AtomTable, Computed, IndexExpr, Tile


@dataclass
class Options:
    """Code choices a variant changes (see evolution.writers.fusion.knobs)."""

    emulate_rounding: bool = True  # round 16-bit intermediate results as eager PyTorch does
    eviction: bool = False  # streaming loads evict first, row-invariant loads evict last
    topk: str = "mask"  # which top-k block: mask | threshold | twopass | bitonic
    reload: bool = False  # a gather or regrouping view of a value held in registers loads it again
    index32: bool = False  # a row-major tensor's offsets in int32 (the guard keeps it under 2**31 elements)
    # Float stores cast to the pointer's own element type, so that specialisations differing only in an
    # output's float dtype write one kernel; a kernel of the only specialisation casts only what needs it.
    stores_by_pointer: bool = True


_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_CAST_OF_NAME = re.compile(r"([A-Za-z_]\w*)\.to\(tl\.\w+\)")  # a bound value cast to another dtype


class Emitter:
    """Builds the statements of one region. A statement goes to the deepest block any name it reads was
    defined in (a loop over an atom's chunks, or the top level); equal code is shared within a block."""

    def __init__(
        self,
        params: KernelParams,
        region: Region,
        table: AtomTable,
        names: itertools.count,
        options: Options,
        hints: Hints | None = None,
    ) -> None:
        self.hints = hints if hints is not None else Hints()  # what each bound name holds (naming.py)
        self.params = params
        self.region = region
        self.table = table
        self.names = names
        self.options = options
        self.stack: list[Block] = [region.root]
        self._defined: dict[str, Block] = {}
        # Tiles that hold a 16-bit float exactly (rounded to it, widened from it) -> that dtype.
        self._exact_in: dict[str, str] = {}
        # A bool made a number (`tl.where(c, 1.0, 0.0)`, a scattered mask) -> the bool, so casting it back
        # reads `c`; and a bool tested against zero (`x != 0`) -> the opposite test, for its negation.
        self._from_bool: dict[str, Tile] = {}
        self._widened: dict[str, Tile] = {}  # an int tile cast to a wider int -> the tile it was cast from
        self._cast_of: dict[str, str] = {}  # a bound cast (`v4 = v3.to(tl.float32)`) -> what it casts
        self._negated: dict[str, str] = {}
        # What the values emitted now are read as (`grouped` under a regrouping view, `at_topk_ids` under
        # a gather): a name such a value would share with one computed before takes it as a suffix.
        self._contexts: list[str] = []

    # --- bookkeeping -------------------------------------------------------------------------------------

    def binding(self, atom: Atom) -> Binding:
        binding = self.region.bindings.get(atom)
        if binding is None:
            binding = self.region.bindings[atom] = Binding("register")
        return binding

    def grid_atoms(self) -> set[Atom]:
        return {a for a, b in self.region.bindings.items() if b.kind == "grid"}

    def ordered(self, atoms: set[Atom] | frozenset[Atom]) -> tuple[Atom, ...]:
        return tuple(sorted(atoms, key=self.table.order))

    def fresh(self, prefix: str = "v") -> str:
        return f"{prefix}{next(self.names)}"

    def _target(self, code: str) -> Block:
        """The deepest open block that defines a name `code` reads (the top level when none)."""
        target = self.stack[0]
        for name in _NAME.findall(code):
            block = self._defined.get(name)
            if block is not None and block.depth > target.depth:
                if block not in self.stack:
                    raise LoweringError(f"internal: {name} is read outside the loop that defines it")
                target = block
        return target

    def visible(self, tile: Tile) -> bool:
        """Whether every name `tile` reads is defined in a block open now (a cached value from a closed
        loop is not)."""
        return all(
            self._defined[name] in self.stack for name in _NAME.findall(tile.code) if name in self._defined
        )

    def let(
        self, code: str, atoms: tuple[Atom, ...], dtype: str, grid: frozenset[Atom], prefix: str = "v"
    ) -> Tile:
        """Bind `code` to a new name (or return the tile already bound to the same code)."""
        if is_simple(code):
            return Tile(code, atoms, dtype, grid)
        target = self._target(code)
        # Equal code over other atoms is another value (two aranges of one extent are two axes).
        key = f"{code}@{','.join(a.name for a in atoms)}"
        found = target.cse.get(key)
        if found is not None:
            return found
        name = self.fresh(prefix)
        self._hint_kind(name, prefix)
        if self._contexts:
            self.hints.contexts[name] = self._contexts[-1]
        self._place(target, f"{name} = {code}", grid)
        if cast := _CAST_OF_NAME.fullmatch(code):
            self._cast_of[name] = cast[1]
        self._defined[name] = target
        tile = Tile(name, atoms, dtype, grid)
        if atoms:
            self.region.shapes.add(tuple(self.extent_code(a) for a in atoms))
        target.cse[key] = tile
        return tile

    def _hint_kind(self, name: str, prefix: str) -> None:
        if prefix == "v":
            return
        if re.fullmatch(r"a\d+_", prefix):  # an atom's index
            self.hints.add(name, f"offs_{prefix[:-1]}", 2)
        elif re.fullmatch(r"a\d+_mask", prefix):
            self.hints.add(name, prefix, 2)
        else:  # a load: the reference's argument
            self.hints.add(name, prefix.rstrip("_"), 3)

    @contextlib.contextmanager
    def naming_context(self, word: str) -> Iterator[None]:
        """Values bound inside are read as `word` (a layout, a gather's positions): a value computed again in
        it is named `<name>_<word>`, not `<name>_2`, where its plain name is taken."""
        self._contexts.append(word)
        try:
            yield
        finally:
            self._contexts.pop()

    def name_value(self, tile: Tile, base: str, priority: int) -> None:
        """Say what a bound value holds (the reference's variable, the op that made it)."""
        if tile.code in self._defined:
            self.hints.add(tile.code, base, priority)

    def name_loaded(self, tile: Tile, base: str, priority: int) -> None:
        """Say what a value read from memory holds, naming the load itself where `tile` is its cast to the
        compute dtype: `gate = tl.load(...)`, `gate_f32 = gate.to(tl.float32)`."""
        loaded = self._cast_of.get(tile.code, tile.code)
        if loaded in self._defined:
            self.hints.add(loaded, base, priority)

    def statement(self, text: str, grid: frozenset[Atom]) -> None:
        """A statement written by hand (`a, b = block(x)`): placed like a let, its targets defined there."""
        left, _, right = text.partition(" = ")
        target = self._target(right or text)
        self._place(target, text, grid)
        if right:
            for name in _NAME.findall(left):
                self._defined[name] = target

    def store(self, text: str) -> None:
        """A tl.store: in the deepest block it reads from, never hoisted."""
        self._target(text).add(text)

    def _place(self, target: Block, text: str, grid: frozenset[Atom]) -> None:
        if self.region.hoist and not grid and target is self.stack[0]:
            self.region.prologue.append(text)
        else:
            target.add(text)

    # --- loops over the chunks of an atom ------------------------------------------------------------------

    @contextlib.contextmanager
    def loop(self, atom: Atom) -> Iterator[Block]:
        """The main loop over `atom`'s chunks (the stores' values are computed inside it)."""
        parent = self.stack[-1]
        block = self._loop_block(atom, parent.depth + 1)
        parent.add(block)
        previous, parent.open_child = parent.open_child, block
        self.stack.append(block)
        try:
            yield block
        finally:
            self.stack.pop()
            parent.open_child = previous

    @contextlib.contextmanager
    def preloop(self, atom: Atom, why: str = "") -> Iterator[Block]:
        """A loop over `atom`'s chunks placed before the innermost open loop over it (a reduction the loop
        needs whole: the norm's sum before the loop that writes the normed row), `why` as its comment."""
        current = next((b for b in reversed(self.stack) if b.loop_atom is atom), None)
        if current is None:  # no loop over the atom is open here (a store without it): a loop of its own
            with self.loop(atom) as block:
                yield block
            return
        depth = current.depth
        parent = self.stack[depth - 1]
        block = self._loop_block(atom, depth)
        block.preloop = True
        if why:
            parent.add(f"# {why}")
        parent.add(block)
        saved, previous = self.stack, parent.open_child
        parent.open_child = block
        self.stack = [*saved[:depth], block]
        try:
            yield block
        finally:
            self.stack = saved
            parent.open_child = previous

    def _loop_block(self, atom: Atom, depth: int) -> Block:
        binding = self.binding(atom)
        var = self.fresh(f"{atom.name}_start")
        self.hints.add(var, f"{atom.name}_start", 2)
        header = f"for {var} in range(0, {self.params.size(atom.extent)}, {binding.block}):"
        block = Block(header=header, depth=depth, loop_atom=atom, var=var)
        self._defined[var] = block
        return block

    def accumulate(
        self, atom: Atom, lanes: Callable[[], Tile], atoms: list[Atom], kind: str, lanes_name: str = ""
    ) -> Tile:
        """`kind` (sum | max | min) over `atoms` of a value walked in a pre-loop on `atom`: `lanes()` gives
        one chunk of it (evaluated inside the loop, padded lanes already the identity). The chunks are
        combined lane by lane and reduced once after the loop, as Inductor's looped reductions do: one
        reduction across the program's warps instead of one per chunk."""
        # The row is walked in chunks (too wide for one register tile), and what the next loop reads needs
        # the whole row's reduction first.
        why = f"Two passes: the whole row's {kind} first, as the next loop needs it"
        with self.preloop(atom, why) as block:
            chunk = lanes()
            parent = self.stack[block.depth - 1]
            name = self.fresh("acc")
            self.hints.add(name, lanes_name or f"{kind}_lanes", 2)
            identity = {"sum": 0, "max": float("-inf"), "min": float("inf")}[kind]
            if chunk.dtype not in ("fp32", "fp64") and kind != "sum":
                identity = -(2**31) + 1 if kind == "max" else 2**31 - 1
            shape = ", ".join(self.extent_code(a) for a in chunk.atoms)
            value = literal(identity, chunk.dtype)
            # A one-element tuple's comma only: a formatter spreads a tuple with a trailing comma over lines.
            comma = "," if len(chunk.atoms) == 1 else ""
            init = f"{name} = tl.full(({shape}{comma}), {value}, {TL_DTYPE[chunk.dtype]})"
            # Never hoisted to a persistent kernel's prologue: each row starts its sum or maximum afresh.
            parent.add(init)
            self._defined[name] = parent
            update = {"sum": "{a} + {b}", "max": "tl.maximum({a}, {b})", "min": "tl.minimum({a}, {b})"}[kind]
            block.add(f"{name} = {update.format(a=name, b=chunk.code)}")
        total = self.reduce(Tile(name, chunk.atoms, chunk.dtype, chunk.grid), atoms, kind, chunk.dtype)
        self.hints.add(total.code, f"{kind}_acc" if kind == "sum" else f"row_{kind}", 2)
        return total

    # --- atoms -------------------------------------------------------------------------------------------

    def atom_index(self, atom: Atom) -> Tile:
        binding = self.binding(atom)
        home = self.stack[0]
        if binding.kind == "loop":
            looping = next((b for b in reversed(self.stack) if b.loop_atom is atom), None)
            if looping is None:
                raise LoweringError(f"internal: the looped atom {atom.name} is read outside its loop")
            home = looping
        cached = home.atom_tiles.get(id(atom))
        if cached is not None:
            return cached
        if binding.kind == "loop":
            code = f"{home.var} + tl.arange(0, {binding.block})"
            tile = self.let(code, (atom,), "i32", frozenset(), prefix=f"{atom.name}_")
        elif binding.kind == "grid":
            tile = Tile(f"pid_{atom.name}", (), "i32", frozenset({atom}))
        elif binding.kind == "block":
            code = f"pid_{atom.name} * {binding.block} + tl.arange(0, {binding.block})"
            tile = self.let(code, (atom,), "i32", frozenset({atom}), prefix=f"{atom.name}_")
            if binding.rows:  # a program's rows, as hand-written kernels name them
                self.name_value(tile, "rows", 3)
        else:
            tile = self.let(
                f"tl.arange(0, {self.params.pad(atom.extent)})", (atom,), "i32", frozenset(), f"{atom.name}_"
            )
        home.atom_tiles[id(atom)] = tile
        return tile

    def atom_mask(self, atom: Atom) -> Tile | None:
        if self.binding(atom).kind == "grid":
            return None
        binding = self.binding(atom)
        if (
            binding.kind == "register"
            and atom.extent.is_Integer
            and int(atom.extent) == next_pow2(int(atom.extent))
        ):
            return None  # a power-of-two literal extent fills its arange: every lane is in bounds
        index = self.atom_index(atom)
        extent = self.params.size(atom.extent)
        test = f"{index.code} < {extent}"
        if binding.rows:
            # Where ROWS divides the rows (always at one row a program) every program's rows exist: the test
            # folds away at compile time and the loads wait on no compare (on the H100 a one-row kernel in
            # the 2-D tile was 5 % slower at SiLU-and-mul's 512 x 2048 with it).
            host = f"{self.params.host_size(atom.extent)} % {ROWS_BLOCK} == 0"
            even = self.params.add(Param("EVEN_ROWS", host, "size", True, "ROWS divides the rows"))
            test = f"({test}) | {even}"
        return self.let(test, index.atoms, "i1", index.grid, prefix=f"{atom.name}_mask")

    def mask(
        self, atoms: set[Atom] | frozenset[Atom] | tuple[Atom, ...], extra: Tile | None = None
    ) -> Tile | None:
        tiles = [m for m in (self.atom_mask(a) for a in self.ordered(set(atoms))) if m is not None]
        if extra is not None:
            tiles.append(extra)
        if not tiles:
            return None
        result = tiles[0]
        for tile in tiles[1:]:
            result = self.binary("({a} & {b})", result, tile, "i1")
        return result

    # --- values ------------------------------------------------------------------------------------------

    def union(self, *tiles: Tile) -> tuple[Atom, ...]:
        found: set[Atom] = set()
        for tile in tiles:
            found |= set(tile.atoms)
        return self.ordered(found)

    def align(self, tile: Tile, atoms: tuple[Atom, ...]) -> str:
        """`tile`'s code broadcastable against a tile over `atoms` (None axes where it has none)."""
        if tile.is_scalar or tile.atoms == atoms:
            return tile.code
        missing = set(tile.atoms) - set(atoms)
        if missing:
            raise LoweringError(f"internal: aligning a tile over {tile.atoms} to {atoms}")
        axes = ", ".join(":" if a in tile.atoms else "None" for a in atoms)
        return f"{wrapped(tile.code)}[{axes}]"

    def combine(self, fmt: str, tiles: list[Tile], dtype: str, prefix: str = "v") -> Tile:
        atoms = self.union(*tiles)
        grid = frozenset().union(*(t.grid for t in tiles)) if tiles else frozenset()
        codes = [self.align(t, atoms) for t in tiles]
        return self.let(fmt.format(*codes), atoms, dtype, grid, prefix)

    def binary(self, fmt: str, a: Tile, b: Tile, dtype: str) -> Tile:
        atoms = self.union(a, b)
        code = fmt.format(a=self.align(a, atoms), b=self.align(b, atoms))
        return self.let(code, atoms, dtype, a.grid | b.grid)

    def unary(self, fmt: str, a: Tile, dtype: str) -> Tile:
        return self.let(fmt.format(a=a.code), a.atoms, dtype, a.grid)

    def constant(self, value: float | int | bool, dtype: str) -> Tile:
        return Tile(literal(value, dtype), (), dtype)

    def cast(self, tile: Tile, dtype: str) -> Tile:
        if tile.dtype == dtype:
            return tile
        if tile.is_scalar and is_literal(tile.code):
            return Tile(literal(literal_value(tile.code), dtype), (), dtype)
        param = self.params.params.get(tile.code)
        if tile.is_scalar and param is not None and param.kind in ("size", "scalar"):
            # A parameter may arrive as a Python number (a constexpr, or any scalar under the interpreter):
            # no .to() on it. Floats are passed as float32 already.
            if dtype in ("fp32", "fp64") and tile.dtype not in ("fp32", "fp64"):
                return self.let(f"({tile.code} * 1.0)", (), dtype, tile.grid)
            return Tile(tile.code, (), dtype, tile.grid)
        if dtype == "i1":
            source = self._from_bool.get(tile.code)
            if source is not None and self.visible(source) and set(source.atoms) <= set(tile.atoms):
                return source
            zero = "0.0" if tile.dtype in ("fp32", "fp64") else "0"
            test = self.unary(f"({{a}} != {zero})", tile, "i1")
            self._negated.setdefault(test.code, f"({tile.code} == {zero})")
            return test
        # Back to the int type a widened tile came from: the tile itself (the widening lost nothing).
        narrow = self._widened.get(tile.code)
        if narrow is not None and narrow.dtype == dtype and self.visible(narrow):
            return narrow
        result = self.let(f"{wrapped(tile.code)}.to({TL_DTYPE[dtype]})", tile.atoms, dtype, tile.grid)
        if _INT_BITS.get(tile.dtype, 64) < _INT_BITS.get(dtype, 0):
            self._widened.setdefault(result.code, tile)
        return result

    def unwidened(self, tile: Tile) -> Tile:
        """The int tile `tile` was widened from (`ids` for `ids.to(tl.int64)`), where one is visible: the
        same values in fewer bits, for a use where the width changes nothing (a comparison, a term added to
        an int64)."""
        narrow = self._widened.get(tile.code)
        if narrow is None or not self.visible(narrow):
            return tile
        self.hints.widened.setdefault(narrow.code, tile.code)
        return narrow

    def round_to(self, tile: Tile, storage: str) -> Tile:
        """Round a float32 tile to a 16-bit storage dtype and back (eager PyTorch rounds every result)."""
        if (
            storage not in ("bfloat16", "float16")
            or not self.options.emulate_rounding
            or is_literal(tile.code)
        ):
            return tile
        return self.rounded(tile, storage)

    def rounded(self, tile: Tile, storage: str) -> Tile:
        """`tile` rounded to bfloat16 / float16 (nearest, ties to even) and held in float32; a tile that
        holds a value of that dtype exactly (a load widened, its negation) is returned as it is."""
        if self._exact_in.get(tile.code) == storage:
            return tile
        narrow = "tl.bfloat16" if storage == "bfloat16" else "tl.float16"
        result = self.let(
            f"{wrapped(tile.code)}.to({narrow}).to(tl.float32)", tile.atoms, tile.dtype, tile.grid
        )
        self._exact_in[result.code] = storage
        return result

    def exact_in(self, tile: Tile, storage: str) -> None:
        """Say that `tile` holds a `storage` value exactly: rounding it to `storage` changes nothing."""
        if storage in ("bfloat16", "float16"):
            self._exact_in.setdefault(tile.code, storage)

    def exact_storage(self, tile: Tile) -> str | None:
        """The 16-bit float dtype `tile` holds exactly, if one is known."""
        return self._exact_in.get(tile.code)

    def where(self, cond: Tile, a: Tile, b: Tile, dtype: str) -> Tile:
        tile = self.combine("tl.where({}, {}, {})", [cond, a, b], dtype)
        ones_and_zeros = is_literal(a.code) and is_literal(b.code)
        if cond.dtype == "i1" and ones_and_zeros and (literal_value(a.code), literal_value(b.code)) == (1, 0):
            self._from_bool.setdefault(tile.code, cond)
        return tile

    def negate(self, tile: Tile) -> Tile:
        """The bool `not tile`: `x == 0` for a bool made as `x != 0`, else `tile == 0`."""
        opposite = self._negated.get(tile.code)
        if opposite is not None:
            return self.let(opposite, tile.atoms, "i1", tile.grid)
        return self.unary("({a} == 0)", tile, "i1")

    def full(self, value_tile: Tile, atoms: tuple[Atom, ...]) -> Tile:
        """`value_tile` broadcast to a full tile over `atoms` (loop-carried accumulators need a shape)."""
        if value_tile.atoms == atoms:
            return value_tile
        if not atoms:
            return value_tile
        shape = ", ".join(self.extent_code(a) for a in atoms)
        zero = self.let(
            f"tl.zeros([{shape}], {TL_DTYPE[value_tile.dtype]})", atoms, value_tile.dtype, frozenset()
        )
        return self.binary("({a} + {b})", zero, value_tile, value_tile.dtype)

    def extent_code(self, atom: Atom) -> str:
        binding = self.binding(atom)
        if binding.kind in ("block", "loop"):
            return binding.block
        return self.params.pad(atom.extent)

    def axis(self, tile: Tile, atom: Atom) -> int:
        return tile.atoms.index(atom)

    def reduce(self, tile: Tile, atoms: list[Atom], fn: str, dtype: str) -> Tile:
        """tl.<fn> over `atoms` (already masked with the operation's identity)."""
        result = tile
        for atom in sorted(atoms, key=lambda a: -result.atoms.index(a) if a in result.atoms else 0):
            if atom not in result.atoms:
                continue
            axis = result.atoms.index(atom)
            rest = tuple(a for a in result.atoms if a is not atom)
            result = self.let(f"tl.{fn}({result.code}, axis={axis})", rest, dtype, result.grid)
        return result

    # --- indices -----------------------------------------------------------------------------------------

    def index_tile(self, index: IndexExpr) -> Tile:
        if isinstance(index, Computed):
            return index.tile
        return self.affine_tile(index)

    def affine_tile(self, index: Affine) -> Tile:
        parts: list[Tile] = []
        for atom, coef in index.terms:
            tile = self.atom_index(atom)
            if coef != 1:
                tile = self.binary("{a} * {b}", tile, Tile(self.params.size(coef), (), "i32"), "i32")
            parts.append(tile)
        # A negative constant after other terms is subtracted (`offs - HALF_HEAD_DIM`): its own size, not
        # a second parameter for its negation added (`offs + NEG_HALF_HEAD_DIM`).
        subtracted = bool(parts) and sympy.sympify(index.const).could_extract_minus_sign()
        if index.const != 0 or not parts:
            parts.append(Tile(self.params.size(-index.const if subtracted else index.const), (), "i32"))
        if len(parts) == 1:
            return parts[0]
        form = " + ".join("{}" for _ in parts[:-1]) + (" - {}" if subtracted else " + {}")
        return self.combine(form, parts, "i32")
