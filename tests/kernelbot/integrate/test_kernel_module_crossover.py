"""The module build_kernel_module writes for a bucket crossover whose small inputs run the Inductor seed:
the seed's imports at the top with the first parent's, and its kernel without Inductor's bookkeeping. The
seed is rendered from the capture tests/evolution/data holds (as tests/evolution/test_compile_launch.py
renders it, no GPU), crossed with a plain PyTorch first parent of SGLang RMSNorm's signature."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from evolution.mutators.crossover.source import Route, build_child
from evolution.writers.inductor.model import CaptureReport
from evolution.writers.inductor.render import render_candidate
from kernelbot.integrate.envelope import Envelope
from kernelbot.integrate.kernel_module import KernelNames, build_kernel_module
from kernelbot.integrate.task_view import load_view

CAPTURE = Path(__file__).parents[2] / "evolution" / "data" / "inductor_capture_sglang_rmsnorm_residual.json"
ENTRY = "rms_norm_forward_native"
# SGLang RMSNorm.forward_native's parameters as the extractor writes them (its `self.` reads passed in),
# and its returns, shrunk to the residual case the capture traced.
REFERENCE = f"""import torch


def {ENTRY}(
    x, residual=None, post_residual_addition=None, quant_linear=None, *, override_orig_dtype=None,
    fp32_residual=False, self_hidden_size, variance_size_override, variance_epsilon=1e-06,
    cast_x_before_out_mul=False, weight,
):
    orig_dtype = x.dtype
    x = x.float()
    if residual is not None:
        x = x + residual.float()
        residual = x.to(orig_dtype)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + variance_epsilon)
    x = (x * weight.float()).to(orig_dtype)
    if residual is None:
        return x
    return x, residual
"""
TASK_TOML = f"""
name = "sglang_rmsnorm_residual"
entry = "{ENTRY}"
dynamic = ["tokens"]

[source]
path = "python/sglang/srt/layers/layernorm.py"
qualname = "RMSNorm.forward_native"

[[cases]]
name = "tokens1_hidden64"
tokens = 1
hidden = 64
"""


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    task = tmp_path_factory.mktemp("task")
    (task / "task.toml").write_text(TASK_TOML)
    (task / "reference.py").write_text(REFERENCE)
    (task / "inputs.py").write_text("")
    return task


@pytest.fixture(scope="module")
def seed() -> str:
    return render_candidate(CaptureReport.from_json(CAPTURE.read_text()), "sglang_rmsnorm_residual", ENTRY)


@pytest.fixture(scope="module")
def module_text(task: Path, seed: str) -> str:
    first = REFERENCE.replace(f"def {ENTRY}", f"# EVOLVE-BLOCK-START\ndef {ENTRY}") + "# EVOLVE-BLOCK-END\n"
    child = build_child(first, seed, ENTRY, Route(300_000, True, ""))
    # build_child writes the seed's imports below the first parent's code
    assert child.index("\nfrom typing import Optional\n") > child.index(f"\ndef _{ENTRY}_large(")
    return _built(child, task)


def _built(child: str, task: Path) -> str:
    names = KernelNames("rms_norm_triton", "can_use_rms_norm_triton")
    # The guard plays no part here: the envelope of the task's cases is left out.
    envelope = Envelope("cuda", (), (), ("tokens",))
    return build_kernel_module(child, load_view(task), envelope, names, summary="", line_length=100)


def _seed_crossed_with_a_copy(seed: str, task: Path, *changes: tuple[str, str]) -> str:
    """The module of the seed crossed with a copy of it changed by `changes`, the copy for small inputs."""
    other = seed
    for old, new in changes:
        assert old in other
        other = other.replace(old, new)
    return _built(build_child(seed, other, ENTRY, Route(300_000, True, "")), task)


# What sets the copy apart: Inductor numbered its kernel 1 (another capture's numbering), it launches
# with other constants, and its host has a line of its own.
KERNEL = "_red_fused__to_copy_add_mean_mul_pow_rsqrt_0"
RENUMBERED = (KERNEL, KERNEL.removesuffix("0") + "1")
OTHER_BLOCK = ("K0_R0_BLOCK = 2048", "K0_R0_BLOCK = 4096")
OTHER_HOST = ("device = x.device", "device = x.device\n    tokens_unused = 1")


def test_every_import_is_in_the_block_at_the_top(module_text: str) -> None:
    body = cst.parse_module(module_text).body
    imports = [k for k, s in enumerate(body) if _is_import(s)]
    assert imports == list(range(imports[0], imports[0] + len(imports)))  # one block
    assert imports[-1] < min(k for k, s in enumerate(body) if isinstance(s, cst.FunctionDef))
    assert module_text.count("\nfrom typing import Optional, Tuple, Union\n") == 1
    assert module_text.count("\nimport triton\n") == 1
    # ... as a linter sees it: no import below code (E402), none unused (F401)
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "E402,F401", "-"]
    done = subprocess.run(ruff, input=module_text, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_the_seeded_kernel_keeps_none_of_inductors_unread_bookkeeping(module_text: str) -> None:
    assert "def _rms_norm_kernel(" in module_text
    assert re.findall(r"\b(?:rnumel|RBLOCK|rbase|roffset|rindex)\b", module_text) == []
    # Inductor's renamed indices read as the indices they name
    assert re.findall(r"\b(?:r0_1|x0)\b", module_text) == []
    assert "tl.load(weight_ptr + r0_index, r0_mask" in module_text


def test_the_float_inductor_passes_as_a_pointer_is_named_as_a_value(module_text: str) -> None:
    """Inductor's `in_ptr2` is SGLang's epsilon, a float the kernel only reads as a value."""
    assert "variance_epsilon_ptr" not in module_text
    assert re.search(r"def _rms_norm_kernel\([^)]*\bweight_ptr,", module_text)
    assert re.search(r"def _rms_norm_kernel\([^)]*\bvariance_epsilon,", module_text)


def test_the_buffers_are_named_for_what_the_reference_returns(module_text: str) -> None:
    """Inductor's `buf2` is the residual SGLang returns second: the name the fusion writer gives it too."""
    assert re.findall(r"\bbuf\d+", module_text) == []
    assert "return (x_out, residual_out)" in module_text
    assert re.search(r"def _rms_norm_kernel\([^)]*\bresidual_out_ptr,", module_text)


def test_comments_of_a_merged_twin_name_the_kernel_that_ships(task: Path, seed: str) -> None:
    """Both routes keep their code (their hosts differ); their kernels are one code under two names, and
    the copy's launch parameters' comments named its kernel as the seed did, unsuffixed."""
    text = _seed_crossed_with_a_copy(seed, task, RENUMBERED, OTHER_BLOCK, OTHER_HOST)
    assert text.count("@triton.jit") == 1 and text.count("# Fused by Inductor") == 1
    assert "_red_fused" not in text
    assert "K0_R0_BLOCK_SMALL = 4096  # _rms_norm_kernel: R0_BLOCK" in text


def test_a_comment_the_copy_repeats_is_said_once(task: Path, seed: str) -> None:
    """The flattened routes run one kernel with a launch table: the copy's introduction of its constants
    stays behind above the one it alone sets, below the seed's own."""
    text = _seed_crossed_with_a_copy(seed, task, RENUMBERED, OTHER_BLOCK)
    assert text.count("# Launch parameters, one set per kernel.") == 1
    assert text.count("# Fused by Inductor") == 1
    # The constants it split are one group again.
    assert re.search(r"\nK0_NUM_STAGES = 1[^\n]*\nK0_R0_BLOCK = 4096", text)


def test_the_seeds_launch_comment_stays_above_the_constants_it_introduces(task: Path, seed: str) -> None:
    """The routes' hosts differ in a line and merge into one entry: the seed's launch comment opens the
    flattened block, the copy's repeat of it goes, and the copy's constant joins the group below it."""
    text = _seed_crossed_with_a_copy(seed, task, OTHER_BLOCK, OTHER_HOST)
    assert text.count("# Launch parameters, one set per kernel.") == 1
    assert re.search(r"\n# Launch parameters, one set per kernel\.[^\n]*\n#[^\n]*\nK0_XBLOCK = 1 ", text)
    assert re.search(r"\nK0_NUM_STAGES = 1[^\n]*\nK0_R0_BLOCK_SMALL = 4096", text)


def test_constants_the_copy_shares_name_the_kernel_that_ships(task: Path, seed: str) -> None:
    """One code ships with a launch table, the copy's (its kernel Inductor numbered 1): the seed's constants
    it shares were kept from the seed, their comments naming its kernel 0, which goes."""
    text = _seed_crossed_with_a_copy(seed, task, RENUMBERED, OTHER_BLOCK)
    assert text.count("@triton.jit") == 1 and "_red_fused" not in text
    assert "K0_XBLOCK = 1  # _rms_norm_kernel: XBLOCK" in text


def _is_import(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )
