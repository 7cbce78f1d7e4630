"""The generated test's style follows the profile and the tree: a unittest class deriving the profile's base
class where the tree defines it, plain unittest.TestCase where it does not; tasks without an input spec are
refused."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

import pytest

from extractors.extract import ExtractOptions, extract
from kernelbot.engines import TestPlacement, load_profile
from kernelbot.integrate.derive_envelope import derive_envelope
from kernelbot.integrate.errors import IntegrationError
from kernelbot.integrate.task_view import load_view
from kernelbot.integrate.test_source import TestSubject, render_test

ROOT = Path(__file__).resolve().parents[3]
SUBJECT = TestSubject(
    "minisglang.layers.activation",
    "minisglang.layers.silu_and_mul_triton",
    "silu_and_mul_triton",
    "can_use",
    {},
)


def test_unittest_style_derives_the_base_class_only_where_the_tree_has_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "minirepo", repo, ignore=shutil.ignore_patterns("__pycache__"))
    target = "minisglang.layers.activation:SiluAndMul.forward_native"
    spec = Path(__file__).parent / "specs" / "minisglang_silu_and_mul.toml"
    extract(ExtractOptions(repo, target, out=tmp_path / "task", spec=spec))
    view = load_view(tmp_path / "task")
    tests = TestPlacement("tests", "unittest-customtestcase", base_class="minisglang.testing:CustomTestCase")
    profile = dataclasses.replace(load_profile("example"), tests=tests)
    other = derive_envelope(view).other_cases

    plain = render_test(view, SUBJECT, profile, repo, other)
    ast.parse(plain)
    assert "class TestSiluAndMulTriton(unittest.TestCase):" in plain and "CustomTestCase" not in plain
    assert "UNORDERED" not in plain and "TIES" not in plain  # no compare rules: element by element

    (repo / "minisglang" / "testing.py").write_text(
        "import unittest\n\n\nclass CustomTestCase(unittest.TestCase):\n    pass\n"
    )
    derived = render_test(view, SUBJECT, profile, repo, other)
    assert "from minisglang.testing import CustomTestCase" in derived
    assert (
        "class TestSiluAndMulTriton(CustomTestCase):" in derived and 'if __name__ == "__main__":' in derived
    )


def test_a_task_without_an_input_spec_is_refused() -> None:
    view = load_view(ROOT / "examples" / "tasks" / "silu_and_mul")  # hand-written inputs.py
    with pytest.raises(IntegrationError, match=r"holds no input spec .* re-extract the task with --spec"):
        render_test(view, SUBJECT, load_profile("example"), ROOT / "examples" / "minirepo", ())
