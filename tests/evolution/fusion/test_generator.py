"""The fusion generator end to end on small references written here: traced (in-process), written into a
candidate, and the candidate run on the interpreter against the reference on every case and at other dynamic
sizes (outputs and in-place writes). Each reference exercises a different part of the lowering; the refusals
name the op or construct."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from fusion_tasks import check, trace, write, write_task

from evaluators.static.checks import check_static
from evaluators.task import load_task
from evolution.writers.fusion.generate import GenerationError
from evolution.writers.fusion.knobs import Knobs, neighbours

pytestmark = pytest.mark.slow  # each trace starts Dynamo (seconds)

RMS_REFERENCE = """
import torch


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    residual.add_(x)
    h = residual.float()
    normed = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (normed * weight.float()).to(x.dtype)
"""
RMS_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, case["dtype"])
    t, h = case["tokens"], case["hidden"]
    x = torch.randn(t, h, generator=g).to(dtype).to(device)
    residual = (2 * torch.randn(t, h, generator=g)).to(dtype).to(device)
    weight = (1 + 0.1 * torch.randn(h, generator=g)).to(dtype).to(device)
    return (x, residual, weight), {"eps": float(case["eps"])}
"""
ROUTER_REFERENCE = """
import torch


def route(logits: torch.Tensor, *, top_k: int = 4):
    weights = torch.softmax(logits, dim=-1, dtype=torch.float32)
    top, ids = torch.topk(weights, top_k, dim=-1)
    top = top / top.sum(dim=-1, keepdim=True)
    return top, ids.to(torch.int32)
"""
ROUTER_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], case["experts"], generator=g).to(device),), {"top_k": case["k"]}
"""
ROTARY_REFERENCE = """
import torch


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
"""
ROTARY_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    t, h, d = case["tokens"], case["heads"], case["dim"]
    x = torch.randn(t, h, d, generator=g).to(torch.bfloat16).to(device)
    cos = torch.rand(t, d // 2, generator=g).to(device)
    sin = torch.rand(t, d // 2, generator=g).to(device)
    return (x, cos, sin), {}
"""
TOPP_REFERENCE = """
import torch


def top_p(probs: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    ordered, order = probs.sort(dim=-1, descending=True)
    before = ordered.cumsum(dim=-1) - ordered
    kept = ordered.masked_fill(before > p[:, None], 0.0)
    kept = kept / kept.sum(dim=-1, keepdim=True)
    return torch.zeros_like(probs).scatter(-1, order, kept)
"""
TOPP_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(3 * torch.randn(case["batch"], case["vocab"], generator=g), dim=-1)
    p = 0.3 + 0.6 * torch.rand(case["batch"], generator=g)
    return (probs.to(device), p.to(device)), {}
"""
GATED_REFERENCE = """
import torch
import torch.nn.functional as F


def gated(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]
"""
GATED_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, case["tokens"], 2 * case["d"], generator=g).to(torch.bfloat16).to(device),), {}
"""
LAYER_NORM_REFERENCE = """
import torch
import torch.nn.functional as F


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x.float(), (x.shape[-1],), weight, bias, 1e-5).to(x.dtype)
"""
LAYER_NORM_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    h = case["hidden"]
    x = torch.randn(case["tokens"], h, generator=g).to(torch.bfloat16)
    return (x.to(device), torch.rand(h, generator=g).to(device), torch.randn(h, generator=g).to(device)), {}
"""
STATS_REFERENCE = """
import torch


def row_stats(x: torch.Tensor):
    h = x.float()
    return torch.softmax(h, dim=-1).to(x.dtype), h.var(dim=-1, keepdim=True), torch.logsumexp(h, dim=-1)
"""
STATS_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], case["width"], generator=g).to(torch.bfloat16).to(device),), {}
"""
MATMUL_REFERENCE = """
import torch


def project(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ w)
"""
MATMUL_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], 8, generator=g), torch.randn(8, 8, generator=g)), {}
"""


def _generated(root: Path, knobs: Knobs | None = None) -> str:
    report = trace(root)
    source = write(root, report, knobs).source
    task = load_task(root)
    static = check_static(source, task)
    assert not static.errors and not static.findings, (static.errors, static.findings)
    return source


def test_residual_rmsnorm_in_place_in_three_dtypes(tmp_path: Path) -> None:
    cases = [
        {"name": "t3_fp32", "tokens": 3, "hidden": 40, "dtype": "float32", "eps": 1e-6},
        {"name": "t5_bf16", "tokens": 5, "hidden": 96, "dtype": "bfloat16", "eps": 1e-5},
        {"name": "t2_fp16", "tokens": 2, "hidden": 64, "dtype": "float16", "eps": 1e-5},
    ]
    root = write_task(tmp_path / "rms", "add_rmsnorm", RMS_REFERENCE, RMS_INPUTS, cases)
    report = trace(root)
    assert len(report.graphs) == 3  # one specialisation per dtype
    source = write(root, report).source
    # The 16-bit kernels round their intermediates as eager does, to the dtype the input's pointer holds:
    # one body for bfloat16 and float16, one for float32, each named for when it runs, and one host each.
    assert re.findall(r"def (_add_rmsnorm\w*)\(", source) == [
        "_add_rmsnorm_fp32_kernel",
        "_add_rmsnorm_bf16_fp16_kernel",
        "_add_rmsnorm_fp32",
        "_add_rmsnorm_bf16_fp16",
    ]
    assert ".to(residual_ptr.dtype.element_ty).to(tl.float32)" in source
    assert "tl.bfloat16" not in source and "tl.float16" not in source
    fp32_host, half_host = source.split("def _add_rmsnorm_fp32(")[1].split("def _add_rmsnorm_bf16_fp16(")
    # Each host allocates in its argument's dtype: they differ only in the kernel they launch, and the
    # module that ships has one (kernelbot/integrate/merge_twin_hosts.py).
    assert "dtype=x.dtype" in fp32_host and "dtype=x.dtype" in half_host and "dtype=torch." not in source
    # The tokens are residual's first dim and x's (a guard says so): read from x, whose width the host
    # reads too, in one unpacking.
    assert "x_size0, x_size1 = x.shape" in half_host and "residual.shape" not in source
    assert "x.dtype in (torch.bfloat16, torch.float16)" in source
    # Every load is issued before the sum of squares (the weight's latency hides behind the row's), and the
    # residual's in-place store still comes after its load.
    for kernel in source.split("@triton.jit")[1:]:
        assert kernel.rindex("tl.load(") < kernel.index("tl.sum(") < kernel.index("tl.store(residual_ptr")
    assert check(root, source) == 18


GATED_DTYPE_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, case["dtype"])
    return (torch.randn(case["tokens"], 2 * case["d"], generator=g).to(dtype).to(device),), {}
"""


def test_a_gated_activation_in_three_dtypes_is_one_kernel(tmp_path: Path) -> None:
    """SiLU-and-mul traced in float32, bfloat16 and float16: three graphs that differ only in their dtype.
    The 16-bit kernel rounds to the dtype its input's pointer holds, which in float32 is a cast that changes
    nothing: one kernel serves the three, launched by the entry itself (no dtype test chooses between the
    same code), and the float32 cases are still computed exactly."""
    cases = [
        {"name": "t3_fp32", "tokens": 3, "d": 24, "dtype": "float32"},
        {"name": "t2_bf16", "tokens": 2, "d": 40, "dtype": "bfloat16"},
        {"name": "t4_fp16", "tokens": 4, "d": 16, "dtype": "float16"},
    ]
    root = write_task(tmp_path / "gated3", "gated", GATED_REFERENCE, GATED_DTYPE_INPUTS, cases)
    report = trace(root)
    assert len(report.graphs) == 3
    source = write(root, report).source
    assert re.findall(r"def (_?gated\w*)\(", source) == ["_gated_kernel", "gated"]
    assert ".to(x_ptr.dtype.element_ty).to(tl.float32)" in source and "tl.bfloat16" not in source
    assert "x.dtype" not in source.split("def gated(")[1].split("torch.empty")[0]  # no dispatch on it
    assert "dtype=x.dtype" in source and "raise TypeError" not in source
    assert source.startswith('"""One kernel fused from') and check(root, source) == 18


def test_router_softmax_topk_renormalised_and_every_knob_variant(tmp_path: Path) -> None:
    cases = [
        {"name": "t4_e20", "tokens": 4, "experts": 20, "k": 4},
        {"name": "t2_e64", "tokens": 2, "experts": 64, "k": 8},
    ]
    root = write_task(tmp_path / "router", "route", ROUTER_REFERENCE, ROUTER_INPUTS, cases)
    report = trace(root)
    generated = write(root, report)
    assert generated.uses_topk and "_kb_topk_rows(" in generated.source
    check(root, generated.source, dynamic_values=(3,), seeds=(0,))
    sources = {generated.source}
    for knobs in neighbours(Knobs(), uses_topk=True):
        if knobs.passes == "two":  # the top-k needs the row whole: refused, saying why
            with pytest.raises(GenerationError, match="two passes"):
                write(root, report, knobs)
            continue
        source = write(root, report, knobs).source
        check(root, source, dynamic_values=(3,), seeds=(0,))
        sources.add(source)
    assert len(sources) >= 10  # the knobs change the code, not only the header


def test_neox_rotary_with_chunk_and_cat(tmp_path: Path) -> None:
    cases = [{"name": "t3", "tokens": 3, "heads": 2, "dim": 16}]
    root = write_task(tmp_path / "rotary", "rotate", ROTARY_REFERENCE, ROTARY_INPUTS, cases)
    check(root, _generated(root))


def test_top_p_filter_sort_cumsum_scatter(tmp_path: Path) -> None:
    cases = [{"name": "b2_v50", "batch": 2, "vocab": 50}]
    root = write_task(tmp_path / "topp", "top_p", TOPP_REFERENCE, TOPP_INPUTS, cases, dynamic=("batch",))
    source = _generated(root)
    assert "_kb_sort_rows(" in source
    check(root, source)


def test_gated_activation_on_three_dims_in_blocks(tmp_path: Path) -> None:
    cases = [{"name": "t3_d24", "tokens": 3, "d": 24}, {"name": "t2_d1100", "tokens": 2, "d": 1100}]
    root = write_task(tmp_path / "gated", "gated", GATED_REFERENCE, GATED_INPUTS, cases)
    report = trace(root)
    blocked = write(root, report, Knobs(block=128, small_grid=0)).source
    assert "BLOCK_" in blocked and "SMALL_GRID" not in blocked  # the row is split over the grid
    check(root, blocked)
    # A launch of fewer than SMALL_GRID programs (every one here) runs blocks of 512, not 2048: d=1100
    # takes three programs a row, the last one masked, with the warps of the full block.
    split = write(root, report).source
    assert "< SMALL_GRID:\n        BLOCK_D = min(BLOCK_D, SMALL_BLOCK)" in split
    check(root, split)
    check(root, write(root, report, Knobs(inner="row", rows=2)).source)
    # index32 (the default): the row-major offsets stay int32 (Inductor's indexing below 2**31 elements);
    # off, a grid index is widened before it meets a row stride
    wide = write(root, report, Knobs(index32=False)).source
    assert "tl.int64" not in split and "tl.int64" in wide
    check(root, wide)


def test_two_pass_reductions_walk_the_row_in_chunks(tmp_path: Path) -> None:
    """Softmax (max, then sum of exponentials), variance (mean, then centred squares), logsumexp and the
    in-place residual norm with the row walked in chunks of 16 (a masked last chunk), one and two rows."""
    cases = [{"name": "t3_w100", "tokens": 3, "width": 100}]
    root = write_task(tmp_path / "stats", "row_stats", STATS_REFERENCE, STATS_INPUTS, cases)
    report = trace(root)
    for rows in (1, 2):
        source = write(root, report, Knobs(passes="two", block=16, rows=rows)).source
        assert (
            source.count(" in range(0, ") >= 4
        )  # pre-loops for max, sum, mean, squares, then the store loop
        assert "# Two passes: the whole row's max first" in source  # says why it loops twice
        # the lanes' shape as a formatter keeps it on one line (a trailing comma only for one axis)
        lanes = "(ROWS, BLOCK_COL)" if rows > 1 else "(BLOCK_COL,)"
        assert f"= tl.full({lanes}, " in source
        check(root, source)
    rms_cases = [{"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16", "eps": 1e-5}]
    rms = write_task(tmp_path / "rms", "add_rmsnorm", RMS_REFERENCE, RMS_INPUTS, rms_cases)
    # A persistent grid of two programs for three rows: a program's second row starts its sums afresh.
    check(rms, write(rms, trace(rms), Knobs(passes="two", block=32, persistent=2)).source)
    # Inductor's looped reduction: chunks added lane by lane, one reduction across the warps after the
    # loop; what the first pass loads stays in L2 for the second, which streams it.
    source = write(rms, trace(rms), Knobs(passes="two", block=32, eviction=True)).source
    first, second = source.split("for ")[1:3]
    first, after = re.split(r"\n    (?=\S)", first, maxsplit=1)  # the first loop's body; what follows it
    # named for what they hold: the partial sums of squares, the reciprocal root mean square
    assert "tl.sum(" not in first and "sum_sq = sum_sq + " in first
    assert after.startswith("inv_rms = tl.rsqrt(tl.sum(sum_sq, axis=0) / ")
    assert "evict_last" in first and "evict_first" not in first
    assert "evict_first" in second
    check(rms, source)


def test_layer_norm(tmp_path: Path) -> None:
    cases = [{"name": "t3_h48", "tokens": 3, "hidden": 48}]
    root = write_task(tmp_path / "ln", "layer_norm", LAYER_NORM_REFERENCE, LAYER_NORM_INPUTS, cases)
    check(root, _generated(root))


def test_refuses_a_matrix_product_naming_the_op(tmp_path: Path) -> None:
    cases = [{"name": "t4", "tokens": 4}]
    root = write_task(tmp_path / "mm", "project", MATMUL_REFERENCE, MATMUL_INPUTS, cases)
    report = trace(root)
    with pytest.raises(GenerationError, match=r"aten\.mm"):
        write(root, report)


def test_generated_candidate_layout(tmp_path: Path) -> None:
    """Imports outside the block, knobs header and building blocks inside, the reference's signature."""
    cases = [{"name": "t4_e20", "tokens": 4, "experts": 20, "k": 4}]
    root = write_task(tmp_path / "router", "route", ROUTER_REFERENCE, ROUTER_INPUTS, cases)
    source = _generated(root)
    before, block = source.split("# EVOLVE-BLOCK-START")
    assert "import triton.language as tl" in before and "@triton.jit" not in before
    assert block.splitlines()[1].startswith("# fusion-knobs: {")
    entry = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "route")
    assert [a.arg for a in entry.args.kwonlyargs] == ["top_k"] and ast.unparse(
        entry.args.kw_defaults[0]
    ) == "4"
    assert "kernelbot" not in source.split('"""', 2)[2]  # nothing imports kernelbot: the blocks are inlined
