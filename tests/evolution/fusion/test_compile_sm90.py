"""Generated kernels compile for the H200 (sm_90) with the installed Triton, on a machine without a GPU:
bench/cuda_compile_check.py records the candidate's launches and runs triton.compile (through ptxas) for
each specialisation. The interpreter tests check values; this catches what only the compiler rejects (types
of constants, shapes in unrolled loops, layouts of reshapes and permutes). The router is compiled with every
top-k method (and several rows per program), the norm with a persistent grid and in two passes over chunks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fusion_tasks import trace, write, write_task
from test_generator import RMS_INPUTS, RMS_REFERENCE, ROUTER_INPUTS, ROUTER_REFERENCE

from bench.shipped_module import CHECKER, checker_env, gpu_launches
from evolution.writers.fusion.knobs import TOPK_METHODS, Knobs

pytestmark = pytest.mark.slow


def _compile(task: Path, source: str, out: Path) -> list[dict]:
    candidate = out.with_suffix(".py")
    candidate.write_text(source)
    command = [sys.executable, str(CHECKER), str(task), str(candidate), "--json", str(out)]
    done = subprocess.run(command, env=checker_env(), capture_output=True, text=True, timeout=600)
    if not out.is_file():
        if "ptxas" in done.stderr or "No such file" in done.stderr:
            pytest.skip(f"this Triton cannot compile for sm_90 here: {done.stderr[-300:]}")
        pytest.fail(f"the compile check crashed: {done.stderr[-2000:]}")
    kernels = json.loads(out.read_text())["kernels"]
    failures = [k for k in kernels if not k["ok"]]
    assert not failures, failures[0]["error"]
    return kernels


def test_router_kernels_compile_for_sm90(tmp_path: Path) -> None:
    cases = [{"name": "t4_e64", "tokens": 4, "experts": 64, "k": 8}]
    root = write_task(tmp_path / "router", "route", ROUTER_REFERENCE, ROUTER_INPUTS, cases)
    report = trace(root)
    for method in TOPK_METHODS:  # several rows per program: the blocks' reshapes see two row axes
        rows = 4 if method == "mask" else 1
        source = write(root, report, Knobs(topk=method, rows=rows)).source
        assert _compile(root, source, tmp_path / f"router_{method}_{rows}.json")


def test_norm_kernels_compile_for_sm90(tmp_path: Path) -> None:
    cases = [
        {"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16", "eps": 1e-5},
        {"name": "t3_fp32", "tokens": 3, "hidden": 40, "dtype": "float32", "eps": 1e-6},
    ]
    root = write_task(tmp_path / "rms", "add_rmsnorm", RMS_REFERENCE, RMS_INPUTS, cases)
    report = trace(root)
    variants = (Knobs(persistent=132, rows=2, eviction=True), Knobs(passes="two", block=32))
    for k, knobs in enumerate(variants):
        kernels = _compile(root, write(root, report, knobs).source, tmp_path / f"rms_{k}.json")
        assert len(kernels) == 2  # one per dtype


def test_a_one_row_kernel_in_the_row_tile_runs_the_one_row_kernels_instructions(tmp_path: Path) -> None:
    """`row_tile` at one row a program (what bucket crossover writes a one-row parent with, to merge it with
    a kernel of more rows) compiles for sm_90 to the instructions of the one-row kernel indexed by a scalar:
    EVEN_ROWS folds the row test away, so one kernel for both costs the one-row sizes nothing."""
    cases = [{"name": "t3_bf16", "tokens": 3, "hidden": 96, "dtype": "bfloat16", "eps": 1e-5}]
    root = write_task(tmp_path / "rms", "add_rmsnorm", RMS_REFERENCE, RMS_INPUTS, cases)
    report = trace(root)
    jobs = []
    for name, knobs in (("scalar", Knobs()), ("tile", Knobs(row_tile=True))):
        path = tmp_path / f"{name}.py"
        path.write_text(write(root, report, knobs).source)
        jobs.append((root, path, "add_rmsnorm"))
    assert "ROWS" not in jobs[0][1].read_text() and "| EVEN_ROWS" in jobs[1][1].read_text()
    scalar, tile = gpu_launches(jobs)
    assert scalar and [c["instructions"] for c in scalar] == [c["instructions"] for c in tile]
    assert [c["ptx"] for c in scalar] != [c["ptx"] for c in tile]  # the parameters differ
