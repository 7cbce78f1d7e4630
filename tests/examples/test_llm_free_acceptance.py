"""The LLM-free acceptance tools of bench/: the verdict rules of llm_free_acceptance.py, its check that the
GPU lock kept the runs' timings apart, eager_compile_best.py's table; on a GPU, eager_compile_best.py end to
end on an example task (eager, torch.compile and a best side by side, kernel counts included)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import torch

from bench import eager_compile_best, llm_free_acceptance

REPO = Path(__file__).resolve().parents[2]
SILU = REPO / "examples" / "tasks" / "silu_and_mul"


def compared(regime: str = "graph", **cases: dict[str, Any]) -> dict[str, Any]:
    return {"task": "t", "regime": regime, "best": {"program_id": "p"}, "why_no_best": "", "cases": cases}


def case(rows: int | None, graph: float, low: float, kernels: int = 1, other: int = 0) -> dict[str, Any]:
    timing = {"speedup": graph, "ci": [low, graph * 1.01]}
    return {
        "rows": rows,
        "kernels": {"compile": {"kernels": kernels, "other": other}},
        "speedups": {"graph": {"best_vs_compile": timing}, "wall": {"best_vs_compile": timing}},
    }


def test_a_best_at_or_above_compile_in_its_regime_passes_and_a_slower_one_fails() -> None:
    ok = llm_free_acceptance.verdicts("t", compared(a=case(1, 1.01, 0.995), b=case(64, 1.2, 1.1)))
    assert ok["pass"] and ok["why"] == []
    slow = llm_free_acceptance.verdicts("t", compared(a=case(64, 1.0, 0.98)))
    assert not slow["pass"] and "a: in_regime_low_ci_ge_0.99" in slow["why"][0]


def test_where_compile_emits_several_kernels_or_leaves_one_to_aten_the_best_must_double_it() -> None:
    several = case(64, 1.5, 1.4, kernels=3)
    aten = case(64, 2.5, 2.4, kernels=1, other=1)
    single_row = case(1, 1.1, 1.05, kernels=3)  # one row: the 2x rule does not apply
    result = llm_free_acceptance.verdicts("t", compared(several=several, aten=aten, one=single_row))
    assert result["why"] == ["several: graph_ge_2x_over_multi_kernel_compile"]
    assert result["cases"]["aten"]["checks"]["graph_ge_2x_over_multi_kernel_compile"]
    assert "graph_ge_2x_over_multi_kernel_compile" not in result["cases"]["one"]["checks"]


def test_the_deepseek_router_needs_5x_from_128_tokens_up() -> None:
    cases = {"t32": case(32, 3.0, 2.9, kernels=6), "t128": case(128, 4.0, 3.9, kernels=6)}
    result = llm_free_acceptance.verdicts("sglang_biased_grouped_topk", compared(**cases))
    assert result["why"] == ["t128: graph_ge_5x"]
    assert "graph_ge_5x" not in result["cases"]["t32"]["checks"]


def test_no_kernel_and_no_comparison_are_failures_that_say_why() -> None:
    empty = {**compared(), "best": None, "why_no_best": "the search found no correct candidate"}
    assert llm_free_acceptance.verdicts("t", empty)["why"] == [
        "no correct kernel: the search found no correct candidate"
    ]
    missing = llm_free_acceptance.verdicts("t", None, "error: no program to mutate")
    assert not missing["pass"] and "no program to mutate" in missing["why"][0]


def _store(path: Path, holds: list[tuple[float, int]]) -> None:
    path.parent.mkdir(parents=True)
    logs = "\n".join(
        f"timed n8 [graph]: 1.0 us, {ms} ms with the GPU lock held at {t:.3f}" for t, ms in holds
    )
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE evaluations (result_json TEXT)")
        conn.execute("INSERT INTO evaluations VALUES (?)", (json.dumps({"logs": logs}),))


def test_holds_of_different_runs_that_overlap_are_counted(tmp_path: Path) -> None:
    _store(tmp_path / "apart" / "a" / "run.sqlite", [(100.0, 40), (100.2, 30)])
    _store(tmp_path / "apart" / "b" / "run.sqlite", [(100.05, 100), (100.3, 10)])
    assert llm_free_acceptance.lock_overlaps(tmp_path / "apart") == {
        "holds": 4,
        "runs": 2,
        "overlapping_other_runs": 0,
    }
    _store(tmp_path / "mixed" / "a" / "run.sqlite", [(100.0, 40)])
    _store(tmp_path / "mixed" / "b" / "run.sqlite", [(100.02, 40)])
    assert llm_free_acceptance.lock_overlaps(tmp_path / "mixed")["overlapping_other_runs"] == 1


def test_the_table_has_every_implementation_and_pairing_per_case_and_regime() -> None:
    def pair(base: float, other: float) -> dict[str, Any]:
        ratio = base / other
        return {
            "speedup": ratio,
            "ci": [ratio * 0.99, ratio * 1.01],
            "baseline_us": base,
            "contender_us": other,
        }

    timed = {
        "compile_vs_eager": {"passed": True, "cases": {"c": {"graph": pair(10, 5), "wall": pair(20, 15)}}},
        "best_vs_eager": {"passed": True, "cases": {"c": {"graph": pair(10, 2), "wall": pair(20, 8)}}},
        "best_vs_compile": {"passed": True, "cases": {"c": {"graph": pair(5, 2), "wall": pair(15, 8)}}},
    }

    class Case:
        name = "c"

    per_case = eager_compile_best._per_case(timed, Case())
    assert per_case["times_us"]["graph"] == {"eager": 10, "compile": 5, "best": 2}
    assert per_case["speedups"]["wall"]["best_vs_compile"]["speedup"] == pytest.approx(15 / 8)
    kernels = {
        "eager": {"kernels": 4, "other": 4},
        "compile": {"kernels": 2, "other": 1},
        "best": {"kernels": 1, "other": 0},
    }
    result = {
        "task": "t",
        "regime": "wall",
        "run_dir": "r",
        "stop_reason": "time limit",
        "best": {"program_id": "p", "operator": "tune:launch"},
        "why_no_best": "",
        "pairings": timed,
        "cases": {"c": {"rows": 8, "kernels": kernels, **per_case}},
    }
    meta = {"device": "H200", "torch": "2.x", "triton": "3.x", "date": "d", "command": "c"}
    table = eager_compile_best.markdown(result, meta)
    assert "| c | 8 | **wall** | 20.00 | 15.00 | 8.00 |" in table and "| 4 / 2 [1] / 1 |" in table
    assert "2.500x [2.475, 2.525]" in table  # graph: best vs compile


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_eager_compile_best_times_all_three_and_counts_their_kernels(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.py").write_text((SILU / "candidates" / "silu_and_mul_triton.py").read_text())
    (run / "summary.json").write_text(json.dumps({"stop_reason": "test", "best": {"operator": "seed:file"}}))
    code = eager_compile_best.main([str(SILU), str(run), "--out", str(tmp_path / "o")])
    assert code == 0
    doc = json.loads(next((tmp_path / "o").glob("*.json")).read_text())
    for name, data in doc["cases"].items():
        for regime in ("graph", "wall"):
            assert all(data["times_us"][regime][i] for i in eager_compile_best.IMPLEMENTATIONS), name
        assert data["kernels"]["best"]["kernels"] >= 1 and data["kernels"]["compile"]["kernels"] >= 1
    nothing = tmp_path / "empty"
    nothing.mkdir()
    assert eager_compile_best.main([str(SILU), str(nothing), "--out", str(tmp_path / "o2")]) == 0
    doc = json.loads(next((tmp_path / "o2").glob("*.json")).read_text())
    assert doc["best"] is None and "no summary.json" in doc["why_no_best"]
    assert set(doc["pairings"]) == {"compile_vs_eager"}
