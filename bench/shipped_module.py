"""The module `kernelbot integrate` writes for a search winner, what it is held to, and the kernels it
launches: shared by bench/readable_modules.py (a GPU run's winners) and the fusion tests (the CPU-sized
fresh tasks' seeds), so that both review the same text against the same budget."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from evaluators.subprocesses import run

ROOT = Path(__file__).resolve().parents[1]
CHECKER = ROOT / "bench" / "cuda_compile_check.py"

# The module integrate writes is at most 1.5x the lines of the engine's own Triton kernel for the same op
# (where one exists: (release, file)), else at most BUDGET_WITHOUT_OWN_KERNEL lines. SGLang serves the
# biased grouped top-k (DeepSeek-V3's router) on GPUs with its own Triton kernel, moe_fused_gate.py
# (biased_grouped_topk_gpu imports it); its activation kernel is gelu_and_mul only, no silu_and_mul.
OWN_KERNELS = {
    "sglang_biased_grouped_topk": ("sglang==0.5.23", "sglang/kernels/ops/moe/moe_fused_gate.py"),
    "lmdeploy_softmax_topk": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/moe/route_noaux_tc.py"),
    "lmdeploy_rmsnorm_residual": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/rms_norm.py"),
    "lmdeploy_apply_rotary": ("lmdeploy==0.18.0", "lmdeploy/pytorch/kernels/cuda/apply_rotary_pos_emb.py"),
}
BUDGET_WITHOUT_OWN_KERNEL = 200


def line_budget(own_kernel_lines: int | None) -> int:
    """The most lines the module may have, given its engine's own kernel's (None: the engine has none)."""
    return BUDGET_WITHOUT_OWN_KERNEL if own_kernel_lines is None else own_kernel_lines * 3 // 2


def own_kernel_lines(name: str) -> int | None:
    """The lines of the engine's own kernel for the op of `name` (a bench/fresh_tasks.py name), read from
    its release; None where the engine has none. Raises ExtractionError where the release cannot be read
    (no registry and not in KERNELBOT_CACHE)."""
    own = OWN_KERNELS.get(name)
    if own is None:
        return None
    from extractors.release_sources import fetch_release

    return len((fetch_release(own[0]) / own[1]).read_text().splitlines())


def shipped_entry(task_dir: Path) -> str:
    """The name of the entry in the module integrate writes for the task (`rms_norm_triton`)."""
    from kernelbot.integrate.naming import kernel_entry_name, op_name
    from kernelbot.integrate.task_view import load_view

    return kernel_entry_name(op_name(load_view(task_dir).qualname))


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
    done = run(ruff, input=text, timeout_s=120)
    if not done.ok:
        raise RuntimeError(f"ruff format failed on the module: {done.stderr[-2000:]}")
    return done.stdout


def checker_env() -> dict[str, str]:
    """The environment bench/cuda_compile_check.py runs in. It imports the candidates and runs their host
    code outside the OS sandbox (the compiler needs no GPU, and nothing runs on one), so it gets the
    sandbox's allow-listed environment: no secret goes with them. Triton's interpreter stays off."""
    from evaluators.sandbox import box_env

    env = {k: v for k, v in box_env().items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def gpu_launches(jobs: list[tuple[Path, Path, str]], case: int = 0) -> list[list[dict]]:
    """Per job (task dir, file, entry): its launches on the task's case number `case` (its first by
    default), compiled for sm_90, each with the digest of its PTX (`ptx`), in one process of
    bench/cuda_compile_check.py. Raises RuntimeError with the checker's last output when a launch does not
    compile."""
    from evaluators.task import load_task

    requests = []
    for task_dir, path, entry in jobs:
        params = dict(load_task(task_dir).cases[case].params)
        requests.append({"task": str(task_dir), "candidate": str(path), "params": params, "entry": entry})
    done = run([sys.executable, str(CHECKER)], input=json.dumps(requests), env=checker_env(), timeout_s=None)
    if not done.ok:
        raise RuntimeError(f"{CHECKER.name} failed: {done.stderr[-3000:]}")
    launches = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [[c for c in launches if c["job"] == k] for k in range(len(jobs))]
