"""Feature values of a program: where it sits in the MAP-Elites grid.

Three kinds of features:
- code features, from the source alone: `complexity` (AST node count), `kernels` (@triton.jit functions),
  `lines` (non-blank lines of normalised code);
- `diversity`, relative to the island it joins: mean token-shingle distance to the island's elites (0 = a copy
  of them, 1 = nothing in common);
- result features, from the EvalResult: `score`, `speedup_graph`, `speedup_wall` (geometric means over cases),
  `max_abs_error`, `max_rel_error`, `eval_seconds`, and `metric:<field>` for any numeric EvalResult field.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from evaluators.candidate import normalize_source
from evaluators.result import EvalResult
from evaluators.stats import geometric_mean
from evolution.config import FeatureDim
from evolution.errors import SearchConfigError

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S")
SHINGLE = 3  # tokens per shingle: one changed constant changes a few shingles, not the whole set


def ast_size(source: str) -> float:
    try:
        return float(sum(1 for _ in ast.walk(ast.parse(source))))
    except SyntaxError:
        return 0.0


def kernel_count(source: str) -> float:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0.0
    count = 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                target = deco.func if isinstance(deco, ast.Call) else deco
                text = ast.unparse(target)
                if (text.endswith(("jit", "autotune", "heuristics")) and "triton" in text) or text == "jit":
                    count += 1
                    break
    return float(count)


def line_count(source: str) -> float:
    return float(sum(1 for line in normalize_source(source).splitlines() if line.strip()))


@lru_cache(maxsize=4096)
def shingles(source: str) -> frozenset[tuple[str, ...]]:
    tokens = _TOKEN.findall(normalize_source(source))
    if len(tokens) < SHINGLE:
        return frozenset({tuple(tokens)})
    return frozenset(tuple(tokens[i : i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1))


def code_distance(a: str, b: str) -> float:
    """1 - Jaccard similarity of the token shingles of two sources (comments and spacing ignored)."""
    sa, sb = shingles(a), shingles(b)
    union = len(sa | sb)
    return 0.0 if union == 0 else 1.0 - len(sa & sb) / union


def diversity(source: str, others: Sequence[str]) -> float:
    """Mean distance of `source` to `others` (0.0 when there is nothing to differ from)."""
    if not others:
        return 0.0
    return sum(code_distance(source, o) for o in others) / len(others)


def _regime_speedup(regime: str) -> Callable[[EvalResult], float]:
    def speedup(result: EvalResult) -> float:
        values = [c.timings[regime].speedup for c in result.cases if regime in c.timings]
        values = [v for v in values if v and v > 0]
        if not values:
            return 0.0
        return geometric_mean(values)

    return speedup


def _max_error(attr: str) -> Callable[[EvalResult], float]:
    def error(result: EvalResult) -> float:
        values = [getattr(c, attr) for c in result.cases if getattr(c, attr) is not None]
        return max(values) if values else math.inf

    return error


CODE_FEATURES: dict[str, Callable[[str], float]] = {
    "complexity": ast_size,
    "kernels": kernel_count,
    "lines": line_count,
}
RESULT_FEATURES: dict[str, Callable[[EvalResult], float]] = {
    "score": lambda r: r.score,
    "speedup_graph": _regime_speedup("graph"),
    "speedup_wall": _regime_speedup("wall"),
    "max_abs_error": _max_error("max_abs_error"),
    "max_rel_error": _max_error("max_rel_error"),
    "eval_seconds": lambda r: r.duration_s,
}
DIVERSITY = "diversity"
_NUMERIC_RESULT_FIELDS = ("score", "speedup", "duration_s")


def check_feature_names(dims: Sequence[FeatureDim]) -> None:
    names = [d.name for d in dims]
    if len(set(names)) != len(names):
        raise SearchConfigError(f"archive.features: duplicate dimension in {names}")
    for name in names:
        if name in CODE_FEATURES or name in RESULT_FEATURES or name == DIVERSITY:
            continue
        if name.startswith("metric:") and name[7:] in _NUMERIC_RESULT_FIELDS:
            continue
        known = [
            *CODE_FEATURES,
            DIVERSITY,
            *RESULT_FEATURES,
            *(f"metric:{f}" for f in _NUMERIC_RESULT_FIELDS),
        ]
        raise SearchConfigError(f"archive.features: unknown feature {name!r} (known: {', '.join(known)})")


def compute_features(
    dims: Sequence[FeatureDim], source: str, result: EvalResult | None, island_elites: Sequence[str]
) -> dict[str, float]:
    """Raw feature values of one program for the island it joins (binning happens in the grid)."""
    values: dict[str, float] = {}
    for dim in dims:
        name = dim.name
        if name in CODE_FEATURES:
            values[name] = CODE_FEATURES[name](source)
        elif name == DIVERSITY:
            values[name] = diversity(source, island_elites)
        elif result is None:
            values[name] = dim.low
        elif name in RESULT_FEATURES:
            values[name] = RESULT_FEATURES[name](result)
        else:
            raw = getattr(result, name[len("metric:") :], None)
            values[name] = float(raw) if isinstance(raw, (int, float)) else dim.low
    return values


def bin_index(dim: FeatureDim, value: float) -> int:
    """The bin of `value` along `dim`; values outside [low, high] go to the end bins, NaN to bin 0."""
    if math.isnan(value):
        return 0
    if dim.scale == "log":
        lo, hi = math.log(dim.low), math.log(dim.high)
        x = math.log(value) if value > 0 else -math.inf
    else:
        lo, hi, x = dim.low, dim.high, value
    if x <= lo:
        return 0
    if x >= hi:
        return dim.bins - 1
    return min(dim.bins - 1, int((x - lo) / (hi - lo) * dim.bins))
