from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks" / "throughput.py"


def test_throughput_benchmark_reports_tokens_per_second(capsys):
    spec = importlib.util.spec_from_file_location("throughput", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = ["--batch", "2", "--steps", "3", "--prompt-len", "4", "--warmup", "0", "--device", "cpu"]
    assert module.main(argv) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["generated_tokens"] == 6 and report["tokens_per_s"] > 0
    assert report["device"] == "cpu" and report["batch"] == 2
