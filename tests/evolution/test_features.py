from __future__ import annotations

import math

import pytest

from evaluators.result import CaseResult, EvalResult, RegimeTiming, Stage, TimingStats
from evolution.config import FeatureDim
from evolution.errors import SearchConfigError
from evolution.features import (
    ast_size,
    check_feature_names,
    code_distance,
    compute_features,
    diversity,
    kernel_count,
)

TWO_KERNELS = """
import triton
import triton.language as tl
from triton import jit

@triton.jit
def a(x_ptr, BLOCK: tl.constexpr):
    pass

@jit
def b(x_ptr):
    pass

@triton.autotune(configs=[], key=["n"])
@triton.jit
def c(x_ptr):
    pass

def host(x):
    return x
"""


def test_kernel_count_and_ast_size() -> None:
    assert kernel_count(TWO_KERNELS) == 3.0
    assert kernel_count("def f(): pass") == 0.0
    assert kernel_count("def (") == 0.0
    assert ast_size("x = 1") < ast_size(TWO_KERNELS)
    assert ast_size("def (") == 0.0


def test_code_distance_ignores_comments_and_spacing() -> None:
    a = "def f(x):\n    return x * 2  # double\n"
    b = "def f(x):\n\n    return x*2\n"
    assert code_distance(a, b) == 0.0
    c = "def f(x):\n    return x * 3\n"
    d = "class Z:\n    value = 'something entirely different here'\n"
    assert 0.0 < code_distance(a, c) < code_distance(a, d) <= 1.0
    assert diversity(a, []) == 0.0
    assert diversity(a, [b, d]) == pytest.approx((0.0 + code_distance(a, d)) / 2)


def _result(speedups: dict[str, list[float]], errors: list[float]) -> EvalResult:
    cases = []
    for i, err in enumerate(errors):
        timings = {}
        for regime, values in speedups.items():
            s = values[i]
            timings[regime] = RegimeTiming(TimingStats(s, 0.0, 10), TimingStats(1.0, 0.0, 10), s, s, s)
        cases.append(
            CaseResult(f"c{i}", {}, True, max_abs_error=err, max_rel_error=err / 10, timings=timings)
        )
    return EvalResult(
        "t",
        "sha",
        "b",
        "wall",
        Stage.TIMING,
        True,
        correct=True,
        score=1.5,
        speedup=1.5,
        cases=tuple(cases),
        duration_s=3.0,
    )


def test_result_features_from_eval_result() -> None:
    dims = [
        FeatureDim("speedup_wall", bins=4, low=0.5, high=4.0),
        FeatureDim("speedup_graph", bins=4, low=0.5, high=4.0),
        FeatureDim("max_abs_error", bins=4, low=1e-8, high=1.0, scale="log"),
        FeatureDim("metric:duration_s", bins=4, low=0, high=10),
        FeatureDim("score", bins=4, low=0, high=4),
    ]
    r = _result({"wall": [2.0, 8.0]}, [1e-3, 2e-3])
    values = compute_features(dims, "x = 1", r, [])
    assert values["speedup_wall"] == pytest.approx(4.0)  # geometric mean of 2 and 8
    assert values["speedup_graph"] == 0.0  # not timed in that regime
    assert values["max_abs_error"] == pytest.approx(2e-3)
    assert values["metric:duration_s"] == 3.0
    assert values["score"] == 1.5
    # an unevaluated program sits at the low end of result dimensions
    assert compute_features(dims[:1], "x = 1", None, [])["speedup_wall"] == 0.5
    assert math.isinf(compute_features(dims[2:3], "x", _result({}, []), [])["max_abs_error"])


def test_unknown_or_duplicate_feature_names_are_config_errors() -> None:
    check_feature_names([FeatureDim("complexity"), FeatureDim("metric:speedup")])
    with pytest.raises(SearchConfigError, match="unknown feature 'flops'"):
        check_feature_names([FeatureDim("flops")])
    with pytest.raises(SearchConfigError, match="duplicate"):
        check_feature_names([FeatureDim("kernels"), FeatureDim("kernels")])
