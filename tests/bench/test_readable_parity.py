"""bench/readable_parity.py's arguments, on a CPU machine: the triples bench/readable_modules.py wrote are
taken with `--modules DIR`, beside any given on the command line; with none at all, one line and exit 2.
(The timing itself needs a GPU: docs/benchmarks.md.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import readable_parity


def test_the_modules_triples_are_checked_beside_the_given_ones(tmp_path: Path, monkeypatch) -> None:
    written = ["tasks/a=runs/a/best.py=modules/a.py:a_triton", "tasks/b=runs/b/best.py=modules/b.py:b_triton"]
    (tmp_path / "triples.txt").write_text("\n".join(written) + "\n")
    seen: list[tuple[Path, Path, Path, str]] = []

    def check(task_dir: Path, raw: Path, readable: Path, entry: str) -> dict:
        seen.append((task_dir, raw, readable, entry))
        return {"task": task_dir.name, "checked": 1, "mismatches": []}

    monkeypatch.setattr(readable_parity, "check", check)
    given = "tasks/c=runs/c/best.py=modules/c.py"
    argv = [given, "--modules", str(tmp_path), "--check-only", "--out", str(tmp_path)]
    assert readable_parity.main(argv) == 0
    assert [(t.name, e) for t, _, _, e in seen] == [("c", ""), ("a", "a_triton"), ("b", "b_triton")]
    assert seen[1][2] == Path("modules/a.py")


def test_no_triple_at_all_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert readable_parity.main(["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no module to time") and len(err.splitlines()) == 1


def test_what_favours_the_contender_cancels_over_both_orders() -> None:
    """Whatever favours one side of a pair (2 % here) shows in each order for the other code; the geometric
    mean of the two orders keeps only the module's own difference (3 % faster here), and the interval is
    built from the two intervals' ends."""
    bias, gain = 1.02, 1.03
    forward = (
        gain * bias,
        gain * bias * 0.99,
        gain * bias * 1.01,
    )  # raw / readable, the module the contender
    swapped = (bias / gain, bias / gain * 0.99, bias / gain * 1.01)  # readable / raw, the raw the contender
    both = readable_parity.both_orders(forward, swapped)
    assert both["speedup"] == pytest.approx(gain)
    assert both["ci"] == pytest.approx([gain * (0.99 / 1.01) ** 0.5, gain * (1.01 / 0.99) ** 0.5])
    assert both["orders"] == pytest.approx([gain * bias, gain / bias])
    meta = {"device": "GPU", "torch": "t", "triton": "tr", "date": "d", "command": "c"}
    table = readable_parity.markdown(
        [{"task": "op", "cases": {"c1": {"graph": both | {"raw_us": 2.0}}}}], meta
    )
    assert "| op | c1 | graph | 1.030x [1.020, 1.040] | 1.051x / 1.010x | 2.00 |" in table
