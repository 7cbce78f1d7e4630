"""bench/wall_load.py on a CPU machine: its commands are ones their tools accept, the report reads the
per-case half-widths and the re-evaluations' spread right, and the driver runs the load around the
re-evaluations and stops it afterwards (stand-ins for the search and the judge: the real ones need a GPU)."""

from __future__ import annotations

import json
import math
import signal
import sys
from pathlib import Path

import pytest

from bench import wall_load

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "examples" / "tasks" / "decode_metadata"


def wall(speedup: float, lo: float, hi: float, hidden: bool = False) -> dict:
    return {"speedup": speedup, "ci": [lo, hi], "claim_low": lo / 1.01, "hidden": hidden}


def test_the_dry_run_prints_a_search_the_cli_accepts_and_one_child_per_re_evaluation(tmp_path, capsys):
    import typer

    from kernelbot.cli import app

    assert wall_load.main(["--out", str(tmp_path), "--task", str(TASK), "--reevals", "2", "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3
    load = lines[0].split()
    assert load[1:4] == ["-m", "kernelbot.cli", "evolve"] and "--workers-per-device" in load
    typer.main.get_command(app).commands["evolve"].make_context("evolve", load[4:])
    child = lines[1].split()
    assert child[2] == "--child" and child[4].endswith("decode_metadata_rowloop_triton.py")  # the first one
    assert wall_load.main(["--out", str(tmp_path), "--task", str(tmp_path)]) == 2  # not a task
    assert wall_load.main(["--out", str(tmp_path), "--set", "timing.nope=1"]) == 2


def test_the_report_takes_the_widest_half_width_and_the_spread_of_the_re_evaluations():
    best = {
        "program_id": "p7",
        "operator": "tune",
        "score": 3.2,
        "evaluations_in_run": 90,
        "wall_cases": {"bs1": wall(3.0, 2.97, 3.06), "bs512": wall(2.0, 1.99, 2.01, hidden=True)},
    }
    reevals = [
        {"speedup": 2.50, "under_load": True, "wall_cases": {"bs1": wall(3.0, 2.9, 3.1)}},
        {"speedup": 2.53, "under_load": True, "wall_cases": {"bs1": wall(3.03, 3.0, 3.05)}},
        {"error": "exit 1"},
    ]
    data = wall_load.report(best, reevals, {"candidate": "c.py"})
    assert data["best_max_half_width"] == pytest.approx(0.02)  # bs1: 3.06 is 2 % above 3.0
    assert data["reeval_spread"] == pytest.approx(0.012)
    assert data["reeval_case_spread"]["bs1"] == pytest.approx(0.01)
    table = wall_load.markdown(data)
    assert "Largest per-case wall CI half-width: 2.00 % (target <= 3.00 %: met)" in table
    assert "| bs512 (hidden) | 2.000 | [1.990, 2.010] | 0.50 % | 1.970 |" in table
    assert "(2 with the search running throughout): wall speedups 2.5000, 2.5300, failed;" in table
    assert "spread 1.20 % (target <= 2.00 %: met)" in table
    assert "| bs1 | 3.000, 3.030 | 1.00 % | 3.33 % |" in table
    wide = wall_load.report({**best, "wall_cases": {"bs1": wall(3.0, 2.5, 3.5)}}, reevals[:1], {})
    assert "16.67 % (target <= 3.00 %: NOT met)" in wall_load.markdown(wide)
    assert math.isnan(wide["reeval_spread"])  # one re-evaluation: no spread


def test_the_driver_keeps_the_load_running_through_the_re_evaluations_and_stops_it(tmp_path, monkeypatch):
    marker = tmp_path / "load-stopped"
    load = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        f"    open({str(marker)!r}, 'w').write('stopped'); sys.exit(130)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        "time.sleep(60)\n"
    )
    result = {"passed": True, "speedup": 2.5, "score": 2.5, "wall_cases": {"bs1": wall(3.0, 2.97, 3.03)}}
    child = f"print('noise'); print({wall_load.RESULT_PREFIX!r} + {json.dumps(json.dumps(result))})"
    monkeypatch.setattr(wall_load, "load_command", lambda args, run_dir: [sys.executable, "-c", load])
    monkeypatch.setattr(wall_load, "child_command", lambda args: [sys.executable, "-c", child])
    out = tmp_path / "out"
    argv = ["--out", str(out), "--task", str(TASK), "--reevals", "2", "--reeval-delay", "0.5"]
    argv += ["--search-s", "1"]
    handler = signal.getsignal(signal.SIGTERM)
    assert wall_load.main(argv) == 1  # no run store: the stand-in search found nothing
    assert signal.getsignal(signal.SIGTERM) is handler  # pytest's process keeps its own handling of SIGTERM
    assert marker.read_text() == "stopped"  # Ctrl-C once the re-evaluations were done
    data = json.loads((out / "wall_load.json").read_text())
    assert [r["under_load"] for r in data["reevaluations"]] == [True, True]
    assert data["reeval_spread"] == 0.0 and data["best"] is None
    assert "The search found no correct candidate." in (out / "wall_load.md").read_text()
