"""The end-to-end benchmark, alternating real runs on two work trees, and the honest 'not measured' cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluators.sandbox import availability
from kernelbot.verify.benchmark import (
    BenchmarkCommand,
    E2EOutcome,
    MetricNotFound,
    read_metric,
    run_alternating,
)

# A benchmark whose metric is the tree's own constant, with a little deterministic jitter per run; each run
# appends its tree's name to a shared file, so the test sees the order the runs really happened in.
SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import speed
log = Path(os.environ["ORDER_LOG"])
runs = log.read_text().count(speed.NAME) if log.exists() else 0
with log.open("a") as f:
    f.write(speed.NAME + "\\n")
print("warming up")
print(json.dumps({"result": {"tokens_per_s": 1.0}}))
print(json.dumps({"result": {"tokens_per_s": speed.RATE + (runs % 3) - 1}, "device": "cpu"}))
"""


def tree(root: Path, name: str, rate: float) -> Path:
    (root / "benchmarks").mkdir(parents=True)
    (root / "speed.py").write_text(f"NAME = {name!r}\nRATE = {rate}\n")
    (root / "benchmarks" / "bench.py").write_text(SCRIPT)
    return root


def command(tmp_path: Path, **changes: object) -> BenchmarkCommand:
    fields: dict = dict(
        argv=("python", "benchmarks/bench.py"),
        metric="tokens_per_s",
        json_key="result.tokens_per_s",
        unit="tok/s",
        env={"ORDER_LOG": str(tmp_path / "order.txt")},
    )
    fields.update(changes)
    return BenchmarkCommand(**fields)


def test_alternating_runs_and_their_statistics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The runs share a file outside their trees to show their order: something only an unboxed run may do
    # (test_a_boxed_benchmark_keeps_to_its_tree shows the box refusing it).
    monkeypatch.setenv("KERNELBOT_SANDBOX", "off")
    monkeypatch.setenv("KERNELBOT_ALLOW_UNSANDBOXED", "1")
    base, change = tree(tmp_path / "base", "base", 100.0), tree(tmp_path / "change", "change", 120.0)
    seen: list[str] = []
    outcome = run_alternating(
        command(tmp_path), base, change, 3, log_dir=tmp_path / "logs", progress=seen.append
    )
    assert outcome.measured, outcome.reason
    assert (tmp_path / "order.txt").read_text().split() == ["base", "change"] * 3
    assert outcome.order == ("base", "change") * 3
    assert outcome.before == (99.0, 100.0, 101.0) and outcome.after == (119.0, 120.0, 121.0)
    assert seen[0] == "benchmark run 1/3 on the base" and len(seen) == 6
    data = outcome.to_dict()
    assert data["means"] == {"before": 100.0, "after": 120.0}
    assert data["delta_pct"] == pytest.approx(20.0)
    lo, hi = data["ci_pct"]
    assert lo < 20.0 < hi and lo > 15.0
    assert data["unit"] == "tok/s" and data["higher_is_better"] is True
    assert len(data["logs"]) == 6 and all(Path(p).is_file() for p in data["logs"])
    assert E2EOutcome.from_dict(json.loads(json.dumps(data))) == outcome


@pytest.mark.skipif(not availability().ok, reason="no bubblewrap box on this machine")
def test_a_boxed_benchmark_keeps_to_its_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-sentinel-bench")
    base, change = tree(tmp_path / "base", "base", 100.0), tree(tmp_path / "change", "change", 120.0)
    outcome = run_alternating(command(tmp_path), base, change, 2, log_dir=tmp_path / "logs")
    # Each run wrote its order file into its own private /tmp, gone with its box: no run saw another's.
    assert not (tmp_path / "order.txt").exists()
    assert outcome.before == (99.0, 99.0) and outcome.after == (119.0, 119.0)


def test_a_failing_run_means_no_numbers_at_all(tmp_path: Path) -> None:
    base, change = tree(tmp_path / "base", "base", 100.0), tree(tmp_path / "change", "change", 120.0)
    (change / "speed.py").write_text("raise RuntimeError('CUDA out of memory')\n")
    outcome = run_alternating(command(tmp_path), base, change, 3, log_dir=tmp_path / "logs")
    assert not outcome.measured and outcome.before == () and outcome.after == ()
    assert "failed on the change (run 1 of 3), exit 1" in outcome.reason
    assert "CUDA out of memory" in outcome.reason
    assert outcome.to_dict()["delta_pct"] is None and outcome.to_dict()["means"] is None


def test_missing_metric_and_too_few_runs(tmp_path: Path) -> None:
    base, change = tree(tmp_path / "base", "base", 100.0), tree(tmp_path / "change", "change", 120.0)
    wrong_key = command(tmp_path, json_key="result.latency_ms")
    outcome = run_alternating(wrong_key, base, change, 2, log_dir=tmp_path / "logs")
    assert not outcome.measured and "no JSON line with a numeric 'result.latency_ms'" in outcome.reason
    single = run_alternating(command(tmp_path), base, change, 1, log_dir=tmp_path / "logs")
    assert not single.measured and "a spread needs two" in single.reason


def test_read_metric_by_regex_and_json() -> None:
    by_regex = BenchmarkCommand(argv=("x",), metric="throughput", regex=r"throughput: (?P<value>[\d.]+)")
    assert read_metric("throughput: 1.5\nthroughput: 2.25 tok/s\n", by_regex) == 2.25
    by_group = BenchmarkCommand(argv=("x",), metric="latency", regex=r"latency=(\S+)ms")
    assert read_metric("latency=3.5ms", by_group) == 3.5
    with pytest.raises(MetricNotFound, match="not a number"):
        read_metric("latency=fastms", by_group)
    by_key = BenchmarkCommand(argv=("x",), metric="tps", json_key="tps")
    assert read_metric('{"tps": 3}\nnot json {\n{"tps": true}\n', by_key) == 3.0
    with pytest.raises(MetricNotFound):
        read_metric("nothing here", by_key)


def test_runs_are_added_until_the_interval_is_narrow(tmp_path: Path) -> None:
    # A 20 % change with +-0.1 % jitter: the 95 % CI is within +-2 % after the least number of runs.
    base, change = tree(tmp_path / "base", "base", 1000.0), tree(tmp_path / "change", "change", 1200.0)
    outcome = run_alternating(command(tmp_path), base, change, 2, log_dir=tmp_path / "logs", max_runs=6)
    assert outcome.measured and outcome.conclusive is True and outcome.runs == 2
    data = outcome.to_dict()
    assert data["half_width_pct"] <= 2.0 and data["target_half_width_pct"] == 2.0
    assert "until the 95 % CI was within +-2 %" in outcome.reason
    assert E2EOutcome.from_dict(json.loads(json.dumps(data))) == outcome


@pytest.fixture
def noisy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Base and change trees whose metric jitters +-10 % per run around the same value. The jitter counts
    the runs in a file outside the trees, which only an unboxed run may write."""
    monkeypatch.setenv("KERNELBOT_SANDBOX", "off")
    monkeypatch.setenv("KERNELBOT_ALLOW_UNSANDBOXED", "1")
    return tree(tmp_path / "base", "base", 10.0), tree(tmp_path / "change", "change", 10.0)


def test_a_noisy_benchmark_ends_inconclusive_at_the_cap(tmp_path: Path, noisy: tuple[Path, Path]) -> None:
    # Four runs a side cannot bring the interval within +-2 %.
    base, change = noisy
    held: list[str] = []

    class Hold:
        def __enter__(self) -> None:
            held.append("in")

        def __exit__(self, *exc: object) -> None:
            held.append("out")

    outcome = run_alternating(
        command(tmp_path), base, change, 2, log_dir=tmp_path / "logs", max_runs=4, hold=Hold
    )
    assert outcome.measured and outcome.conclusive is False and outcome.runs == 4
    assert outcome.order == ("base", "change") * 4 and held == ["in", "out"]
    assert outcome.reason.startswith("inconclusive: the 95 % CI of the change was still wider than +-2 %")
    assert "after 4 runs per side (the cap)" in outcome.reason
    assert outcome.to_dict()["half_width_pct"] > 2.0
    assert outcome.limit == "runs"


def test_a_noisy_benchmark_ends_inconclusive_at_the_time_budget(
    tmp_path: Path, noisy: tuple[Path, Path]
) -> None:
    # A cap of 10 runs a side, and a clock at which each look costs 100 s: with a 150 s budget, the two
    # least runs and one more pair run; the next pair is not started.
    base, change = noisy
    ticks = iter(range(0, 10_000, 100))
    outcome = run_alternating(
        command(tmp_path),
        base,
        change,
        2,
        log_dir=tmp_path / "logs",
        max_runs=10,
        time_budget_s=150.0,
        clock=lambda: float(next(ticks)),
    )
    assert outcome.measured and outcome.conclusive is False and outcome.runs == 3
    assert outcome.limit == "time" and outcome.time_budget_s == 150.0
    assert "after 3 runs per side (the time budget of 150 s)" in outcome.reason
    assert E2EOutcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome
