"""bench/run.sh and its scenarios, on a CPU machine: every scenario is listed with its parameters, bad
arguments are refused with one line, each step a dry run prints is a command its tool accepts (parsed by that
tool's own argument parser), and a real run on Triton's interpreter leaves env.txt, summary.txt and the
packed results. The GPU figures themselves come from a GPU machine (docs/benchmarks.md)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "bench" / "run.sh"
SCENARIOS = ("smoke", "stability", "throughput", "search", "vs-compile", "scaling", "wall-load")
# What the runs need from this environment; nothing else, so no scenario parameter leaks in from it.
PASSED_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "KERNELBOT_HOME", "TRITON_INTERPRET", "VIRTUAL_ENV")


def run_sh(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(RUN), *args],
        cwd=REPO,
        # BENCH_SITE empty: a local .devsite/ archive holds packages for the GPU image's Python, not this one.
        env={**{k: os.environ[k] for k in PASSED_ENV if k in os.environ}, "BENCH_SITE": ""},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def dry_run(scenario: str, *params: str, tmp_path: Path) -> list[list[str]]:
    """The steps a dry run prints, each as its command's argument list."""
    done = run_sh(scenario, "DRY_RUN=1", f"BENCH_OUT={tmp_path / 'out'}", *params)
    assert done.returncode == 0, done.stderr
    steps = [line for line in done.stdout.splitlines() if line.startswith("step ")]
    assert steps, done.stdout
    return [shlex.split(line.split(": ", 1)[1]) for line in steps]


def without_env(command: list[str]) -> list[str]:
    """`env CUDA_VISIBLE_DEVICES=0 python3 ...` -> `python3 ...`."""
    if command[0] == "env":
        command = command[1:]
        while "=" in command[0]:
            command = command[1:]
    return command


def check_accepted(command: list[str], out: Path) -> None:
    """Parse the command's arguments with the tool's own parser (argparse for bench/, click for the CLI).
    Files that an earlier step writes under `out` (a search's best.py) need not exist yet."""
    command = without_env(command)
    assert command[0] == "python3", command
    if command[1] == "-m" and command[2] == "kernelbot.cli":
        import typer

        from kernelbot.cli import app

        group = typer.main.get_command(app)
        group.commands[command[3]].make_context(command[3], command[4:])
        return
    if command[1] == "-m" and command[2] == "pytest":
        paths = [arg for arg in command[3:] if arg.startswith("tests")]
        assert paths and all((REPO / p).exists() for p in paths), paths
        return
    script = command[1]
    assert (REPO / script).is_file(), script
    module = __import__(script.removesuffix(".py").replace("/", "."), fromlist=["build_parser"])
    if script == "bench/vs_compile_pool.py":
        return  # its arguments are the runs' folders, globbed when they exist
    args = module.build_parser().parse_args(command[2:])
    if hasattr(args, "overrides"):  # --set KEY=VALUE: each must name a real EvalConfig field
        from bench.config_overrides import eval_config

        eval_config(args.overrides)
    if script == "bench/vs_compile.py":
        later = [p for p in args.pairs if p.partition("=")[2].startswith(str(out))]
        module.parse_jobs([p for p in args.pairs if p not in later] or args.pairs[:0], args.cases)
        assert all(Path(p.partition("=")[0], "task.toml").is_file() for p in later), later


def test_list_shows_every_scenario_with_its_parameters() -> None:
    done = run_sh("list")
    assert done.returncode == 0, done.stderr
    for scenario in SCENARIOS:
        assert f"\n{scenario}:\n    {scenario}: " in "\n" + done.stdout
    assert "    WORKERS=12  warm workers in the pool" in done.stdout
    assert "BENCH_PACK=DIR" in done.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("nope",), "error: no scenario 'nope'"),
        (("throughput", "WORKERS"), "error: 'WORKERS' is not NAME=VALUE"),
        (("throughput", "WORKRES=4"), "error: throughput takes no parameter WORKRES"),
        (("search", "DRY_RUN=1", "TASKS=silu_and_mul,nope"), "error: TASKS: 'nope' is neither"),
        (("vs-compile", "DRY_RUN=1", "PAIRS=silu_and_mul=missing.py"), "error: PAIRS: no candidate file"),
        (("readable", "DRY_RUN=1", "SEARCH_S=300", "LIMIT=590"), "error: SEARCH_S=300 leaves no time"),
        ((), "usage: bench/run.sh"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = run_sh(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "scenario, params",
    [
        ("smoke", ()),
        ("stability", ("TIMING=replay_target_us=500 graph_input_sets=4",)),
        ("throughput", ("REPEAT=2", "SET=timing.secondary_time_cap_s=0.02", "TASKS=silu_and_mul")),
        ("search", ("GPUS=0,1", "EXTRA=--rng-seed 3")),
        (
            "vs-compile",
            ('SET=timing.regimes=["graph"]', "REPEAT=3", "TASKS=silu_and_mul", "CASES=t1_d2048_bf16"),
        ),
        ("vs-compile", ("PAIRS=rmsnorm_residual=bench/variants/rmsnorm_residual/*.py", "COMPILE_ONLY=1")),
        ("scaling", ("GPUS=1,2,4",)),
        ("wall-load", ("SET=timing.wall_ci_target=0.01 timing.wall_time_cap_s=0.2", "REEVALS=3")),
        ("wall-load", ("SEQUENTIAL=1",)),
        ("stability", ("TRITON_BENCH=do_bench", "EVALUATIONS=10")),
        ("llm-free", ("SEARCH_S=120", "ONLY=sglang_silu_and_mul")),
        ("target-example", ("ITERATIONS=4",)),
        ("real-kernels", ()),
        ("acceptance", ()),
        ("claim-coverage", ("FRESH=sglang_silu_and_mul", "TASKS=", "REMEASURE=10")),
        ("readable", ("FRESH=sglang_rmsnorm_residual,lmdeploy_softmax_topk", "SEARCH_S=100")),
        (
            "stability",
            (
                "KERNELS=tiny",
                "REAL=silu=examples/tasks/silu_and_mul:examples/tasks/silu_and_mul/candidates/silu_and_mul_triton.py@t16_d1792_fp32",
            ),
        ),
    ],
)
def test_every_dry_run_step_is_accepted_by_its_tool(scenario, params, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)  # the steps' paths are relative to the repository root
    for command in dry_run(scenario, *params, tmp_path=tmp_path):
        check_accepted(command, tmp_path / "out")


def test_search_spreads_tasks_over_the_gpus_and_compares_each_best_on_its_gpu(tmp_path) -> None:
    steps = dry_run("search", "GPUS=0,1", "TASKS=silu_and_mul,rmsnorm_residual", tmp_path=tmp_path)
    evolve = {cmd[cmd.index("evolve") + 1]: cmd[1] for cmd in steps if "evolve" in cmd}
    assert evolve == {
        "examples/tasks/silu_and_mul": "CUDA_VISIBLE_DEVICES=0",
        "examples/tasks/rmsnorm_residual": "CUDA_VISIBLE_DEVICES=1",
    }
    compare = {cmd[1]: cmd[-1] for cmd in steps if "bench/vs_compile.py" in cmd}
    out = tmp_path / "out"
    assert compare == {
        "CUDA_VISIBLE_DEVICES=0": f"examples/tasks/silu_and_mul={out}/runs/silu_and_mul/best.py",
        "CUDA_VISIBLE_DEVICES=1": f"examples/tasks/rmsnorm_residual={out}/runs/rmsnorm_residual/best.py",
    }


def test_vs_compile_repeats_in_fresh_processes_and_pools_them(tmp_path) -> None:
    steps = dry_run("vs-compile", "TASKS=silu_and_mul", "REPEAT=3", tmp_path=tmp_path)
    names = [cmd[1] if cmd[0] != "env" else without_env(cmd)[1] for cmd in steps]
    assert names == ["bench/vs_compile.py"] * 3 + ["bench/vs_compile_pool.py"]
    outs = [cmd[cmd.index("--out") + 1] for cmd in steps[:3]]
    assert len(set(outs)) == 3
    # The hand-written candidates are the default, each timed with the A/A yardstick.
    assert all("--twin" in cmd for cmd in steps[:3])
    assert sum("candidates/" in arg for arg in steps[0]) == 3


@pytest.mark.slow
def test_a_real_run_writes_env_summary_and_the_pack(tmp_path) -> None:
    task = tmp_path / "tasks" / "tiny"
    shutil.copytree(REPO / "bench" / "stability_tasks" / "tiny", task)
    (task / "candidates").mkdir()
    (task / "candidate.py").rename(task / "candidates" / "candidate.py")
    out, pack = tmp_path / "out", tmp_path / "pack"
    (out / "work" / "cache").mkdir(parents=True)  # a source cache, as claim_coverage keeps one: not packed
    (out / "work" / "cache" / "big.bin").write_bytes(b"0" * 1024)
    done = run_sh(
        "throughput",
        "BACKEND=triton-interpret",
        f"TASKS={task}",
        "WORKERS=1",
        "VARIANTS=0",
        "ROUNDS=1",
        "SETTLE=0",
        f"PYTHON={sys.executable}",
        f"BENCH_OUT={out}",
        f"BENCH_PACK={pack}",
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (out / "summary.txt").read_text().splitlines()
    assert len(summary) == 1 and summary[0].startswith("throughput_1 rc=0 ")
    env = (out / "env.txt").read_text()
    assert f"torch {torch.__version__}" in env and "scenario: throughput BACKEND=triton-interpret" in env
    assert "| tiny | 1 | 0 | correctness:pass 1 |" in (out / "throughput_1" / "throughput.md").read_text()
    assert sorted(p.name for p in pack.iterdir()) == [
        "reports-throughput.md",
        "results-throughput.tgz",
        "summary-throughput.txt",
    ]
    with tarfile.open(pack / "results-throughput.tgz") as packed:
        names = packed.getnames()
    assert "out/throughput_1/throughput.json" in names and not any("cache" in n for n in names)
    reports = (pack / "reports-throughput.md").read_text()
    assert f"<!-- {out}/throughput_1.log, last 30 lines -->" in reports


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the stability run would really run")
def test_a_failed_step_is_recorded_and_the_run_exits_1(tmp_path) -> None:
    out = tmp_path / "out"
    python = f"PYTHON={sys.executable}"
    done = run_sh("stability", "KERNELS=tiny", "EVALUATIONS=2", python, f"BENCH_OUT={out}")
    assert done.returncode == 1, done.stdout + done.stderr
    assert (out / "summary.txt").read_text().startswith("stability rc=1 ")
    assert "no CUDA GPU is visible" in (out / "stability.log").read_text()
