"""The scan ledger: a real SQLite file in tmp_path, rebuilt from the forge's PRs, tied to one repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelbot.errors import RunStateError
from kernelbot.forge.marker import Marker, with_marker
from kernelbot.forge.types import PRState, PullRequest
from kernelbot.scan.ledger import DONE, FAILED, KernelRecord, Ledger
from kernelbot.scan.ranking import MEASURED, Ranking, Region

TARGET = "minisglang.layers.activation:SiluAndMul.forward_native"
BRANCH = "kernelbot/silu-and-mul-forward-native"


def ledger(tmp_path: Path) -> Ledger:
    return Ledger.open(tmp_path / "state" / "ledger.sqlite")


def kernelbot_pr(number: int, state: PRState, branch: str = BRANCH) -> PullRequest:
    marker = Marker("silu-and-mul-forward-native", f"{number:02d}" * 32, "b" * 40, "0.1.0", commit="c" * 40)
    return PullRequest(
        number, state, "t", with_marker("body", marker), branch, "c" * 40, "main", f"u/{number}"
    )


def test_rankings_are_kept_per_commit_and_recipe(tmp_path: Path) -> None:
    book = ledger(tmp_path)
    region = Region(TARGET, "minisglang/layers/activation.py", True, time_us=12.5, share=0.4, launches=7)
    book.store_ranking(Ranking("b" * 40, MEASURED, "python bench.py", "CPU time", (region,)))
    cached = book.cached_ranking("b" * 40, "python bench.py")
    assert cached is not None and cached.regions == (region,) and cached.source == MEASURED
    assert book.cached_ranking("b" * 40, "python other.py") is None
    assert book.cached_ranking("a" * 40, "python bench.py") is None


def test_prs_are_replaced_by_what_the_forge_says(tmp_path: Path) -> None:
    book = ledger(tmp_path)
    book.sync_prs([BRANCH], [kernelbot_pr(1, PRState.OPEN), kernelbot_pr(2, PRState.CLOSED)])
    assert [(p["number"], p["state"]) for p in book.prs()] == [(1, "open"), (2, "closed")]
    # The forge now lists #1 merged and has forgotten #2: the ledger follows.
    book.sync_prs([BRANCH], [kernelbot_pr(1, PRState.MERGED)])
    assert [(p["number"], p["state"]) for p in book.prs()] == [(1, "merged")]
    # A PR without a kernelbot marker is not kernelbot's and is not kept.
    book.sync_prs([BRANCH], [PullRequest(3, PRState.OPEN, "t", "by hand", BRANCH, "s", "main", "u")])
    assert book.prs() == []


def test_runs_and_the_best_kernel_still_on_disk(tmp_path: Path) -> None:
    book = ledger(tmp_path)
    run = tmp_path / "runs" / "silu-bbbb"
    book.start_run(run, TARGET, "b" * 40, "new")
    assert book.runs(TARGET, "b" * 40)[0].status == "running"
    book.finish_run(run, FAILED, error="no kernel passed the evaluator")
    (failed,) = book.runs(TARGET, "b" * 40)
    assert failed.status == FAILED and failed.error == "no kernel passed the evaluator"
    assert book.runs(TARGET, "a" * 40) == []

    source = tmp_path / "best.py"
    source.write_text("def silu_and_mul_forward_native(x):\n    return x\n")
    for h, score, path in (("k1", 1.2, source), ("k2", 1.8, tmp_path / "gone.py")):
        book.record_kernel(
            KernelRecord(h * 32, TARGET, str(run), str(path), score, score, "triton-cuda", "b" * 40)
        )
    best = book.best_kernel(TARGET)
    assert best is not None and best.kernel_hash == "k1" * 32  # k2 scores higher but its source is gone
    assert book.kernel("k2" * 32) is not None and book.kernel("zz") is None
    book.finish_run(run, DONE, kernel_hash="k1" * 32, pr_action="opened", pr_number=4)
    assert book.runs(TARGET)[0].pr_number == 4


def test_one_ledger_scans_one_repository(tmp_path: Path) -> None:
    book = ledger(tmp_path)
    book.claim_source("file:///srv/upstream.git")
    book.claim_source("file:///srv/upstream.git")
    with pytest.raises(RunStateError, match=re.escape("belongs to scans of file:///srv/upstream.git")):
        book.claim_source("https://github.com/other/repo")
    book.close()


def test_a_damaged_ledger_says_it_is_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RunStateError, match=re.escape("delete it (it is a cache")):
        Ledger.open(path)
