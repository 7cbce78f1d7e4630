"""What a candidate is timed against (TimingConfig.baseline): the eager reference or a named callable; one
that cannot be built says why. (torch.compile's column is built in tests/kernelbot/confirm, in a worker:
importing Inductor here would cost seconds.)"""

from __future__ import annotations

import math

import pytest

from evaluators.config import EvalConfig
from evaluators.timing.baselines import (
    BaselineUnavailable,
    call_spec,
    load_baseline,
    resolve_callable,
)


def eager(x: float) -> float:
    return x + 1.0


def test_eager_is_the_reference_itself_and_a_named_callable_is_imported() -> None:
    assert load_baseline("eager", eager) is eager and load_baseline("", eager) is eager
    assert load_baseline(call_spec("math:sqrt"), eager) is math.sqrt
    assert resolve_callable("os.path:join.__call__") is not None  # dotted qualnames are walked


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("call:kb_no_such_module:f", "cannot import kb_no_such_module"),
        ("call:math:no_such_name", "math has no no_such_name"),
        ("call:math:pi", "is a float, not a callable"),
        ("call:math", "not of the form module:qualname"),
        ("inductor", "unknown baseline 'inductor'"),
    ],
)
def test_a_baseline_that_cannot_be_built_says_why(spec: str, why: str) -> None:
    with pytest.raises(BaselineUnavailable, match=why):
        load_baseline(spec, eager)


def test_the_settings_round_trip_through_a_job() -> None:
    config = EvalConfig()
    assert config.timing.baseline == "eager" and not config.timing.caller_holds_gpu
    data = config.to_dict()
    data["timing"]["baseline"] = "compile"
    data["timing"]["caller_holds_gpu"] = True
    data["timing"]["compile_candidate"] = True
    again = EvalConfig.from_dict(data)
    assert again.timing.baseline == "compile" and again.timing.caller_holds_gpu
    assert again.timing.compile_candidate and not config.timing.compile_candidate
