"""A warps scale left at 1.0 is folded out of the module that ships (evolution.writers.fusion.unit_scale):
on the fusion generator's own output, the helper returns the same warps for every size and the candidate
stays correct; any other scale, or a constant something else reads, stays."""

from __future__ import annotations

import dataclasses
import re

import pytest
from fusion_tasks import check, trace, write, write_task
from test_readable import RMS_INPUTS, RMS_REFERENCE

from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.unit_scale import unit_scales_folded


@pytest.fixture(scope="module")
def rms(tmp_path_factory: pytest.TempPathFactory):
    root = write_task(
        tmp_path_factory.mktemp("unit_scale") / "add_rmsnorm",
        "add_rmsnorm",
        RMS_REFERENCE,
        RMS_INPUTS,
        [{"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16"}],
    )
    return root, trace(root)


def _num_warps(source: str, name: str = "_num_warps"):
    """The module's warps helper, run on its own with the module's constants."""
    import triton

    scope: dict = {"triton": triton}
    for line in re.findall(r"^WARPS_SCALE\w* = .*$", source, re.M):
        exec(line, scope)
    helper = source[source.index(f"def {name}(") :].split("\n\n\n")[0]
    exec(helper, scope)
    return scope[name]


def test_a_unit_scale_is_folded_and_the_helper_sizes_warps_as_before(rms) -> None:
    root, report = rms
    source = write(root, report).source
    assert "WARPS_SCALE = 1.0" in source and "int(warps * WARPS_SCALE)" in source
    folded = unit_scales_folded(source)
    assert "WARPS_SCALE" not in folded
    assert "# EVOLVE-BLOCK-START" in folded and "# fusion-knobs:" in folded  # comments above it kept
    before, after = _num_warps(source), _num_warps(folded)
    assert [after(n) for n in range(1, 70000, 97)] == [before(n) for n in range(1, 70000, 97)]
    assert check(root, folded) > 0


def test_another_scale_or_another_reader_keeps_the_constant(rms) -> None:
    root, report = rms
    scaled = write(root, report, dataclasses.replace(Knobs(), warps=2.0)).source
    assert "WARPS_SCALE = 2.0" in scaled and unit_scales_folded(scaled) == scaled
    source = write(root, report).source
    read_elsewhere = source + "\n\ndef _scale():\n    return WARPS_SCALE\n"
    assert unit_scales_folded(read_elsewhere) == read_elsewhere
    # A helper of another shape (no clamp to 1..16 before the scale) is not the generator's: left alone.
    other = source.replace("// 512, 1), 16)", "// 512, 1), 64)")
    assert unit_scales_folded(other) == other


def test_each_crossover_copy_is_folded_on_its_own() -> None:
    """A flattened crossover names each code's scale apart: a copy at 1.0 goes, one at 0.5 stays."""
    helper = (
        "def _num_warps{s}(elements):\n"
        "    warps = min(max(triton.next_power_of_2(elements) // 512, 1), 16)\n"
        "    return min(max(int(warps * WARPS_SCALE{s}), 1), 32)\n"
    )
    source = (
        "import triton\n\nWARPS_SCALE_small = 1.0\nWARPS_SCALE_large = 0.5\n\n\n"
        + helper.format(s="_small")
        + "\n\n"
        + helper.format(s="_large")
    )
    folded = unit_scales_folded(source)
    assert "WARPS_SCALE_small" not in folded and "WARPS_SCALE_large = 0.5" in folded
    assert _num_warps(folded, "_num_warps_small")(8192) == 16
    assert _num_warps(folded, "_num_warps_large")(8192) == 8


def test_source_that_does_not_parse_is_returned_as_it_is() -> None:
    assert unit_scales_folded("def broken(:\n") == "def broken(:\n"
