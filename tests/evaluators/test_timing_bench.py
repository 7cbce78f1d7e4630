"""The CPU-safe parts of bench/stability.py and bench/throughput.py: task writing (and that each synthetic
candidate matches its reference, through Triton's interpreter here), result summaries, tables, option parsing,
dry runs and the candidate variants. The GPU runs themselves are for the H200 (docs/benchmarks.md)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from bench.stability_report import target_for
from evaluators.candidate import check_evolve_block, parse_candidate
from evaluators.task import load_task

ROOT = Path(__file__).resolve().parents[2]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _load(name: str):
    path = ROOT / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"kb_bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


stability = _load("stability")
throughput = _load("throughput")

SMALL = {"tiny": {"n": 3000}, "mid": {"rows": 6, "cols": 100}, "large": {"n": 5000}}


@pytest.mark.parametrize("kernel", sorted(stability.KERNELS))
def test_synthetic_candidates_match_their_references(tmp_path, kernel):
    root = stability.write_task(tmp_path / kernel, kernel, SMALL[kernel])
    task = load_task(root)
    assert task.regime == "graph" and task.cases[0].name == kernel
    _module, candidate = stability.import_candidate(root / "candidate.py", task.entry)
    args, kwargs = task.make_inputs(task.cases[0], 5, DEVICE)
    expected = task.load_reference()(*args, **kwargs)
    torch.testing.assert_close(candidate(*args, **kwargs), expected, rtol=1e-5, atol=1e-5)


def test_full_size_tasks_are_what_the_docs_promise(tmp_path):
    tiny = load_task(stability.write_task(tmp_path / "t", "tiny"))
    assert tiny.cases[0].params == {"n": 32768}
    large = load_task(stability.write_task(tmp_path / "l", "large"))
    assert large.roofline_reads == ("x",)
    assert large.cases[0].params["n"] * 4 * 2 == 800 * (1 << 20)  # 800 MiB moved: ~190 µs at 4.3 TB/s


def _record(kernel: str, graph_us: float, speedup: float) -> dict:
    return {
        "kernel": kernel,
        "timing_stage_s": 0.5,
        "methods": {
            "kernelbot-graph": {"candidate_us": graph_us, "speedup": speedup},
            "do_bench": {"candidate_us": graph_us * 2, "speedup": speedup},
        },
    }


def test_summary_computes_cross_process_cv():
    records = [_record("tiny", 1.0, 2.0), _record("tiny", 1.002, 2.0), _record("mid", 10.0, 1.5)]
    rows = {(r.kernel, r.method): r for r in stability.summarize(records)}
    graph = rows[("tiny", "kernelbot-graph")]
    assert graph.evaluations == 2
    assert graph.cv_time == pytest.approx(0.002 / math.sqrt(2) / 1.001, rel=1e-6)
    assert graph.cv_speedup == 0.0 and graph.meets_target  # 0.14 % and 0 % are both under 0.25 %
    assert math.isnan(rows[("mid", "kernelbot-graph")].cv_time)  # one evaluation: no spread
    assert rows[("tiny", "do_bench")].mean_stage_s is None
    table = stability.markdown(list(rows.values()), {"device": "NVIDIA H200", "date": "d", "command": "c"})
    assert "| tiny | kernelbot-graph" in table and "NVIDIA H200" in table and "n/a" in table


def test_meets_target_needs_both_cvs_under_a_quarter_percent():
    row = stability.MethodSummary("k", "kernelbot-graph", 10, 1.0, 0.001, 1.0, 0.002)
    assert row.meets_target
    assert not stability.MethodSummary("k", "kernelbot-graph", 10, 1.0, 0.001, 1.0, 0.003).meets_target


def _wall_record(kernel: str, index: int, speedup: float, half: float) -> dict:
    timing = {"candidate_us": 10.0, "speedup": speedup, "half_width": half, "claim_low": speedup * 0.98}
    graph = {"candidate_us": 1.0, "speedup": 2.0}
    return {"kernel": kernel, "index": index, "methods": {"kernelbot-graph": graph, "kernelbot-wall": timing}}


def test_the_wall_regime_is_judged_on_its_speedup_against_its_own_targets(tmp_path):
    assert target_for("tiny", "kernelbot-wall") == 0.01
    assert target_for("large", "kernelbot-wall") == 0.0025
    assert target_for("tiny", "kernelbot-wall-look") is None
    # tiny: speedups 2.00 / 2.02 (CV 0.7 %, within 1 %); large: 1.00 / 1.01 (0.7 %, over 0.25 %).
    records = [_wall_record("tiny", 0, 2.0, 0.004), _wall_record("tiny", 1, 2.02, 0.006)]
    records += [_wall_record("large", 0, 1.0, 0.001), _wall_record("large", 1, 1.01, 0.001)]
    rows = {(r.kernel, r.method): r for r in stability.summarize(records)}
    tiny, large = rows[("tiny", "kernelbot-wall")], rows[("large", "kernelbot-wall")]
    assert tiny.meets_target and not large.meets_target
    assert tiny.mean_half_width == pytest.approx(0.005) and tiny.mean_claim_low == pytest.approx(1.9698)
    table = stability.write_results(tmp_path, records, {"date": "d", "command": "c"})
    assert "| tiny (~1 µs) | 0.000 % / 0.000 % ✓ | 0.000 % / 0.704 % ✓ | - |" in table
    assert "| large (~1 µs) | 0.000 % / 0.000 % ✓ | 0.000 % / 0.704 % | - |" in table
    assert "| tiny | kernelbot-wall ✓ | 2 |" in table and "| 1.00 % | 0.50 % | 1.9698 |" in table
    saved = json.loads((tmp_path / "stability.json").read_text())
    assert saved["meta"]["evaluations"] == 4 and len(saved["records"]) == 4
    assert stability.progress_line(records[0]) == (
        "graph 1.000 µs, speedup 2.0000; wall 10.000 µs, speedup 2.0000 ±0.40 %"
    )


def test_overrides_and_child_output_parsing():
    assert stability.parse_overrides(
        ["cv_target=0.001", "wall_calls=5", "regimes=graph", "l2_flush=true"]
    ) == {
        "cv_target": 0.001,
        "wall_calls": 5,
        "regimes": ("graph",),
        "l2_flush": True,
    }
    with pytest.raises(SystemExit):
        stability.parse_overrides(["cv_target"])
    with pytest.raises(SystemExit):
        stability.parse_overrides(["cv_target=fast"])
    out = "noise\n" + stability.RESULT_PREFIX + '{"kernel": "tiny"}\nmore noise\n'
    assert stability.parse_child_output(out) == {"kernel": "tiny"}
    with pytest.raises(ValueError):
        stability.parse_child_output("nothing here")


def test_stability_dry_run_writes_tasks_and_prints_one_process_per_evaluation(tmp_path, capsys):
    assert (
        stability.main(["--out", str(tmp_path), "--evaluations", "2", "--kernels", "tiny,large", "--dry-run"])
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4
    assert "--child" in lines[0] and "--index 0 " in lines[0] and "tasks/large" in lines[1]
    assert lines[0].endswith("--triton-bench do_bench,do_bench_cudagraph")
    assert (tmp_path / "tasks" / "tiny" / "candidate.py").is_file()
    assert stability.main(["--out", str(tmp_path), "--kernels", "nope"]) == 2
    assert stability.main(["--out", str(tmp_path), "--triton-bench", "do_bench,nope", "--dry-run"]) == 2
    only_ours = ["--out", str(tmp_path), "--evaluations", "1", "--triton-bench", "none", "--dry-run"]
    assert stability.main(only_ours) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("--triton-bench none")
    with pytest.raises(SystemExit) as exc:
        stability.main(["--help"])
    assert exc.value.code == 0


def test_a_real_kernel_is_timed_beside_the_synthetic_ones_on_one_of_its_cases(tmp_path, capsys):
    silu = ROOT / "examples" / "tasks" / "silu_and_mul"
    real = f"silu_t16={silu}:{silu / 'candidates' / 'silu_and_mul_triton.py'}@t16_d1792_fp32"
    argv = ["--out", str(tmp_path), "--evaluations", "1", "--kernels", "none", "--real", real, "--dry-run"]
    assert stability.main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "tasks/silu_t16" in lines[0]
    task = load_task(tmp_path / "tasks" / "silu_t16")
    assert [c.name for c in task.cases] == ["silu_t16"] and task.cases[0].params["d"] == 1792
    assert (
        (tmp_path / "tasks" / "silu_t16" / "candidate.py")
        .read_text()
        .startswith((silu / "candidates" / "silu_and_mul_triton.py").read_text()[:40])
    )
    assert not (tmp_path / "tasks" / "silu_t16" / "candidates").exists()
    assert stability.main(["--out", str(tmp_path), "--real", f"x={silu}:nope.py", "--dry-run"]) == 2
    assert (
        stability.main(["--out", str(tmp_path), "--real", f"x={silu}:{silu}/reference.py@zz", "--dry-run"])
        == 2
    )
    assert stability.main(["--out", str(tmp_path), "--kernels", "none", "--dry-run"]) == 2


# --- throughput -------------------------------------------------------------------------------------------

SILU = ROOT / "examples" / "tasks" / "silu_and_mul" / "candidates" / "silu_and_mul_triton.py"


@pytest.mark.skipif(not SILU.is_file(), reason="examples/tasks not present")
def test_variants_change_one_constant_inside_the_evolve_block():
    source = SILU.read_text()
    variants = throughput.make_variants(source, 4)
    assert len(variants) == 4
    labels = [label for label, _ in variants]
    assert len(set(labels)) == 4
    for _, text in variants:
        assert text != source
        check_evolve_block(source, text)  # edits only inside the block
        parse_candidate(text, "silu_and_mul")
        changed = [(a, b) for a, b in zip(source.splitlines(), text.splitlines(), strict=True) if a != b]
        assert len(changed) == 1
    assert throughput.make_variants(source, 0) == []
    assert throughput.make_variants("def f():\n    BLOCK = 64\n", 3) == []  # no EVOLVE-BLOCK: nothing


def test_tunable_constants_only_take_powers_of_two():
    found = throughput.tunable_constants(
        "BLOCK_SIZE = 128\nnum_warps=4\nEPS_SIZE = 3\nMAX_FUSED_BLOCK = min(8192, x)\n"
    )
    assert [int(m.group("value")) for m in found] == [128, 4, 8192]


@pytest.mark.skipif(not (ROOT / "examples" / "tasks").is_dir(), reason="examples/tasks not present")
def test_collect_and_dry_run(capsys):
    subs = throughput.collect(ROOT / "examples" / "tasks", variants=1, rounds=2)
    shipped = sorted((ROOT / "examples" / "tasks").glob("*/candidates/*.py"))
    # Each shipped candidate once per round, plus at most one variant of it per round.
    assert 2 * len(shipped) <= len(subs) <= 4 * len(shipped)
    assert sum("~" not in s.label for s in subs) == 2 * len(shipped)
    assert all((s.task / "task.toml").is_file() for s in subs)
    assert throughput.main(["--dry-run", "--variants", "0", "--rounds", "1"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"{len(shipped)} submissions")


def test_throughput_summary_and_table():
    results = [
        {"task": "a", "stage": "timing", "passed": True, "duration_s": 2.0, "stage_seconds": {"locked": 0.9}},
        {"task": "a", "stage": "compile", "passed": False, "duration_s": 1.0},
        {"task": "b", "stage": "timing", "passed": True, "duration_s": 3.0, "stage_seconds": {"locked": 1.5}},
    ]
    summary = throughput.summarize(results, elapsed_s=3.0)
    assert summary["lock_busy"] == pytest.approx(0.8)
    assert summary["fully_evaluated"] == 2
    assert summary["fully_evaluated_per_gpu_minute"] == pytest.approx(40.0)
    assert summary["verdicts_per_gpu_minute"] == pytest.approx(60.0)
    assert summary["by_stage"] == {"timing:pass": 2, "compile:fail": 1}
    assert not summary["meets_target"]
    table = throughput.markdown(summary, {"device": "NVIDIA H200", "workers": 8}, {"a": {**summary}})
    assert "| 3 | 2 | 3.0 | 40.0 | 60.0 |" in table and "GPU lock held 80% of the run" in table
    assert throughput.main(["--tasks", "/nonexistent"]) == 2


def test_throughput_reads_stage_seconds_and_overrides():
    from bench.config_overrides import eval_config
    from evaluators.pipeline import STAGE_SECONDS_TAG

    logs = f"timed a [graph]: 15 pairs\n{STAGE_SECONDS_TAG} " + '{"compile": 1.5, "timing": 0.5}\n'
    assert throughput.stage_seconds(logs) == {"compile": 1.5, "timing": 0.5}
    assert throughput.stage_seconds("no such line") == {}
    results = [
        {"stage_seconds": {"compile": 1.0, "timing": 0.4}},
        {"stage_seconds": {"compile": 3.0, "timing": 0.6}},
        {"stage_seconds": {}},
    ]
    assert throughput.mean_stage_seconds(results) == pytest.approx({"compile": 2.0, "timing": 0.5})
    overrides, config = eval_config(["timing.secondary_time_cap_s=0.02", "drift_calls=4"])
    assert overrides == {"timing": {"secondary_time_cap_s": 0.02}, "drift_calls": 4}
    assert config.timing.secondary_time_cap_s == 0.02 and config.drift_calls == 4
    with pytest.raises(ValueError, match="KEY=VALUE"):
        eval_config(["drift_calls"])
    assert throughput.main(["--dry-run", "--set", "no_such_field=1"]) == 2


def test_lock_timeline_from_the_timed_lines():
    from bench.lock_timeline import timeline

    def line(start: float, ms: int) -> str:
        return f"timed c [graph]: 9 pairs, {ms} ms with the GPU lock held at {start:.3f}, 80 ms with set-up"

    # 0-1 s busy in holds handed straight over, then 1 s with nobody ready, then 1 s busy again.
    lines = [line(t / 10, 100) for t in range(10)] + [line(2.0 + t / 10, 100) for t in range(10)]
    tl = timeline([*lines, "timed d [wall]: no hold recorded here", "something else"])
    assert tl["holds"] == 20 and tl["first_to_last_s"] == pytest.approx(3.0)
    assert tl["busy_first_to_last"] == pytest.approx(2 / 3)
    assert tl["busy_middle"] == pytest.approx(1.4 / 2.4)  # 0.3-2.7 s: 0.7 s busy on each side of the gap
    assert tl["gaps_over_5ms"] == 1 and tl["gaps_over_5ms_s"] == pytest.approx(1.0)
    assert timeline(["no holds"]) == {}
    assert tl["mean_waiting"] != tl["mean_waiting"]  # NaN: these lines carry no waits
    results = [{"task": "a", "stage": "timing", "passed": True, "duration_s": 1.0, "timed": lines}]
    table = throughput.markdown(throughput.summarize(results, 3.0), {"workers": 1}, {})
    assert "1 gaps over 5 ms between holders, 1.0 s in all" in table
    assert "workers waiting" not in table


def test_lock_timeline_counts_idle_time_while_a_worker_waited():
    from bench.lock_timeline import timeline

    def line(start: float, ms: int, waited: int) -> str:
        return f"timed c [graph]: {ms} ms with the GPU lock held at {start:.3f} after {waited} ms waiting, x"

    # Hold 0-1 s; a second worker asks at 0.5 s but only gets the lock at 1.5 s: 0.5 s lost on the hand-over.
    # A third asks at 2.4 s and gets it at once at 2.5 s, after the second's hold ended at 2.5 s.
    tl = timeline([line(0.0, 1000, 0), line(1.5, 1000, 1000), line(2.5, 500, 100)])
    assert tl["idle_while_asked_s"] == pytest.approx(0.5)
    assert tl["mean_waiting"] == pytest.approx(1.1 / 3.0)
    results = [
        {
            "task": "a",
            "stage": "timing",
            "passed": True,
            "duration_s": 1.0,
            "timed": [line(0.0, 1000, 0), line(1.5, 1000, 1000)],
        }
    ]
    table = throughput.markdown(throughput.summarize(results, 3.0), {"workers": 2}, {})
    assert "lock free for 0.50 s while one was" in table
