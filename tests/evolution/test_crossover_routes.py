"""Two candidates that differ in a launch constant cross into one launch table (crossover_source), and the
size routing that bucket crossovers stack is flattened (evolution.mutators.crossover.routes): the flat
block routes every input size to the same code with the same constants as the nested one (each leaf's
output names it), holds one dispatcher, no code that no input reaches and one copy of code that differs
only in a launch constant; a routing that is flat already, or not a crossover's, is left alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import torch

from evaluators.candidate import find_evolve_block, replace_evolve_block
from evolution.mutators.crossover.routes import flat_routes
from evolution.mutators.crossover.source import CrossoverError, Route, build_child
from evolution.mutators.crossover.topk_method import topk_methods_merged

# x * (2 * SCALE) with one structure, x + 2 * SCALE with another: the output says which code ran with which
# constant. SCALE is read by a host function only, so two files differing in it cross into a launch table.
TIMES = """import torch

# EVOLVE-BLOCK-START
SCALE = 1.0


def _scale(n):
    return n * SCALE


def _host(x):
    return x * _scale(2)


def entry(x):
    return _host(x)
# EVOLVE-BLOCK-END
"""
PLUS = TIMES.replace("return x * _scale(2)", "return x + _scale(2)")


def variant(source: str, scale: float) -> str:
    return source.replace("SCALE = 1.0", f"SCALE = {scale}")


def run(source: str, elements: int) -> float:
    namespace: dict = {}
    exec(compile(source, "<candidate>", "exec"), namespace)
    return float(namespace["entry"](torch.ones(elements))[0])


def flattened(source: str) -> str | None:
    block = find_evolve_block(source)
    assert block is not None
    flat = flat_routes(block.text, "entry")
    return None if flat is None else replace_evolve_block(source, flat)


def dispatchers(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        f.name for f in tree.body if isinstance(f, ast.FunctionDef) and "element_size()" in ast.unparse(f)
    ]


def nested() -> str:
    """Three crossovers deep: TIMES at two constants as a launch table, beaten below 256 bytes by PLUS (so
    the table's own branch below 64 bytes is never reached), and TIMES with SCALE 3 again above 1024 bytes,
    as a copy of its own."""
    table = build_child(TIMES, variant(TIMES, 3.0), "entry", Route(64, True, "B: small inputs."))
    mixed = build_child(table, PLUS, "entry", Route(256, True, "B: small inputs."))
    return build_child(mixed, variant(TIMES, 3.0), "entry", Route(1024, False, "B: large inputs."))


def test_candidates_differing_in_constants_cross_into_one_launch_table() -> None:
    b = TIMES.replace("SCALE = 1.0", "SCALE = 3.0")
    child = build_child(TIMES, b, "entry", Route(64, True, "B was faster on small inputs."))
    assert child.count("def _scale(") == 1 and not re.search(r"\w_(b|small|large)\d*\b", child)
    assert "def _scale(n, *, SCALE=SCALE):" in child and "_scale(2, SCALE=SCALE)" in child
    namespace: dict = {}
    exec(compile(child, "<child>", "exec"), namespace)
    small, large = torch.ones(4), torch.ones(64)  # 16 and 256 bytes
    assert namespace["entry"](small).tolist() == [6.0] * 4  # B's SCALE below the threshold
    assert namespace["entry"](large).tolist() == [2.0] * 64
    # Read by a kernel, a constant changes what compiles: two bodies, each named for when it runs.
    jit = TIMES.replace("def _scale(n):", "@triton.jit\ndef _scale(n):")
    two = build_child(jit, jit.replace("SCALE = 1.0", "SCALE = 3.0"), "entry", Route(64, False, ""))
    assert "def _scale_large(" in two and "def _entry_small(" in two and "SCALE_large = 3.0" in two
    # A kernel's parameter of the constant's name is the kernel's own (a fusion code's `ROWS: tl.constexpr`
    # beside the module's ROWS): one code still, the kernel once, unsuffixed.
    own = TIMES.replace(
        "def _scale(n):", "@triton.jit\ndef _kernel(x, SCALE):\n    return x * SCALE\n\n\ndef _scale(n):"
    )
    table = build_child(own, own.replace("SCALE = 1.0", "SCALE = 3.0"), "entry", Route(64, False, ""))
    assert table.count("def _kernel(") == 1 and "def _scale(n, *, SCALE=SCALE):" in table
    assert not re.search(r"\w_(small|large)\d*\b", table)
    unread = TIMES.replace("SCALE = 1.0", "SCALE = 1.0\nUNUSED = 1")
    with pytest.raises(CrossoverError, match="differ only in UNUSED"):
        build_child(unread, unread.replace("UNUSED = 1", "UNUSED = 2"), "entry", Route(64, True, ""))


def test_nested_crossovers_flatten_into_one_table_that_routes_as_they_did() -> None:
    source = nested()
    assert len(dispatchers(source)) == 3 and source.count("def _scale") == 3
    flat = flattened(source)
    assert flat is not None
    # Every size runs what it ran before: PLUS up to 256 bytes, TIMES at SCALE 1 to 1024, TIMES at 3 above.
    for elements in (1, 15, 16, 17, 63, 64, 65, 255, 256, 257, 300):
        assert run(flat, elements) == run(source, elements), elements
    assert [run(flat, n) for n in (16, 64, 256, 257)] == [3.0, 3.0, 2.0, 6.0]
    assert dispatchers(flat) == ["entry"]
    assert "CROSSOVER_BYTES" not in flat and "--- bucket crossover" not in flat
    # Two structures, two hosts, each named for when it runs; TIMES once, its SCALE passed where it differs;
    # the helper both read their SCALE through is one, taking it as a parameter.
    assert flat.count("def _scale") == 1 and "def _scale(n, scale):" in flat
    assert "def _entry_small(x):" in flat and "def _entry_large(x, *, SCALE=SCALE):" in flat
    assert "if nbytes <= 256:\n        return _entry_small(x)" in flat
    # Smaller inputs returned above: the second test needs no lower end.
    assert "if nbytes <= 1024:\n        return _entry_large(x)\n" in flat
    assert flat.rstrip().endswith("return _entry_large(x, SCALE=3.0)\n# EVOLVE-BLOCK-END")
    assert flattened(flat) is None  # flat already


def test_one_code_at_several_launches_ships_once_without_suffixes() -> None:
    """TIMES crossed with its SCALE-2 variant, the child crossed with the SCALE-3 one: one copy of TIMES,
    named as the original, launched with the constant of each interval. One crossover of two launches
    takes the same form."""
    first = build_child(TIMES, variant(TIMES, 2.0), "entry", Route(64, True, ""))
    source = build_child(first, variant(TIMES, 3.0), "entry", Route(1024, False, ""))
    assert "_small" in source and "_large" in source
    flat = flattened(source)
    assert flat is not None
    for elements in (1, 16, 17, 255, 256, 257, 400):
        assert run(flat, elements) == run(source, elements), elements
    assert flat.count("def _scale(") == 1 and not re.search(r"_(small|large)\d*\b", flat)
    # The entry is the code's own host, its launch table inside: a local per constant, set by size, the
    # module constant only the table read written as its value there. The helpers the table's constant
    # passes through take it as a plain parameter.
    assert "def entry(x):" in flat and "SCALE = " not in flat and "def _scale(n, scale):" in flat
    assert "    scale = 1.0\n    if nbytes <= 64:\n        scale = 2.0\n    if nbytes > 1024:\n" in flat
    assert "return _host(x, scale)" in flat and "_launch" not in flat
    # Counted over the arguments that can be tensors, where a guard says which: one term a tensor, as the
    # guard lets nothing else through them; every size still runs what the winner ran.
    block = find_evolve_block(source)
    assert block is not None and "isinstance(arg, torch.Tensor)" in flat
    guarded = flat_routes(block.text, "entry", tensors=["x"])
    assert guarded is not None and "isinstance(" not in guarded
    assert "nbytes = x.numel() * x.element_size()\n" in guarded
    guarded_source = replace_evolve_block(source, guarded)
    for elements in (1, 16, 17, 256, 257, 1024, 1025):
        assert run(guarded_source, elements) == run(source, elements), elements
    table = build_child(TIMES, variant(TIMES, 2.0), "entry", Route(64, True, ""))
    once = flattened(table)
    assert once is not None and "scale = 2.0" in once and "_launch" not in once
    assert [run(once, n) for n in (16, 17)] == [run(table, n) for n in (16, 17)] == [4.0, 2.0]


def test_three_codes_are_named_small_medium_large() -> None:
    """PLUS below 64 bytes (TIMES becoming "_large"), then MINUS above 1024 ("_large2", the name taken):
    flat, the middle code gives up "_large" and the last one takes it."""
    minus = TIMES.replace("return x * _scale(2)", "return x - _scale(2)")
    first = build_child(TIMES, PLUS, "entry", Route(64, True, ""))
    source = build_child(first, minus, "entry", Route(1024, False, ""))
    assert "def _entry_large(" in source and "def _entry_large2(" in source
    flat = flattened(source)
    assert flat is not None
    hosts = [
        f.name for f in ast.parse(flat).body if isinstance(f, ast.FunctionDef) and f.name.startswith("_e")
    ]
    assert hosts == ["_entry_medium", "_entry_small", "_entry_large"]
    assert [run(flat, n) for n in (16, 17, 256, 257)] == [3.0, 2.0, 2.0, -1.0]
    for elements in (1, 16, 17, 255, 256, 257, 400):
        assert run(flat, elements) == run(source, elements), elements


def test_hosts_alike_but_for_their_launch_become_one_entry() -> None:
    """The codes' hosts allocate and return alike and differ in the call between: one entry, the size test
    around the differing statements (if / elif / else for three codes), no host functions left."""

    def shared(source: str) -> str:
        body = "    out = x.clone()\n    out = _host(out)\n    return out"
        return source.replace("def entry(x):\n    return _host(x)", f"def entry(x):\n{body}")

    minus = TIMES.replace("return x * _scale(2)", "return x - _scale(2)")
    first = build_child(shared(TIMES), shared(PLUS), "entry", Route(64, True, ""))
    source = build_child(first, shared(minus), "entry", Route(1024, False, ""))
    flat = flattened(source)
    assert flat is not None and "def _entry" not in flat and dispatchers(flat) == ["entry"]
    assert "    out = x.clone()\n    nbytes = 0\n" in flat and flat.count("out = x.clone()") == 1
    assert "    if nbytes <= 64:\n        out = _host_small(out)\n" in flat
    assert "    elif nbytes <= 1024:\n        out = _host_medium(out)\n" in flat  # above 64: the if
    assert "    else:\n        out = _host_large(out)\n    return out\n" in flat
    for elements in (1, 16, 17, 255, 256, 257, 400):
        assert run(flat, elements) == run(source, elements), elements
    # A host called with something else than the entry's own parameter keeps its function.
    odd = build_child(shared(TIMES), shared(PLUS), "entry", Route(64, True, ""))
    odd = odd.replace("return _entry_small(x)", "return _entry_small(x * 1)")
    other = flattened(odd)
    assert other is not None and "def _entry_small(x):" in other
    # So does a decorated host: what the decorator adds would be lost.
    plain = build_child(shared(TIMES), shared(PLUS), "entry", Route(64, True, ""))
    decorated = flattened(plain.replace("def _entry_small(x):", "@torch.no_grad()\ndef _entry_small(x):"))
    assert decorated is not None and "@torch.no_grad()\ndef _entry_small(x):" in decorated
    assert "def _entry" not in (flattened(plain) or "def _entry")


def test_hosts_merged_into_one_entry_keep_the_comment_the_block_opens_with() -> None:
    """The first code's comment above its first statement (an Inductor seed's launch parameters') is the
    parsed block's header, not that statement's: it stays above the constant it introduces."""

    def commented(source: str) -> str:
        body = "    out = x.clone()\n    out = _host(out)\n    return out"
        source = source.replace("def entry(x):\n    return _host(x)", f"def entry(x):\n{body}")
        return source.replace(
            "# EVOLVE-BLOCK-START\n", "# EVOLVE-BLOCK-START\n# The launch tuner varies SCALE.\n"
        )

    source = build_child(commented(TIMES), commented(PLUS), "entry", Route(64, True, ""))
    flat = flattened(source)
    assert flat is not None and "def _entry" not in flat and dispatchers(flat) == ["entry"]
    assert "# EVOLVE-BLOCK-START\n# The launch tuner varies SCALE.\nSCALE = 1.0\n" in flat


def test_a_comment_on_what_the_copies_share_names_the_copy_that_ships() -> None:
    """B is A's code with `_scale` named `_factor` and another SCALE: one code ships, B's (it runs the small
    inputs), launched with each SCALE. BIAS, the same in both, was kept from A; its comment named A's
    `_scale`, which goes."""
    biased = TIMES.replace("SCALE = 1.0", "SCALE = 1.0\nBIAS = 0.0  # _scale: its bias")
    biased = biased.replace("return n * SCALE", "return n * SCALE + BIAS")
    source = build_child(
        biased, variant(biased, 3.0).replace("_scale", "_factor"), "entry", Route(64, True, "")
    )
    flat = flattened(source)
    assert flat is not None and "def _factor(" in flat and "def _scale(" not in flat
    assert "BIAS = 0.0  # _factor: its bias\n" in flat
    for elements in (1, 16, 17, 400):
        assert run(flat, elements) == run(source, elements), elements


def test_hosts_alike_with_a_launch_table_become_one_entry_that_sets_it_by_size() -> None:
    """PLUS below 64 bytes, TIMES above at SCALE 1 up to 1024 bytes and 3 beyond: one entry still, the large
    branch setting a local for the constant and passing it on. A statement the hosts share that reads the
    constant would read the module's value on every size: then the hosts stay."""

    def shared(source: str, head: str = "out = x.clone()") -> str:
        body = f"    out = {head}\n    out = _host(out)\n    return out".replace("out = out = ", "out = ")
        return source.replace("def entry(x):\n    return _host(x)", f"def entry(x):\n{body}")

    first = build_child(shared(TIMES), shared(PLUS), "entry", Route(64, True, ""))
    source = build_child(first, shared(variant(TIMES, 3.0)), "entry", Route(1024, False, ""))
    flat = flattened(source)
    assert flat is not None and "def _entry" not in flat and dispatchers(flat) == ["entry"]
    assert "    if nbytes <= 64:\n        out = _host_small(out)\n    else:\n" in flat
    assert "        scale = 3.0 if nbytes > 1024 else SCALE\n" in flat  # SCALE: read by the other code too
    assert "        out = _host_large(out, scale)\n    return out\n" in flat
    for elements in (1, 16, 17, 255, 256, 257, 400):
        assert run(flat, elements) == run(source, elements), elements
    assert [run(flat, n) for n in (16, 17, 256, 257)] == [3.0, 2.0, 2.0, 6.0]
    scaled = "x.clone() * SCALE"
    first = build_child(shared(TIMES, scaled), shared(PLUS, scaled), "entry", Route(64, True, ""))
    source = build_child(first, shared(variant(TIMES, 3.0), scaled), "entry", Route(1024, False, ""))
    flat = flattened(source)
    assert flat is not None and "def _entry_large(x, *, SCALE=SCALE):" in flat
    for elements in (1, 16, 17, 256, 257, 400):
        assert run(flat, elements) == run(source, elements), elements


def test_code_no_input_reaches_is_dropped() -> None:
    """The inner crossover sends inputs above 4096 bytes to PLUS, the outer one sends everything above 64
    to other code: PLUS is never run and not shipped; what remains is one code at two launches."""
    inner = build_child(TIMES, PLUS, "entry", Route(4096, False, ""))
    source = build_child(inner, variant(TIMES, 3.0), "entry", Route(64, False, ""))
    flat = flattened(source)
    assert flat is not None
    assert "x + _scale" not in flat and flat.count("def _scale(") == 1
    for elements in (1, 16, 17, 2000):
        assert run(flat, elements) == run(source, elements), elements


def test_one_crossover_of_two_codes_ships_one_test_and_hosts_that_take_what_they_read() -> None:
    """The engine's signature stays on the entry; each code's host drops the parameters its code never
    reads (`unused`), positional ones after a dropped one passed by name."""

    def wide(source: str, head: str, call: str) -> str:
        return source.replace("def entry(x):\n    return _host(x)", f"def {head}:\n    return {call}")

    head, call = "entry(x, unused=None, scale=1.0, *, eps=0.5)", "_host(x) * scale + eps"
    source = build_child(wide(TIMES, head, call), wide(PLUS, head, call), "entry", Route(64, True, "B."))
    flat = flattened(source)
    assert flat is not None and "CROSSOVER_BYTES" not in flat and "# Bucket crossover" not in flat
    assert "def _entry_small(x, scale=1.0, *, eps=0.5):" in flat
    assert "def entry(x, unused=None, scale=1.0, *, eps=0.5):" in flat
    assert "if nbytes <= 64:\n        return _entry_small(x, scale=scale, eps=eps)\n" in flat
    for elements in (1, 16, 17, 300):
        assert run(flat, elements) == run(source, elements), elements
    # The first parameter unread: x goes by name.
    source = build_child(
        wide(TIMES, "entry(unused, x)", "_host(x)"),
        wide(PLUS, "entry(unused, x)", "_host(x)"),
        "entry",
        Route(64, True, "B."),
    )
    flat = flattened(source)
    assert flat is not None and "def _entry_large(x):" in flat and "return _entry_large(x=x)" in flat
    namespace: dict = {}
    exec(compile(flat, "<flat>", "exec"), namespace)
    assert namespace["entry"](None, torch.ones(4)).tolist() == [3.0] * 4


def test_flat_and_foreign_routing_is_left_alone() -> None:
    assert flattened(TIMES) is None  # no dispatcher
    # A hand-written dispatcher that routes on something else is not a crossover's: left as it is.
    hand = TIMES.replace("    return _host(x)", "    if x.dim() > 1:\n        return _host(x)\n    return -x")
    assert flattened(hand) is None


THREE_KERNELS = """import triton
import triton.language as tl


@triton.jit
def _kb_topk_rows_small(x, valid, K: tl.constexpr, KP: tl.constexpr):
    '''Rounds of a max, each winner masked out.'''
    return x, valid


@triton.jit
def _kb_topk_rows_threshold_medium(rows, ok, K: tl.constexpr, KP: tl.constexpr):
    '''Rounds of a max below the last winner: the candidates stay read-only, so no tile is rewritten in
    any of the rounds, however many there are.'''
    return rows + 1, ok


@triton.jit
def _kb_topk_rows_twopass_large(x, valid, K: tl.constexpr, KP: tl.constexpr):
    return x, valid


@triton.jit
def _route_kernel_small(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    values, ids = _kb_topk_rows_small(x[None, :], x[None, :] > 0, 2, 2)
    tl.store(out_ptr + tl.arange(0, 2), tl.reshape(values, [2]))


@triton.jit
def _route_kernel_medium(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    values, ids = _kb_topk_rows_threshold_medium(x[None, :], x[None, :] > 0, 2, 2)
    tl.store(out_ptr + tl.arange(0, 2), tl.reshape(values, [2]))


@triton.jit
def _route_kernel_large(x_ptr, out_ptr, N: tl.constexpr, ROWS: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    values, ids = _kb_topk_rows_twopass_large(x[None, :], x[None, :] > 0, 2, 2)
    tl.store(out_ptr + tl.arange(0, 2), tl.reshape(values, [2]))


def route(x, out):
    nbytes = x.numel() * x.element_size()
    if nbytes <= 64:
        _route_kernel_small[(1,)](x_ptr=x, out_ptr=out, N=8, num_warps=1)
    elif nbytes <= 4096:
        _route_kernel_medium[(1,)](x_ptr=x, out_ptr=out, N=8, num_warps=1)
    else:
        _route_kernel_large[(1,)](x_ptr=x, out_ptr=out, N=8, ROWS=2, num_warps=1)
    return out
"""


def test_kernels_alike_but_for_their_top_k_method_merge_and_the_others_stay() -> None:
    """Of three kernels, the two that differ only in the top-k block they call become one taking
    TOPK_METHOD; the third (another structure) keeps its name and launch; the size test stays, as it does
    more than pick a method."""
    merged = topk_methods_merged(THREE_KERNELS)
    compile(merged, "<merged>", "exec")
    assert "def _route_kernel(" in merged and "def _route_kernel_large(" in merged
    assert "_route_kernel_small" not in merged and "_route_kernel_medium" not in merged
    kernel = merged[merged.index("def _route_kernel(") : merged.index("def _route_kernel_large(")]
    assert "N: tl.constexpr,\n    TOPK_METHOD: tl.constexpr):" in kernel
    # One call, of one function for both blocks: each block's body under its method, its docstring the
    # branch's comment (wrapped to fit 88 columns), the second's parameters read under the first's names.
    assert (
        "    values, ids = _kb_topk_rows_by_method(x[None, :], x[None, :] > 0, 2, 2, TOPK_METHOD)\n" in kernel
    )
    chooser = merged[merged.index("def _kb_topk_rows_by_method(") : merged.index("def _route_kernel(")]
    assert chooser.startswith(
        "def _kb_topk_rows_by_method(x, valid, K: tl.constexpr, KP: tl.constexpr, METHOD: tl.constexpr):"
    )
    assert '    if METHOD == "mask":\n        # mask: Rounds of a max, each winner masked out.\n' in chooser
    assert "        return x, valid\n    else:\n        # threshold: Rounds of a max below" in chooser
    assert "are.\n        return x + 1, valid\n" in chooser
    comments = [line.strip().removeprefix("# ") for line in chooser.splitlines() if "#" in line]
    assert " ".join(comments[1:]) == (
        "threshold: Rounds of a max below the last winner: the candidates stay read-only, so no tile is"
        " rewritten in any of the rounds, however many there are."
    )
    assert max(len(line) for line in chooser.splitlines() if "#" in line) <= 88
    # Its lines filled evenly, none left with a word or two.
    threshold = [len(c) for c in comments[1:]]
    assert max(threshold) - min(threshold) < 12, comments
    assert "_kb_topk_rows_small" not in merged and "_kb_topk_rows_threshold" not in merged  # no caller left
    assert '_route_kernel[(1,)](x_ptr=x, out_ptr=out, N=8, TOPK_METHOD="mask", num_warps=1)' in merged
    assert 'TOPK_METHOD="threshold", num_warps=1)' in merged and "elif nbytes <= 4096:" in merged
    assert "def _kb_topk_rows_twopass_large(" in merged  # the other structure's block keeps its name
    # Nothing alike: the text comes back as it was.
    alone = THREE_KERNELS.replace("_kb_topk_rows_small(x[None", "_kb_topk_rows_twopass_large(x[None")
    alone = alone.replace("_kb_topk_rows_threshold_medium(x[None", "_kb_topk_rows_twopass_large(x[None")
    assert topk_methods_merged(alone) == alone


def test_two_specialisations_crossed_on_top_k_both_merge_with_the_blocks_they_share() -> None:
    """bf16 and fp32 kernels, each crossed on its top-k method, call the same blocks: both pairs merge and
    call one function for those blocks (the second merge finds the first's)."""
    two = THREE_KERNELS.replace("_route_kernel_large", "_route_kernel_x").replace(
        "_kb_topk_rows_twopass_large(x[None", "_kb_topk_rows_small(x[None"
    )
    fp32 = two[
        two.index("@triton.jit\ndef _route_kernel_small") : two.index("@triton.jit\ndef _route_kernel_x")
    ]
    fp32 = (
        fp32.replace("_route_kernel_small", "_route_fp32_kernel_small")
        .replace("_route_kernel_medium", "_route_fp32_kernel_medium")
        .replace("tl.arange(0, N))\n", "tl.arange(0, N)).to(tl.float32)\n")
    )
    source = two.replace("def route(", fp32 + "def route(")
    merged = topk_methods_merged(source)
    compile(merged, "<merged>", "exec")
    defined = set(re.findall(r"^def (\w+)\(", merged, re.M))
    assert {"_route_kernel", "_route_fp32_kernel"} <= defined
    assert not {"_route_fp32_kernel_small", "_route_fp32_kernel_medium"} & defined
    for kernel in ("_route_kernel", "_route_fp32_kernel"):
        body = merged[merged.index(f"def {kernel}(") :].split("\n\n\n")[0]
        assert set(re.findall(r"(_kb_\w+)\(", body)) == {"_kb_topk_rows_by_method"}, body
    # The third kernel calls the mask block too: the one chooser calls the blocks by name rather than hold
    # a second copy of a body.
    assert merged.count("def _kb_topk_rows_by_method(") == 1
    chooser = merged[merged.index("def _kb_topk_rows_by_method(") :].split("\n\n\n")[0]
    assert '    if METHOD == "mask":\n        return _kb_topk_rows(x, valid, K, KP)\n' in chooser
    assert "    else:\n        return _kb_topk_rows_threshold(x, valid, K, KP)" in chooser
    assert "values, ids = _kb_topk_rows(x[None, :]" in merged[merged.index("def _route_kernel_x(") :]
    assert {"_kb_topk_rows", "_kb_topk_rows_threshold"} <= defined


TWO_LAUNCHES = """
def _num_warps_small(n):
    return 1


def _num_warps_large(n):
    return 8


def route(x):
    nbytes = x.numel() * 4
    if nbytes <= 100:
        if x.numel() > 0:
            _kernel[(1,)](x_ptr=x, N=8, TOPK_METHOD="bitonic", num_warps=_num_warps_small(8))
    elif nbytes <= 1000:
        if x.numel() > 0:
            _kernel[(1,)](x_ptr=x, N=8, TOPK_METHOD="twopass", num_warps=_num_warps_small(8))
    else:
        if x.numel() > 0:
            _kernel[(1,)](x_ptr=x, N=8, TOPK_METHOD="twopass", num_warps=_num_warps_large(8))
    return x
"""


class _Recorder:
    """A kernel stand-in: `_kernel[grid](**kwargs)` records the launch."""

    def __init__(self) -> None:
        self.launches: list[dict] = []

    def __getitem__(self, grid):
        def launch(**kwargs) -> None:
            shown = {k: "a tensor" if hasattr(v, "data_ptr") else v for k, v in kwargs.items()}
            self.launches.append({"grid": grid, **shown})

        return launch


def _launches(text: str, numel: int) -> list[dict]:
    """The launches `route(torch.zeros(numel))` of the module `text` makes."""
    import torch

    recorder = _Recorder()
    scope: dict = {"_kernel": recorder}
    exec(text, scope)
    scope["route"](torch.zeros(numel))
    return recorder.launches


def test_a_size_test_that_only_chooses_launch_values_is_written_as_that_choice() -> None:
    """Three branches launching one kernel, alike but for TOPK_METHOD and the warps: the values are chosen
    by the same tests, the launch written once, and every size launches what it launched before."""

    from evolution.mutators.crossover.launch_choice import launch_choices

    chosen = launch_choices(TWO_LAUNCHES)
    assert chosen.count("_kernel[(1,)](") == 1 and "TOPK_METHOD=topk_method, num_warps=num_warps)" in chosen
    assert (
        'topk_method = "bitonic" if nbytes <= 100 else "twopass" if nbytes <= 1000 else "twopass"' in chosen
    )
    assert (
        "num_warps = _num_warps_small(8) if nbytes <= 100 else _num_warps_small(8) if nbytes <= 1000"
        in chosen
    )
    for numel in (4, 100, 1000):
        before, after = _launches(TWO_LAUNCHES, numel), _launches(chosen, numel)
        assert before == after and len(before) == 1, numel
    # A name the function uses already: left as it was.
    taken = TWO_LAUNCHES.replace(
        "    nbytes = x.numel() * 4\n", "    nbytes = x.numel() * 4\n    num_warps = 2\n"
    )
    assert launch_choices(taken) == taken


def test_the_tail_of_a_chain_that_only_chooses_becomes_its_else() -> None:
    """The smallest inputs launch another kernel; the two larger branches launch one kernel alike but for
    the warps: they become the chain's else, choosing the warps by their test, and every size launches what
    it launched before. With a branch between them launching yet another kernel, nothing changes."""
    from evolution.mutators.crossover.launch_choice import launch_choices

    other = TWO_LAUNCHES.replace(
        '_kernel[(1,)](x_ptr=x, N=8, TOPK_METHOD="bitonic"',
        '_other[(1,)](x_ptr=x, N=8, TOPK_METHOD="bitonic"',
    )
    chosen = launch_choices(other)
    assert "    if nbytes <= 100:\n        if x.numel() > 0:\n            _other[(1,)](" in chosen
    assert (
        "    else:\n        num_warps = _num_warps_small(8) if nbytes <= 1000 else _num_warps_large(8)\n"
        in chosen
    )
    assert chosen.count("_kernel[(1,)](") == 1 and "elif" not in chosen

    def launches(text: str, numel: int) -> list[tuple[str, dict]]:
        import torch

        kernel, another = _Recorder(), _Recorder()
        scope: dict = {"_kernel": kernel, "_other": another}
        exec(text, scope)
        scope["route"](torch.zeros(numel))
        return [("_kernel", c) for c in kernel.launches] + [("_other", c) for c in another.launches]

    for numel in (4, 25, 26, 250, 251, 1000):
        before, after = launches(other, numel), launches(chosen, numel)
        assert before == after and len(before) == 1, numel
    between = other.replace(
        '_kernel[(1,)](x_ptr=x, N=8, TOPK_METHOD="twopass", num_warps=_num_warps_small(8))',
        '_third[(1,)](x_ptr=x, N=8, TOPK_METHOD="twopass", num_warps=_num_warps_small(8))',
    )
    assert launch_choices(between) == between


ROWS_LAUNCHES = """
ROWS_small = 1
ROWS_large = 4


def route(x):
    nbytes = x.numel() * 4
    if nbytes <= 100:
        programs = (x.numel() + ROWS_small - 1) // ROWS_small
        if programs > 0:
            _kernel[(programs,)](x_ptr=x, ROWS=ROWS_small, num_warps=ROWS_small * 2)
    else:
        programs = (x.numel() + ROWS_large - 1) // ROWS_large
        if programs > 0:
            _kernel[(programs,)](x_ptr=x, ROWS=ROWS_large, num_warps=ROWS_large * 2)
    return x
"""


def test_a_constant_chosen_for_a_launch_sizes_the_grid_once() -> None:
    """Branches alike but for the module constant they launch with (ROWS_small / ROWS_large) and read
    elsewhere too (the grid, the warps): the constant is chosen once and read through its local everywhere,
    so the warps, alike but for that constant, are one expression and no choice of their own."""

    from evolution.mutators.crossover.launch_choice import launch_choices

    chosen = launch_choices(ROWS_LAUNCHES)
    assert "rows = ROWS_small if nbytes <= 100 else ROWS_large" in chosen
    assert "programs = (x.numel() + rows - 1) // rows" in chosen
    assert chosen.count("_kernel[(programs,)](") == 1 and "ROWS=rows" in chosen
    assert "num_warps=rows * 2" in chosen and "num_warps =" not in chosen
    for numel in (4, 25, 26, 1000):
        before, after = _launches(ROWS_LAUNCHES, numel), _launches(chosen, numel)
        assert before == after and len(before) == 1, numel
    # A value that reads a name the branch binds cannot be chosen ahead of the branch: left as it was.
    reads_local = ROWS_LAUNCHES.replace("num_warps=ROWS_small * 2", "num_warps=programs").replace(
        "num_warps=ROWS_large * 2", "num_warps=programs * 2"
    )
    assert launch_choices(reads_local) == reads_local


def test_a_searchs_four_level_crossover_keeps_no_account_of_a_threshold_it_removed() -> None:
    """SGLang RMSNorm's winner of an H100 search (data/: a launch table of the fusion kernel, a band, then
    torch.compile's kernel at two launches above 22 MB): each crossover explained its threshold constant in
    a comment above it. The flat block tests literals in one dispatcher; no comment names a constant that
    is gone, and the dispatcher still tests every threshold."""
    source = (Path(__file__).parent / "data" / "crossover_winner_sglang_rmsnorm_residual.txt").read_text()
    block = find_evolve_block(source)
    assert block is not None and block.text.count("CROSSOVER_BYTES") > 8
    flat = flat_routes(block.text, "rms_norm_forward_native")
    assert flat is not None and "CROSSOVER_BYTES" not in flat and "# Bucket crossover" not in flat
    for threshold in (2787806, 5559380, 22217190, 88787519):
        assert f"if nbytes <= {threshold}:" in flat
    assert "# Each call runs the code" in flat
