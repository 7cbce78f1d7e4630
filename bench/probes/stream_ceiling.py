"""How much room torch.compile leaves on a memory-bound task, case by case: the reference compiled (Inductor,
dynamic=False, as bench/vs_compile.py compiles it) against a kernel that moves the same bytes and computes
nothing, the stream kernel.

    PYTHONPATH=. python bench/probes/stream_ceiling.py --out OUT TASK_DIR [TASK_DIR...]

The stream kernel reads every tensor argument once and writes every tensor the reference writes (what it
returns, and the arguments it changes in place) once, in one launch, coalesced, over a few block sizes and
warp counts (the fastest kept). Its time is what a kernel of this task's traffic costs on this GPU; a case
where compile's time is within a few percent of it leaves no kernel room to be confirmed faster than compile
(at six processes and the 1 % spread floor, the confirm stage's bound sits about 3 % below the pooled ratio:
docs/benchmarks.md, "Claims").

Times are per call, from CUDA graphs of many calls (triton.testing.do_bench_cudagraph, medians), the three
columns interleaved over `--rounds` rounds; the reported figure of each is the median over the rounds. The
inputs stay resident between calls, as in the tasks' "hot" cache state. Needs a CUDA GPU.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

from bench.meta import run_meta
from evaluators.roofline import tensors_in, unique_bytes
from evaluators.task import Case, Task, load_task

# (elements per program, warps): the stream kernel's launch configurations; the fastest is kept per case.
CONFIGS = ((1024, 4), (2048, 8), (4096, 8), (8192, 16))
INPUTS, OUTPUTS = 4, 3  # the stream kernel's arity: tensors beyond it are refused


@triton.jit
def _stream_kernel(
    a, n_a, b, n_b, c, n_c, d, n_d,  # the tensors read, flat, with their element counts
    x, n_x, y, n_y, z, n_z,  # the tensors written
    BLOCK: tl.constexpr,
):  # fmt: skip
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    total = tl.load(a + offs, mask=offs < n_a, other=0).to(tl.float32)
    total += tl.load(b + offs, mask=offs < n_b, other=0).to(tl.float32)
    total += tl.load(c + offs, mask=offs < n_c, other=0).to(tl.float32)
    total += tl.load(d + offs, mask=offs < n_d, other=0).to(tl.float32)
    tl.store(x + offs, total.to(x.dtype.element_ty), mask=offs < n_x)
    tl.store(y + offs, total.to(y.dtype.element_ty), mask=offs < n_y)
    tl.store(z + offs, total.to(z.dtype.element_ty), mask=offs < n_z)


def written_tensors(reference: Callable[..., Any], args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """What one call of the reference writes: the tensors it returns and the arguments it changes (found by
    comparing each argument before and after a call on copies), each once."""
    copies_args = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
    copies_kwargs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    before = [t.clone() for t in tensors_in((copies_args, copies_kwargs))]
    returned = list(tensors_in(reference(*copies_args, **copies_kwargs)))
    after = list(tensors_in((copies_args, copies_kwargs)))
    changed = [t for t, old in zip(after, before, strict=True) if not torch.equal(t, old)]
    seen: set[int] = set()
    written = []
    for t in [*returned, *changed]:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            written.append(t)
    return written


def stream_call(
    reads: list[torch.Tensor], writes: list[torch.Tensor], block: int, warps: int
) -> Callable[[], list[torch.Tensor]]:
    """One launch that reads `reads` and writes fresh tensors shaped like `writes` (allocated per call, as the
    reference allocates its outputs)."""
    if len(reads) > INPUTS or len(writes) > OUTPUTS:
        raise ValueError(f"the stream kernel takes {INPUTS} tensors read and {OUTPUTS} written")
    spare = torch.empty(1, device=reads[0].device)
    flat = [t.reshape(-1) if t.is_contiguous() else t.contiguous().reshape(-1) for t in reads]
    read_args = [v for t in flat for v in (t, t.numel())] + [spare, 0] * (INPUTS - len(flat))
    shapes = [(t.shape, t.dtype) for t in writes]
    elements = max(t.numel() for t in [*reads, *writes])
    grid = (triton.cdiv(elements, block),)

    def call() -> list[torch.Tensor]:
        outs = [torch.empty(shape, dtype=dtype, device=spare.device) for shape, dtype in shapes]
        write_args = [v for t in outs for v in (t, t.numel())] + [spare, 0] * (OUTPUTS - len(outs))
        _stream_kernel[grid](*read_args, *write_args, BLOCK=block, num_warps=warps)
        return outs

    return call


def measure_case(task: Task, case: Case, compiled: Callable[..., Any], rounds: int) -> dict[str, Any]:
    from triton.testing import do_bench_cudagraph

    args, kwargs = task.make_inputs(case, 0, "cuda")
    eager = task.load_reference()
    reads = list(tensors_in((args, kwargs)))
    writes = written_tensors(eager, args, kwargs)
    streams = {cfg: stream_call(reads, writes, *cfg) for cfg in CONFIGS}

    def timed(fn: Callable[[], Any]) -> float:
        return float(do_bench_cudagraph(fn, rep=100, return_mode="median")) * 1e3  # µs

    for fn in (lambda: compiled(*args, **kwargs), *streams.values()):
        fn()  # compile, autotune and JIT outside the timed graphs
    torch.cuda.synchronize()
    # The mutating references change their inputs at every call: the values drift, the traffic does not.
    best_cfg = min(streams, key=lambda cfg: timed(streams[cfg]))
    columns: dict[str, list[float]] = {"eager": [], "compile": [], "stream": []}
    for _ in range(rounds):
        columns["eager"].append(timed(lambda: eager(*args, **kwargs)))
        columns["compile"].append(timed(lambda: compiled(*args, **kwargs)))
        columns["stream"].append(timed(streams[best_cfg]))
    moved = unique_bytes(reads) + unique_bytes(writes)
    us = {k: statistics.median(v) for k, v in columns.items()}
    return {
        "case": case.name,
        "bytes": moved,
        "us": us,
        "rounds": columns,
        "stream_config": {"block": best_cfg[0], "num_warps": best_cfg[1]},
        "tb_per_s": {k: moved / (v * 1e-6) / 1e12 for k, v in us.items()},
        "compile_share_of_stream": us["stream"] / us["compile"],
    }


def measure_task(task_dir: Path, rounds: int) -> dict[str, Any]:
    import torch._dynamo

    torch._dynamo.config.cache_size_limit = 256  # one compilation per case and dtype
    task = load_task(task_dir)
    compiled = torch.compile(task.load_reference(), dynamic=False)
    return {
        "task": task.name,
        "cache": task.cache,
        "cases": [measure_case(task, case, compiled, rounds) for case in task.cases],
    }


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"{meta['device']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}: "
        f"`{meta['command']}`",
        "",
        "| task | case | MB moved | eager µs | compile µs | stream µs | compile TB/s | stream TB/s "
        "| stream / compile |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for task in results:
        for row in task["cases"]:
            us, rate = row["us"], row["tb_per_s"]
            lines.append(
                f"| {task['task']} | {row['case']} | {row['bytes'] / 1e6:.1f} | {us['eager']:.2f} "
                f"| {us['compile']:.2f} | {us['stream']:.2f} | {rate['compile']:.2f} | {rate['stream']:.2f} "
                f"| {row['compile_share_of_stream']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("tasks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: the stream ceiling needs a CUDA GPU", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    meta = run_meta()
    results = []
    for task_dir in args.tasks:
        results.append(measure_task(task_dir, args.rounds))
        (args.out / "stream_ceiling.json").write_text(json.dumps({"meta": meta, "tasks": results}, indent=1))
        (args.out / "stream_ceiling.md").write_text(markdown(results, meta))
    print(markdown(results, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
