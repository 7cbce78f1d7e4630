"""Each kernel of a flat module with several says what sets it apart (crossover/kernel_notes.py): the
structural knobs of the side it came from, where its code shows them; nothing where a kernel has no knobs,
where the module has one body, or where a knob left the code as it was."""

from __future__ import annotations

import ast

from evolution.mutators.crossover.kernel_notes import kernels_noted, knobs_by_kernel

BLOCK = """# fusion-knobs: {}
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(out_ptr + tl.arange(0, N), tl.gather(x, tl.arange(0, N) // 2, 0))


# --- bucket crossover: candidate B's code, its module-level names suffixed ---
# fusion-knobs: {"eviction": true, "reload": true}
@triton.jit
def _k_large(x_ptr, out_ptr, N: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, N), tl.load(x_ptr + tl.arange(0, N) // 2))
"""
MAPPING = {"_k": "_k_small", "_k_large": "_k_large"}


def flat_of(block: str) -> str:
    """The block as crossover.routes leaves it: the crossover's header gone, the kernels renamed."""
    lines = [line for line in block.splitlines(keepends=True) if not line.startswith("# --- bucket")]
    return "".join(lines).replace("def _k(", "def _k_small(")


def docstrings(source: str) -> dict[str, str | None]:
    return {f.name: ast.get_docstring(f) for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)}


def test_each_kernel_reads_its_side_s_knobs() -> None:
    knobs = knobs_by_kernel(BLOCK)
    assert knobs["_k"] is not None and not knobs["_k"].reload
    assert knobs["_k_large"] is not None and knobs["_k_large"].reload and knobs["_k_large"].eviction


def test_kernels_say_the_knob_that_sets_them_apart_as_their_code_shows_it() -> None:
    noted = kernels_noted(flat_of(BLOCK), BLOCK, MAPPING)
    docs = docstrings(noted)
    assert docs["_k_small"] is not None and docs["_k_small"].startswith("Regroups values it already holds")
    assert docs["_k_large"] is not None and docs["_k_large"].startswith("Loads the values it regroups again")
    # B's knobs ask for cache hints, but this code has no load they apply to: nothing is said of them.
    assert "hint" not in docs["_k_small"] + docs["_k_large"]
    assert all(len(line) <= 88 for line in noted.splitlines())


def test_a_kernel_without_knobs_one_body_or_the_same_structure_leave_the_module_alone() -> None:
    flat = flat_of(BLOCK)
    foreign = BLOCK.replace("# fusion-knobs: {}\n", "")  # A written by something else (an Inductor seed)
    assert kernels_noted(flat, foreign, MAPPING) == flat
    same = BLOCK.replace('{"eviction": true, "reload": true}', '{"eviction": true}')
    assert kernels_noted(flat, same, MAPPING) == flat  # reload alike: the code differs for another reason
    one = flat.replace("tl.gather(x, tl.arange(0, N) // 2, 0)", "x")
    twins = one.replace(
        "tl.store(out_ptr + tl.arange(0, N), tl.load(x_ptr + tl.arange(0, N) // 2))",
        "x = tl.load(x_ptr + tl.arange(0, N))\n    tl.store(out_ptr + tl.arange(0, N), x)",
    )
    assert kernels_noted(twins, BLOCK, MAPPING) == twins  # one body under two names


INDUCTOR_SIDE = """

# --- bucket crossover: candidate B's code, its module-level names suffixed ---
# Fused by Inductor from aten.gather
@triton.jit
def _poi_fused_gather_0_large2(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N) // 2)
    tl.store(out_ptr + tl.arange(0, N), x)
"""


def test_an_inductor_kernel_says_what_it_is_and_the_fusion_kernels_are_told_apart() -> None:
    """A third side seeded from torch.compile's code has no knob line; the comment above it says what it
    is, so the two fusion kernels are still noted against each other, and it gets no docstring."""
    block = BLOCK + INDUCTOR_SIDE
    mapping = MAPPING | {"_poi_fused_gather_0_large2": "_poi_fused_gather_0_large2"}
    docs = docstrings(kernels_noted(flat_of(block), block, mapping))
    assert docs["_poi_fused_gather_0_large2"] is None
    assert docs["_k_small"] is not None and docs["_k_small"].startswith("Regroups values it already holds")
    unexplained = block.replace("# Fused by Inductor from aten.gather\n", "")  # an LLM's kernel, say
    assert kernels_noted(flat_of(unexplained), unexplained, mapping) == flat_of(unexplained)
