"""The scan's ranking: when the profile's benchmark can be profiled here, how measured rows become regions
(library kernels set apart, set-up code left out), and the static ranking otherwise."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from extractors.scan_profile import ProfiledFunction
from kernelbot.engines import load_profile
from kernelbot.scan.ranking import STATIC, is_region, measured_regions, rank_regions, ranking_recipe

ENGINE = {
    "eng/__init__.py": "",
    "eng/norm.py": (
        "import torch\n\n\n"
        "def rms(x, w, eps):\n"
        "    v = x.float().pow(2).mean(-1, keepdim=True)\n"
        "    return (x.float() * torch.rsqrt(v + eps) * w).to(x.dtype)\n"
    ),
    "tests/test_norm.py": "import torch\n\n\ndef test_x():\n    torch.ones(2).sum().add_(1).mul_(2)\n",
}


def row(target: str, path: str, time_us: float, library_us: float = 0.0, ops: int = 10) -> ProfiledFunction:
    return ProfiledFunction(target, path, time_us, time_us, 0.0, ops, 0, library_us=library_us)


def test_measured_rows_rank_by_time_outside_library_kernels() -> None:
    rows = [
        row("eng.model:Block.forward", "eng/model.py", 900.0, library_us=880.0),  # mostly GEMM
        row("eng.norm:rms", "eng/norm.py", 300.0),
        row("eng.model:Block.__init__", "eng/model.py", 5000.0),  # set-up runs once
        row("eng.model:<module>", "eng/model.py", 4000.0),
        row("benchmarks.run:main", "benchmarks/run.py", 7000.0),  # not engine code
        row("eng.linear:apply", "eng/linear.py", 50.0, library_us=50.0),  # all library time
    ]
    regions = measured_regions(rows, {}, on_gpu=False)
    assert [r.target for r in regions] == ["eng.norm:rms", "eng.model:Block.forward"]
    assert [r.time_us for r in regions] == [300.0, 20.0]
    assert abs(sum(r.share for r in regions) - 1.0) < 1e-3 and regions[1].library_us == 880.0
    assert "CPU time, 10 operator calls" in regions[0].describe()


def test_what_counts_as_a_region() -> None:
    assert is_region("eng.norm:RMSNorm.forward", "eng/norm.py")
    assert not is_region("eng.norm:RMSNorm.__init__", "eng/norm.py")
    assert not is_region("tests.test_norm:test_x", "tests/test_norm.py")
    assert not is_region("eng.test_norm:helper", "eng/test_norm.py")


def test_when_the_benchmark_cannot_run_here_the_ranking_is_static(monkeypatch, tmp_path: Path) -> None:
    sglang = load_profile("sglang")
    monkeypatch.delenv("KERNELBOT_BENCH_MODEL", raising=False)
    recipe, why = ranking_recipe(sglang)
    assert recipe == STATIC and why == "the benchmark needs {model}: set KERNELBOT_BENCH_MODEL"
    monkeypatch.setenv("KERNELBOT_BENCH_MODEL", "/models/llama")
    monkeypatch.setattr("kernelbot.scan.ranking._has_cuda", lambda: False)
    assert ranking_recipe(sglang) == (STATIC, "the benchmark needs a GPU and this machine has none")
    example = load_profile("example")
    assert ranking_recipe(example) == ("python benchmarks/throughput.py --batch 8 --steps 32", None)

    for rel, text in ENGINE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "eng" / "broken.py").write_text("def f(:\n")
    ranking = rank_regions(tmp_path, dataclasses.replace(example, benchmark=None), "b" * 40)
    assert ranking.source == STATIC and "has no end-to-end benchmark" in ranking.note
    assert "1 file(s) not parsed, so not ranked: eng/broken.py (line 1" in ranking.note
    assert [r.target for r in ranking.regions] == ["eng.norm:rms"]  # the test file is no region
    assert not ranking.regions[0].measured and "torch ops" in ranking.regions[0].describe()


def test_a_benchmark_that_fails_falls_back_to_static_with_its_reason(tmp_path: Path) -> None:
    for rel, text in ENGINE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    example = load_profile("example")
    broken = dataclasses.replace(example.benchmark, argv=("python", "-c", "import sys; sys.exit(3)"))
    ranking = rank_regions(tmp_path, dataclasses.replace(example, benchmark=broken), "b" * 40)
    assert ranking.source == STATIC and "the benchmark could not be profiled" in ranking.note
    assert ranking.recipe == STATIC and [r.target for r in ranking.regions] == ["eng.norm:rms"]
