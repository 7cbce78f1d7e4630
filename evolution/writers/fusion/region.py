"""What one kernel region is made of: the bindings of its atoms and the nested blocks of its statements.

A region is the code of the stores that share one binding of atoms (grid / block / register / loop). Its
statements sit in blocks: the top level, or a loop over the chunks of an atom; the Emitter (emit.py) fills
them, and the kernel writer (kernel.py) renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evolution.writers.fusion.tiles import Atom, Tile

# The block of a program's rows (the `rows` knob's 2-D tile): named so in every kernel, as hand-written
# kernels name it, and bound as `rows = pid * ROWS + tl.arange(0, ROWS)`.
ROWS_BLOCK = "ROWS"


@dataclass(frozen=True)
class Binding:
    kind: str  # "grid" (a program index) | "block" (program * BLOCK + arange) | "register" | "loop" (chunks)
    block: str = ""  # the kernel's constexpr name of the block size (block kind)

    @property
    def rows(self) -> bool:
        """A program's tile of rows (ROWS_BLOCK)."""
        return self.block == ROWS_BLOCK


@dataclass(eq=False)
class Block:
    """Statements at one nesting level: the region's top level, or a loop over the chunks of an atom."""

    header: str = ""  # "for a3_start in range(0, N, BLOCK_A3):" ("" for the top level)
    depth: int = 0
    loop_atom: Atom | None = None
    var: str = ""  # the loop's chunk start
    # A pass before the loop that writes (two passes): what it loads, that loop loads again.
    preloop: bool = False
    items: list[str | Block] = field(default_factory=list)
    open_child: Block | None = None  # statements added while a child is open go before it
    cse: dict[str, Tile] = field(default_factory=dict)
    atom_tiles: dict[int, Tile] = field(default_factory=dict)

    def add(self, item: str | Block) -> None:
        if self.open_child is not None and self.open_child in self.items:
            self.items.insert(self.items.index(self.open_child), item)
        else:
            self.items.append(item)

    def render(self, indent: str = "") -> list[str]:
        lines: list[str] = []
        for item in self.items:
            if isinstance(item, Block):
                lines.append(f"{indent}{item.header}")
                lines.extend(item.render(indent + "    ") or [f"{indent}    pass"])
            else:
                lines.append(f"{indent}{item}")
        return lines

    def walk(self) -> list[Block]:
        return [self, *(b for item in self.items if isinstance(item, Block) for b in item.walk())]


@dataclass
class Region:
    bindings: dict[Atom, Binding]
    guarded: tuple[Atom, ...] = ()  # grid atoms this region's stores lack: it runs where they are 0
    prologue: list[str] = field(default_factory=list)  # row-invariant statements (hoisted when allowed)
    root: Block = field(default_factory=Block)
    hoist: bool = False
    shapes: set[tuple[str, ...]] = field(default_factory=set)  # register tile shapes
    load_shapes: set[tuple[str, ...]] = field(default_factory=set)  # shapes of loads (they size num_warps)
