"""The LLM-free path on real engine code: the seven functions of the acceptance extracted fresh from their
pip releases (cached under $KERNELBOT_CACHE/sources) with shrunk specs, no candidates/, no --seed, no LLM;
seed:fusion writes the first candidate and the evaluator (the interpreter) finds it correct on every case,
hidden dynamic sizes included. On the router, fusion:variant then yields distinct correct children."""

from __future__ import annotations

import ast
import asyncio
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import libcst as cst
import pytest
from readable import duplicate_kernels, numbered_names, problems, search_accounts

from bench.fusion_targets import TARGETS, Target, extract_target
from bench.shipped_module import gpu_launches, line_budget, own_kernel_lines, shipped_entry, shipped_module
from evaluators.task import Task, load_task
from evolution.dedup import candidate_sha
from evolution.mutators.crossover.alike import jit_functions
from evolution.mutators.crossover.source import Route, build_child
from evolution.mutators.fusion_seed import FusionSeedMutator
from evolution.mutators.fusion_variant import FusionVariantMutator
from evolution.types import MutationRequest, Program
from evolution.writers.fusion.knobs import Knobs, parse
from evolution.writers.fusion.writer import FusionWriter
from extractors.errors import ExtractionError
from extractors.release_sources import fetch_release
from kernelbot.engines import load_profile

SPECS = Path(__file__).parent / "specs"
pytestmark = [pytest.mark.slow, pytest.mark.network]


@pytest.fixture(scope="module")
def releases() -> None:
    for release in sorted({t.release for t in TARGETS}):
        try:
            fetch_release(release)
        except ExtractionError as exc:
            pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")


@pytest.fixture(scope="module")
def writer() -> FusionWriter:
    return FusionWriter()


@pytest.fixture(scope="module")
def tasks_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fresh")


def engine_line_length(target: Target) -> int:
    return load_profile(target.release.split("==")[0]).formatter.line_length


@pytest.fixture(scope="module")
def seeds(releases: None, tasks_dir: Path) -> Callable[[Target], tuple[Path, str]]:
    """Per target: its task directory and the seed the fusion writer writes at its engine's line length
    (extracted and written once for the module)."""
    made: dict[str, tuple[Path, str]] = {}

    def seed(target: Target) -> tuple[Path, str]:
        if target.name not in made:
            task_dir = extract_target(target, tasks_dir, SPECS)
            assert not (task_dir / "candidates").exists()
            writer = FusionWriter(line_length=engine_line_length(target))
            outcome = asyncio.run(
                FusionSeedMutator(writer).mutate(MutationRequest(load_task(task_dir), None))
            )
            assert outcome.child_source, outcome.error
            made[target.name] = (task_dir, outcome.child_source)
        return made[target.name]

    return seed


@pytest.fixture(scope="module")
def shipped(seeds: Callable[[Target], tuple[Path, str]]) -> Callable[[Target], str]:
    """Per target: the module integrate writes from its seed at its engine's line length (built once for the
    module: the tests only read it, and each build is a codemod and a ruff process)."""
    made: dict[str, str] = {}

    def module(target: Target) -> str:
        if target.name not in made:
            task_dir, source = seeds(target)
            made[target.name] = shipped_module(task_dir, source, engine_line_length(target))
        return made[target.name]

    return module


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_fusion_seed_is_correct_on_a_fresh_task(judge, seeds, target: Target) -> None:
    task_dir, source = seeds(target)
    result = judge(load_task(task_dir), source)
    assert result.correct, result.reason
    assert any(c.hidden for c in result.cases), "the evaluator drew no hidden dynamic size"


def test_a_size_that_grows_at_every_decode_step_is_a_run_time_argument(seeds) -> None:
    """The spec declares the sequence length dynamic: max_seq_pages follows it, so the kernel takes it as an
    argument (one compilation for every decode step) rather than a constexpr (one per value)."""
    source = seeds(next(t for t in TARGETS if t.name == "sglang_decode_metadata"))[1]
    kernel = next(
        f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef) and f.name.endswith("_kernel")
    )
    constexprs = {a.arg for a in kernel.args.args if a.annotation is not None}
    plain = {a.arg for a in kernel.args.args if a.annotation is None}
    assert "max_seq_pages" in plain and "MAX_SEQ_PAGES" not in constexprs, ast.unparse(kernel.args)


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_an_in_place_store_over_values_other_lanes_read_waits_for_them(seeds, target: Target) -> None:
    """LMDeploy's rotary embedding writes query and key in place after reading each head's other half: the
    kernel stores them only after a barrier (other lanes load what a lane stores). The other ops read and
    write each element in one lane, or write fresh outputs: no barrier."""
    source = seeds(target)[1]
    if target.name != "lmdeploy_apply_rotary":
        assert "tl.debug_barrier()" not in source
        return
    lines = [line.strip() for line in source.splitlines()]
    barrier = lines.index("tl.debug_barrier()")
    stores = [k for k, line in enumerate(lines) if line.startswith("tl.store(")]
    loads = [k for k, line in enumerate(lines) if "tl.load(query_ptr" in line or "tl.load(key_ptr" in line]
    assert stores and loads and max(loads) < barrier < min(stores)


def test_no_page_to_write_still_writes_the_sequence_lengths(judge, seeds, tmp_path: Path) -> None:
    """max_seq_pages == 0 leaves the page axis empty; the kernel still writes cache_seqlens and cu_seqlens,
    which the reference writes whatever the pages (the one program of block 0 runs, every page lane
    masked). Sequences of 1 or 2 tokens with a delta of -4 have no page; 16 of them, so that the evaluator's
    random seeds draw different lengths (5 drew the same ones for all three seeds about once in a thousand,
    and the task was judged degenerate)."""
    task_dir, source = seeds(next(t for t in TARGETS if t.name == "sglang_decode_metadata"))
    shutil.copytree(task_dir, tmp_path / "task")
    toml = tmp_path / "task" / "task.toml"
    empty = (
        '[[cases]]\nname = "no_pages"\nbs = 16\npool = 16\ncontext = 64\nseq = 3\npage_size = 4\ndelta = -4\n'
    )
    toml.write_text(toml.read_text() + "\n" + empty)
    task = load_task(tmp_path / "task")
    args, _ = task.make_inputs(task.case("no_pages"), 0, "cpu")
    assert args[6] == 0  # max_seq_pages
    result = judge(task, source)
    assert result.correct, result.reason


@pytest.fixture(scope="module")
def compiled(seeds, shipped, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[dict]]]:
    """Each target's shipped module, and the seed it was made from, compiled for sm_90 on the task's first
    case (bench/cuda_compile_check.py, one process): their launches, with PTX digests."""
    out = tmp_path_factory.mktemp("compiled")
    jobs = []
    for target in TARGETS:
        task_dir, source = seeds(target)
        module, raw = out / f"{target.name}.py", out / f"{target.name}_seed.py"
        module.write_text(shipped(target))
        raw.write_text(source)
        entry = load_task(task_dir).entry
        jobs += [(task_dir, module, shipped_entry(task_dir)), (task_dir, raw, entry)]
    launches = gpu_launches(jobs)
    return {t.name: {"module": launches[2 * k], "seed": launches[2 * k + 1]} for k, t in enumerate(TARGETS)}


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_shipped_module_compiles_for_the_gpu(compiled, target: Target) -> None:
    """What the interpreter cannot tell: Triton's compiler takes every kernel the module launches (sm_90)."""
    assert compiled[target.name]["module"], "the module launched no kernel"


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_shipped_module_runs_the_winners_instructions(compiled, target: Target) -> None:
    """The speed rule's CPU half: the module integrate writes (names, layout, guard, entry) launches the same
    kernels with the same PTX as the candidate it was made from, so a GPU can only time them apart by noise
    (bench/readable_parity.py times them on one)."""
    module, seed = compiled[target.name]["module"], compiled[target.name]["seed"]
    assert [c["ptx"] for c in module] == [c["ptx"] for c in seed]


# The acceptance's rules for the module integrate writes (readable.py), one test each.


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_no_numbered_names(seeds, target: Target) -> None:
    assert numbered_names(seeds(target)[1]) == []


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_one_kernel_body_per_structure(seeds, target: Target) -> None:
    assert duplicate_kernels(seeds(target)[1]) == []


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_no_interpreter_branch(seeds, target: Target) -> None:
    assert [p for p in problems(seeds(target)[1]) if "interpreter" in p] == []


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_shipped_module_is_named_for_the_op(seeds, shipped, target: Target) -> None:
    """The seed's kernel and docstring are named after the task's entry (`default_rms_norm_impl_forward`);
    the module speaks of the op (`_rms_norm_kernel`) and of the engine's function."""
    task_dir, source = seeds(target)
    entry, op = load_task(task_dir).entry, shipped_entry(task_dir).removesuffix("_triton")
    assert search_accounts(source, entry, op), "the seed's docstring no longer says how it was traced"
    assert search_accounts(shipped(target), entry, op) == []


def test_the_outputs_are_named_as_the_reference_returns_them(shipped) -> None:
    """LMDeploy's RMSNorm returns `x, residual`, the second a name given only by `residual = x`: the
    module allocates and returns `x_out` and `residual_out`, not `out1`, and its kernel holds the sum as
    `residual` before `x` is rebound, not as an `x` that the normalised row becomes `x_2` beside."""
    module = shipped(next(t for t in TARGETS if t.name == "lmdeploy_rmsnorm_residual"))
    assert "return (x_out, residual_out)" in module and "out1" not in module
    assert "residual = x.to(tl.bfloat16)" in module and "x_2" not in module


def test_a_helpers_values_keep_its_names_at_each_call(shipped) -> None:
    """LMDeploy's rotary calls rotate_half on the query and then on the key; its `out[..., :half] = -x2`
    and `out[..., half:] = x1` name the rotated halves `out` at each call (rebound for the key), not
    `slice_scatter` and `slice_scatter_2`."""
    module = shipped(next(t for t in TARGETS if t.name == "lmdeploy_apply_rotary"))
    assert "slice_scatter" not in module and "out_2" not in module
    assert len(re.findall(r"^\s+out = tl\.where\(", module, re.M)) == 4
    assert "q_sin = (out * sin" in module and "k_sin = (out * sin" in module


def test_values_read_again_say_in_which_layout(seeds) -> None:
    """SGLang's router with the reload knob on loads the gating output again in the group view and at the
    top-k ids: those copies are named for it (`gating_output_grouped`, `gating_output_at_topk_ids`), not
    `gating_output_2` and `gating_output_3`."""
    target = next(t for t in TARGETS if t.name == "sglang_biased_grouped_topk")
    task_dir, _ = seeds(target)
    task, writer = load_task(task_dir), FusionWriter(line_length=engine_line_length(target))
    report = asyncio.run(writer.report(task))
    source = asyncio.run(writer.write(task, report, Knobs(reload=True))).source
    for name in ("gating_output_grouped", "correction_bias_grouped", "scores_for_choice_grouped"):
        assert f"{name} = " in source, name
    assert "gating_output_at_topk_ids = tl.load(" in source
    assert not re.search(r"\b(gating_output|correction_bias|scores_for_choice)(_offs)?_\d\b", source)


def test_an_offset_back_is_subtracted(shipped) -> None:
    """rotate_half reads the first half at `offs - HALF_HEAD_DIM`: the half subtracted, not a second
    parameter for its negation added (`offs + NEG_HALF_HEAD_DIM`, named `offs_head_dim_plus`)."""
    module = shipped(next(t for t in TARGETS if t.name == "lmdeploy_apply_rotary"))
    assert "NEG_" not in module and "_plus =" not in module
    assert "offs_head_dim_minus_half_head_dim = offs_head_dim - HALF_HEAD_DIM" in module


def test_sizes_the_reference_leaves_unnamed_take_the_specs_axis_names(shipped) -> None:
    """The rotary reads every size as `x.shape[k]`; the spec that builds its inputs names the axes
    (`query: [tokens, heads, head_dim]`), so the kernel takes `HEADS`, `KV_HEADS` and `HEAD_DIM` and the
    host reads `head_dim = key.shape[2]`, not `KEY_SIZE2`. A size the reference names keeps the
    reference's name (the router's `num_experts`, not the spec's `experts`)."""
    rotary = shipped(next(t for t in TARGETS if t.name == "lmdeploy_apply_rotary"))
    for param in ("HEADS: tl.constexpr", "KV_HEADS: tl.constexpr", "HEAD_DIM: tl.constexpr"):
        assert param in rotary, param
    assert "head_dim = key.shape[2]" in rotary
    assert not re.search(r"_size\d|_SIZE\d", rotary)
    router = shipped(next(t for t in TARGETS if t.name == "sglang_biased_grouped_topk"))
    assert "NUM_EXPERTS: tl.constexpr" in router and "EXPERTS:" not in router.replace("NUM_EXPERTS:", "")


def test_indices_that_wrap_keep_the_name_they_were_loaded_as(shipped) -> None:
    """Advanced indexing counts negative indices from the end; the wrapped values are the same indices,
    so the decode metadata's module rebinds `req_pool_indices` and `strided_indices`, no `index_2`."""
    module = shipped(next(t for t in TARGETS if t.name == "sglang_decode_metadata"))
    for name in ("req_pool_indices", "strided_indices"):
        assert re.search(rf"{name} = {name} \+ tl\.where\(\s*{name} < 0", module), name
    assert not re.search(r"\bindex(_\d+)?\b", module)


def test_a_part_one_program_writes_says_so(shipped) -> None:
    """The decode metadata's per-request lengths span `bs`, not the launch over pages: one program writes
    them, under a test a reader would otherwise have to work out."""
    lines = shipped(next(t for t in TARGETS if t.name == "sglang_decode_metadata")).splitlines()
    guard = next(k for k, line in enumerate(lines) if re.fullmatch(r"\s+if \(\w+ == 0\) & .*:", line))
    assert lines[guard - 1].strip() == "# These outputs do not span the whole launch: one program writes them"


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_entry_has_no_parentheses_it_does_not_need(seeds, shipped, target: Target) -> None:
    """A size inlined into the host's lines brings no grouping with it (`triton.cdiv(x_size1 // 2,
    BLOCK_COL)`, not `triton.cdiv((x_size1 // 2), BLOCK_COL)`)."""
    from evolution.writers.fusion.generate import _without_grouping

    entry = shipped_entry(seeds(target)[0])
    tree = ast.parse(shipped(target))
    fn = next(f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == entry)
    lines = shipped(target).splitlines()[fn.lineno - 1 : fn.end_lineno]
    assert [line for line in lines if _without_grouping(line) != line] == []


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_engine_line_length(seeds, shipped, target: Target) -> None:
    source = seeds(target)[1]
    width = engine_line_length(target)
    for text in (source, shipped(target)):
        long = [line for line in text.splitlines() if len(line) > width]
        assert long == [], f"over {width} characters: {long[:3]}"


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_the_line_budget(shipped, target: Target) -> None:
    module = shipped(target)
    assert len(module.splitlines()) <= line_budget(own_kernel_lines(target.name))


def knob_writer(seeds, name: str) -> tuple[Path, Task, int, Callable[[Knobs], str]]:
    """The fresh task `name` (its directory, the task, its engine's line length) and a function writing its
    fusion kernel for given knobs from one trace."""
    target = next(t for t in TARGETS if t.name == name)
    task_dir, _ = seeds(target)
    task, width = load_task(task_dir), engine_line_length(target)
    writer = FusionWriter(line_length=width)
    report = asyncio.run(writer.report(task))

    def write(knobs: Knobs) -> str:
        return asyncio.run(writer.write(task, report, knobs)).source

    return task_dir, task, width, write


def test_two_structures_fit_the_line_budget(seeds) -> None:
    """SGLang's RMSNorm in the shape of the H200 crossover winner: one pass at two warps scales below 22 MB,
    two passes in chunks with cache hints above. Its module holds both kernels, the one-test warps table as
    one expression (`crossover/table_expressions.py`) and the launches' shared arguments once
    (`shared_launch_args.py`), within 200 lines and every rule."""
    task_dir, task, width, write = knob_writer(seeds, "sglang_rmsnorm_residual")
    one, half = write(Knobs()), write(Knobs(warps=0.5))
    two = write(Knobs(passes="two", block=4096, eviction=True, warps=2.0))
    child = build_child(
        build_child(one, half, task.entry, Route(300_000, True, "")),
        two,
        task.entry,
        Route(22_000_000, False, ""),
    )
    module = shipped_module(task_dir, child, width)
    assert len(jit_functions(cst.parse_module(module))) == 2
    assert "warps_scale = 0.5 if nbytes <= 300000 else 1.0" in module and module.count("*args,") == 2
    assert problems(module, limit=width, max_lines=200) == []


def test_two_top_k_methods_and_row_counts_are_one_kernel_within_the_line_budget(seeds) -> None:
    """LMDeploy's softmax top-k in the shape of the H100 crossover winner: the bitonic top-k one row a program
    for small inputs, the mask top-k two rows a program above. A top-k kernel keeps its 2-D tile of ROWS rows
    at one row too, so the two differ only in their top-k method and a launch constant: one kernel taking
    TOPK_METHOD, one launch, the rows and the method chosen by size (as two kernels beside a bitonic network
    of its own, that winner's module was 243 lines). The bitonic method is Triton's tl.topk. Within 1.5x
    the lines of LMDeploy's own router kernel and every rule. (A merged child's correctness on the
    interpreter: test_readable.py's crossed top-k methods; the seeds' at one row: the fresh seed tests.)"""
    task_dir, task, width, write = knob_writer(seeds, "lmdeploy_softmax_topk")
    bitonic, two_rows = write(Knobs(topk="bitonic")), write(Knobs(rows=2))
    child = build_child(two_rows, bitonic, task.entry, Route(65536, True, ""))  # bitonic up to 64 kB
    module = shipped_module(task_dir, child, width)
    assert len(jit_functions(cst.parse_module(module))) == 3  # _pack, the top-k by method, the kernel
    assert "tl.topk(" in module and "_bitonic_merge" not in module
    assert "rows = ROWS_SMALL if nbytes <= 65536 else ROWS_LARGE" in module
    assert "num_warps=_num_warps(rows * EXPERTS_P2)" in module and module.count("*args,") == 0
    budget = line_budget(own_kernel_lines("lmdeploy_softmax_topk"))
    assert problems(module, limit=width, max_lines=budget) == []


def test_variants_of_the_router_are_distinct_and_correct(judge, seeds, writer: FusionWriter) -> None:
    target = next(t for t in TARGETS if t.name == "sglang_biased_grouped_topk")
    task = load_task(seeds(target)[0])  # the task the seed tests extracted; its seed is written again here
    seed = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert seed.child_source, seed.error
    parent = Program(
        "p", seed.child_source, candidate_sha(seed.child_source, task.entry), None, "seed:fusion", 0, -1
    )
    variant = FusionVariantMutator(writer)
    children = []
    # The top-k methods come first (every way of keeping the candidates), then reading gathers from memory.
    for iteration in range(4):
        outcome = asyncio.run(variant.mutate(MutationRequest(task, parent, iteration=iteration)))
        assert outcome.child_source, outcome.error
        children.append(outcome.child_source)
    assert len({candidate_sha(c, task.entry) for c in children}) == len(children)
    knobs = [parse(c) for c in children]
    assert [k.topk for k in knobs[:3] if k] == ["threshold", "twopass", "bitonic"], knobs
    result = judge(task, children[1])  # the two-reduction top-k in the real kernel (the blocks' own tests
    assert result.correct, result.reason  # check every method on random rows)
    # The gate is read once, the group view and the final weights gathered from its registers; the reload
    # variant reads it again at the grouped and at the picked positions.
    gate_loads = re.compile(r"tl\.load\(\s*gating_output_ptr")
    assert len(gate_loads.findall(seed.child_source)) == 1
    assert seed.child_source.count("tl.gather(") == 2
    # The regrouped scores keep the reference's name with the view's word; the gather's positions are each
    # group's start plus the offsets in a group.
    assert re.search(r"scores_for_choice_grouped = tl\.reshape\(\s*gathered,", seed.child_source)
    offs = re.compile(r"^ +expert_group_offs = .*\[:, None\] \+ offs_expert_group_size\[", re.M)
    assert offs.search(seed.child_source)
    reload = children[3]
    assert knobs[3] is not None and knobs[3].reload and knobs[3].topk == "mask"
    assert len(gate_loads.findall(reload)) == 3 and "tl.gather(" not in reload
    result = judge(task, reload)
    assert result.correct, result.reason


# Older releases' sampling and rotary code (the specs of tests/extractors/specs/real): a top-p filter written
# in place over sorted scores, and SGLang's rotary embedding reading its cos/sin cache at the positions.
OLDER = [
    (
        "lmdeploy==0.10.2",
        "lmdeploy.pytorch.engine.logits_process:_filter_topp_sorted_",
        "lmdeploy_filter_topp",
    ),
    (
        "sglang==0.5.9",
        "sglang.srt.layers.rotary_embedding:RotaryEmbedding.forward_native",
        "sglang_rotary_forward_native",
    ),
]


@pytest.mark.parametrize(("release", "function", "spec"), OLDER, ids=[o[2] for o in OLDER])
def test_fusion_seed_on_older_sampling_code(
    judge, writer: FusionWriter, tasks_dir: Path, release: str, function: str, spec: str
) -> None:
    from extractors.extract import ExtractOptions, extract

    try:
        repo = fetch_release(release)
    except ExtractionError as exc:
        pytest.skip(f"cannot obtain {release} (is the package registry reachable?): {exc}")
    real_specs = Path(__file__).parents[2] / "extractors" / "specs" / "real"
    out = tasks_dir / "older" / spec
    extract(ExtractOptions(repo, function, out=out, spec=real_specs / f"{spec}.toml", force=True))
    task = load_task(out)
    outcome = asyncio.run(FusionSeedMutator(writer).mutate(MutationRequest(task, None)))
    assert outcome.child_source, outcome.error
    result = judge(task, outcome.child_source)
    assert result.correct, result.reason
