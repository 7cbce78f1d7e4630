"""The fusion generator's output reads like an engine's own kernel (docs/fusion.md, "Readable output"): one
test per rule on the checker (tests/evolution/fusion/readable.py) so that each can fail, the writer's pieces
that make it so (names, line wrapping, crossover sharing), and generated candidates that follow every rule
and stay correct. The example tasks and the fresh engine tasks are checked where their seeds are judged
(test_examples.py, test_fusion_fresh_tasks.py)."""

from __future__ import annotations

import ast
import re

import pytest
from fusion_tasks import check, trace, write, write_task
from readable import duplicate_kernels, jit_functions, numbered_names, problems

from bench.shipped_module import gpu_launches
from evaluators.candidate import find_evolve_block, replace_evolve_block
from evolution.mutators.crossover.routes import flat_routes
from evolution.mutators.crossover.source import Route, build_child
from evolution.writers.fusion.code_text import wrap_long_lines
from evolution.writers.fusion.generate import generate
from evolution.writers.fusion.knobs import Knobs
from evolution.writers.fusion.naming import Hints, apply, rename_map
from evolution.writers.fusion.unit_scale import unit_scales_folded

KERNEL = """@triton.jit
def _k(x_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    a0_1 = tl.arange(0, N)
    a0_mask2 = a0_1 < N
    x_3 = tl.load(x_ptr + pid * N + a0_1, mask=a0_mask2, other=0)
    v4 = x_3.to(tl.float32)
    v5 = v4 * v4
    v6 = tl.sum(v5, axis=0)
    v7 = tl.rsqrt(v6)
    tl.store(out_ptr + pid * N + a0_1, v4 * v7, mask=a0_mask2)"""


def test_the_checker_finds_each_rule_broken() -> None:
    assert numbered_names(KERNEL) == ["a0_1", "v4", "v5", "v6", "v7"]
    twin = KERNEL.replace("def _k(", "def _k_b(").replace("v4", "y").replace("x_3", "xb")
    assert duplicate_kernels(f"{KERNEL}\n\n\n{twin}\n") == [("_k", "_k_b")]
    other = twin.replace("tl.rsqrt", "tl.sqrt")
    assert duplicate_kernels(f"{KERNEL}\n\n\n{other}\n") == []
    assert any("interpreter" in p for p in problems("EMULATE = not torch.cuda.is_available()\n"))
    assert any("over 10 characters" in p for p in problems("x = 12345678901\n", limit=10))
    assert any("lines (at most 3)" in p for p in problems("a = 1\n" * 4, max_lines=3))
    inductor = "_poi_fused_add_0[grid](in_ptr0, buf3, tmp0, x0)\n"
    assert [p for p in problems(inductor) if "Inductor" in p] == [
        "Inductor's names: _poi_fused_add_0, buf3, in_ptr0"
    ]
    commented = "XBLOCK = 1024  # _poi_fused_mul_silu_slice_0: XBLOCK\n"
    assert "Inductor's names: _poi_fused_mul_silu_slice_0" in problems(commented)


def test_values_are_named_after_what_they_hold() -> None:
    hints = Hints()
    hints.add("x_3", "x", 3)
    hints.add("a0_1", "offs_a0", 2)
    hints.add("a0_mask2", "a0_mask", 2)
    hints.add("v6", "variance", 3)
    renamed = apply(KERNEL, rename_map(KERNEL, hints, {"a0": "col"}))
    assert numbered_names(renamed) == []
    expected = ("offs_col = tl.arange", "col_mask = offs_col < N", "x = tl.load", "x_f32 = x.to(tl.float32)")
    for text in expected:
        assert text in renamed, text
    assert "variance = tl.sum(" in renamed and "rsqrt_variance = tl.rsqrt(variance)" in renamed


MASKS = """@triton.jit
def _k(q_ptr, k_ptr, R, N: tl.constexpr):
    pid = tl.program_id(0)
    a0_1 = tl.arange(0, N)
    v2 = (pid < R) & (a0_1 < N)
    v3 = (a0_1 >= 2) & (a0_1 < N)
    v4 = v2 & v3
    q_5 = tl.load(q_ptr + pid * N + a0_1, mask=v2, other=0)
    q_6 = tl.load(q_ptr + pid * N + a0_1 - 2, mask=v4, other=0)
    k_7 = tl.load(k_ptr + pid * N + a0_1, mask=v2, other=0)
    tl.store(k_ptr + pid * N + a0_1, k_7 + q_5 + tl.where(v3, q_6, 0.0), mask=v2)"""


TWO_LOOPS = """@triton.jit
def _k(x_ptr, out_ptr, N: tl.constexpr, B: tl.constexpr):
    pid_a0 = tl.program_id(0)
    # Two passes: the whole row's sum first, as the next loop needs it
    v1 = tl.zeros([B], tl.float32)
    for c2 in range(0, N, B):
        x_3 = tl.load(x_ptr + pid_a0 * N + c2 + tl.arange(0, B))
        v4 = x_3.to(tl.float32)
        v1 = v1 + v4 * v4
    v5 = tl.rsqrt(tl.sum(v1, axis=0))
    for c6 in range(0, N, B):
        x_7 = tl.load(x_ptr + pid_a0 * N + c6 + tl.arange(0, B))
        v8 = x_7.to(tl.float32)
        v9 = v8 * v5
        tl.store(out_ptr + pid_a0 * N + c6 + tl.arange(0, B), v9)"""


def test_a_second_loop_rebinds_its_own_copy_of_a_name() -> None:
    """The second pass's `x` is `x_2` (the first pass's is bound in another loop); its new states rebind
    `x_2` as the first pass's rebind `x`. A comment's words (`row`) take no name."""
    hints = Hints()
    for name in ("x_3", "v4", "x_7", "v8", "v9"):
        hints.add(name, "x", 3)
    renamed = apply(TWO_LOOPS, rename_map(TWO_LOOPS, hints, {"a0": "row"}))
    assert "    row = tl.program_id(0)\n" in renamed
    assert "        x = x.to(tl.float32)\n" in renamed
    assert "        x_2 = x_2.to(tl.float32)\n        x_2 = x_2 * " in renamed
    assert numbered_names(renamed) == []


def test_a_combined_mask_is_named_for_the_access_it_guards() -> None:
    """`mask=v2` of a load of `q` first: `q_mask`; another load's own mask `q_mask_2`; a mask no access
    takes keeps the generic name."""
    renamed = apply(MASKS, rename_map(MASKS, Hints(), {"a0": "col"}))
    assert "tl.load(q_ptr + pid * N + offs, mask=q_mask, other=0)" in renamed
    assert "    q_mask_2 = q_mask & mask\n" in renamed and "offs - 2, mask=q_mask_2, other=0)" in renamed
    assert "    mask = (offs >= 2) & (offs < N)\n" in renamed  # `mask=` is a keyword, not a name taken
    assert numbered_names(renamed) == []


REBINDING = """@triton.jit
def _k(x_ptr, r_ptr, out_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    a0_1 = tl.arange(0, N)
    x_3 = tl.load(x_ptr + pid * N + a0_1)
    v4 = x_3.to(tl.float32)
    r_5 = tl.load(r_ptr + pid * N + a0_1)
    v6 = v4 + r_5.to(tl.float32)
    v7 = v6 * v6
    v8 = tl.load(x_ptr + pid * N + N + a0_1)
    v9 = v7 * v8
    tl.store(out_ptr + pid * N + a0_1, v9 + v7)"""


def test_a_value_that_replaces_another_takes_its_name() -> None:
    """`x = x.to(tl.float32)`, `x = x + residual` as the reference writes them; a second load of the same
    tensor (another slice of it) and a value the reference named alike while the old one is still read keep
    their own names."""
    hints = Hints()
    for name in ("x_3", "v4", "v6", "v8"):
        hints.add(name, "x", 3)
    hints.add("v9", "v7", 3)  # named as v7 is, and v7 is read after it
    hints.add("v7", "v7", 3)
    renamed = apply(REBINDING, rename_map(REBINDING, hints, {"a0": "col"}))
    assert "    x = tl.load(x_ptr" in renamed
    assert "    x = x.to(tl.float32)\n" in renamed
    assert "    x = x + loaded.to(tl.float32)\n" in renamed
    assert "    x_2 = tl.load(x_ptr" in renamed  # a fresh load is not the old x again
    assert "    v7_2 = v7 * x_2\n" in renamed and "v7_2 + v7" in renamed  # v7 still read: a name of its own


TWO_TOPKS = """@triton.jit
def _k(x_ptr, out_ptr, N: tl.constexpr, G: tl.constexpr, K: tl.constexpr):
    a0_1 = tl.arange(0, N)
    v2 = tl.load(x_ptr + a0_1)
    _, topk3_i = _topk_rows(v2[None, :], G)
    v4 = tl.reshape(topk3_i, [G])
    v5 = tl.where(v4 == 0, v2, 0.0)
    _, topk6_i = _topk_rows(v5[None, :], K)
    v7 = tl.reshape(topk6_i, [K])
    _, topk8_i = _topk_rows(v5[None, :], K)
    v9 = tl.reshape(topk8_i, [K]) + topk8_i.shape[0]
    tl.store(out_ptr + tl.arange(0, K), v7 + v9)"""


def test_a_value_moved_into_a_named_one_takes_its_name() -> None:
    """The ids of an unpacked top-k, read only by the reshape the reference named (`best_groups`), are
    `best_groups` already, so the reference's own `topk_ids` needs no number; ids read again keep theirs."""
    hints = Hints()
    for name in ("topk3_i", "topk6_i", "topk8_i"):
        hints.add(name, "topk_ids", 2)
    hints.add("v4", "best_groups", 3)
    hints.add("v7", "topk_ids", 3)
    hints.add("v9", "shifted_ids", 3)
    renamed = apply(TWO_TOPKS, rename_map(TWO_TOPKS, hints, {"a0": "col"}))
    assert "    _, best_groups = _topk_rows(" in renamed
    assert "    best_groups = tl.reshape(best_groups, [G])\n" in renamed
    assert "    _, topk_ids = _topk_rows(" in renamed
    assert "    topk_ids = tl.reshape(topk_ids, [K])\n" in renamed
    assert "    _, topk_ids_2 = _topk_rows(" in renamed  # read twice: not moved, a name of its own
    assert numbered_names(renamed) == []
    # A reshape the reference did not name is its source again, not `topk_ids_reshaped`.
    del hints.by_name["v7"]
    renamed = apply(TWO_TOPKS, rename_map(TWO_TOPKS, hints, {"a0": "col"}))
    assert "    topk_ids = tl.reshape(topk_ids, [K])\n" in renamed and "reshaped" not in renamed


def test_long_statements_are_broken_at_their_brackets() -> None:
    source = 'def f(alpha, beta, gamma, delta):\n    return g(alpha, beta, "a, (b", delta)\n'
    wrapped = wrap_long_lines(source, 30)
    compile(wrapped, "<wrapped>", "exec")
    assert max(len(line) for line in wrapped.splitlines()) <= 30
    assert '        "a, (b",' in wrapped  # a string's commas and brackets stay inside it
    # A line of parameters inside the bracket its `def` opened (a merge added one below it): one a line.
    signature = "def k(\n    alpha_ptr, beta_ptr, gamma_ptr, N: tl.constexpr,\n    EXTRA: tl.constexpr\n):\n"
    wrapped = wrap_long_lines(signature, 30)
    assert "(\n    alpha_ptr,\n    beta_ptr,\n    gamma_ptr,\n    N: tl.constexpr,\n    EXTRA: tl" in wrapped
    tuple_statement = "values = alpha_value, beta_value, gamma_value,\n"  # a statement, not a continuation
    assert wrap_long_lines(tuple_statement, 30) == tuple_statement
    # A sum whose last term is subscripted: broken after that bracket, the head would still be too long;
    # the value goes in parentheses, one term a line where it does not fit on one (as ruff writes it).
    offsets = "    q_offs = row * Q_ROW + offs_head[:, None] * HEAD_DIM + offs_dim[None, :]\n"
    assert wrap_long_lines(offsets, 60) == (
        "    q_offs = (\n        row * Q_ROW\n        + offs_head[:, None] * HEAD_DIM\n"
        "        + offs_dim[None, :]\n    )\n"
    )
    assert wrap_long_lines(offsets, 72) == (
        "    q_offs = (\n        row * Q_ROW + offs_head[:, None] * HEAD_DIM + offs_dim[None, :]\n    )\n"
    )
    # A line an earlier layout left open at a bracket is not a statement of its own: it stays as it is.
    opened = "    q_offs = row * Q_ROW + offs_head[:, None] * HEAD_DIM + offs_dim[\n        None, :\n    ]\n"
    assert wrap_long_lines(opened, 60) == opened
    # A constant long for its comment alone keeps its line: in parentheses with it, the comment would read
    # as part of the value.
    noted = "K0_NUM_STAGES_small = 1  # _red_fused_add_mean_0: software-pipelining stages of its loop\n"
    assert wrap_long_lines(noted, 60) == noted


RMS_REFERENCE = """
import torch

EPS = 1e-6


def add_rmsnorm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = EPS):
    x = x + residual
    residual = x
    variance = x.float().pow(2).mean(dim=-1, keepdim=True)
    x = x.float() * torch.rsqrt(variance + eps)
    return (x * weight.float()).to(residual.dtype), residual
"""
RMS_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    dtype = getattr(torch, case["dtype"])
    t, h = case["tokens"], case["hidden"]
    x = torch.randn(t, h, generator=g).to(dtype).to(device)
    residual = torch.randn(t, h, generator=g).to(dtype).to(device)
    weight = (1 + 0.1 * torch.randn(h, generator=g)).to(dtype).to(device)
    return (x, residual, weight), {}
"""


@pytest.fixture(scope="module")
def rms_task(tmp_path_factory: pytest.TempPathFactory):
    root = write_task(
        tmp_path_factory.mktemp("readable") / "add_rmsnorm",
        "add_rmsnorm",
        RMS_REFERENCE,
        RMS_INPUTS,
        [
            {"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16"},
            {"name": "t2_fp32", "tokens": 2, "hidden": 40, "dtype": "float32"},
        ],
    )
    return root, trace(root)


@pytest.mark.slow  # one trace (Dynamo, seconds) and the candidates run on the interpreter
def test_a_generated_norm_follows_every_rule_and_stays_correct(rms_task) -> None:
    root, report = rms_task
    source = write(root, report).source
    assert problems(source) == []
    for name in ("x_ptr", "residual_ptr", "weight_ptr", "variance", "_add_rmsnorm_bf16_kernel"):
        assert name in source, name
    assert "_stride" not in source  # row-major inputs: strides follow from the sizes the kernel has
    assert "* 1.0" not in source  # the mean divides by the row's size as it is
    assert "fusion-knobs: {}" in source  # default knobs: nothing to record
    assert check(root, source) > 0


def flattened(child: str, entry: str) -> str:
    """A crossover child with its size routing flattened (evolution.mutators.crossover.routes)."""
    block = find_evolve_block(child)
    assert block is not None
    flat_block = flat_routes(block.text, entry)
    assert flat_block is not None
    return replace_evolve_block(child, flat_block)


@pytest.mark.slow
def test_a_crossover_of_two_variants_ships_one_kernel_body(rms_task) -> None:
    root, report = rms_task
    a = write(root, report, Knobs()).source
    b = write(root, report, Knobs(warps=2.0)).source  # the same kernels, another launch
    child = build_child(a, b, "add_rmsnorm", Route(4096, True, "B was faster on small inputs."))
    assert duplicate_kernels(child) == [] and problems(child) == []
    assert not re.search(r"\w_(b|small|large)\d*\b", child)  # one copy of the code, no suffixed twin
    # A launch table: the small side launches with B's constant, the other with the module's.
    assert "WARPS_SCALE = 1.0" in child and ", WARPS_SCALE=2.0)" in child
    assert check(root, child) > 0


@pytest.mark.slow
def test_a_crossover_of_crossovers_ships_each_kernel_once(rms_task) -> None:
    """As a search's winner can be: a crossover of two launches of one kernel, crossed with a crossover of
    that kernel and another whose side no input reaches any more. The flat block holds the kernel once, at a
    launch per interval, and computes what the nested one does."""
    root, report = rms_task
    one, half = write(root, report, Knobs()).source, write(root, report, Knobs(warps=0.5)).source
    other = write(root, report, Knobs(warps=2.0, passes="two", block=32)).source
    table = build_child(half, one, "add_rmsnorm", Route(1000, True, ""))
    unreached = build_child(other, one, "add_rmsnorm", Route(100_000, True, ""))  # other: above 100 kB
    child = build_child(unreached, table, "add_rmsnorm", Route(1200, False, ""))
    assert duplicate_kernels(child) != [] and child.count("element_size()") == 3
    flat = flattened(child, "add_rmsnorm")
    assert duplicate_kernels(flat) == [] and problems(flat) == [] and flat.count("element_size()") == 1
    assert len(jit_functions(flat)) == len(jit_functions(one)) and "warps_scale = 0.5" in flat
    assert check(root, flat) > 0


def test_one_pass_and_two_passes_crossed_ship_as_one_entry(rms_task) -> None:
    """A winner's usual shape: one pass for small inputs, two passes in chunks above. Flat, the candidates'
    entries are one, the size test around what differs; the module computes what the crossover does
    (interpreter)."""
    root, report = rms_task
    one = write(root, report, Knobs()).source
    two = write(root, report, Knobs(passes="two", block=32, eviction=True)).source
    child = build_child(one, two, "add_rmsnorm", Route(1000, False, ""))
    flat = flattened(child, "add_rmsnorm")
    # The two candidates' entries (each picks its kernel by dtype) are gone: the flat entry tests the size,
    # then, on each side, the dtype, as they did.
    assert "def _add_rmsnorm_small(" not in flat and "def _add_rmsnorm_large(" not in flat
    assert flat.count("element_size()") == 1 and len(jit_functions(flat)) == 2 * len(jit_functions(one))
    size_test = re.search(r"^    if nbytes <= 1000:\n(        .*\n)+    else:\n(        .*\n)+", flat, re.M)
    assert size_test is not None and "_add_rmsnorm_bf16_large(" in size_test.group(0)
    # Each kernel says what sets it apart from the other side's, as its code shows it.
    notes = {
        f.name: " ".join((ast.get_docstring(f) or "").split())
        for f in jit_functions(flat)
        if not f.name.startswith("_kb_")
    }
    assert len(notes) == 4
    for name, note in notes.items():
        if name.endswith("_large"):  # two passes, with the hints that keep the first pass's loads in L2
            assert note.startswith("Walks each row twice in chunks") and "evict_first" in note, name
        else:
            assert (
                note == "Holds each row whole in registers: one read of it. Its loads carry no cache hints."
            )
    # Every rule but the module's length: this task's kernels are written once per dtype, four in all.
    assert problems(flat, max_lines=len(flat.splitlines())) == []
    assert check(root, flat) > 0


@pytest.mark.slow  # the candidates run on the interpreter
def test_a_launch_table_on_one_side_still_ships_one_entry(rms_task) -> None:
    """One pass at half the warps up to 300 bytes and at the usual warps to 1000, two passes above (the H200
    SGLang RMSNorm winner of 2026-12-05 had this shape): one entry still, the one-pass branch setting its
    warps scale by size (one test: a conditional expression), and no host per code; the module computes what
    the crossover does."""
    root, report = rms_task
    one, half = write(root, report, Knobs()).source, write(root, report, Knobs(warps=0.5)).source
    two = write(root, report, Knobs(passes="two", block=32, eviction=True)).source
    table = build_child(one, half, "add_rmsnorm", Route(300, True, ""))
    child = build_child(table, two, "add_rmsnorm", Route(1000, False, ""))
    flat = flattened(child, "add_rmsnorm")
    assert not re.search(r"^def _add_rmsnorm_(small|large|launch)\(", flat, re.M)
    branch = re.search(r"^    if nbytes <= 1000:\n((?:        .*\n)+)    else:\n", flat, re.M)
    assert branch is not None and re.search(
        r"^        warps_scale = 0\.5 if nbytes <= 300 else \w+\n", branch.group(1), re.M
    )
    # The warps helper both codes size their launch with is one, the scale passed in.
    assert re.findall(r"^def _num_warps\w*\(.*", flat, re.M) == ["def _num_warps(elements, warps_scale):"]
    assert problems(flat, max_lines=len(flat.splitlines())) == []
    assert check(root, flat) > 0


def test_a_name_crossed_twice_says_once_when_it_runs(rms_task) -> None:
    """A crossover child crossed again suffixes its parent's `_large` names anew (`BLOCK_large_large2`);
    flat, each name carries one suffix, for the interval its code runs on."""
    root, report = rms_task
    one, half = write(root, report, Knobs()).source, write(root, report, Knobs(warps=0.5)).source
    two = write(root, report, Knobs(passes="two", block=32, eviction=True)).source
    inner = build_child(one, two, "add_rmsnorm", Route(1000, False, ""))
    child = build_child(half, inner, "add_rmsnorm", Route(300, False, ""))
    assert re.search(r"^def \w+_large_large2\(", child, re.M)
    flat = flattened(child, "add_rmsnorm")
    assert re.findall(r"\w*_(?:small|large)\d*_(?:small|large)\w*", flat) == []
    assert re.search(r"^def \w+_kernel\w*_large\(", flat, re.M) and "BLOCK_large = " in flat
    assert check(root, flat, seeds=(0,)) > 0


def test_a_block_of_rows_is_named_as_one(rms_task) -> None:
    """With ROWS rows a program, the program's index is a block's (`pid`; `block` beside a persistent loop's
    `pid`) and its rows are `rows`, not a `row` that is a block; the sum the reference names again by
    `residual = x` is bound as `residual` before `x` is rebound, in a persistent loop's body too."""
    root, report = rms_task
    rows = write(root, report, Knobs(rows=2)).source
    assert "    pid = tl.program_id(0)\n    rows = pid * ROWS + tl.arange(0, ROWS)\n" in rows
    persistent = write(root, report, Knobs(rows=2, persistent=4)).source
    assert "        block = pid % GRID_ROW\n        rows = block * ROWS + tl.arange(0, ROWS)\n" in persistent
    for source in (rows, persistent):
        assert "pid_" not in source and "x_2" not in source
        assert re.search(r"residual = x\.to\(.*\n\s+x = x \* tl\.rsqrt", source)


def test_a_second_pass_reads_like_the_first(rms_task) -> None:
    """A two-pass norm's second loop takes the names the first loop held alone (`x`, `residual`,
    `offs_col`, `col_start`, not `x_2`), and a value each round binds before reading it is held narrow
    there (`residual = x.to(...)`, stored as it is); the kernel stays correct."""
    from evolution.writers.fusion.naming import names_freed_by_loops

    root, report = rms_task
    source = write(root, report, Knobs(passes="two", block=32)).source
    kernel = source[source.index("@triton.jit") : source.index("def _num_warps")]
    loops = re.findall(r"^    for col_start in range\(", kernel, re.M)
    assert len(loops) == 2 * kernel.count("@triton.jit") > 0, kernel  # a bfloat16 and a float32 kernel
    assert not re.search(r"\b\w+_2\b", kernel), kernel
    assert re.search(r"^        residual = x\.to\(\S+\)$", kernel, re.M), kernel
    check(root, source, seeds=(0,))
    # A name read after its loop, or bound before it, stays taken.
    loops = [
        "def _k(a_ptr):",
        "    for i in range(2):",
        "        x = i",
        "    y = x",
        "    for j in range(2):",
    ]
    read_after = "\n".join([*loops, "        x_2 = j", ""])
    assert names_freed_by_loops(read_after) == read_after
    freed = read_after.replace("    y = x\n", "")
    assert "        x = j\n" in names_freed_by_loops(freed)


def test_the_launch_reads_like_the_kernel(rms_task) -> None:
    """Each launch passes the kernel's parameters in the order its signature declares them, and sizes its
    warps by the tiles no other tile holds all the extents of (`ROWS * N` covers `N`)."""
    from evolution.writers.fusion.kernel import _within_another

    root, report = rms_task
    for knobs in (Knobs(), Knobs(rows=2), Knobs(passes="two", block=32)):
        tree = ast.parse(write(root, report, knobs).source)
        kernels = {f.name: [a.arg for a in f.args.args] for f in jit_functions_of(tree)}
        launches = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Subscript)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in kernels
        ]
        assert launches, knobs
        for call in launches:
            passed = [k.arg for k in call.keywords if k.arg != "num_warps"]
            assert passed == kernels[call.func.value.id], knobs
    tiles = {("ROWS", "N_P2"), ("N_P2",), ("ROWS", "G_P2", "S_P2"), ("ROWS", "ROWS")}
    assert [t for t in sorted(tiles) if not _within_another(t, tiles)] == [
        ("ROWS", "G_P2", "S_P2"),
        ("ROWS", "N_P2"),
        ("ROWS", "ROWS"),
    ]


def jit_functions_of(tree: ast.Module) -> list[ast.FunctionDef]:
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def test_int64_and_int32_offsets_crossed_ship_as_one_kernel(rms_task) -> None:
    """Kernels that differ only in the width of their program index (the index32 knob) are one kernel taking
    INT64_OFFSETS, the index widened under it; each launch passes its kernel's width. Correct on the
    interpreter on both sides of the size test."""
    root, report = rms_task
    wide = write(root, report, Knobs(index32=False)).source
    narrow = write(root, report, Knobs()).source
    assert re.search(r"= tl\.program_id\(0\)\.to\(tl\.int64\)$", wide, re.M)
    child = build_child(narrow, wide, "add_rmsnorm", Route(500, True, ""))  # int64 up to 500 bytes
    flat = flattened(child, "add_rmsnorm")
    assert duplicate_kernels(flat) == [] and len(jit_functions(flat)) == len(jit_functions(narrow))
    assert flat.count("INT64_OFFSETS: tl.constexpr") == len(jit_functions(narrow))
    assert re.search(
        r"^    (\w+) = tl\.program_id\(0\)\n    if INT64_OFFSETS:\n        \1 = \1\.to\(tl\.int64\)$",
        flat,
        re.M,
    )
    assert "INT64_OFFSETS=True" in flat and "INT64_OFFSETS=False" in flat
    assert problems(flat, max_lines=len(flat.splitlines())) == []
    assert check(root, flat, seeds=(0,)) > 0


def test_int64_offsets_widen_a_programs_rows_where_they_are_bound(rms_task) -> None:
    """At two rows a program without index32 the rows are widened once, where they are bound (rows times the
    row length pass int32 beyond 2**31 elements), and crossed with the int32 kernel the two are one kernel
    taking INT64_OFFSETS. Correct on the interpreter on both sides of the size test."""
    root, report = rms_task
    wide = write(root, report, Knobs(rows=2, index32=False)).source
    narrow = write(root, report, Knobs(rows=2)).source
    assert re.search(r"^    rows = \(pid \* ROWS \+ tl\.arange\(0, ROWS\)\)\.to\(tl\.int64\)$", wide, re.M)
    assert "tl.int64" not in narrow and "rows.to(tl.int64)" not in wide
    flat = flattened(build_child(narrow, wide, "add_rmsnorm", Route(500, True, "")), "add_rmsnorm")
    assert duplicate_kernels(flat) == [] and len(jit_functions(flat)) == len(jit_functions(narrow))
    bound = r"^    rows = pid \* ROWS \+ tl\.arange\(0, ROWS\)\n"
    assert re.search(bound + r"    if INT64_OFFSETS:\n        rows = rows\.to\(tl\.int64\)$", flat, re.M)
    assert check(root, flat, seeds=(0,)) > 0


TOPK_REFERENCE = """
    import torch


    def route(logits: torch.Tensor):
        weights = torch.softmax(logits.float(), dim=-1)
        values, ids = torch.topk(weights, k=2, dim=-1)
        return values, ids
"""
TOPK_INPUTS = """
    import torch


    def make_inputs(case, seed, device):
        gen = torch.Generator().manual_seed(seed)
        return (torch.randn(case["tokens"], 8, generator=gen).to(device),), {}
"""


def test_two_top_k_methods_crossed_ship_as_one_kernel(tmp_path) -> None:
    """A crossover of two candidates that differ only in their top-k method (bitonic sorts for small
    inputs, two-pass rounds above) is one kernel taking TOPK_METHOD, and its block calls one function
    holding both blocks, each under its method; the entry picks the method by size and launches once.
    Correct on the interpreter on both sides, and each side compiles (sm_90) to its own candidate's PTX."""
    cases = [{"name": "t1", "tokens": 1}, {"name": "t4", "tokens": 4}]
    root = write_task(tmp_path / "route", "route", TOPK_REFERENCE, TOPK_INPUTS, cases)
    report = trace(root)
    bitonic = write(root, report, Knobs(topk="bitonic")).source
    twopass = write(root, report, Knobs(topk="twopass")).source
    child = build_child(twopass, bitonic, "route", Route(100, True, ""))  # bitonic up to 100 bytes
    assert len(duplicate_kernels(child)) == 1
    flat = flattened(child, "route")
    assert duplicate_kernels(flat) == [] and problems(flat) == []
    kernels = [k for f in jit_functions(flat) if "TOPK_METHOD: tl.constexpr" in (k := ast.unparse(f))]
    assert len(kernels) == 1 and len(re.findall(r"_kernel\[", flat)) == 1
    assert re.search(r'^    if METHOD == "(bitonic|twopass)":$', flat, re.M)
    assert re.search(r"^        # (bitonic|twopass): ", flat, re.M)
    assert re.search(r"= _kb_topk_rows_by_method\(\s*weights,[^=]*, 2, 2, TOPK_METHOD\s*\)", flat)
    assert '    topk_method = "bitonic" if nbytes <= 100 else "twopass"\n' in flat
    assert "def _kb_topk_rows_bitonic(" not in flat and "def _kb_topk_rows_twopass(" not in flat
    assert not re.search(r"\b\w+_(small|large)\b", flat)
    assert check(root, flat, seeds=(0,)) > 0  # tokens 1 (32 bytes, bitonic), 4 and 6 (two passes)
    files = {"flat": flat, "bitonic": bitonic, "twopass": twopass}
    for name, text in files.items():
        (tmp_path / f"{name}.py").write_text(text)
    jobs = [(root, tmp_path / f"{name}.py", "route") for name in files]
    for case, method in ((0, "bitonic"), (1, "twopass")):
        merged, bitonic_ptx, twopass_ptx = gpu_launches(jobs, case)
        assert [c["ptx"] for c in merged] == [c["ptx"] for c in (bitonic_ptx, twopass_ptx)[case]], method


@pytest.mark.slow  # one trace (Dynamo, seconds) and the candidate on the interpreter
def test_a_piece_at_the_start_of_an_axis_is_tested_at_its_end_only(tmp_path) -> None:
    """A rotate-half's pieces: the one that starts at 0 needs no `position >= 0` test (the lanes count up
    from 0); the other keeps both ends, and the two halves are named for what they test."""
    reference = (
        "import torch\n\n\ndef rotate_half(x):\n    d = x.shape[-1] // 2\n"
        "    return torch.cat((-x[..., d:], x[..., :d]), dim=-1)\n"
    )
    inputs = """
    import torch


    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(case["tokens"], 64, generator=g).to(device),), {}
    """
    root = write_task(
        tmp_path / "rotate_half", "rotate_half", reference, inputs, [{"name": "t3", "tokens": 3}]
    )
    source = write(root, trace(root)).source
    assert ">= 0)" not in source and re.search(r">= \w+\) & \(\w+ < ", source), source
    assert check(root, source) > 0


@pytest.mark.slow  # one trace (Dynamo, seconds) and the candidate on the interpreter
def test_a_strided_input_keeps_its_strides_and_a_contiguous_one_takes_none(tmp_path) -> None:
    reference = "def scaled_sum(x, y):\n    return x * 2.0 + y\n"
    inputs = """
    import torch


    def make_inputs(case, seed, device):
        g = torch.Generator().manual_seed(seed)
        t, h = case["tokens"], case["hidden"]
        x = torch.randn(h, t, generator=g).to(device).t()  # a transposed view: column-major
        return (x, torch.randn(t, h, generator=g).to(device)), {}
    """
    root = write_task(
        tmp_path / "scaled_sum", "scaled_sum", reference, inputs, [{"name": "t3", "tokens": 3, "hidden": 40}]
    )
    source = write(root, trace(root)).source
    assert "x_stride0" in source and "x_stride1" in source and "y_stride" not in source
    assert check(root, source) > 0


def test_specialisations_differing_in_layout_are_told_apart() -> None:
    from evolution.writers.fusion.dispatch import predicates
    from evolution.writers.fusion.model import Graph, Placeholder, TensorMeta

    def graph(contiguous: bool) -> Graph:
        x = Placeholder("arg0_1", "tensor", "x", TensorMeta(("s0", "s1"), "float32", contiguous))
        kinds = {"x": "tensor:float32"}
        return Graph(
            cases=(), placeholders=(x,), nodes=(), outputs=(), mutations=(), result={}, arg_kinds=kinds
        )

    assert predicates([graph(True), graph(False)]) == [
        ([], ["x.is_contiguous()"]),
        ([], ["not x.is_contiguous()"]),
    ]


def test_trace_labels_name_the_last_node_of_an_assignment(tmp_path) -> None:
    from types import SimpleNamespace

    from evolution.writers.fusion.trace.labels import source_labels

    path = tmp_path / "reference.py"
    lines = ["def f(x):", "    scores = (", "        x.sigmoid()", "        + 1", "    )"]
    lines.append("    return scores * 2")
    path.write_text("\n".join(lines) + "\n")

    def node(name: str, line: int) -> SimpleNamespace:
        trace = f'  File "{path}", line {line}, in f\n    ...\n'
        return SimpleNamespace(name=name, meta={"stack_trace": trace})

    nodes = [node("sigmoid", 3), node("add", 4), node("mul", 6), SimpleNamespace(name="decomposed", meta={})]
    assert source_labels(nodes) == {"add": "scores"}  # `return` assigns no name


def test_an_in_place_method_names_the_value_it_writes(tmp_path) -> None:
    """`q_embed.mul_(cos)` and `q_embed.add_(q_sin)` as LMDeploy's rotary writes them: each result is the
    next `q_embed`, not the write back into the input that functionalization adds after the add."""
    from types import SimpleNamespace

    from evolution.writers.fusion.trace.labels import source_labels

    path = tmp_path / "reference.py"
    lines = ["def f(query, cos, q_sin):", "    q_embed = query", "    q_embed.mul_(cos)"]
    lines += ["    q_embed.add_(q_sin)", "    return q_embed"]
    path.write_text("\n".join(lines) + "\n")

    def node(name: str, line: int, target: str) -> SimpleNamespace:
        trace = f'  File "{path}", line {line}, in f\n    ...\n'
        return SimpleNamespace(name=name, target=target, meta={"stack_trace": trace})

    nodes = [node("mul", 3, "aten.mul.Tensor"), node("add", 4, "aten.add.Tensor")]
    nodes.append(node("copy_", 4, "aten.copy_.default"))
    assert source_labels(nodes) == {"mul": "q_embed", "add": "q_embed"}


def test_trace_aliases_give_a_node_the_second_name_of_its_value(tmp_path) -> None:
    """`residual = x` makes no node: the name goes to the node `x` held there (the add, not the later
    cast `x` is rebound to), and so does a call that made no node; an alias of a name no node holds yet
    names nothing."""
    from types import SimpleNamespace

    from evolution.writers.fusion.trace.labels import source_aliases, source_labels

    path = tmp_path / "reference.py"
    lines = ["def f(x, residual):", "    early = x", "    x = x + residual", "    residual = x"]
    lines += ["    same = x.to(x.dtype)", "    x = x.float()", "    x = x * 2"]
    lines.append("    return x, residual, same")
    path.write_text("\n".join(lines) + "\n")

    def node(name: str, line: int) -> SimpleNamespace:
        trace = f'  File "{path}", line {line}, in f\n    ...\n'
        return SimpleNamespace(name=name, meta={"stack_trace": trace})

    # A cast to the dtype x has makes no node: `same` is a second name too; `x.float()` made one.
    nodes = [node("add", 3), node("_to_copy", 6), node("mul", 7)]
    labels = source_labels(nodes)
    assert labels == {"add": "x", "_to_copy": "x", "mul": "x"}
    assert source_aliases(nodes, labels) == {"add": ("residual", "same")}


def test_specialisations_are_named_for_when_they_run() -> None:
    from evolution.writers.fusion.generate import specialisation_names
    from evolution.writers.fusion.model import Graph

    def graph(**kinds: str) -> Graph:
        return Graph(
            cases=(), placeholders=(), nodes=(), outputs=(), mutations=(), result={}, arg_kinds=kinds
        )

    bf16 = graph(x="tensor:bfloat16", bias="tensor:float32")
    fp32 = graph(x="tensor:float32", bias="none")
    assert specialisation_names([bf16, fp32]) == ["_bf16_fp32", "_fp32_no_bias"]
    assert specialisation_names([bf16]) == [""]
    assert specialisation_names([bf16, bf16]) == ["_0", "_1"]  # told apart by sizes only


def test_address_arithmetic_is_inlined_and_values_are_not() -> None:
    from evolution.writers.fusion.code_text import inline_single_use

    kernel = "\n".join(
        [
            "def k(x_ptr, x_stride0, N: tl.constexpr):",
            "    row = tl.program_id(0)",
            "    row_offs = row * x_stride0",
            "    x = tl.load(x_ptr + row_offs)",
            "    scale = x * 2.0",
            "    base_offs = row_offs + N",
            "    for start in range(0, N, 4):",
            "        row_offs = row_offs + start",
            "    tl.store(x_ptr + base_offs, scale)",
        ]
    )
    inlined = inline_single_use(kernel, 100)
    assert "    row = tl.program_id(0)\n    row_offs = row * x_stride0\n" in inlined  # the program's index
    assert "scale = x * 2.0" in inlined  # a value keeps its name
    assert "base_offs = row_offs + N" in inlined  # what it reads is reassigned before its use: not moved
    single = inline_single_use("def k(x_ptr, s):\n    offs = s * 4\n    tl.load(x_ptr + offs)", 100)
    assert single.splitlines()[1] == "    tl.load(x_ptr + s * 4)"  # no parentheses precedence does not need


VALUES = """def k(x_ptr, out_ptr, eps, N: tl.constexpr):
    cols = tl.arange(0, N)
    mask = cols < N
    x = tl.load(x_ptr + cols)
    x_f32 = x.to(tl.float32)
    power = x_f32 * x_f32
    variance = tl.sum(power, axis=0) / N
    added = variance + eps
    rsqrt = tl.rsqrt(added)
    acc = tl.zeros([N], tl.float32)
    shift = x_f32 - 1.0
    for start in range(0, N, 4):
        acc = acc + shift
    total = acc + 2.0
    total += 1.0
    scaled = total * 3.0
    tl.store(out_ptr + cols, x_f32 * rsqrt + scaled, mask=mask)"""


def test_values_the_reference_did_not_name_are_inlined_where_read_once() -> None:
    """A value named after its op or its expression (`added`, `rsqrt`) read once is written where it is
    read, as an engine's kernel writes `x * tl.rsqrt(variance + eps)`; a value the reference named stays,
    and nothing moves into a loop, past a statement that changes what it reads, or into a keyword's name."""
    from evolution.writers.fusion.code_text import inline_single_use

    inlined = inline_single_use(VALUES, 100, named={"x", "variance"})
    assert "    variance = tl.sum(x_f32 * x_f32, axis=0) / N\n" in inlined  # `power` inlined
    assert "x_f32 * tl.rsqrt(variance + eps) + total * 3.0" in inlined  # `tl.rsqrt` is no read of `rsqrt`
    assert "    shift = x_f32 - 1.0\n    for start" in inlined  # never moved into the loop
    assert "    total = acc + 2.0\n    total += 1.0\n" in inlined  # read again after its update
    assert "mask=cols < N" in inlined and "mask=mask" not in inlined  # the keyword keeps its name
    assert "x_f32 = x.to(tl.float32)" in inlined  # read twice
    compile(inlined, "<inlined>", "exec")
    kept = inline_single_use(VALUES, 100)  # no names given: values stay as they are
    assert "    power = x_f32 * x_f32\n" in kept and "    added = variance + eps\n" in kept
    narrow = inline_single_use(VALUES, 34, named={"x", "variance"})
    assert "    added = variance + eps\n" in narrow  # its reader would run past the limit


def test_a_rounded_value_stored_narrow_is_cast_once() -> None:
    from evolution.writers.fusion.code_text import without_round_trips

    store = "    tl.store(out_ptr + offs, (a + b).to(tl.bfloat16).to(tl.float32).to(tl.bfloat16), mask=m)"
    assert without_round_trips(store) == "    tl.store(out_ptr + offs, (a + b).to(tl.bfloat16), mask=m)"
    rounding = "    x = (a + b).to(tl.bfloat16).to(tl.float32)"  # the reference's rounding: kept
    assert without_round_trips(rounding) == rounding
    mixed = "    y = a.to(tl.float16).to(tl.float32).to(tl.bfloat16)"  # two roundings: kept
    assert without_round_trips(mixed) == mixed


def test_a_named_value_read_only_narrowed_is_held_narrow() -> None:
    """SGLang's norm: `residual = x.to(orig_dtype)`, stored as it is. Read as float32 anywhere, bound on one
    path, or bound in a loop's body whose next round reads it first, it keeps its rounding to float32."""
    from evolution.writers.fusion.code_text import held_narrow

    kernel = [
        "def _k(x_ptr, out_ptr):",
        "    x = tl.load(x_ptr).to(tl.float32)",
        "    residual = x.to(tl.bfloat16).to(tl.float32)",
        "    x = x * 2",
        "    tl.store(out_ptr, residual.to(tl.bfloat16))",
    ]
    held = held_narrow("\n".join(kernel)).split("\n")
    assert held[2] == "    residual = x.to(tl.bfloat16)" and held[4] == "    tl.store(out_ptr, residual)"
    wide = "\n".join([*kernel, "    tl.store(out_ptr + 1, residual * 2)"])
    assert held_narrow(wide) == wide
    # In a loop's body (a two-pass norm's second loop), where each round binds it before reading it
    looped = held_narrow(
        "\n".join(kernel[:2] + ["    for i in range(2):"] + ["    " + line for line in kernel[2:]])
    )
    assert "        residual = x.to(tl.bfloat16)\n" in looped and "tl.store(out_ptr, residual)" in looped
    carried = [
        kernel[0],
        "    residual = tl.load(x_ptr)",
        "    for i in range(2):",
        "        x = residual * 2",
    ]
    carried = "\n".join(carried + ["    " + line for line in kernel[2:]])
    assert held_narrow(carried) == carried  # the next round reads it as float32 above its binding
    branch_in_loop = "\n".join(
        kernel[:2]
        + ["    for i in range(2):", "        if i > 0:"]
        + ["        " + line for line in kernel[2:]]
    )
    assert held_narrow(branch_in_loop) == branch_in_loop
    rebound = "\n".join([*kernel, "    residual = residual + 1", "    tl.store(out_ptr, residual)"])
    assert held_narrow(rebound) == rebound  # the rebinding reads it as float32
    branch = ["    if x > 0:", "        residual = x", "    tl.store(out_ptr, residual * 2)"]
    one_path = "\n".join(kernel[:3] + kernel[4:] + branch)
    assert held_narrow(one_path) == one_path  # rebound on one path only


def test_parentheses_stay_only_where_precedence_needs_them() -> None:
    from evolution.writers.fusion.code_text import without_redundant_parentheses

    cases = {
        "    y = tl.where(m, (x * x), 0.0)": "    y = tl.where(m, x * x, 0.0)",
        "    o = (row * N) + (cols * 2)": "    o = row * N + cols * 2",
        "    z = ((a + b)) * c": "    z = (a + b) * c",
        "    s = -(K // 2)": "    s = -(K // 2)",
        "    d = a - (b - c)": "    d = a - (b - c)",
        "    t = (a, b)": "    t = (a, b)",
        "    u = (a,)": "    u = (a,)",
        "    r = tl.rsqrt((v + e))  # (v + e) stays": "    r = tl.rsqrt(v + e)  # (v + e) stays",
        "    if (a == 0):": "    if a == 0:",
        "        b = (c +": "        b = (c +",  # not a whole statement
    }
    for line, expected in cases.items():
        assert without_redundant_parentheses(line) == expected, line


def test_an_unpacked_output_of_topk_is_named_for_what_it_holds(tmp_path) -> None:
    """`_, ids = torch.topk(masked, ...)` gives the ids no variable of their own: the output is named after
    the op's output (`topk_ids`), not after the scores the top-k read (`masked`)."""
    reference = """
        import torch


        def route(logits: torch.Tensor, bias: torch.Tensor):
            masked = torch.sigmoid(logits) + bias
            _, ids = torch.topk(masked, k=2, dim=-1, sorted=False)
            return ids.to(torch.int32)
    """
    inputs = """
        import torch


        def make_inputs(case, seed, device):
            gen = torch.Generator().manual_seed(seed)
            logits = torch.randn(case["tokens"], 8, generator=gen).to(device)
            return (logits, torch.randn(8, generator=gen).to(device)), {}
    """
    root = write_task(tmp_path / "route", "route", reference, inputs, [{"name": "t4", "tokens": 4}])
    source = write(root, trace(root)).source
    assert "topk_ids_ptr" in source and "masked_ptr" not in source, source
    assert check(root, source) > 0


def test_a_scattered_mask_read_back_as_bool_is_the_test_itself(tmp_path) -> None:
    """A float mask scattered from chosen indices and read back with `~mask.bool()` lowers to one comparison
    (`hits == 0`), not to a 1.0/0.0 select tested against 0.0 and negated."""
    reference = """
        import torch


        def keep_chosen(scores: torch.Tensor):
            chosen = torch.topk(scores, k=2, dim=-1, sorted=False)[1]
            mask = torch.zeros_like(scores)
            mask.scatter_(1, chosen, 1)
            return scores.masked_fill(~mask.bool(), float("-inf"))
    """
    inputs = """
        import torch


        def make_inputs(case, seed, device):
            gen = torch.Generator().manual_seed(seed)
            return (torch.randn(case["tokens"], 8, generator=gen).to(device),), {}
    """
    root = write_task(tmp_path / "keep", "keep_chosen", reference, inputs, [{"name": "t4", "tokens": 4}])
    source = write(root, trace(root)).source
    kernel = source[source.index("@triton.jit\ndef _keep") :]
    assert "1.0, 0.0)" not in kernel and "!= 0.0" not in kernel, kernel
    assert check(root, source) > 0


def test_sizes_are_named_after_the_reference_variables_bound_to_them(tmp_path) -> None:
    from types import SimpleNamespace

    import sympy

    from evolution.writers.fusion.trace.sizes import size_names

    path = tmp_path / "reference.py"
    lines = [
        "def f(x, bias, groups, topk):",  # 1
        "    scores = x.sigmoid()",  # 2
        "    num_tokens = scores.shape[0]",  # 3
        "    n, e = x.shape",  # 4
        "    group_size = scores.size(-1) // groups",  # 5
        "    k = topk",  # 6: a parameter keeps its own name
        "    shape = e * 2",  # 7: a name the generated host code binds itself
        "    return scores.view(num_tokens, groups, group_size) + bias",
    ]
    path.write_text("\n".join(lines) + "\n")
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)

    def size(text: str) -> SimpleNamespace:
        return SimpleNamespace(node=SimpleNamespace(expr=sympy.sympify(text)))

    def node(name: str, line: int, shape: tuple) -> SimpleNamespace:
        trace = f'  File "{path}", line {line}, in f\n    ...\n'
        return SimpleNamespace(name=name, meta={"stack_trace": trace, "val": SimpleNamespace(shape=shape)})

    x = SimpleNamespace(shape=(size("s0"), size("s1")))
    inputs = {"x": ("tensor", x), "groups": ("symint", size("s2")), "topk": ("symint", size("s3"))}
    nodes = [node("sigmoid", 2, x.shape)]
    assert size_names(nodes, inputs, namespace["f"]) == {
        "s0": "num_tokens",
        "s1": "e",
        "floor(s1/s2)": "group_size",
    }


def test_a_size_the_reference_names_names_its_parameter_and_axis() -> None:
    from evolution.writers.fusion.generate import _named_sizes
    from evolution.writers.fusion.params import KernelParams
    from evolution.writers.fusion.symbols import parse

    sources = {"s0": "x.shape[0]", "s1": "x.shape[1]", "s2": "groups"}
    names = {"s1": "num_experts", "s2": "n_groups", "floor(s1/s2)": "group_size"}
    params = KernelParams(sources, set(), names)
    assert params.size(parse("s1")) == "NUM_EXPERTS"
    assert params.size(parse("s2")) == "GROUPS"  # an argument keeps its own name
    assert params.size(parse("floor(s1/s2)")) == "GROUP_SIZE"
    lines = ["s0 = x.shape[0]", "s1 = x.shape[1]", "y = torch.empty((s0, s1))", "k[(s0,)](NUM_EXPERTS=s1)"]
    assert _named_sizes(lines, sources, names) == [
        "x_size0 = x.shape[0]",
        "num_experts = x.shape[1]",
        "y = torch.empty((x_size0, num_experts))",
        "k[(x_size0,)](NUM_EXPERTS=num_experts)",
    ]
    # a name the host code already uses for something else is not taken
    taken = ["s1 = x.shape[1]", "num_experts = torch.empty((s1,))"]
    assert _named_sizes(taken, sources, names)[0] == "x_size1 = x.shape[1]"


def test_a_size_computed_from_named_sizes_is_named_from_them() -> None:
    """A size the reference leaves unnamed (`view(n, num_expert_group, -1)`, `x.shape[-1] // 2`) is named
    from the sizes it is computed from rather than numbered; a part without a name, or a name too long to
    read at a glance, still gives a numbered one."""
    from evolution.writers.fusion.params import KernelParams
    from evolution.writers.fusion.symbols import parse

    sources = {"s0": "x.shape[0]", "s1": "x.shape[1]", "s2": "num_expert_group", "s3": "q.shape[2]"}
    params = KernelParams({**sources, "s4": "q.shape[1]"}, {"s0"}, {"s1": "num_experts"})
    assert params.size(parse("floor(s1/s2)")) == "EXPERT_GROUP_SIZE"
    assert params.size(parse("floor(s3/2)")) == "HALF_Q_SIZE2"
    assert params.size(parse("-floor(s3/2)")) == "NEG_HALF_Q_SIZE2"
    assert params.size(parse("s3*s4")) == "Q_SIZE2_TIMES_Q_SIZE1"
    assert params.size(parse("floor(s0/2)")) == "half_x_size0"  # a dynamic size stays lower case
    assert params.size(parse("s1*s3*s4")) == "SIZE_0"  # three factors: no composed name
    assert params.size(parse("floor(s1/3)")) == "SIZE_1"


def test_the_warps_of_several_tiles_multiply_their_common_extent_once() -> None:
    """The launch's warps follow the largest register tile; an extent every tile has (the program's rows)
    multiplies the maximum once instead of each of its terms."""
    from types import SimpleNamespace

    from evolution.writers.fusion.kernel import _tile_elements

    def plan(*shapes: tuple[str, ...]) -> SimpleNamespace:
        return SimpleNamespace(regions=[(SimpleNamespace(load_shapes=list(shapes), shapes=[]), None)])

    rows = plan(("ROWS", "E_P2"), ("ROWS", "G_P2", "S_P2"), ("ROWS", "K_P2"), ("ROWS", "K_P2"))
    assert _tile_elements(None, rows, None) == "ROWS * max(E_P2, G_P2 * S_P2, K_P2)"
    assert (
        _tile_elements(None, plan(("ROWS", "E_P2"), ("ROWS",)), None) == "ROWS * E_P2"
    )  # one holds the other
    assert _tile_elements(None, plan(("E_P2",), ("G_P2", "S_P2")), None) == "max(E_P2, G_P2 * S_P2)"


# A warps scale left at 1.0 is folded out of the module that ships (writers.fusion.unit_scale): on the
# generator's own output the helper returns the same warps for every size and the candidate stays correct;
# any other scale, or a constant something else reads, stays.


def _num_warps(source: str, name: str = "_num_warps"):
    """The module's warps helper, run on its own with the module's constants."""
    import triton

    scope: dict = {"triton": triton}
    for line in re.findall(r"^WARPS_SCALE\w* = .*$", source, re.M):
        exec(line, scope)
    helper = source[source.index(f"def {name}(") :].split("\n\n\n")[0]
    exec(helper, scope)
    return scope[name]


def test_a_unit_scale_is_folded_and_the_helper_sizes_warps_as_before(rms_task) -> None:
    root, report = rms_task
    source = write(root, report).source
    assert "WARPS_SCALE = 1.0" in source and "int(warps * WARPS_SCALE)" in source
    folded = unit_scales_folded(source)
    assert "WARPS_SCALE" not in folded
    assert "# EVOLVE-BLOCK-START" in folded and "# fusion-knobs:" in folded  # comments above it kept
    before, after = _num_warps(source), _num_warps(folded)
    assert [after(n) for n in range(1, 70000, 97)] == [before(n) for n in range(1, 70000, 97)]
    assert check(root, folded) > 0


def test_another_scale_or_another_reader_keeps_the_constant(rms_task) -> None:
    root, report = rms_task
    scaled = write(root, report, Knobs(warps=2.0)).source
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


GLU_REFERENCES = {
    "sliced": "d = x.shape[-1] // 2\n    return F.silu(x[..., :d]) * x[..., d:]",
    "chunked": "gate_proj, up_proj = x.chunk(2, -1)\n    return F.silu(gate_proj) * up_proj",
}
GLU_INPUTS = """
import torch


def make_inputs(case, seed, device):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(case["tokens"], 2 * case["d"], generator=g).to(torch.bfloat16).to(device),), {}
"""


@pytest.mark.slow  # two traces (Dynamo, seconds), the candidates run on the interpreter
@pytest.mark.parametrize("split", sorted(GLU_REFERENCES))
def test_the_halves_of_a_gated_activation_are_gate_and_up(tmp_path, split: str) -> None:
    """Both halves are loads of `x`: they read as `gate` and `up` (their offsets `gate_offs`, `up_offs`), not
    `x` and `x_2`, however the reference splits them; the output is `out`, not named after the `split` op or
    the activation's operand. The rounding of silu's result carries a comment saying why."""
    body = GLU_REFERENCES[split]
    reference = f"import torch\nimport torch.nn.functional as F\n\n\ndef glu(x):\n    {body}\n"
    cases = [{"name": "t3_d24", "tokens": 3, "d": 24}]
    root = write_task(tmp_path / split, "glu", reference, GLU_INPUTS, cases)
    report = trace(root)
    for knobs in (Knobs(), Knobs(rows=2)):
        source = write(root, report, knobs).source
        assert re.search(r"^\s+gate = tl\.load\(x_ptr \+ ", source, re.M), source
        assert re.search(r"^\s+up = tl\.load\(x_ptr \+ ", source, re.M), source
        assert not re.search(r"\bx_2\b|\bsplit_", source) and "out_ptr" in source
        assert "x_offs" not in source
        # Eager rounds silu's bfloat16 result before the product: the kernel says why it does too.
        assert re.search(r"# Rounded to bfloat16 and back, as .*\n\s+silu = \(.*\.to\(tl\.bfloat16\)", source)
        check(root, source, seeds=(0,))
    # At SGLang's 88 columns the 2-D offsets are bound, each named for its half.
    narrow = generate(report, Knobs(rows=2), entry="glu", task_name="glu", line_length=88).source
    assert "gate_offs = " in narrow and "up_offs = " in narrow and "x_offs" not in narrow


ROTATE_REFERENCE = """
import torch


def rotate(x):
    d = x.shape[-1] // 2
    return torch.cat([-x[..., d:], x[..., :d]], dim=-1)
"""


@pytest.mark.slow  # one trace (Dynamo, seconds), the candidate runs on the interpreter
def test_a_rotated_half_is_x_lo_and_x_hi_and_not_rounded_back(tmp_path) -> None:
    """Eager rounds `-x[..., d:]` of a bfloat16 `x` to bfloat16; a widened load and its negation already
    hold a bfloat16 exactly, so the kernel writes no `.to(tl.bfloat16).to(tl.float32)` round trip there.
    The two slices that meet at `d` are loaded as `x_lo` and `x_hi` (LMDeploy's rotary: `q_l`, `q_h`)."""
    cases = [{"name": "t3_d24", "tokens": 3, "d": 24}]
    root = write_task(tmp_path / "rotate", "rotate", ROTATE_REFERENCE, GLU_INPUTS, cases)
    source = write(root, trace(root), Knobs(rounding=True)).source
    assert "tl.load(" in source and ".to(tl.bfloat16).to(tl.float32)" not in source, source
    assert re.search(r"^\s+x_lo = tl\.load\(", source, re.M) and re.search(
        r"^\s+x_hi = tl\.load\(", source, re.M
    )
    # The lanes a half lands in are named for it, as one term of its load's mask: no `mask`, `mask_2`.
    assert re.search(r"^\s+x_lo_mask = .*\n.*mask=col_mask & x_lo_mask", source, re.M), source
    assert not re.search(r"\bmask(_\d+)? = ", source)
    check(root, source, seeds=(0,))


SOFTMAX_BY_GROUP = """@triton.jit
def _k(x_ptr, out_ptr, GROUPS: tl.constexpr, GROUP_SIZE: tl.constexpr, N: tl.constexpr):
    pid = tl.program_id(0)
    a0_1 = tl.arange(0, GROUPS)
    v2 = a0_1 * GROUP_SIZE
    x_3 = tl.load(x_ptr + pid * N + v2)
    v4 = x_3.to(tl.float32)
    v5 = tl.max(v4, axis=0)
    v6 = v4 - v5
    v7 = tl.exp(v6)
    v8 = tl.where(a0_1 < GROUPS, v7, 0.0)
    v9 = tl.sum(v8, axis=0)
    tl.store(out_ptr + pid * N + v2, v7 / v9)"""


GROUPED_COPY = """@triton.jit
def _k(x_ptr, out_ptr, GROUPS: tl.constexpr, GROUP_SIZE: tl.constexpr):
    a0_1 = tl.arange(0, GROUPS)
    v2 = a0_1 * GROUP_SIZE
    a1_3 = tl.arange(0, GROUP_SIZE)
    v4 = v2[:, None] + a1_3[None, :]
    v5 = tl.where(a1_3[None, :] < GROUP_SIZE, v4, 0)
    x_6 = tl.load(x_ptr + v5)
    tl.store(out_ptr + v5, x_6)"""


def test_each_blocks_start_plus_the_offsets_in_it_are_the_blocks_offsets() -> None:
    """The router's experts in their groups, the index of a gather: each group's start plus the offsets
    within a group, named for the blocks (`group_offs`), not for the operator (`plus`)."""
    hints = Hints()
    hints.add("a0_1", "offs_a0", 2)
    hints.add("a1_3", "offs_a1", 2)
    renamed = apply(GROUPED_COPY, rename_map(GROUPED_COPY, hints, {"a0": "group", "a1": "member"}))
    assert "group_offs = group_start[:, None] + offs_member[None, :]" in renamed, renamed


def test_temporaries_say_what_they_hold_where_the_op_alone_would_not() -> None:
    """An axis's offsets times a size are where each block starts; a value less its max is shifted (a
    softmax's step before exp); a masked value with a long name keeps its first word."""
    hints = Hints()
    hints.add("a0_1", "offs_a0", 2)
    hints.add("x_3", "x", 3)
    renamed = apply(SOFTMAX_BY_GROUP, rename_map(SOFTMAX_BY_GROUP, hints, {"a0": "group"}))
    assert numbered_names(renamed) == []
    for text in (
        "group_start = offs_group * GROUP_SIZE",
        "x_f32_shifted = x_f32 - max_x_f32",
        "exp_x_f32_shifted = tl.exp(x_f32_shifted)",
        "exp_masked = tl.where(",
        "sum_exp_masked = tl.sum(exp_masked, axis=0)",
    ):
        assert text in renamed, (text, renamed)
