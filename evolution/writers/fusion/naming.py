"""Readable names for a generated kernel: the emitter numbers every value it binds (`v12`, `a2_3`); this pass
renames them after what they hold, once the kernel's text is complete.

A value's name comes, in order of preference, from the reference (an argument loaded: `x`, `weight`; the
variable the reference assigned it to: `variance`, `scores`), from the op that made it (`rsqrt`,
`sigmoid`, `topk_ids`), from how it is used (the offsets a load of `x` reads: `x_offs`) or from its
expression (`sum_power`, `x_f32`, `candidates_masked`). Axes (atoms) are named by their role: the
program's rows (`row`), the one register axis of a row (`col`), or the size parameter of their extent
(`topk`, `num_expert_group`). A value takes the name of one it replaces, as the reference's `x = x + residual`
does, where both are bound in one statement list and the older is not read after; a value computed again in
another layout or at a gather's positions takes that context as a suffix (`gating_output_grouped`,
`gating_output_at_topk_ids`); other equal names get a number (`x_2`); nothing is renamed to a name the
kernel already uses.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from dataclasses import dataclass, field

# A name the kernel's frame always has (kept), and names a generated value never takes.
_FIXED = frozenset({"pid", "rest", "first", "_"})  # "_": an output nothing reads
_RESERVED = frozenset({"tl", "triton", "torch", "libdevice", *keyword.kwlist, *dir(builtins)})
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_CASTS = {"tl.int64": "i64", "tl.int32": "i32", "tl.float32": "f32", "tl.int1": "bool", "tl.float64": "f64"}
_REDUCTIONS = {"sum": "sum", "max": "max", "min": "min", "argmax": "argmax", "argmin": "argmin"}
_MAX_PART = 14  # a derived name built from an operand's name only while that stays short


@dataclass
class Hints:
    """What the emitter and evaluator knew about each bound name (priority, base name): 4 for a part of an
    argument the reference reads apart (`gate`, `up`: parts.py), 3 from the reference, 2 from the op, 1
    from the emitter's kind of value."""

    by_name: dict[str, tuple[int, str]] = field(default_factory=dict)
    # A narrow int read in place of its widened copy -> that copy, whose name from the reference it takes.
    widened: dict[str, str] = field(default_factory=dict)
    # A value computed again in another layout or at a gather's positions -> that context's word
    # (`grouped`, `at_topk_ids`): where its name is taken it becomes `<name>_<word>`, not `<name>_2`.
    contexts: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, base: str, priority: int) -> None:
        current = self.by_name.get(name)
        if base and (current is None or priority > current[0]):
            self.by_name[name] = (priority, base)

    def from_reference(self) -> dict[str, str]:
        """Each value that holds a variable of the reference -> that variable's name."""
        return {n: hint[1] for n in self.by_name if (hint := self.get(n)) is not None and hint[0] >= 3}

    def get(self, name: str) -> tuple[int, str] | None:
        own = self.by_name.get(name)
        wide = self.by_name.get(self.widened.get(name, ""))
        if wide is not None and wide[0] >= 3 and (own is None or own[0] < 3):
            return wide
        return own


def identifier(text: str) -> str:
    """`text` as a lower-case identifier fragment ("x.shape[1]" -> "x_shape_1")."""
    return re.sub(r"\W+", "_", text).strip("_").lower()


def rename_map(kernel_text: str, hints: Hints, atoms: dict[str, str]) -> dict[str, str]:
    """Old name -> new name for every value the kernel binds (and for the atoms' names inside them)."""
    tree = ast.parse(kernel_text)
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    # Only what the code itself names: `tl.rsqrt` leaves `rsqrt` free, and so do a keyword (`mask=`) and
    # the words of a comment (`# ... the whole row's sum`).
    named = {
        n.id if isinstance(n, ast.Name) else n.arg for n in ast.walk(fn) if isinstance(n, (ast.Name, ast.arg))
    }
    taken = {fn.name, *named} | _RESERVED
    bound = _bound_in_order(fn)
    hints, moves = _named_through_moves(fn, hints)
    uses = _pointer_uses(fn) | _part_offsets(fn, hints)
    guards = _mask_uses(fn, hints, bound)
    mapping: dict[str, str] = {}
    generated = [n for n in bound if n not in _FIXED]
    taken -= set(generated)
    taken |= _FIXED & named  # a fixed name the kernel does not use is free (a block's `pid`)
    lives = _lifetimes(fn)
    holders: dict[str, str] = {}  # a new name -> the generated value that holds it last
    latest: dict[str, str] = {}  # a base name -> the last new name given for it (`x_2` once `x` was taken)
    for name in generated:
        base = _base_name(name, hints, atoms, uses, mapping, bound.get(name))
        if name in moves:
            base = mapping.get(moves[name], base)
        if base == "mask" and name in guards:  # a combined mask is named for the first access it guards
            base = f"{guards[name]}_mask"
        base = identifier(base) or "value"
        if name.startswith("pid_") and base in taken:
            # A program's index along an axis named for a size the kernel also takes (a run-time
            # `max_seq_pages`): Triton's own `pid_<axis>`, not a numbered copy of the size's name.
            base = f"pid_{base}"
        # As the reference rebinds a name (`x = x + residual`), where the old value is not read again;
        # the last copy of a name taken elsewhere (a second loop's `x_2`) is rebound the same way.
        new = next(
            (
                held
                for held in dict.fromkeys((latest.get(base, base), base))
                if (holder := holders.get(held)) is not None
                and _rebinds(name, holder, bound.get(name), hints, lives)
            ),
            None,
        ) or _unique(_in_context(base, hints.contexts.get(name), taken), taken)
        taken.add(new)
        mapping[name] = new
        holders[new] = name
        latest[base] = new
    return mapping


_MOVES = ("reshape", "view")  # what gives a value another shape and leaves it the same value


def _named_through_moves(fn: ast.FunctionDef, hints: Hints) -> tuple[Hints, dict[str, str]]:
    """`hints` with a value read only by a move into a value the reference named (`best_groups =
    tl.reshape(ids, ...)`, the ids an unpacked top-k gave) named as that value is: then the move rebinds the
    name (`best_groups = tl.reshape(best_groups, ...)`), and the name `topk_ids` the op gave it is left to
    the reference's own `topk_ids`. Also each move nothing names -> its source, whose name it takes (no
    `topk_ids_reshaped`)."""
    reads: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            reads[node.id] = reads.get(node.id, 0) + 1
    moved = Hints(dict(hints.by_name), dict(hints.widened), dict(hints.contexts))
    itself: dict[str, str] = {}
    for node in ast.walk(fn):
        if not (
            isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ):
            continue
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr in _MOVES
            and ast.unparse(call.func.value) == "tl"
            and call.args
            and isinstance(call.args[0], ast.Name)
        ):
            continue
        target, source = node.targets[0].id, call.args[0].id
        hint, own = hints.get(target), hints.get(source)
        if reads.get(source) != 1:
            continue
        if hint is not None and hint[0] >= 3 and (own is None or own[0] < hint[0]):
            moved.add(source, hint[1], hint[0])
        elif hint is None or hint[0] < 2:
            itself[target] = source
    return moved, itself


@dataclass(frozen=True)
class _Lifetime:
    body: int  # id of the statement list that binds the value
    bound: int  # index there of its one binding statement
    last_read: int  # index there of the last statement that reads it (nested reads count at their ancestor)


def _lifetimes(fn: ast.FunctionDef) -> dict[str, _Lifetime]:
    """Per value bound exactly once by a plain `name = ...` (or as a name of a flat tuple target) and read
    only in or under its own statement list: where it is bound and last read. Other names (loop-carried,
    loop variables, nested targets, read outside their list) are left out, so no name is ever shared with
    them."""
    binds: dict[str, list[tuple[int, int]]] = {}
    reads: dict[str, list[tuple[tuple[int, int], ...]]] = {}
    excluded: set[str] = set()

    def visit(statements: list[ast.stmt], ancestors: tuple[tuple[int, int], ...]) -> None:
        for index, statement in enumerate(statements):
            here = (*ancestors, (id(statements), index))
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    # `_, ids = ...`: each name of a flat tuple is bound there as a plain target is
                    names = target.elts if isinstance(target, ast.Tuple) else [target]
                    for element in names:
                        if isinstance(element, ast.Name):
                            binds.setdefault(element.id, []).append((id(statements), index))
                        else:
                            excluded.update(n.id for n in ast.walk(element) if isinstance(n, ast.Name))
                reading: list[ast.AST] = [statement.value]
            elif isinstance(statement, ast.For):
                excluded.update(n.id for n in ast.walk(statement.target) if isinstance(n, ast.Name))
                reading = [statement.iter]
                visit(statement.body, here)
            elif isinstance(statement, ast.If):
                reading = [statement.test]
                visit(statement.body, here)
                visit(statement.orelse, here)
            else:
                reading = [statement]
            for node in reading:
                for name in ast.walk(node):
                    if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
                        reads.setdefault(name.id, []).append(here)

    visit(fn.body, ())
    found: dict[str, _Lifetime] = {}
    for name, places in binds.items():
        if name in excluded or len(places) != 1:
            continue
        body, bound = places[0]
        last = bound
        for path in reads.get(name, []):
            level = next((i for b, i in path if b == body), None)
            if level is None:
                break  # read outside its own statement list
            last = max(last, level)
        else:
            found[name] = _Lifetime(body, bound, last)
    return found


def names_freed_by_loops(kernel_text: str) -> str:
    """`kernel_text` with a numbered name (`x_2`) given back its base (`x`) where the base is bound and read
    only inside a loop that has ended before the numbered one is first bound: a two-pass norm's second loop
    reads `x`, `offs_col`, `col_start` again, as a person would write it. (Run after the inlining, which
    counts a name's reads over the whole kernel.)"""
    text = kernel_text
    while True:
        fn = ast.parse(text).body[0]
        assert isinstance(fn, ast.FunctionDef)
        scopes, first = _loop_scopes(fn)
        freed = next(
            (
                (name, m[1])
                for name, line in sorted(first.items(), key=lambda kv: kv[1])
                if (m := re.fullmatch(r"(\w+)_\d+", name)) and m[1] in scopes and scopes[m[1]] < line
            ),
            None,
        )
        if freed is None:
            return text
        text = apply(text, {freed[0]: freed[1]})


def _loop_scopes(fn: ast.FunctionDef) -> tuple[dict[str, int], dict[str, int]]:
    """Per name bound in a loop (its body or its variable) and bound and read nowhere else: the last line of
    that innermost loop; and per name, the line of its first binding."""
    spans: dict[str, list[int]] = {}  # every line that binds or reads the name
    first: dict[str, int] = {}
    loops: dict[str, ast.For] = {}  # the innermost loop around a name's first binding

    def visit(statements: list[ast.stmt], loop: ast.For | None) -> None:
        for statement in statements:
            targets: list[ast.expr] = []
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.For):
                targets = [statement.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in first:
                        first[name.id] = statement.lineno
                        around = statement if isinstance(statement, ast.For) else loop
                        if around is not None:
                            loops[name.id] = around
            if isinstance(statement, ast.For):
                visit(statement.body, statement)
            elif isinstance(statement, ast.If):
                visit(statement.body, loop)
                visit(statement.orelse, loop)

    visit(fn.body, None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            spans.setdefault(node.id, []).append(node.lineno)
    scopes = {
        name: loop.end_lineno or loop.lineno
        for name, loop in loops.items()
        if all(loop.lineno <= line <= (loop.end_lineno or loop.lineno) for line in spans.get(name, []))
    }
    return scopes, first


def _rebinds(
    name: str, holder: str, value: ast.expr | None, hints: Hints, lives: dict[str, _Lifetime]
) -> bool:
    """Whether `name` takes the name `holder` has: bound in the same statement list, at or after holder's
    last read, and a new state of the same thing: computed from holder (`x = x.to(tl.float32)`), or a
    value the reference itself gave that name (`residual = x.to(orig_dtype)`) that is not a fresh load
    (a second slice of `x` is not `x` again)."""
    old, new = lives.get(holder), lives.get(name)
    if old is None or new is None or old.body != new.body or old.last_read > new.bound or value is None:
        return False
    if any(isinstance(n, ast.Name) and n.id == holder for n in ast.walk(value)):
        return True
    hint = hints.get(name)
    loads = any(
        isinstance(n, ast.Attribute) and n.attr == "load" and ast.unparse(n.value) == "tl"
        for n in ast.walk(value)
    )
    return hint is not None and hint[0] >= 3 and not loads


def apply(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    return _IDENT.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def atom_text(text: str, atoms: dict[str, str]) -> str:
    """`text` with every atom name in a generated identifier replaced (`pid_a0` -> `pid_row`)."""
    for old, new in sorted(atoms.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![A-Za-z0-9]){old}(?![0-9])", new, text)
        text = re.sub(rf"(?<![A-Za-z0-9]){old.upper()}(?![0-9])", new.upper(), text)
    return text


def _in_context(base: str, context: str | None, taken: set[str]) -> str:
    """`base` when free, else `<base>_<context>` where the value was computed in a context."""
    return f"{base}_{context}" if context and base in taken else base


def _unique(base: str, taken: set[str]) -> str:
    if base not in taken:
        return base
    k = 2
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


def _bound_in_order(fn: ast.FunctionDef) -> dict[str, ast.expr | None]:
    """Every name the kernel assigns, in order, with the expression first assigned to it (None for a loop
    variable or a target of a tuple assignment)."""
    found: dict[str, ast.expr | None] = {}

    def visit(statements: list[ast.stmt]) -> None:
        for statement in statements:
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        found.setdefault(target.id, statement.value)
                    else:
                        for element in ast.walk(target):
                            if isinstance(element, ast.Name):
                                found.setdefault(element.id, None)
            elif isinstance(statement, ast.For):
                if isinstance(statement.target, ast.Name):
                    found.setdefault(statement.target.id, None)
                visit(statement.body)
            elif isinstance(statement, ast.If):
                visit(statement.body)
                visit(statement.orelse)

    visit(fn.body)
    return found


def _pointer_uses(fn: ast.FunctionDef) -> dict[str, str]:
    """Name -> the tensor whose pointer it offsets (`x_ptr + offs` -> "x")."""
    found: dict[str, str] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = node.left, node.right
            if isinstance(left, ast.Name) and left.id.endswith("_ptr") and isinstance(right, ast.Name):
                found.setdefault(right.id, left.id.removesuffix("_ptr"))
    return found


def _part_offsets(fn: ast.FunctionDef, hints: Hints) -> dict[str, str]:
    """Offsets -> the part of a tensor that the load reading at them holds (`v9 = tl.load(x_ptr + v8)`,
    `v9` the `up` half: `up_offs`, not a second `x_offs`)."""
    found: dict[str, str] = {}
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call)):
            continue
        target, call = node.targets[0], node.value
        hint = hints.get(target.id) if isinstance(target, ast.Name) else None
        if hint is None or hint[0] < 4 or ast.unparse(call.func) != "tl.load" or not call.args:
            continue
        pointer = call.args[0]
        if not (isinstance(pointer, ast.BinOp) and isinstance(pointer.op, ast.Add)):
            continue
        if isinstance(pointer.right, ast.Name):
            found.setdefault(pointer.right.id, hint[1])
    return found


def _mask_uses(fn: ast.FunctionDef, hints: Hints, bound: dict[str, ast.expr | None]) -> dict[str, str]:
    """Name -> the tensor of the first load or store (in the kernel's order) it is the mask of
    (`tl.load(query_ptr + offs, mask=m)` -> "query"). A mask that is one term of an access's mask
    (`mask=query_mask & m[None, :]`: the part of the tensor one piece of it covers) is named for the value
    the reference gave that load (`query_lo`), where it gave one."""
    loaded = {  # a load's call -> the reference's name for the value it is bound to
        id(value): hint[1]
        for name, value in bound.items()
        if value is not None and (hint := hints.get(name)) is not None and hint[0] >= 3
    }
    accesses = []
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("load", "store")
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "tl"
            and node.args
        ):
            pointer = node.args[0]
            while isinstance(pointer, ast.BinOp) and isinstance(pointer.op, (ast.Add, ast.Sub)):
                pointer = pointer.left
            mask = next((k.value for k in node.keywords if k.arg == "mask"), None)
            if not (isinstance(pointer, ast.Name) and pointer.id.endswith("_ptr")):
                continue
            where = (node.lineno, node.col_offset)
            if isinstance(mask, ast.Name):
                accesses.append((where, mask.id, pointer.id.removesuffix("_ptr")))
                mask = bound.get(mask.id)  # `m = query_mask & half[None, :]`, then `mask=m`
            if isinstance(mask, ast.BinOp) and isinstance(mask.op, ast.BitAnd) and id(node) in loaded:
                for term in (mask.left, mask.right):
                    term = term.value if isinstance(term, ast.Subscript) else term  # m[None, :]
                    if isinstance(term, ast.Name):
                        accesses.append((where, term.id, loaded[id(node)]))
    found: dict[str, str] = {}
    for _, mask_name, tensor in sorted(accesses):
        found.setdefault(mask_name, tensor)
    return found


def _base_name(
    name: str,
    hints: Hints,
    atoms: dict[str, str],
    uses: dict[str, str],
    mapping: dict[str, str],
    value: ast.expr | None,
) -> str:
    hint = hints.get(name)
    if name.startswith("pid_"):  # a program's index along an axis: the row it handles, or a block of rows
        return hint[1] if hint is not None and hint[0] >= 3 else atom_text(name.removeprefix("pid_"), atoms)
    if hint is not None and hint[0] >= 2:
        return atom_text(hint[1], atoms)
    if name in uses:
        return f"{uses[name]}_offs"
    if value is not None:
        derived = _derived(value, mapping)
        if derived:
            return derived
    if hint is not None:
        return atom_text(hint[1], atoms)
    if re.fullmatch(r"[A-Za-z_]*", name):
        return name
    pair = re.fullmatch(r"([a-z]+)\d+_([a-z])", name)  # `topk27_v, topk27_i = _kb_topk_rows(...)`
    if pair is not None:
        return f"{pair.group(1)}_{ {'v': 'values', 'i': 'ids'}.get(pair.group(2), pair.group(2)) }"
    return atom_text(re.sub(r"\d+$", "", name).rstrip("_"), atoms) or "value"


def _operand(node: ast.expr, mapping: dict[str, str]) -> str | None:
    if isinstance(node, ast.Subscript):  # x[:, None]
        node = node.value
    if isinstance(node, ast.Name):
        return mapping.get(node.id, node.id)
    return None


def _is_max(node: ast.expr) -> bool:
    """`tl.max(...)`, read in place or from one axis (`tl.max(x, axis=1)[:, None]`)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "max"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "tl"
    )


def _short(part: str | None) -> bool:
    return part is not None and len(part) <= _MAX_PART


def _derived(value: ast.expr, mapping: dict[str, str]) -> str:
    """A name from the expression a value is bound to (operands already renamed)."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        method = value.func.attr
        owner = value.func.value
        first = _operand(value.args[0], mapping) if value.args else None
        if method == "to" and value.args:
            target = ast.unparse(value.args[0])
            base = _operand(owner, mapping)
            narrowed = (".to(tl.bfloat16)", ".to(tl.float16)")
            if isinstance(owner, ast.Call) and ast.unparse(owner).endswith(narrowed):
                inner = _operand(owner.func.value, mapping) if isinstance(owner.func, ast.Attribute) else None
                return f"{inner}_rounded" if _short(inner) else "rounded"
            suffix = _CASTS.get(target, "cast")
            return f"{base}_{suffix}" if base and len(base) <= 2 * _MAX_PART else f"as_{suffix}"
        if isinstance(owner, ast.Name) and owner.id in ("tl", "libdevice"):
            if method in _REDUCTIONS:
                reduction = _REDUCTIONS[method]
                return f"{reduction}_{first}" if _short(first) else f"row_{reduction}"
            if method == "where":
                kept = _operand(value.args[1], mapping) if len(value.args) > 1 else None
                if _short(kept):
                    return f"{kept}_masked"
                lead = (kept or "").split("_")[0]  # a long name's first word: `exp_x_f32_shifted`, `exp`
                return f"{lead}_masked" if len(lead) > 1 else "selected"
            if method == "arange":
                return "offs"
            if method in ("full", "zeros"):
                return "filled"
            if method == "reshape":
                return f"{first}_reshaped" if _short(first) else "reshaped"
            if method == "load":
                return "loaded"
            return f"{method}_{first}" if _short(first) else method
    if isinstance(value, ast.Compare) and len(value.ops) == 1:
        left = _operand(value.left, mapping)
        comparator = value.comparators[0]
        zero = isinstance(comparator, ast.Constant) and comparator.value == 0
        cmp_op = type(value.ops[0])
        bound = comparator.id if isinstance(comparator, ast.Name) and comparator.id.isupper() else ""
        if cmp_op is ast.Lt and bound and len(bound) <= 2 * _MAX_PART:  # below a named size: half an axis
            return f"below_{bound.lower()}"
        if cmp_op is ast.Lt and left:
            return f"{left}_in_bounds" if _short(left) else "in_bounds"
        if zero and cmp_op in (ast.NotEq, ast.Eq):
            word = "nonzero" if cmp_op is ast.NotEq else "is_zero"
            return f"{left}_{word}" if _short(left) else word
        word = {ast.Eq: "eq", ast.NotEq: "ne", ast.Gt: "gt", ast.GtE: "ge", ast.LtE: "le"}.get(cmp_op, "test")
        return f"{left}_{word}" if _short(left) else f"is_{word}"
    if isinstance(value, ast.BinOp):
        left, right = _operand(value.left, mapping), _operand(value.right, mapping)
        if right is not None and "stride" in right:  # an index scaled to a tensor's elements
            left = (left or "").removeprefix("offs_").removesuffix("_i64")
            return f"{left}_offs" if _short(left) else "offs"
        if isinstance(value.op, ast.BitAnd):
            return "mask"
        a_max = _is_max(value.right) or (right or "").startswith("max_") or right == "row_max"
        if isinstance(value.op, ast.Sub) and a_max and _short(left):
            return f"{left}_shifted"  # less its max, as a softmax takes it before exp
        if isinstance(value.op, ast.Mult) and (left or "").startswith("offs_") and (right or "").isupper():
            return f"{(left or '').removeprefix('offs_')}_start"  # each block's first index, block by block
        starts = [p for p in (left, right) if p and p.endswith("_start")]
        offsets = [p for p in (left, right) if p and p.startswith("offs_")]
        if isinstance(value.op, ast.Add) and starts and offsets:
            return f"{starts[0].removesuffix('_start')}_offs"  # each block's start plus the offsets in it
        one = isinstance(value.right, ast.Constant) and value.right.value == 1.0
        if isinstance(value.op, ast.Mult) and one:
            return f"{left}_float" if _short(left) else "as_float"  # an integer size made a float
        words = {ast.Add: "plus", ast.Sub: "minus", ast.Mult: "times", ast.Div: "over", ast.FloorDiv: "div"}
        verb = words.get(type(value.op))
        if verb and _short(left) and _short(right) and left != right:
            return f"{left}_{verb}_{right}"
        if verb and _short(left):
            return f"{left}_{verb}"
        return verb or "value"
    if isinstance(value, ast.UnaryOp):
        operand = _operand(value.operand, mapping)
        if isinstance(value.op, ast.USub):
            return f"neg_{operand}" if _short(operand) else "negated"
        return f"not_{operand}" if _short(operand) else "inverted"
    return ""
