"""Inductor output -> standalone candidate, from a hand-written wrapper in Inductor's format (no torch.compile
here, so these run in a second): host translation, kernel clean-up, helpers, and refusing ATen fallbacks."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest
import torch

from evaluators.candidate import find_evolve_block
from evolution.writers.inductor.helpers import helper_sources
from evolution.writers.inductor.kernels import InductorConversionError
from evolution.writers.inductor.model import Capture, CaptureReport, GraphInput
from evolution.writers.inductor.render import render_candidate

POINTWISE = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.pointwise(
    size_hints={'x': 512},
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32), 'constants': {}},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_poi_fused_add_0', 'mutated_arg_names': ['in_out_ptr0'], 'no_x_dim': False},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_0(in_out_ptr0, in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_out_ptr0 + (x0), xmask)
    tmp1 = tl.load(in_ptr0 + (x0), xmask)
    tmp2 = tmp0 + tmp1
    tmp3 = libdevice.tanh(tmp2)
    tmp4 = tmp3 * tl_math.abs(tmp2)
    tl.store(in_out_ptr0 + (x0), tmp2, xmask)
    tl.store(out_ptr0 + (x0), tmp4, xmask)
"""  # noqa: E501

REDUCTION = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

@triton_heuristics.reduction(
    size_hints={'x': 8, 'r0_': 64},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr1': '*fp32', 'in_ptr1': 'fp32', 'ks0': 'i64', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32), 'constants': {}},
    inductor_meta={'grid_type': 'Grid1D', 'autotune_hints': set(), 'kernel_name': 'triton_red_fused_amax_mul_1', 'mutated_arg_names': [], 'no_x_dim': False}
)
@triton.jit
def triton_red_fused_amax_mul_1(in_ptr0, out_ptr1, in_ptr1, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    rnumel = r0_numel
    RBLOCK: tl.constexpr = R0_BLOCK
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + ks0*x0), r0_mask & xmask, eviction_policy='evict_first', other=0.0)
        tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
        tmp3 = triton_helpers.maximum(_tmp2, tmp1)
        _tmp2 = tl.where(r0_mask & xmask, tmp3, _tmp2)
    tmp2 = triton_helpers.max2(_tmp2, 1)[:, None]
    tmp4 = in_ptr1
    tmp5 = tmp2 * tmp4
    tl.store(out_ptr1 + (x0), tmp5, xmask)
"""  # noqa: E501

HOST = """
def call(args):
    arg0_1, arg1_1, arg2_1, arg3_1, arg4_1 = args
    args.clear()
    s0 = arg0_1
    s1 = arg1_1
    assert_size_stride(arg2_1, (s0, s1), (s1, 1), 'input')
    with torch.cuda._DeviceGuard(0):
        torch.cuda.set_device(0)
        buf1 = empty_strided_cuda((s0, s1), (s1, 1), torch.float32)
        # Topologically Sorted Source Nodes: [add_, tanh], Original ATen: [aten.add, aten.tanh]
        triton_poi_fused_add_0_xnumel = s0*s1
        stream0 = get_raw_stream(0)
        triton_poi_fused_add_0.run(arg2_1, arg3_1, buf1, triton_poi_fused_add_0_xnumel, stream=stream0)
        buf2 = empty_strided_cuda((s0, ), (1, ), torch.float32)
        # Topologically Sorted Source Nodes: [amax, mul], Original ATen: [aten.amax, aten.mul]
        triton_red_fused_amax_mul_1.run(arg2_1, buf2, arg4_1.item(), s1, s0, s1, stream=stream0)
        del arg3_1
    return (reinterpret_tensor(buf2, (s0, 1), (1, 1), 0), buf1, )
"""

SIGNATURE = (
    "def fused(x: torch.Tensor, y: torch.Tensor, alpha: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:"
)
INPUTS = (
    GraphInput("symint", "x.shape[0]"),
    GraphInput("symint", "x.shape[1]"),
    GraphInput("tensor", "x"),
    GraphInput("tensor", "y"),
    GraphInput("scalar", "alpha"),
)


def wrapper(host: str = HOST, kernels: dict[str, str] | None = None) -> str:
    kernels = kernels or {"triton_poi_fused_add_0": POINTWISE, "triton_red_fused_amax_mul_1": REDUCTION}
    parts = [
        "import torch",
        "from torch._inductor.async_compile import AsyncCompile",
        "async_compile = AsyncCompile()",
    ]
    for name, source in kernels.items():
        parts.append(f"# Topologically Sorted Source Nodes: [x], Original ATen: [aten.{name[-6:]}]")
        parts.append(f"{name} = async_compile.triton('{name}', '''{source}''', device_str='cuda')")
    parts.append("async_compile.wait(globals())")
    return "\n".join(parts) + "\n" + host


def report(wrapper_text: str, outputs: dict | None = None, dtypes: dict | None = None) -> CaptureReport:
    capture = Capture(
        variant="float32",
        case="c",
        wrapper=wrapper_text,
        inputs=INPUTS,
        outputs=outputs or {"tuple": [{"out": 0}, {"out": 1}]},
        dtypes=dtypes or {"x": "float32", "y": "float32"},
    )
    return CaptureReport(captures=(capture,), signature=SIGNATURE, torch_version="2.x", device="cuda:0")


def load(source: str, path: Path):
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_converted_candidate_is_standalone_and_readable():
    source = render_candidate(report(wrapper()), "fused", "fused")
    for leftover in (
        "torch._inductor",
        "triton_helpers",
        "triton_heuristics",
        "libdevice",
        "async_compile",
        ".run(",
    ):
        assert leftover not in source
    block = find_evolve_block(source)
    assert block is not None and "@triton.jit" in block.text and "def fused(" in block.text
    assert source.index("import triton.language as tl") < source.index("# EVOLVE-BLOCK-START")
    assert "K0_XBLOCK = 1024" in source and "K1_R0_BLOCK = 2048" in source and "K1_NUM_STAGES = 1" in source
    assert (
        "def fused(x: torch.Tensor, y: torch.Tensor, alpha: float=1.0) -> tuple[torch.Tensor, torch.Tensor]:"
        in (source)
    )
    assert "x_size0 = x.shape[0]" in source and "torch.empty((x_size0, x_size1), dtype" in source
    assert "device=device" in source and "torch.as_strided(buf2, (x_size0, 1), (1, 1), 0)" in source
    assert "_red_fused_amax_mul_1[k1_grid](x, buf2, alpha, x_size1, x_size0, x_size1" in source
    assert "# _poi_fused_add_0: aten.add, aten.tanh" in source
    assert "def _tanh(" in source and "def _maximum(" in source and "def _max2(" in source
    ast.parse(source)


def test_sizes_take_the_names_the_input_spec_gives_their_axes():
    """A capture's report names the sizes its spec names (`x: [tokens, hidden]`); the host reads them
    under those names, in every line that uses them; a name the host already binds is left alone, and so
    is a size without one."""
    plain = render_candidate(report(wrapper()), "fused", "fused")
    spec = {"x.shape[0]": "tokens", "x.shape[1]": "hidden"}
    named = dataclasses.replace(report(wrapper()), size_names=spec)
    source = render_candidate(CaptureReport.from_json(named.to_json()), "fused", "fused")
    assert "tokens = x.shape[0]" in source and "hidden = x.shape[1]" in source
    assert "torch.empty((tokens, hidden)" in source and not re.search(r"\bx_size\d", source)
    assert source == plain.replace("x_size0", "tokens").replace("x_size1", "hidden")
    taken = dataclasses.replace(report(wrapper()), size_names={"x.shape[0]": "device", "x.shape[1]": "alpha"})
    assert render_candidate(taken, "fused", "fused") == plain


def test_converted_candidate_computes_the_reference_in_place(tmp_path):
    source = render_candidate(report(wrapper()), "fused", "fused")
    fused = load(source, tmp_path / "fused_candidate.py").fused
    x = torch.randn(6, 70)
    y = torch.randn(6, 70)
    expected_x = x + y
    rowmax, act = fused(x, y, 0.5)
    torch.testing.assert_close(x, expected_x)  # the in-place update of x happened
    torch.testing.assert_close(rowmax, expected_x.amax(dim=1, keepdim=True) * 0.5)
    torch.testing.assert_close(act, torch.tanh(expected_x) * expected_x.abs(), atol=1e-6, rtol=1e-5)


class _Launches:
    """Stands in for a kernel: records each launch's grid and launch keywords."""

    def __init__(self) -> None:
        self.seen: list[tuple[tuple[int, ...], dict]] = []

    def __getitem__(self, grid: tuple[int, ...]):
        return lambda *args, **meta: self.seen.append((grid, meta))


@pytest.mark.parametrize(
    ("tokens", "hidden", "bounds", "programs", "block"),
    [
        (1, 2048, (256, 1024), 8, 256),  # 2048 elements: 8 programs of 256, as compile launches them, not 2
        (64, 2048, (256, 1024), 128, 1024),  # 1/128 of the elements reaches the tuned block
        (512, 2048, (256, 1024), 1024, 1024),
        (1, 100, (256, 1024), 1, 256),
        (1, 2048, (256, 128), 16, 128),  # a tuned block under the rule's holds at every size
        (1, 2048, (1024, 1024), 2, 1024),  # and bounds tuned equal are one block everywhere
    ],
)
def test_a_pointwise_launch_picks_its_block_per_call_as_inductor_does(
    tmp_path, tokens, hidden, bounds, programs, block
):
    source = render_candidate(report(wrapper()), "fused", "fused")
    assert "K0_MIN_XBLOCK = 256" in source and "K0_XBLOCK = 1024" in source
    module = load(source, tmp_path / f"fused_block_{tokens}_{hidden}_{bounds[0]}_{bounds[1]}.py")
    module.K0_MIN_XBLOCK, module.K0_XBLOCK = bounds
    pointwise = module._poi_fused_add_0 = _Launches()
    module._red_fused_amax_mul_1 = _Launches()
    module.fused(torch.empty(tokens, hidden), torch.empty(tokens, hidden), 1.0)
    [(grid, meta)] = pointwise.seen
    assert grid == (programs,) and meta["XBLOCK"] == block and meta["num_warps"] == module.K0_NUM_WARPS


def test_the_per_call_block_rule_is_explained_once_for_every_launch_that_uses_it(tmp_path):
    lines = HOST.splitlines(keepends=True)
    twice = next(line for line in lines if "triton_poi_fused_add_0.run(" in line).lstrip()
    buf3 = "        buf3 = empty_strided_cuda((s0, s1), (s1, 1), torch.float32)\n"
    host = HOST.replace(twice, twice + buf3 + "        " + twice.replace("buf1,", "buf3,"), 1)
    source = render_candidate(report(wrapper(host)), "fused", "fused")
    assert source.count("# As Inductor does") == 1
    assert source.count("k0_xblock = min(K0_XBLOCK, max(K0_MIN_XBLOCK,") == 2  # each launch picks its own
    module = load(source, tmp_path / "fused_twice.py")
    pointwise = module._poi_fused_add_0 = _Launches()
    module._red_fused_amax_mul_1 = _Launches()
    module.fused(torch.empty(1, 2048), torch.empty(1, 2048), 1.0)
    assert [meta["XBLOCK"] for _, meta in pointwise.seen] == [256, 256]


def test_a_buffer_is_allocated_as_torch_empty_unless_its_strides_are_not_contiguous():
    """Inductor allocates every buffer with its strides; the host writes `torch.empty` where they are a
    contiguous tensor's (`max(1, ...)` around one too), and keeps them where they are not."""
    contiguous = "buf1 = empty_strided_cuda((s0, s1), (max(1, s1), 1), torch.float32)"
    transposed = "buf1 = empty_strided_cuda((s0, s1), (1, s0), torch.float32)"
    original = "buf1 = empty_strided_cuda((s0, s1), (s1, 1), torch.float32)"
    assert original in HOST
    source = render_candidate(report(wrapper(HOST.replace(original, contiguous))), "fused", "fused")
    assert "buf1 = torch.empty((x_size0, x_size1), dtype=torch.float32, device=device)" in source
    source = render_candidate(report(wrapper(HOST.replace(original, transposed))), "fused", "fused")
    assert "torch.empty_strided((x_size0, x_size1), (1, x_size0), dtype=torch.float32" in source


@pytest.mark.parametrize(
    ("size", "stride", "contiguous"),
    [
        ("(tokens, heads, head_dim)", "(head_dim * heads, head_dim, 1)", True),  # the rotary's buffers
        ("(tokens, x_size1 // 2)", "(max(1, x_size1 // 2), 1)", True),  # SiLU-and-mul's output
        ("(tokens, 1)", "(1, 1)", True),
        ("(tokens, heads, head_dim)", "(head_dim, head_dim * tokens, 1)", False),  # heads outermost
        ("(tokens, hidden)", "(hidden + 8, 1)", False),  # padded rows
        ("(tokens, x.shape[1])", "(x.shape[1], 1)", False),  # not a size it can evaluate: kept
    ],
)
def test_contiguous_strides_are_told_from_other_layouts(size: str, stride: str, contiguous: bool) -> None:
    from evolution.writers.inductor.host import _contiguous_strides

    parsed = (ast.parse(size, mode="eval").body, ast.parse(stride, mode="eval").body)
    assert _contiguous_strides(*parsed) is contiguous


def test_returning_an_argument_and_constants(tmp_path):
    outputs = {"tuple": [{"arg": "x"}, {"const": "None"}, {"list": [{"out": 1}]}]}
    source = render_candidate(report(wrapper(), outputs=outputs), "fused", "fused")
    assert "return (x, None, [buf1])" in source


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            "buf9 = torch.ops.aten.topk.default(buf1, 4, -1, True, True)",
            "falls back to ATen for aten.topk.default",
        ),
        ("buf9 = extern_kernels.mm(buf1, buf1)", "falls back to ATen for mm"),
        ("buf9 = alloc_from_pool(buf1, 0, torch.float32, (4,), (1,))", "calls alloc_from_pool"),
    ],
)
def test_aten_fallbacks_are_refused_with_the_op_named(call, message):
    host = HOST.replace("        del arg3_1\n", f"        {call}\n        del arg3_1\n")
    with pytest.raises(InductorConversionError, match=message):
        render_candidate(report(wrapper(host)), "fused", "fused")


def test_unsupported_kernel_kind_and_helper_are_refused():
    template = POINTWISE.replace("triton_heuristics.pointwise(", "triton_heuristics.template(")
    kernels = {"triton_poi_fused_add_0": template, "triton_red_fused_amax_mul_1": REDUCTION}
    with pytest.raises(InductorConversionError, match="'template' kernel"):
        render_candidate(report(wrapper(kernels=kernels)), "fused", "fused")
    odd = POINTWISE.replace("libdevice.tanh(tmp2)", "triton_helpers.randint64(tmp2, 0, 0, 1)")
    kernels = {"triton_poi_fused_add_0": odd, "triton_red_fused_amax_mul_1": REDUCTION}
    with pytest.raises(InductorConversionError, match=r"triton_helpers\.randint64"):
        render_candidate(report(wrapper(kernels=kernels)), "fused", "fused")


def test_cpp_kernels_are_refused():
    text = wrapper().replace("async_compile.triton('triton_poi", "async_compile.cpp_pybinding('triton_poi")
    with pytest.raises(InductorConversionError, match="'cpp_pybinding' kernel, not Triton"):
        render_candidate(report(text), "fused", "fused")


def test_error_report_becomes_the_conversion_error():
    with pytest.raises(InductorConversionError, match="graph break here"):
        render_candidate(CaptureReport(error="graph break here"), "fused", "fused")


# --- the Triton stand-ins for Inductor's helpers, checked against PyTorch on the interpreter ---------------

ELEMENTWISE = [
    (
        "div_floor_integer",
        "_div_floor_integer(a, b)",
        "int",
        lambda a, b: torch.div(a, b, rounding_mode="floor"),
    ),
    ("remainder_integer", "_remainder_integer(a, b)", "int", torch.remainder),
    ("maximum", "_maximum(a, b)", "nan", torch.maximum),
    ("minimum", "_minimum(a, b)", "nan", torch.minimum),
    ("tanh", "_tanh(a)", "float", lambda a, b: torch.tanh(a)),
    ("log1p", "_log1p(tl.abs(a))", "float", lambda a, b: torch.log1p(a.abs())),
    ("expm1", "_expm1(a)", "float", lambda a, b: torch.expm1(a)),
    ("nearbyint", "_nearbyint(a * 4.0)", "halves", lambda a, b: torch.round(a * 4.0)),
    ("trunc", "_trunc(a)", "float", lambda a, b: torch.trunc(a)),
    ("pow", "_pow(a, b)", "pow", torch.pow),
    ("fmod", "_fmod(a, b)", "float", torch.fmod),
    ("isnan", "_isnan(a).to(tl.float32)", "nan", lambda a, b: torch.isnan(a).float()),
    ("pow_integer", "_pow_integer(a, b)", "intpow", torch.pow),
]


def operands(kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    if kind == "int":
        a = torch.randint(-50, 50, (64,), generator=g, dtype=torch.int32)
        return a, torch.randint(1, 9, (64,), generator=g, dtype=torch.int32) * (
            torch.arange(64) % 2 * 2 - 1
        ).int()
    if kind == "intpow":
        return torch.randint(-4, 5, (64,), generator=g, dtype=torch.int32), torch.randint(
            0, 6, (64,), generator=g
        ).int()
    a, b = torch.randn(64, generator=g) * 3, torch.randn(64, generator=g) * 3
    if kind == "nan":
        a[::5] = float("nan")
        b[::7] = float("nan")
    if kind == "halves":
        a = torch.arange(-32, 32, dtype=torch.float32) / 8  # exact .5 ties after * 4
    if kind == "pow":
        b = torch.where(torch.arange(64) % 3 == 0, torch.round(b), b)  # integral exponents for negative bases
    return a, b


@pytest.mark.parametrize(("helper", "expr", "kind", "torch_fn"), ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_elementwise_helpers_match_pytorch(tmp_path, helper, expr, kind, torch_fn):
    source = "\n\n".join(
        [
            "import torch\nimport triton\nimport triton.language as tl",
            *helper_sources([helper]),
            f"@triton.jit\ndef _apply(a_ptr, b_ptr, out_ptr, BLOCK: tl.constexpr):\n"
            f"    offs = tl.arange(0, BLOCK)\n    a = tl.load(a_ptr + offs)\n    b = tl.load(b_ptr + offs)\n"
            f"    tl.store(out_ptr + offs, {expr})\n",
        ]
    )
    module = load(source, tmp_path / f"helper_{helper}.py")
    a, b = operands(kind)
    expected = torch_fn(a, b)
    out = torch.empty_like(expected)
    module._apply[(1,)](a, b, out, BLOCK=64)
    torch.testing.assert_close(out, expected, atol=2e-6, rtol=2e-5, equal_nan=True)


def test_argmax_helper_takes_the_lowest_index_on_ties_and_nan_first(tmp_path):
    source = "\n\n".join(
        [
            "import torch\nimport triton\nimport triton.language as tl",
            *helper_sources(["max_with_index"]),
            "@triton.jit\ndef _argmax(x_ptr, out_ptr, N: tl.constexpr):\n"
            "    rows = tl.arange(0, 4)[:, None]\n    cols = tl.arange(0, N)[None, :]\n"
            "    x = tl.load(x_ptr + rows * N + cols)\n"
            "    idx = tl.broadcast_to(cols, [4, N])\n"
            "    _, best = _max_with_index(x, idx, 1)\n"
            "    tl.store(out_ptr + tl.arange(0, 4), best)\n",
        ]
    )
    module = load(source, tmp_path / "argmax_helper.py")
    x = torch.tensor([[1.0, 3, 3, 2], [5, 1, 5, 0], [0, float("nan"), 7, float("nan")], [-1, -1, -1, -1]])
    out = torch.empty(4, dtype=torch.int32)
    module._argmax[(1,)](x, out, N=4)
    assert out.tolist() == x.argmax(dim=1).tolist() == [1, 0, 1, 0]


REDUCTIONS = [
    ("max2", "_max2(x, 1)", lambda x: x.amax(dim=1)),
    ("min2", "_min2(x, 1)", lambda x: x.amin(dim=1)),
    ("any", "_any(x > 1.5, 1).to(tl.float32)", lambda x: (x > 1.5).any(dim=1).float()),
    ("min_with_index", "_min_with_index(x, idx, 1)[1].to(tl.float32)", lambda x: x.argmin(dim=1).float()),
    (
        "welford",
        "_welford(x, tl.zeros_like(x), tl.full(x.shape, 1.0, tl.float32), 1)[1] / 16.0",
        lambda x: x.var(dim=1, unbiased=False),
    ),
]


@pytest.mark.parametrize(("helper", "expr", "torch_fn"), REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_helpers_match_pytorch_with_nans(tmp_path, helper, expr, torch_fn):
    source = "\n\n".join(
        [
            "import torch\nimport triton\nimport triton.language as tl",
            *helper_sources([helper]),
            "@triton.jit\ndef _reduce(x_ptr, out_ptr):\n"
            "    rows = tl.arange(0, 4)[:, None]\n    cols = tl.arange(0, 16)[None, :]\n"
            "    x = tl.load(x_ptr + rows * 16 + cols)\n"
            "    idx = tl.broadcast_to(cols, [4, 16])\n"
            f"    tl.store(out_ptr + tl.arange(0, 4), {expr})\n",
        ]
    )
    module = load(source, tmp_path / f"reduce_{helper}.py")
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    x[1, 3] = x[1, 9] = x[1].min() - 1  # a tie for argmin: the first index wins
    if helper != "welford":
        x[2, 5] = float("nan")
    out = torch.empty(4)
    module._reduce[(1,)](x, out)
    torch.testing.assert_close(out, torch_fn(x), atol=1e-5, rtol=1e-5, equal_nan=True)


TRANSPOSE = """
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

@triton_heuristics.pointwise(
    size_hints={'y': 64, 'x': 64},
    tile_hint=TileHint.SQUARE,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'ks0': 'i64', 'ks1': 'i64', 'ynumel': 'i32', 'xnumel': 'i32', 'YBLOCK': 'constexpr', 'XBLOCK': 'constexpr'}},
    inductor_meta={'grid_type': 'Grid2DWithYZOverflow', 'kernel_name': 'triton_poi_fused_clone_0'},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_clone_0(in_ptr0, out_ptr0, ks0, ks1, ynumel, xnumel, YBLOCK : tl.constexpr, XBLOCK : tl.constexpr):
    yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[:, None]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[None, :]
    xmask = xindex < xnumel
    x1 = xindex
    y0 = yindex
    tmp0 = tl.load(in_ptr0 + (y0 + ks0*x1), xmask & ymask)
    tl.store(out_ptr0 + (x1 + ks1*y0), tmp0, xmask & ymask)
"""  # noqa: E501
TRANSPOSE_HOST = """
def call(args):
    arg0_1, arg1_1, arg2_1 = args
    args.clear()
    s0 = arg0_1
    s1 = arg1_1
    buf0 = empty_strided_cpu((s1, s0), (s0, 1), torch.float32)
    raw_streamNone = get_raw_stream(None)
    triton_poi_fused_clone_0.run(arg2_1, buf0, s1, s0, s1, s0, stream=raw_streamNone)
    return (buf0, )
"""


def test_tiled_kernel_with_the_y_overflow_grid(tmp_path):
    capture = Capture(
        variant="float32",
        case="c",
        wrapper=wrapper(TRANSPOSE_HOST, {"triton_poi_fused_clone_0": TRANSPOSE}),
        inputs=(
            GraphInput("symint", "x.shape[0]"),
            GraphInput("symint", "x.shape[1]"),
            GraphInput("tensor", "x"),
        ),
        outputs={"out": 0},
        dtypes={"x": "float32"},
    )
    rep = CaptureReport(captures=(capture,), signature="def transpose(x):", torch_version="2.x", device="cpu")
    source = render_candidate(rep, "transpose", "transpose")
    assert "k0_y_split = triton.cdiv(k0_y_blocks, 65535)" in source
    y_axis = "triton.cdiv(k0_y_blocks, max(k0_y_split, 1))"
    assert f"k0_grid = (triton.cdiv(x_size0, K0_XBLOCK), {y_axis}, k0_y_split)" in source
    x = torch.randn(50, 70)
    torch.testing.assert_close(
        load(source, tmp_path / "transpose_candidate.py").transpose(x), x.t().contiguous()
    )
