"""Launch-parameter tuning: which literals are knobs, and moves that keep the program valid and correct."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import itertools
import re
from pathlib import Path

import pytest
import torch

from evaluators.candidate import check_evolve_block
from evaluators.result import EvalResult, Stage
from evaluators.task import load_task
from evolution.mutators.launch_tuning import LaunchTuningMutator
from evolution.mutators.tuning_sites import apply_changes, find_sites, valid_value
from evolution.types import MutationRequest, Program

# Two kernels: a row-wise sum of squares (a loop over column blocks, ROWS rows per program) feeding a scale.
CANDIDATE = """import torch
import triton
import triton.language as tl

PAGE_BLOCK = 16  # outside the block: never a site
# EVOLVE-BLOCK-START
ROWS_PER_PROGRAM = 2
COL_BLOCK = 32
SCALE_BLOCK = 64
KV_BLOCK_SIZE = 16
nw = 4


@triton.jit
def _sumsq_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros((ROWS, BLOCK_COLS), tl.float32)
    for start in range(0, n_cols, BLOCK_COLS):
        cols = start + tl.arange(0, BLOCK_COLS)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        x = tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
        acc += x * x
    tl.store(out_ptr + rows, tl.sum(acc, axis=1), mask=rows < n_rows)


@triton.jit
def _scale_kernel(x_ptr, s_ptr, out_ptr, n, n_cols, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    s = tl.load(s_ptr + offs // n_cols, mask=mask)
    tl.store(out_ptr + offs, x * s, mask=mask)


def sumsq_scale(x):
    n_rows, n_cols = x.shape
    sums = torch.empty((n_rows,), dtype=torch.float32, device=x.device)
    out = torch.empty_like(x)
    grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM),)
    _sumsq_kernel[grid](x, sums, n_rows, n_cols, ROWS=ROWS_PER_PROGRAM, BLOCK_COLS=COL_BLOCK, num_warps=nw)
    n = x.numel()
    grid = (triton.cdiv(n, SCALE_BLOCK),)
    _scale_kernel[grid](x, sums, out, n, n_cols, BLOCK_SIZE=SCALE_BLOCK, num_stages=2)
    _scale_kernel[(triton.cdiv(n, 64),)](x, sums, out, n, n_cols, BLOCK_SIZE=64, num_warps=2)
    return out
# EVOLVE-BLOCK-END
"""


def reference(x: torch.Tensor) -> torch.Tensor:
    return x * (x * x).sum(dim=1, keepdim=True)


@pytest.fixture
def task(tmp_path: Path):
    root = tmp_path / "task"
    root.mkdir()
    (root / "task.toml").write_text('name = "sumsq"\nentry = "sumsq_scale"\n[[cases]]\nname = "a"\nn = 8\n')
    (root / "reference.py").write_text("def sumsq_scale(x):\n    return x * (x * x).sum(1, keepdim=True)\n")
    (root / "inputs.py").write_text("def make_inputs(case, seed, device):\n    raise NotImplementedError\n")
    return load_task(root)


def load(source: str, path: Path):
    path.write_text(source)  # Triton's JIT reads kernel source from the file
    spec = importlib.util.spec_from_file_location(f"tuned_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sumsq_scale


def request(task, source: str, iteration: int = 0, inspirations=()) -> MutationRequest:
    parent = Program("p1", source, "sha", None, "seed:file", 0, 0)
    return MutationRequest(task=task, parent=parent, iteration=iteration, inspirations=tuple(inspirations))


def test_sites_are_launch_knobs_inside_the_block():
    sites = {s.key: (s.kind, s.value) for s in find_sites(CANDIDATE)}
    assert sites["name:ROWS_PER_PROGRAM"] == ("block", 2)
    assert sites["name:COL_BLOCK"] == ("block", 32)
    assert sites["name:SCALE_BLOCK"] == ("block", 64)
    assert sites["name:nw"] == ("warps", 4)  # kind taken from the launch keyword it feeds
    kw = {k: v for k, v in sites.items() if k.startswith("kw:")}
    assert sorted(v for v in kw.values()) == [("stages", 2), ("warps", 2)]
    # Data layout, code outside the block, and a literal block keyword (the grid repeats it) are no sites.
    assert not any("KV_BLOCK" in k or "PAGE_BLOCK" in k for k in sites)
    assert len(sites) == 6


def test_a_name_rebound_or_launched_under_a_non_knob_keyword_is_left_alone():
    source = CANDIDATE.replace("nw = 4\n", "nw = 4\nnw = 8\n").replace(
        "ROWS=ROWS_PER_PROGRAM,", "ROWS=ROWS_PER_PROGRAM, n_extra=COL_BLOCK,"
    )
    keys = {s.key for s in find_sites(source)}
    assert "name:nw" not in keys and "name:COL_BLOCK" not in keys and "name:ROWS_PER_PROGRAM" in keys


def test_apply_changes_rewrites_only_the_chosen_literals():
    (warps_key,) = [s.key for s in find_sites(CANDIDATE) if s.key.startswith("kw:num_warps@")]
    child = apply_changes(CANDIDATE, {"name:COL_BLOCK": 128, warps_key: 8})
    assert "COL_BLOCK = 128\n" in child and "BLOCK_SIZE=64, num_warps=8)" in child
    assert (
        child.replace("COL_BLOCK = 128", "COL_BLOCK = 32").replace("num_warps=8)", "num_warps=2)")
        == CANDIDATE
    )


def test_moves_are_valid_in_block_and_deterministic(task):
    mutator, twin = LaunchTuningMutator(seed=3), LaunchTuningMutator(seed=3)
    children = []
    before = {s.key: s.value for s in find_sites(CANDIDATE)}
    for iteration in range(6):
        outcome = mutator.mutate_source(request(task, CANDIDATE, iteration))
        child = outcome.child_source
        assert outcome.error == "" and outcome.operator == "tune:launch" and child != CANDIDATE
        check_evolve_block(CANDIDATE, child)
        ast.parse(child)
        after = {s.key: s for s in find_sites(child)}
        changed = [k for k in before if after[k].value != before[k]]
        assert 1 <= len(changed) <= 2
        assert all(valid_value(after[k].kind, after[k].value) for k in changed)
        # Same seed, same requests in the same order: the same children.
        assert twin.mutate_source(request(task, CANDIDATE, iteration)).child_source == child
        children.append(child)
    assert len(set(children)) == 6  # never the same child twice


def test_tuned_children_compute_the_same_function(task, tmp_path):
    x = torch.randn(5, 70, dtype=torch.float32)
    expected = reference(x)
    torch.testing.assert_close(load(CANDIDATE, tmp_path / "parent.py")(x), expected)
    mutator = LaunchTuningMutator(seed=11, max_moves=3)
    for iteration in range(3):
        child = mutator.mutate_source(request(task, CANDIDATE, iteration)).child_source
        got = load(child, tmp_path / f"child{iteration}.py")(x)
        torch.testing.assert_close(got, expected, msg=f"child {iteration} differs:\n{child}")


def test_block_moves_respect_the_per_kernel_tile_bound(task):
    source = CANDIDATE.replace("ROWS_PER_PROGRAM = 2", "K0_XBLOCK = 64").replace(
        "ROWS_PER_PROGRAM", "K0_XBLOCK"
    )
    source = source.replace("COL_BLOCK", "K0_R0_BLOCK").replace("K0_R0_BLOCK = 32", "K0_R0_BLOCK = 1024")
    mutator = LaunchTuningMutator(seed=0, max_moves=1)
    grown = 0
    for iteration in range(8):
        child = mutator.mutate_source(request(task, source, iteration)).child_source
        sites = {s.key: s.value for s in find_sites(child)}
        assert sites["name:K0_XBLOCK"] * sites["name:K0_R0_BLOCK"] <= 1 << 16
        grown += sites["name:K0_XBLOCK"] * sites["name:K0_R0_BLOCK"] > 64 * 1024
    assert grown == 0


def test_recombination_takes_a_knob_from_a_better_relative(task):
    better = CANDIDATE.replace("SCALE_BLOCK = 64", "SCALE_BLOCK = 1024").replace(
        "COL_BLOCK = 32", "COL_BLOCK = 8"
    )
    result = EvalResult("sumsq", "x", "triton-cuda", "wall", Stage.TIMING, True, correct=True, score=2.0)
    inspiration = Program("i1", better, "sha2", None, "tune:launch", 0, 1, result=result)
    mutator = LaunchTuningMutator(seed=0, max_moves=4, recombine=1.0)
    first = [mutator.mutate_source(request(task, CANDIDATE, i, [inspiration])).child_source for i in range(2)]
    # The relative's values come first, one site at a time (both at once would be the relative itself).
    assert sum("SCALE_BLOCK = 1024" in child for child in first) == 1
    assert sum("COL_BLOCK = 8\n" in child for child in first) == 1


def test_nothing_to_tune_and_no_parent_are_errors(task):
    plain = "import torch\n# EVOLVE-BLOCK-START\ndef sumsq_scale(x):\n    return x\n# EVOLVE-BLOCK-END\n"
    mutator = LaunchTuningMutator()
    outcome = mutator.mutate_source(request(task, plain))
    assert outcome.child_source is None and "no launch parameter to tune" in outcome.error
    none = asyncio.run(mutator.mutate(MutationRequest(task=task, parent=None)))
    assert none.child_source is None and "needs a parent" in none.error
    assert not mutator.can_seed()


def test_every_warps_and_stages_value_stays_in_range(task):
    mutator = LaunchTuningMutator(seed=5, max_moves=6)
    for iteration in itertools.islice(itertools.count(), 8):
        child = mutator.mutate_source(request(task, CANDIDATE, iteration)).child_source
        for site in find_sites(child):
            assert valid_value(site.kind, site.value), site


SHAPE_DERIVED = """import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START
@triton.jit
def _double_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


def sumsq_scale(x):
    out = torch.empty_like(x)
    n = x.numel()
    block = min(256, triton.next_power_of_2(n))
    _double_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK_SIZE=block, num_warps=8 if block >= 256 else 4)
    return out
# EVOLVE-BLOCK-END
"""


def test_shape_derived_block_cap_and_conditional_warps_are_knobs(task, tmp_path):
    sites = find_sites(SHAPE_DERIVED)
    assert sorted((s.kind, s.value) for s in sites) == [("block", 256), ("warps", 4), ("warps", 8)]
    assert {s.key.split("@")[0] for s in sites} == {"cap:block", "kw:num_warps"}
    assert {s.key.rsplit(":", 1)[-1] for s in sites if s.kind == "warps"} == {"body", "orelse"}
    keys = {s.key: s for s in find_sites(SHAPE_DERIVED)}
    changes = {k: (64 if k.startswith("cap:") else 2) for k in keys}
    child = apply_changes(SHAPE_DERIVED, changes)
    assert (
        "block = min(64, triton.next_power_of_2(n))" in child
        and "num_warps=2 if block >= 256 else 2" in child
    )
    x = torch.randn(700)
    torch.testing.assert_close(load(child, tmp_path / "shape_derived.py")(x), x * 2)


# Per-bucket constants: a maintainer's launch table (thresholds are no sites; block/warps/stages/rows are).
BUCKETED = """import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START
SMALL_BATCH_ROWS = 4
SMALL_BLOCK = 32
SMALL_WARPS = 2
LARGE_BLOCK = 64
LARGE_WARPS = 4
LARGE_ROWS_PER_PROGRAM = 2
LOOP_STAGES = 2
UNUSED_BLOCK = 128


@triton.jit
def _sumsq_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    acc = tl.zeros((ROWS, BLOCK_COLS), tl.float32)
    for start in range(0, n_cols, BLOCK_COLS):
        cols = start + tl.arange(0, BLOCK_COLS)
        mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
        acc += tl.load(x_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows, tl.sum(acc * acc, axis=1) * 0 + tl.sum(acc, axis=1) * 0, mask=rows < n_rows)


def sumsq_scale(x):
    n_rows, n_cols = x.shape
    sums = torch.zeros((n_rows,), dtype=torch.float32, device=x.device)
    if n_rows <= SMALL_BATCH_ROWS:
        block, rows = min(SMALL_BLOCK, triton.next_power_of_2(n_cols)), 1
        warps = SMALL_WARPS
    else:
        block = min(LARGE_BLOCK, triton.next_power_of_2(n_cols))
        rows = LARGE_ROWS_PER_PROGRAM
        warps = LARGE_WARPS if n_cols > SMALL_BATCH_ROWS else SMALL_WARPS
    _sumsq_kernel[(triton.cdiv(n_rows, rows),)](
        x, sums, n_rows, n_cols, ROWS=rows, BLOCK_COLS=block, num_warps=warps, num_stages=LOOP_STAGES
    )
    return x * sums[:, None]
# EVOLVE-BLOCK-END
"""


def test_per_bucket_constants_reaching_a_launch_are_sites():
    sites = {s.key: (s.kind, s.value) for s in find_sites(BUCKETED)}
    assert sites == {
        "name:SMALL_BLOCK": ("block", 32),
        "name:SMALL_WARPS": ("warps", 2),
        "name:LARGE_BLOCK": ("block", 64),
        "name:LARGE_WARPS": ("warps", 4),
        "name:LARGE_ROWS_PER_PROGRAM": ("block", 2),  # reaches ROWS=: a constexpr keyword naming no knob
        "name:LOOP_STAGES": ("stages", 2),  # passed directly: the keyword says what it is
    }  # neither the threshold nor a constant that no launch reads
    source = BUCKETED.replace("SMALL_WARPS = 2\n", "SMALL_WARPS = 2\nSMALL_WARPS = 4\n")
    assert "name:SMALL_WARPS" not in {s.key for s in find_sites(source)}  # bound twice: ambiguous


def test_bucket_moves_keep_the_function(task, tmp_path):
    expected = torch.zeros(6, 20)
    for changes in ({"name:LARGE_BLOCK": 16, "name:LARGE_ROWS_PER_PROGRAM": 4}, {"name:SMALL_WARPS": 1}):
        child = apply_changes(BUCKETED, changes)
        assert {s.key: s.value for s in find_sites(child) if s.key in changes} == changes
        for rows in (3, 6):  # both buckets
            got = load(child, tmp_path / f"bucket{len(changes)}.py")(torch.ones(rows, 20))
            torch.testing.assert_close(got, expected[:rows])


def test_every_single_site_neighbour_comes_before_multi_site_moves(task):
    sites = find_sites(BUCKETED)
    neighbours = {
        (s.key, v)
        for s in sites
        for v in {"block": (s.value // 2, s.value * 2), "warps": (s.value // 2, s.value * 2)}.get(
            s.kind, (s.value - 1, s.value + 1)
        )
        if valid_value(s.kind, v) and (s.kind != "block" or v >= min(16, s.value) or s.value < 16)
    }
    assert len(neighbours) == 12
    mutator = LaunchTuningMutator(seed=1)
    proposals = []
    for iteration in range(30):
        child = mutator.mutate_source(request(task, BUCKETED, iteration)).child_source
        after = {s.key: s.value for s in find_sites(child)}
        proposals.append({(s.key, after[s.key]) for s in sites if after[s.key] != s.value})
    assert {next(iter(p)) for p in proposals[: len(neighbours)]} == neighbours
    assert all(len(p) == 1 for p in proposals[: len(neighbours)])
    assert len({frozenset(p) for p in proposals}) == 30  # and never a repeat afterwards either


# The Inductor seed's launch knobs (evolution.writers.inductor.host): two 1-D pointwise launches at
# torch.compile's first config, one moved off it, a reduction, and a 2-D tile.
INDUCTOR_LAUNCHES = """import torch
import triton
import triton.language as tl

# EVOLVE-BLOCK-START
K0_XBLOCK = 1024
K0_MIN_XBLOCK = 256
K0_NUM_WARPS = 4
K1_XBLOCK = 1
K1_R0_BLOCK = 2048
K1_NUM_WARPS = 8
K1_NUM_STAGES = 1
K2_XBLOCK = 512
K2_MIN_XBLOCK = 128
K2_NUM_WARPS = 8
K3_YBLOCK = 32
K3_XBLOCK = 1024
K3_NUM_WARPS = 4
K4_XBLOCK = 1024
K4_NUM_WARPS = 4


@triton.jit
def _kernel(x_ptr, n, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr, YBLOCK: tl.constexpr):
    pass


def sumsq_scale(x):
    n = x.numel()
    k0_xblock = min(K0_XBLOCK, max(K0_MIN_XBLOCK, triton.next_power_of_2(n) // 128))
    _kernel[(1,)](x, n, XBLOCK=k0_xblock, R0_BLOCK=1, YBLOCK=1, num_warps=K0_NUM_WARPS)
    _kernel[(1,)](x, n, XBLOCK=K1_XBLOCK, R0_BLOCK=K1_R0_BLOCK, YBLOCK=1, num_warps=K1_NUM_WARPS,
                  num_stages=K1_NUM_STAGES)
    k2_xblock = min(K2_XBLOCK, max(K2_MIN_XBLOCK, triton.next_power_of_2(n) // 128))
    _kernel[(1,)](x, n, XBLOCK=k2_xblock, R0_BLOCK=1, YBLOCK=1, num_warps=K2_NUM_WARPS)
    _kernel[(1,)](x, n, XBLOCK=K3_XBLOCK, R0_BLOCK=1, YBLOCK=K3_YBLOCK, num_warps=K3_NUM_WARPS)
    _kernel[(1,)](x, n, XBLOCK=K4_XBLOCK, R0_BLOCK=1, YBLOCK=1, num_warps=K4_NUM_WARPS)
    return x
# EVOLVE-BLOCK-END
"""


def test_an_inductor_launch_at_compiles_first_config_is_moved_to_its_second_before_the_neighbours(task):
    """torch.compile benchmarks two pointwise configs per shape, (1024, 4 warps) and (512, 8 warps) for a
    large one; the seed starts at the first. The tuner's first moves: every 1-D pointwise launch
    still at the first config moved to the second at once, then each alone; not K1 (a reduction), K2 (moved
    already), K3 (a 2-D tile)."""
    both = {"name:K0_XBLOCK": 512, "name:K0_MIN_XBLOCK": 128, "name:K0_NUM_WARPS": 8}
    alone = {"name:K4_XBLOCK": 512, "name:K4_NUM_WARPS": 8}
    mutator = LaunchTuningMutator(seed=3)
    proposed = []
    for iteration in range(4):
        child = mutator.mutate_source(request(task, INDUCTOR_LAUNCHES, iteration)).child_source
        before = {s.key: s.value for s in find_sites(INDUCTOR_LAUNCHES)}
        proposed.append({k: v for k, v in ((s.key, s.value) for s in find_sites(child)) if before[k] != v})
    assert proposed[:3] == [both | alone, both, alone]
    assert len(proposed[3]) == 1  # then the single-site neighbours


def test_a_seed_with_one_host_function_per_dtype_gets_the_same_first_moves(task):
    """A seed traced at two dtypes names its knobs under each dtype's tag (`BF16_K0_XBLOCK`,
    evolution.writers.inductor.host.LAUNCH_KNOB); its launches at compile's first config move too."""
    tagged = re.sub(r"\b(K\d+_)", r"BF16_\1", INDUCTOR_LAUNCHES)
    assert "BF16_K0_MIN_XBLOCK = 256" in tagged and "num_warps=BF16_K4_NUM_WARPS" in tagged
    child = LaunchTuningMutator(seed=3).mutate_source(request(task, tagged, 0)).child_source
    before = {s.key: s.value for s in find_sites(tagged)}
    moved = {k: v for k, v in ((s.key, s.value) for s in find_sites(child)) if before[k] != v}
    assert moved == {
        "name:BF16_K0_XBLOCK": 512,
        "name:BF16_K0_MIN_XBLOCK": 128,
        "name:BF16_K0_NUM_WARPS": 8,
        "name:BF16_K4_XBLOCK": 512,
        "name:BF16_K4_NUM_WARPS": 8,
    }


def test_sources_the_run_has_seen_are_never_proposed(task):
    from evolution.dedup import candidate_sha

    first = LaunchTuningMutator(seed=2).mutate_source(request(task, BUCKETED)).child_source
    seen = {candidate_sha(first, task.entry)}
    mutator = LaunchTuningMutator(seed=2, seen=seen.__contains__)
    children = [mutator.mutate_source(request(task, BUCKETED, i)).child_source for i in range(5)]
    assert first not in children and len(set(children)) == 5


def test_a_parent_with_every_nearby_configuration_proposed_says_so(task):
    source = SHAPE_DERIVED.replace("num_warps=8 if block >= 256 else 4", "num_stages=1")
    source = source.replace("min(256, triton.next_power_of_2(n))", "triton.next_power_of_2(n)")
    assert [(s.kind, s.value) for s in find_sites(source)] == [("stages", 1)]  # one neighbour: 2 stages
    mutator = LaunchTuningMutator(seed=0, max_moves=1)
    assert "num_stages=2" in mutator.mutate_source(request(task, source, 0)).child_source
    outcome = mutator.mutate_source(request(task, source, 1))
    assert outcome.child_source is None and "already proposed" in outcome.error


EXAMPLE_SITES = {
    "silu_and_mul/candidates/silu_and_mul_triton.py": {
        "SMALL_BLOCK": "block",
        "SMALL_WARPS": "warps",
        "LARGE_BLOCK": "block",
        "LARGE_WARPS": "warps",
    },
    "silu_and_mul/candidates/silu_and_mul_flat_triton.py": {
        **{f"{size}_BLOCK": "block" for size in ("SMALL", "MEDIUM", "LARGE")},
        **{f"{size}_WARPS": "warps" for size in ("SMALL", "MEDIUM", "LARGE")},
    },
    "rmsnorm_residual/candidates/rmsnorm_residual_triton.py": {
        "SMALL_BATCH_WARPS": "warps",
        "LARGE_BATCH_ROWS_PER_PROGRAM": "block",
        "LARGE_BATCH_WARPS": "warps",
        "CHUNK_BLOCK": "block",
        "CHUNK_WARPS": "warps",
        "CHUNK_STAGES": "stages",
    },
    "rmsnorm_residual/candidates/rmsnorm_residual_rowwise_triton.py": {
        "CHUNK_BLOCK": "block",
        "NARROW_ROW_WARPS": "warps",
        "WIDE_ROW_WARPS": "warps",
    },
    "moe_grouped_topk/candidates/moe_grouped_topk_triton.py": {
        "DECODE_BLOCK_TOKENS": "block",
        "DECODE_WARPS": "warps",
        "PREFILL_BLOCK_TOKENS": "block",
        "PREFILL_WARPS": "warps",
    },
}


@pytest.mark.parametrize("path", sorted(EXAMPLE_SITES))
def test_every_bucket_choice_of_the_example_candidates_is_a_site(path):
    source = (Path(__file__).resolve().parents[2] / "examples" / "tasks" / path).read_text()
    assert {s.name: s.kind for s in find_sites(source)} == EXAMPLE_SITES[path]
