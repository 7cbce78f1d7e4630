"""A launch table of one test as conditional expressions, the constant only its default read inlined
(evolution/mutators/crossover/table_expressions.py): each size still gets the value it got."""

from __future__ import annotations

import re

import pytest

from evolution.mutators.crossover.table_expressions import table_expressions

ONE_TEST = """
WARPS_SCALE_SMALL = 1.0
ROWS = 2  # rows per program


def entry(nbytes):
    if nbytes <= 22000:
        warps_scale = WARPS_SCALE_SMALL
        rows = ROWS
        if nbytes <= 300:
            warps_scale = 0.5
        return (warps_scale, rows)
    return (2.0, 1)
"""


def _values(source: str, sizes: tuple[int, ...] = (1, 300, 301, 22000, 22001)) -> list[object]:
    namespace: dict[str, object] = {}
    exec(compile(source, "<table>", "exec"), namespace)  # the test's own source, not candidate code
    entry = namespace["entry"]
    assert callable(entry)
    return [entry(n) for n in sizes]


def test_one_test_becomes_an_expression_and_its_only_default_a_number() -> None:
    out = table_expressions(ONE_TEST)
    assert "        warps_scale = 0.5 if nbytes <= 300 else 1.0\n        rows = ROWS\n" in out
    assert "WARPS_SCALE_SMALL" not in out and "if nbytes <= 300:" not in out
    # A constant a comment explains stays, read by name.
    assert "ROWS = 2  # rows per program" in out
    assert _values(out) == _values(ONE_TEST)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (("        if nbytes <= 300:\n", "        if nbytes <= 300 and rows:\n"), "the test reads the run"),
        (
            (
                "            warps_scale = 0.5\n",
                "            warps_scale = 0.5\n        else:\n            rows = 3\n",
            ),
            "an else branch",
        ),
        (
            (
                "            warps_scale = 0.5\n",
                "            warps_scale = 0.5\n        if nbytes > 900:\n            warps_scale = 3.0\n",
            ),
            "a second test",
        ),
        (("        rows = ROWS\n", "        rows = warps_scale\n"), "a default reads what the test sets"),
        (
            ("            warps_scale = 0.5\n", "            warps_scale = 0.5\n            print(nbytes)\n"),
            "the branch does more than set",
        ),
    ],
)
def test_what_is_not_a_one_test_table_stays(change: tuple[str, str], why: str) -> None:
    source = ONE_TEST.replace(*change)
    assert source != ONE_TEST
    out = table_expressions(source)
    assert not re.search(r"= .* if .* else ", out), why
    assert _values(out) == _values(source), why


def test_a_constant_read_twice_stays() -> None:
    source = ONE_TEST.replace("    return (2.0, 1)\n", "    return (WARPS_SCALE_SMALL, 1)\n")
    out = table_expressions(source)
    assert "WARPS_SCALE_SMALL = 1.0" in out and "0.5 if nbytes <= 300 else WARPS_SCALE_SMALL" in out
    assert _values(out) == _values(source)


FLAG = """
def entry(nbytes):
    int64_offsets = False
    warps_scale = 1.0
    if 213 < nbytes <= 2787:
        int64_offsets = True
        warps_scale = 0.5
    return (int64_offsets, warps_scale)
"""


def test_a_flag_set_true_on_the_tested_side_is_the_test() -> None:
    out = table_expressions(FLAG)
    assert "    int64_offsets = 213 < nbytes <= 2787\n" in out
    assert "    warps_scale = 0.5 if 213 < nbytes <= 2787 else 1.0\n" in out
    assert _values(out, (1, 213, 214, 2787, 2788)) == _values(FLAG, (1, 213, 214, 2787, 2788))
    flipped = FLAG.replace("= False", "= TRUE_").replace("= True", "= False").replace("= TRUE_", "= True")
    assert "int64_offsets = True\n" in flipped
    out = table_expressions(flipped)
    assert "    int64_offsets = not (213 < nbytes <= 2787)\n" in out
    assert _values(out, (1, 213, 214, 2787, 2788)) == _values(flipped, (1, 213, 214, 2787, 2788))
    # A test that is no comparison may be no bool (a count): the flag stays a choice between True and False.
    counted = FLAG.replace("if 213 < nbytes <= 2787:", "if nbytes % 3:")
    assert "int64_offsets = True if nbytes % 3 else False" in table_expressions(counted)
