"""`kernelbot scan`, static half: rank a repository's functions as kernel targets from their source alone.

A good target is dense in small PyTorch ops (each one a kernel launch, none big enough to fill a GPU), writes
buffers in place, indexes and scatters, or loops in Python over tensors — and lives on the model's hot path
(attention and its metadata, MoE routing, norms, sampling, rotary embeddings). The stdlib `ast` is used, not
LibCST: a scan reads every file of a 1,400-file repository.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from extractors.repo_index import RepoIndex

TENSOR_METHODS = frozenset(
    {
        "view",
        "reshape",
        "flatten",
        "unflatten",
        "squeeze",
        "unsqueeze",
        "transpose",
        "permute",
        "expand",
        "expand_as",
        "contiguous",
        "to",
        "float",
        "half",
        "bfloat16",
        "int",
        "long",
        "bool",
        "sum",
        "mean",
        "max",
        "min",
        "amax",
        "amin",
        "argmax",
        "argmin",
        "softmax",
        "log_softmax",
        "sigmoid",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "pow",
        "abs",
        "clamp",
        "clamp_min",
        "clamp_max",
        "topk",
        "sort",
        "argsort",
        "cumsum",
        "cumprod",
        "gather",
        "scatter",
        "index_select",
        "masked_fill",
        "masked_select",
        "where",
        "repeat",
        "repeat_interleave",
        "narrow",
        "split",
        "chunk",
        "cat",
        "stack",
        "matmul",
        "mm",
        "bmm",
        "mul",
        "div",
        "add",
        "sub",
        "neg",
        "reciprocal",
        "tanh",
        "relu",
        "gelu",
        "silu",
        "any",
        "all",
        "nonzero",
        "flip",
        "roll",
        "unique",
    }
)
TORCH_ROOTS = frozenset({"torch", "F", "functional"})
HOT_PATH = re.compile(r"attention|attn|moe|topk|router|routing|norm|sampl|logits|rotary|rope|metadata|cache")
_SKIP_PARTS = {"tests", "test", "testing", "benchmarks", "benchmark", "examples", "docs"}


@dataclass
class Hotspot:
    target: str  # module:Qualname, ready for `kernelbot extract --function`
    path: str
    line: int
    lines: int
    torch_ops: int
    inplace: int
    indexing: int
    tensor_loops: int
    hot_path: bool
    score: float

    @property
    def evidence(self) -> str:
        parts = [f"{self.torch_ops} torch ops in {self.lines} lines"]
        if self.inplace:
            parts.append(f"{self.inplace} in-place")
        if self.indexing:
            parts.append(f"{self.indexing} indexing")
        if self.tensor_loops:
            parts.append(f"{self.tensor_loops} Python loop(s) over tensors")
        if self.hot_path:
            parts.append("hot path")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "evidence": self.evidence}


class GatherHotspotEvidence(ast.NodeVisitor):
    """Counts, for one function body, the constructs that make it a kernel target."""

    def __init__(self) -> None:
        self.torch_ops = 0
        self.inplace = 0
        self.indexing = 0
        self.tensor_loops = 0
        self._loop_depth = 0
        self._ops_in_loop = 0

    @classmethod
    def of(cls, function: ast.FunctionDef | ast.AsyncFunctionDef) -> GatherHotspotEvidence:
        gatherer = cls()
        for stmt in function.body:
            gatherer.visit(stmt)
        return gatherer

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        return None  # nested functions are counted on their own

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            root = _root(func)
            if root in TORCH_ROOTS or func.attr in TENSOR_METHODS:
                self._op()
            if func.attr.endswith("_") and not func.attr.endswith("__"):
                self._op()
                self.inplace += 1
        if any(k.arg == "out" for k in node.keywords):
            self.inplace += 1
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not isinstance(node.ctx, ast.Load) or not _is_type_subscript(node):
            self.indexing += 1
        if isinstance(node.ctx, ast.Store):
            self.inplace += 1
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._loop(node)

    visit_While = visit_For  # type: ignore[assignment]

    def _loop(self, node: ast.For | ast.While) -> None:
        before = self._ops_in_loop
        self._loop_depth += 1
        self.generic_visit(node)
        self._loop_depth -= 1
        if self._loop_depth == 0:
            if self._ops_in_loop > before:
                self.tensor_loops += 1
            self._ops_in_loop = 0

    def _op(self) -> None:
        self.torch_ops += 1
        if self._loop_depth:
            self._ops_in_loop += 1


@dataclass(frozen=True)
class UnparsedFile:
    path: str  # relative to the repository
    reason: str  # "line 12: invalid syntax", "source contains null bytes", "cannot read: ..."


@dataclass
class StaticScan:
    hotspots: list[Hotspot]
    files: int  # Python files read (tests, benchmarks, examples and docs are not)
    unparsed: list[UnparsedFile]


def rank_static(repo: Path, top: int | None = None) -> list[Hotspot]:
    return scan_static(repo, top).hotspots


def scan_static(repo: Path, top: int | None = None) -> StaticScan:
    """Rank `repo`'s functions; files the stdlib parser cannot read are listed with why, not skipped."""
    index = RepoIndex(repo)
    found: list[Hotspot] = []
    unparsed: list[UnparsedFile] = []
    files = 0
    for path in index.all_python_files():
        rel = path.relative_to(index.root)
        if _SKIP_PARTS & set(rel.parts[:-1]) or rel.name.startswith("test_"):
            continue
        files += 1
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=rel.as_posix())
        except SyntaxError as exc:
            unparsed.append(UnparsedFile(rel.as_posix(), f"line {exc.lineno}: {exc.msg}"))
            continue
        except (ValueError, OSError) as exc:  # null bytes; a file that vanished or cannot be read
            unparsed.append(UnparsedFile(rel.as_posix(), str(exc) or type(exc).__name__))
            continue
        module = index.module_for_path(path).name
        for qualname, function in _functions(tree):
            if _is_triton_kernel(function):
                continue
            evidence = GatherHotspotEvidence.of(function)
            ops = evidence.torch_ops
            if ops < 3:
                continue
            lines = (function.end_lineno or function.lineno) - function.lineno + 1
            hot = bool(HOT_PATH.search(f"{rel.as_posix()}:{qualname}".lower()))
            density = min(ops / max(lines, 1), 1.0)
            raw = ops + 2 * evidence.inplace + 0.5 * evidence.indexing + 4 * evidence.tensor_loops
            score = raw * (0.5 + density) * (1.5 if hot else 1.0)
            found.append(
                Hotspot(
                    f"{module}:{qualname}",
                    rel.as_posix(),
                    function.lineno,
                    lines,
                    ops,
                    evidence.inplace,
                    evidence.indexing,
                    evidence.tensor_loops,
                    hot,
                    round(score, 2),
                )
            )
    found.sort(key=lambda h: (-h.score, h.target))
    return StaticScan(found[:top] if top else found, files, unparsed)


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    def walk(
        body: list[ast.stmt], prefix: str
    ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield prefix + stmt.name, stmt
            elif isinstance(stmt, ast.ClassDef):
                yield from walk(stmt.body, f"{prefix}{stmt.name}.")

    yield from walk(tree.body, "")


def _root(node: ast.expr) -> str:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _is_type_subscript(node: ast.Subscript) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in {
        "Optional",
        "List",
        "Dict",
        "Tuple",
        "Union",
    }


def _is_triton_kernel(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if _root(target) in ("triton", "tl") or (isinstance(target, ast.Name) and target.id == "jit"):
            return True
    return False
