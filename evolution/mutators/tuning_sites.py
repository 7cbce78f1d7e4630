"""Find and rewrite the launch parameters of a candidate (libcst, so formatting and comments survive).

A site is an integer literal whose value only picks *how* the work is split, never *what* is computed:
- `NAME = <int>` assignments (one per name) where NAME is handed to a kernel launch `kernel[grid](...)` as a
  keyword that names a block size / tile / rows per program / vector width (`XBLOCK=`, `BLOCK_SIZE=`,
  `R0_BLOCK=`, `ROWS_PER_PROGRAM=`), or as `num_warps=` / `num_stages=`, or when NAME itself says so
  (`ROWS=ROWS_PER_PROGRAM`). Because the grid and the launch both
  read the name, changing the literal keeps them consistent. Names that look like data layout (KV / page /
  cache block sizes) are never touched, nor is a name also passed under a keyword that is no launch knob;
- `NAME = min(<int>, <expr>)`: the cap of a block size derived from the shape (same launch rule as above);
- per-bucket constants: an upper-case `NAME = <int>` whose name says what it is (`SMALL_BLOCK`, `LARGE_WARPS`,
  `MANY_ROWS_PER_PROGRAM`, `CHUNK_STAGES`) and whose value reaches a launch keyword of that kind through host
  code (`block = min(SMALL_BLOCK, next_power_of_2(d))`, `warps = SMALL_WARPS if n <= LIMIT else LARGE_WARPS`,
  then `BLOCK_SIZE=block, num_warps=warps`). Thresholds (`SMALL_BATCH_ROWS`) name no knob and stay put;
- `num_warps=<int>` / `num_stages=<int>` keyword literals of any call (launches, triton.Config), also
  both branches of `num_warps=8 if BLOCK >= 2048 else 4`.
A `BLOCK=1024` keyword literal is not a site: the grid may repeat that literal elsewhere.
Only sites inside the EVOLVE-BLOCK count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from evaluators.candidate import find_evolve_block

_BLOCK_NAME = re.compile(r"(BLOCK|TILE|_PER_(PROGRAM|BLOCK|CTA|THREAD)|^VEC|VEC_SIZE)", re.IGNORECASE)
_LAYOUT_NAME = re.compile(r"(KV|PAGE|CACHE|HEAD)", re.IGNORECASE)  # block sizes that are data layout
_WARPS_NAME = re.compile(r"WARPS", re.IGNORECASE)
_GROUP_SUFFIX = re.compile(r"([XYZ]|R\d?_?)?BLOCK.*$", re.IGNORECASE)
_STAGES_NAME = re.compile(r"STAGES", re.IGNORECASE)

MAX_BLOCK = 8192
MAX_TILE = 1 << 16  # elements per program over the block knobs of one kernel (same name prefix)
WARPS = (1, 2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Site:
    key: str  # "name:XBLOCK" (assignment) or "kw:num_warps@<line>" (keyword)
    name: str  # the assigned name or the keyword
    kind: str  # "block" | "warps" | "stages"
    value: int
    line: int

    @property
    def group(self) -> str:
        """Block knobs of one kernel share what precedes their BLOCK part (K0_XBLOCK and K0_R0_BLOCK: "K0_";
        BLOCK_M and BLOCK_N: ""): the product of a group's values is bounded."""
        return _GROUP_SUFFIX.sub("", self.name)


def knob_kind(name: str) -> str | None:
    if _LAYOUT_NAME.search(name):
        return None
    if _WARPS_NAME.search(name):
        return "warps"
    if _STAGES_NAME.search(name):
        return "stages"
    if _BLOCK_NAME.search(name):
        return "block"
    return None


def valid_value(kind: str, value: int) -> bool:
    if kind == "warps":
        return value in WARPS
    if kind == "stages":
        return value in STAGES
    return 1 <= value <= MAX_BLOCK and value & (value - 1) == 0


class _SiteCollector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, first_line: int, last_line: int) -> None:
        self.first_line, self.last_line = first_line, last_line
        self.sites: list[Site] = []
        self._names_seen: dict[str, int] = {}
        self._launch_uses: dict[str, set[str]] = {}  # name -> the launch keywords it is passed under
        self._launch_flows: list[tuple[str, set[str]]] = []  # (launch keyword, names its value reads)
        self._flows: dict[str, set[str]] = {}  # assigned name -> names its values read (all assignments)

    def _inside(self, node: cst.CSTNode) -> int | None:
        line = self.get_metadata(PositionProvider, node).start.line
        return line if self.first_line <= line <= self.last_line else None

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Tuple):
            self._unpack(node.targets[0].target, node.value)
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        name = node.targets[0].target.value
        self._names_seen[name] = self._names_seen.get(name, 0) + 1
        self._flows.setdefault(name, set()).update(_value_names(node.value))
        line = self._inside(node)
        if line is None or _LAYOUT_NAME.search(name):
            return
        value = _int_literal(node.value)
        if value is not None:
            self.sites.append(Site(f"name:{name}", name, knob_kind(name) or "", value, line))
            return
        cap = _min_cap(node.value)
        if cap is not None:  # NAME = min(2048, triton.next_power_of_2(n)): the cap is the knob
            self.sites.append(
                Site(f"cap:{name}", name, knob_kind(name) or "", _int_literal(cap.value) or 0, line)
            )

    def _unpack(self, target: cst.Tuple, value: cst.BaseExpression) -> None:
        """`block, warps = SMALL_BLOCK, SMALL_WARPS`: each name reads its element (or all of a non-tuple)."""
        paired = value.elements if isinstance(value, cst.Tuple) else None
        if paired is not None and len(paired) != len(target.elements):
            paired = None
        for i, element in enumerate(target.elements):
            if isinstance(element.value, cst.Name):
                name = element.value.value
                self._names_seen[name] = self._names_seen.get(name, 0) + 1
                read = paired[i].value if paired is not None else value
                self._flows.setdefault(name, set()).update(_value_names(read))

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Subscript):  # kernel[grid](...) is a launch
            return
        for arg in node.args:
            if arg.keyword is None:
                continue
            if isinstance(arg.value, cst.Name):
                self._launch_uses.setdefault(arg.value.value, set()).add(arg.keyword.value)
            self._launch_flows.append((arg.keyword.value, _value_names(arg.value)))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is None or node.keyword.value not in ("num_warps", "num_stages"):
            return
        line = self._inside(node)
        kind = knob_kind(node.keyword.value)
        if line is None or kind is None:
            return
        key = f"kw:{node.keyword.value}@{line}"
        value = _int_literal(node.value)
        if value is not None and valid_value(kind, value):
            self.sites.append(Site(key, node.keyword.value, kind, value, line))
        elif isinstance(node.value, cst.IfExp):  # num_warps=8 if BLOCK >= 2048 else 4: both branches
            for branch in ("body", "orelse"):
                value = _int_literal(getattr(node.value, branch))
                if value is not None and valid_value(kind, value):
                    self.sites.append(Site(f"{key}:{branch}", node.keyword.value, kind, value, line))

    def _reached_keywords(self) -> dict[str, set[str]]:
        """name -> the launch keywords whose value it feeds, through any chain of host assignments."""
        reached: dict[str, set[str]] = {}
        for keyword, names in self._launch_flows:
            stack, seen = list(names), set()
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                reached.setdefault(name, set()).add(keyword)
                stack.extend(self._flows.get(name, ()))
        return reached

    def _bucket_constant(self, site: Site, reached: set[str]) -> Site | None:
        """A constant that reaches a launch only through host code: its own name must say which knob it is,
        and it must reach a keyword of that kind (or a constexpr keyword that names no knob: ROWS=)."""
        kind = knob_kind(site.name)
        if kind is None or not site.name.isupper() or self._names_seen[site.name] != 1:
            return None
        if not any(knob_kind(kw) == kind or (kw.isupper() and knob_kind(kw) is None) for kw in reached):
            return None
        return (
            Site(site.key, site.name, kind, site.value, site.line) if valid_value(kind, site.value) else None
        )

    def result(self) -> list[Site]:
        kept = []
        reached = self._reached_keywords()
        for site in self.sites:
            if site.key.startswith("name:") and site.name not in self._launch_uses:
                constant = self._bucket_constant(site, reached.get(site.name, set()))
                if constant is not None:
                    kept.append(constant)
                continue
            if site.key.startswith(("name:", "cap:")):
                # A name assigned twice (two functions, a re-binding) is ambiguous; one never launched with is
                # no launch parameter; one also passed under another keyword may mean something else there.
                # An upper-case (constexpr) keyword that is no knob name (ROWS=) still counts when the name
                # itself is one; a lower-case keyword is a runtime argument: the value is data there.
                kinds = {
                    knob_kind(kw) or (site.kind if kw.isupper() else "") or None
                    for kw in self._launch_uses.get(site.name, set())
                }
                if self._names_seen[site.name] != 1 or len(kinds) != 1:
                    continue
                (kind,) = kinds
                if kind is None or site.kind not in ("", kind) or not valid_value(kind, site.value):
                    continue
                site = Site(site.key, site.name, kind, site.value, site.line)
            kept.append(site)
        return kept


class _SiteRewriter(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, changes: dict[str, int]) -> None:
        self.changes = changes

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        if len(original.targets) == 1 and isinstance(original.targets[0].target, cst.Name):
            name = original.targets[0].target.value
            if f"name:{name}" in self.changes:
                return updated.with_changes(value=cst.Integer(str(self.changes[f"name:{name}"])))
            cap = _min_cap(updated.value)
            if f"cap:{name}" in self.changes and cap is not None and isinstance(updated.value, cst.Call):
                new_cap = cap.with_changes(value=cst.Integer(str(self.changes[f"cap:{name}"])))
                args = [new_cap if a is cap else a for a in updated.value.args]
                return updated.with_changes(value=updated.value.with_changes(args=args))
        return updated

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        if original.keyword is None:
            return updated
        line = self.get_metadata(PositionProvider, original).start.line
        key = f"kw:{original.keyword.value}@{line}"
        if key in self.changes:
            return updated.with_changes(value=cst.Integer(str(self.changes[key])))
        if isinstance(updated.value, cst.IfExp):
            branches = {
                branch: cst.Integer(str(self.changes[f"{key}:{branch}"]))
                for branch in ("body", "orelse")
                if f"{key}:{branch}" in self.changes
            }
            if branches:
                return updated.with_changes(value=updated.value.with_changes(**branches))
        return updated


class ParsedCandidate:
    """One parse of a candidate, shared by site discovery and rewriting (positions are computed once)."""

    def __init__(self, source: str) -> None:
        block = find_evolve_block(source)
        self._lines = (block.start_line, block.end_line) if block else (1, source.count("\n") + 1)
        # The module is ours alone, so the wrapper need not deep-copy it.
        self._wrapper = MetadataWrapper(cst.parse_module(source), unsafe_skip_copy=True)
        self._sites: list[Site] | None = None

    def sites(self) -> list[Site]:
        if self._sites is None:
            collector = _SiteCollector(*self._lines)
            self._wrapper.visit(collector)
            self._sites = collector.result()
        return self._sites

    def with_changes(self, changes: dict[str, int]) -> str:
        return self._wrapper.visit(_SiteRewriter(changes)).code


def find_sites(source: str) -> list[Site]:
    """The tunable sites of `source` inside its EVOLVE-BLOCK (the whole file when it has none)."""
    return ParsedCandidate(source).sites()


def apply_changes(source: str, changes: dict[str, int]) -> str:
    """`source` with each site key in `changes` set to its new value."""
    return ParsedCandidate(source).with_changes(changes)


def _min_cap(node: cst.BaseExpression) -> cst.Arg | None:
    """The literal argument of `min(<int>, <expr>)` (either order), if that is what `node` is."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "min"):
        return None
    if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
        return None
    literals = [a for a in node.args if _int_literal(a.value) is not None]
    return literals[0] if len(literals) == 1 else None


def _value_names(node: cst.BaseExpression) -> set[str]:
    """Names whose values can become the value of `node` (a condition's names only choose, so not them)."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.IfExp):
        return _value_names(node.body) | _value_names(node.orelse)
    if isinstance(node, cst.Call):
        return set().union(*(_value_names(a.value) for a in node.args))
    if isinstance(node, cst.BinaryOperation):
        return _value_names(node.left) | _value_names(node.right)
    if isinstance(node, cst.UnaryOperation):
        return _value_names(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return set().union(*(_value_names(e.value) for e in node.elements))
    return set()


def _int_literal(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except ValueError:
            return None
    return None
