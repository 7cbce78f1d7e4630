"""Host helpers and constants of a flat module that differ only in their route suffix become one."""

from __future__ import annotations

from evolution.mutators.crossover.host_helpers import host_helpers_merged, threaded_constants_as_parameters

TWO_CODES = """
ROWS_small = 2  # rows per program
WARPS_SCALE_small = SCALE_SMALL


def _num_warps_small(elements):
    warps = min(max(elements // 512, 1), 16)
    return min(max(int(warps * WARPS_SCALE_small), 1), 32)


ROWS_large = 2  # rows per program
WARPS_SCALE_large = SCALE_LARGE


def _num_warps_large(elements):
    warps = min(max(elements // 512, 1), 16)
    return min(max(int(warps * WARPS_SCALE_large), 1), 32)


def route(n):
    if n <= 1000:
        return ("bitonic", (n + ROWS_small - 1) // ROWS_small, _num_warps_small(ROWS_small * n))
    return ("twopass", (n + ROWS_large - 1) // ROWS_large, _num_warps_large(ROWS_large * n))
"""


def _runs(text: str) -> list[tuple]:
    scope: dict = {}
    exec(text, scope)
    return [scope["route"](n) for n in (4, 1000, 1001, 9000, 40000)]


def test_equal_constants_and_their_helpers_become_one() -> None:
    """Both codes run two rows a program and scale the warps by 2: one ROWS, one WARPS_SCALE, one helper."""
    source = TWO_CODES.replace("SCALE_SMALL", "2.0").replace("SCALE_LARGE", "2.0")
    merged = host_helpers_merged(source)
    assert "ROWS = 2  # rows per program" in merged and "WARPS_SCALE = 2.0" in merged
    assert "_small" not in merged and "_large" not in merged
    assert merged.count("def _num_warps(elements):") == 1
    assert _runs(merged) == _runs(source)


def test_helpers_alike_but_for_their_constant_take_it_as_a_parameter() -> None:
    source = TWO_CODES.replace("SCALE_SMALL", "0.5").replace("SCALE_LARGE", "2.0")
    merged = host_helpers_merged(source)
    assert merged.count("def _num_warps(elements, warps_scale):") == 1
    assert "int(warps * warps_scale)" in merged
    assert "_num_warps(ROWS * n, WARPS_SCALE_small)" in merged
    assert "_num_warps(ROWS * n, WARPS_SCALE_large)" in merged
    assert "_num_warps_small" not in merged and "_num_warps_large" not in merged
    assert _runs(merged) == _runs(source)


def test_a_helper_a_launch_table_passes_its_constant_to_merges_too() -> None:
    """The large code's launch table threads its constant through the helper (`*, WARPS_SCALE_large=
    WARPS_SCALE_large`, a local passed where the size asks for another value): one helper still, each call
    passing what its copy would have read."""
    source = TWO_CODES.replace("SCALE_SMALL", "0.5").replace("SCALE_LARGE", "2.0")
    source = source.replace(
        "def _num_warps_large(elements):",
        "def _num_warps_large(elements, *, WARPS_SCALE_large=WARPS_SCALE_large):",
    ).replace(
        '    return ("twopass", (n + ROWS_large - 1) // ROWS_large, _num_warps_large(ROWS_large * n))',
        "    warps_scale = 1.0 if n > 8000 else WARPS_SCALE_large\n"
        '    return ("twopass", (n + ROWS_large - 1) // ROWS_large, '
        "_num_warps_large(ROWS_large * n, WARPS_SCALE_large=warps_scale))",
    )
    merged = host_helpers_merged(source)
    assert merged.count("def _num_warps(elements, warps_scale):") == 1 and "_num_warps_large" not in merged
    assert (
        "_num_warps(ROWS * n, WARPS_SCALE_small)" in merged and "_num_warps(ROWS * n, warps_scale)" in merged
    )
    assert _runs(merged) == _runs(source)
    assert [r[2] for r in _runs(merged)] == [1, 1, 6, 16, 16]  # 9000: 16 warps at scale 1, not 32
    # A keyword-only parameter of another kind (not the copy's own constant) leaves the copies alone.
    other = source.replace("*, WARPS_SCALE_large=WARPS_SCALE_large", "*, WARPS_SCALE_large=1.0")
    assert host_helpers_merged(other).count("def _num_warps_") == 2


def test_what_a_merge_would_change_is_left_alone() -> None:
    source = TWO_CODES.replace("SCALE_SMALL", "0.5").replace("SCALE_LARGE", "2.0")
    # The helper's name is taken already.
    taken = source + "\n\ndef _num_warps(elements):\n    return 1\n"
    assert "_num_warps_small(" in host_helpers_merged(taken)
    # A helper passed as a value, not called: its name must stay.
    passed = source + "\n\nPICK = _num_warps_small\n"
    assert "def _num_warps_small(" in host_helpers_merged(passed)
    # Bodies that differ beyond the constant.
    different = source.replace(
        "min(max(elements // 512, 1), 16)\n    return min(max(int(warps * WARPS_SCALE_large)",
        "min(max(elements // 256, 1), 16)\n    return min(max(int(warps * WARPS_SCALE_large)",
    )
    assert "def _num_warps_small(" in host_helpers_merged(different)
    # A reader with a local of the constant's stem keeps the suffixed constants.
    shadowed = source.replace("def route(n):\n", "def route(n):\n    ROWS = 0\n")
    merged = host_helpers_merged(shadowed)
    assert "ROWS_small = 2" in merged and _runs(merged) == _runs(shadowed)


def test_a_keyword_spelled_like_a_merged_constant_stays() -> None:
    """Only reads of a constant are renamed: a call's keyword of the same spelling is another name."""
    source = TWO_CODES.replace("SCALE_SMALL", "2.0").replace("SCALE_LARGE", "2.0")
    spelled = source + "\n\ndef spelled(n):\n    return dict(ROWS_small=n, rows=ROWS_small)\n"
    merged = host_helpers_merged(spelled)
    assert "return dict(ROWS_small=n, rows=ROWS)" in merged


THREADED = """
WARPS_SCALE = 2.0


def _num_warps(elements, *, WARPS_SCALE=WARPS_SCALE):
    return min(max(int(elements // 512 * WARPS_SCALE), 1), 32)


def _launch(n, *, WARPS_SCALE=WARPS_SCALE):
    return ("kernel", _num_warps(n, WARPS_SCALE=WARPS_SCALE))


def route(n):
    warps_scale = WARPS_SCALE
    if n > 8000:
        warps_scale = 1.0
    if n <= 1000:
        return ("small", _num_warps(n))
    if n <= 4000:
        return _launch(n, WARPS_SCALE=0.5)
    return ("large", _num_warps(n, WARPS_SCALE=warps_scale))
"""


def test_a_constant_threaded_through_a_helper_becomes_its_parameter() -> None:
    """A launch table's constant, threaded through a helper as `*, WARPS_SCALE=WARPS_SCALE`, is the helper's
    last plain parameter: each call passes the variable it named, or the module's constant where it named
    none. A function called with a literal (`_launch(n, WARPS_SCALE=0.5)`) keeps its keyword."""
    plain = threaded_constants_as_parameters(THREADED)
    assert "def _num_warps(elements, warps_scale):" in plain and "int(elements // 512 * warps_scale)" in plain
    assert '("small", _num_warps(n, WARPS_SCALE))' in plain
    assert '("large", _num_warps(n, warps_scale))' in plain
    assert "def _launch(n, *, WARPS_SCALE=WARPS_SCALE):" in plain and "_launch(n, WARPS_SCALE=0.5)" in plain
    assert '("kernel", _num_warps(n, WARPS_SCALE))' in plain
    assert _runs(plain) == _runs(THREADED) and [r[1] for r in _runs(plain)] == [1, 2, 1, 17, 32]
    # A call giving no value, in a function that binds the constant's name itself: passing the name there
    # would pass that binding, not the module's constant, so the helper stays as it is.
    shadowed = THREADED + "\n\ndef other(n, WARPS_SCALE):\n    return _num_warps(n)\n"
    assert "def _num_warps(elements, *, WARPS_SCALE=WARPS_SCALE):" in threaded_constants_as_parameters(
        shadowed
    )
