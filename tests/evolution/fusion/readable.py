"""What a generated candidate must be to ship in a pull request (docs/fusion.md, "Readable output"): the
reference's names rather than numbered ones, one @triton.jit body per structure, only code the device runs,
lines within the engine's limit and a bounded length. `problems(source)` lists every rule it breaks."""

from __future__ import annotations

import ast
import copy
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

NUMBERED = re.compile(r"v\d+|a\d+_\d+")
# Inductor's bookkeeping names that the integration names for the op and its arguments
# (kernelbot/integrate/inductor_names.py); its index and temporary arithmetic (x0, tmp3) may stay.
INDUCTOR_NAMES = re.compile(r"_?(?:triton_)?(?:poi|red|per)_fused_\w*|(?:in_out|in|out)_ptr\d+|buf\d+")
INTERPRETER_BRANCHES = ("is_available(", "TRITON_INTERPRET", "EMULATE", "_interpreted(")
LINE_LIMIT = 110  # the example engine's ruff line length (examples/minirepo/pyproject.toml)
# The engines' own kernels for these ops are 100-200 lines; the generated MoE router (its top-k building
# blocks included) and the two-dtype activations are still above 200, hence the bound of 250.
MAX_LINES = 250
# The module integrate writes is at most 1.5x the lines of the engine's own Triton kernel for the same op
# (where one exists: (release, file)), else at most 200 lines. SGLang serves the biased grouped top-k
# (DeepSeek-V3's router) on GPUs with its own Triton kernel, moe_fused_gate.py (biased_grouped_topk_gpu
# imports it); its activation kernel is gelu_and_mul only, no silu_and_mul.
OWN_KERNELS = {
    "sglang_biased_grouped_topk": ("sglang==0.5.23", "sglang/kernels/ops/moe/moe_fused_gate.py"),
    "lmdeploy_softmax_topk": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/moe/route_noaux_tc.py"),
    "lmdeploy_rmsnorm_residual": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/rms_norm.py"),
    "lmdeploy_apply_rotary": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/apply_rotary_pos_emb.py"),
}
BUDGET_WITHOUT_OWN_KERNEL = 200


def numbered_names(source: str, pattern: re.Pattern[str] = NUMBERED) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sorted({t.string for t in tokens if t.type == tokenize.NAME and pattern.fullmatch(t.string)})


def names_in_comments(source: str, pattern: re.Pattern[str]) -> list[str]:
    """The words of the source's comments that `pattern` matches whole (a kernel a comment still names)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    comments = [t.string for t in tokens if t.type == tokenize.COMMENT]
    words = {w for c in comments for w in re.findall(r"\w+", c)}
    return sorted(w for w in words if pattern.fullmatch(w))


def _normalised(fn: ast.FunctionDef) -> str:
    """The body of `fn` with every name replaced by its order of first appearance (renaming-blind)."""
    body = copy.deepcopy(fn)
    body.name = "f"
    body.decorator_list = []
    order: dict[str, str] = {}
    for node in ast.walk(body):
        if isinstance(node, ast.Name):
            node.id = order.setdefault(node.id, f"n{len(order)}")
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg is not None):
            node.arg = order.setdefault(node.arg, f"n{len(order)}")
    return ast.dump(body)


def jit_functions(source: str) -> list[ast.FunctionDef]:
    return [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list)
    ]


def duplicate_kernels(source: str) -> list[tuple[str, str]]:
    """Pairs of @triton.jit functions whose bodies are equal up to renaming."""
    seen: dict[str, str] = {}
    pairs = []
    for fn in jit_functions(source):
        key = _normalised(fn)
        if key in seen:
            pairs.append((seen[key], fn.name))
        else:
            seen[key] = fn.name
    return pairs


def problems(source: str, *, limit: int = LINE_LIMIT, max_lines: int = MAX_LINES) -> list[str]:
    found = []
    names = numbered_names(source)
    if names:
        found.append(f"numbered names: {', '.join(names[:8])}")
    inductors = sorted({*numbered_names(source, INDUCTOR_NAMES), *names_in_comments(source, INDUCTOR_NAMES)})
    if inductors:
        found.append(f"Inductor's names: {', '.join(inductors[:8])}")
    for first, second in duplicate_kernels(source):
        found.append(f"{first} and {second} have one body")
    for marker in INTERPRETER_BRANCHES:
        if marker in source:
            found.append(f"an interpreter branch ({marker})")
    long = [k + 1 for k, line in enumerate(source.splitlines()) if len(line) > limit]
    if long:
        found.append(f"lines over {limit} characters: {long[:5]}")
    count = len(source.splitlines())
    if count > max_lines:
        found.append(f"{count} lines (at most {max_lines})")
    return found


def search_accounts(module: str, task_entry: str, op: str) -> list[str]:
    """What in a shipped module speaks the search's language rather than the engine's: functions named
    after the task's entry where the op has another name (the extraction's `default_rms_norm_impl_forward`
    for LMDeploy's RMSNorm, `rms_norm`), the `_kb_` prefix of the writer's building blocks, its "as traced
    on the cases" docstrings and its note of the task whose ATen graph it traced."""
    words = re.compile(rf"(?<![^_]){re.escape(task_entry)}(?![^_])")
    tree = ast.parse(module)
    found = (
        ["the module docstring's trace note"]
        if "'s ATen graph (torch" in (ast.get_docstring(tree) or "")
        else []
    )
    found += [
        f"def {fn.name}"
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef) and task_entry != op and words.search(fn.name)
    ]
    found += [f"def {fn.name}" for fn in tree.body if isinstance(fn, ast.FunctionDef) and "_kb_" in fn.name]
    found += [
        f"docstring of {fn.name}"
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and "as traced on the cases" in (ast.get_docstring(fn) or "")
    ]
    return found


def line_budget(own_kernel_lines: int | None) -> int:
    return BUDGET_WITHOUT_OWN_KERNEL if own_kernel_lines is None else own_kernel_lines * 3 // 2


def shipped_entry(task_dir: Path) -> str:
    """The name of the entry in the module integrate writes for the task (`rms_norm_triton`)."""
    from kernelbot.integrate.naming import kernel_entry_name, op_name
    from kernelbot.integrate.task_view import load_view

    return kernel_entry_name(op_name(load_view(task_dir).qualname))


def gpu_launches(jobs: list[tuple[Path, Path, str]], case: int = 0) -> list[list[dict]]:
    """Per job (task dir, file, entry): its launches on the task's case number `case` (its first by
    default), compiled for sm_90, each with the digest of its PTX (`ptx`), in one process of
    tests/examples/cuda_compile_check.py."""
    import json
    import os

    from evaluators.sandbox import box_env
    from evaluators.task import load_task

    checker = Path(__file__).parents[2] / "examples" / "cuda_compile_check.py"
    requests = []
    for task_dir, path, entry in jobs:
        params = dict(load_task(task_dir).cases[case].params)
        requests.append({"task": str(task_dir), "candidate": str(path), "params": params, "entry": entry})
    # The candidates are imported unboxed (the compiler needs no GPU): no secret goes with them.
    env = {k: v for k, v in box_env().items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[3]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(checker)], input=json.dumps(requests), capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    launches = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [[c for c in launches if c["job"] == k] for k in range(len(jobs))]


def shipped_module(task_dir: Path, source: str, line_length: int) -> str:
    """The kernel module `kernelbot integrate` writes for `source` (docstring, guard), laid out by ruff at
    `line_length` as the engines' formatters lay it out."""
    from kernelbot.integrate.derive_envelope import derive_envelope
    from kernelbot.integrate.kernel_module import KernelNames, build_kernel_module
    from kernelbot.integrate.naming import guard_name, kernel_entry_name, op_name
    from kernelbot.integrate.task_view import load_view

    view = load_view(task_dir)
    op = op_name(view.qualname)
    names = KernelNames(kernel_entry_name(op), guard_name(op))
    envelope = derive_envelope(view).envelope
    text = build_kernel_module(source, view, envelope, names, summary="", line_length=line_length)
    ruff = [sys.executable, "-m", "ruff", "format", "--isolated", "--line-length", str(line_length), "-"]
    return subprocess.run(ruff, input=text, capture_output=True, text=True, check=True).stdout
