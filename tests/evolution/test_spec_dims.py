"""Names for sizes from a task's input spec (evolution/writers/tracing/spec_dims.py)."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from evolution.writers.fusion.trace.sizes import reserved_names
from evolution.writers.tracing.spec_dims import spec_dim_names

_INPUTS = """
SPEC = {
    "query": {"shape": ["tokens", "heads", "head_dim"], "dtype": "bfloat16"},
    "key": {"shape": ["tokens", "kv_heads", "head_dim"], "dtype": "bfloat16"},
    "cos": {"shape": ["tokens * 2", 64], "dtype": "bfloat16"},
    "bias": {"shape": ["shape"], "dtype": "float32"},
    "positions": {"expr": "torch.arange(tokens)"},
}
ORDER = [("query", "positional"), ("key", "positional")]
"""

_REFERENCE = """
def rope(query, key, cos, bias, positions):
    half = query.shape[-1] // 2
    kv_heads = key.shape[1]
    return query[..., :half] * cos, key * kv_heads
"""


def _reference(tmp_path: Path) -> Any:
    path = tmp_path / "reference.py"
    path.write_text(_REFERENCE)
    return runpy.run_path(str(path))["rope"]  # its code names the file, which the names are read from


RESERVED = reserved_names(set())  # the fusion writer's
SYMBOLS = {
    "s0": "query.shape[0]",
    "s1": "query.shape[1]",
    "s2": "query.shape[2]",
    "s3": "key.shape[1]",
    "s4": "cos.shape[0]",
    "s5": "cos.shape[1]",
    "s6": "bias.shape[0]",
    "s7": "positions.shape[0]",
    "u0": "int(query.sum())",
}


def test_each_axis_takes_the_name_the_spec_gives_it(tmp_path: Path) -> None:
    (tmp_path / "inputs.py").write_text(_INPUTS)
    names = spec_dim_names(tmp_path / "inputs.py", SYMBOLS, _reference(tmp_path), RESERVED)
    # `kv_heads` is a variable of the reference (it may name a value), `tokens * 2` and 64 are no names,
    # `shape` is one the generated host binds, positions' spec gives no shape
    assert names == {"s0": "tokens", "s1": "heads", "s2": "head_dim"}


def test_inputs_written_otherwise_name_nothing(tmp_path: Path) -> None:
    (tmp_path / "inputs.py").write_text("def make_inputs(case, seed, device):\n    return (), {}\n")
    assert spec_dim_names(tmp_path / "inputs.py", SYMBOLS, _reference(tmp_path), RESERVED) == {}
    (tmp_path / "inputs.py").write_text("SPEC = dict(query=1)\n")  # not a literal: not read
    assert spec_dim_names(tmp_path / "inputs.py", SYMBOLS, _reference(tmp_path), RESERVED) == {}
    assert spec_dim_names(tmp_path / "missing.py", SYMBOLS, _reference(tmp_path), RESERVED) == {}
