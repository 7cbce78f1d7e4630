"""The torch.compile comparison tools of bench/: vs_compile.py's options (`--set`, `--twin`, the A/A timed
once per task, a failed task's exit status), vs_compile_pool.py's pooling over runs, and the silu probes of
bench/probes/ (what runs on the interpreter matches the reference)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "examples" / "tasks"
SILU = TASKS / "silu_and_mul"
RMS = TASKS / "rmsnorm_residual"
VARIANT = REPO / "bench" / "variants" / "silu_and_mul" / "flat_even_exp.py"
RMS_VARIANT = REPO / "bench" / "variants" / "rmsnorm_residual" / "row_hints.py"
PROBES = REPO / "bench" / "probes"


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"kb_probe_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("override", "message"),
    [("bogus", "expected KEY=VALUE"), ("timing.no_such_field=1", "no_such_field")],
)
def test_vs_compile_refuses_a_bad_override_before_timing_anything(tmp_path, capsys, override, message):
    from bench import vs_compile

    code = vs_compile.main(["--out", str(tmp_path / "o"), "--set", override, f"{SILU}={VARIANT}"])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _fake_row(task: Path, cand: Path, pairings: tuple[str, ...]) -> dict[str, Any]:
    timed = {"passed": True, "reason": "", "skipped": {}, "cases": {"c1": {"graph": _timing(1.0)}}}
    return {"task": task.name, "regime": "graph", "candidate": str(cand), **{p: timed for p in pairings}}


def _timing(speedup: float) -> dict[str, Any]:
    return {
        "speedup": speedup,
        "ci": [speedup - 0.001, speedup + 0.001],
        "baseline_us": 1.0,
        "contender_us": 1.0,
    }


def test_vs_compile_times_the_twin_once_per_task_and_passes_the_overrides(tmp_path, monkeypatch):
    from bench import vs_compile

    calls: list[tuple[str, str, tuple[str, ...], Any]] = []

    def fake_measure(task, cand, case_names, pairings, config):
        calls.append((task.name, cand.name, pairings, config))
        if cand == RMS_VARIANT:
            raise RuntimeError("no GPU")
        return _fake_row(task, cand, pairings)

    monkeypatch.setattr(vs_compile, "measure", fake_measure)
    second = tmp_path / "second.py"
    second.write_text(VARIANT.read_text())
    argv = ["--out", str(tmp_path / "o"), "--compile-only", "--twin", "--set", "timing.graph_input_sets=8"]
    code = vs_compile.main([*argv, f"{SILU}={VARIANT}", f"{SILU}={second}", f"{RMS}={RMS_VARIANT}"])

    assert code == 1  # the rmsnorm job failed; the silu rows are still written
    assert [(t, c, p) for t, c, p, _ in calls] == [
        ("silu_and_mul", VARIANT.name, ("best_vs_compile", "compile_vs_compile")),
        ("silu_and_mul", "second.py", ("best_vs_compile",)),
        ("rmsnorm_residual", RMS_VARIANT.name, ("best_vs_compile", "compile_vs_compile")),
    ]
    assert all(config.timing.graph_input_sets == 8 for *_, config in calls)
    doc = json.loads((tmp_path / "o" / "vs_compile.json").read_text())
    assert [Path(r["candidate"]).name for r in doc["rows"]] == [VARIANT.name, "second.py"]
    assert doc["meta"]["overrides"] == {"timing": {"graph_input_sets": 8}}
    table = (tmp_path / "o" / "vs_compile.md").read_text()
    assert "| compile vs compile (A/A) |" in table.splitlines()[6]
    assert "1.000x [0.999, 1.001] | 1.000x [0.999, 1.001] |" in table


def _write_run(path: Path, speedups: dict[str, float], twin: float | None, failed: bool = False) -> Path:
    row: dict[str, Any] = {"task": "silu_and_mul", "regime": "graph", "candidate": "/x/best.py"}
    row["best_vs_compile"] = {
        "passed": not failed,
        "reason": "",
        "skipped": {},
        "cases": {case: {"graph": _timing(s), "wall": _timing(s + 0.5)} for case, s in speedups.items()},
    }
    if twin is not None:
        row["compile_vs_compile"] = {"passed": True, "cases": {"big": {"graph": _timing(twin)}}}
    path.mkdir(parents=True)
    (path / "vs_compile.json").write_text(json.dumps({"meta": {}, "rows": [row]}))
    return path


def test_pool_gathers_each_case_over_runs_and_skips_failed_pairings(tmp_path, capsys):
    from bench import vs_compile_pool

    runs = [
        _write_run(tmp_path / "r1", {"big": 0.996, "small": 1.2}, twin=1.001),
        _write_run(tmp_path / "r2", {"big": 0.998, "small": 1.3}, twin=0.999),
        _write_run(tmp_path / "r3", {"big": 0.5}, twin=None, failed=True),
    ]
    pooled = vs_compile_pool.pool(vs_compile_pool.load_runs(runs), "graph")
    big = pooled[("silu_and_mul", "best.py", "best_vs_compile", "big")]
    assert big.speedups == [0.996, 0.998] and big.mean == pytest.approx(0.997)
    assert pooled[("silu_and_mul", "best.py", "compile_vs_compile", "big")].speedups == [1.001, 0.999]
    wall = vs_compile_pool.pool(vs_compile_pool.load_runs(runs), "wall")
    assert wall[("silu_and_mul", "best.py", "best_vs_compile", "small")].speedups == [1.7, 1.8]

    assert vs_compile_pool.main([*map(str, runs), "--out", str(tmp_path / "p.md")]) == 0
    table = (tmp_path / "p.md").read_text()
    assert "| silu_and_mul | best.py | big | best vs compile | 2 | 0.9970x | 0.9960x | 0.9980x |" in table
    assert "| big | A/A (compile vs compile) | 2 | 1.0000x |" in table
    assert table == capsys.readouterr().out


def test_pool_rejects_what_is_not_a_vs_compile_run(tmp_path, capsys):
    from bench import vs_compile_pool

    (tmp_path / "other.json").write_text(json.dumps({"summary": {}}))
    assert vs_compile_pool.main([str(tmp_path / "missing")]) == 2
    assert "not a vs_compile.json" in capsys.readouterr().err
    assert vs_compile_pool.main([str(tmp_path / "other.json")]) == 2
    assert "no 'rows' list" in capsys.readouterr().err
    empty = _write_run(tmp_path / "empty", {"big": 1.0}, twin=None, failed=True)
    assert vs_compile_pool.main([str(empty)]) == 1
    assert "no passed timing" in capsys.readouterr().err


SHAPES = [{"tokens": 97, "d": 200}, {"tokens": 4, "d": 1024}, {"tokens": 1, "d": 64}]


def _check_with_extremes(harness, fn, device, seed: int) -> None:
    """fn against the reference on SHAPES in bf16 and fp32, gate's first values at the exp's extremes."""
    import torch

    for shape in SHAPES:
        for dtype in ("bfloat16", "float32"):
            args, kwargs = harness.inputs({**shape, "dtype": dtype}, seed=seed, device=device)
            x = args[0]
            x[0, :4] = torch.tensor([-95.0, -60.0, 60.0, 95.0], dtype=x.dtype)
            verdict = harness.check(fn, (x,), kwargs)
            assert verdict.ok, f"{shape} {dtype}: {verdict.reason}"


@pytest.mark.parametrize("exp_kind", [1, 2, 3])
def test_static_probe_matches_the_reference(load_harness, device, exp_kind):
    """EXP_KIND 0 (libdevice) needs a GPU; the interpreter runs the others. Extremes of gate included."""
    harness = load_harness("silu_and_mul")
    probe = _load(PROBES / "silu_inductor_static.py")
    probe.EXP_KIND = exp_kind
    _check_with_extremes(harness, probe.silu_and_mul, device, seed=2)


def test_exp_probes_are_the_seed_with_one_change_and_the_reduced_one_matches(tmp_path, load_harness, device):
    from bench.probes import silu_exp_variants

    assert silu_exp_variants.main([str(tmp_path)]) == 0
    seed = silu_exp_variants.SEED.read_text()
    libdevice = (tmp_path / "silu_constexpr_libdevice_exp.py").read_text()
    assert "EXP_FORM=1 if x.is_cuda else 0,\n" in libdevice
    assert len(libdevice.splitlines()) == len(seed.splitlines()) + 1  # the header
    reduced = (tmp_path / "silu_constexpr_reduced_exp.py").read_text()
    assert "_exp_reduced(-gate)" in reduced and "EXP_FORM=1,\n" in reduced and "libdevice.exp" not in reduced
    with pytest.raises(ValueError, match="update this generator"):
        silu_exp_variants.variants(seed.replace("libdevice.exp(-gate)", "libdevice.exp(0.0 - gate)"))
    harness = load_harness("silu_and_mul")
    probe = _load(tmp_path / "silu_constexpr_reduced_exp.py")
    for shape in SHAPES:
        args, kwargs = harness.inputs({**shape, "dtype": "float32"}, seed=3, device=device)
        verdict = harness.check(probe.silu_and_mul, args, kwargs)
        assert verdict.ok, f"{shape}: {verdict.reason}"


def test_seed_tl_exp_and_unmasked_paths_match_the_reference(tmp_path, load_harness, device):
    """The seed's large-fp32 branch (tl.exp) is GPU-only as shipped; forced here on every input. The shapes
    include outputs the block divides (the unmasked path) and outputs it does not."""
    from bench.probes import silu_exp_variants

    seed = silu_exp_variants.SEED.read_text()
    forced = tmp_path / "silu_constexpr_tl_exp.py"
    forced.write_text(seed.replace(silu_exp_variants.SEED_FLAG, "EXP_FORM=2,"))
    probe = _load(forced)
    harness = load_harness("silu_and_mul")
    _check_with_extremes(harness, probe.silu_and_mul, device, seed=4)
